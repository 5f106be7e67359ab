"""What the caller hears while a slow answer is on its way: never dead air.

A local model on a CPU takes seconds to write a reply, and callers say "hello?" after ~1.5 s of silence and think
the line dropped after ~3 s. So a turn whose answer has not begun shortly after the end of the turn hears a short
acknowledgement, and something short again after every few seconds of silence that follow, until the answer
comes. The phrases promise nothing the turn may not do (no "I've found it"), are rendered at start-up (the
synthesizer's cache: no synthesis on the turn's path), and go into the call's transcript and recording as what
the caller heard, never into the model's history. Consecutive fillers never repeat a phrase. An answer ready while a
filler plays does not wait for all of it: the filler stops at its next clause's pause or at the end of its voice
(make_way), since a slow model's answer is often ready halfway through a 1 s phrase.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from callcenter.playback import Playback
from speech import PHONE_RATE

ACKNOWLEDGEMENTS = ("One moment, please.", "Let me see.", "Just a moment.")
STILL_WORKING = ("Bear with me.", "Thanks for waiting.", "I'm still on it.")
# Where a filler may stop for the answer: its voice's level per 10 ms, quiet under this share of its loudest, a
# clause's pause at least this long (Piper's commas: 220-290 ms; the gaps between words: 20-150 ms), and the
# quiet kept after the last word so that it does not end clipped.
_FRAME = PHONE_RATE // 100
_QUIET = 0.05
_MIN_PAUSE_FRAMES = 8
_KEEP = PHONE_RATE * 40 // 1000
# The model's own timeout (llm.timeout, 20 s by default) ends the turn with an apology before these run out.
MAX_FILLERS = 8


class Rendering(Protocol):
    def synthesize_stream(self, text: str, call_id: str = "") -> AsyncGenerator[np.ndarray, None]: ...


@dataclass(frozen=True)
class Fillers:
    """When and what: the first after `after_s` from the end of the turn, the next after `still_s` of the
    silence that follows each."""

    after_s: float = 0.35
    still_s: float = 1.5
    first: tuple[str, ...] = ACKNOWLEDGEMENTS
    again: tuple[str, ...] = STILL_WORKING

    def phrases(self) -> tuple[str, ...]:
        return (*self.first, *self.again)


@dataclass(frozen=True)
class Filler:
    """A phrase's audio and where it may stop early: (sample, the words heard up to there), in order."""

    text: str
    audio: np.ndarray
    stops: tuple[tuple[int, str], ...]


def filler(text: str, audio: np.ndarray) -> Filler:
    """The phrase with its stops: after each comma's pause (the longest pauses, one per comma; none if the voice
    has fewer) and at the end of its voice."""
    frames = audio[: audio.size // _FRAME * _FRAME].reshape(-1, _FRAME)
    level = np.abs(frames.astype(np.float32)).mean(axis=1) if frames.size else np.zeros(0)
    voiced = np.flatnonzero(level > level.max(initial=0.0) * _QUIET)
    if voiced.size == 0:
        return Filler(text, audio, ())
    gaps = [(int(b - a - 1), int(a + 1)) for a, b in itertools.pairwise(voiced) if b - a - 1 >= _MIN_PAUSE_FRAMES]
    clauses = text.split(",")[:-1]
    longest = sorted(gaps, reverse=True)[: len(clauses)]
    pauses = sorted(start for _, start in longest) if len(longest) == len(clauses) else []
    stops = [(start * _FRAME + _KEEP, ",".join(clauses[: i + 1]) + ",") for i, start in enumerate(pauses)]
    stops.append((min(audio.size, (int(voiced[-1]) + 1) * _FRAME + _KEEP), text))
    return Filler(text, audio, tuple(stops))


class Acknowledger:
    """One call's fillers. The phrases rotate over the call, so two in a row are never the same words."""

    def __init__(
        self, fillers: Fillers, synthesizer: Rendering, call_id: str, rendered: Mapping[str, np.ndarray] | None = None
    ) -> None:
        """`rendered`: the phrases' audio rendered at start-up (render()); others are synthesized when needed."""
        self.fillers, self.synthesizer, self.call_id = fillers, synthesizer, call_id
        self._phrases = {text: filler(text, audio) for text, audio in (rendered or {}).items()}
        self._first = itertools.cycle(fillers.first)
        self._again = itertools.cycle(fillers.again)
        self._playing: tuple[int, Filler] | None = None  # the last filler played and where it starts in the turn

    async def fill(
        self, playback: Playback, since: float, answered: Callable[[], bool], heard: Callable[[str], None]
    ) -> None:
        """Until `answered()` (the answer's first audio is out), play a filler into the turn's `playback` when
        the caller has heard nothing for a while, counting from `since` (the end of the turn, monotonic); each
        one played is reported to `heard`. A caller who is talking (the playback paused) is not talked over.
        Cancel it when the turn ends."""
        self._playing = None
        wait = since + self.fillers.after_s - time.monotonic()
        played = 0
        for _ in range(MAX_FILLERS):
            await asyncio.sleep(max(0.0, wait))
            wait = self.fillers.still_s
            if answered():
                return
            if playback.paused:
                continue
            text = next(self._again if played else self._first)
            phrase = await self._rendered(text)
            if answered() or playback.paused:
                return
            self._playing = (playback.total, phrase)
            playback.play(phrase.audio)
            heard(text)
            played += 1
            wait += phrase.audio.size / PHONE_RATE

    def make_way(self, playback: Playback) -> str | None:
        """The answer is ready: the filler still playing stops at its next stop the caller has not reached, and
        the answer follows there. Returns the words the caller hears of it when that is not the whole phrase."""
        if self._playing is None:
            return None
        start, phrase = self._playing
        self._playing = None
        heard = playback.heard - start
        for at, words in phrase.stops:
            if at >= heard:
                playback.cut(start + at)
                return words if words != phrase.text else None
        return None

    async def _rendered(self, text: str) -> Filler:
        """The phrase and its stops. It is played as one piece, so the answer's first audio can only follow it, at
        one of its stops (make_way)."""
        if text not in self._phrases:
            self._phrases[text] = filler(text, await render(self.synthesizer, text, self.call_id))
        return self._phrases[text]


async def render(synthesizer: Rendering, text: str, call_id: str = "warm-up") -> np.ndarray:
    """A phrase's whole audio."""
    chunks = [chunk async for chunk in synthesizer.synthesize_stream(text, call_id)]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
