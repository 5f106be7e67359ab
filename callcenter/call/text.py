"""The call rules on a channel without audio (the WebSocket, `voiceswarm chat`): the caller's messages and keys go to
the session, with the phone's rules around them.

The rules are the phone's own (callcenter.call.rules, driven here as callcenter.conversation drives them): the
greeting, re-prompts and the hang-up of a silent caller, the call's time limit, typed digits that run the tool which
asked for them (callcenter.keypad), 0 for a person, and the hand-over or the goodbye after a turn. Nothing waits
for audio: a prepared line is said at once (recorded in the session as the agent's), what was said is heard at
once, and a transfer always goes through (whoever holds the other end takes the caller over).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from callcenter.call.rules import (
    Action,
    CallRules,
    EndCall,
    Escalate,
    HangUp,
    RunDigits,
    Say,
    StartTurn,
    Step,
    Transfer,
    WaitForDigits,
)
from callcenter.call.settings import VoiceSettings
from callcenter.keypad import run_with_digits
from swarm import Session


class CallInText:
    """One call's rules driven in text. `now` is the driver's clock in seconds (time.monotonic() on a live
    channel, the caller's silences in a scripted one); `said` hears every line the agents say."""

    def __init__(
        self, session: Session, settings: VoiceSettings, now: float, *, said: Callable[[str], None] | None = None
    ) -> None:
        self.session = session
        self.rules = CallRules(settings, now)
        self.ended_by: str | None = None  # why the call is over: "transfer", "goodbye", "silence"
        self._said = said

    def start(self, now: float) -> None:
        """The call is answered: the greeting."""
        self.act_now(self.rules.start(now))

    async def say(self, text: str, now: float) -> str:
        """The caller's words, answered by the session; then the rest of the turn (hand-over, goodbye, keypad).
        Returns the reply."""
        self.spoke(now)
        reply = await self.session.complete(text)
        self.heard(reply)
        await self.run(self.after_turn())
        return reply

    def spoke(self, now: float) -> None:
        """The caller said something (an open keypad closes: they said it instead of typing it)."""
        self.rules.activity(now)
        self.act_now(self.rules.spoke())

    async def keys(self, keys: str, now: float) -> float | None:
        """Keys typed one after the other, each turn they start said to its end before the next key; the end of
        the string counts as the digit timeout. While a tool's digit request is pending the digits run that tool
        and its answer is said; otherwise 0 reaches a person and other keys are dropped. Returns how long the
        tool took (None: none ran)."""
        latency: float | None = None
        waiting = False  # for more digits
        for key in keys:
            actions = self.rules.key(key, now, agent_talking=False)
            waiting = any(isinstance(action, WaitForDigits) for action in actions)
            latency = await self.act(actions) or latency
        if waiting:
            latency = await self.act(self.rules.digits_due()) or latency
        return latency

    def tick(self, now: float) -> None:
        """The clock: re-prompts of a silent caller, the goodbye after them, the call's time limit."""
        self.act_now(self.rules.tick(now, busy=False))

    def after_turn(self) -> tuple[Step, ...]:
        escalation = self.session.escalated()
        return self.rules.after_turn(
            escalation.reason if escalation else None, self.session.ended() is not None, self.session.digit_request()
        )

    async def act(self, actions: list[Action]) -> float | None:
        """The call rules' actions; a turn runs to its end. Returns how long a tool took with typed digits."""
        latency = None
        for action in actions:
            if isinstance(action, StartTurn):
                latency = await self.run(action.steps) or latency
            else:
                self.act_now([action])
        return latency

    def act_now(self, actions: list[Action]) -> None:
        """Actions whose turns take no time (no typed digits to run)."""
        for action in actions:
            if isinstance(action, StartTurn):
                for step in action.steps:
                    self.step(step)
            elif isinstance(action, Escalate):
                self.session.escalate(action.reason)
            # Interrupt: nobody is talking in text; WaitForDigits: the end of the keys is the pause (keys);
            # the keypad's notes: its state is the rules'.

    async def run(self, steps: tuple[Step, ...]) -> float | None:
        latency = None
        for step in steps:
            if isinstance(step, RunDigits):
                start = time.monotonic()
                say = await run_with_digits(self.session, step.request, step.digits)
                latency = time.monotonic() - start
                await self.run(self.rules.digits_answered(say))
                await self.run(self.after_turn())
            else:
                self.step(step)
        return latency

    def step(self, step: Step) -> None:
        """A turn's step that takes no time in text (a prepared line, the call's end, a transfer)."""
        if isinstance(step, Say):
            self.session.emit(step.text)
            self.heard(step.text)
        elif isinstance(step, Escalate):
            self.session.escalate(step.reason)
        elif isinstance(step, EndCall):
            self.session.end_call(step.reason)
        elif isinstance(step, Transfer):
            self.ended_by = "transfer"
        elif isinstance(step, HangUp):
            self.ended_by = (
                "transfer" if self.session.escalated() else "silence" if step.disposition == "abandoned" else "goodbye"
            )
        elif isinstance(step, RunDigits):
            raise TypeError("typed digits run in an async turn (keys)")
        # LetHear, WaitForCaller: nothing to wait for in text; the keypad's notes: its state is the rules'.

    def heard(self, line: str) -> None:
        """The agents said `line` (a reply, or a prepared line)."""
        if line and self._said is not None:
            self._said(line)
