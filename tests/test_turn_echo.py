"""The echo canceller: the agent's voice back on the line at -10 to -25 dB, 20-250 ms late, through mu-law,
is gone before the VAD; the caller's voice over it stays; the VAD then hears no speech in the echo alone."""

from __future__ import annotations

import numpy as np
import pytest

from speech.echo import EchoCanceller
from speech.endpointer import Endpointer, SpeechStarted
from telephony.g711 import ulaw_decode, ulaw_encode
from tests.speech_fixtures import espeak

AGENT = "Our returns policy is simple, and it covers everything you bought from us in the last thirty days."
CALLER = "Sorry to interrupt, I only want to return my headphones."


def line_echo(sent: np.ndarray, delay_ms: int, db: float, extra: np.ndarray | None = None, at: int = 0) -> np.ndarray:
    heard = np.zeros(sent.size + delay_ms * 8)
    heard[delay_ms * 8 :] = sent * 10 ** (db / 20)
    if extra is not None:
        heard[at : at + extra.size] += extra
    return ulaw_decode(ulaw_encode(np.clip(heard, -32768, 32767).astype(np.int16)))[: sent.size]


def cancelled(mic: np.ndarray, sent: np.ndarray) -> np.ndarray:
    canceller = EchoCanceller()
    return np.concatenate(
        [canceller.process(mic[i : i + 160], sent[i : i + 160]) for i in range(0, mic.size - 159, 160)]
    )


def db(x: np.ndarray) -> float:
    return 10 * np.log10(np.mean(x.astype(np.float64) ** 2) + 1e-9)


@pytest.mark.parametrize("delay_ms, gain_db", [(20, -10), (120, -15), (250, -25), (250, -10)])
def test_echo_alone_is_taken_out_and_never_starts_speech(model, delay_ms, gain_db) -> None:
    sent = espeak(AGENT)
    mic = line_echo(sent, delay_ms, gain_db)
    out = cancelled(mic, sent)
    settled = slice(4000, out.size)  # the first half second finds the echo
    assert db(out[settled]) < db(mic[settled]) - 20
    endpointer = Endpointer(model)
    assert not any(
        isinstance(e, SpeechStarted) for i in range(0, out.size, 160) for e in endpointer.feed(out[i : i + 160])
    )


def test_the_caller_talking_over_the_echo_is_kept(model) -> None:
    sent, caller = espeak(AGENT), espeak(CALLER)
    mic = line_echo(sent, 120, -15, caller, at=16000)
    out = cancelled(mic, sent)
    voice = slice(16000, 16000 + caller.size)
    assert abs(db(out[voice]) - db(caller[: out[voice].size])) < 1.0
    endpointer = Endpointer(model)
    starts = [
        i for i in range(0, out.size, 160) for e in endpointer.feed(out[i : i + 160]) if isinstance(e, SpeechStarted)
    ]
    assert len(starts) == 1 and 16000 <= starts[0] <= 16000 + 0.4 * 8000


def test_a_voice_like_the_agents_is_not_fitted_as_its_echo() -> None:
    # The caller's voice over a loud copy of the agent's words (the same synthetic voice, in one CI run)
    # correlates with what we sent; then the caller is silent while the agent goes on.
    sent, caller = espeak(AGENT), espeak(CALLER)
    first = 8000
    mic = np.zeros(sent.size, dtype=np.int16)
    over = line_echo(sent[:first], 80, -3).astype(np.float64) + caller[:first]
    mic[:first] = np.clip(over, -32768, 32767).astype(np.int16)
    canceller = EchoCanceller()
    out = np.concatenate([canceller.process(mic[i : i + 160], sent[i : i + 160]) for i in range(0, first, 160)])
    assert canceller._filter is None  # it correlated, but subtracting it would have cancelled little
    rest = range(first, sent.size - 159, 160)
    out = np.concatenate([canceller.process(mic[i : i + 160], sent[i : i + 160]) for i in rest])
    # Fitted, it played the agent's voice into the silent line (about 1,600 rms), and the VAD heard the caller.
    assert not out[800:].any()
