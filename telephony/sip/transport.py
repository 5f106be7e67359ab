"""SIP transports (RFC 3261 §18): UDP here, TCP and TLS in stream_transport; `Transports` puts them behind the
one seam the transaction layer sees. Each message is parsed and validated on arrival, requests get their Via
stamped (RFC 3581 received/rport), and responses go back the way the request came.

Over UDP: one socket; nothing is queued: the datagram callback hands each message straight to the
transaction layer (whose table is capped), so a flood costs CPU, not memory.

Bad messages never raise out of here: each one is counted in SipMetrics, logged at most once a minute
per source, and answered 400 when enough of it parses to address a response; otherwise dropped.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, Protocol

from .limits import LogLimiter
from .message import (
    MAX_MESSAGE_SIZE,
    Request,
    Response,
    SipParseError,
    SipUri,
    Via,
    make_response,
    parse_message,
    validate_request,
    validate_response,
)
from .metrics import SipMetrics
from .syntax import quote

log = logging.getLogger(__name__)

Address = tuple[str, int]  # a socket address
TransportName = Literal["UDP", "TCP", "TLS"]
DEFAULT_PORT = 5060
DEFAULT_TLS_PORT = 5061


class Peer(NamedTuple):
    """Where a message came from or goes to: the address and the transport that reaches it; over TLS also the
    name the peer's certificate must carry (the host of the URI we were given)."""

    host: str
    port: int
    transport: TransportName = "UDP"
    server_name: str | None = None

    @property
    def reliable(self) -> bool:
        """TCP and TLS deliver or fail: RFC 3261 §17 sets the retransmission timers to 0 on them."""
        return self.transport != "UDP"

    def __str__(self) -> str:
        return f"{self.transport.lower()}:{self.host}:{self.port}"


OnRequest = Callable[[Request, Peer], None]
OnResponse = Callable[[Response, Peer], None]


class Transport(Protocol):
    """What the transaction layer sends through: UDP, TCP, TLS, or all of them (`Transports`)."""

    def send(self, message: Request | Response, destination: Peer) -> None: ...

    def send_response(self, response: Response, source: Peer | None = None) -> None: ...

    def port(self, transport: TransportName) -> int: ...

    def keep_alive(self, destination: Peer, on_lost: Callable[[], None]) -> None: ...


class MessageIntake:
    """Parses, validates and hands on what a transport received; answers what is bad. Shared by every
    transport, so that UDP, TCP and TLS refuse the same messages the same way."""

    name: TransportName = "UDP"

    def __init__(
        self, metrics: SipMetrics, on_request: OnRequest, on_response: OnResponse, *, user_agent: str = ""
    ) -> None:
        self.metrics = metrics
        self.on_request = on_request
        self.on_response = on_response
        self.user_agent = user_agent
        self._warnings = LogLimiter()

    def send(self, message: Request | Response, destination: Peer) -> None:
        raise NotImplementedError

    def deliver(self, data: bytes, source: Peer) -> None:
        """One whole message (a datagram, or a frame cut from a stream by its Content-Length)."""
        try:
            message = parse_message(data)
        except SipParseError as error:
            self.metrics.malformed += 1
            self.warn("malformed", source, str(error))
            self.answer_unparsed(data, source, 400, str(error))
            return
        if isinstance(message, Response):
            try:
                validate_response(message)
            except SipParseError as error:
                self.metrics.bad_responses += 1
                self.warn("bad_response", source, str(error))
                return
            self.metrics.count_received(message)
            self.on_response(message, source)
            return
        try:
            validate_request(message)
        except SipParseError as error:
            self.warn("bad_request", source, str(error))
            self._answer_bad(message, source, error.status, str(error))
            return
        _stamp_via(message, source)
        self.metrics.count_received(message)
        self.on_request(message, source)

    def answer_unparsed(self, data: bytes, source: Peer, status: int, detail: str) -> None:
        request = salvage_request(data)
        if request is not None:
            self._answer_bad(request, source, status, detail)

    def _answer_bad(self, request: Request, source: Peer, status: int, detail: str) -> None:
        if request.method == "ACK":
            return  # an ACK is never answered
        try:
            response = make_response(request, status, headers={"Warning": f"399 voiceswarm {quote(detail[:200])}"})
        except (SipParseError, ValueError):
            return
        if self.user_agent:
            response.headers.set("Server", self.user_agent)
        self.metrics.bad_requests += 1
        # The Via of a bad request cannot be trusted: answer where it came from.
        self.send(response, source)

    def warn(self, kind: str, source: Peer | Address, detail: str) -> None:
        """A warning line, at most once a minute per kind and source address."""
        if self._warnings.allow(kind, source[0]):
            transport = source.transport if isinstance(source, Peer) else self.name
            log.warning(
                "event=sip_%s transport=%s source=%s:%s detail=%s (logged once a minute per source)",
                kind,
                transport.lower(),
                source[0],
                source[1],
                detail[:300],
            )


