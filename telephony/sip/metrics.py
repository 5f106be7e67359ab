"""Counters of what the SIP endpoint saw and did: one dataclass, read by tests, logs and benchmarks."""
from __future__ import annotations

from dataclasses import dataclass


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
