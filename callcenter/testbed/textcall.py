"""A phone call in text: the caller's turns go straight to the session, with the phone's rules around them.

What the voice loop (callcenter.conversation) does besides speech is kept: the greeting, typed digits run
the tool that asked for them (callcenter.keypad), 0 for a person, re-prompts and the hang-up of a silent
caller, and the call's end after a transfer or a goodbye.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from callcenter.conversation import VoiceSettings
from callcenter.keypad import Keypad, run_with_digits
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
        self.transcript: list[tuple[str, str]] = []
        self.ended_by: str | None = None  # why the call is over: "transfer", "goodbye", "silence"
        self._silent_s = 0.0
        self._reprompts = 0
        self._last_reply = ""
        if greet:
            self._emit(self.settings.greeting)

    @property
    def events(self) -> list[Event]:
        return self.session.events

    @property
    def last_reply(self) -> str:
        """What the agents said since the caller last did something."""
        return self._last_reply

    async def say(self, text: str) -> TurnResult:
        self._check_open()
        self._silent_s, self._reprompts = 0.0, 0
        self.transcript.append(("caller", text))
        seen = len(self.events)
        start = time.monotonic()
        reply = await self.session.complete(text)
        latency = time.monotonic() - start
        self._heard(reply)
        self._after_turn()
        return TurnResult(reply, self.events[seen:], latency)

    async def dtmf(self, keys: str) -> TurnResult:
        """Keys typed in one go; the end of the string counts as the digit timeout.

        As on the phone (callcenter.keypad): while a tool's digit request is pending, the digits run that tool
        and its answer is said; otherwise 0 reaches a person and other keys are dropped."""
        self._check_open()
        self.transcript.append(("caller", f"<dtmf {keys}>"))
        seen = len(self.events)
        request = self.session.digit_request()
        if request is not None:
            keypad = Keypad(request)
            for key in keys:
                if keypad.press(key):
                    break
            if keypad.digits:
                self._silent_s, self._reprompts = 0.0, 0
                start = time.monotonic()
                say = await run_with_digits(self.session, request, keypad.digits)
                latency = time.monotonic() - start
                reply = self._emit(say or self.settings.digits_not_taken)
                self._after_turn()
                return TurnResult(reply, self.events[seen:], latency)
        elif keys.startswith("0"):
            self.session.escalate("caller_pressed_0")
            self.ended_by = "transfer"
            return TurnResult(self._emit(self.settings.handover), self.events[seen:], None)
        return TurnResult("", [], None)  # keys nobody listens to are dropped, as on the phone

    def silence(self, seconds: float) -> TurnResult:
        """The caller says nothing: re-prompts every reprompt_after_s, then the goodbye and the hang-up."""
        self._check_open()
        self.transcript.append(("caller", f"<silence {seconds:g} s>"))
        seen = len(self.events)
        self._silent_s += seconds
        said: list[str] = []
        while self._silent_s >= self.settings.reprompt_after_s and self.ended_by is None:
            self._silent_s -= self.settings.reprompt_after_s
            self._reprompts += 1
            if self._reprompts > self.settings.reprompts_before_hangup:
                said.append(self._emit(self.settings.silence_goodbye))
                self.ended_by = "silence"
            else:
                said.append(self._emit(self.settings.reprompt))
        return TurnResult(" ".join(said), self.events[seen:], None)

    @property
    def transferred(self) -> bool:
        return self.session.escalated() is not None

    def _emit(self, text: str) -> str:
        self.session.emit(text)
        self._heard(text)
        return text

    def _heard(self, reply: str) -> None:
        self._last_reply = reply
        if reply:
            self.transcript.append((self.session.get_agent_name(), reply))

    def _after_turn(self) -> None:
        if self.session.escalated():
            self.ended_by = "transfer"
        elif self.session.ended():
            self.ended_by = "goodbye"

    def _check_open(self) -> None:
        if self.ended_by is not None:
            raise CallOver(f"the call had already ended ({self.ended_by})")
