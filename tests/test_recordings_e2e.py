"""Recorded calls, end to end: a real SIP caller (the TestCaller, real RTP) calls a VoiceServer that records.

The caller keeps its own account of the call: a MediaTap on its side notes every 20 ms slot it sent and every
frame it received, with the time. The server's recording must hold the caller's audio on its left channel and
what the caller heard on its right, each where it happened (normalised cross-correlation, its peak at most
100 ms from where the clocks put it), and the call record its path and length.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import wave
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from callcenter.call_records import CallRecord, CallRecords
from callcenter.config import Config, LLMConfig, SipConfig, VoiceConfig
from callcenter.recordings import CallRecorder, Recordings
from callcenter.server import VoiceServer
from callcenter.testbed.dialer import TestCaller
from callcenter.voice import SpeechModels

pytestmark = [pytest.mark.timeout(120), pytest.mark.peers, pytest.mark.models, pytest.mark.slow]

RATE = 8000
CALLER = "+442079460321"
NOTICE = "This call is recorded for quality and training."
LINE = "I'd like to buy a new phone charger, please."


@pytest.fixture
async def serve(tmp_path: Path, speech: SpeechModels) -> AsyncIterator[Callable[..., object]]:
    async with contextlib.AsyncExitStack() as servers:

        async def start(**voice: Any) -> VoiceServer:  # VoiceConfig's fields
            config = Config(
                llm=LLMConfig(provider="offline"),
                database=str(tmp_path / "shop.db"),
                sip=SipConfig(listen="127.0.0.1:0"),
                voice=VoiceConfig(
                    whisper_model="tiny.en",
                    calls_database=str(tmp_path / "calls.db"),
                    metrics_listen="",
                    shutdown_deadline_s=2.0,
                    recording_notice=NOTICE,
                    **voice,
                ),
            )
            return await servers.enter_async_context(VoiceServer(config, speech=speech))

        yield start


class CallerSide:
    """The caller's MediaTap: what it sent in each slot and what it received, with the wall-clock time of each."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.slot_times: list[float] = []  # time.time() - n * 20 ms, for slot n
        self.frames: list[np.ndarray] = []
        self.frame_times: list[float] = []  # likewise for received frame n

    def slot(self, sent: bytes | None, skipped: int) -> None:
        self.sent += [bytes(320)] * skipped + [(sent or b"").ljust(320, b"\0")]
        self.slot_times.append(time.time() - (len(self.sent) - 1) * 0.02)

    def received(self, frame: np.ndarray) -> None:
        self.frame_times.append(time.time() - len(self.frames) * 0.02)
        self.frames.append(frame.copy())

    def sent_audio(self) -> tuple[np.ndarray, float]:
        """What was sent, and when it started (the median over the slots: a late callback moves none of it)."""
        return np.frombuffer(b"".join(self.sent), "<i2"), float(np.median(self.slot_times))

    def heard_audio(self) -> tuple[np.ndarray, float]:
        return np.concatenate(self.frames), float(np.median(self.frame_times))


def on_timeline(audio: np.ndarray, starts_at: float, origin: float, length: int) -> np.ndarray:
    """`audio` that began at wall time `starts_at`, placed on a timeline that begins at `origin`."""
    line = np.zeros(length, np.float64)
    offset = round((starts_at - origin) * RATE)
    src = audio[max(0, -offset) :].astype(np.float64)
    dst = max(0, offset)
    n = max(0, min(len(src), length - dst))
    line[dst : dst + n] = src[:n]
    return line


def correlation_peak(recorded: np.ndarray, reference: np.ndarray, max_lag: int) -> tuple[float, int]:
    """The normalised cross-correlation's peak within +-max_lag samples, and its lag (positive: the
    recording is later than the reference)."""
    a, b = recorded.astype(np.float64), reference.astype(np.float64)
    size = 1 << int(np.ceil(np.log2(len(a) + len(b))))
    full = np.fft.irfft(np.fft.rfft(a, size) * np.conj(np.fft.rfft(b, size)), size)
    lags = np.concatenate([np.arange(0, max_lag + 1), np.arange(-max_lag, 0)])
    scores = full[lags % size] / (np.linalg.norm(a) * np.linalg.norm(b))
    best = int(np.argmax(scores))
    return float(scores[best]), int(lags[best])


def read_stereo(path: str) -> tuple[np.ndarray, np.ndarray]:
    with wave.open(path, "rb") as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (2, 2, RATE)
        samples = np.frombuffer(reader.readframes(reader.getnframes()), "<i2").reshape(-1, 2)
    return samples[:, 0], samples[:, 1]


