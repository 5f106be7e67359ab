"""The agent's side of one call: what it says, synthesized and played to the caller, and what the caller has heard
of it. A turn's sentences are recorded as they are played; the ones the caller never heard (they interrupted, or
hung up) are taken out of the session and the call's record again, so both keep only what was heard. A slow answer
is acknowledged meanwhile (callcenter.acknowledgement). A reply's timings go into the record, also when it is
interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

import numpy as np

from callcenter.acknowledgement import Acknowledger
from callcenter.call.barge_in import AgentSoFar
from callcenter.call.record import Transcript, TurnTiming
from callcenter.call.seams import Synthesizing
from callcenter.call.settings import VoiceSettings
from callcenter.playback import Playback
from speech import PHONE_RATE
from swarm import Session, Speculation
from telephony import Call

log = logging.getLogger(__name__)


class Speaking:
    """The running turn's voice: its sentences, where each ends in its audio, and their lines in the record."""

    def __init__(
        self,
        call: Call,
        session: Session,
        synthesizer: Synthesizing,
        settings: VoiceSettings,
        transcript: Transcript,
        fillers_audio: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """`fillers_audio`: the acknowledgements' audio rendered at start-up (callcenter.acknowledgement)."""
        self.call, self.session, self.synthesizer, self.transcript = call, session, synthesizer, transcript
        self.playback = Playback(call)  # the running turn's audio: paused, resumed or stopped by the caller
        fillers = settings.fillers
        self._acknowledger = (
            Acknowledger(fillers, synthesizer, call.call_id, fillers_audio) if fillers is not None else None
        )
        self._spoken: list[tuple[str, int]] = []  # sentences of the running turn and the sample where each ends
        self._lines: list[dict[str, Any]] = []  # transcript lines of the running turn's sentences
        self._filler_line: dict[str, Any] | None = None  # the transcript line of the last acknowledgement played

    @property
    def spoken(self) -> tuple[tuple[str, int], ...]:
        """The running turn's sentences so far, and the sample of its audio where each ends."""
        return tuple(self._spoken)

    def so_far(self, done: bool, greeting: bool) -> AgentSoFar:
        """The running turn as the caller hears it now (`done`: it has said all it will; `greeting`: it is the
        call's greeting)."""
        return AgentSoFar(tuple(self._spoken), self.playback.heard, done, greeting)

    async def sentences(
        self, sentences: AsyncGenerator[str, None], ended: float | None = None, timing: TurnTiming | None = None
    ) -> None:
        """Say these, each synthesized and played as it comes; the first audio's time goes into `timing`."""
        async with contextlib.aclosing(sentences):
            async for sentence in sentences:
                async with contextlib.aclosing(
                    self.synthesizer.synthesize_stream(sentence, self.call.call_id)
                ) as chunks:
                    async for chunk in chunks:
                        if timing is not None and ended is not None and timing.first_audio_s is None:
                            self._make_way()
                            timing.first_audio_s = time.monotonic() - ended
                            timing.behind_s = (self.playback.total - self.playback.heard) / PHONE_RATE
                        self.playback.play(chunk)
                self._spoken.append((sentence, self.playback.total))
                self.transcript.add("agent", sentence)
                self._lines.append(self.transcript.lines[-1])

    async def reply(
        self,
        text: str,
        ended: float,
        timing: TurnTiming,
        speculation: Speculation | None = None,
        on_turn: Callable[[TurnTiming], None] | None = None,
    ) -> None:
        """Answer the caller's `text` (ended at `ended`): the session's sentences said as they come, a slow answer
        acknowledged meanwhile. An interrupted reply was still a turn, with its latencies: `timing` goes into the
        record and to `on_turn` however it ends."""

        async def sentences() -> AsyncGenerator[str, None]:
            async for sentence in self.session.stream(text, speculation):
                if timing.first_sentence_s is None:
                    timing.first_sentence_s = time.monotonic() - ended
                yield sentence

        filling = self.acknowledge(ended, timing)
        try:
            await self.sentences(sentences(), ended, timing)
        finally:
            if filling is not None:
                filling.cancel()
            if speculation is not None:
                timing.early_reply = speculation.taken
                speculation.cancel()  # also when this turn was replaced before it asked the model
            self.transcript.turns.append(timing)
            if on_turn:
                on_turn(timing)
            log.info(
                "event=turn call=%s %s",
                self.call.call_id,
                " ".join(f"{k}={v:.3f}" for k, v in timing.breakdown().items() if v is not None),
            )

    async def prepared(self, text: str) -> None:
        """Say a prepared line (recorded in the session as the agent's)."""
        self.session.emit(text)

        async def one() -> AsyncGenerator[str, None]:
            yield text

        await self.sentences(one())

    def acknowledge(self, ended: float, timing: TurnTiming) -> asyncio.Task[None] | None:
        """Acknowledge a slow answer (callcenter.acknowledgement): heard and recorded, not in the model's history.
        Cancel it when the turn ends."""
        if self._acknowledger is None:
            return None

        def heard(text: str) -> None:
            if timing.acknowledged_s is None:
                timing.acknowledged_s = time.monotonic() - ended
            self.transcript.add("agent", text, via="acknowledgement")
            self._filler_line = self.transcript.lines[-1]

        return asyncio.create_task(
            self._acknowledger.fill(self.playback, ended, lambda: timing.first_audio_s is not None, heard)
        )

    def _make_way(self) -> None:
        """The answer's first audio is here: an acknowledgement still playing stops at its next pause, and its
        line says what the caller heard of it."""
        words = self._acknowledger.make_way(self.playback) if self._acknowledger is not None else None
        if words is not None and self._filler_line is not None:
            self._filler_line["text"] = words

    def forget_unheard(self, reason: str) -> None:
        """Forget the sentences of the running turn that the caller has not heard (yet)."""
        played = self.playback.heard
        heard = [sentence for sentence, end in self._spoken if end <= played]
        if len(heard) < len(self._spoken):
            self.session.commit_heard(" ".join(heard))
            unheard = {id(line) for line in self._lines[len(heard) :]}
            self.transcript.lines = [line for line in self.transcript.lines if id(line) not in unheard]
            log.info(
                "event=agent_interrupted call=%s reason=%s heard=%d/%d sentences",
                self.call.call_id,
                reason,
                len(heard),
                len(self._spoken),
            )
        self._spoken, self._lines = [], []
