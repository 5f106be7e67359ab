"""The caller's words as the hearing keeps them between breaths: held half-sentences, the audio heard after them,
the words a reply answers; and how two breaths of one sentence are joined for Whisper to hear them whole.
And what the hearing (callcenter.call.hearing) tells the call: an utterance `Heard`, the words `CallerSaid`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np

import speech
from callcenter.call.record import TurnTiming
from speech import PHONE_RATE, SpeechEnded
from swarm import Speculation

# Held words are heard again with the rest of the sentence, up to this much audio (Whisper hears 30 s).
MAX_JOINED_SAMPLES = 20 * PHONE_RATE
MAX_GAP_SAMPLES = PHONE_RATE // 2  # of the silence between two breaths: enough for Whisper to hear a pause


@dataclass
class HeldWords:
    """Words that stopped mid-sentence; answered as they are when the timer fires (none: the caller went on)."""

    text: str
    audio: np.ndarray | None = None  # what was heard, from the sentence's first breath on
    end_s: float = 0.0  # stream time of the audio's end
    timer: asyncio.TimerHandle | None = None
    unclear: bool = False  # Whisper was unsure of them: if the caller says no more, they are asked to repeat

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


@dataclass(frozen=True)
class AnsweredWords:
    """The caller's words the running turn answers: if they go on before hearing its first words (the conversation's
    stop_agent), the turn is taken back and their sentence is heard whole, as held words are."""

    words: HeldWords
    line: dict[str, Any]  # their transcript line
    timing: TurnTiming
    since: int  # the session's events before the turn


@dataclass(frozen=True)
class HeardAudio:
    """An utterance's audio as transcribed: after held words (`after`), joined to theirs."""

    audio: np.ndarray
    end_s: float  # stream time of the audio's end
    after: HeldWords | None = None


@dataclass(frozen=True)
class Heard:
    """One utterance heard to its end: what Whisper wrote of it, the audio it heard (after held words: theirs and
    this), and another language the call's language check heard in it, if any."""

    turn: SpeechEnded
    transcript: speech.Transcript
    audio: HeardAudio
    language: speech.Language | None
    ended: float  # time.monotonic() at the end of the caller's turn
    timing: TurnTiming  # the turn's, from its end on

    @property
    def text(self) -> str:
        return self.transcript.text.strip()


@dataclass(frozen=True)
class CallerSaid:
    """The caller's words to answer: their whole sentence (after held words, with them), heard clearly or not."""

    words: HeldWords
    confident: bool  # Whisper was sure of them; else the caller is asked to repeat
    ended: float  # time.monotonic() the turn's clock starts at
    timing: TurnTiming
    speculation: Speculation | None = None  # the model's start on them at the caller's pause (early_reply)
    waited: bool = False  # held words the caller said no more after: answered when the wait ran out


def whole_sentence(held: HeldWords | None, heard: HeardAudio, text: str) -> HeldWords:
    """The caller's sentence from its first half on: heard again whole (heard.after), or the held words
    joined to these as text, and their audio too for a next breath while it fits Whisper's window."""
    if held is None:
        return HeldWords(text, heard.audio, heard.end_s)
    if held is heard.after:
        return HeldWords(text or held.text, heard.audio, heard.end_s)
    audio = after_held(held, heard.audio, heard.end_s - heard.audio.size / PHONE_RATE)
    return HeldWords(f"{held.text} {text}".strip(), audio, heard.end_s)


def after_held(held: HeldWords, audio: np.ndarray, start_s: float) -> np.ndarray | None:
    """The held words' audio and then this, while both fit Whisper's window; else None (joined as text)."""
    if held.audio is None or held.audio.size + audio.size > MAX_JOINED_SAMPLES:
        return None
    return join_breaths(held.audio, held.end_s, audio, start_s)


def join_breaths(first: np.ndarray, first_end_s: float, second: np.ndarray, second_start_s: float) -> np.ndarray:
    """Two utterances of one call as one, with the silence between them (at most MAX_GAP_SAMPLES of it).
    Where the first's post-roll and the second's pre-roll overlap, that audio is kept once."""
    gap = round((second_start_s - first_end_s) * PHONE_RATE)
    if gap < 0:
        return np.concatenate([first, second[min(-gap, second.size) :]])
    return np.concatenate([first, np.zeros(min(gap, MAX_GAP_SAMPLES), np.int16), second])
