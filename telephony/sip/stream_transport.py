"""SIP over TCP and TLS (RFC 3261 §18, RFC 5626 §4.4.1) on asyncio streams.

One connection per peer address, used both ways: responses go back on the connection their request came on
(§18.2.2), and our requests to a peer reuse its connection: the one to its address, or the one on which it
said, in its Via, that it is that address (a peer may only claim ports of the IP it connects from). Limits
keep a flood from exhausting us: connections in total and per source IP, a message size cap, a deadline for
a message begun (slow senders), a cap on what we queue for a peer that does not read, and idle reaping.
TLS handshakes start only after the connection is admitted, and have their own deadline.

Every failure ends at most the one connection it happened on, with a log line; it never raises out.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .framing import FramingError, KeepAlive, StreamFramer
from .message import Request, Response, SipParseError
from .metrics import SipMetrics
from .tls import TlsContexts
from .transport import Address, MessageIntake, OnRequest, OnResponse, Peer, TransportName, via_destination

log = logging.getLogger(__name__)

_READ_SIZE = 65_536
_PONG = b"\r\n"
_PING = b"\r\n\r\n"


@dataclass(frozen=True)
class StreamLimits:
    max_connections: int = 1000  # open at once, both directions
    max_per_source: int = 100  # inbound connections from one IP address (a PBX needs a few; sipp -t tn one a call)
    idle_timeout_s: float = 300.0  # nothing sent or received: closed (RFC 5626 clients ping every ~2 min)
    message_timeout_s: float = 32.0  # a message begun must be complete by then
    max_queued_bytes: int = 1_048_576  # written but not taken by the peer; beyond it, the connection is cut
    connect_timeout_s: float = 10.0  # TCP connect plus TLS handshake, both ways
    keepalive_interval_s: float = 120.0  # RFC 5626 §4.4.1: pings at 80-100% of this on registration flows
    keepalive_timeout_s: float = 10.0  # RFC 5626 §4.4.1: no pong within 10 s and the flow has failed

    def __post_init__(self) -> None:
        if self.max_connections < 1 or self.max_per_source < 1:
            raise ValueError("stream limits need max_connections >= 1 and max_per_source >= 1")
        if (
            min(
                self.idle_timeout_s,
                self.message_timeout_s,
                self.connect_timeout_s,
                self.keepalive_interval_s,
                self.keepalive_timeout_s,
            )
            <= 0
        ):
            raise ValueError("stream limits: every timeout and interval must be positive")


class _Connection:
    """One TCP or TLS connection; `writer` is None until an outgoing connection is established."""

    def __init__(self, remote: Address, peer: Peer, inbound: bool, now: float) -> None:
        self.remote, self.peer, self.inbound = remote, peer, inbound
        self.writer: asyncio.StreamWriter | None = None
        self.queued: list[bytes] = []  # before the connection is up
        self.framer = StreamFramer()
        self.last_activity = now
        self.last_received = now
        self.partial_since: float | None = None  # when the message now being received began
        self.aliases: set[Address] = set()
        self.on_lost: Callable[[], None] | None = None  # a keep-alive flow's owner
        self.keepalive: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None
        self.closed = False


class StreamTransport(MessageIntake):
    """A TCP (tls=None) or TLS listener and the connections to and from it."""

    def __init__(
        self,
        metrics: SipMetrics,
        on_request: OnRequest,
        on_response: OnResponse,
        *,
        tls: TlsContexts | None = None,
        limits: StreamLimits = StreamLimits(),
        user_agent: str = "",
    ) -> None:
        super().__init__(metrics, self._on_request_received, on_response, user_agent=user_agent)
        self.name: TransportName = "TLS" if tls is not None else "TCP"
        self._deliver_request = on_request
        self.tls, self.limits = tls, limits
        self.local_address: Address | None = None
        # Called when a connection we opened could not be made: the client transactions sent there can fail now.
        self.on_unreachable: Callable[[Peer], None] = lambda peer: None
        self._server: asyncio.Server | None = None
        self._connections: dict[Address, _Connection] = {}
        self._aliases: dict[Address, _Connection] = {}
        self._per_source: Counter[str] = Counter()
        self._reaper: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def connections(self) -> int:
        return len(self._connections)

    async def open(self, host: str, port: int) -> Address:
        self._loop = asyncio.get_running_loop()
        # TLS is started by hand after admission, so a connection flood is refused before any handshake.
        self._server = await asyncio.start_server(self._accepted, host, port, limit=_READ_SIZE)
        self.local_address = self._server.sockets[0].getsockname()[:2]
        self._schedule_reaper()
        log.info("event=sip_listen transport=%s address=%s:%d", self.name.lower(), *self.local_address)
        return self.local_address

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        if self._server is not None:
            self._server.close()
        connections = list(self._connections.values())
        for connection in connections:
            self._close(connection, "shutdown")
        tasks = [c.task for c in connections if c.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    # ---- sending ------------------------------------------------------------------------------------

    def send(self, message: Request | Response, destination: Peer | Address) -> None:
        peer = destination if isinstance(destination, Peer) else Peer(destination[0], destination[1], self.name)
        connection = self._find(peer[:2]) or self._connect(peer)
        if connection is not None:
            self.metrics.count_sent(message)  # handed to the connection (queued while it connects)
            self._write(connection, message.to_bytes())

    def send_response(self, response: Response, source: Peer | None = None) -> None:
        """On the connection the request came on; if it is gone, on a new one to the Via's address (§18.2.2)."""
        connection = self._connections.get(source[:2]) if source is not None else None
        if connection is None or connection.closed:
            try:
                host, port = via_destination(response.vias[0])
            except (SipParseError, IndexError):
                return
            self.send(response, Peer(host, port, self.name))
            return
        self.metrics.count_sent(response)
        self._write(connection, response.to_bytes())

    def keep_alive(self, destination: Peer, on_lost: Callable[[], None]) -> None:
        connection = self._find(destination[:2])
        if connection is None:
            self._loop_call_soon(on_lost)  # gone already: the owner should start a new flow
            return
        connection.on_lost = on_lost
        if connection.keepalive is None:
            self._schedule_ping(connection)

    def _write(self, connection: _Connection, data: bytes) -> None:
        connection.last_activity = self._now()
        if connection.writer is None:
            if sum(map(len, connection.queued)) + len(data) > self.limits.max_queued_bytes:
                self._close(connection, "queue_full")
                return
            connection.queued.append(data)
            return
        try:
            connection.writer.write(data)
        except (OSError, RuntimeError) as error:
            self.metrics.send_errors += 1
            self._close(connection, f"write_failed: {error}")
            return
        self.metrics.datagrams_sent += 1
        if connection.writer.transport.get_write_buffer_size() > self.limits.max_queued_bytes:
            self._close(connection, "peer_not_reading")

    # ---- connections --------------------------------------------------------------------------------

    def _find(self, address: tuple[Any, ...]) -> _Connection | None:
        key = (address[0], address[1])
        connection = self._connections.get(key) or self._aliases.get(key)
        return connection if connection is not None and not connection.closed else None

    def _connect(self, peer: Peer) -> _Connection | None:
        if len(self._connections) >= self.limits.max_connections:
            self.metrics.send_errors += 1
            self.warn("connection_limit", peer, f"{len(self._connections)} connections open: not connecting")
            return None
        remote = (peer.host, peer.port)
        connection = _Connection(remote, Peer(peer.host, peer.port, self.name, peer.server_name), False, self._now())
        self._connections[remote] = connection
        connection.task = asyncio.get_running_loop().create_task(self._outgoing(connection))
        return connection

    async def _outgoing(self, connection: _Connection) -> None:
        peer = connection.peer
        try:
            context = self.tls.client if self.tls is not None else None
            async with asyncio.timeout(self.limits.connect_timeout_s):
                reader, writer = await asyncio.open_connection(
                    peer.host,
                    peer.port,
                    limit=_READ_SIZE,
                    ssl=context,
                    server_hostname=(peer.server_name or peer.host) if context is not None else None,
                )
        except (OSError, TimeoutError, ssl.SSLError) as error:
            self.metrics.send_errors += 1
            self.warn("connect_failed", peer, _describe(error))
            self._close(connection, "connect_failed")
            self.on_unreachable(peer)
            return
        if connection.closed:  # closed while connecting (shutdown, queue full)
            writer.close()
            return
        log.info("event=sip_connected transport=%s peer=%s:%d", self.name.lower(), *connection.remote)
        connection.writer = writer
        for data in connection.queued:
            self._write(connection, data)
        connection.queued.clear()
        await self._read(connection, reader)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        address = writer.get_extra_info("peername")
        remote: Address = (address[0], address[1])
        peer = Peer(remote[0], remote[1], self.name)
        reason = self._refusal(remote)
        if reason is not None:
            self.metrics.connections_refused += 1
            self.warn("connection_refused", peer, reason)
            writer.transport.abort()
            return
        connection = _Connection(remote, peer, True, self._now())
        connection.writer = writer
        connection.task = asyncio.current_task()
        self._connections[remote] = connection
        self._per_source[remote[0]] += 1
        try:
            if self.tls is not None:
                await writer.start_tls(self.tls.server, ssl_handshake_timeout=self.limits.connect_timeout_s)
        except (OSError, TimeoutError, ssl.SSLError) as error:
            self.warn("tls_handshake_failed", peer, _describe(error))
            self._close(connection, "handshake_failed")
            return
        await self._read(connection, reader)

    def _refusal(self, remote: Address) -> str | None:
        if len(self._connections) >= self.limits.max_connections:
            return f"{len(self._connections)} connections open (max_connections)"
        if self._per_source[remote[0]] >= self.limits.max_per_source:
            return f"{self._per_source[remote[0]]} connections from {remote[0]} (max_per_source)"
        return None

    async def _read(self, connection: _Connection, reader: asyncio.StreamReader) -> None:
        reason = "closed_by_peer"
        try:
            while data := await reader.read(_READ_SIZE):
                if connection.closed:
                    return
                now = self._now()
                connection.last_activity = connection.last_received = now
                try:
                    frames = connection.framer.feed(data)
                except FramingError as error:
                    self._framing_error(connection, error)
                    reason = "framing_error"
                    break
                connection.partial_since = (connection.partial_since or now) if connection.framer.pending else None
                for frame in frames:
                    if connection.closed:
                        return
                    if frame is KeepAlive.PING:
                        self.metrics.keepalives += 1
                        self._write(connection, _PONG)
                    elif isinstance(frame, bytes):
                        self.metrics.datagrams_received += 1
                        self._deliver(connection, frame)
        except (OSError, ssl.SSLError) as error:
            reason = f"read_failed: {_describe(error)}"
        finally:
            self._close(connection, reason)

    def _deliver(self, connection: _Connection, frame: bytes) -> None:
        try:
            self.deliver(frame, connection.peer)
        except Exception:  # a bug of ours must not end the connection, let alone the listener
            self.metrics.internal_errors += 1
            log.exception("event=sip_internal_error transport=%s source=%s:%d", self.name.lower(), *connection.remote)

    def _on_request_received(self, request: Request, source: Peer) -> None:
        connection = self._connections.get((source.host, source.port))
        if connection is not None and connection.inbound:
            via = request.vias[0]
            # The peer's own address as it gives it: our requests to it go on this connection. Only for its
            # own IP, so nobody can draw away requests meant for someone else.
            if via.host == source.host and via.port and (via.host, via.port) not in self._connections:
                alias = (via.host, via.port)
                if self._aliases.get(alias) is not connection:
                    self._aliases[alias] = connection
                    connection.aliases.add(alias)
        self._deliver_request(request, source)

    def _framing_error(self, connection: _Connection, error: FramingError) -> None:
        if error.status == 513:
            self.metrics.oversized += 1
        else:
            self.metrics.malformed += 1
        self.warn("framing_error", connection.peer, f"{error.detail}; closing the connection")
        if error.head:
            self.answer_unparsed(error.head, connection.peer, error.status, error.detail)

    def _close(self, connection: _Connection, reason: str) -> None:
        if connection.closed:
            return
        connection.closed = True
        if self._connections.get(connection.remote) is connection:
            del self._connections[connection.remote]
            if connection.inbound:
                self._per_source[connection.remote[0]] -= 1
                if self._per_source[connection.remote[0]] <= 0:
                    del self._per_source[connection.remote[0]]
        for alias in connection.aliases:
            if self._aliases.get(alias) is connection:
                del self._aliases[alias]
        if connection.keepalive is not None:
            connection.keepalive.cancel()
        if connection.writer is not None:
            connection.writer.close()
        log.info(
            "event=sip_connection_closed transport=%s peer=%s:%d reason=%s",
            self.name.lower(),
            *connection.remote,
            reason,
        )
        if connection.on_lost is not None and reason != "shutdown":
            self._loop_call_soon(connection.on_lost)

    # ---- timers -------------------------------------------------------------------------------------

    def _schedule_reaper(self) -> None:
        period = min(self.limits.idle_timeout_s, self.limits.message_timeout_s) / 4
        self._reaper = self._require_loop().call_later(period, self._reap)

    def _reap(self) -> None:
        now = self._now()
        for connection in list(self._connections.values()):
            if connection.on_lost is None and now - connection.last_activity > self.limits.idle_timeout_s:
                self._close(connection, "idle")
            elif (
                connection.partial_since is not None and now - connection.partial_since > self.limits.message_timeout_s
            ):
                self.warn(
                    "slow_message",
                    connection.peer,
                    f"a message unfinished after {self.limits.message_timeout_s:g} s; closing the connection",
                )
                self._close(connection, "message_timeout")
        self._schedule_reaper()

    def _schedule_ping(self, connection: _Connection) -> None:
        delay = self.limits.keepalive_interval_s * random.uniform(0.8, 1.0)
        connection.keepalive = self._require_loop().call_later(delay, self._ping, connection)

    def _ping(self, connection: _Connection) -> None:
        sent = self._now()
        self._write(connection, _PING)
        connection.keepalive = self._require_loop().call_later(
            self.limits.keepalive_timeout_s, self._pong_due, connection, sent
        )

    def _pong_due(self, connection: _Connection, sent: float) -> None:
        if connection.last_received < sent:  # nothing at all since the ping: the flow is dead
            self.warn("keepalive_failed", connection.peer, f"no pong within {self.limits.keepalive_timeout_s:g} s")
            self._close(connection, "keepalive_timeout")
            return
        self._schedule_ping(connection)

    def _loop_call_soon(self, callback: Callable[[], None]) -> None:
        self._require_loop().call_soon(callback)

    def _require_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def _now(self) -> float:
        return self._require_loop().time()


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"certificate not accepted: {error.verify_message}"
    return str(error) or type(error).__name__
