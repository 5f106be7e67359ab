"""Call recordings: one stereo WAV per call, the caller on the left and the agent on the right, 8 kHz 16-bit,
on the call's media clock.

The recorder is the call's `MediaTap`: every 20 ms slot of the media clock adds one frame to the agent's
channel, what was sent to the caller in that slot (silence when nothing was: barge-ins and flushed playback
show where they happened); the caller's frames go to the caller's channel in the order the call received
them, from the slot they arrived in on, so a lost packet the jitter buffer conceals later still lands in its
own slot. Audio older than LAG_SAMPLES can no longer change and is handed to one writer thread (shared by all
calls) twice a second: the event loop that paces the RTP only copies bytes.

Why WAV: every player and browser plays it with nothing installed, and its 44-byte header is rewritten after
each write, so a file whose process died is a valid WAV up to its last second and a half. FLAC would halve the size
but needs libsndfile (not installed here) and settles its header only when the stream is closed;
`voiceswarm calls ID --export call.flac` converts one (with sox).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import struct
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from callcenter.call_records import CallRecords
from callcenter.config import VoiceConfig

log = logging.getLogger(__name__)

RATE = 8000
FRAME = 160  # samples in a 20 ms slot
# The caller's frames follow one another as the call received them: the RTP session conceals lost packets and
# fills gaps in the sender's timeline of up to a second itself (telephony.rtp.MAX_FILL_SAMPLES), so they may land
# this far behind the clock (a jitter buffer letting held packets go at once, an event loop that stalled) and
# still be put where they belong. A caller's stream that fell further behind had a real break (hold, a new
# stream) and starts again at "now".
LAG_SAMPLES = RATE
# ... and this far ahead of it (a sender's clock a little fast); a frame further ahead is dropped.
AHEAD_SAMPLES = 1600
WRITE_EVERY_SAMPLES = RATE // 2  # twice a second: with LAG_SAMPLES, what a crash can lose (~1.5 s)
# Writes waiting for the disk (half a second of audio each) after which the recording is given up.
MAX_PENDING_WRITES = 60
OPEN_TIMEOUT_S = 2.0  # "announce" waits this long for the file to open (a hung NFS mount): then no recording
RETENTION_EVERY_S = 86400.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class RecordingOutcome:
    """What the call record says about the recording."""

    path: str | None = None  # absolute
    seconds: float | None = None
    error: str | None = None  # why there is none, or why it stops short of the call's end


OFF = RecordingOutcome(error="recording is off (voice.recording)")


class WavWriter:
    """One recording's file, used by the writer thread only. After each write the RIFF sizes are rewritten, so
    the file on disk is always a valid WAV of what it holds so far. A failure stops the file where it is: what
    was written stays readable, and the error is kept for the call record and logged once."""

    def __init__(self, path: Path, call_id: str) -> None:
        self.path, self.call_id = path, call_id
        self.samples = 0  # stereo frames written
        self.error: str | None = None
        self.opened = False
        self._file: BinaryIO | None = None

    def open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file, self.path = open_exclusive(self.path)
            self.opened = True
            self._file.write(wav_header(0))  # an empty recording is a valid file
            self._file.flush()
        except OSError as error:
            self._fail(f"cannot write {self.path}: {error}")

    def write(self, caller: bytes, agent: bytes) -> None:
        file = self._file
        if file is None:
            return
        frames = len(agent) // 2
        stereo = np.zeros((frames, 2), dtype="<i2")
        left = np.frombuffer(caller, dtype="<i2")[:frames]
        stereo[: left.size, 0] = left
        stereo[:, 1] = np.frombuffer(agent, dtype="<i2")
        try:
            file.write(stereo.tobytes())
            file.flush()  # the data first, then the sizes that count it
            file.seek(0)
            file.write(wav_header(4 * (self.samples + frames)))
            file.seek(0, 2)
            file.flush()  # in the kernel: a crash of this process loses nothing written
            self.samples += frames
        except OSError as error:
            self._fail(f"stopped after {self.samples / RATE:.1f} s: cannot write {self.path}: {error}")

    def give_up(self, reason: str) -> None:
        if self.error is None:
            self._fail(reason)

    def close(self) -> RecordingOutcome:
        self._close_file()
        if not self.opened:
            return RecordingOutcome(error=self.error)
        return RecordingOutcome(str(self.path), round(self.samples / RATE, 2), self.error)

    def _fail(self, reason: str) -> None:
        self.error = reason
        log.warning("event=recording_failed call=%s detail=%s (the call goes on without it)", self.call_id, reason)
        self._close_file()

    def _close_file(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            # A full disk refusing what was still buffered: the header already counts only what was written.
            with contextlib.suppress(OSError):
                file.close()


def wav_header(data_bytes: int) -> bytes:
    """The 44-byte RIFF header of 8 kHz 16-bit stereo PCM holding `data_bytes` of samples."""
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + data_bytes,
        b"WAVE",
        b"fmt ",
        16,
        1,
        2,
        RATE,
        4 * RATE,
        4,
        16,
        b"data",
        data_bytes,
    )


def open_exclusive(path: Path) -> tuple[BinaryIO, Path]:
    """A new file, never an existing one (two calls with one Call-ID keep both recordings)."""
    for attempt in range(100):
        candidate = path if attempt == 0 else path.with_name(f"{path.stem}-{attempt}{path.suffix}")
        try:
            return open(candidate, "xb"), candidate  # closed by WavWriter
        except FileExistsError:
            continue
    raise FileExistsError(f"{path} and 99 others like it exist")


class CallRecorder:
    """The MediaTap of one call (telephony.call.MediaTap): runs on the event loop, only copies bytes."""

    def __init__(self, writer: WavWriter, executor: ThreadPoolExecutor, opening: Future[None]) -> None:
        self._writer, self._executor, self._opening = writer, executor, opening
        self._clock = 0  # samples of the media clock so far
        self._written = 0  # samples handed to the writer thread
        self._agent = bytearray()  # samples from _written on, one frame a slot
        self._caller = bytearray()  # samples from _written on, where the caller's frames were put
        self._caller_end: int | None = None  # after the caller's last frame; None before the first
        self._pending: deque[Future[None]] = deque()
        self._stopped = False
        self.dropped = 0  # caller frames too far ahead of the clock
        self.started_at: float | None = None  # time.time() of the first slot: the recording's first sample

    async def opened(self) -> bool:
        """Whether the file is open and being written, once the writer has tried (at most OPEN_TIMEOUT_S)."""
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._opening)), OPEN_TIMEOUT_S)
        except TimeoutError:
            self._stopped = True
            self._executor.submit(
                self._writer.give_up, f"{self._writer.path.parent} did not answer within {OPEN_TIMEOUT_S:.0f} s"
            )
            return False
        return self.recording

    @property
    def recording(self) -> bool:
        """The file is open and being written (read on the event loop: the writer thread sets what it reads)."""
        return self._writer.opened and self._writer.error is None and not self._stopped

    @property
    def samples(self) -> int:
        """Samples of the media clock so far: where the next slot goes in the file."""
        return self._clock

    def slot(self, sent: bytes | None, skipped: int) -> None:
        if self._stopped or self._writer.error is not None:  # a failed file takes nothing more
            return
        if self.started_at is None:
            self.started_at = time.time() - FRAME * skipped / RATE
        if skipped:
            self._agent += bytes(2 * FRAME * skipped)
        if sent:
            self._agent += sent
            if len(sent) < 2 * FRAME:  # the end of the queued audio: the rest of the slot was silence
                self._agent += bytes(2 * FRAME - len(sent))
        else:
            self._agent += bytes(2 * FRAME)
        self._clock += FRAME * (skipped + 1)
        settled = self._clock - FRAME - LAG_SAMPLES  # no caller frame can land before this any more
        if settled - self._written >= WRITE_EVERY_SAMPLES:
            self._hand_over(settled)

    def received(self, frame: np.ndarray) -> None:
        if self._stopped or self._writer.error is not None:
            return
        now = max(0, self._clock - FRAME)  # the slot that went out last
        at = self._caller_end
        if at is None or at < now - LAG_SAMPLES:
            at = now
        if at + frame.size > self._clock + AHEAD_SAMPLES:
            self.dropped += 1
            return
        start = 2 * (at - self._written)
        if len(self._caller) < start:
            self._caller += bytes(start - len(self._caller))
        self._caller[start : start + 2 * frame.size] = frame.astype("<i2", copy=False).tobytes()
        self._caller_end = at + frame.size

    def finish(self, then: Callable[[RecordingOutcome], None]) -> None:
        """The call is over: write the rest and close the file; then `then(outcome)`, on the writer thread."""
        if not self._stopped:
            self._stopped = True
            self._hand_over(self._clock)
        self._executor.submit(self._close, then)

    async def stop(self) -> RecordingOutcome:
        """finish(), awaited."""
        done: Future[RecordingOutcome] = Future()
        self.finish(done.set_result)
        return await asyncio.wrap_future(done)

    def _close(self, then: Callable[[RecordingOutcome], None]) -> None:
        outcome = self._writer.close()
        try:
            then(outcome)
        except Exception:
            log.exception("event=recording_outcome_lost call=%s", self._writer.call_id)

    def _hand_over(self, upto: int) -> None:
        size = 2 * (upto - self._written)
        agent, caller = bytes(self._agent[:size]), bytes(self._caller[:size])
        del self._agent[:size], self._caller[:size]
        self._written = upto
        while self._pending and self._pending[0].done():
            self._pending.popleft()
        if len(self._pending) >= MAX_PENDING_WRITES:
            self._stopped = True
            self._executor.submit(
                self._writer.give_up, f"stopped after about {upto / RATE:.0f} s: the disk did not keep up"
            )
            return
        self._pending.append(self._executor.submit(self._writer.write, caller, agent))


class Recordings:
    """This node's recordings: where they go, the writer thread, and retention."""

    def __init__(self, voice: VoiceConfig) -> None:
        self.announce = voice.recording == "announce"
        self.notice = voice.recording_notice
        self.directory = Path(voice.recording_dir).absolute()
        self.days = voice.recording_days
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="recordings")

    def start(self, call_id: str, started: float | None = None) -> CallRecorder:
        """A recorder for the call, taking audio at once; its file opens on the writer thread (`opened()`)."""
        writer = WavWriter(self.path_for(call_id, started or time.time()), call_id)
        return CallRecorder(writer, self._executor, self._executor.submit(writer.open))

    def path_for(self, call_id: str, started: float) -> Path:
        """recording_dir/YYYY-MM-DD/HHMMSS_<call id>.wav, the Call-ID cut to what is safe in a file name."""
        day, clock = time.strftime("%Y-%m-%d %H%M%S", time.localtime(started)).split()
        safe = _UNSAFE.sub("_", call_id)[:80].strip("._") or "call"
        return self.directory / day / f"{clock}_{safe}.wav"

    def expire(self, now: float | None = None) -> list[str]:
        """Delete the recordings older than `days` (by the time they were last written); their paths."""
        if not self.days or not self.directory.is_dir():
            return []
        cutoff = (now or time.time()) - self.days * 86400
        deleted: list[str] = []
        for path in sorted(self.directory.glob("*/*.wav")):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    deleted.append(str(path))
            except OSError as error:
                log.warning("event=recording_not_expired path=%s error=%s", path, error)
        for day in self.directory.iterdir():
            if day.is_dir() and not any(day.iterdir()):
                day.rmdir()
        return deleted

    def enforce_retention(self, records: CallRecords, now: float | None = None) -> int:
        """Expire old recordings and say so in their call records (blocking: run it in a thread)."""
        deleted = self.expire(now)
        if deleted:
            records.recordings_deleted(deleted, f"deleted by retention after {self.days} days")
        log.info("event=recordings_expired deleted=%d days=%d dir=%s", len(deleted), self.days, self.directory)
        return len(deleted)

    def close(self) -> None:
        """Wait for the writes under way (blocking)."""
        self._executor.shutdown(wait=True)
