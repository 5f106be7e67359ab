"""The caller's voice in audio mode: Piper, espeak-ng or recordings speak a turn's text, with line noise mixed in.

Recordings are WAV files, each with its words in a text file beside it (`yes.wav` and `yes.txt`); a line of a
scenario that no recording says cannot be spoken, so its trial fails rather than being spoken by another voice.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from callcenter.errors import CallCenterError
from speech import WavError, read_wav, resample

if TYPE_CHECKING:
    from speech import Synthesizer

PHONE_RATE = 8000
SILENCE_DBFS = -40.0  # as callcenter.testbed.dialer: a 20 ms frame below this holds no speech
FRAME = 160
NAMED = ("piper", "espeak")


class VoiceError(CallCenterError):
    """A caller voice that cannot be used, or a line it cannot say; the message says which and why."""


@dataclass(frozen=True)
class VoiceSpec:
    name: str  # piper, espeak or recordings
    recordings: dict[str, Path] = field(default_factory=dict)  # the words (normalised) -> the WAV saying them

    def describe(self) -> str:
        return self.name if self.name in NAMED else f"{len(self.recordings)} recordings"


def parse_voice(values: list[str]) -> VoiceSpec:
    """`--voice piper`, `--voice espeak` or `--voice FILE.wav...` (each with FILE.txt holding its words)."""
    if len(values) == 1 and values[0] in NAMED:
        if values[0] == "espeak" and shutil.which("espeak-ng") is None:
            raise VoiceError("--voice espeak needs espeak-ng (apt-get install espeak-ng)")
        return VoiceSpec(values[0])
    recordings: dict[str, Path] = {}
    for value in values:
        path = Path(value)
        if value in NAMED or path.suffix.lower() != ".wav":
            raise VoiceError(
                f"--voice takes piper, espeak, or WAV files (each with its words in a .txt beside it), not {value!r}"
            )
        if not path.is_file():
            raise VoiceError(f"--voice {value}: no such file")
        words = path.with_suffix(".txt")
        if not words.is_file():
            raise VoiceError(f"--voice {value}: its words are missing ({words} should hold what the recording says)")
        try:
            read_wav(path)
        except WavError as error:
            raise VoiceError(f"--voice {value}: {error}") from None
        recordings[_key(words.read_text(encoding="utf-8"))] = path
    return VoiceSpec("recordings", recordings)


@dataclass(frozen=True)
class Utterance:
    audio: np.ndarray  # PCM16 at 8 kHz, as the caller sends it
    speech_end_s: float  # where the speech ends in it (the voices end with some silence; noise hides where)


class CallerVoice:
    """Speaks lines as `spec` says, noise at `noise_snr_db` below the speech (None: clean); each line once.
    `synthesizer`: Piper's, for the piper voice (the others need none)."""

    def __init__(self, spec: VoiceSpec, synthesizer: Synthesizer | None, noise_snr_db: float | None = None) -> None:
        self.spec, self.synthesizer, self.noise_snr_db = spec, synthesizer, noise_snr_db
        self._said: dict[tuple[str, str], Utterance] = {}  # (text, language) -> its audio

    def speak(self, text: str, language: str = "en") -> Utterance:
        """Blocking (synthesis); raises VoiceError for a line no recording says, or a language no voice speaks."""
        if (text, language) not in self._said:
            clean = self._clean(text, language)
            noisy = clean if self.noise_snr_db is None else with_noise(clean, self.noise_snr_db, seed=len(self._said))
            self._said[text, language] = Utterance(noisy, speech_end_s(clean))
        return self._said[text, language]

    def _clean(self, text: str, language: str) -> np.ndarray:
        # Piper's packaged voice speaks only English: another language is espeak-ng's voice for it, not
        # English sounds read off foreign spelling (which no caller makes).
        if self.spec.name == "piper" and language == "en":
            if self.synthesizer is None:
                raise VoiceError("the piper voice needs Piper's synthesizer")
            return self.synthesizer.synthesize(text)
        if self.spec.name in NAMED:
            return espeak(text, "en-us" if language == "en" else language)
        path = self.spec.recordings.get(_key(text))
        if path is None:
            raise VoiceError(f"no recording says {text!r} (give one with --voice FILE.wav and its words in FILE.txt)")
        pcm, rate = read_wav(path)
        return resample(pcm, rate, PHONE_RATE)


def espeak(text: str, voice: str) -> np.ndarray:
    """`text` spoken by espeak-ng's `voice` ("en-us", "de", ...), at 8 kHz."""
    try:
        done = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, timeout=30)
    except FileNotFoundError:
        raise VoiceError("this needs espeak-ng (apt-get install espeak-ng)") from None
    if done.returncode != 0 or not done.stdout:
        raise VoiceError(f"espeak-ng has no voice {voice!r}: {done.stderr.decode(errors='replace').strip()}")
    pcm, rate = read_wav(io.BytesIO(done.stdout))
    return resample(pcm, rate, PHONE_RATE)


def with_noise(pcm: np.ndarray, snr_db: float, seed: int = 0) -> np.ndarray:
    """White noise under the whole line, `snr_db` below the level of its speech (the frames holding speech)."""
    samples = pcm.astype(np.float64)
    frames = samples[: samples.size // FRAME * FRAME].reshape(-1, FRAME)
    power = np.mean(frames**2, axis=1) if frames.size else np.zeros(0)
    voiced = power[power > (32768 * 10 ** (SILENCE_DBFS / 20)) ** 2]
    level = float(np.mean(voiced)) if voiced.size else float(np.mean(samples**2)) if samples.size else 0.0
    white = np.random.default_rng(seed).standard_normal(samples.size)
    noisy = samples + white * np.sqrt(level / 10 ** (snr_db / 10))
    return np.clip(np.rint(noisy), -32768, 32767).astype(np.int16)


def speech_end_s(pcm: np.ndarray) -> float:
    """Seconds from the start to the end of the last 20 ms frame with speech in it (0 when none has)."""
    loud = [
        i
        for i in range(0, pcm.size, FRAME)
        if (chunk := pcm[i : i + FRAME].astype(np.float64)).size
        and np.sqrt(np.mean(chunk**2)) > 32768 * 10 ** (SILENCE_DBFS / 20)
    ]
    return min(pcm.size, loud[-1] + FRAME) / PHONE_RATE if loud else 0.0


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))
