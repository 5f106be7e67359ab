"""baresip (a real softphone) calls our endpoint: speech both ways, checked by cross-correlation and duration.

baresip plays a WAV as its microphone (module aufile) and records what it sends and hears (module
sndfile: dump-*-enc.wav, dump-*-dec.wav); it hangs up when the WAV ends.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soxr

from harness.peers import Peers, best_lag_correlation, chirp, read_wav, write_wav

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("baresip") is None, reason="apt-get install baresip-core"),
]


def espeak(text: str, path: Path) -> np.ndarray:
    """Speech from espeak-ng, resampled to 8 kHz: what a caller's phone would send."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("apt-get install espeak-ng")
    raw = path.with_suffix(".22k.wav")
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(raw), text], check=True, timeout=30)
    pcm, rate = read_wav(raw)
    return np.clip(soxr.resample(pcm.astype(np.float32), rate, 8000), -32768, 32767).astype(np.int16)


def recording(recordings: Path, kind: str) -> np.ndarray:
    found = sorted(recordings.glob(f"dump-*-{kind}.wav"))
    assert found, f"baresip wrote no *-{kind}.wav in {recordings}: {list(recordings.iterdir())}"
    pcm, rate = read_wav(found[0])
    assert rate == 8000
    return pcm


async def test_baresip_call_carries_audio_both_ways(start_endpoint, peers: Peers, tmp_path: Path) -> None:
    speech = espeak("Hello, I would like to return the blue kettle I bought last week.", tmp_path / "caller")
    silence = np.zeros(2400, np.int16)
    caller_wav = write_wav(tmp_path / "caller.wav", np.concatenate([silence, speech, silence]))
    reply = chirp(2.0, 300, 3400)  # what our side says: shorter than the caller's WAV, so all of it is heard
    heard: list[np.ndarray] = []
    calls = []

    async def on_call(call) -> None:
        calls.append(call)
        call.play(reply)
        async for frame in call.audio_in:
            heard.append(frame)

    endpoint = await start_endpoint(on_call)
    run, recordings = await peers.baresip_call(
        f"sip:agent@127.0.0.1:{endpoint.local_address[1]}", caller_wav, seconds=20
    )
    await asyncio.sleep(0.3)
    assert calls and calls[0].end_reason == "remote_hangup", run.report()
    assert calls[0].caller.startswith("caller") and calls[0].called == "agent"
    # baresip -> us
    ours = np.concatenate(heard)
    correlation, _ = best_lag_correlation(ours, speech)
    assert correlation >= 0.95, f"we heard the caller with correlation {correlation:.3f}\n{run.report()}"
    # baresip sends its WAV, then silence until it notices the end of the file: compare with what it sent.
    sent = recording(recordings, "enc")
    assert abs(len(ours) - len(sent)) / 8000 < 0.2, f"we heard {len(ours)} samples of {len(sent)} sent"
    # us -> baresip
    theirs = recording(recordings, "dec")
    correlation, lag = best_lag_correlation(theirs, reply)
    assert correlation >= 0.95, f"baresip heard us with correlation {correlation:.3f}\n{run.report()}"
    assert lag + len(reply) <= len(theirs), "baresip's recording stops before our reply ends"
    assert abs(len(theirs) - len(sent)) / 8000 < 0.3, f"baresip heard {len(theirs)} samples of {len(sent)}"
    assert calls[0].played_samples == len(reply)
