"""An Asterisk AudioSocket server offering the same `Call` as SIP: for PBXs that hand a call over with

    exten => 100,1,Answer()
     same => n,AudioSocket(${UUID()},voiceswarm.example:9092)

or `Dial(AudioSocket/voiceswarm.example:9092/${UUID()}/c(slin))` (without `c(slin)` the channel driver
sends the caller's codec, not slin). Each TCP connection is one call; its UUID is the call id.

Who may connect: the protocol has no authentication, so the peer's address is the only check. With
`allowed_sources` (the SIP endpoint's networks: the PBX's), a connection from anywhere else is closed at once,
before a byte is read, with one log line (at most once a minute per source).

What the protocol cannot carry, and what to do instead:
- Caller id and dialled number: Asterisk sends nothing but the UUID, so `caller` and `called` are "".
  The dialplan knows both and chooses the UUID, so it can record them under it, e.g.
      same => n,Set(ID=${UUID()})
      same => n,Set(DB(voiceswarm/${ID})=${CALLERID(num)}/${EXTEN})
      same => n,AudioSocket(${ID},voiceswarm.example:9092)
  and the application can look them up by `call.call_id` and set `call.caller` / `call.called`.
- Transfer: there is no message for it, and the dialplan cannot be told a target. `transfer()` returns
  False and leaves the call up, so the application can say so and carry on (as it does when a SIP
  REFER is refused). Asterisk releases continuing after AudioSocket() on a clean hangup (2025+) let the
  dialplan route the caller afterwards, e.g. `same => n,Queue(agents)` after the AudioSocket() line.

Pacing: Asterisk writes each message it receives straight to the caller's channel (no buffer of its own),
so we send exactly one 20 ms message every 20 ms on the media clock the SIP path uses (telephony.media_clock,
one per server, shared by its calls as an endpoint's calls share theirs). When nothing is queued we send
silence rather than nothing: a continuous stream keeps the caller's RTP flowing (far ends and carriers
hang up on RTP inactivity), keeps Asterisk's 2 s inactivity check quiet, and matches the SIP path.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from telephony.audiosocket_wire import (
    ERROR_CALLER_HUNG_UP,
    ERROR_CODES,
    HANGUP_MESSAGE,
    KIND_AUDIO,
    KIND_DTMF,
    KIND_ERROR,
    KIND_HANGUP,
    KIND_UUID,
    AudioSocketFramingError,
    Message,
    MessageReader,
    encode,
)
from telephony.call import FRAME_BYTES, FRAME_SAMPLES, EndReason, MediaTap
from telephony.media_clock import MediaClock
from telephony.queues import DropOldestQueue
from telephony.sip.limits import LogLimiter
from telephony.sources import AllowedSources

log = logging.getLogger(__name__)

SILENCE_MESSAGE = encode(KIND_AUDIO, bytes(FRAME_BYTES))
MAX_WRITE_BACKLOG = 16 * 1024  # ~0.5 s of audio unread by the peer: skip frames rather than buffer without bound
DTMF_KEYS = frozenset("0123456789*#ABCD")
HANDLER_GRACE_S = 1.0  # stop(): time handlers get to finish after their call was hung up


@dataclass
class AudioSocketMetrics:
    connections: int = 0  # TCP connections accepted
    forbidden: int = 0  # connections from outside allowed_sources, closed unread
    calls_started: int = 0  # connections that sent their UUID
    calls_active: int = 0
    calls_ended: int = 0
    bad_framing: int = 0  # connections closed for breaking the protocol (garbage, bad length, truncated)
    handshake_timeouts: int = 0  # connections that sent no UUID in time
    media_timeouts: int = 0
    errors_received: int = 0  # error messages (kind 0xff) from Asterisk
    dtmf_received: int = 0
    dtmf_dropped: int = 0  # DTMF messages with a byte that is no key
    frames_dropped: int = 0  # caller audio dropped because the application read too slowly
    send_skipped: int = 0  # 20 ms slots not sent (event loop stalled, or the peer stopped reading)
    transfers_refused: int = 0
    handler_errors: int = 0  # on_call raised


class AudioSocketCall:
    """One AudioSocket connection as a `telephony.call.Call`."""

    def __init__(
        self,
        call_id: str,
        transport: asyncio.Transport,
        metrics: AudioSocketMetrics,
        *,
        peer: str,
        no_media_timeout_s: float | None,
        audio_queue: int = 100,
        clock: MediaClock | None = None,
    ) -> None:
        self.call_id = call_id
        self.caller = ""  # AudioSocket carries no caller id: see the module docstring
        self.caller_name: str | None = None
        self.called = ""
        self.headers: Mapping[str, str] = MappingProxyType({})
        self.closed = asyncio.Event()
        self.end_reason: EndReason | None = None
        self.peer = peer  # host:port of the Asterisk side
        self.frames_received = 0  # 20 ms frames delivered to audio_in
        self.frames_sent = 0
        self.tap: MediaTap | None = None  # sees each slot's audio out and each frame in (a call recorder)
        self._transport = transport
        self._metrics = metrics
        self._loop = asyncio.get_running_loop()
        self._no_media_timeout = no_media_timeout_s
        self._audio_in: DropOldestQueue[np.ndarray] = DropOldestQueue(audio_queue)
        self._dtmf_in: DropOldestQueue[str] = DropOldestQueue(32)
        self._pending = bytearray()  # caller audio short of a whole frame
        self._out = bytearray()  # queued playback, little-endian PCM16
        self._played_samples = 0
        self._played = asyncio.Event()
        self._played.set()
        self._started = time.monotonic()
        self._last_rx = self._loop.time()
        self._clock = clock if clock is not None else MediaClock()
        self._clock.add(self)

    # ---- the Call API ----------------------------------------------------------------------------------

    @property
    def audio_in(self) -> DropOldestQueue[np.ndarray]:
        return self._audio_in

    @property
    def dtmf_in(self) -> DropOldestQueue[str]:
        return self._dtmf_in

    def play(self, pcm16: np.ndarray) -> None:
        """Queue 8 kHz int16 audio after what is queued; ignored once the call has ended."""
        if not isinstance(pcm16, np.ndarray) or pcm16.dtype != np.int16 or pcm16.ndim != 1:
            raise ValueError(
                f"play() takes a 1-D int16 array, got {type(pcm16).__name__} "
                f"{getattr(pcm16, 'dtype', '')} {getattr(pcm16, 'shape', '')}"
            )
        if pcm16.size and not self.closed.is_set():
            self._out += pcm16.astype("<i2", copy=False).tobytes()
            self._played.clear()

    def flush(self) -> None:
        self._out.clear()
        self._played.set()

    @property
    def playing(self) -> bool:
        return bool(self._out)

    @property
    def played_samples(self) -> int:
        return self._played_samples

    async def wait_played(self) -> None:
        await self._played.wait()

    async def transfer(self, target: str) -> bool:
        """AudioSocket has no transfer: always False, and the call stays up (see the module docstring)."""
        self._metrics.transfers_refused += 1
        log.warning(
            "event=audiosocket_transfer_unsupported call=%s target=%s detail=AudioSocket cannot transfer; "
            "route the caller in the dialplan after AudioSocket() or connect VoiceSwarm by SIP",
            self.call_id,
            target,
        )
        return False

    async def hangup(self) -> None:
        self.end("local_hangup", notify_peer=True)

    # ---- driven by the connection --------------------------------------------------------------------------

    def end(self, reason: EndReason, *, notify_peer: bool) -> None:
        """End the call once; `notify_peer` sends Asterisk a hangup message before closing the socket."""
        if self.closed.is_set():
            return
        self.end_reason = reason
        if notify_peer and not self._transport.is_closing():
            self._transport.write(HANGUP_MESSAGE)
        self._transport.close()  # sends what is buffered first
        self._clock.discard(self)
        self._out.clear()
        self._played.set()
        self._audio_in.close()
        self._dtmf_in.close()
        self.closed.set()
        metrics = self._metrics
        metrics.calls_active -= 1
        metrics.calls_ended += 1
        metrics.frames_dropped += self._audio_in.dropped
        metrics.media_timeouts += reason == "media_timeout"
        log.info(
            "event=audiosocket_call_end call=%s peer=%s reason=%s seconds=%.1f frames_in=%d frames_out=%d dropped=%d",
            self.call_id,
            self.peer,
            reason,
            time.monotonic() - self._started,
            self.frames_received,
            self.frames_sent,
            self._audio_in.dropped,
        )

    def receive(self, message: Message) -> None:
        if message.kind == KIND_AUDIO:
            self._receive_audio(message.payload)
        elif message.kind == KIND_DTMF:
            self._receive_dtmf(message.payload)
        elif message.kind == KIND_HANGUP:
            self.end("remote_hangup", notify_peer=False)
        elif message.kind == KIND_ERROR:
            self._receive_error(message.payload)
        elif message.kind == KIND_UUID:
            raise AudioSocketFramingError("a second UUID message: the UUID comes once, first")

    def _receive_audio(self, payload: bytes) -> None:
        self._last_rx = self._loop.time()
        pending = self._pending
        pending += payload
        whole = len(pending) - len(pending) % FRAME_BYTES
        if not whole:
            return
        frames = np.frombuffer(bytes(pending[:whole]), "<i2").astype(np.int16).reshape(-1, FRAME_SAMPLES)
        del pending[:whole]
        for frame in frames:
            self._audio_in.put(frame)
            if self.tap is not None:
                self._tap("received", frame)
        self.frames_received += len(frames)

    def _receive_dtmf(self, payload: bytes) -> None:
        key = chr(payload[0])
        if key not in DTMF_KEYS:
            self._metrics.dtmf_dropped += 1
            log.warning("event=audiosocket_bad_dtmf call=%s byte=0x%02x", self.call_id, payload[0])
            return
        self._metrics.dtmf_received += 1
        log.debug("event=dtmf_received call=%s digit=%s", self.call_id, key)  # typed card or order numbers: DEBUG only
        self._dtmf_in.put(key)

    def _receive_error(self, payload: bytes) -> None:
        code = payload[0] if payload else 0
        meaning = ", ".join(text for bit, text in ERROR_CODES.items() if code & bit) or "unspecified"
        self._metrics.errors_received += 1
        log.warning("event=audiosocket_error_received call=%s code=0x%02x meaning=%s", self.call_id, code, meaning)
        self.end("remote_hangup" if code & ERROR_CALLER_HUNG_UP else "failed", notify_peer=False)

    # ---- sending ---------------------------------------------------------------------------------------------

    def on_slot(self, skipped: int) -> None:
        """One 20 ms slot of the clock: send one message. `skipped` slots were given up (the loop was late): the
        clock keeps its time rather than flood Asterisk, which plays what it gets."""
        if self.closed.is_set():  # ended earlier in this slot (by another call's callback)
            return
        self._metrics.send_skipped += skipped
        self._tick(skipped)

    def after_slot(self) -> None:
        """Nothing: the caller's audio arrives by TCP callbacks (data_received), not read on the clock."""

    def _tick(self, skipped: int) -> None:
        if self._no_media_timeout and self._loop.time() - self._last_rx > self._no_media_timeout:
            log.warning("event=audiosocket_media_timeout call=%s seconds=%.1f", self.call_id, self._no_media_timeout)
            self.end("media_timeout", notify_peer=True)
            return
        if self._transport.get_write_buffer_size() > MAX_WRITE_BACKLOG:
            self._metrics.send_skipped += 1
            if self.tap is not None:
                self._tap("slot", None, skipped)
            return
        chunk: bytes | None = None
        if self._out:
            chunk = bytes(self._out[:FRAME_BYTES])
            del self._out[:FRAME_BYTES]
            self._played_samples += len(chunk) // 2
            message = encode(KIND_AUDIO, chunk.ljust(FRAME_BYTES, b"\0"))
            if not self._out:
                self._played.set()
        else:
            message = SILENCE_MESSAGE
        self._transport.write(message)
        self.frames_sent += 1
        if self.tap is not None:
            self._tap("slot", chunk, skipped)

    def _tap(self, method: str, *args: object) -> None:
        """A failing tap is dropped (one log line), never the call's media."""
        try:
            getattr(self.tap, method)(*args)
        except Exception:
            log.exception(
                "event=audiosocket_tap_failed call=%s detail=the tap is dropped, the call goes on", self.call_id
            )
            self.tap = None


