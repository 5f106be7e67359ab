"""Whisper's encoder on less than its 30 s window, for short utterances.

Whisper pads every utterance to 30 s and its encoder attends over the whole window, so tiny.en spent
~0.35 s of a core encoding a 2 s "yes, please", nearly all of it silence. CTranslate2's encoder takes a
shorter window (whisper.cpp's `audio_ctx` is the same idea): 10 s took 0.04 s. The model was trained on
30 s windows only, and too short a window loses words (107 Piper sentences through the phone, tiny.en:
the utterance and 1 s, 31% word errors against 6.7%; 10 s, 8.7%; 15 s, 7.0%; 20 s, 6.7%; espeak-ng's
26.1% at 30 s was 28.3%, 26.2% and 25.3%). So the window is at least `window_s` (20 s for tiny.en) and
always 2 s longer than the utterance. On 100 sentences never tuned on, 20 s against 30 s: Piper 6.5% /
7.4%, espeak-ng 30.3% / 32.0%; a 3 s turn is heard in 0.19 s instead of 0.42 s (p50, one thread).
Whisper base held its word errors at 20 s on the same sets, but lost the ends of quiet callers' sentences
(speech at -18 to -34 dB: 1-3 of 12 cut short, none at 30 s), so it keeps the full window by default.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from faster_whisper import WhisperModel

FRAMES_PER_S = 100  # Whisper's log-mel frames
FULL_WINDOW_S = 30.0  # Whisper's own
MARGIN_S = 2.0  # of silence after the utterance: the end of the speech must be in the window


def window_frames(duration_s: float, window_s: float | None) -> int | None:
    """The encoder's window for an utterance of `duration_s`, in frames; None: Whisper's full 30 s."""
    if window_s is None:
        return None
    frames = math.ceil(max(window_s, duration_s + MARGIN_S) * FRAMES_PER_S)
    return None if frames >= FULL_WINDOW_S * FRAMES_PER_S else frames


class WindowedWhisper(WhisperModel):  # type: ignore[misc]  # faster-whisper has no type hints
    """A WhisperModel whose encoder sees only the first frames of its padded window inside `window()`.

    The window is per thread: calls share one model across the transcriber's pool, and the language
    detector (speech.language) keeps the full window outside `window()`.
    """

    _local = threading.local()

    @contextmanager
    def window(self, duration_s: float, window_s: float | None) -> Iterator[None]:
        """Within this block, this thread's decodes of an utterance of `duration_s` see `window_frames`."""
        self._local.frames = window_frames(duration_s, window_s)
        try:
            yield
        finally:
            self._local.frames = None

    def encode(self, features: np.ndarray) -> Any:
        frames = getattr(self._local, "frames", None)
        if frames is not None and features.shape[-1] > frames:
            features = features[..., :frames]
        return super().encode(features)
