"""What the endpoint and its calls share to speak SIP: responses with our Server/Allow/Contact headers,
and requests sent through a client transaction to a URI."""
from __future__ import annotations

from dataclasses import dataclass

from .message import Request, Response, SipUri, make_response
from .metrics import SipMetrics
from .syntax import quote
from .transaction import ClientTransaction, TransactionLayer
from .transport import resolve

ALLOW = "INVITE, ACK, CANCEL, BYE, OPTIONS, NOTIFY"
# Methods we know but do not take (405 with Allow); anything else is 501.
KNOWN_METHODS = frozenset({"INVITE", "ACK", "CANCEL", "BYE", "OPTIONS", "NOTIFY", "REFER", "REGISTER", "SUBSCRIBE",
                           "INFO", "UPDATE", "PRACK", "MESSAGE", "PUBLISH"})


def warning(code: int, text: str) -> dict[str, str]:
    """A Warning header (RFC 3261 §20.43) saying why, for the admin reading the peer's logs."""
    return {"Warning": f"{code} voiceswarm {quote(text[:200])}"}


@dataclass
class UserAgent:
    layer: TransactionLayer
    metrics: SipMetrics
    name: str  # sent as Server and User-Agent
    contact: str  # our Contact, e.g. <sip:voiceswarm@192.0.2.10:5060>

    def response(self, request: Request, status: int, reason: str | None = None, *, to_tag: str | None = None,
                 headers: dict[str, str] | None = None, sdp: str | None = None) -> Response:
        extra = {"Server": self.name}
        if request.method == "INVITE" and (100 < status < 300):
            extra["Contact"] = self.contact
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

    def start(self, request: Request, destination: tuple[str, int]) -> ClientTransaction:
        """Send in a new client transaction; its `final` future resolves with the final response."""
        request.headers.set("User-Agent", self.name)
        return self.layer.request(request, destination)
