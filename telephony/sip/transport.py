"""SIP over UDP (RFC 3261 §18): one socket, each datagram parsed and validated on arrival, responses
routed back by their Via (RFC 3581 received/rport). Nothing is queued: the datagram callback hands each
message straight to the transaction layer (whose table is capped), so a flood costs CPU, not memory.

Bad datagrams never raise out of here: each one is counted in SipMetrics, logged at most once a minute
per source, and answered 400 when enough of it parses to address a response; otherwise dropped.
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from collections.abc import Callable

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

Address = tuple[str, int]
DEFAULT_PORT = 5060
_CONTENT_LENGTH_RE = re.compile(rb"(?i)(content-length|l)[ \t]*:")
_LINE_RE = re.compile(rb"\r?\n")


class UdpTransport(asyncio.DatagramProtocol):
    def __init__(self, metrics: SipMetrics, on_request: Callable[[Request, Address], None],
                 on_response: Callable[[Response, Address], None], *, user_agent: str = "") -> None:
        self.metrics = metrics
        self.on_request = on_request
        self.on_response = on_response
        self.user_agent = user_agent
        self.local_address: Address | None = None
        self._transport: asyncio.DatagramTransport | None = None
        self._warnings = LogLimiter()

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

    def send(self, message: Request | Response, destination: Address) -> None:
        if self._transport is None:
            return
        data = message.to_bytes()
        try:
            self._transport.sendto(data, destination)
        except OSError as error:
            self.metrics.send_errors += 1
            self.warn("send_failed", destination, str(error))
            return
        self.metrics.datagrams_sent += 1

    def send_response(self, response: Response) -> None:
        """To where the top Via says, as stamped on arrival (received, rport)."""
        self.send(response, via_destination(response.vias[0]))

    # ---- receiving ----------------------------------------------------------------------------------

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.metrics.datagrams_received += 1
        source = (addr[0], addr[1])
        try:
            self._receive(data, source)
        except Exception:  # a bug of ours must not take the socket down with it
            self.metrics.internal_errors += 1
            log.exception("event=sip_internal_error source=%s:%d", *source)

    def error_received(self, exc: Exception) -> None:
        # ICMP port unreachable for something we sent: the peer is gone; timers will notice.
        self.metrics.send_errors += 1
        self.warn("icmp_error", ("-", 0), repr(exc))

    def _receive(self, data: bytes, source: Address) -> None:
        if not data.strip(b"\r\n"):
            self.metrics.keepalives += 1
            return
        if len(data) > MAX_MESSAGE_SIZE:
            self.metrics.oversized += 1
            self.warn("oversized", source, f"{len(data)} bytes")
            self._answer_unparsed(data[:MAX_MESSAGE_SIZE], source, 513, "over 64 KB")
            return
        try:
            message = parse_message(data)
        except SipParseError as error:
            self.metrics.malformed += 1
            self.warn("malformed", source, str(error))
            self._answer_unparsed(data, source, 400, str(error))
            return
        if isinstance(message, Response):
            try:
                validate_response(message)
            except SipParseError as error:
                self.metrics.bad_responses += 1
                self.warn("bad_response", source, str(error))
                return
            self.on_response(message, source)
            return
        try:
            validate_request(message)
        except SipParseError as error:
            self.warn("bad_request", source, str(error))
            self._answer_bad(message, source, error.status, str(error))
            return
        _stamp_via(message, source)
        self.on_request(message, source)

    def _answer_unparsed(self, data: bytes, source: Address, status: int, detail: str) -> None:
        request = salvage_request(data)
        if request is not None:
            self._answer_bad(request, source, status, detail)

    def _answer_bad(self, request: Request, source: Address, status: int, detail: str) -> None:
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

    def warn(self, kind: str, source: Address, detail: str) -> None:
        """A warning line, at most once a minute per kind and source address."""
        if self._warnings.allow(kind, source[0]):
            log.warning("event=sip_%s source=%s:%s detail=%s (logged once a minute per source)", kind,
                        source[0], source[1], detail[:300])


def salvage_request(data: bytes) -> Request | None:
    """The request line and complete headers of a datagram that failed to parse (truncated, a wrong
    Content-Length), when they are enough to address a response; None otherwise."""
    data = data.lstrip(b"\r\n")
    end = re.search(rb"\r?\n\r?\n", data)
    lines = _LINE_RE.split(data[: end.start()] if end else data)
    if end is None:
        lines = lines[:-1]  # the last line of a truncated datagram may be cut short
    kept = [line for line in lines if not _CONTENT_LENGTH_RE.match(line)]
    try:
        message = parse_message(b"\r\n".join(kept) + b"\r\n\r\n")
        if not isinstance(message, Request):
            return None
        _ = (message.vias[0], message.from_, message.to, message.call_id, message.cseq)
    except (SipParseError, IndexError):
        return None
    return message


def via_destination(via: Via) -> Address:
    """RFC 3261 §18.2.2 with RFC 3581: the received address, at the rport port when there is one."""
    host = via.received or via.host
    return host, via.rport or via.port or DEFAULT_PORT


def _stamp_via(request: Request, source: Address) -> None:
    vias = request.headers.get_all("Via")
    top = Via.parse(vias[0])
    if top.host != source[0]:
        top.params["received"] = source[0]
    if "rport" in top.params:
        top.params["rport"] = str(source[1])
    request.headers.set("Via", str(top))
    for value in vias[1:]:
        request.headers.add("Via", value)


async def resolve(uri: SipUri) -> Address:
    """Where to send a request for `uri`: its host (an IP, or a name looked up in A/AAAA records; no
    SRV/NAPTR) and port (5060 by default)."""
    port = uri.port or DEFAULT_PORT
    try:
        ipaddress.ip_address(uri.host)
        return uri.host, port
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(uri.host, port, type=socket.SOCK_DGRAM)
    except socket.gaierror as error:
        raise OSError(f"cannot resolve SIP host {uri.host!r}: {error}") from error
    host, port = infos[0][4][:2]
    return host, port
