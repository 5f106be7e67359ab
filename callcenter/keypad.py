"""The keypad as an explicit state: a tool asks for digits, the voice layer collects them and runs the tool.

A tool that wants digits (find_order wants an order number it could not find) calls
`context.request_digits(...)`; the session records the request after the tool's result, as a
DigitsRequested event (swarm.events), so a replayed session asks for the same digits. Outside such a
request the keypad means only one thing: 0 reaches a person. Deciding from the agent's words instead
("number", "order") made every order confirmation ("The order number is ...") swallow the 0 (issue 12).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from swarm import DigitsRequested, Session, ToolContext, result_text


@dataclass
class Keypad:
    """The digits typed for one request."""

    request: DigitsRequested
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


async def run_with_digits(session: Session, request: DigitsRequested, digits: str) -> str | None:
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
    # The typed digits are what the caller said this turn: the model's history shows them before the result,
    # and the tool finds them there (an order number nobody said or typed is a model's invention).
    session.commit_user_message(f"(typed on the keypad) {' '.join(digits)}")
    result = await tool.call(arguments, context)
    call_id = f"keypad-{uuid.uuid4().hex[:8]}"
    session.commit_tool_output(call_id, tool.name, result_text(result), arguments, context.requests)
    say = result.get("say") if isinstance(result, dict) else None
    return say if isinstance(say, str) and say else None
