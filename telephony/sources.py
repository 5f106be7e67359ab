"""Who may come in: the networks a SIP endpoint or an AudioSocket server takes requests and calls from, and the
hosts a call's RTP may come from."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_of(source: str) -> Address | None:
    """An address as a socket reports it, None if it is not one. A scope (%eth0) is dropped, and a listener on
    :: reports an IPv4 peer as ::ffff:a.b.c.d: that is the IPv4 address it is."""
    try:
        address = ipaddress.ip_address(source.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@dataclass(frozen=True)
class AllowedSources:
    """CIDR networks (allowed_sources); none listed: every source is allowed."""

    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, networks: Iterable[str] | None, name: str = "allowed_sources") -> AllowedSources:
        """Raises ValueError naming a network that is not one ("192.0.2.0/24", "2001:db8::/32", "10.0.0.5");
        `name`: the setting the networks come from, for that message."""
        parsed = []
        for network in networks or ():
            try:
                if not isinstance(network, str):  # ip_network(10) would be 0.0.0.10/32
                    raise ValueError
                parsed.append(ipaddress.ip_network(network, strict=False))
            except ValueError:
                raise ValueError(f"{name}: {network!r} is not a network like 192.0.2.0/24") from None
        return cls(tuple(parsed))

    def allows(self, source: str) -> bool:
        """Whether an address (as a socket reports it) may come in. A listener on :: reports an IPv4 peer as
        ::ffff:a.b.c.d: that is checked as the IPv4 address it is."""
        if not self.networks:
            return True
        address = address_of(source)
        return address is not None and any(address in network for network in self.networks)


@dataclass(frozen=True)
class MediaSources:
    """Who may send a call's RTP (strict RTP, against port spraying: "RTP bleed" and injection).

    Strict (the default): the host the peer's SDP named in its c= line, from any port (a phone behind NAT sends
    from another port than it announced), or a host in `networks` (`sip.media_sources`: a media relay or a PBX
    whose media leaves from another host than its SDP names). A packet from any other host never latches, is
    never heard and never decides where the call's audio goes. Not strict: whoever sends first latches (plain
    symmetric RTP, for phones behind NAT that announce a private address; anyone who can reach the port range can
    then take a new call's media).
    """

    networks: AllowedSources = AllowedSources()
    strict: bool = True

    @classmethod
    def parse(cls, networks: Iterable[str] | None, *, strict: bool = True) -> MediaSources:
        """Raises ValueError naming a network that is not one, as `media_sources`."""
        return cls(AllowedSources.parse(networks, "media_sources"), strict)

    def allows(self, source: str, sdp_host: str | None) -> bool:
        """Whether RTP from `source` (as the socket reports it) may be taken for a call whose SDP named
        `sdp_host` (None: no address yet, or only 0.0.0.0)."""
        if not self.strict:
            return True
        address = address_of(source)
        if address is None:
            return False
        if sdp_host is not None and address == address_of(sdp_host):
            return True
        return any(address in network for network in self.networks.networks)
