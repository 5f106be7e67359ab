"""Tool calls taken as small models write them, when they write them as text instead of a proper call.

Measured with Qwen2.5-Coder 0.5B/1.5B behind llama.cpp's server: a bare `{"name": ..., "arguments": ...}`
as the whole reply, the same with doubled braces (copied from a broken chat template) or inside markdown
fences, Hermes/Qwen `<tool_call>` blocks, a `<tool_response name="...">` copied from our own prompt,
`functions.NAME:` and prose that names the tool ("please call navigate_to_refund").

Only names are recognised here; the session still validates every call (tool known to the active agent,
arguments against the schema), so a wrong guess becomes feedback for the model, never an action.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from swarm.messages import ToolCall

# An unclosed block runs to the end of the reply: small models often forget the closing tag.
TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_TOOL_RESPONSE = re.compile(r"<tool_response(?:\s+name=\"([^\"]*)\")?\s*>(.*?)(?:</tool_response>|\Z)", re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)(?:```|\Z)", re.DOTALL)
_FUNCTIONS = re.compile(r"\bfunctions\.([A-Za-z_]\w*)\s*:?")
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
# A snake_case identifier: how every tool is named, and never how a person speaks.
IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


@dataclass(frozen=True)
class Extraction:
    """What was found in a reply that was not a proper tool call."""

    # Which form the model used, for the session's log and the benchmarks.
    form: str
    calls: tuple[ToolCall, ...] = ()
    # Why nothing could be taken although the reply looks like a call (fed back to the model).
    errors: tuple[str, ...] = ()


def extract_tool_calls(text: str, tool_names: Iterable[str]) -> Extraction | None:
    """The tool calls written as text in `text`, or None when it reads as plain speech.

    `tool_names` are the active agent's tools: prose counts as a call only when it names one of them.
    """
    names = frozenset(tool_names)
    if TOOL_CALL_BLOCK.search(text):
        return Extraction(
            "tool_call_tag", tuple(parse_call_body(b, f"call_{n}") for n, b in enumerate(TOOL_CALL_BLOCK.findall(text)))
        )
    if responses := _TOOL_RESPONSE.findall(text):
        return _from_tool_responses(responses, names)
    if fenced := [b for b in _FENCE.findall(text) if b.strip().startswith("{")]:
        return _from_json_texts("fenced_json", fenced)
    if match := _FUNCTIONS.search(text):
        rest = text[match.end() :]
        arguments = next(_json_objects(rest), {})
        return Extraction("functions_prefix", (ToolCall("call_0", match.group(1), _arguments_of(arguments)),))
    if "{" in text:
        form = "doubled_braces" if "{{" in text else "json"
        objects = list(_json_objects(_undouble(text))) if form == "doubled_braces" else []
        found = _from_objects(form, objects or list(_json_objects(text)))
        if found.calls or '"name"' not in text:
            return found
        # JSON-like but broken: keep the name so the error the model sees names its own call.
        name = _NAME.search(text)
        return Extraction(
            "broken_json", (ToolCall("call_0", name.group(1) if name else "", {}, raw_arguments=text.strip()[:500]),)
        )
    return _from_prose(text, names)


def parse_call_body(body: str, call_id: str) -> ToolCall:
    """One `{"name": ..., "arguments": ...}` body; malformed ones keep the raw text for the model to see."""
    raw = body.strip()
    try:
        data = json.loads(_undouble(raw) if raw.startswith("{{") else raw)
    except json.JSONDecodeError:
        data = None
    call = _call_from_object(data, call_id) if isinstance(data, dict) else None
    if call is None:
        found = _NAME.search(raw)
        return ToolCall(call_id, found.group(1) if found else "", {}, raw_arguments=raw)
    return call


def _from_tool_responses(responses: list[tuple[str, str]], names: frozenset[str]) -> Extraction:
    # The model copied the result tag: its name is the tool it meant, its body (if JSON) the arguments.
    calls = []
    for n, (name, body) in enumerate(responses):
        if not name:
            inner = next(_json_objects(body), None)
            call = _call_from_object(inner, f"call_{n}") if inner else None
            if call is None:
                return Extraction(
                    "tool_response_tag",
                    errors=(
                        "the reply copies a <tool_response> tag: call a tool properly, or answer in plain sentences",
                    ),
                )
            calls.append(call)
            continue
        arguments = next(_json_objects(body), {})
        calls.append(ToolCall(f"call_{n}", name, _arguments_of(arguments)))
    return Extraction("tool_response_tag", tuple(calls))


def _from_json_texts(form: str, texts: list[str]) -> Extraction:
    return _from_objects(form, [o for t in texts for o in _json_objects(_undouble(t) if "{{" in t else t)])


def _from_objects(form: str, objects: list[dict[str, Any]]) -> Extraction:
    if not objects:
        return Extraction(form, errors=("the reply holds JSON that is not a complete tool call",))
    calls = [c for n, o in enumerate(objects) if (c := _call_from_object(o, f"call_{n}")) is not None]
    if not calls:
        return Extraction(
            form, errors=("the reply is JSON but not a tool call: answer in plain spoken sentences, or call a tool",)
        )
    return Extraction(form, tuple(calls))


def _from_prose(text: str, names: frozenset[str]) -> Extraction | None:
    mentioned = list(dict.fromkeys(IDENTIFIER.findall(text)))
    if not mentioned:
        return None
    if len(mentioned) > 1:
        listed = ", ".join(mentioned)
        return Extraction(
            "prose",
            errors=(f"the reply names several tools ({listed}): call exactly one of them, do not say tool names",),
        )
    if mentioned[0] in names:
        return Extraction("prose", (ToolCall("call_0", mentioned[0], {}),))
    listed = ", ".join(sorted(names)) or "none"
    return Extraction(
        "prose",
        errors=(f"the reply says {mentioned[0]!r} aloud: never say tool names; the tools you have are: {listed}",),
    )


def _call_from_object(data: Any, call_id: str) -> ToolCall | None:
    """A call from the shapes models write: name+arguments, name+parameters, function{...}, tool+arguments."""
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("function"), dict):
        data = data["function"]
    name = data.get("name", data.get("tool"))
    if not isinstance(name, str) or not name:
        return None
    # Llama-style models write "parameters"; some write the arguments as a JSON string.
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return ToolCall(call_id, name, {}, raw_arguments=arguments)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ToolCall(call_id, name, {}, raw_arguments=json.dumps(arguments))
    return ToolCall(call_id, name, arguments)


def _arguments_of(value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and isinstance(value.get("arguments"), dict):
        return dict(value["arguments"])
    return dict(value) if isinstance(value, dict) else {}


def _json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every top-level JSON object in `text`, in order, skipping what is not JSON around them."""
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at >= 0:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict):
            yield value
        at = text.find("{", end)


def _undouble(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")
