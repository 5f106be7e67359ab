"""PCM helpers shared by speech: resampling (soxr) and 16-bit WAV files (stdlib `wave` + numpy)."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import BinaryIO

import numpy as np
import soxr

from speech.errors import SpeechError


class WavError(SpeechError):
    """A WAV file cannot be read; the message names the file and what is wrong with it."""


def resample(pcm: np.ndarray, from_rate: int, to_rate: int, *, dtype: type = np.int16) -> np.ndarray:
    """Resample mono PCM with soxr (high quality).

    `pcm` is int16 (full scale 32768) or float32 in [-1, 1]. The result is int16 (rounded and clipped)
    when `dtype` is np.int16, or float32 in [-1, 1] when it is np.float32, which is what Whisper takes.
    """
    if np.dtype(dtype) not in (np.int16, np.float32):
        raise ValueError(f"dtype must be np.int16 or np.float32, not {dtype!r}")
    samples = np.asarray(pcm)
    # Resample in float: int16 through soxr would clip overshoots without saying so.
    floats = (
        samples.astype(np.float32) / 32768.0 if samples.dtype == np.int16 else samples.astype(np.float32, copy=False)
    )
    out = floats if from_rate == to_rate or floats.size == 0 else soxr.resample(floats, from_rate, to_rate)
    if np.dtype(dtype) == np.float32:
        return np.ascontiguousarray(out, dtype=np.float32)
    pcm16: np.ndarray = np.clip(np.rint(out * 32768.0), -32768, 32767).astype(np.int16)
    return pcm16


def read_wav(path: str | Path | BinaryIO) -> tuple[np.ndarray, int]:
    """A 16-bit PCM WAV file (a path or an open binary file) of any rate and channel count, as
    (int16 mono samples, sample rate). Stereo is mixed down."""
    try:
        with wave.open(str(path) if isinstance(path, (str, Path)) else path, "rb") as wav:
            width, channels, rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except FileNotFoundError as error:
        raise WavError(f"{path}: no such file") from error
    except (wave.Error, EOFError, OSError) as error:
        raise WavError(f"{path}: not a PCM WAV file ({error})") from error
    if width != 2:
        raise WavError(
            f"{path}: {8 * width}-bit samples; only 16-bit PCM is supported (convert with: sox IN -b 16 OUT.wav)"
        )
    samples = np.frombuffer(frames[: len(frames) - len(frames) % (2 * channels)], dtype="<i2").reshape(-1, channels)
    if channels == 1:
        return samples[:, 0].astype(np.int16), rate
    return np.rint(samples.mean(axis=1)).astype(np.int16), rate


def write_wav(path: str | Path, pcm: np.ndarray, rate: int) -> None:
    """Write int16 mono samples as a 16-bit PCM WAV file."""
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(np.asarray(pcm, dtype="<i2").tobytes())
