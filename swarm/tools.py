"""Tools an agent may call: a JSON schema, an optional extra check, and an async call."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, get_type_hints

import jsonschema
import pydantic

from swarm.events import DigitsRequested, EndReason, EscalationReason, Event
from swarm.messages import Message, ToolSpec


class CallSession(Protocol):
    """What a tool may read and change of the session it serves (a `swarm.session.Session`)."""

    # For the channel (swarm.events): a transfer to a person, or a hang-up once the goodbye is heard.
    def escalate(self, reason: EscalationReason, detail: str = "") -> None: ...

    def end_call(self, reason: EndReason = "goodbye", detail: str = "") -> None: ...

    def change_agent(self, name: str) -> None: ...

    def navigate_back(self) -> str: ...

    def get_agent_history(self, agent: str | None = None) -> list[Message]: ...

    # The session's log, read-only: what tools answered earlier in the call (e.g. whether the caller proved
    # who they are) is read from here, so a replayed session decides the same.
    @property
    def events(self) -> Sequence[Event]: ...


@dataclass
class ToolContext:
    """What a tool knows about the call it serves; never filled from the model's arguments."""

    client_id: str
    agent: str
    # The session: navigation tools change its agent, others flag a transfer or a hang-up.
    session: CallSession
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Unique per session, unlike client_id which a WebSocket client chooses and may reuse.
    session_id: str = ""
    # What the tool asked of the caller's keypad; recorded after its result by whoever ran it (a plain tool
    # runs in a thread, so it never touches the session itself).
    requests: list[DigitsRequested] = field(default_factory=list)

    def request_digits(self, tool: str, argument: str, max_digits: int, **arguments: Any) -> None:
        """The caller may type `argument` for `tool` on the keypad (callcenter.keypad runs it with the digits)."""
        self.requests.append(DigitsRequested(self.agent, tool, argument, max_digits, arguments))


ToolCallable = Callable[[dict[str, Any], ToolContext], Awaitable[Any]]
ToolValidator = Callable[[dict[str, Any], ToolContext], list[str]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    call: ToolCallable
    # A check beyond the schema (e.g. "quantity exceeds stock"); returns the errors, empty when fine.
    validate: ToolValidator | None = None
    # Caller sentences that mean "use this tool": the offline router matches on them.
    examples: tuple[str, ...] = ()
    # The result's "say" line is the agent's reply: spoken as it is, and the turn ends without another
    # completion. A small model shown "... Shall I order one for you?" answered it as the caller would
    # ("Yes, please."), and the line was written for the ear already; it also saves a whole completion.
    says_result: bool = False
    # It only reads (a lookup, a hand-over): a turn that ran no other tool can be taken back (Session.retract).
    changes_nothing: bool = False
    # A lookup: the result's field that lists what it found. Run on a router's guess (Agent.router), a lookup
    # that found nothing is dropped unrecorded, and the model answers instead of its "nothing found" line.
    finds: str | None = None
    # Phrases that, said word for word, call it on any turn without the model, even over a pending read-back or
    # question ("speak to a real person"): narrower than `examples`, nothing else the caller could mean by them.
    any_turn: tuple[str, ...] = ()

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def errors(self, arguments: Any, context: ToolContext) -> list[str]:
        """Every reason these arguments cannot be used, worded for the model to correct them."""
        if not isinstance(arguments, dict):
            return [f"arguments must be a JSON object, got {type(arguments).__name__}"]
        validator = jsonschema.Draft202012Validator(self.parameters)
        found = [_describe(e) for e in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))]
        if not found and self.validate is not None:
            found = list(self.validate(arguments, context))
        return found


def _describe(error: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    return f"at '{where}': {error.message}" if where else error.message


def tool_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    examples: tuple[str, ...] = (),
    validate: ToolValidator | None = None,
    says_result: bool = False,
    changes_nothing: bool = False,
    finds: str | None = None,
) -> Tool:
    """Build a Tool from a typed function; a parameter annotated ToolContext receives the context.

    The schema comes from the type hints (through pydantic), the description from the docstring's
    first paragraph, and parameter descriptions from its Google-style ``Args:`` section.
    """
    hints = get_type_hints(fn, include_extras=True)
    doc = inspect.getdoc(fn) or ""
    arg_docs = _arg_docs(doc)
    context_param: str | None = None
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn).parameters.items():
        hint = hints.get(pname, Any)
        if hint is ToolContext:
            context_param = pname
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (hint, pydantic.Field(default, description=arg_docs.get(pname)))
    model = pydantic.create_model(f"{fn.__name__}_arguments", **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema["properties"] = {k: _plain(v) for k, v in schema.get("properties", {}).items()}

    async def call(arguments: dict[str, Any], context: ToolContext) -> Any:
        kwargs = dict(model.model_validate(arguments))
        if context_param:
            kwargs[context_param] = context
        if inspect.iscoroutinefunction(fn):
            return await fn(**kwargs)
        # Plain functions (SQLite, files) run in a thread so a slow one never stalls the event loop.
        return await asyncio.to_thread(fn, **kwargs)

    return Tool(
        name=name or fn.__name__,
        description=description or doc.split("\n\n")[0].replace("\n", " "),
        parameters=schema,
        call=call,
        validate=validate,
        examples=examples,
        says_result=says_result,
        changes_nothing=changes_nothing,
        finds=finds,
    )


def _plain(prop: dict[str, Any]) -> dict[str, Any]:
    """`X | None` as plain X: optional is already said by `required`, and small models (and the
    ollama client, which drops `anyOf`) do better with one type per field."""
    prop = {k: v for k, v in prop.items() if k != "title"}
    variants = [v for v in prop.get("anyOf", ()) if v != {"type": "null"}]
    if len(variants) == 1 and len(prop["anyOf"]) == 2:
        prop.pop("anyOf")
        prop.update(variants[0])
        if prop.get("default", 0) is None:
            prop.pop("default")
    return prop


def _arg_docs(doc: str) -> dict[str, str]:
    match = re.search(r"^Args:\n((?:[ \t]+.*\n?)+)", doc, re.MULTILINE)
    if not match:
        return {}
    found: dict[str, str] = {}
    indent, name = None, None
    for line in match.group(1).splitlines():
        depth = len(line) - len(line.lstrip())
        item = re.match(r"\s+(\w+)(?:\s*\([^)]*\))?:\s*(.+)", line)
        if item and (indent is None or depth <= indent):
            indent, name = depth, item.group(1)
            found[name] = item.group(2).strip()
        elif name is not None and line.strip():  # a continuation line, indented deeper
            found[name] += " " + line.strip()
    return found


def result_text(result: Any) -> str:
    """A tool result as the text of a tool message: strings as they are, the rest as JSON."""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)
