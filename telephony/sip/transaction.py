"""SIP transactions over UDP (RFC 3261 §17, with the RFC 6026 Accepted state): retransmissions and
timeouts run on loop timers, never on a task per transaction.

Server side: a retransmitted request is answered from the stored response; the INVITE server transaction
sends 100 Trying at once and retransmits a 2xx (T1 doubling up to T2) until the ACK, telling the
transaction user when none came within 64*T1. Merged requests get 482; what the transaction user's
`screen` refuses gets one stateless response. Max-Forwards 0 is served: we are the UAS (RFC 4475 §3.3.11).
Client side: timers A/B (INVITE) and E/F (others); a timeout resolves `final` with a 408, as §8.1.3.1 says,
and a peer we cannot connect to (TCP/TLS) with a 503.
Over TCP and TLS (reliable) nothing is retransmitted but the 2xx to an INVITE, which §13.3.1.4 resends until
the ACK whatever the transport (a proxy may forward it over UDP); timers D, I, J and K are 0 there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from .headers import Headers
from .message import Request, Response, make_response, new_branch
from .metrics import SipMetrics
from .transport import Peer, Transport, TransportName

log = logging.getLogger(__name__)

COOKIE = "z9hG4bK"  # RFC 3261 branches start with it; others come from RFC 2543 peers


@dataclass(frozen=True)
class Timers:
    t1: float = 0.5  # RTT estimate
    t2: float = 4.0  # maximum retransmit interval of non-INVITE requests and INVITE responses
    t4: float = 5.0  # maximum time a message stays in the network

    @property
    def timeout(self) -> float:
        return 64 * self.t1  # timers B, F, H, J and the wait for the ACK of a 2xx


# What a transaction is found by: branch and sent-by, or the RFC 2543 fields for a peer without a branch.
TransactionKey = tuple[str | int | None, ...]


def server_key(request: Request, method: str | None = None) -> TransactionKey:
    """RFC 3261 §17.2.3: branch, sent-by and method (an ACK or CANCEL looks up its INVITE with method="INVITE")."""
    via = request.vias[0]
    method = method or ("INVITE" if request.method == "ACK" else request.method)
    if via.branch and via.branch.startswith(COOKIE):
        return via.branch, via.host, via.port, method
    return request.call_id, request.cseq[0], request.from_.tag, via.host, via.port, method


class ServerTransaction:
    def __init__(self, layer: TransactionLayer, key: TransactionKey, request: Request, source: Peer) -> None:
        self.layer, self.key, self.request, self.source = layer, key, request, source
        self.response: Response | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False

    @property
    def final(self) -> bool:
        return self.response is not None and self.response.status >= 200

    def respond(self, response: Response) -> None:
        if self.final or self._ended:
            log.debug("event=sip_late_response call=%s status=%d", self.request.call_id, response.status)
            return
        self.response = response
        self.layer.transport.send_response(response, self.source)
        self._after_response()

    def retransmitted(self) -> None:
        if self.response is not None:
            self.layer.transport.send_response(self.response, self.source)

    def terminate(self) -> None:
        self._ended = True
        self._cancel_timer()
        self.layer._forget(self)

    def _after_response(self) -> None:
        if self.final:  # Timer J: absorb retransmissions of the request for 64*T1 (none come over TCP/TLS)
            linger = 0.0 if self.source.reliable else self.layer.timers.timeout
            self._timer = self.layer.loop.call_later(linger, self.terminate)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class InviteServerTransaction(ServerTransaction):
    def __init__(self, layer: TransactionLayer, key: TransactionKey, request: Request, source: Peer) -> None:
        super().__init__(layer, key, request, source)
        self.on_ack_timeout: Callable[[], None] | None = None  # the 2xx was never acknowledged
        self.acked = False
        self._interval = 0.0
        self._deadline = 0.0
        self.respond(make_response(request, 100))  # at once: stops the caller's INVITE retransmissions

    def _after_response(self) -> None:
        assert self.response is not None
        if self.response.status < 200:
            return
        timers, loop = self.layer.timers, self.layer.loop
        self._interval = timers.t1
        self._deadline = loop.time() + timers.timeout
        if self.response.status >= 300 and self.source.reliable:
            self._timer = loop.call_later(timers.timeout, self._expire)  # no timer G on TCP/TLS: only H
        else:
            self._timer = loop.call_later(timers.t1, self._retransmit)  # timer G, or the 2xx retransmission
        if self.response.status < 300:
            self.layer._accepted[(self.request.call_id, self.request.cseq[0])] = self

    def _retransmit(self) -> None:
        loop, timers = self.layer.loop, self.layer.timers
        if loop.time() >= self._deadline:
            self._expire()
            return
        self.retransmitted()
        self._interval = min(2 * self._interval, timers.t2)
        self._timer = loop.call_later(min(self._interval, self._deadline - loop.time()), self._retransmit)

    def _expire(self) -> None:
        self._timer = None
        if self.response is not None and self.response.status < 300:
            self.layer.metrics.ack_timeouts += 1
            log.warning("event=sip_ack_timeout call=%s", self.request.call_id)
            if self.on_ack_timeout is not None:
                self.on_ack_timeout()
        self.terminate()  # timer H or L

    def ack(self) -> None:
        if self.acked or self.response is None or self.response.status < 200:
            return
        self.acked = True
        self._cancel_timer()
        remaining = self._deadline - self.layer.loop.time()
        # Keep absorbing retransmitted INVITEs (Timer L, RFC 6026) or ACKs (Timer I) for a while.
        timer_i = 0.0 if self.source.reliable else self.layer.timers.t4
        linger = max(0.0, remaining) if self.response.status < 300 else timer_i
        self._timer = self.layer.loop.call_later(linger, self.terminate)

    def terminate(self) -> None:
        super().terminate()
        if self.layer._accepted.get((self.request.call_id, self.request.cseq[0])) is self:
            del self.layer._accepted[(self.request.call_id, self.request.cseq[0])]


class ClientTransaction:
    """Our request: sent at once, retransmitted until a response (UDP), `final` resolved with the final one."""

    def __init__(self, layer: TransactionLayer, request: Request, destination: Peer) -> None:
        self.layer, self.request, self.destination = layer, request, destination
        self.key = (request.vias[0].branch, request.method)
        self.final: asyncio.Future[Response] = layer.loop.create_future()
        self.provisional: Response | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._interval = layer.timers.t1
        self._deadline = layer.loop.time() + layer.timers.timeout
        layer.transport.send(request, destination)
        if destination.reliable:  # §17.1.1.2, §17.1.2.2: no timer A or E on TCP/TLS; B or F still bound the wait
            self._timer = layer.loop.call_later(layer.timers.timeout, self._time_out)
        else:
            self._timer = layer.loop.call_later(self._interval, self._retransmit)

    def fail(self, status: int, reason: str) -> None:
        """End without a response from the peer: timer B or F ran out (408), or the transport failed (503)."""
        self._timer = None
        self._resolve(make_response(self.request, status, reason))
        self.terminate()

    def _time_out(self) -> None:
        if self.request.method == "INVITE" and self.provisional is not None:
            return  # timer B only runs until the first response (§17.1.1.2)
        self.fail(408, "Request Timeout (no response)")

    def _retransmit(self) -> None:
        loop, timers = self.layer.loop, self.layer.timers
        if loop.time() >= self._deadline:  # timer B or F
            self._time_out()
            return
        if self.request.method == "INVITE" and self.provisional is not None:
            return  # timer A stops once the INVITE got any response
        self.layer.transport.send(self.request, self.destination)
        if self.request.method == "INVITE":
            self._interval *= 2  # timer A doubles without a cap
        else:
            self._interval = timers.t2 if self.provisional is not None else min(2 * self._interval, timers.t2)
        self._timer = loop.call_later(min(self._interval, self._deadline - loop.time()), self._retransmit)

    def receive(self, response: Response) -> None:
        if response.status < 200:
            self.provisional = response  # the INVITE stops retransmitting; others slow down to T2
            return
        first = not self.final.done()
        self._resolve(response)
        if self.request.method != "INVITE":
            self._linger(0.0 if self.destination.reliable else self.layer.timers.t4)  # timer K
        elif response.status >= 300:
            self.layer.transport.send(self._ack_for(response), self.destination)
            if first:
                self._linger(0.0 if self.destination.reliable else 32.0)  # timer D: re-ACK retransmitted finals
        else:
            self.terminate()  # a 2xx is ACKed by the transaction user (a new transaction)

    def _ack_for(self, response: Response) -> Request:
        """RFC 3261 §17.1.1.3: the ACK for a non-2xx final response, in the INVITE's transaction."""
        headers = Headers()
        headers.add("Via", self.request.headers.get_all("Via")[0])
        for route in self.request.headers.get_all("Route"):
            headers.add("Route", route)
        headers.add("From", self.request.headers.get("From") or "")
        headers.add("To", response.headers.get("To") or "")
        headers.add("Call-ID", self.request.call_id)
        headers.add("CSeq", f"{self.request.cseq[0]} ACK")
        headers.add("Max-Forwards", "70")
        return Request("ACK", self.request.uri, headers)

    def _linger(self, seconds: float) -> None:
        self._cancel_timer()
        self._timer = self.layer.loop.call_later(seconds, self.terminate)

    def _resolve(self, response: Response) -> None:
        if not self.final.done():
            self.final.set_result(response)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def terminate(self) -> None:
        self._cancel_timer()
        if self.layer._client.get(self.key) is self:
            del self.layer._client[self.key]


