"""Silero VAD (the v6 ONNX model that ships inside faster-whisper) run with onnxruntime, streaming.

This ONNX export has no sample-rate input and a fixed window of 64 context + 512 new samples: it only
knows 16 kHz, so phone audio is upsampled. Fed as if it were 16 kHz (twice too fast, an octave too
high) it would cost half the CPU and still score clean speech high, but in 5 dB SNR noise it scores
14% of the pauses >= 0.35 (upsampled: 0.5%), which would hold turns open (`benchmarks/speech_vad.py`).
"""

from __future__ import annotations

import hashlib
import importlib.resources
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime
import soxr

from speech.errors import SpeechError

SAMPLE_RATE = 16_000
WINDOW = 512  # new samples per model run: 32 ms
CONTEXT = 64  # samples of the previous window the model sees again
PHONE_RATE = 8_000
MODEL_SHA256 = "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2"


class VadModelError(SpeechError, RuntimeError):
    """The Silero VAD model is missing or is not the file we tuned the thresholds on."""


def default_model_path() -> Path:
    try:
        assets = importlib.resources.files("faster_whisper") / "assets"
    except ModuleNotFoundError as error:
        raise VadModelError("faster-whisper is not installed: pip install 'faster-whisper>=1.2'") from error
    return Path(str(assets / "silero_vad_v6.onnx"))


class VadModel:
    """One ONNX session for the whole process; `run` is safe to call from many threads at once."""

    def __init__(self, path: Path | str | None = None) -> None:
        path = Path(path) if path else default_model_path()
        if not path.is_file():
            raise VadModelError(f"Silero VAD model not found at {path}: pip install 'faster-whisper>=1.2'")
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != MODEL_SHA256:
            raise VadModelError(
                f"{path} has sha256 {digest}, expected {MODEL_SHA256} (Silero VAD v6 from faster-whisper 1.2): "
                "the endpointer's thresholds were measured on that file; re-measure with benchmarks/speech_vad.py"
            )
        options = onnxruntime.SessionOptions()
        # Many calls share the session from several threads: one thread per run keeps each run cheap
        # and lets the calls, not the operators, use the cores.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])

    def run(self, windows: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Speech probabilities of consecutive (n, 576) float32 windows; state is (2, 1, 1, 128) h and c."""
        probs, h, c = self._session.run(None, {"input": windows, "h": state[0], "c": state[1]})
        return probs.reshape(-1), np.stack([h, c])

    def stream(self) -> VadStream:
        return VadStream(self)


@dataclass
class VadStream:
    """One call's VAD state: takes 8 kHz PCM16 in any chunk size, gives a probability per 32 ms window."""

    model: VadModel
    _resampler: soxr.ResampleStream = field(init=False, repr=False)
    _pending: np.ndarray = field(init=False, repr=False)
    _state: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        # Quality "QQ" (cubic) streams with 0.25 ms delay; soxr's filtered qualities hold back 60-110 ms
        # of audio in a stream, which would delay every barge-in and end of turn by as much. The VAD
        # scores phone speech as well or better with it (measured: benchmarks/speech_vad.py).
        self._resampler = soxr.ResampleStream(PHONE_RATE, SAMPLE_RATE, 1, dtype="float32", quality="QQ")
        self._pending = np.zeros(CONTEXT, dtype=np.float32)
        self._state = np.zeros((2, 1, 1, 128), dtype=np.float32)

    def forget(self) -> None:
        """Clear the model's recurrent state, keeping the audio stream (resampler, context) continuous."""
        self._state = np.zeros((2, 1, 1, 128), dtype=np.float32)

    def push(self, pcm16: np.ndarray) -> np.ndarray:
        """Feed 8 kHz int16 samples; returns the probabilities of the windows they completed (often none)."""
        upsampled = self._resampler.resample_chunk(pcm16.astype(np.float32) / 32768.0)
        self._pending = np.concatenate([self._pending, upsampled])
        count = (len(self._pending) - CONTEXT) // WINDOW
        if count == 0:
            return np.zeros(0, dtype=np.float32)
        starts = np.arange(count) * WINDOW
        windows = self._pending[starts[:, None] + np.arange(CONTEXT + WINDOW)]
        probs, self._state = self.model.run(windows, self._state)
        self._pending = self._pending[count * WINDOW :]
        return probs
