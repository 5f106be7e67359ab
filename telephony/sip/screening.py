"""Requests a user agent refuses from their headers alone (RFC 3261 §8.2.2, §8.2.3), before any transaction
exists: such a refusal is one stateless response (§8.2.7), never a 100 Trying or a retransmitted final
response, so a forged source cannot make us send more than it sent."""

from __future__ import annotations

from .message import Request, Response, make_response

# Request-URI schemes we can serve: anything else is 416 (§8.2.2.1).
SCHEMES = frozenset({"sip", "sips", "tel"})
# Option tags we support for Require (§8.2.2.3): none yet, so any Require gets 420.
SUPPORTED_OPTIONS: frozenset[str] = frozenset()
# The only body we take or send (§8.2.3), and the Accept media ranges that admit it.
SDP = "application/sdp"
_ACCEPTS_SDP = frozenset({SDP, "application/*", "*/*"})


def refusal(request: Request) -> Response | None:
    """The response that refuses `request` from its headers, or None when it may go on. CANCEL is never
    refused here (§8.2.2.3 ignores Require in CANCEL; it must reach its INVITE)."""
    if request.method == "CANCEL":
        return None
    if request.uri.scheme not in SCHEMES:
        return make_response(request, 416)
    unsupported = [tag for tag in request.headers.get_all("Require") if tag.lower() not in SUPPORTED_OPTIONS]
    if unsupported:
        return make_response(request, 420, headers={"Unsupported": ", ".join(unsupported)})
    if request.method == "INVITE":
        return _unacceptable_session(request)
    return None


def _unacceptable_session(request: Request) -> Response | None:
    """415 for a body other than SDP (or an encoding we cannot undo), 406 when our SDP is not acceptable."""
    if request.body:
        content_type = (request.content_type or SDP).partition(";")[0].strip().lower()
        if content_type != SDP:
            return make_response(request, 415, headers={"Accept": SDP})
    encodings = [value.lower() for value in request.headers.get_all("Content-Encoding")]
    if any(encoding != "identity" for encoding in encodings):
        return make_response(request, 415, headers={"Accept-Encoding": "identity"})
    if "Accept" in request.headers:
        # An empty Accept admits no body at all (§20.1), yet our 200 must carry SDP.
        ranges = {value.partition(";")[0].strip().lower() for value in request.headers.get_all("Accept")}
        if not ranges & _ACCEPTS_SDP:
            return make_response(request, 406, headers={"Accept": SDP})
    return None
