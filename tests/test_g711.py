"""G.711 tables against Python 3.11's audioop, byte for byte, over every 16-bit sample."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from telephony.g711 import alaw_decode, alaw_encode, ulaw_decode, ulaw_encode

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    audioop = pytest.importorskip("audioop") if sys.version_info < (3, 13) else None

ALL = np.arange(-32768, 32768, dtype="<i2").tobytes()
CODES = bytes(range(256))


@pytest.mark.skipif(audioop is None, reason="audioop is gone in Python 3.13")
@pytest.mark.parametrize(
    "ours, theirs, data",
    [
        (ulaw_encode, "lin2ulaw", ALL),
        (alaw_encode, "lin2alaw", ALL),
        (lambda d: ulaw_decode(d).tobytes(), "ulaw2lin", CODES),
        (lambda d: alaw_decode(d).tobytes(), "alaw2lin", CODES),
    ],
)
def test_matches_audioop_for_every_input(ours, theirs: str, data: bytes) -> None:
    assert audioop is not None  # the test is skipped without it
    assert ours(data) == getattr(audioop, theirs)(data, 2)


@pytest.mark.parametrize("encode, decode", [(ulaw_encode, ulaw_decode), (alaw_encode, alaw_decode)])
def test_round_trip_error_is_small_relative_to_the_signal(encode, decode):
    t = np.arange(8000) / 8000
    tone = (10000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    back = decode(encode(tone)).astype(np.float64)
    snr = 10 * np.log10(np.sum(tone.astype(np.float64) ** 2) / np.sum((back - tone) ** 2))
    assert snr > 30  # G.711 gives about 38 dB on a loud tone
