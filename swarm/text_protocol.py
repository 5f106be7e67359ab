"""The `<tool_call>` text protocol, for a model or server without native tool calls (any provider).

The tools are described in a system message; the model writes `<tool_call>{...}</tool_call>` blocks;
results come back as user messages. Replies stream with every block (and anything that may become one)
held back, so a call is never spoken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from swarm.messages import Message, ToolCall, ToolSpec
from swarm.toolcall_parse import TOOL_CALL_BLOCK, parse_call_body

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_COMPLETE_BLOCK = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)


def tool_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system message that teaches a model without native tool calls how to call ours."""
    listing = "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}, ensure_ascii=False)
        for t in tools
    )
    return (
        "You can call these tools, each described as JSON with its parameters' JSON schema:\n"
        f"<tools>\n{listing}\n</tools>\n"
        "To call a tool, write a block like this, with arguments as a JSON object matching the schema:\n"
        '<tool_call>{"name": "tool_name", "arguments": {"parameter": "value"}}</tool_call>\n'
        "Write one block per call; you may write several. Each result comes back to you as "
        '<tool_response name="tool_name">result</tool_response>. '
        "When no tool is needed, answer in plain text without any block."
    )


def render_tool_call(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        # Show the model its own malformed block, so the error that follows makes sense to it.
        return f"{_OPEN}{call.raw_arguments}{_CLOSE}"
    return f"{_OPEN}{json.dumps({'name': call.name, 'arguments': call.arguments}, ensure_ascii=False)}{_CLOSE}"


def render_tool_response(name: str, content: str) -> str:
    return f'<tool_response name="{name}">\n{content}\n</tool_response>'


def to_text_protocol_messages(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    instructions: str | None = None,
    render_call: Callable[[ToolCall], str] | None = None,
    render_text: Callable[[str], str] | None = None,
) -> list[dict[str, Any]]:
    """Chat messages for a model that knows only system, user and assistant text.

    Constrained decoding describes the tools and writes past replies its own way: `instructions`,
    `render_call` and `render_text` replace the tool prompt, the `<tool_call>` block and plain speech.
    """
    render = render_call or render_tool_call
    out: list[dict[str, Any]] = []
    last_was_tool = False
    for m in messages:
        if m.role == "tool":
            text = render_tool_response(m.tool_name or "", m.content)
            if last_was_tool:  # several results of one turn go back as one user message
                out[-1]["content"] += "\n" + text
            else:
                out.append({"role": "user", "content": text})
            last_was_tool = True
            continue
        content = m.content
        if m.role == "assistant" and render_text is not None and content and not m.tool_calls:
            content = render_text(content)
        if m.role == "assistant" and m.tool_calls:
            content = "\n".join([content, *map(render, m.tool_calls)]).lstrip("\n")
        out.append({"role": m.role, "content": content})
        last_was_tool = False
    if tools:
        # Right after the agent's own system prompt: the instructions stay early and in a stable place,
        # which keeps the server's prompt cache useful from one turn to the next.
        at = next((i for i, item in enumerate(out) if item["role"] != "system"), len(out))
        out.insert(at, {"role": "system", "content": instructions or tool_prompt(tools)})
    return out


def parse_tool_calls(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """Split a reply into its text outside `<tool_call>` blocks and the calls the blocks hold."""
    calls = tuple(parse_call_body(body, f"call_{n}") for n, body in enumerate(TOOL_CALL_BLOCK.findall(text)))
    return TOOL_CALL_BLOCK.sub("", text).strip(), calls


def visible_text(text: str, final: bool = False) -> str:
    """The part of a growing reply that may be spoken: never anything that is or may become a block.

    It only ever grows as `text` grows, so a stream can send the new tail as a Delta.
    """
    shown = _COMPLETE_BLOCK.sub("", text)
    if (start := shown.find(_OPEN)) >= 0:
        return shown[:start]
    if not final:
        for size in range(min(len(_OPEN) - 1, len(shown)), 0, -1):
            if _OPEN.startswith(shown[-size:]):
                return shown[:-size]
    return shown


class TextProtocolStream:
    """Feeds a growing reply; gives the new speakable tail each time, then the Completion's parts."""

    def __init__(self) -> None:
        self.text = ""
        self._sent = ""

    def feed(self, piece: str) -> str:
        self.text += piece
        return self._advance(visible_text(self.text))

    def finish(self) -> tuple[str, str, tuple[ToolCall, ...]]:
        """(the last speakable tail, the spoken text, the calls); a trailing "<" is text after all."""
        tail = self._advance(visible_text(self.text, final=True))
        spoken, calls = parse_tool_calls(self.text)
        return tail, spoken, calls

    def _advance(self, visible: str) -> str:
        if len(visible) <= len(self._sent):
            return ""
        new, self._sent = visible[len(self._sent) :], visible
        return new