class _Connection(asyncio.Protocol):
    """Reads one TCP connection: the UUID first (it makes the call), then the call's messages."""

    def __init__(self, server: AudioSocketServer) -> None:
        self.server = server
        self.reader = MessageReader()
        self.call: AudioSocketCall | None = None
        self.transport: asyncio.Transport  # set by connection_made, before any other callback
        self.peer = "?"
        self.closing = False  # we closed it: what is left in the reader is not the peer's truncation
        self._handshake: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if not self.server.sources.allows(peer[0] if peer else ""):
            self.server.forbid(self)
            return
        self.server.connection_made(self)
        self._handshake = asyncio.get_running_loop().call_later(
            self.server.handshake_timeout_s, self._handshake_timeout
        )

    def data_received(self, data: bytes) -> None:
        if self.closing and self.call is None:  # refused or timed out: nothing it sends is read
            return
        try:
            for message in self.reader.feed(data):
                if self.call is None:
                    self._start_call(message)
                else:
                    self.call.receive(message)
                if self.transport.is_closing():
                    return
        except AudioSocketFramingError as error:
            self.fail(str(error))

    def eof_received(self) -> bool:
        return False  # the peer is done: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        if self._handshake:
            self._handshake.cancel()
        if self.reader.pending and not self.closing and (self.call is None or not self.call.closed.is_set()):
            self.fail(f"the connection closed inside a message ({self.reader.pending} bytes of it received)")
        elif self.call:
            self.call.end("remote_hangup", notify_peer=False)
        self.server.connection_lost(self)

    def _start_call(self, message: Message) -> None:
        if message.kind != KIND_UUID:
            raise AudioSocketFramingError(
                f"the first message must be the UUID (kind 0x01), got kind 0x{message.kind:02x}"
            )
        if self._handshake:
            self._handshake.cancel()
        self.call = self.server.call_started(str(uuid.UUID(bytes=message.payload)), self.transport, self.peer)

    def _handshake_timeout(self) -> None:
        self.server.metrics.handshake_timeouts += 1
        self.server.warn("handshake_timeout", self.peer, f"no UUID within {self.server.handshake_timeout_s:g} s")
        self.close()

    def fail(self, detail: str) -> None:
        """Bad framing: close this connection only, with one log line (at most once a minute per source)."""
        self.server.metrics.bad_framing += 1
        call_id = self.call.call_id if self.call else "-"
        self.server.warn("bad_framing", self.peer, f"call={call_id} detail={detail}")
        self.close("failed")

    def close(self, reason: EndReason = "failed") -> None:
        self.closing = True
        if self.call:
            self.call.end(reason, notify_peer=True)
        else:
            self.transport.close()


