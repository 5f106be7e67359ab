"""Streaming end-of-turn detection over 20 ms PCM16 8 kHz frames, one `Endpointer` per call.

Thresholds, measured with `benchmarks/speech_vad.py` on this project's phone path (the 27 caller
sentences spoken by espeak-ng en-us and by Piper joe -> 8 kHz -> mu-law -> back -> upsampled to 16 kHz):
- inside speech Silero v6 scores a median 0.99; 92% (espeak-ng) and 93% (Piper) of 32 ms windows
  score >= 0.5. Silence, white/pink/brown noise, clicks, hum, a 1 kHz tone, chords and a DC offset
  never score above 0.1. FACTS.md's "speech peaks near 0.6, 0.5 keeps 2.3 of 17 s" did not reproduce
  on this path: every threshold from 0.2 to 0.6 keeps 100% of the clean speech in 27 of 27 turns.
- noise decides: with white noise at 10/5/0 dB SNR, low thresholds let the pauses stay "speech", so
  turns merge and end late (0.2/0.05 at 5 dB: 12 turns of 27, end of turn 990 ms after the voice);
  0.5/0.35 keeps 100% of the speech in 27/27 turns (26/27 at 0 dB), ending 550-650 ms after the voice.
- so: enter speech at 0.5 and stay in it down to 0.35 (the dips inside words stay in the turn).

With a semantic judge (speech.turn: Smart Turn v3.2), silence alone is no longer what ends a turn: after
`turn_silence_ms` the judge hears the turn so far; when it says the caller is done (>= `turn_threshold`),
the turn ends as soon as its verdict is in; when it says they are mid-sentence (< `turn_hold_threshold`),
it ends only after `turn_max_silence_ms` (the long wait); in between, after `end_silence_ms`, as without
a judge. By default the hold threshold is the done threshold and the long wait is end_silence_ms: every
"not done" waits the long silence.
The judge runs in a thread (a Future), so the event loop, which also paces every call's RTP, never waits
for it; its verdict is read on the next frames. Measured in benchmarks/turn_taking.py.

The words can end a turn sooner too: whoever transcribed the audio of a SpeechPaused and heard a finished
sentence calls `finish()`, and the turn ends once the silence reaches `finished_silence_ms` (at once, when
it already has). The voice coming back cancels that, as it cancels the judge's verdict.
"""

from __future__ import annotations

import logging
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from speech.errors import SpeechError
from speech.vad import PHONE_RATE, VadModel

log = logging.getLogger(__name__)

# Silero's recurrent state drifts over a long silence: after 12-20 s of it (a caller waiting for a slow
# model), a short "Yes." (Piper or espeak-ng, ~0.4 s) scores 0-3 windows >= 0.5 where it scores 8-10
# after 0.5-5 s, too few for start_ms, and the answer is never heard. Between utterances the state holds
# nothing worth keeping, so after this much silence it starts afresh, as at the start of the call.
FORGET_AFTER_MS = 2000


class FrameError(SpeechError, ValueError):
    """A frame that is not 8 kHz PCM16 as a 1-D numpy int16 array."""


@dataclass(frozen=True)
class SpeechStarted:
    at_s: float  # stream time of the first voiced frame (seconds since the start or the last reset)


@dataclass(frozen=True)
class SpeechEnded:
    audio: np.ndarray  # int16, 8 kHz, from pre_roll_ms before the start to post_roll_ms after the last voiced frame
    start_s: float  # stream time of audio[0]
    duration_s: float
    reason: Literal["silence", "complete", "max_length"]  # complete: the judge, or finish(), heard the caller finish
    turn_probability: float | None = None  # the judge's verdict on this turn, when it gave one


@dataclass(frozen=True)
class SpeechPaused:
    """The caller has been silent for `pause_ms`: if the silence lasts, SpeechEnded will carry this very
    audio, so transcribing it now wins the rest of end_silence_ms (a new voiced frame makes it moot)."""

    audio: np.ndarray
    start_s: float


@dataclass(frozen=True)
class SpeechResumed:
    """The caller spoke again after a SpeechPaused, in the same utterance: what that pause handed over is not
    the turn, so work started on it (a transcript, the model's reply) can be dropped now, not at the turn's end."""

    at_s: float


Event = SpeechStarted | SpeechPaused | SpeechResumed | SpeechEnded


class TurnJudge(Protocol):
    def submit(self, pcm16_8k: np.ndarray) -> Future[float]:
        """Start judging the turn's audio so far; the Future gives the probability that the caller is done."""
        ...


