"""What the endpoint and its calls share to speak SIP: responses with our Server/Allow/Contact headers,
and requests sent through a client transaction to a URI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .message import Request, Response, SipParseError, SipUri, make_response
from .metrics import SipMetrics
from .syntax import quote
from .transaction import ClientTransaction, TransactionLayer
from .transport import Peer, resolve

ALLOW = "INVITE, ACK, CANCEL, BYE, OPTIONS, NOTIFY"
# Methods we know but do not take (405 with Allow); anything else is 501.
KNOWN_METHODS = frozenset(
    {
        "INVITE",
        "ACK",
        "CANCEL",
        "BYE",
        "OPTIONS",
        "NOTIFY",
        "REFER",
        "REGISTER",
        "SUBSCRIBE",
        "INFO",
        "UPDATE",
        "PRACK",
        "MESSAGE",
        "PUBLISH",
    }
)


def warning(code: int, text: str) -> dict[str, str]:
    """A Warning header (RFC 3261 §20.43) saying why, for the admin reading the peer's logs."""
    return {"Warning": f"{code} voiceswarm {quote(text[:200])}"}


@dataclass
class UserAgent:
    layer: TransactionLayer
    metrics: SipMetrics
    name: str  # sent as Server and User-Agent
    contact: str  # our Contact over UDP, e.g. <sip:voiceswarm@192.0.2.10:5060>
    # Our Contact URI on each stream transport that is open, e.g. "TCP": sip:voiceswarm@192.0.2.10:5060.
    stream_contacts: dict[str, SipUri] = field(default_factory=dict)

    def contact_for(self, transport: str = "UDP", *, secure: bool = False) -> str:
        """Our Contact for a dialog or registration over `transport`, so that what the peer sends us comes back
        the same way: ;transport=tcp, and over TLS sips: (RFC 5630) when the request or target was sips:,
        else ;transport=tls. The UDP one when that transport is not open."""
        uri = self.contact_uri(transport, secure=secure)
        return self.contact if uri is None else f"<{uri}>"

    def contact_uri(self, transport: str, *, secure: bool = False) -> SipUri | None:
        uri = self.stream_contacts.get(transport)
        if uri is None:
            return None
        if transport == "TLS" and secure:
            return replace(uri, scheme="sips", params={})
        return replace(uri, params={"transport": transport.lower()})

    def contact_for_request(self, request: Request) -> str:
        """Our Contact in a response to `request`: for the transport its top Via came over."""
        try:
            transport = request.vias[0].transport
        except (SipParseError, IndexError):
            transport = "UDP"
        return self.contact_for(transport, secure=request.uri.scheme == "sips")

    def response(
        self,
        request: Request,
        status: int,
        reason: str | None = None,
        *,
        to_tag: str | None = None,
        headers: dict[str, str] | None = None,
        sdp: str | None = None,
    ) -> Response:
        extra = {"Server": self.name}
        if request.method == "INVITE" and (100 < status < 300):
            extra["Contact"] = self.contact_for_request(request)
        if (200 <= status < 300 and request.method in ("INVITE", "OPTIONS")) or status == 405:
            extra |= {"Allow": ALLOW, "Accept": "application/sdp"}
        if sdp is not None:
            extra["Content-Type"] = "application/sdp"
        body = sdp.encode() if sdp is not None else b""
        response = make_response(request, status, reason, to_tag=to_tag, headers=extra | (headers or {}), body=body)
        if request.method == "INVITE" and 100 < status < 300:
            # RFC 3261 §12.1.1: the caller builds its route set from these; without them its ACK and BYE
            # bypass (or are refused by) every proxy that record-routed the INVITE.
            for route in request.headers.get_all("Record-Route"):
                response.headers.add("Record-Route", route)
        return response

    def method_not_supported(self, request: Request) -> Response:
        if request.method in KNOWN_METHODS:
            return self.response(request, 405)
        self.metrics.not_implemented += 1
        return self.response(request, 501)

    async def send(self, request: Request, target: SipUri) -> Response:
        """Send in a client transaction and wait for the final response (a 408 after 64*T1 without one)."""
        return await self.start(request, await resolve(target)).final

    def keep_alive(self, destination: Peer, on_lost: Callable[[], None]) -> None:
        """RFC 5626 keep-alives on the TCP/TLS connection to `destination` (nothing over UDP)."""
        self.layer.transport.keep_alive(destination, on_lost)

    def start(self, request: Request, destination: Peer) -> ClientTransaction:
        """Send in a new client transaction; its `final` future resolves with the final response."""
        request.headers.set("User-Agent", self.name)
        return self.layer.request(request, destination)
