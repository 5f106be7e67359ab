"""Every step of a session as a typed event: the audit trail and what a resumed session replays."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar


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
    # "flush" (completed again on a clean view), "placeholder" (a canned line was said) or "provider_error".
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
