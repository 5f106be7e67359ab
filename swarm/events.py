"""Every step of a session as a typed event: the audit trail and what a resumed session replays."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True)
class UserText(Event):
    kind: ClassVar[str] = "user_text"
    text: str


@dataclass(frozen=True)
class AssistantText(Event):
    kind: ClassVar[str] = "assistant_text"
    agent: str
    text: str


@dataclass(frozen=True)
class SystemText(Event):
    kind: ClassVar[str] = "system_text"
    agent: str
    text: str


@dataclass(frozen=True)
class ToolCalled(Event):
    kind: ClassVar[str] = "tool_call"
    agent: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str


@dataclass(frozen=True)
class AgentChanged(Event):
    kind: ClassVar[str] = "agent_change"
    previous: str
    agent: str
    # The navigation stack after the change, so a resumed session can still go back.
    stack: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ValidationFailed(Event):
    kind: ClassVar[str] = "validation_error"
    agent: str
    errors: list[str]


@dataclass(frozen=True)
class Rescued(Event):
    kind: ClassVar[str] = "rescue"
    agent: str
    # "flush" (completed again on a clean view), "placeholder" (a canned line was said), "provider_error", or
    # "read_back_first" (a write the caller had not agreed to was run as its read-back: swarm.checks.asked_first), or
    # "read_back_again" (a reply said a write done that no tool made: the read-back the caller answered, again).
    stage: str
    detail: str = ""


@dataclass(frozen=True)
class ToolCallRepaired(Event):
    """The model wrote a tool call as text (`form`, e.g. "json", "prose"); it was taken as the call `name`."""

    kind: ClassVar[str] = "tool_call_repaired"
    agent: str
    form: str
    name: str


@dataclass(frozen=True)
class Flushed(Event):
    kind: ClassVar[str] = "flush"
    agent: str


# --- control: what the channel (phone, chat, WebSocket) must do, kept in the log so a resumed session knows it ---

# Why the caller goes to a person. "caller_asked": an agent's transfer tool (which said so itself);
# "caller_pressed_0" and "supervisor": from outside the conversation, so the voice layer announces the hand-over;
# "provider_error": the model failed (the apology was said); "overload": the node is over its admission limits;
# "verification_failed": the caller gave a wrong security answer too often (the tool said so itself).
# "backend_unavailable": the system behind a tool did not answer (or not usably); "staff_only": what the caller asks
# for is done by a person in that system (an order system without a returns API); "not_understood": the caller
# answered an agent's question of a choice three times without choosing (the tool said so itself); "caller_unclear":
# the caller's words were unclear twice in a row (a language the check missed, a bad line).
EscalationReason = Literal[
    "caller_asked",
    "caller_pressed_0",
    "supervisor",
    "provider_error",
    "overload",
    "caller_language",
    "verification_failed",
    "backend_unavailable",
    "staff_only",
    "not_understood",
    "caller_unclear",
]
# Why the call ends. "goodbye": an agent ended it (its end-call tool); the others are the voice layer's own:
# "drained" (the node is going away), "caller_silent", "max_duration", "no_operator" (an escalation nobody took).
EndReason = Literal["goodbye", "drained", "caller_silent", "max_duration", "no_operator"]


@dataclass(frozen=True)
class Escalated(Event):
    """The caller must reach a person: the voice layer transfers the call once what was said is played."""

    kind: ClassVar[str] = "escalation"
    reason: EscalationReason
    detail: str = ""

    @property
    def text(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


@dataclass(frozen=True)
class CallEnded(Event):
    """The conversation is over: the voice layer hangs up once the goodbye is played; a text channel stops."""

    kind: ClassVar[str] = "call_end"
    reason: EndReason
    detail: str = ""

    @property
    def text(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


@dataclass(frozen=True)
class DigitsRequested(Event):
    """A tool asks for digits on the keypad: run `tool` again with them as `argument` (and `arguments` as they
    were), once `max_digits` are typed, # is pressed, or the caller pauses. Recorded after that tool's result."""

    kind: ClassVar[str] = "digits_request"
    agent: str
    tool: str
    argument: str
    max_digits: int
    arguments: dict[str, Any] = field(default_factory=dict)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        UserText,
        AssistantText,
        SystemText,
        ToolCalled,
        AgentChanged,
        ValidationFailed,
        Rescued,
        ToolCallRepaired,
        Flushed,
        Escalated,
        CallEnded,
        DigitsRequested,
    )
}


def event_from_dict(data: dict[str, Any]) -> Event:
    cls = EVENT_TYPES.get(data.get("kind", ""))
    if cls is None:
        raise ValueError(f"unknown event kind {data.get('kind')!r}")
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


def events_to_json(events: list[Event]) -> str:
    return json.dumps([e.to_dict() for e in events], ensure_ascii=False)


def events_from_json(text: str) -> list[Event]:
    return [event_from_dict(item) for item in json.loads(text)]