class TransactionLayer:
    """Matches requests and responses to transactions and hands what is new to the transaction user."""

    def __init__(
        self,
        transport: Transport,
        metrics: SipMetrics,
        via_host: str,
        *,
        timers: Timers = Timers(),
        max_transactions: int = 10_000,
    ) -> None:
        self.transport, self.metrics, self.timers = transport, metrics, timers
        self.via_host = via_host
        self.max_transactions = max_transactions
        self.loop = asyncio.get_running_loop()
        # Set by the transaction user: a new request (transaction None for an ACK to a 2xx), a CANCEL
        # matching a pending INVITE, a response no transaction claims (a retransmitted 2xx to our INVITE).
        self.on_request: Callable[[Request, ServerTransaction | None], None] = lambda request, txn: None
        self.on_cancel: Callable[[ServerTransaction, InviteServerTransaction], None] = lambda cancel, invite: None
        self.on_stray_response: Callable[[Response], None] = lambda response: None
        # A new request's refusal, answered before any transaction exists (None: serve it).
        self.screen: Callable[[Request, Peer], Response | None] = lambda request, source: None
        self._server: dict[TransactionKey, ServerTransaction] = {}
        self._client: dict[TransactionKey, ClientTransaction] = {}
        self._accepted: dict[tuple[str, int], InviteServerTransaction] = {}
        self._merge_index: dict[
            tuple[str | None, str, int, str], TransactionKey
        ] = {}  # (From tag, Call-ID, CSeq) of tag-less requests -> key

    # ---- server side ----------------------------------------------------------------------------------

    def receive_request(self, request: Request, source: Peer) -> None:
        key = server_key(request)
        existing = self._server.get(key)
        if request.method == "ACK":
            if isinstance(existing, InviteServerTransaction):
                existing.ack()  # the ACK of a non-2xx: it ends there
                if existing.response is None or existing.response.status >= 300:
                    return
            accepted = self._accepted.get((request.call_id, request.cseq[0]))
            if accepted is not None:
                accepted.ack()
            self.on_request(request, None)
            return
        if existing is not None:
            self.metrics.retransmissions += 1
            existing.retransmitted()
            return
        refusal = self.screen(request, source)
        if refusal is not None:  # stateless (RFC 3261 §8.2.7): one response, nothing kept, nothing resent
            self.metrics.refused_statelessly += 1
            self.transport.send_response(refusal, source)
            return
        merge = (request.from_.tag, request.call_id, request.cseq[0], request.method)
        if request.to.tag is None and self._merge_index.get(merge, key) != key:
            # The same request reached us by two paths (a forking proxy, a loop): RFC 3261 §8.2.2.2.
            self.metrics.loops += 1
            self.transport.send_response(make_response(request, 482), source)
            return
        if len(self._server) >= self.max_transactions:
            self.metrics.overloaded += 1
            self.transport.send_response(make_response(request, 503, headers={"Retry-After": "5"}), source)
            return
        kind = InviteServerTransaction if request.method == "INVITE" else ServerTransaction
        transaction = kind(self, key, request, source)
        self._server[key] = transaction
        if request.to.tag is None:
            self._merge_index[merge] = key
        if request.method == "CANCEL":
            invite = self._server.get(server_key(request, "INVITE"))
            if isinstance(invite, InviteServerTransaction):
                self.on_cancel(transaction, invite)
            else:
                self.metrics.unknown_dialog += 1
                transaction.respond(make_response(request, 481))
            return
        self.on_request(request, transaction)

    def _forget(self, transaction: ServerTransaction) -> None:
        if self._server.get(transaction.key) is transaction:
            del self._server[transaction.key]
        request = transaction.request
        merge = (request.from_.tag, request.call_id, request.cseq[0], request.method)
        if self._merge_index.get(merge) == transaction.key:
            del self._merge_index[merge]

    # ---- client side ----------------------------------------------------------------------------------

    def request(self, request: Request, destination: Peer) -> ClientTransaction:
        """Send our request in a new client transaction (adding our Via when it has none)."""
        if "Via" not in request.headers:
            request.headers.add("Via", self.via(transport=destination.transport))
        transaction = ClientTransaction(self, request, destination)
        self._client[transaction.key] = transaction
        return transaction

    def send_stateless(self, request: Request, destination: Peer) -> None:
        """An ACK for a 2xx: a transaction of its own, never retransmitted by us."""
        if "Via" not in request.headers:
            request.headers.add("Via", self.via(transport=destination.transport))
        self.transport.send(request, destination)

    def via(self, branch: str | None = None, transport: TransportName = "UDP") -> str:
        host = f"[{self.via_host}]" if ":" in self.via_host else self.via_host
        port = self.transport.port(transport)
        return f"SIP/2.0/{transport} {host}:{port};branch={branch or new_branch()};rport"

    def receive_response(self, response: Response, source: Peer) -> None:
        transaction = self._client.get((response.vias[0].branch, response.cseq[1]))
        if transaction is not None:
            transaction.receive(response)
            return
        self.metrics.stray_responses += 1
        self.on_stray_response(response)

    def unreachable(self, peer: Peer) -> None:
        """A connection to `peer` could not be made: what we sent there fails now, not at timer B or F
        (RFC 3261 §8.1.3.1: a transport error is a 503)."""
        for client in list(self._client.values()):
            if client.destination[:3] == peer[:3] and not client.final.done():
                client.fail(503, f"Service Unavailable (cannot reach {peer})")

    def close(self) -> None:
        """Stop every timer; pending client transactions resolve with 408."""
        for server in list(self._server.values()):
            server.terminate()
        for client in list(self._client.values()):
            client._resolve(make_response(client.request, 408, "Request Timeout (shutting down)"))
            client.terminate()
