"""Call recordings, fast: the recorder's placement of audio on the media clock (fed slot by slot, and by a real
RtpSession that loses a packet), a recording process killed mid-call, and directories it cannot write."""

from __future__ import annotations

import asyncio
import errno
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from callcenter.call_records import CallRecord, CallRecords
from callcenter.cli import main
from callcenter.config import VoiceConfig
from callcenter.recordings import AHEAD_SAMPLES, FRAME, LAG_SAMPLES, Recordings, WavWriter
from telephony.audiosocket import AudioSocketCall, AudioSocketServer
from telephony.codec import PCMU
from telephony.g711 import ulaw_decode, ulaw_encode
from telephony.rtp import RtpSession
from telephony.rtp_packet import RtpPacket
from tests.test_audiosocket import AsteriskClient

LOCAL = "127.0.0.1"


def stereo(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The caller's (left) and the agent's (right) channel of a recording."""
    with wave.open(str(path), "rb") as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (2, 2, 8000)
        samples = np.frombuffer(reader.readframes(reader.getnframes()), "<i2").reshape(-1, 2)
    return samples[:, 0].copy(), samples[:, 1].copy()


def frame(value: int) -> np.ndarray:
    return np.full(FRAME, value, dtype=np.int16)


def levels(channel: np.ndarray) -> list[int]:
    """One value per 20 ms slot: the slot's first sample."""
    return [int(v) for v in channel[::FRAME]]


@pytest.fixture
def recordings(tmp_path: Path):
    made: list[Recordings] = []

    def make(directory: Path | None = None, days: int = 90) -> Recordings:
        made.append(
            Recordings(
                VoiceConfig(recording="on", recording_dir=str(directory or tmp_path / "rec"), recording_days=days)
            )
        )
        return made[-1]

    yield make
    for item in made:
        item.close()


# ---- placement on the media clock ---------------------------------------------------------------------------


async def test_slots_and_frames_land_where_the_media_clock_had_them(recordings) -> None:
    recorder = recordings().start("call-1")
    assert await recorder.opened() and recorder.recording
    # slots 0-9: the caller's frame n arrives in slot n; the agent speaks in slots 2-4 and is flushed in slot 5
    # (half a frame was left in the queue); then nothing reaches us for slots 10-13 (a lost packet the jitter
    # buffer waits on), and in slot 14 the concealed frame and the four held ones arrive at once.
    for slot in range(10):
        sent = frame(1000 + slot).tobytes() if 2 <= slot <= 4 else frame(2000)[:80].tobytes() if slot == 5 else None
        recorder.slot(sent, 0)
        recorder.received(frame(slot + 1))
    for _ in range(4):
        recorder.slot(None, 0)
    recorder.slot(None, 0)
    for n in range(11, 16):
        recorder.received(frame(n))
    recorder.slot(None, 2)  # the event loop was late: two slots were never sent
    recorder.received(frame(16))
    outcome = await recorder.stop()
    assert outcome.error is None and outcome.seconds == 18 * FRAME / 8000
    caller, agent = stereo(Path(outcome.path))
    assert levels(caller) == [*range(1, 16), 16, 0, 0]  # within the lag the caller's stream stays continuous
    assert levels(agent) == [0, 0, 1002, 1003, 1004, 2000] + [0] * 12
    assert agent[5 * FRAME + 80 : 6 * FRAME].max() == 0  # the flushed rest of that slot is silent


async def test_a_stalled_event_loop_keeps_the_caller_on_the_senders_timeline(recordings) -> None:
    """A 260 ms stall: our clock skips 12 slots, and the frames that come after it (the caller's session has
    filled the sender's own gap) carry on from where the stream was, not from "now"."""
    recorder = recordings().start("call-9")
    for n in range(1, 11):
        recorder.slot(None, 0)
        recorder.received(frame(n))
    recorder.slot(None, 12)
    for n in range(11, 24):
        recorder.received(frame(n))
    recorder.slot(None, 0)
    recorder.slot(None, 0)
    caller, _ = stereo(Path((await recorder.stop()).path))
    assert levels(caller) == [*range(1, 24), 0, 0]


async def test_a_caller_silent_for_longer_than_the_lag_starts_again_at_now_and_early_frames_are_dropped(
    recordings,
) -> None:
    recorder = recordings().start("call-2")
    recorder.slot(None, 0)
    recorder.received(frame(1))
    gap = LAG_SAMPLES // FRAME + 5
    for _ in range(gap):
        recorder.slot(None, 0)
    recorder.received(frame(2))  # after a long pause (hold): in the slot it arrived in, not right after 1
    for n in range(3, 3 + 25):  # a flood far ahead of the clock: the ones beyond the margin are dropped
        recorder.received(frame(n))
    outcome = await recorder.stop()
    caller, _ = stereo(Path(outcome.path))
    assert levels(caller)[: gap + 1] == [1] + [0] * (gap - 1) + [2]
    assert recorder.dropped == 25 - AHEAD_SAMPLES // FRAME


@pytest.mark.slow
async def test_a_real_rtp_session_with_a_lost_packet_keeps_the_caller_on_its_slots(recordings) -> None:
    """A peer sends 40 packets paced at 20 ms (packet n holds the sample 100 * n), the 20th lost; the session
    plays a tone meanwhile and is flushed. The caller's frames sit one per slot, the concealed one in the lost
    packet's slot; the agent's tone starts and stops in the slots where the session sent and flushed it."""
    loop = asyncio.get_running_loop()
    session = await RtpSession.open(LOCAL, (20000, 30000), jitter_depth=3)
    peer, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=(LOCAL, 0))
    recorder = recordings().start("call-3")
    try:
        session.tap = recorder
        session.start(peer.get_extra_info("sockname")[:2], PCMU, None)
        played_at = flushed_at = 0
        for n in range(1, 41):
            if n != 20:
                peer.sendto(
                    RtpPacket(0, n, n * FRAME, 0x1234, ulaw_encode(frame(100 * n))).to_bytes(),
                    (LOCAL, session.local_port),
                )
            if n == 10:
                played_at = recorder.samples
                session.play(np.full(8000, 3000, dtype=np.int16))
            if n == 30:
                session.flush()
                flushed_at = recorder.samples
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
    finally:
        session.tap = None
        await session.close()
        peer.close()
    caller, agent = stereo(Path((await recorder.stop()).path))
    first = next(i for i in range(0, len(caller), FRAME) if caller[i]) // FRAME
    heard = levels(caller)[first : first + 40]
    expected = [int(v) for v in ulaw_decode(ulaw_encode(np.array([100 * n for n in range(1, 41)], np.int16)))]
    assert heard[:19] == expected[:19] and heard[20:] == expected[20:]
    assert 0 < heard[19] <= expected[18]  # the lost packet: the one before it, fading, in its own slot
    assert first <= 3  # the first packet landed within a few slots of the clock's start
    tone = np.flatnonzero(agent)
    assert tone[0] == played_at and tone[-1] + 1 == flushed_at, (tone[0], tone[-1], played_at, flushed_at)