_CONTENT_LENGTH_RE = re.compile(rb"(?i)(content-length|l)[ \t]*:")
_LINE_RE = re.compile(rb"\r?\n")


class UdpTransport(MessageIntake, asyncio.DatagramProtocol):
    def __init__(
        self, metrics: SipMetrics, on_request: OnRequest, on_response: OnResponse, *, user_agent: str = ""
    ) -> None:
        super().__init__(metrics, on_request, on_response, user_agent=user_agent)
        self.local_address: Address | None = None
        self._transport: asyncio.DatagramTransport | None = None

    async def open(self, host: str, port: int) -> Address:
        loop = asyncio.get_running_loop()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        transport, _ = await loop.create_datagram_endpoint(lambda: self, local_addr=(host, port), family=family)
        self._transport = transport
        self.local_address = transport.get_extra_info("sockname")[:2]
        log.info("event=sip_listen transport=udp address=%s:%d", *self.local_address)
        return self.local_address

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    # ---- sending ------------------------------------------------------------------------------------

    def send(self, message: Request | Response, destination: Peer | Address) -> None:
        if self._transport is None:
            return
        data = message.to_bytes()
        try:
            self._transport.sendto(data, (destination[0], destination[1]))
        except OSError as error:
            self.metrics.send_errors += 1
            self.warn("send_failed", destination, str(error))
            return
        self.metrics.datagrams_sent += 1
        self.metrics.count_sent(message)

    def send_response(self, response: Response, source: Peer | None = None) -> None:
        """To where the top Via says, as stamped on arrival (received, rport)."""
        self.send(response, via_destination(response.vias[0]))

    # ---- receiving ----------------------------------------------------------------------------------

    def datagram_received(self, data: bytes, addr: tuple[Any, ...]) -> None:
        self.metrics.datagrams_received += 1
        source = Peer(addr[0], addr[1])
        try:
            self._receive(data, source)
        except Exception:  # a bug of ours must not take the socket down with it
            self.metrics.internal_errors += 1
            log.exception("event=sip_internal_error source=%s:%d", *addr[:2])

    def error_received(self, exc: Exception) -> None:
        # ICMP port unreachable for something we sent: the peer is gone; timers will notice.
        self.metrics.send_errors += 1
        self.warn("icmp_error", ("-", 0), repr(exc))

    def _receive(self, data: bytes, source: Peer) -> None:
        if not data.strip(b"\r\n"):
            self.metrics.keepalives += 1
            return
        if len(data) > MAX_MESSAGE_SIZE:
            self.metrics.oversized += 1
            self.warn("oversized", source, f"{len(data)} bytes")
            self.answer_unparsed(data[:MAX_MESSAGE_SIZE], source, 513, "over 64 KB")
            return
        self.deliver(data, source)


class Transports:
    """UDP and whichever stream transports are open, as one Transport: each message goes out on the transport
    its destination names; a response goes back on the transport (and connection) its request came on."""

    def __init__(self, udp: UdpTransport, streams: dict[TransportName, StreamSender] | None = None) -> None:
        self.udp = udp
        self._streams: dict[TransportName, StreamSender] = dict(streams or {})

    def add(self, transport: TransportName, stream: StreamSender) -> None:
        self._streams[transport] = stream

    def supports(self, transport: TransportName) -> bool:
        return transport == "UDP" or transport in self._streams

    def address(self, transport: TransportName) -> Address:
        """Where we listen on `transport`."""
        stream = self._streams.get(transport)
        address = self.udp.local_address if transport == "UDP" else stream.local_address if stream else None
        if address is None:
            raise RuntimeError(f"SIP over {transport} is not open")
        return address

    def port(self, transport: TransportName) -> int:
        """Our listening port on `transport` (for Via and Contact)."""
        return self.address(transport)[1]

    def send(self, message: Request | Response, destination: Peer) -> None:
        stream = self._streams.get(destination.transport)
        if destination.transport == "UDP":
            self.udp.send(message, destination)
        elif stream is not None:
            stream.send(message, destination)
        else:
            self.udp.metrics.send_errors += 1
            self.udp.warn("no_transport", destination, f"SIP over {destination.transport} is not configured")

    def send_response(self, response: Response, source: Peer | None = None) -> None:
        transport = source.transport if source is not None else _via_transport(response)
        if transport == "UDP":
            self.udp.send_response(response)
        elif transport in self._streams:
            self._streams[transport].send_response(response, source)
        else:
            self.udp.metrics.send_errors += 1
            self.udp.warn("no_transport", source or ("-", 0), f"no {transport} transport for a response")

    def keep_alive(self, destination: Peer, on_lost: Callable[[], None]) -> None:
        """RFC 5626 §4.4.1 pings on the connection to `destination` (a registrar over TCP/TLS); `on_lost` runs
        when that connection fails or stops answering. Nothing to do over UDP."""
        stream = self._streams.get(destination.transport)
        if stream is not None:
            stream.keep_alive(destination, on_lost)

    def warn(self, kind: str, source: Peer | Address, detail: str) -> None:
        self.udp.warn(kind, source, detail)

    async def close(self) -> None:
        for stream in self._streams.values():
            await stream.close()
        self.udp.close()


