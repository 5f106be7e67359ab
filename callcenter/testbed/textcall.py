"""A phone call in text: the caller's turns go straight to the session, with the phone's call rules around them.

The call rules are the phone's own (callcenter.call.rules, driven here as callcenter.conversation drives them): the
greeting, typed digits run the tool that asked for them (callcenter.keypad), 0 for a person, re-prompts and the
hang-up of a silent caller, the call's time limit, and the hand-over or the goodbye after a turn. The call's clock
is the caller's silences: a turn takes no time. Nothing waits for audio, and a transfer always goes through.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

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
from callcenter.testbed import checks
from swarm.events import Event
from swarm.session import Session


class Expect:
    """Assertions on one turn's events (or a whole call's), each raising AssertionError with what was seen."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events

    def _hold(self, problem: str | None) -> Expect:
        if problem is not None:
            raise AssertionError(problem)
        return self

    def handoff(self, *agents: str) -> Expect:
        return self._hold(checks.check_handoffs(self.events, agents))

    def no_handoff(self) -> Expect:
        return self._hold(checks.check_no_handoff(self.events))

    def called(self, tool: str, **arguments: object) -> Expect:
        return self._hold(checks.check_called(self.events, tool, arguments))

    def not_called(self, tool: str) -> Expect:
        return self._hold(checks.check_not_called(self.events, tool))

    def says(self, regex: str) -> Expect:
        return self._hold(checks.check_says(self.events, regex))

    def never_says(self, regex: str) -> Expect:
        return self._hold(checks.check_never_says(self.events, regex))


@dataclass
class TurnResult:
    reply: str  # everything the agents said in this turn
    events: list[Event]
    latency_s: float | None  # None: the model was not asked (silence, digits ignored)
    expect: Expect = field(init=False)

    def __post_init__(self) -> None:
        self.expect = Expect(self.events)


class CallOver(Exception):
    """The caller tried to go on after the call ended (a transfer, a goodbye, the silence hang-up)."""


class TextCall:
    def __init__(self, session: Session, settings: VoiceSettings | None = None, *, greet: bool = True) -> None:
        self.session = session
        self.settings = settings or VoiceSettings()
        self.rules = CallRules(self.settings, 0.0)
        self.transcript: list[tuple[str, str]] = []
        self.ended_by: str | None = None  # why the call is over: "transfer", "goodbye", "silence"
        self._now = 0.0  # the call's clock, in seconds of the caller's silences
        self._said: list[str] = []  # what the agents said since the caller last did something
        self._last_reply = ""
        if greet:
            self._act_now(self.rules.start(self._now))

    @property
    def events(self) -> list[Event]:
        return self.session.events

    @property
    def last_reply(self) -> str:
        """What the agents said since the caller last did something."""
        return self._last_reply

    async def say(self, text: str) -> TurnResult:
        self._check_open()
        self.transcript.append(("caller", text))
        seen = self._caller_acts()
        self.rules.activity(self._now)
        self._act_now(self.rules.spoke())
        start = time.monotonic()
        reply = await self.session.complete(text)
        latency = time.monotonic() - start
        self._heard(reply)
        await self._run(self._after_turn())
        return self._result(seen, latency)

    async def dtmf(self, keys: str) -> TurnResult:
        """Keys typed one after the other, each turn they start said to its end before the next key; the end of
        the string counts as the digit timeout. The phone's rules (callcenter.call.rules): while a tool's digit
        request is pending, the digits run that tool and its answer is said; otherwise 0 reaches a person and
        other keys are dropped."""
        self._check_open()
        self.transcript.append(("caller", f"<dtmf {keys}>"))
        seen = self._caller_acts()
        latency: float | None = None
        waiting = False  # for more digits
        for key in keys:
            actions = self.rules.key(key, self._now, agent_talking=False)
            waiting = any(isinstance(action, WaitForDigits) for action in actions)
            latency = await self._act(actions) or latency
        if waiting:
            latency = await self._act(self.rules.digits_due()) or latency
        return self._result(seen, latency)

    def silence(self, seconds: float) -> TurnResult:
        """The caller says nothing for `seconds`: the call rules' clock runs (re-prompts every reprompt_after_s,
        then the goodbye and the hang-up; the call's time limit)."""
        self._check_open()
        self.transcript.append(("caller", f"<silence {seconds:g} s>"))
        seen = self._caller_acts()
        end = self._now + seconds
        while self.ended_by is None and (due := self.rules.due()) is not None and due <= end:
            self._now = due
            self._act_now(self.rules.tick(self._now, busy=False))
        self._now = end
        result = self._result(seen, None)
        return TurnResult(result.reply, result.events, None)

    @property
    def transferred(self) -> bool:
        return self.session.escalated() is not None

    def _caller_acts(self) -> int:
        """The caller does something: what the agents say from here is the reply to it."""
        self._said = []
        return len(self.events)

    def _result(self, seen: int, latency: float | None) -> TurnResult:
        self._last_reply = " ".join(self._said)
        return TurnResult(self._last_reply, self.events[seen:], latency)

    def _after_turn(self) -> tuple[Step, ...]:
        escalation = self.session.escalated()
        return self.rules.after_turn(
            escalation.reason if escalation else None, self.session.ended() is not None, self.session.digit_request()
        )

    async def _act(self, actions: list[Action]) -> float | None:
        """The call rules' actions; a turn runs to its end. Returns how long a tool took with typed digits."""
        latency = None
        for action in actions:
            if isinstance(action, StartTurn):
                latency = await self._run(action.steps) or latency
            else:
                self._act_now([action])
        return latency

    def _act_now(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, StartTurn):
                for step in action.steps:
                    self._step(step)
            elif isinstance(action, Escalate):
                self.session.escalate(action.reason)
            # Interrupt: nobody is talking in text; WaitForDigits: the end of the keys is the pause (dtmf);
            # the keypad's notes: its state is the rules'.

    async def _run(self, steps: tuple[Step, ...]) -> float | None:
        latency = None
        for step in steps:
            if isinstance(step, RunDigits):
                start = time.monotonic()
                say = await run_with_digits(self.session, step.request, step.digits)
                latency = time.monotonic() - start
                await self._run(self.rules.digits_answered(say))
                await self._run(self._after_turn())
            else:
                self._step(step)
        return latency

    def _step(self, step: Step) -> None:
        """A turn's step that takes no time in text (a prepared line, the call's end, a transfer)."""
        if isinstance(step, Say):
            self.session.emit(step.text)
            self._heard(step.text)
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
            raise TypeError("typed digits run in an async turn (dtmf)")
        # LetHear, WaitForCaller: nothing to wait for in text; the keypad's notes: its state is the rules'.

    def _heard(self, reply: str) -> None:
        if reply:
            self._said.append(reply)
            self.transcript.append((self.session.get_agent_name(), reply))

    def _check_open(self) -> None:
        if self.ended_by is not None:
            raise CallOver(f"the call had already ended ({self.ended_by})")
