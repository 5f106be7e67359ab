"""A phone call in text: the caller's turns go straight to the session, with the phone's call rules around them.

The call rules are the phone's own, driven as the WebSocket channel drives them (callcenter.call.text): the
greeting, typed digits run the tool that asked for them (callcenter.keypad), 0 for a person, re-prompts and the
hang-up of a silent caller, the call's time limit, and the hand-over or the goodbye after a turn. The call's clock
is the caller's silences: a turn takes no time. Nothing waits for audio, and a transfer always goes through.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from callcenter.call.rules import CallRules
from callcenter.call.settings import VoiceSettings
from callcenter.call.text import CallInText
from callcenter.errors import CallCenterError
from callcenter.testbed import checks
from swarm import Event, Session


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


class CallOver(CallCenterError):
    """The caller tried to go on after the call ended (a transfer, a goodbye, the silence hang-up)."""


class TextCall:
    def __init__(self, session: Session, settings: VoiceSettings | None = None, *, greet: bool = True) -> None:
        self.session = session
        self.settings = settings or VoiceSettings()
        self.transcript: list[tuple[str, str]] = []
        self._now = 0.0  # the call's clock, in seconds of the caller's silences
        self._said: list[str] = []  # what the agents said since the caller last did something
        self._last_reply = ""
        self.call = CallInText(session, self.settings, self._now, said=self._heard)
        if greet:
            self.call.start(self._now)

    @property
    def rules(self) -> CallRules:
        return self.call.rules

    @property
    def ended_by(self) -> str | None:
        """Why the call is over: "transfer", "goodbye", "silence"."""
        return self.call.ended_by

    @ended_by.setter
    def ended_by(self, why: str | None) -> None:
        self.call.ended_by = why

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
        self.call.spoke(self._now)
        start = time.monotonic()
        reply = await self.session.complete(text)
        latency = time.monotonic() - start
        self.call.heard(reply)
        await self.call.run(self.call.after_turn())
        return self._result(seen, latency)

    async def dtmf(self, keys: str) -> TurnResult:
        """Keys typed one after the other (CallInText.keys): the phone's keypad rules."""
        self._check_open()
        self.transcript.append(("caller", f"<dtmf {keys}>"))
        seen = self._caller_acts()
        return self._result(seen, await self.call.keys(keys, self._now))

    def silence(self, seconds: float) -> TurnResult:
        """The caller says nothing for `seconds`: the call rules' clock runs (re-prompts every reprompt_after_s,
        then the goodbye and the hang-up; the call's time limit)."""
        self._check_open()
        self.transcript.append(("caller", f"<silence {seconds:g} s>"))
        seen = self._caller_acts()
        end = self._now + seconds
        while self.ended_by is None and (due := self.rules.due()) is not None and due <= end:
            self._now = due
            self.call.tick(self._now)
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

    def _heard(self, reply: str) -> None:
        self._said.append(reply)
        self.transcript.append((self.session.get_agent_name(), reply))

    def _check_open(self) -> None:
        if self.ended_by is not None:
            raise CallOver(f"the call had already ended ({self.ended_by})")
