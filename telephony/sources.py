"""Who may come in: the networks a SIP endpoint or an AudioSocket server takes requests and calls from."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class AllowedSources:
    """CIDR networks (allowed_sources); none listed: every source is allowed."""

    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, networks: Iterable[str] | None) -> AllowedSources:
        """Raises ValueError naming a network that is not one ("192.0.2.0/24", "2001:db8::/32", "10.0.0.5")."""
        parsed = []
        for network in networks or ():
            try:
                parsed.append(ipaddress.ip_network(network, strict=False))
            except ValueError:
                raise ValueError(f"allowed_sources: {network!r} is not a network like 192.0.2.0/24") from None
        return cls(tuple(parsed))

    def allows(self, source: str) -> bool:
        """Whether an address (as a socket reports it) may come in. A listener on :: reports an IPv4 peer as
        ::ffff:a.b.c.d: that is checked as the IPv4 address it is."""
        if not self.networks:
            return True
        try:
            address = ipaddress.ip_address(source.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.networks)