@pytest.mark.slow
async def test_an_audiosocket_call_is_recorded_the_same_way(recordings) -> None:
    """Asterisk's AudioSocket carries the same Call: its slots and frames reach the recorder as RTP's do."""
    recorder = recordings().start("audiosocket-1")
    agent_audio = (1 + np.arange(8000 * 2 // 10) % 3000).astype(np.int16)  # never zero: where it lies shows
    caller_audio = -(1 + np.arange(8000 * 6 // 10) % 3000).astype(np.int16)

    tapped = asyncio.Event()

    async def on_call(call: AudioSocketCall) -> None:
        call.tap = recorder
        tapped.set()
        call.play(agent_audio)
        await call.closed.wait()

    server = AudioSocketServer(LOCAL, 0, on_call, no_media_timeout_s=None)
    await server.start()
    try:
        client = await AsteriskClient.connect(server.local_address)
        await asyncio.wait_for(tapped.wait(), 5.0)
        for start in range(0, len(caller_audio), FRAME):
            await client.send(0x10, caller_audio[start : start + FRAME].astype("<i2").tobytes())
            await asyncio.sleep(0.02)
        await client.send(0x00)  # Asterisk hangs up
        await client.close()
    finally:
        await server.stop()
    caller, agent = stereo(Path((await recorder.stop()).path))
    heard, said = np.flatnonzero(caller), np.flatnonzero(agent)
    # The recording ends with the call's last slot: the caller's last frame or two may have come in ahead of it.
    assert len(caller_audio) - 2 * FRAME <= len(heard) <= len(caller_audio)
    assert np.array_equal(caller[heard], caller_audio[: len(heard)])
    # All of it, in order (slots the loop skipped under load would show as gaps: nothing was sent in them).
    assert np.array_equal(agent[said], agent_audio)
    assert said[0] <= 2 * FRAME and heard[0] <= 3 * FRAME  # both from the call's first slots


# ---- a crash, and what cannot be written --------------------------------------------------------------------

CRASHING = """
import asyncio, os, signal, sys, time
import numpy as np
from callcenter.cli import main
from callcenter.config import VoiceConfig
from callcenter.recordings import Recordings

async def main():
    recordings = Recordings(VoiceConfig(recording="on", recording_dir=sys.argv[1]))
    recorder = recordings.start("crash")
    for slot in range(150):  # 3 s of slots at real time, then the process dies without closing anything
        recorder.slot(np.full(160, slot, np.int16).tobytes(), 0)
        recorder.received(np.full(160, -slot, np.int16))
        await asyncio.sleep(0.02)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


@pytest.mark.slow
def test_a_recording_whose_process_was_killed_mid_call_is_readable_up_to_its_last_seconds(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", CRASHING, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=Path(__file__).parent.parent,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    [path] = tmp_path.glob("*/*.wav")
    caller, agent = stereo(path)
    assert 3.0 - 1.6 <= len(agent) / 8000 <= 3.0, len(agent) / 8000
    assert levels(agent) == list(range(len(agent) // FRAME))
    assert levels(caller) == [-n for n in range(len(caller) // FRAME)]
    if shutil.which("soxi"):  # what an admin would use: sox reads it as it is
        seconds = float(subprocess.run(["soxi", "-D", str(path)], capture_output=True, text=True, check=True).stdout)
        assert seconds == pytest.approx(len(agent) / 8000)
    # Cut in the middle of a write (the header counts more than the file holds): still read, up to the cut.
    cut = tmp_path / "cut.wav"
    cut.write_bytes(path.read_bytes()[: 44 + 4 * 8000 + 1234])
    with wave.open(str(cut), "rb") as reader:
        assert len(reader.readframes(reader.getnframes())) // 4 == 8000 + 1234 // 4


async def test_a_directory_that_cannot_be_written_leaves_no_recording_one_log_line_and_the_reason(
    recordings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a regular file where the recordings' parent directory should be")
    caplog.set_level(logging.WARNING, "callcenter.recordings")
    recorder = recordings(blocker / "recordings").start("call-4")
    assert not await recorder.opened() and not recorder.recording
    for _ in range(200):
        recorder.slot(frame(1).tobytes(), 0)
        recorder.received(frame(2))
    outcome = await recorder.stop()
    assert outcome.path is None and outcome.seconds is None
    assert "cannot write" in outcome.error and "Not a directory" in outcome.error, outcome.error
    logged = [r.getMessage() for r in caplog.records if r.name == "callcenter.recordings"]
    assert len(logged) == 1 and "event=recording_failed call=call-4" in logged[0], logged


class FillingFile(io.FileIO):
    """A file on a disk that fills up after `room` bytes."""

    room = 44 + 4 * 8000 * 2  # the header and two seconds

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.tell() + len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)


async def test_a_disk_that_fills_up_mid_call_keeps_what_was_written_and_says_why(
    recordings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("callcenter.recordings.open_exclusive", lambda path: (FillingFile(path, "xb"), path))
    caplog.set_level(logging.WARNING, "callcenter.recordings")
    recorder = recordings().start("call-5")
    for _ in range(300):  # 6 s
        recorder.slot(frame(7).tobytes(), 0)
        recorder.received(frame(8))
        await asyncio.sleep(0)
    outcome = await recorder.stop()
    assert outcome.seconds == 2.0 and "stopped after 2.0 s" in outcome.error and "No space left" in outcome.error
    caller, agent = stereo(Path(outcome.path))
    assert len(agent) == 16000 and set(levels(agent)) == {7} and set(levels(caller)) == {8}
    assert len([r for r in caplog.records if r.name == "callcenter.recordings"]) == 1


async def test_a_directory_that_hangs_is_given_up_on_without_holding_the_call(
    recordings, monkeypatch: pytest.MonkeyPatch
) -> None:
    opening = WavWriter.open

    def slow_open(writer: WavWriter) -> None:  # a slow NFS mount
        time.sleep(0.3)
        opening(writer)

    monkeypatch.setattr(WavWriter, "open", slow_open)
    monkeypatch.setattr("callcenter.recordings.OPEN_TIMEOUT_S", 0.05)
    recorder = recordings().start("call-8")
    started = time.monotonic()
    assert not await recorder.opened()
    assert time.monotonic() - started < 0.25  # "announce" waited 50 ms, not for the mount
    recorder.slot(frame(1).tobytes(), 0)
    outcome = await recorder.stop()
    assert outcome.seconds == 0.0 and "did not answer within" in outcome.error, outcome


def test_the_writer_names_files_by_day_and_call_id_and_never_overwrites(tmp_path: Path) -> None:
    recordings = Recordings(VoiceConfig(recording="on", recording_dir=str(tmp_path)))
    try:
        started = time.mktime((2026, 12, 1, 9, 30, 5, 0, 0, -1))
        path = recordings.path_for("../../etc/passwd@pbx;x", started)
        assert path == tmp_path / "2026-12-01" / "093005_etc_passwd_pbx_x.wav"
        first, second = WavWriter(path, "a"), WavWriter(path, "b")
        first.open()
        second.open()
        assert first.close().path == str(path) and second.close().path == str(path.with_name(path.stem + "-1.wav"))
    finally:
        recordings.close()


# ---- retention ----------------------------------------------------------------------------------------------


def test_retention_deletes_old_recordings_and_says_so_in_their_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    recordings = Recordings(VoiceConfig(recording="on", recording_dir=str(tmp_path / "rec"), recording_days=30))
    records = CallRecords(tmp_path / "calls.db")
    try:
        now = time.time()
        old, new = recordings.path_for("old", now - 40 * 86400), recordings.path_for("new", now - 86400)
        for path, age_days in ((old, 40), (new, 1)):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"RIFF")
            os.utime(path, (now - age_days * 86400, now - age_days * 86400))
            records.save(
                CallRecord(
                    path.stem, "+1", "shop", now, now + 1, "completed", recording=str(path), recording_seconds=1.0
                )
            )
        caplog.set_level(logging.INFO, "callcenter.recordings")
        assert recordings.enforce_retention(records) == 1
        assert not old.exists() and not old.parent.exists() and new.exists()
        expired, kept = records.get(old.stem), records.get(new.stem)
        assert expired is not None and expired.recording_error == "deleted by retention after 30 days"
        assert kept is not None and kept.recording_error is None
        assert [r.getMessage() for r in caplog.records if r.name == "callcenter.recordings"] == [
            f"event=recordings_expired deleted=1 days=30 dir={tmp_path / 'rec'}"
        ]
    finally:
        records.close()
        recordings.close()


# ---- voiceswarm calls ID --play / --export ------------------------------------------------------------------


def test_calls_play_and_export_a_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recordings = Recordings(VoiceConfig(recording="on", recording_dir=str(tmp_path / "rec")))
    writer = WavWriter(recordings.path_for("call-6", time.time()), "call-6")
    writer.open()
    writer.write(np.arange(8000, dtype="<i2").tobytes(), (-np.arange(8000)).astype("<i2").tobytes())
    outcome = writer.close()
    assert outcome.path is not None
    recordings.close()
    records = CallRecords(tmp_path / "calls.db")
    now = time.time()
    records.save(
        CallRecord("call-6", "+1", "shop", now, now + 1, "completed", recording=outcome.path, recording_seconds=1.0)
    )
    records.save(
        CallRecord(
            "call-7",
            "+1",
            "shop",
            now,
            now + 1,
            "completed",
            recording_error="cannot write /x: [Errno 28] No space left on device",
        )
    )
    records.close()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VOICESWARM_CALLS_DB", str(tmp_path / "calls.db"))
    system_path = os.environ["PATH"]

    def calls(*args: str, sox: bool = False) -> tuple[int, str, str]:
        monkeypatch.setenv("PATH", system_path if sox else str(tmp_path))  # no sox's `play` or `sox` on the PATH
        status = main(["calls", *args])
        out, err = capsys.readouterr()
        return status, out, err

    status, out, _ = calls("call-6", "--play")  # no sox: where the file is, and how to listen to it
    assert status == 0 and outcome.path in out and "caller on the left" in out
    assert calls("call-6", "--export", "copy.wav")[0] == 0
    assert (tmp_path / "copy.wav").read_bytes() == Path(outcome.path).read_bytes()
    status, _, err = calls("call-6", "--export", "copy.wav")
    assert status == 1 and "exists" in err
    assert calls("call-6", "--export", "call.mp3")[0] == 1
    status, _, err = calls("call-6", "--export", "call.flac")
    assert status == 1 and "needs sox" in err
    status, _, err = calls("call-7", "--play")
    assert status == 1 and "No space left on device" in err
    assert "recording: - " in calls("call-7")[1] and f"recording: {outcome.path} (1.0 s)" in calls("call-6")[1]
    if shutil.which("sox", path=system_path):
        assert calls("call-6", "--export", "call.flac", sox=True)[0] == 0
        raw = subprocess.run(
            ["sox", str(tmp_path / "call.flac"), "-t", "raw", "-e", "signed", "-b", "16", "-"],
            capture_output=True,
            check=True,
        ).stdout
        assert raw == Path(outcome.path).read_bytes()[44:]  # lossless, 16-bit stereo
