"""One call's RTP media on asyncio: G.711 audio both ways, RFC 4733 DTMF, basic RTCP. No thread per call.

Receive: after each 20 ms slot the RTP socket is drained (no event-loop wake-up per packet; arrival times
come from kernel timestamps; it adds at most 20 ms of delay) -> source check -> RTP parse -> symmetric-RTP latch ->
payload-type filter -> jitter buffer -> G.711 decode -> gaps filled -> re-framed to 20 ms -> `audio_in`
(or `dtmf_in` for telephone-events). RTCP, rare, comes through an ordinary datagram callback.
Send: a MediaClock (shared by all of an endpoint's calls, or the session's own) ticks every 20 ms on an
absolute clock (start + n * 20 ms, so no drift) and the session sends the next 20 ms of the playback queue,
comfort silence when it is empty, or a DTMF event packet.
SRTP (when the SDP agreed keys): each packet is protected just before sending and checked just after reading;
one that fails the check is counted and dropped, like any other bad datagram.
Strict RTP (MediaSources): only the host the peer's SDP named (any port) or a listed network may latch; a
stranger's packets are dropped unread, before SRTP, parsing or the latch, so port spraying can neither be heard
in a call nor take its audio. SRTP authenticates what a packet says, not where it comes from: a replayed packet
from elsewhere could still latch our (encrypted) audio away from the caller, so the check holds there too.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
import socket
import struct
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from telephony.call import FRAME_BYTES, FRAME_SAMPLES, MediaTap
from telephony.codec import Codec
from telephony.dtmf import VOLUME, DtmfDetector, TelephoneEvent, event_code
from telephony.errors import TelephonyError
from telephony.jitter import JitterBuffer
from telephony.media_clock import MediaClock
from telephony.ports import allocate
from telephony.queues import DropOldestQueue
from telephony.rtcp import SR, ReceptionStats, parse_compound, receiver_report, sender_report
from telephony.rtp_packet import _HEADER, MalformedPacket, RtpPacket, is_rtcp, parse
from telephony.sdp import DIRECTIONS
from telephony.sources import MediaSources
from telephony.srtp import SrtpKeys, SrtpRejected, SrtpStreams

log = logging.getLogger(__name__)

SockAddr = tuple[Any, ...]  # (host, port) from asyncio; (host, port, flow, scope) over IPv6
RTCP_INTERVAL = 5.0
MAX_FILL_SAMPLES = 8000  # a timestamp jump over 1 s is a new timeline, not a gap to fill
FADE_SAMPLES = 480  # a lost stretch repeats the last packet fading out over 60 ms, then silence
WARN_EVERY = 60.0  # bad input is counted always, logged at most once a minute per kind and session
MAX_READS_PER_SLOT = 64  # datagrams taken per 20 ms slot; a flood beyond that waits (or drops) in the kernel
MAX_DATAGRAM = 2048
# Kernel receive timestamps (Linux SO_TIMESTAMPNS: Python does not export the constant) keep the RFC 3550
# jitter honest although packets are read once per slot; elsewhere the read time stands in.
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform == "linux" else None)
_TIMESPEC = struct.Struct("@ll")  # struct timespec: time_t and long, both C longs on Linux
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size)


class RtpError(TelephonyError, RuntimeError):
    """The session cannot do what was asked (not started, closed, no telephone-event agreed, on hold)."""


class IntervalHistogram:
    """Send intervals in 0.1 ms bins up to 200 ms: constant memory, percentiles for the benchmarks."""

    BIN_MS = 0.1
    BINS = 2000

    def __init__(self) -> None:
        self.counts = array("I", bytes(4 * (self.BINS + 1)))
        self.count = 0
        self.max_ms = 0.0

    def add(self, ms: float) -> None:
        self.counts[min(int(ms / self.BIN_MS), self.BINS)] += 1
        self.count += 1
        self.max_ms = max(self.max_ms, ms)

    def merge(self, other: IntervalHistogram) -> None:
        for index, count in enumerate(other.counts):
            self.counts[index] += count
        self.count += other.count
        self.max_ms = max(self.max_ms, other.max_ms)

    def percentile(self, p: float) -> float:
        """The upper edge of the bin holding the p-th percentile (ms), at most the maximum; 0 when empty."""
        rank, seen = p / 100 * self.count, 0
        for index, count in enumerate(self.counts):
            seen += count
            if count and seen >= rank:
                return min((index + 1) * self.BIN_MS, self.max_ms)
        return 0.0


@dataclass
class RtpStats:
    packets_sent: int = 0
    bytes_sent: int = 0  # payload octets, as RTCP counts them
    packets_received: int = 0
    bytes_received: int = 0
    malformed: int = 0
    srtp_rejected: int = 0  # failed SRTP/SRTCP authentication or replay checks: forged, damaged or wrong key
    wrong_payload: int = 0  # payload types that were not negotiated (comfort noise, video...)
    foreign: int = 0  # from an allowed host, but another address than the latched one
    stranger: int = 0  # RTP or RTCP from a host neither the SDP named nor media_sources lists: never latched
    late: int = 0
    duplicate: int = 0
    reordered: int = 0
    lost: int = 0  # given up by the jitter buffer (RTCP reports the RFC 3550 count, which nets out duplicates)
    concealed_samples: int = 0
    frames_dropped: int = 0  # audio_in overflowed: the consumer was too slow
    dtmf_received: int = 0
    dtmf_sent: int = 0
    rtcp_sent: int = 0
    rtcp_received: int = 0
    send_skipped: int = 0  # 20 ms slots not sent because the event loop was too late
    send_errors: int = 0  # packets the socket refused (a full buffer, an ICMP error pending)
    jitter_ms: float = 0.0
    send_intervals: IntervalHistogram = field(default_factory=IntervalHistogram)

    def counters(self) -> dict[str, int]:
        """The counting fields by name (not jitter_ms, a level, nor the histogram)."""
        return {name: value for name, value in vars(self).items() if isinstance(value, int)}


@dataclass
class MediaTotals:
    """The RTP counters of the calls that have ended, summed, and a histogram of their last jitter: added to
    the live calls' counters, what monitoring reads (counters that never go down when a call ends)."""

    calls: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    jitter: IntervalHistogram = field(default_factory=IntervalHistogram)  # ms, one value per call
    jitter_ms_sum: float = 0.0

    def add(self, stats: RtpStats) -> None:
        self.calls += 1
        for name, value in stats.counters().items():
            self.counters[name] = self.counters.get(name, 0) + value
        self.jitter.add(stats.jitter_ms)
        self.jitter_ms_sum += stats.jitter_ms


