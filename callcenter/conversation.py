"""One phone call's conversation: Call -> hearing -> Session -> Synthesizer -> Call.

The hearing (callcenter.call.hearing) turns the caller's audio into what they said: early transcripts and replies,
held half-sentences, second hearings of short sounds over the agent, the language check. This loop tells it what
the agent is doing and acts on what it heard: the caller's voice pauses the agent at once; real words stop it (the
running completion and synthesis are cancelled, and the session keeps only what the caller heard), a cough or a
backchannel lets it go on. The agent's own voice coming back on the line is cancelled before the VAD.
A caller who goes on before hearing a word of the reply is not talked over: the reply waits; a cough lets it go on,
words take it back (when it changed nothing) and the whole sentence is answered as one turn. So do words over the
reply's first second, before its first sentence has been heard to its end: the caller was finishing their own
sentence.

What the call does around the caller's turns (greeting, re-prompts, time limit, keypad and "0 for a person",
hand-over, goodbye, drain) is decided by the call rules (callcenter.call.rules), the same for every channel:
this loop feeds them the call's events and its clock, and does what they say. The agent's voice (its replies, what
the caller heard of them) is callcenter.call.speaking's, the caller's keys callcenter.call.dtmf's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import numpy as np

from callcenter.call.barge_in import WENT_ON_SAMPLES as WENT_ON_SAMPLES  # benchmarks/turn_taking.py reads it here
from callcenter.call.barge_in import AgentSoFar
from callcenter.call.dtmf import Dtmf
from callcenter.call.heard import AnsweredWords, CallerSaid, Heard
from callcenter.call.hearing import Hearing
from callcenter.call.language import LanguageChecking
from callcenter.call.record import Transcript, TurnTiming
from callcenter.call.rules import (
    Action,
    CallRules,
    Disposition,
    EndCall,
    Escalate,
    HangUp,
    Interrupt,
    LetHear,
    RunDigits,
    Say,
    StartTurn,
    Step,
    Transfer,
    WaitForCaller,
    WaitForDigits,
)
from callcenter.call.seams import Endpointing, Synthesizing, Transcribing
from callcenter.call.settings import VoiceSettings
from callcenter.call.speaking import Speaking
from callcenter.keypad import run_with_digits
from speech import EchoCanceller
from swarm import DigitsRequested, EscalationReason, Session, Speculation
from telephony import Call

log = logging.getLogger(__name__)

TAKE_BACK_S = 1.0  # for a cancelled reply to unwind before it is taken back


class Conversation:
    def __init__(
        self,
        call: Call,
        session: Session,
        endpointer: Endpointing,
        transcriber: Transcribing,
        synthesizer: Synthesizing,
        settings: VoiceSettings,
        *,
        domain_prompt: str | None = None,
        on_turn: Callable[[TurnTiming], None] | None = None,
        language_check: LanguageChecking | None = None,
        fillers_audio: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """`fillers_audio`: the acknowledgements' audio rendered at start-up (callcenter.acknowledgement)."""
        self.call, self.session, self.settings = call, session, settings
        self.on_turn = on_turn
        self.transcript = Transcript()
        self.disposition: Disposition = "completed"
        self._turn: asyncio.Task[None] | None = None
        self.speaking = Speaking(call, session, synthesizer, settings, self.transcript, fillers_audio)
        self._echo = EchoCanceller()
        self.rules = CallRules(settings, time.monotonic())  # greeting, re-prompts, keypad, hand-over, goodbye, drain
        self.keys = Dtmf(call, self.rules, lambda: self.speaking.playback.talking, self._act)
        self._finished = asyncio.Event()
        self.hearing = Hearing(
            self,
            endpointer,
            transcriber,
            settings,
            call_id=call.call_id,
            speculate=session.speculate,
            domain_prompt=domain_prompt,
            language_check=language_check,
        )
        self._answered: AnsweredWords | None = None  # what the running turn answers
        self._greeting: asyncio.Task[None] | None = None  # the turn that opens the call

    async def run(self, *, overflow: bool = False) -> str:
        """Serve the call until it ends; returns the disposition: completed, transferred, abandoned (the caller
        hung up before any turn, or stayed silent), or failed (no operator took an escalation, media stopped).
        An `overflow` call (the node is over its limits) is handed to the operator after the overload notice."""
        opening = self.rules.start(time.monotonic(), overflow=overflow)
        helpers = [asyncio.create_task(c) for c in (self._listen(), self.keys.listen(), self._watch())]
        try:
            self._act(opening)
            self._greeting = None if overflow else self._turn
            closed = asyncio.create_task(self.call.closed.wait())
            finished = asyncio.create_task(self._finished.wait())
            await asyncio.wait({closed, finished}, return_when=asyncio.FIRST_COMPLETED)
            closed.cancel(), finished.cancel()
        finally:
            mine = [*helpers, *([self._turn] if self._turn else [])]
            for task in mine:
                task.cancel()
            hearing = self.hearing.stop()
            if self.hearing.held is not None:
                self.transcript.add("caller", self.hearing.held.text)  # said, if never answered: the record keeps it
            tasks = [*mine, *hearing]
            await asyncio.gather(*tasks, return_exceptions=True)
            self.speaking.forget_unheard("call_ended")
            self._act(self.rules.call_ended())
            self.session.dispose()
        if self.call.end_reason == "transferred":
            self.disposition = "transferred"  # the call may end before transfer() has returned to us
        elif self.call.end_reason == "media_timeout":
            self.disposition = "failed"  # the caller's audio stopped reaching us
        elif self.disposition == "completed" and self.call.end_reason == "remote_hangup" and not self.transcript.turns:
            self.disposition = "abandoned"
        return self.disposition

    # --- the caller's side: what the hearing (callcenter.call.hearing) asks and tells -----------------------------

    async def _listen(self) -> None:
        async for frame in self.call.audio_in:
            self.hearing.feed(self._echo.process(frame, self.speaking.playback.sent(frame.size)))

    @property
    def closing(self) -> bool:
        return self.rules.closing

    @property
    def keypad_open(self) -> bool:
        return self.rules.keypad is not None

    @property
    def agent_paused(self) -> bool:
        return self.speaking.playback.paused

    @property
    def answering(self) -> bool:
        """A turn of the agent's is running (thinking, or saying what it has to say)."""
        return self._turn is not None and not self._turn.done()

    @property
    def turn_ended(self) -> bool:
        """The agent has had a turn and it has ended: False before its first turn (the greeting) and while one
        runs."""
        return self._turn is not None and self._turn.done()

    def agent_busy(self) -> bool:
        return (
            self.answering
            or self.rules.keypad is not None
            or self.rules.closing
            or self.speaking.playback.paused
            or self.speaking.playback.talking
        )

    def caller_started(self) -> None:
        self.rules.activity(time.monotonic())
        # A reply not yet heard waits too: an agent does not start talking over the caller.
        if not self.rules.closing and (
            self.speaking.playback.pause() or (self._answered and self.speaking.playback.hold())
        ):
            # Silent within the VAD's onset; whether it was an interruption, the words will tell.
            log.info(
                "event=agent_paused call=%s heard=%d/%d",
                self.call.call_id,
                self.speaking.playback.heard,
                self.speaking.playback.total,
            )

    def caller_stopped(self) -> None:
        self.rules.activity(time.monotonic())

    def resume_agent(self) -> None:
        self.speaking.playback.resume()

    def reply_outdated(self) -> None:
        if self.answering:
            self._interrupt("new_turn")

    def other_language(self, heard: Heard) -> None:
        assert heard.language is not None
        self.transcript.add("caller", heard.text)
        log.info("event=caller_language call=%s language=%s", self.call.call_id, heard.language.text)
        self.hand_to_person("caller_language")  # nothing is answered: a colleague may speak it

    def answer(self, said: CallerSaid) -> bool:
        text = said.words.text
        self._act(self.rules.spoke())  # the caller said it instead of typing it
        self.transcript.add("caller", text)
        if not said.confident:
            if not said.waited:
                log.info("event=low_confidence call=%s chars=%d", self.call.call_id, len(text))
                log.debug("event=low_confidence call=%s text=%r", self.call.call_id, text)
            self._act(self.rules.unclear_words())
            return False
        self.rules.understood()
        self._start_turn(self._reply(text, said.ended, said.timing, said.speculation))
        self._answered = AnsweredWords(said.words, self.transcript.lines[-1], said.timing, len(self.session.events))
        return True

    async def stop_agent(self) -> None:
        """The caller's words stop the agent. If they heard nothing of its reply, or only its first words,
        they went on with what it answers (a pause in their sentence was answered): the turn is taken back
        and those words wait to be heard with these (held words)."""
        answered, turn = self._answered, self._turn
        went_on = answered is not None and self.agent_so_far().went_on()
        self._interrupt("barge_in")
        if not went_on or answered is None or turn is None:
            return
        await asyncio.wait({turn}, timeout=TAKE_BACK_S)  # its last words are recorded before they are taken back
        # A turn still running (a tool that finishes what it began) stands: what it does may be written.
        if turn.done() and self.hearing.held is None and self.session.retract(answered.words.text, answered.since):
            self.transcript.lines = [line for line in self.transcript.lines if line is not answered.line]
            self.transcript.turns = [timing for timing in self.transcript.turns if timing is not answered.timing]
            self.hearing.take_back(answered.words)
            log.info("event=reply_taken_back call=%s", self.call.call_id)

    def agent_so_far(self) -> AgentSoFar:
        turn = self._turn
        return self.speaking.so_far(turn is not None and turn.done(), turn is not None and turn is self._greeting)

    def _interrupt(self, reason: str) -> None:
        """Stop the agent's turn and its playback now; the session and the record keep only what was heard."""
        self.speaking.forget_unheard(reason)
        self.speaking.playback.stop()
        self._answered = None
        if self._turn is not None and not self._turn.cancelling():
            self._turn.cancel()  # once: a second cancel would reach a tool the first lets finish

    def hand_to_person(self, reason: EscalationReason) -> bool:
        """Transfer the caller to the operator now (keypad 0, the supervisor's button); False when the call is
        already ending."""
        actions = self.rules.person(reason)
        self._act(actions)
        return bool(actions)

    def end_for_drain(self, goodbye: str) -> bool:
        """The node is going away: stop the agent, let the caller finish the sentence they are in (up to
        DRAIN_GRACE_S; what they say is not answered), say `goodbye`, hang up. False when already ending."""
        actions = self.rules.drain(goodbye)
        self._act(actions)
        return bool(actions)

    @property
    def drained(self) -> bool:
        """Ended by end_for_drain(): the node went away."""
        return self.rules.drained

    @property
    def state(self) -> str:
        """What the call is doing now, as the supervisor's page shows it."""
        if self.rules.closing:
            return "handing over" if self.session.escalated() else "ending"
        if self.rules.keypad is not None:
            return "keypad"
        if self.speaking.playback.talking:
            return "agent speaking"
        if self.hearing.transcribing or self.answering:
            return "thinking"
        return "listening"

    async def _watch(self) -> None:
        """The call rules' clock: re-prompts of a silent caller, the end of a call that stays silent or runs too
        long."""
        while not self.rules.clock_stopped:
            await asyncio.sleep(0.25)
            # A caller in the middle of a long sentence is not silent (seen: "Are you still there?" 8 s into one).
            speaking = self.hearing.caller_speaking
            busy = self.answering or self.speaking.playback.talking or self.hearing.transcribing or speaking
            self._act(self.rules.tick(time.monotonic(), busy))

    # --- what the call rules say to do ------------------------------------------------------------------------

    def _act(self, actions: list[Action]) -> None:
        """Do the call rules' actions now."""
        for action in actions:
            if isinstance(action, StartTurn):
                self._start_turn(self._run(action.steps))
            elif isinstance(action, Interrupt):
                self._interrupt(action.reason)
            elif isinstance(action, WaitForDigits):
                self.keys.wait(action.timeout_s)
            elif isinstance(action, Escalate):
                self.session.escalate(action.reason)
            else:
                self.keys.note(action)

    async def _run(self, steps: tuple[Step, ...]) -> None:
        """Do a turn's steps, one after the other."""
        for step in steps:
            if isinstance(step, Say):
                await self.speaking.prepared(step.text)
            elif isinstance(step, LetHear):
                self.speaking.playback.resume()  # what is said now is said to its end
                await self.call.wait_played()
            elif isinstance(step, EndCall):
                self.session.end_call(step.reason)
            elif isinstance(step, WaitForCaller):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.hearing.caller_quiet(), step.timeout_s)
            elif isinstance(step, RunDigits):
                await self._typed(step.request, step.digits)
            elif isinstance(step, Transfer):
                await self._transfer(step.target)
            elif isinstance(step, HangUp):
                await self._hang_up(step.disposition)
            elif isinstance(step, Escalate):
                self.session.escalate(step.reason)
            else:
                self.keys.note(step)

    # --- the agent's side -------------------------------------------------------------------------------------

    def _start_turn(self, work: Coroutine[Any, Any, None]) -> None:
        """A newer turn replaces the running one; what the caller has not heard of it yet is never said."""
        self._interrupt("new_turn")
        self.speaking.playback.reset()
        self._turn = asyncio.create_task(self._guarded(work))

    async def _guarded(self, work: Coroutine[Any, Any, None]) -> None:
        """A turn that fails still leaves the caller with something to hear, and the call going."""
        try:
            await work
        except Exception:
            log.exception("event=turn_failed call=%s closing=%s", self.call.call_id, self.rules.closing)
            if self.rules.closing:
                await self._hang_up("failed")
                return
            with contextlib.suppress(Exception):
                await self._run(self.rules.repeat())

    async def _reply(self, text: str, ended: float, timing: TurnTiming, speculation: Speculation | None = None) -> None:
        await self.speaking.reply(text, ended, timing, speculation, self.on_turn)
        await self._after_turn()

    async def _typed(self, request: DigitsRequested, digits: str) -> None:
        """The digits a tool asked for: the tool runs with them, and its answer is said."""
        self.transcript.add("caller", digits, via="keypad")
        say = await run_with_digits(self.session, request, digits)
        await self._run(self.rules.digits_answered(say))
        await self._after_turn()

    async def _after_turn(self) -> None:
        escalation = self.session.escalated()
        await self._run(
            self.rules.after_turn(
                escalation.reason if escalation else None,
                self.session.ended() is not None,
                self.session.digit_request(),
            )
        )

    async def _transfer(self, target: str) -> None:
        try:
            transferred = await self.call.transfer(target)
        except ValueError as error:  # a malformed operator target in the config
            log.error("event=transfer_impossible call=%s error=%s", self.call.call_id, error)
            transferred = False
        if transferred:
            self._finished.set()
        else:
            await self._run(self.rules.transfer_failed())

    async def _hang_up(self, disposition: Disposition) -> None:
        self.disposition = disposition
        await self.call.hangup()
        self._finished.set()
