"""What the caller hears while a slow answer is on its way: never dead air.

A local model on a CPU takes seconds to write a reply, and callers say "hello?" after ~1.5 s of silence and think
the line dropped after ~3 s. So a turn whose answer has not begun shortly after the end of the turn hears a short
acknowledgement, and something short again after every few seconds of silence that follow, until the answer
comes. The phrases promise nothing the turn may not do (no "I've found it"), are rendered at start-up (the
synthesizer's cache: no synthesis on the turn's path), and go into the call's transcript and recording as what
the caller heard, never into the model's history. Consecutive fillers never repeat a phrase.
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
STILL_WORKING = ("Bear with me, please.", "Thanks for waiting.", "I'm still on it.")
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


class Acknowledger:
    """One call's fillers. The phrases rotate over the call, so two in a row are never the same words."""

    def __init__(
        self, fillers: Fillers, synthesizer: Rendering, call_id: str, rendered: Mapping[str, np.ndarray] | None = None
    ) -> None:
        """`rendered`: the phrases' audio rendered at start-up (render()); others are synthesized when needed."""
        self.fillers, self.synthesizer, self.call_id = fillers, synthesizer, call_id
        self._rendered_at_start = rendered or {}
        self._first = itertools.cycle(fillers.first)
        self._again = itertools.cycle(fillers.again)

    async def fill(
        self, playback: Playback, since: float, answered: Callable[[], bool], heard: Callable[[str], None]
    ) -> None:
        """Until `answered()` (the answer's first audio is out), play a filler into the turn's `playback` when
        the caller has heard nothing for a while, counting from `since` (the end of the turn, monotonic); each
        one played is reported to `heard`. A caller who is talking (the playback paused) is not talked over.
        Cancel it when the turn ends."""
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
            audio = await self._rendered(text)
            if answered() or playback.paused:
                return
            playback.play(audio)
            heard(text)
            played += 1
            wait += audio.size / PHONE_RATE

    async def _rendered(self, text: str) -> np.ndarray:
        """The phrase's whole audio, played as one piece so that the answer's first audio can only follow it."""
        audio = self._rendered_at_start.get(text)
        return audio if audio is not None else await render(self.synthesizer, text, self.call_id)


async def render(synthesizer: Rendering, text: str, call_id: str = "warm-up") -> np.ndarray:
    """A phrase's whole audio."""
    chunks = [chunk async for chunk in synthesizer.synthesize_stream(text, call_id)]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
