"""Counters of what the SIP endpoint saw and did: one dataclass, read by tests, logs, benchmarks and /metrics."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .message import Request, Response

# Methods counted by name; whatever else a peer sends is "other", so that a scanner cannot grow the counters.
METHODS = frozenset(
    {
        "INVITE",
        "ACK",
        "BYE",
        "CANCEL",
        "OPTIONS",
        "REGISTER",
        "REFER",
        "NOTIFY",
        "SUBSCRIBE",
        "INFO",
        "UPDATE",
        "PRACK",
        "MESSAGE",
        "PUBLISH",
    }
)


def method_label(method: str) -> str:
    return method if method in METHODS else "other"


@dataclass
class SipMetrics:
    datagrams_received: int = 0
    datagrams_sent: int = 0
    send_errors: int = 0
    keepalives: int = 0  # bare CRLF datagrams, CRLFCRLF pings on TCP/TLS (RFC 5626 keep-alives)
    connections_refused: int = 0  # TCP/TLS connections over max_connections or max_per_source
    oversized: int = 0  # datagrams over 64 KB
    malformed: int = 0  # unparseable datagrams, answered 400 when possible, else dropped
    bad_requests: int = 0  # 400 (or 505) sent for requests that failed to parse or validate
    bad_responses: int = 0  # responses that failed to validate, dropped
    stray_responses: int = 0  # responses matching none of our transactions
    retransmissions: int = 0  # retransmitted requests absorbed by a server transaction
    internal_errors: int = 0  # our own bugs caught at the transport edge (answered 500)
    forbidden: int = 0  # 403: source outside allowed_sources
    rate_limited: int = 0  # 503: INVITE flood from one source
    overloaded: int = 0  # 503: transaction table full
    loops: int = 0  # 482 merged or looped requests
    refused_statelessly: int = 0  # refused before any transaction: one response each (403, 503, 416, 420, ...)
    not_implemented: int = 0  # 501
    unknown_dialog: int = 0  # 481
    busy: int = 0  # 486: max_calls reached
    no_common_codec: int = 0  # 488
    invites_received: int = 0  # new INVITEs (not retransmissions, not re-INVITEs)
    calls_answered: int = 0
    calls_cancelled: int = 0  # 487 after CANCEL
    calls_ended: int = 0
    calls_active: int = 0
    ack_timeouts: int = 0  # no ACK for our 2xx within 64*T1: the call was ended with BYE
    calls_dialled: int = 0
    dial_failures: int = 0
    transfers_succeeded: int = 0
    transfers_failed: int = 0
    media_timeouts: int = 0
    registrations: int = 0  # successful REGISTERs (refreshes included)
    registration_failures: int = 0  # REGISTER attempts that failed (refused, timed out, unanswerable)
    # What went over the wire, retransmissions included: requests by method, responses by (CSeq method, status).
    # Received: the messages that parsed and validated (the others are malformed, bad_requests, bad_responses).
    requests_received: Counter[str] = field(default_factory=Counter, repr=False)
    requests_sent: Counter[str] = field(default_factory=Counter, repr=False)
    responses_received: Counter[tuple[str, int]] = field(default_factory=Counter, repr=False)
    responses_sent: Counter[tuple[str, int]] = field(default_factory=Counter, repr=False)

    def count_received(self, message: Request | Response) -> None:
        if isinstance(message, Request):
            self.requests_received[method_label(message.method)] += 1
        else:
            self.responses_received[_response_key(message)] += 1

    def count_sent(self, message: Request | Response) -> None:
        if isinstance(message, Request):
            self.requests_sent[method_label(message.method)] += 1
        else:
            self.responses_sent[_response_key(message)] += 1


def _response_key(response: Response) -> tuple[str, int]:
    try:
        method = response.cseq[1]
    except ValueError:  # SipParseError: a response we salvaged from a broken request
        method = "other"
    return method_label(method), response.status
