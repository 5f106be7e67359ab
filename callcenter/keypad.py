"""The keypad as an explicit state: a tool asks for digits, the voice layer collects them and runs the tool.

A tool that wants digits (find_order wants an order number it could not find) puts `keypad_request(...)`
under "keypad" in its result. The result is in the session's event log, so the request is too: a
replayed session asks for the same digits. Outside such a request the keypad means only one thing:
0 reaches a person. Deciding from the agent's words instead ("number", "order") made every order
confirmation ("The order number is ...") swallow the 0 (issue 12).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from swarm.events import ToolCalled, UserText
from swarm.session import Session
from swarm.tools import ToolContext, result_text

KEY = "keypad"  # where a tool result carries its request


def keypad_request(tool: str, argument: str, max_digits: int, **arguments: Any) -> dict[str, Any]:
    """What a tool puts under "keypad" in its result: run `tool` again with the typed digits as `argument`
    (and `arguments` as they were), once `max_digits` are typed, # is pressed, or the caller pauses."""
    return {"tool": tool, "argument": argument, "max_digits": max_digits, "arguments": arguments}


@dataclass(frozen=True)
class DigitRequest:
    tool: str
    argument: str
    max_digits: int
    arguments: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Any) -> DigitRequest | None:
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("tool"), str)
            or not isinstance(value.get("argument"), str)
        ):
            return None
        max_digits = value.get("max_digits")
        arguments = value.get("arguments") or {}
        if not isinstance(max_digits, int) or max_digits < 1 or not isinstance(arguments, dict):
            return None
        return cls(value["tool"], value["argument"], max_digits, arguments)


def pending_request(session: Session) -> DigitRequest | None:
    """The digit request of the last tool the agents ran since the caller last spoke or typed, if any."""
    for event in reversed(session.events):
        if isinstance(event, UserText):
            return None
        if isinstance(event, ToolCalled):
            try:
                result = json.loads(event.result)
            except ValueError:
                return None
            return DigitRequest.of(result.get(KEY)) if isinstance(result, dict) else None
    return None


@dataclass
class Keypad:
    """The digits typed for one request."""

    request: DigitRequest
    digits: str = ""

    def press(self, key: str) -> bool:
        """Take one key; True when the digits are complete (# or max_digits). * starts again."""
        if key == "#":
            return True
        if key == "*":
            self.digits = ""
        elif key.isdigit():
            self.digits += key
        return len(self.digits) >= self.request.max_digits


async def run_with_digits(session: Session, request: DigitRequest, digits: str) -> str | None:
    """Run the requesting tool with the digits as its input and record the call as the agent's own;
    returns the result's "say" line (None: the tool is gone, refused the digits, or has nothing to say).

    The typed digits become the tool's argument, never text for the model: a model reading "4 2 1 7"
    back can get it wrong, and the tool already knows what to say."""
    agent = session.registry.agents[session.get_agent_name()]
    if request.tool not in agent.tools:  # the caller went elsewhere meanwhile
        return None
    tool = session.registry.tools[request.tool]
    arguments = {**request.arguments, request.argument: digits}
    context = ToolContext(session.client_id, agent.name, session, session.metadata, session.session_id)
    if tool.errors(arguments, context):
        return None
    result = await tool.call(arguments, context)
    # The typed digits are what the caller said this turn: the model's history shows them before the result.
    session.commit_user_message(f"(typed on the keypad) {' '.join(digits)}")
    session.commit_tool_output(f"keypad-{uuid.uuid4().hex[:8]}", tool.name, result_text(result), arguments)
    say = result.get("say") if isinstance(result, dict) else None
    return say if isinstance(say, str) and say else None
