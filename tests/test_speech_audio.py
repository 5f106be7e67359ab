"""speech.audio: resampling with soxr and 16-bit WAV files of any rate and channel count."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from speech.audio import WavError, read_wav, resample, write_wav


def tone(freq: float, rate: int, seconds: float = 1.0, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return np.rint(amplitude * 32767 * np.sin(2 * np.pi * freq * t)).astype(np.int16)


def peak_hz(pcm: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(pcm.astype(np.float64)))
    return float(np.fft.rfftfreq(pcm.size, 1 / rate)[spectrum.argmax()])


@pytest.mark.parametrize(("source", "target"), [(8000, 16000), (22050, 8000), (16000, 8000), (44100, 16000)])
def test_resample_keeps_pitch_length_and_level(source: int, target: int) -> None:
    out = resample(tone(1000, source), source, target)
    assert out.dtype == np.int16 and abs(out.size - target) <= 1
    assert peak_hz(out, target) == pytest.approx(1000, abs=2)
    middle = out[target // 10 : -target // 10]  # the filter's edges ramp
    assert np.abs(middle).max() == pytest.approx(0.5 * 32767, rel=0.02)


def test_resample_to_float32_for_whisper() -> None:
    out = resample(tone(440, 8000), 8000, 16000, dtype=np.float32)
    assert out.dtype == np.float32 and np.abs(out).max() == pytest.approx(0.5, rel=0.02)


def test_resample_clips_instead_of_wrapping() -> None:
    square = np.where(np.arange(8000) % 40 < 20, 32767, -32768).astype(np.int16)  # overshoots when filtered
    overshoot = resample(square, 8000, 16000, dtype=np.float32) > 1.0
    assert overshoot.any()
    assert (resample(square, 8000, 16000)[overshoot] == 32767).all()


def test_resample_empty_and_same_rate() -> None:
    assert resample(np.zeros(0, np.int16), 8000, 16000).size == 0
    pcm = tone(300, 8000)
    assert np.array_equal(resample(pcm, 8000, 8000), pcm)
    with pytest.raises(ValueError, match="dtype"):
        resample(pcm, 8000, 16000, dtype=np.float64)


def test_wav_round_trip(tmp_path: Path) -> None:
    pcm = tone(700, 11025, 0.3)
    write_wav(tmp_path / "a.wav", pcm, 11025)
    back, rate = read_wav(tmp_path / "a.wav")
    assert rate == 11025 and np.array_equal(back, pcm)


def test_stereo_is_mixed_down(tmp_path: Path) -> None:
    left, right = tone(500, 8000, 0.2, 0.4), tone(500, 8000, 0.2, 0.2)
    with wave.open(str(tmp_path / "s.wav"), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(8000)
        wav.writeframes(np.stack([left, right], axis=1).astype("<i2").tobytes())
    mono, rate = read_wav(tmp_path / "s.wav")
    assert rate == 8000 and mono.size == left.size
    assert np.abs(mono.astype(int) - (left.astype(int) + right.astype(int)) / 2).max() <= 1


def test_bad_wav_files_raise_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WavError, match="no such file"):
        read_wav(tmp_path / "missing.wav")
    (tmp_path / "text.wav").write_text("not a wav")
    with pytest.raises(WavError, match="not a PCM WAV"):
        read_wav(tmp_path / "text.wav")
    with wave.open(str(tmp_path / "u8.wav"), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(1)
        wav.setframerate(8000)
        wav.writeframes(bytes(800))
    with pytest.raises(WavError, match=r"8-bit.*16-bit"):
        read_wav(tmp_path / "u8.wav")
