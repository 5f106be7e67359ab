"""The wire format of a turn's events: what `voiceswarm chat --json` prints and the WebSocket endpoint sends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from swarm import AgentChanged, AssistantText, Event, ToolCalled


def turn_events(events: list[Event]) -> Iterator[dict[str, Any]]:
    """The events of one turn as plain dicts, one per hand-over, tool call or reply."""
    for event in events:
        if isinstance(event, AgentChanged):
            yield {"event": "agent_change", "from": event.previous, "to": event.agent}
        elif isinstance(event, ToolCalled):
            yield {
                "event": "tool_call",
                "agent": event.agent,
                "name": event.name,
                "arguments": event.arguments,
                "result": event.result,
            }
        elif isinstance(event, AssistantText):
            yield {"event": "reply", "agent": event.agent, "text": event.text}
