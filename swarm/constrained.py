"""Constrained decoding: the server may only produce "say this" or "call one of these tools with these arguments".

The reply is a JSON object with one key that a schema pins down (llama.cpp's server and vLLM through
`response_format`, Ollama through `format`): `{"say": "..."}`, or `{"<one of the agent's tools>": {...}}`
with the tool's own parameter schema as the value. The key is the choice, and it is the first thing the
model writes: it picks among "say" and the tools' own names in one step, where a `{"tool": NAME, ...}`
shape made it choose between "say" and "tool" without seeing any name. With this shape and the 1.5B prompts
(callcenter/agents.py; both changed together) Qwen2.5-Coder 1.5B's triage on 80 untouched sentences went from
75% to 91% right (benchmarks/triage_llm.py). The "say" string is extracted from the stream as it grows, so
the first sentence reaches the synthesizer before the reply is complete.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any

from swarm.messages import Message, ToolCall, ToolSpec
from swarm.text_protocol import to_text_protocol_messages
from swarm.toolcall_parse import extract_tool_calls

_SAY_START = re.compile(r'\s*\{\s*"say"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": " ", "r": " ", "t": " "}


def reply_schema(tools: Sequence[ToolSpec], *, say: bool = True) -> dict[str, Any]:
    """The JSON schema of every reply the agent may give; without `say` only its tool calls."""
    speech = {
        "type": "object",
        "properties": {"say": {"type": "string", "minLength": 1, "maxLength": 400}},
        "required": ["say"],
        "additionalProperties": False,
    }
    calls = [
        {
            "type": "object",
            "properties": {t.name: _closed(t.parameters)},
            "required": [t.name],
            "additionalProperties": False,
        }
        for t in tools
    ]
    if not calls:
        return speech
    return {"anyOf": [speech, *calls]} if say else {"anyOf": calls}


def _closed(parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameters with no room for invented keys (the grammar then cannot write them)."""
    schema = {k: v for k, v in parameters.items() if k != "title"}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def constrained_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system message that explains the two kinds of reply, with the exact shape of a call of each tool.

    Seen with Qwen2.5-Coder 1.5B: with each call written out (`{"navigate_to_refund": {}}`) triage picks a
    tool, with signatures only (`find_order(order_number?, product?)`) it talked instead; a sentence as the
    say placeholder was spoken word for word, so it is "..."."""
    lines = [f"{json.dumps({t.name: _example_arguments(t)})} : {t.description}" for t in tools]
    return (
        "Reply with one JSON object and nothing else.\n"
        'To speak to the caller: {"say": "..."}\n'
        "To use a tool, write its name as the key and its arguments as the value:\n" + "\n".join(lines)
    )


def _example_arguments(tool: ToolSpec) -> dict[str, Any]:
    """Placeholders for the shape only: "..." for text, 1 for numbers, false for flags."""
    placeholders = {"string": "...", "integer": 1, "number": 1, "boolean": False}
    properties = tool.parameters.get("properties", {})
    return {name: placeholders.get(_type_of(schema), "...") for name, schema in properties.items()}


def _type_of(schema: dict[str, Any]) -> str:
    if isinstance(schema.get("type"), str):
        return str(schema["type"])
    # Optional parameters come as anyOf [type, null].
    types = [t.get("type") for t in schema.get("anyOf", ()) if t.get("type") != "null"]
    return str(types[0]) if types else "string"


def render_reply_call(call: ToolCall) -> str:
    """A past tool call, as the model itself would have written it in this mode."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps({call.name: call.arguments}, ensure_ascii=False)


def render_reply_text(text: str) -> str:
    """Past speech as the model wrote it: every reply it sees of its own is the JSON it must write."""
    return json.dumps({"say": text}, ensure_ascii=False)


def to_constrained_messages(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # One prompt whatever the request forbids: a tool_required request differs only in its schema (the
    # grammar), so it still finds the agent's prompt in the server's cache.
    return to_text_protocol_messages(messages, tools, constrained_prompt(tools), render_reply_call, render_reply_text)


class SayStream:
    """Feeds the growing JSON reply; gives the new part of the "say" string each time, decoded."""

    def __init__(self) -> None:
        self.text = ""
        self._said = 0  # characters of the decoded say string already given out

    def feed(self, piece: str) -> str:
        self.text += piece
        value = _partial_say(self.text)
        if value is None or len(value) <= self._said:
            return ""
        new, self._said = value[self._said :], len(value)
        return new

    def finish(self, tool_names: Sequence[str]) -> tuple[str, tuple[ToolCall, ...]]:
        """(the spoken text, the calls) of the whole reply; a reply cut off by the token limit keeps what was said."""
        try:
            data = json.loads(self.text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("say"), str):
            return _spoken(data["say"]), ()
        if isinstance(data, dict) and len(data) == 1:
            ((name, arguments),) = data.items()
            if name in tool_names and isinstance(arguments, dict):
                return "", (ToolCall("call_0", name, arguments),)
        # A server that ignored the schema: the model may have written a call in any of the usual forms.
        found = extract_tool_calls(self.text, tool_names)
        if found is not None and found.calls:
            return "", found.calls
        return _spoken(_partial_say(self.text) or ""), ()


def _spoken(text: str) -> str:
    return " ".join(text.split())


def _partial_say(text: str) -> str | None:
    """The decoded prefix of the "say" string in a JSON reply still being written; None when it has none."""
    # The grammar lets whitespace in between; the value starts after the opening quote.
    start = _SAY_START.match(text)
    if start is None:
        return None
    compact, at = text, start.end()
    out: list[str] = []
    i = at
    while i < len(compact):
        char = compact[i]
        if char == '"':
            break
        if char != "\\":
            out.append(" " if char in "\n\r\t" else char)
            i += 1
            continue
        if i + 1 >= len(compact):
            break  # an escape cut in half: wait for the rest
        code = compact[i + 1]
        if code == "u":
            if i + 6 > len(compact):
                break
            with contextlib.suppress(ValueError):
                out.append(chr(int(compact[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(code, code))
        i += 2
    return "".join(out)