@dataclass
class _OutgoingEvent:
    code: int
    length: int  # in 20 ms packets
    done: asyncio.Future[None]
    timestamp: int = 0
    sent: int = 0


class _Receiver(asyncio.DatagramProtocol):
    def __init__(self, on_datagram: Callable[[bytes, SockAddr], None]) -> None:
        self.on_datagram = on_datagram

    def datagram_received(self, data: bytes, addr: SockAddr) -> None:
        self.on_datagram(data, addr)

    def error_received(self, exc: Exception) -> None:
        log.debug("event=rtp_socket_error error=%r", exc)  # ICMP port unreachable while the peer sets up


class RtpSession:
    """One call's media. `await RtpSession.open(...)`, put `local_port` in the SDP, `start(...)`, `await close()`.

    In: `audio_in` (async iterator of 160-sample int16 frames, ends at close), `dtmf_in` (one str per key press).
    Out: `play()`, `flush()`, `playing`, `played_samples`, `await wait_played()`, `on_played`, `await send_dtmf()`.
    Control: `set_direction()`, `update_remote()`, `media_timeout` (Event) and `on_media_timeout`, `stats`.
    """

    def __init__(
        self,
        rtp: socket.socket,
        rtcp: socket.socket,
        *,
        no_media_timeout: float | None,
        call_id: str,
        audio_queue: int,
        jitter_depth: int,
        clock: MediaClock | None = None,
        sources: MediaSources | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._clock = clock if clock is not None else MediaClock()
        self._ticking = False
        self.local_host, self.local_port = rtp.getsockname()[:2]
        self.call_id = call_id
        self.no_media_timeout = no_media_timeout
        self.media_timeout = asyncio.Event()
        self.on_media_timeout: Callable[[], None] | None = None
        self.on_played: Callable[[], None] | None = None
        self.tap: MediaTap | None = None  # sees each slot's audio out and each frame in (a call recorder)
        self.audio_in: DropOldestQueue[np.ndarray] = DropOldestQueue(audio_queue)
        self.dtmf_in: DropOldestQueue[str] = DropOldestQueue(32)
        self.codec: Codec | None = None
        self.dtmf_pt: int | None = None
        self.direction = "inactive"
        self._stats = RtpStats()
        self._jitter = JitterBuffer(jitter_depth)
        self._reception = ReceptionStats()
        self._detector = DtmfDetector()
        self._sock = rtp  # read on each slot, written directly: no transport in between
        self._timestamps = _enable_timestamps(rtp)
        self._rtcp: asyncio.DatagramTransport | None = None
        self._srtp: SrtpStreams | None = None
        self._closed = False
        self._warned: dict[str, float] = {}
        # where to send: the SDP address until the peer's media latches us to its real source
        self._remote: SockAddr | None = None
        self._sources = sources if sources is not None else MediaSources()  # strict
        self._sdp_host: str | None = None  # the last real host the SDP named (kept through a c=0.0.0.0 hold)
        self._latched: SockAddr | None = None
        self._remote_ssrc: int | None = None
        self._rtcp_latched: SockAddr | None = None
        # receive timeline
        self._last_rx = 0.0
        self._pending = np.zeros(0, np.int16)
        self._last_pcm: np.ndarray | None = None
        self._next_audio_ts = 0
        # send state (RFC 3550: random initial sequence, timestamp and SSRC)
        self._ssrc = random.getrandbits(32)
        self._seq = random.getrandbits(16)
        self._ts = random.getrandbits(32)
        self._out = bytearray()
        self._slot_audio: bytes | None = None  # the queued audio sent in this slot, for the tap
        self.played_samples = 0  # of queued audio actually sent (flushed audio not counted)
        self._silent = True
        self._played = asyncio.Event()
        self._played.set()
        self._dtmf_queue: deque[_OutgoingEvent] = deque()
        self._dtmf_now: _OutgoingEvent | None = None
        self._silence = b""
        self._last_send: float | None = None
        self._sent_since_report = False
        self._next_rtcp = 0.0

    @classmethod
    async def open(
        cls,
        local_host: str,
        port_range: tuple[int, int] = (10000, 20000),
        *,
        no_media_timeout: float | None = 30.0,
        call_id: str = "",
        audio_queue: int = 100,
        jitter_depth: int = 3,
        clock: MediaClock | None = None,
        sources: MediaSources | None = None,
    ) -> RtpSession:
        """Bind an even RTP port (and RTCP on the next one) in port_range; raises PortRangeExhausted.
        `clock`: the 20 ms send clock shared with other sessions (default: one of its own). `sources`: who may
        send the call's media (default: strict, the SDP's host only)."""
        rtp, rtcp = allocate(local_host, port_range)
        try:
            session = cls(
                rtp,
                rtcp,
                no_media_timeout=no_media_timeout,
                call_id=call_id,
                audio_queue=audio_queue,
                jitter_depth=jitter_depth,
                clock=clock,
                sources=sources,
            )
            loop = session._loop
            session._rtcp, _ = await loop.create_datagram_endpoint(lambda: _Receiver(session._on_rtcp), sock=rtcp)
        except BaseException:
            rtp.close()
            rtcp.close()
            raise
        return session

    # ---- control ---------------------------------------------------------------------------------------

    def start(
        self,
        remote_addr: tuple[str, int] | None,
        codec: Codec,
        dtmf_pt: int | None = None,
        direction: str = "sendrecv",
        srtp: SrtpKeys | None = None,
    ) -> None:
        """Begin media as negotiated (`srtp`: the agreed keys; None: plain RTP). Called again (re-INVITE), it
        switches codec, address, direction and keys; the same keys keep the SRTP streams (and their replay
        windows and rollover counters) as they are."""
        if self._closed:
            raise RtpError("the RTP session is closed")
        if srtp is None:
            self._srtp = None
        elif self._srtp is None or self._srtp.keys != srtp:
            self._srtp = SrtpStreams(srtp)
        self.codec, self.dtmf_pt = codec, dtmf_pt
        self._silence = bytes([codec.silence]) * FRAME_SAMPLES
        self.update_remote(remote_addr)
        self.set_direction(direction)
        if not self._ticking:
            self._ticking = True
            self._drain()  # what came before the answer (early media, strays) is not part of the call
            self._next_rtcp = self._loop.time() + RTCP_INTERVAL * random.uniform(0.5, 1.5)
            self._clock.add(self)
        log.info(
            "event=rtp_start call=%s local=%s:%d remote=%s codec=%s/%d dtmf_pt=%s direction=%s srtp=%s",
            self.call_id,
            self.local_host,
            self.local_port,
            remote_addr,
            codec.name,
            codec.payload_type,
            dtmf_pt,
            direction,
            self.srtp_suite or "off",
        )

    def update_remote(self, remote_addr: tuple[str, int] | None) -> None:
        """A new SDP address (re-INVITE); None, 0.0.0.0 or port 0 sends nothing. A changed one is latched anew."""
        if remote_addr is not None:
            host, port = remote_addr
            try:
                ipaddress.ip_address(host)
            except ValueError:
                raise RtpError(f"the remote media address must be an IP address, got {host!r}") from None
            if not 0 <= port <= 65535:
                raise RtpError(f"the remote media port must be 0..65535, got {port}")
            if host in ("0.0.0.0", "::") or port == 0:
                remote_addr = None
            elif not ipaddress.ip_address(host).is_unspecified:
                self._sdp_host = host
        if remote_addr != self._remote:
            self._latched = self._rtcp_latched = None
        self._remote = remote_addr

    def set_direction(self, direction: str) -> None:
        """Our direction: sendrecv, sendonly, recvonly or inactive (hold stops sending, keeps the socket)."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
        if direction in ("sendrecv", "recvonly") and not self._receiving:
            self._restart_reception()
        self.direction = direction

    @property
    def _receiving(self) -> bool:
        return self.direction in ("sendrecv", "recvonly")

    @property
    def _sending(self) -> bool:
        return self.direction in ("sendrecv", "sendonly") and self.remote is not None

    @property
    def srtp_suite(self) -> str | None:
        """The SRTP crypto suite in use, None for plain RTP."""
        return self._srtp.keys.suite if self._srtp is not None else None

    @property
    def remote(self) -> SockAddr | None:
        """Where media goes now: the latched source of the peer's media, else the SDP address."""
        return self._latched or self._remote

    @property
    def stats(self) -> RtpStats:
        """A snapshot of the counters (send_intervals is the live histogram)."""
        jitter, reception = self._jitter, self._reception
        return replace(
            self._stats,
            late=jitter.late,
            duplicate=jitter.duplicate,
            reordered=jitter.reordered,
            lost=jitter.lost,
            jitter_ms=reception.jitter_ms,
            frames_dropped=self.audio_in.dropped,
        )

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._clock.discard(self)
        self._abort_dtmf("the RTP session closed")
        self._sock.close()
        if self._rtcp:
            self._rtcp.close()
        self.audio_in.close()
        self.dtmf_in.close()
        self._played.set()
        stats = self.stats
        log.info(
            "event=rtp_close call=%s sent=%d received=%d lost=%d malformed=%d srtp_rejected=%d jitter_ms=%.1f",
            self.call_id,
            stats.packets_sent,
            stats.packets_received,
            stats.lost,
            stats.malformed,
            stats.srtp_rejected,
            stats.jitter_ms,
        )

    # ---- playback -----------------------------------------------------------------------------------------

    def play(self, pcm16: bytes | np.ndarray) -> None:
        """Queue 8 kHz 16-bit mono audio (little-endian bytes or an int16 array) after what is queued."""
        if isinstance(pcm16, np.ndarray):
            if pcm16.dtype != np.int16:
                raise ValueError(f"play() takes int16 samples, got an array of {pcm16.dtype}")
            pcm16 = pcm16.astype("<i2", copy=False).tobytes()
        elif len(pcm16) % 2:
            raise ValueError("play() takes 16-bit samples: an odd number of bytes was given")
        if pcm16 and not self._closed:  # a closed session plays nothing, so wait_played() has nothing to wait for
            self._out += pcm16
            self._played.clear()

    def flush(self) -> None:
        """Drop all queued audio at once (barge-in); the next packet is silence."""
        if self._out:
            self._out.clear()
            self._playback_done()

    @property
    def playing(self) -> bool:
        return bool(self._out)

    async def wait_played(self) -> None:
        """Until the playback queue is empty (played out, flushed, or the session closed)."""
        await self._played.wait()

    def _playback_done(self) -> None:
        self._played.set()
        self._call(self.on_played, "on_played")

    # ---- DTMF out -----------------------------------------------------------------------------------------

    async def send_dtmf(self, digit: str, duration_ms: int = 100) -> None:
        """Send one key press as RFC 4733 events (start, updates every 20 ms, three end packets)."""
        code = event_code(digit)
        if not 40 <= duration_ms <= 5000:
            raise ValueError(f"a DTMF duration must be 40..5000 ms, got {duration_ms}")
        if self.codec is None or self._closed:
            raise RtpError("send_dtmf() needs a started, open RTP session")
        if self.dtmf_pt is None:
            raise RtpError("the peer did not agree to telephone-event in SDP: DTMF cannot be sent in RTP")
        if not self._sending:
            raise RtpError(f"DTMF cannot be sent while the direction is {self.direction} or no remote address is known")
        event = _OutgoingEvent(code, max(1, round(duration_ms / 20)), self._loop.create_future())
        self._dtmf_queue.append(event)
        await event.done

    def _abort_dtmf(self, reason: str) -> None:
        events = ([self._dtmf_now] if self._dtmf_now else []) + list(self._dtmf_queue)
        self._dtmf_now = None
        self._dtmf_queue.clear()
        for event in events:
            if not event.done.done():
                event.done.set_exception(RtpError(f"DTMF not sent: {reason}"))

    # ---- sending --------------------------------------------------------------------------------------------

    def on_slot(self, skipped: int) -> None:
        """One 20 ms slot of the clock: send one packet. `skipped` slots were given up (the loop was late):
        the timestamp jumps over them, as the receiver's clock does."""
        if self._closed:  # closed earlier in this slot (by another session's callback)
            return
        if skipped:
            self._ts = (self._ts + skipped * FRAME_SAMPLES) & 0xFFFFFFFF
            self._stats.send_skipped += skipped
        self._slot_audio = None
        self._tick()
        if self.tap is not None:
            self._tap("slot", self._slot_audio, skipped)

    def _tick(self) -> None:
        now = self._loop.time()
        self._check_media_timeout(now)
        if now >= self._next_rtcp:
            self._next_rtcp = now + RTCP_INTERVAL * random.uniform(0.5, 1.5)  # spread many calls' reports
            self._send_rtcp(now)
        if not self._sending:
            if self._dtmf_now or self._dtmf_queue:
                self._abort_dtmf(f"the direction is {self.direction}")
            self._silent = True
        elif self._dtmf_now or self._dtmf_queue:
            self._send_dtmf_packet()
        else:
            self._send_audio()
        self._ts = (self._ts + FRAME_SAMPLES) & 0xFFFFFFFF

    def _send_audio(self) -> None:
        assert self.codec is not None
        if not self._out:
            self._silent = True
            self._send(self.codec.payload_type, self._ts, self._silence, False)
            return
        chunk = bytes(self._out[:FRAME_BYTES])
        del self._out[:FRAME_BYTES]
        self._slot_audio = chunk
        self.played_samples += len(chunk) // 2
        marker, self._silent = self._silent, False
        self._send(self.codec.payload_type, self._ts, self.codec.encode(chunk.ljust(FRAME_BYTES, b"\0")), marker)
        if not self._out:
            self._playback_done()

    def _send_dtmf_packet(self) -> None:
        assert self.dtmf_pt is not None
        if self._dtmf_now is None:
            self._dtmf_now = self._dtmf_queue.popleft()
            self._dtmf_now.timestamp = self._ts
        event = self._dtmf_now
        event.sent += 1
        ended = event.sent >= event.length  # the end packet goes out three times (RFC 4733 2.5.1.4)
        payload = TelephoneEvent(event.code, ended, VOLUME, min(event.sent, event.length) * FRAME_SAMPLES)
        self._send(self.dtmf_pt, event.timestamp, payload.to_bytes(), event.sent == 1)
        if event.sent == event.length + 2:
            self._dtmf_now = None
            self._silent = True
            self._stats.dtmf_sent += 1
            if not event.done.done():
                event.done.set_result(None)

    def _send(self, payload_type: int, timestamp: int, payload: bytes, marker: bool) -> None:
        packet = (
            _HEADER.pack(0x80, 0x80 | payload_type if marker else payload_type, self._seq, timestamp, self._ssrc)
            + payload
        )
        if self._srtp is not None:
            packet = self._srtp.protect(packet)
        remote = self.remote
        assert remote is not None  # only called while _sending, which needs a remote
        try:
            self._sock.sendto(packet, remote)
        except OSError as error:  # the packet is lost, the stream goes on (its sequence number is used)
            self._stats.send_errors += 1
            self._warn("send_failed", remote, str(error))
        self._seq = (self._seq + 1) & 0xFFFF
        stats = self._stats
        stats.packets_sent += 1
        stats.bytes_sent += len(payload)
        self._sent_since_report = True
        now = self._loop.time()
        if self._last_send is not None:
            stats.send_intervals.add((now - self._last_send) * 1000)
        self._last_send = now

    def _send_rtcp(self, now: float) -> None:
        remote = self.remote
        target = self._rtcp_latched or (remote and (remote[0], remote[1] + 1))
        if self._rtcp is None or target is None or target[1] > 65535:
            return
        blocks = [self._reception.report_block(self._remote_ssrc, now)] if self._remote_ssrc is not None else []
        cname = f"voiceswarm@{self.local_host}"
        if self._sent_since_report:
            last_timestamp = self._ts - FRAME_SAMPLES  # _ts is this slot's, not yet sent
            elapsed = int((now - (self._last_send or now)) * 8000)
            report = sender_report(
                self._ssrc,
                time.time(),
                last_timestamp + elapsed,
                self._stats.packets_sent,
                self._stats.bytes_sent,
                blocks,
                cname,
            )
        else:
            report = receiver_report(self._ssrc, blocks, cname)
        self._sent_since_report = False
        if self._srtp is not None:
            report = self._srtp.protect_rtcp(report)
        self._rtcp.sendto(report, target)
        self._stats.rtcp_sent += 1

    def _check_media_timeout(self, now: float) -> None:
        if (
            self.no_media_timeout
            and self._receiving
            and not self.media_timeout.is_set()
            and now - self._last_rx > self.no_media_timeout
        ):
            log.warning("event=rtp_media_timeout call=%s seconds=%.0f", self.call_id, now - self._last_rx)
            self.media_timeout.set()
            self._call(self.on_media_timeout, "on_media_timeout")

    # ---- receiving ------------------------------------------------------------------------------------------

    def after_slot(self) -> None:
        """Take in what arrived since the last slot."""
        if self._closed:  # a callback of the application closed us during this slot
            return
        sock, timestamps = self._sock, self._timestamps
        for _ in range(MAX_READS_PER_SLOT):
            try:
                data, ancillary, _, addr = sock.recvmsg(MAX_DATAGRAM, _ANCILLARY if timestamps else 0)
            except BlockingIOError:
                return
            except OSError as error:  # an ICMP error for something we sent (the peer is not up yet): read on
                log.debug("event=rtp_socket_error call=%s error=%r", self.call_id, error)
                continue
            arrival = None
            if ancillary:  # the kernel's wall-clock stamp, moved to the loop's clock
                seconds, nanoseconds = _TIMESPEC.unpack_from(ancillary[0][2])
                arrival = self._loop.time() - (time.time() - seconds - nanoseconds * 1e-9)
            self._on_rtp(data, addr, arrival)

    def _drain(self) -> None:
        for _ in range(4 * MAX_READS_PER_SLOT):
            try:
                self._sock.recvfrom(MAX_DATAGRAM)
            except BlockingIOError:
                return
            except OSError:
                continue

    def _on_rtp(self, data: bytes, addr: SockAddr, arrival: float | None = None) -> None:
        """One datagram on the RTP port; `arrival`: when the kernel received it (loop clock), if known."""
        if is_rtcp(data):  # the peer multiplexes RTCP on the RTP port (RFC 5761)
            self._on_rtcp(data, addr)
            return
        codec = self.codec
        if codec is None or self._closed:
            return
        if addr != self._latched and not self._allowed(addr, "rtp"):
            return
        if self._srtp is not None:
            try:
                data = self._srtp.unprotect(data)
            except SrtpRejected as error:
                self._srtp_rejected(addr, error)
                return
        try:
            packet = parse(data)
        except MalformedPacket as error:
            self._stats.malformed += 1
            self._warn("malformed_rtp", addr, str(error))
            return
        if packet.payload_type != codec.payload_type and packet.payload_type != self.dtmf_pt:
            self._stats.wrong_payload += 1
            self._warn("wrong_payload_type", addr, f"payload type {packet.payload_type}")
            return
        if self._latched is None:
            self._latch(addr, packet.ssrc)
        elif addr != self._latched:
            self._stats.foreign += 1
            self._warn("foreign_rtp", addr, f"latched to {self._latched}")
            return
        elif packet.ssrc != self._remote_ssrc:  # the PBX bridged another leg in: a new stream
            log.info("event=rtp_new_ssrc call=%s ssrc=%08x", self.call_id, packet.ssrc)
            self._remote_ssrc = packet.ssrc
            self._restart_reception()
        self._stats.packets_received += 1
        self._stats.bytes_received += len(packet.payload)
        now = self._loop.time()
        self._last_rx = now
        self._reception.update(
            packet.seq, packet.timestamp, now if arrival is None else arrival, packet.payload_type == codec.payload_type
        )
        if not self._receiving:
            return
        for due, missing in self._jitter.push(packet):
            if due.payload_type == codec.payload_type:
                self._deliver_audio(due, missing, codec)
            else:
                self._deliver_dtmf(due, addr)

    def _latch(self, addr: SockAddr, ssrc: int) -> None:
        self._latched, self._remote_ssrc = addr, ssrc
        self._restart_reception()
        log.info(
            "event=rtp_latched call=%s source=%s:%d sdp=%s ssrc=%08x",
            self.call_id,
            addr[0],
            addr[1],
            self._remote,
            ssrc,
        )

    def _restart_reception(self) -> None:
        self._jitter.reset()
        self._detector.reset()
        self._reception = ReceptionStats()
        self._last_pcm = None
        self._last_rx = self._loop.time()

    def _deliver_audio(self, packet: RtpPacket, missing: int, codec: Codec) -> None:
        pcm = codec.decode(packet.payload)
        if not pcm.size:
            self._stats.malformed += 1  # an audio packet without audio
            return
        if self._last_pcm is not None:
            gap = ((packet.timestamp - self._next_audio_ts + 0x80000000) & 0xFFFFFFFF) - 0x80000000
            if 0 < gap <= MAX_FILL_SAMPLES:
                # lost packets: fade the last sound out; a pause in sending (DTMF, silence suppression): silence
                self._frame(self._conceal(gap) if missing else np.zeros(gap, np.int16))
                self._stats.concealed_samples += gap if missing else 0
        self._frame(pcm)
        self._last_pcm = pcm
        self._next_audio_ts = (packet.timestamp + len(pcm)) & 0xFFFFFFFF

    def _conceal(self, samples: int) -> np.ndarray:
        assert self._last_pcm is not None
        repeated = np.resize(self._last_pcm, samples).astype(np.float32)
        fade = np.clip(1.0 - np.arange(samples, dtype=np.float32) / FADE_SAMPLES, 0.0, 1.0)
        return (repeated * fade).astype(np.int16)

    def _frame(self, pcm: np.ndarray) -> None:
        """Cut the stream into 20 ms frames whatever the sender's packet size (sipp's pcap sends 30 ms)."""
        if not self._pending.size and len(pcm) == FRAME_SAMPLES:  # 20 ms packets: the usual case
            self._put_frame(pcm)
            return
        if self._pending.size:
            pcm = np.concatenate((self._pending, pcm))
        whole = len(pcm) - len(pcm) % FRAME_SAMPLES
        for start in range(0, whole, FRAME_SAMPLES):
            self._put_frame(pcm[start : start + FRAME_SAMPLES])
        self._pending = pcm[whole:]

    def _put_frame(self, frame: np.ndarray) -> None:
        self.audio_in.put(frame)
        if self.tap is not None:
            self._tap("received", frame)

    def _deliver_dtmf(self, packet: RtpPacket, addr: SockAddr) -> None:
        try:
            digit = self._detector.feed(packet.timestamp, packet.payload)
        except MalformedPacket as error:
            self._stats.malformed += 1
            self._warn("malformed_dtmf", addr, str(error))
            return
        if digit is not None:
            self._stats.dtmf_received += 1
            log.debug(
                "event=dtmf_received call=%s digit=%s", self.call_id, digit
            )  # typed card or order numbers: DEBUG only
            self.dtmf_in.put(digit)

    def _on_rtcp(self, data: bytes, addr: SockAddr) -> None:
        if not self._allowed(addr, "rtcp"):
            return
        if self._srtp is not None:
            try:
                data = self._srtp.unprotect_rtcp(data)
            except SrtpRejected as error:
                self._srtp_rejected(addr, error)
                return
        try:
            packets = parse_compound(data)
        except MalformedPacket as error:
            self._stats.malformed += 1
            self._warn("malformed_rtcp", addr, str(error))
            return
        self._stats.rtcp_received += 1
        if self._rtcp_latched is None and self._latched and addr[0] == self._latched[0]:
            self._rtcp_latched = addr
        for packet in packets:
            if packet.packet_type == SR and packet.ssrc == self._remote_ssrc and packet.ntp_middle is not None:
                self._reception.last_sr, self._reception.last_sr_at = packet.ntp_middle, self._loop.time()

    # ---- helpers ---------------------------------------------------------------------------------------------

    def _allowed(self, addr: SockAddr, what: str) -> bool:
        """Strict RTP: whether the source may be taken at all; a stranger is counted and logged (once a minute per
        session), its packet dropped unread."""
        if self._sources.allows(addr[0], self._sdp_host):
            return True
        self._stats.stranger += 1
        self._warn(
            "stranger",
            addr,
            f"{what} from a host the SDP did not name ({self._sdp_host}) and media_sources does not list: dropped",
        )
        return False

    def _srtp_rejected(self, addr: SockAddr, error: SrtpRejected) -> None:
        self._stats.srtp_rejected += 1
        self._warn("srtp_rejected", addr, str(error))

    def _warn(self, kind: str, addr: SockAddr, detail: str) -> None:
        now = self._loop.time()
        if now - self._warned.get(kind, -WARN_EVERY) >= WARN_EVERY:
            self._warned[kind] = now
            log.warning(
                "event=rtp_%s call=%s source=%s:%d detail=%s (logged once a minute)",
                kind,
                self.call_id,
                addr[0],
                addr[1],
                detail,
            )

    def _tap(self, method: str, *args: object) -> None:
        """A failing tap is dropped (one log line), never the call's media."""
        try:
            getattr(self.tap, method)(*args)
        except Exception:
            log.exception("event=rtp_tap_failed call=%s detail=the tap is dropped, the call goes on", self.call_id)
            self.tap = None

    def _call(self, callback: Callable[[], None] | None, name: str) -> None:
        if callback is None:
            return
        try:
            callback()
        except Exception:
            log.exception("event=rtp_callback_failed call=%s callback=%s", self.call_id, name)


def _enable_timestamps(sock: socket.socket) -> bool:
    if _SO_TIMESTAMPNS is None:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True
