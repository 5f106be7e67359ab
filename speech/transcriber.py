"""Speech to text with faster-whisper (CTranslate2, int8 on CPU), one model per process shared by all calls.

A call's utterance (PCM16 8 kHz, already cut by the endpointer) is resampled to 16 kHz with soxr and
decoded greedily in English in a bounded thread pool, so the event loop never waits on the CPU. A turn
heard unclearly is decoded once more with beam search: clear callers rarely pay for it, a hard caller's
unclear turns get ~20% fewer word errors (benchmarks/speech_stt.py). The transcript carries its confidence so the agent
can ask the caller to repeat.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from speech.audio import resample
from speech.models import ModelError, whisper_model_dir

log = logging.getLogger(__name__)

WHISPER_RATE = 16000
TINY_WINDOW_S = 20.0  # tiny.en's default encoder window (speech.whisper_window)


@dataclass(frozen=True)
class Transcript:
    text: str
    avg_logprob: float  # mean log-probability of the text's tokens (-inf when the model was not run)
    no_speech_prob: float  # Whisper's probability that the audio holds no speech
    duration_s: float
    confident: bool  # False: empty, or probably not what the caller said; ask them to repeat
    retried: bool = False  # decoded a second time with beam search because the greedy pass was unclear


@dataclass(frozen=True)
class Thresholds:
    """When a transcript is trusted, measured on the phone-path corpus and on noise (benchmarks/speech_stt.py):
    Piper's speech never crossed these, espeak-ng's hard speech did on 6-9% of sentences (mostly wrong
    ones), and silence, hiss, noise, hum, clicks, DC and square waves always did."""

    # Audio whose loudest 30 ms (after removing DC) is below this holds no speech: the model is not run.
    # Line hiss sits near -60 dBFS; a quiet caller's loudest syllable near -30.
    min_level_dbfs: float = -50.0
    # Speech scored at most 0.50 (a lone "um"); noise and silence at least 0.55 (base), 0.74 (tiny.en).
    max_no_speech_prob: float = 0.5
    # Piper's speech scored at least -0.99; noise at most -0.88 but with no_speech_prob >= 0.55.
    min_avg_logprob: float = -1.0
    # Whisper's failure loops ("and-and-and-...", "BOOOOO") compress far better than language (gzip
    # ratio, the measure and limit Whisper itself uses); a rule, not a list of known hallucinations.
    max_compression_ratio: float = 2.4
    # Speech (no_speech_prob under the limit above) whose greedy transcript scores below this, or loops,
    # is decoded again with beam search. Piper's clear speech crossed it on ~3% of sentences, espeak-ng's
    # hard speech on ~40%, where the beam's transcript had ~20% fewer word errors than the greedy one.
    retry_below_logprob: float = -0.4


class Transcriber:
    """Whisper for phone audio. Create one per process and share it; `close()` stops its threads.

    `model` is "tiny.en", "base" or a CTranslate2 model directory; `model_path` (from config) wins.
    `domain_prompt` (product names, call-centre words) is Whisper's initial prompt for every call unless
    a call passes its own `prompt`. A transcript that is speech but unclear (see `Thresholds`) is decoded
    again with `retry_beam_size` (1 turns the retry off). The encoder hears `window_s` of audio, or the
    utterance and 2 s (speech.whisper_window); by default 20 s for tiny.en and Whisper's own 30 s (None) for
    the rest: base lost the ends of quiet callers' sentences with a shorter window, tiny.en did not.
    """

    _models: ClassVar[dict[tuple[str, int, int], Any]] = {}  # (model dir, cpu_threads, workers) -> WhisperModel
    _models_lock = threading.Lock()

    def __init__(
        self,
        model: str = "base",
        *,
        model_path: str | Path | None = None,
        cache_dir: str | Path | None = None,
        language: str = "en",
        beam_size: int = 1,
        retry_beam_size: int = 5,
        domain_prompt: str | None = None,
        vad_filter: bool = False,
        workers: int | None = None,
        cpu_threads: int | None = None,
        thresholds: Thresholds = Thresholds(),
        window_s: float | None = None,
    ) -> None:
        if beam_size < 1 or retry_beam_size < 1:
            raise ValueError(f"beam sizes must be at least 1, not {beam_size} and {retry_beam_size}")
        self.directory = whisper_model_dir(model, path=model_path, cache_dir=cache_dir)
        self.workers = workers or os.cpu_count() or 1
        self.cpu_threads = cpu_threads or max(1, (os.cpu_count() or 1) // self.workers)
        self.language, self.beam_size, self.retry_beam_size = language, beam_size, retry_beam_size
        self.domain_prompt = domain_prompt
        self.vad_filter, self.thresholds = vad_filter, thresholds
        tiny = model_path is None and model == "tiny.en"
        self.window_s: float | None = window_s or (TINY_WINDOW_S if tiny else None)  # None: Whisper's 30 s
        self._model = self.shared_model(self.directory, self.cpu_threads, self.workers)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="whisper")

    @property
    def whisper(self) -> Any:
        """The faster_whisper.WhisperModel this transcriber decodes with (speech.language may share it)."""
        return self._model

    @classmethod
    def shared_model(cls, directory: Path, cpu_threads: int, workers: int) -> Any:
        """The process's one faster_whisper.WhisperModel for these settings (speech.language shares it)."""
        key = (str(directory), cpu_threads, workers)
        with cls._models_lock:
            if key not in cls._models:
                from speech.whisper_window import WindowedWhisper  # heavy: only when a transcriber is made

                started = time.perf_counter()
                try:
                    # Always a directory, never a size name: a name would be downloaded from a hub.
                    cls._models[key] = WindowedWhisper(
                        str(directory), device="cpu", compute_type="int8", cpu_threads=cpu_threads, num_workers=workers
                    )
                except (RuntimeError, ValueError, OSError) as error:
                    raise ModelError(f"cannot load the Whisper model in {directory}: {error}") from error
                log.info(
                    "event=whisper_loaded dir=%s threads=%d workers=%d seconds=%.2f",
                    directory,
                    cpu_threads,
                    workers,
                    time.perf_counter() - started,
                )
            return cls._models[key]

    async def transcribe(
        self, pcm16_8k: np.ndarray, *, prompt: str | None = None, rate: int = 8000, call_id: str = "-"
    ) -> Transcript:
        """Transcribe one utterance (int16 mono at `rate`) in the thread pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, lambda: self.transcribe_sync(pcm16_8k, prompt=prompt, rate=rate, call_id=call_id)
        )

    def transcribe_sync(
        self, pcm16_8k: np.ndarray, *, prompt: str | None = None, rate: int = 8000, call_id: str = "-"
    ) -> Transcript:
        started = time.perf_counter()
        pcm = np.asarray(pcm16_8k, dtype=np.int16).ravel()
        duration = pcm.size / rate
        audio = whisper_audio(pcm, rate)
        if loudest_dbfs(audio) < self.thresholds.min_level_dbfs:
            transcript, reason = Transcript("", float("-inf"), 1.0, duration, False), "quiet"
        else:
            transcript, reason = self._decode(audio, duration, self.domain_prompt if prompt is None else prompt)
        # The caller's words only at DEBUG: INFO logs go to journals and log shippers that keep them longer
        # and show them to more people than the call records.
        log.info(
            "event=transcribed call=%s seconds=%.3f audio_s=%.2f confident=%s reason=%s retried=%s logprob=%.2f no_speech=%.2f chars=%d",
            call_id,
            time.perf_counter() - started,
            duration,
            transcript.confident,
            reason,
            transcript.retried,
            transcript.avg_logprob,
            transcript.no_speech_prob,
            len(transcript.text),
        )
        log.debug("event=transcript call=%s text=%r", call_id, transcript.text)
        return transcript

    def _decode(self, audio: np.ndarray, duration: float, prompt: str | None) -> tuple[Transcript, str]:
        with self._model.window(duration, self.window_s):
            transcript, reason = self._decode_once(audio, duration, prompt, self.beam_size)
            if self.retry_beam_size > self.beam_size and self._unclear(transcript):
                transcript, reason = self._decode_once(audio, duration, prompt, self.retry_beam_size)
                transcript = replace(transcript, retried=True)
        return transcript, reason

    def _unclear(self, transcript: Transcript) -> bool:
        """Speech the greedy pass probably misheard; noise and silence are not worth a second pass."""
        limits = self.thresholds
        return transcript.no_speech_prob <= limits.max_no_speech_prob and (
            transcript.avg_logprob < limits.retry_below_logprob
            or compression_ratio(transcript.text) > limits.max_compression_ratio
        )

    def _decode_once(
        self, audio: np.ndarray, duration: float, prompt: str | None, beam_size: int
    ) -> tuple[Transcript, str]:
        segments, _ = self._model.transcribe(
            audio,
            language=self.language,
            beam_size=beam_size,
            initial_prompt=prompt or None,
            without_timestamps=True,
            temperature=0.0,
            condition_on_previous_text=False,
            vad_filter=self.vad_filter,
            # We judge silence ourselves, with the numbers of every segment.
            no_speech_threshold=None,
            log_prob_threshold=None,
            compression_ratio_threshold=None,
            # Speech stays under ~5 tokens a second: a bound on failure loops and on their cost.
            max_new_tokens=int(6 * duration) + 10,
        )
        segments = list(segments)
        text = " ".join(segment.text.strip() for segment in segments).strip()
        tokens = sum(len(segment.tokens) for segment in segments)
        avg_logprob = sum(s.avg_logprob * len(s.tokens) for s in segments) / tokens if tokens else float("-inf")
        no_speech = max((segment.no_speech_prob for segment in segments), default=1.0)
        reason = self._doubt(text, avg_logprob, no_speech)
        return Transcript(text, avg_logprob, no_speech, duration, reason is None), reason or "ok"

    def _doubt(self, text: str, avg_logprob: float, no_speech_prob: float) -> str | None:
        """Why the transcript should not be trusted, or None."""
        limits = self.thresholds
        if not text:
            return "empty"
        if no_speech_prob > limits.max_no_speech_prob:
            return "no_speech"
        if avg_logprob < limits.min_avg_logprob:
            return "low_logprob"
        if compression_ratio(text) > limits.max_compression_ratio:
            return "repetitive"
        return None

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def whisper_audio(pcm: np.ndarray, rate: int) -> np.ndarray:
    """PCM16 at `rate` as Whisper takes it: float32 at 16 kHz, without DC (whose edges would ring)."""
    centred = np.asarray(pcm, dtype=np.int16).ravel().astype(np.float32) / 32768.0
    centred -= centred.mean() if centred.size else 0.0
    return resample(centred, rate, WHISPER_RATE, dtype=np.float32)


def loudest_dbfs(audio: np.ndarray, frame: int = 480) -> float:
    """The level of the loudest 30 ms frame (at 16 kHz) in dB relative to full scale; -inf for silence."""
    if audio.size == 0:
        return float("-inf")
    usable = audio[: audio.size - audio.size % frame] if audio.size >= frame else audio
    rms = np.sqrt(np.mean(np.square(usable.reshape(-1, min(frame, usable.size)), dtype=np.float64), axis=1)).max()
    return float(20 * np.log10(rms)) if rms > 0 else float("-inf")


def compression_ratio(text: str) -> float:
    """Bytes of text per byte of its zlib compression, as Whisper measures repetition."""
    data = text.encode()
    return len(data) / len(zlib.compress(data))