def loud(channel: np.ndarray, start_s: float, end_s: float) -> float:
    """The loudest 20 ms frame between two times of the recording, in dBFS."""
    part = channel[int(start_s * RATE) : int(end_s * RATE)].astype(np.float64)
    frames = part[: len(part) // 160 * 160].reshape(-1, 160)
    rms = np.sqrt(np.mean(frames**2, axis=1)).max() if len(frames) else 0.0
    return 20 * np.log10(max(rms, 1e-9) / 32768)


async def record_of(server: VoiceServer, timeout_s: float = 20.0) -> CallRecord:
    """The record of the call just made: not the expired one seeded before the server started."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if records := [r for r in server.records.recent(5) if r.call_id != "old-call"]:
            return records[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no call record within {timeout_s} s")


async def test_a_recorded_call_holds_the_caller_left_and_what_they_heard_right(serve, speech, tmp_path: Path) -> None:
    # A recording from 100 days ago, past the 90 days kept: `serve` deletes it as it starts, and says so.
    old = Recordings(VoiceConfig(recording="on", recording_dir=str(tmp_path / "recordings")))
    expired = old.path_for("old-call", time.time() - 100 * 86400)
    old.close()
    expired.parent.mkdir(parents=True)
    expired.write_bytes(b"RIFF")
    os.utime(expired, (time.time() - 100 * 86400,) * 2)
    records = CallRecords(tmp_path / "calls.db")
    records.save(
        CallRecord(
            "old-call",
            CALLER,
            "shop",
            time.time() - 100 * 86400,
            time.time() - 100 * 86400 + 60,
            "completed",
            recording=str(expired),
            recording_seconds=60.0,
        )
    )
    records.close()
    server = await serve(recording="announce", recording_dir=str(tmp_path / "recordings"))
    recorders: list[CallRecorder] = []  # the server's recorder of the call, to read where its recording starts
    start = server.recordings.start

    def start_and_keep(*args: Any) -> CallRecorder:
        recorders.append(start(*args))
        return recorders[-1]

    server.recordings.start = start_and_keep
    assert (
        not expired.exists() and server.records.get("old-call").recording_error == "deleted by retention after 90 days"
    )
    host, port = server.address
    caller, side = TestCaller(speech, caller_id=CALLER), CallerSide()
    caller.prepare(LINE)
    async with caller.connected(f"sip:shop@{host}:{port}") as call:
        call.tap = side
        assert await caller.agent_speaking()
        await asyncio.sleep(4.5)  # the notice has been heard; the greeting is being said
        await caller.say(LINE)  # over the agent: a barge-in
        await asyncio.sleep(0.3)  # its last packets reach the server before the caller hangs up
    record = await record_of(server)
    assert record.recording is not None and record.recording_error is None, record
    assert Path(record.recording).is_relative_to(tmp_path / "recordings")
    left, right = read_stereo(record.recording)
    assert record.ended_at is not None and record.recording_seconds is not None
    call_seconds = record.ended_at - record.started_at
    assert abs(record.recording_seconds - call_seconds) <= 0.5, (record.recording_seconds, call_seconds)
    assert record.recording_seconds == pytest.approx(len(right) / RATE, abs=0.01)

    # Both accounts on one wall clock: the recording's from its first slot.
    origin = recorders[0].started_at
    assert origin is not None and 0 <= origin - record.started_at < 0.5
    sent = on_timeline(*side.sent_audio(), origin, len(left))
    heard = on_timeline(*side.heard_audio(), origin, len(right))
    left_score, left_lag = correlation_peak(left, sent, max_lag=RATE // 2)
    right_score, right_lag = correlation_peak(right, heard, max_lag=RATE // 2)
    assert left_score > 0.9 and abs(left_lag) <= 800, (left_score, left_lag)
    assert right_score > 0.9 and abs(right_lag) <= 800, (right_score, right_lag)
    # The other way round, nothing lines up: each channel holds one side only.
    assert correlation_peak(left, heard, RATE // 2)[0] < 0.3 and correlation_peak(right, sent, RATE // 2)[0] < 0.3

    # The barge-in as it happened: the agent was talking when the caller started, and silent on the recording
    # from shortly after until the caller stopped.
    started, ended = caller.exchange.spoken[-1]
    wall = time.time() - time.monotonic()
    barge_in, barge_end = started + wall - origin, ended + wall - origin
    assert loud(right, barge_in - 1.0, barge_in) > -35.0
    assert loud(left, barge_in, barge_end) > -30.0
    assert loud(right, barge_in + 1.0, barge_end) < -60.0

    # "announce": the notice came first (the record's transcript drops the greeting the caller cut short, as
    # with any interrupted sentence: the recording has it).
    first = next(text for who, text in caller.exchange.lines if who == "agent")
    assert "record" in first.lower(), caller.exchange.lines


async def test_a_directory_that_cannot_be_written_costs_the_call_nothing_and_the_record_says_why(
    serve, speech, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the recordings' parent is a regular file: every write fails with ENOTDIR")
    caplog.set_level(logging.INFO)
    server = await serve(recording="announce", recording_dir=str(blocker / "recordings"))
    host, port = server.address
    caller = TestCaller(speech, caller_id=CALLER, transcribe=False)  # what it heard is read from the record
    caller.prepare(LINE)
    async with caller.connected(f"sip:shop@{host}:{port}"):
        await caller.agent_turn()
        await caller.say(LINE)
        await caller.agent_turn()
    record = await record_of(server)
    # Served as ever: greeted without the notice (there is no recording to announce), heard, answered.
    agent = [line["text"] for line in record.transcript if line["who"] == "agent"]
    assert agent[0] == server.config.voice.greeting and any("charger" in text for text in agent[1:]), agent
    assert caller.exchange.first_sound(caller.exchange.spoken[-1][1]) is not None  # the answer reached the caller
    assert record.disposition == "completed" and len(record.turns) == 1
    assert record.recording is None and record.recording_seconds is None
    error = record.recording_error or ""
    assert "cannot write" in error and "Not a directory" in error, record
    failures = [
        r.getMessage() for r in caplog.records if r.name == "callcenter.recordings" and r.levelno >= logging.WARNING
    ]
    assert len(failures) == 1, failures
