"""Which language a caller speaks, from Whisper's own language detector (the multilingual base model).

The call's ears (tiny.en by default) hear only English: a German caller comes out as English words that
were never said ("Hello, you can welcome."), often with a fair confidence, and the agents then answer those.
So the first unclear words of a call are given to Whisper base's detector; when they are confidently in a
language the agents do not serve, the caller is handed to a person (a colleague may speak it).

The limits were set on tests/data/languages_tuning.jsonl (espeak-ng's voices through the phone path) and
checked on languages_blind.jsonl, written by someone else (benchmarks/language_check.py): English from
Piper and espeak-ng en-us never scored under 0.5 for English, so a caller is judged foreign only when
English scores under 0.1 and another language at least 0.5.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from speech.models import whisper_model_dir
from speech.transcriber import Transcriber, whisper_audio

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Language:
    """What the detector heard: its most likely language and the probability of the served ones."""

    code: str  # ISO 639-1, as Whisper names languages
    probability: float
    served_probability: float  # the sum over the languages the agents serve

    @property
    def text(self) -> str:
        return f"{self.code} {self.probability:.2f}"


class LanguageCheck:
    """Judges whether a caller speaks a language outside `served`; one per process, shared by every call.

    `model` is "base" (the packaged multilingual model) or a multilingual CTranslate2 model directory
    (tiny.en has no language detector); `ears`, the calls' own transcriber, is used instead when it is
    multilingual, so base is not loaded twice. Utterances shorter than `min_speech_s` are not judged: a
    "Hallo." is also an English "Hello.".
    """

    def __init__(
        self,
        served: tuple[str, ...] = ("en",),
        *,
        model: str = "base",
        ears: Transcriber | None = None,
        min_speech_s: float = 1.5,
        max_served_probability: float = 0.1,
        min_probability: float = 0.5,
        cpu_threads: int = 2,
    ) -> None:
        if not served:
            raise ValueError("a language check needs at least one served language")
        self.served = frozenset(served)
        self.min_speech_s = min_speech_s
        self.max_served_probability, self.min_probability = max_served_probability, min_probability
        if ears is not None and ears.whisper.model.is_multilingual:
            self._model: Any = ears.whisper
        else:
            directory: Path = whisper_model_dir(model)
            self._model = Transcriber.shared_model(directory, cpu_threads, 1)
            if not self._model.model.is_multilingual:
                raise ValueError(f"the Whisper model in {directory} is English-only: it cannot tell languages apart")
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="language")

    async def foreign(self, pcm16_8k: np.ndarray, *, call_id: str = "-") -> Language | None:
        """The language the caller speaks when it is not one served and the detector is sure; else None."""
        if pcm16_8k.size / 8000 < self.min_speech_s:
            return None
        heard = await asyncio.get_running_loop().run_in_executor(self._pool, self.detect, pcm16_8k)
        foreign = self.is_foreign(heard)
        log.info(
            "event=language_checked call=%s language=%s probability=%.2f served=%.2f foreign=%s",
            call_id,
            heard.code,
            heard.probability,
            heard.served_probability,
            foreign,
        )
        return heard if foreign else None

    def is_foreign(self, heard: Language) -> bool:
        return (
            heard.code not in self.served
            and heard.probability >= self.min_probability
            and heard.served_probability < self.max_served_probability
        )

    def detect(self, pcm16_8k: np.ndarray, rate: int = 8000) -> Language:
        """Blocking: Whisper's language probabilities for this audio (one 30 s window of the encoder)."""
        started = time.perf_counter()
        code, probability, ranked = self._model.detect_language(whisper_audio(pcm16_8k, rate))
        served = sum(p for language, p in ranked if language in self.served)
        log.debug("event=language_detected seconds=%.3f", time.perf_counter() - started)
        return Language(code, float(probability), float(served))

    def close(self) -> None:
        self._pool.shutdown(wait=True)
