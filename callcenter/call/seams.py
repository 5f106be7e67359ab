"""What one call needs of the parts around it: speech's transcriber, endpointer and synthesizer (tests/voice_fakes.py
stands in for them), and, for the hearing (callcenter.call.hearing), the call it hears for (`Listener`: the
conversation)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

import numpy as np

import speech
from callcenter.call.barge_in import AgentSoFar
from callcenter.call.heard import CallerSaid, Heard


class Transcribing(Protocol):
    async def transcribe(
        self, pcm16_8k: np.ndarray, *, prompt: str | None = None, call_id: str = "-"
    ) -> speech.Transcript: ...


class Endpointing(Protocol):
    def feed(self, frame: np.ndarray) -> list[speech.EndpointerEvent]: ...

    def finish(self) -> None:
        """The words before the current silence are a finished sentence: the turn may end sooner."""
        ...


class Listener(Protocol):
    """What the hearing needs of the call it hears for (callcenter.conversation.Conversation): what the agent is
    doing now, and someone to act on what was heard."""

    @property
    def closing(self) -> bool:
        """A goodbye or a hand-over is under way: nothing more is heard to be answered."""
        ...

    @property
    def keypad_open(self) -> bool:
        """A tool asked for digits: the caller's words are not held for more."""
        ...

    @property
    def agent_paused(self) -> bool:
        """The caller's voice paused the agent: their words decide whether it goes on."""
        ...

    def agent_busy(self) -> bool:
        """The agent is talking, paused, thinking, waiting for keys or closing: no reply is started early."""
        ...

    def agent_so_far(self) -> AgentSoFar: ...

    def caller_started(self) -> None:
        """The caller's voice began: the agent pauses (or a reply not yet heard waits)."""
        ...

    def caller_stopped(self) -> None:
        """The caller's utterance ended (its words are still to be heard)."""
        ...

    def resume_agent(self) -> None:
        """The words over the paused agent did not stop it, or nothing was heard: it goes on."""
        ...

    async def stop_agent(self) -> None:
        """The words over the paused agent stop it (and may take its reply back: Hearing.take_back)."""
        ...

    def reply_outdated(self) -> None:
        """The caller went on with their sentence: a reply to its first words is out of date."""
        ...

    def other_language(self, heard: Heard) -> None:
        """The caller speaks a language the agents do not serve: nothing is answered."""
        ...

    def answer(self, said: CallerSaid) -> bool:
        """Answer the caller's words; True when a reply turn was started (it has said.speculation)."""
        ...


class Synthesizing(Protocol):
    def synthesize_stream(self, text: str, call_id: str = "") -> AsyncGenerator[np.ndarray, None]: ...