class Endpointer:
    """Turns a call's frames into SpeechStarted (after `start_ms` of speech) and SpeechEnded events.

    A frame scoring >= threshold opens a candidate utterance; it is confirmed (SpeechStarted) once
    `start_ms` of frames have scored >= threshold, and it ends once `end_silence_ms` of consecutive
    frames scored below `stay_threshold`. An unconfirmed candidate that ends is dropped silently.
    With `pause_ms`, a confirmed utterance also announces each pause of that length (SpeechPaused), and the
    voice coming back after it (SpeechResumed).
    """

    def __init__(
        self,
        model: VadModel,
        *,
        threshold: float = 0.5,
        stay_threshold: float | None = None,
        start_ms: int = 160,
        end_silence_ms: int = 500,
        max_utterance_s: float = 30.0,
        pre_roll_ms: int = 300,
        post_roll_ms: int | None = None,
        pause_ms: int | None = None,
        judge: TurnJudge | None = None,
        turn_silence_ms: int = 200,
        turn_threshold: float = 0.5,
        turn_hold_threshold: float | None = None,
        turn_max_silence_ms: int | None = None,
        finished_silence_ms: int | None = None,
        call_id: str = "-",
    ) -> None:
        self.threshold = threshold
        self.stay_threshold = threshold - 0.15 if stay_threshold is None else stay_threshold
        if not 0.0 < self.stay_threshold <= threshold < 1.0:
            raise ValueError(f"need 0 < stay_threshold <= threshold < 1, got {self.stay_threshold}, {threshold}")
        self.start_samples = start_ms * PHONE_RATE // 1000
        self.end_silence_samples = end_silence_ms * PHONE_RATE // 1000
        self.max_samples = int(max_utterance_s * PHONE_RATE)
        self.pad_samples = pre_roll_ms * PHONE_RATE // 1000
        self.tail_samples = (pre_roll_ms if post_roll_ms is None else post_roll_ms) * PHONE_RATE // 1000
        # A pause shorter than the tail would hand over less audio than the turn's end will.
        if pause_ms is not None and not self.tail_samples <= pause_ms * PHONE_RATE // 1000 < self.end_silence_samples:
            raise ValueError(f"need post_roll_ms <= pause_ms < end_silence_ms, got pause_ms={pause_ms}")
        self.pause_samples = None if pause_ms is None else pause_ms * PHONE_RATE // 1000
        self.judge, self.turn_threshold = judge, turn_threshold
        self.hold_threshold = turn_threshold if turn_hold_threshold is None else turn_hold_threshold
        if not 0.0 <= self.hold_threshold <= turn_threshold:
            raise ValueError(f"need 0 <= turn_hold_threshold <= turn_threshold, got {self.hold_threshold}")
        self.max_silence_samples = (
            self.end_silence_samples if turn_max_silence_ms is None else turn_max_silence_ms * PHONE_RATE // 1000
        )
        if self.max_silence_samples < self.end_silence_samples:
            raise ValueError(f"need turn_max_silence_ms >= end_silence_ms, got {turn_max_silence_ms}")
        self.turn_silence_samples = turn_silence_ms * PHONE_RATE // 1000
        if judge is not None and not 0 < self.turn_silence_samples < self.end_silence_samples:
            raise ValueError(f"need 0 < turn_silence_ms < end_silence_ms, got {turn_silence_ms}")
        self.finished_silence_samples = (
            None if finished_silence_ms is None else finished_silence_ms * PHONE_RATE // 1000
        )
        if (
            self.finished_silence_samples is not None
            and not 0 < self.finished_silence_samples <= self.end_silence_samples
        ):
            raise ValueError(f"need 0 < finished_silence_ms <= end_silence_ms, got {finished_silence_ms}")
        self.call_id = call_id
        self._vad = model.stream()
        self._forget_samples = FORGET_AFTER_MS * PHONE_RATE // 1000
        self.reset()

    def reset(self) -> None:
        self._vad.reset()
        self._prob = 0.0
        self._position = 0  # samples fed since reset
        self._pre_roll: deque[np.ndarray] = deque()
        self._pre_roll_samples = 0
        self._utterance: list[np.ndarray] | None = None  # None: not in a candidate utterance
        self._utterance_samples = 0
        self._utterance_start = 0
        self._onset = 0
        self._voiced = 0  # samples of the candidate scoring >= threshold
        self._silence = 0  # consecutive samples below stay_threshold
        self._started = False
        self._verdict: Future[float] | None = None  # the judge's run on the current silence
        self._last_probability: float | None = None
        self._hold = False  # the judge heard this silence as mid-sentence: wait max_silence, not end_silence
        self._finished = False  # finish(): the words of this silence are a finished sentence
        self._quiet = 0  # consecutive samples below stay_threshold outside any utterance

    def feed(self, frame: np.ndarray) -> list[Event]:
        if not isinstance(frame, np.ndarray) or frame.dtype != np.int16 or frame.ndim != 1:
            raise FrameError(f"frames must be 1-D numpy int16 arrays of 8 kHz PCM16, got {_describe(frame)}")
        if frame.size == 0:
            return []
        probs = self._vad.push(frame)
        if probs.size:
            # A window ends inside this frame: score the frame by the newest window.
            self._prob = float(probs[-1])
        events: list[Event] = []
        frame = frame.copy()  # kept for up to max_utterance_s: the caller may reuse its buffer
        self._remember(frame)
        if self._utterance is not None:
            self._utterance.append(frame)
            self._utterance_samples += frame.size
        elif self._prob >= self.threshold:
            self._open(frame)
        if self._utterance is not None:
            self._advance(frame.size, events)
        else:
            self._idle(frame.size)
        self._position += frame.size
        return events

    def finish(self) -> None:
        """The words before the current silence are a finished sentence: end the turn after finished_silence_ms
        of it, not end_silence_ms. Nothing when there is no such silence now (the caller spoke again), or no
        finished_silence_ms."""
        if self.finished_silence_samples is not None and self._started and self._silence > 0:
            self._finished = True

    def _idle(self, samples: int) -> None:
        self._quiet = self._quiet + samples if self._prob < self.stay_threshold else 0
        if self._quiet >= self._forget_samples:
            self._vad.forget()
            self._quiet = 0

    def _remember(self, frame: np.ndarray) -> None:
        # Always the last pre_roll_ms of the call, so a turn that starts soon after another has its lead-in too.
        self._pre_roll.append(frame)
        self._pre_roll_samples += frame.size
        while len(self._pre_roll) > 1 and self._pre_roll_samples - self._pre_roll[0].size >= self.pad_samples:
            self._pre_roll_samples -= self._pre_roll.popleft().size

    def _open(self, frame: np.ndarray) -> None:
        self._utterance = list(self._pre_roll)  # ends with this frame
        self._utterance_samples = self._pre_roll_samples
        self._utterance_start = self._position + frame.size - self._pre_roll_samples
        self._onset = self._position
        self._voiced = 0
        self._silence = 0
        self._started = False
        self._drop_verdict()

    def _advance(self, samples: int, events: list[Event]) -> None:
        if self._prob >= self.threshold:
            self._voiced += samples
        silence_before = self._silence
        self._silence = self._silence + samples if self._prob < self.stay_threshold else 0
        if self._silence == 0:
            self._drop_verdict()  # the caller went on: that pause was not the end
            if self._started and self.pause_samples is not None and silence_before >= self.pause_samples:
                events.append(SpeechResumed(self._position / PHONE_RATE))
        if not self._started and self._voiced >= self.start_samples:
            self._started = True
            at_s = self._onset / PHONE_RATE
            log.info("speech started call=%s at_s=%.2f", self.call_id, at_s)
            events.append(SpeechStarted(at_s))
        if (
            self._started
            and self.pause_samples is not None
            and silence_before < self.pause_samples <= self._silence < self.end_silence_samples
        ):
            events.append(SpeechPaused(self._trimmed(), self._utterance_start / PHONE_RATE))
        if self._started and self.judge is not None and silence_before < self.turn_silence_samples <= self._silence:
            self._verdict = self.judge.submit(self._trimmed())
        done = self._judged_done()
        if done is not None:
            self._close("complete", events, done)
        elif self._finished and self._silence >= (self.finished_silence_samples or 0):
            self._close("complete", events)
        elif self._silence >= (self.max_silence_samples if self._hold else self.end_silence_samples):
            self._close("silence", events)
        elif self._utterance_samples >= self.max_samples:
            self._close("max_length", events)

    def _judged_done(self) -> float | None:
        """The judge's probability once it is in and says the caller is done; None until then, or when not."""
        if self._verdict is None or not self._verdict.done():
            return None
        try:
            probability = self._verdict.result()
        except Exception as error:  # noqa: BLE001 - a broken judge leaves the turn to silence, as if there were none
            log.warning("event=turn_judge_failed call=%s error=%r", self.call_id, error)
            self._verdict = None
            return None
        self._last_probability = probability
        self._hold = probability < self.hold_threshold
        self._verdict = None
        return probability if probability >= self.turn_threshold else None

    def _drop_verdict(self) -> None:
        if self._verdict is not None:
            self._verdict.cancel()
            self._verdict = None
        self._last_probability = None
        self._hold = False
        self._finished = False

    def _close(
        self,
        reason: Literal["silence", "complete", "max_length"],
        events: list[Event],
        probability: float | None = None,
    ) -> None:
        audio = np.concatenate(self._utterance or []) if reason == "max_length" else self._trimmed()
        if self._started:
            probability = self._last_probability if probability is None else probability
            ended = SpeechEnded(audio, self._utterance_start / PHONE_RATE, audio.size / PHONE_RATE, reason, probability)
            log.info(
                "speech ended call=%s start_s=%.2f duration_s=%.2f reason=%s turn_p=%s",
                self.call_id,
                ended.start_s,
                ended.duration_s,
                reason,
                "-" if probability is None else f"{probability:.2f}",
            )
            events.append(ended)
        self._drop_verdict()
        if reason == "max_length":
            # The caller is still talking: the next piece starts where this one stopped, without overlap.
            self._pre_roll.clear()
            self._pre_roll_samples = 0
        self._utterance = None
        self._utterance_samples = 0

    def _trimmed(self) -> np.ndarray:
        """The utterance so far, ending post_roll_ms after its last voiced frame."""
        assert self._utterance is not None
        audio = np.concatenate(self._utterance)
        return audio[: audio.size - self._silence + self.tail_samples]


def _describe(frame: object) -> str:
    if isinstance(frame, np.ndarray):
        return f"an array of dtype {frame.dtype} and shape {frame.shape}"
    return f"a {type(frame).__name__}"