class AudioSocketServer:
    """Accepts Asterisk's AudioSocket connections and runs `on_call(call)` for each, one task per call.

    When `on_call` returns (or raises), the call is hung up if it is still up.
    """

    def __init__(
        self,
        host: str,
        port: int,
        on_call: Callable[[AudioSocketCall], Awaitable[None]],
        *,
        no_media_timeout_s: float | None = 30.0,
        handshake_timeout_s: float = 5.0,
        audio_queue: int = 100,
        allowed_sources: Iterable[str] | None = None,
    ) -> None:
        """`allowed_sources`: CIDR networks that may connect (ValueError for one that is not); None: anyone."""
        self.host, self.port = host, port
        self.sources = AllowedSources.parse(allowed_sources)
        self.on_call = on_call
        self.no_media_timeout_s = no_media_timeout_s
        self.handshake_timeout_s = handshake_timeout_s
        self.audio_queue = audio_queue
        self.metrics = AudioSocketMetrics()
        self._server: asyncio.Server | None = None
        self._clock: MediaClock | None = None  # one 20 ms send clock for all our calls, made on the running loop
        self._connections: set[_Connection] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._log_limiter = LogLimiter()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._clock = MediaClock()
        self._server = await loop.create_server(lambda: _Connection(self), self.host, self.port)
        log.info("event=audiosocket_listening address=%s:%d", *self.local_address)

    @property
    def local_address(self) -> tuple[str, int]:
        if self._server is None or not self._server.sockets:
            raise RuntimeError("the AudioSocket server is not listening: await start() first")
        host, port = self._server.sockets[0].getsockname()[:2]
        return host, port

    async def stop(self, deadline_s: float = 5.0) -> None:
        """Refuse new calls, let running ones go on for up to `deadline_s`, then hang up the rest
        ("shutdown"); handlers still running HANDLER_GRACE_S later are cancelled. Leaves no task behind."""
        if self._server is None:
            return
        self._stopping = True
        self._server.close()
        if self._handlers:
            await asyncio.wait(set(self._handlers), timeout=deadline_s)
        for connection in list(self._connections):
            connection.close("shutdown")
        if self._handlers:
            await asyncio.wait(set(self._handlers), timeout=HANDLER_GRACE_S)
        for task in self._handlers:
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        try:  # from Python 3.12 this also waits for every connection to flush and close
            await asyncio.wait_for(self._server.wait_closed(), HANDLER_GRACE_S)
        except TimeoutError:
            log.warning("event=audiosocket_stop_unflushed detail=a peer did not read our last messages")
        self._server = None
        log.info(
            "event=audiosocket_stopped calls=%d bad_framing=%d", self.metrics.calls_started, self.metrics.bad_framing
        )

    # ---- called by connections --------------------------------------------------------------------------------

    def connection_made(self, connection: _Connection) -> None:
        self.metrics.connections += 1
        self._connections.add(connection)
        if self._stopping:
            connection.close()

    def connection_lost(self, connection: _Connection) -> None:
        self._connections.discard(connection)

    def forbid(self, connection: _Connection) -> None:
        """A peer outside allowed_sources: closed before anything it sent is read; no call, no handler."""
        self.metrics.forbidden += 1
        connection.closing = True
        connection.transport.close()
        self.warn("forbidden", connection.peer, "detail=connection from outside allowed_sources closed")

    def call_started(self, call_id: str, transport: asyncio.Transport, peer: str) -> AudioSocketCall:
        call = AudioSocketCall(
            call_id,
            transport,
            self.metrics,
            peer=peer,
            no_media_timeout_s=self.no_media_timeout_s,
            audio_queue=self.audio_queue,
            clock=self._clock,
        )
        self.metrics.calls_started += 1
        self.metrics.calls_active += 1
        log.info("event=audiosocket_call_start call=%s peer=%s", call_id, call.peer)
        task = asyncio.get_running_loop().create_task(self._serve(call), name=f"audiosocket-call-{call_id}")
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)
        return call

    async def _serve(self, call: AudioSocketCall) -> None:
        try:
            await self.on_call(call)
        except Exception:
            self.metrics.handler_errors += 1
            log.exception("event=audiosocket_handler_failed call=%s", call.call_id)
        finally:
            await call.hangup()  # a no-op if the call already ended

    def warn(self, kind: str, source: str, detail: str) -> None:
        if self._log_limiter.allow(kind, source.rsplit(":", 1)[0]):
            log.warning("event=audiosocket_%s peer=%s %s (logged once a minute per source)", kind, source, detail)