class StreamSender(Protocol):
    """The part of a stream transport (stream_transport.StreamTransport) that `Transports` uses."""

    local_address: Address | None

    def send(self, message: Request | Response, destination: Peer) -> None: ...

    def send_response(self, response: Response, source: Peer | None) -> None: ...

    def keep_alive(self, destination: Peer, on_lost: Callable[[], None]) -> None: ...

    async def close(self) -> None: ...


def _via_transport(response: Response) -> str:
    try:
        return response.vias[0].transport
    except (SipParseError, IndexError):
        return "UDP"


def salvage_request(data: bytes) -> Request | None:
    """The complete headers of a request that failed to parse (a bad request line, truncated, a wrong
    Content-Length), when they are enough to address a response; None otherwise (and for any response).
    The request line is not needed for that, so it is replaced: the method is taken from CSeq."""
    data = data.lstrip(b"\r\n")
    end = re.search(rb"\r?\n\r?\n", data)
    lines = _LINE_RE.split(data[: end.start()] if end else data)
    if end is None:
        lines = lines[:-1]  # the last line of a truncated datagram may be cut short
    if not lines or lines[0][:4].upper() == b"SIP/":
        return None
    kept = [b"OPTIONS sip:invalid SIP/2.0"] + [line for line in lines[1:] if not _CONTENT_LENGTH_RE.match(line)]
    try:
        message = parse_message(b"\r\n".join(kept) + b"\r\n\r\n")
        if not isinstance(message, Request):
            return None
        _ = (message.vias[0], message.call_id)  # From and To are copied as they are: they need not parse
        if not ("From" in message.headers and "To" in message.headers):
            return None
        message.method = message.cseq[1]  # so that an ACK is still never answered
    except (SipParseError, IndexError):
        return None
    return message


def via_destination(via: Via) -> Address:
    """RFC 3261 §18.2.2 with RFC 3581: the received address, at the rport port when there is one."""
    host = via.received or via.host
    return host, via.rport or via.port or (DEFAULT_TLS_PORT if via.transport == "TLS" else DEFAULT_PORT)


def _stamp_via(request: Request, source: Peer | Address) -> None:
    vias = request.headers.get_all("Via")
    top = Via.parse(vias[0])
    if top.host != source[0]:
        top.params["received"] = source[0]
    if "rport" in top.params:
        top.params["rport"] = str(source[1])
    request.headers.set("Via", str(top))
    for value in vias[1:]:
        request.headers.add("Via", value)


def uri_transport(uri: SipUri) -> TransportName:
    """RFC 3263 §4.1 without NAPTR: sips: is TLS; else the transport parameter; else UDP."""
    if uri.scheme == "sips":
        return "TLS"
    value = (uri.params.get("transport") or "udp").upper()
    if value not in ("UDP", "TCP", "TLS"):
        raise OSError(f"{uri}: transport={value.lower()} is not supported (udp, tcp or tls)")
    return value  # type: ignore[return-value]


async def resolve(uri: SipUri) -> Peer:
    """Where to send a request for `uri`: its transport (sips: or ;transport=), its host (an IP, or a name looked
    up in A/AAAA records; no SRV/NAPTR) and port (5060, or 5061 over TLS, by default)."""
    transport = uri_transport(uri)
    port = uri.port or (DEFAULT_TLS_PORT if transport == "TLS" else DEFAULT_PORT)
    server_name = uri.host if transport == "TLS" else None
    try:
        ipaddress.ip_address(uri.host)
        return Peer(uri.host, port, transport, server_name)
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    kind = socket.SOCK_DGRAM if transport == "UDP" else socket.SOCK_STREAM
    try:
        infos = await loop.getaddrinfo(uri.host, port, type=kind)
    except socket.gaierror as error:
        raise OSError(f"cannot resolve SIP host {uri.host!r}: {error}") from error
    address = infos[0][4]
    return Peer(str(address[0]), int(address[1]), transport, server_name)
