"""The swarm file: the agents (prompt, tools, hand-overs, tool-only, look-first), the default agent, the operator's
number, the router's settings and the call centre's own tools, in one TOML file.

This module reads and checks the file's shape; `check_tools` checks its names against the tools a registry has.
Every problem names the file and the line: tomllib keeps no positions, so a light scan of the text finds the
line of each table and key (`_Positions`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from callcenter.errors import CallCenterError

PACKAGED = "callcenter/data/swarm.toml"
_AGENT_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_TOOL_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,63}")
_FUNCTION = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
HAND_OVER_PREFIX = "navigate_to_"


class SwarmFileError(CallCenterError):
    """The swarm file cannot be used; the message names the file, the line and what to change."""


@dataclass(frozen=True)
class AgentSpec:
    name: str
    prompt: str
    tools: tuple[str, ...]
    # Every reply is a tool call (triage: hand over, transfer, or its one question).
    tool_only: bool = False
    # Handed the caller, its first step is a tool (the likely lookup on what they said).
    look_first: bool = False
    # What the offline router asks when it understands nothing.
    unclear: str = "Sorry, could you say that in other words?"
    # The hand-over to this agent (the tool navigate_to_<name>): its description for the model, and the
    # caller's phrases that mean it, given as a list or as the name of a tool whose phrases they are.
    hand_over: str = ""
    hand_over_phrases: tuple[str, ...] = ()
    hand_over_phrases_from: str = ""

    @property
    def hand_overs(self) -> tuple[str, ...]:
        return tuple(t.removeprefix(HAND_OVER_PREFIX) for t in self.tools if t.startswith(HAND_OVER_PREFIX))


@dataclass(frozen=True)
class ToolSpec:
    """A tool of the file's own: a question the agent asks, or a Python function named by import path."""

    name: str
    description: str = ""
    question: str = ""
    # Before the question, a hand-over the router hears in the caller's words (to an agent this one hands over to).
    hands_over: bool = False
    function: str = ""  # "package.module:function"
    writes: bool = False  # it changes something: it must have a confirmation step (a `confirmed` parameter)
    says_result: bool = False
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class SwarmFile:
    source: str
    default_agent: str
    agents: Mapping[str, AgentSpec]
    tools: Mapping[str, ToolSpec]
    operator: str = ""
    rules: str = ""
    precedence: tuple[str, ...] = ()
    doubtful: tuple[str, ...] = ()
    positions: _Positions | None = None

    def line(self, *path: str) -> int:
        """The line of a table or key (0: unknown)."""
        return self.positions.line(*path) if self.positions is not None else 0

    def line_of_item(self, value: str, *path: str) -> int:
        """The line of `"value"` inside the list at `path` (the key's line if not found alone)."""
        return self.positions.line_of_item(value, *path) if self.positions is not None else 0

    def where(self, *path: str, item: str | None = None) -> str:
        line = self.line_of_item(item, *path) if item is not None else self.line(*path)
        return f"{self.source} line {line}" if line else self.source


def load_swarm_file(path: str | Path | None = None) -> SwarmFile:
    """The file at `path`, or the packaged demo shop's swarm; raises SwarmFileError naming the line."""
    if path is None:
        text, source = resources.files("callcenter").joinpath("data/swarm.toml").read_text(encoding="utf-8"), PACKAGED
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise SwarmFileError(f"cannot read the swarm file {source}: {error}") from error
    return parse_swarm_file(text, source)


def parse_swarm_file(text: str, source: str) -> SwarmFile:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:  # its message already says "(at line N, column M)"
        raise SwarmFileError(f"{source}: not valid TOML: {error}") from error
    positions = _Positions(text)
    shape = _Shape(source, positions)
    shape.keys(data, (), {"default_agent", "operator", "rules", "router", "agents", "tools"})
    router = shape.table(data, "router")
    shape.keys(router, ("router",), {"precedence", "doubtful"})
    agents_table = shape.table(data, "agents")
    if not agents_table:
        raise SwarmFileError(f"{source}: no [agents.NAME] tables: a swarm needs at least one agent")
    agents = {name: shape.agent(name, spec) for name, spec in agents_table.items()}
    tools = {name: shape.tool(name, spec) for name, spec in shape.table(data, "tools").items()}
    default = shape.text(data, (), "default_agent", required=True)
    if default not in agents:
        raise SwarmFileError(
            f"{source} line {positions.line('default_agent')}: default_agent {default!r} is not one of the agents "
            f"({', '.join(agents)})"
        )
    return SwarmFile(
        source,
        default,
        agents,
        tools,
        operator=shape.text(data, (), "operator"),
        rules=shape.text(data, (), "rules"),
        precedence=shape.texts(router, ("router",), "precedence"),
        doubtful=shape.texts(router, ("router",), "doubtful"),
        positions=positions,
    )


@dataclass(frozen=True)
class ToolFacts:
    """What the checks need to know of a registered tool."""

    writes: bool
    confirmed: bool  # it has a `confirmed` parameter: the read-back-then-yes step (swarm.checks)


def check_tools(swarm: SwarmFile, tools: Mapping[str, ToolFacts]) -> None:
    """Every name the agents use is a tool, every hand-over an agent, every write confirmed; raises SwarmFileError
    listing each problem with its line."""
    problems: list[str] = []
    for agent in swarm.agents.values():
        path = ("agents", agent.name, "tools")
        for tool in agent.tools:
            target = tool.removeprefix(HAND_OVER_PREFIX)
            if tool.startswith(HAND_OVER_PREFIX) and target not in swarm.agents:
                problems.append(
                    f"{swarm.where(*path, item=tool)}: agent {agent.name!r} hands over to {target!r}, "
                    f"which is no agent ({', '.join(swarm.agents)})"
                )
            elif tool not in tools:
                problems.append(
                    f"{swarm.where(*path, item=tool)}: agent {agent.name!r} uses the unknown tool {tool!r}; "
                    f"known: {', '.join(sorted(tools))}, or declare it under [tools.{tool}]"
                )
            elif tools[tool].writes and not tools[tool].confirmed:
                problems.append(
                    f"{swarm.where(*path, item=tool)}: agent {agent.name!r} uses {tool!r}, which writes without a "
                    "confirmation step: give it a `confirmed: bool = False` parameter and read back what it would do "
                    "when it is false"
                )
        source = agent.hand_over_phrases_from
        if source and source not in tools:
            problems.append(
                f"{swarm.where('agents', agent.name, 'hand_over_phrases_from')}: hand_over_phrases_from names "
                f"the unknown tool {source!r}"
            )
    for name in swarm.precedence:
        if name not in tools and not name.startswith(HAND_OVER_PREFIX):
            problems.append(
                f"{swarm.where('router', 'precedence', item=name)}: router.precedence names the unknown tool {name!r}"
            )
    if problems:
        raise SwarmFileError("\n".join(problems))


class _Positions:
    """Lines of tables (`[agents.sales]`) and keys (`prompt = `) in a TOML text, found by a scan that skips
    multi-line strings; enough for the tables-and-keys files this is, not a TOML parser."""

    _HEADER = re.compile(r"\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
    _KEY = re.compile(r'\s*([A-Za-z0-9_-]+|"[^"]*")(\s*\.\s*([A-Za-z0-9_-]+|"[^"]*"))*\s*=')

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self._at: dict[tuple[str, ...], int] = {}
        table: tuple[str, ...] = ()
        quote: str | None = None
        for number, line in enumerate(self.lines, 1):
            if quote is not None:  # inside a multi-line string
                if line.count(quote) % 2:
                    quote = None
                continue
            header = self._HEADER.match(line)
            if header:
                table = tuple(part.strip().strip('"') for part in header.group(1).split("."))
                self._at.setdefault(table, number)
                continue
            key = self._KEY.match(line)
            if key:
                dotted = line[: key.end() - 1]
                path = tuple(part.strip().strip('"') for part in dotted.split("."))
                self._at.setdefault((*table, *path), number)
            for opener in ('"""', "'''"):
                if line.count(opener) % 2:
                    quote = opener

    def line(self, *path: str) -> int:
        for length in range(len(path), 0, -1):  # a missing key: the line of its table
            if path[:length] in self._at:
                return self._at[path[:length]]
        return 0

    def line_of_item(self, value: str, *path: str) -> int:
        start = self.line(*path)
        if not start:
            return 0
        quoted = re.compile(rf"[\"']{re.escape(value)}[\"']")
        for number in range(start, len(self.lines) + 1):
            text = self.lines[number - 1]
            if quoted.search(text):
                return number
            if number > start and (self._HEADER.match(text) or self._KEY.match(text)):
                break  # the list ended before the value
        return start


class _Shape:
    """The checks of the file's shape: known keys, the right types, names that can be tool names."""

    _AGENT_KEYS = frozenset(AgentSpec.__dataclass_fields__) - {"name"}
    _TOOL_KEYS = frozenset(ToolSpec.__dataclass_fields__) - {"name"}

    def __init__(self, source: str, positions: _Positions) -> None:
        self.source, self.positions = source, positions

    def where(self, *path: str) -> str:
        return f"{self.source} line {self.positions.line(*path)}"

    def keys(self, table: Mapping[str, Any], path: tuple[str, ...], allowed: frozenset[str] | set[str]) -> None:
        for key in table:
            if key not in allowed:
                name = ".".join((*path, key))
                raise SwarmFileError(
                    f"{self.where(*path, key)}: unknown key {name!r}; allowed: {', '.join(sorted(allowed))}"
                )

    def table(self, data: Mapping[str, Any], key: str, path: tuple[str, ...] = ()) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            raise SwarmFileError(f"{self.where(*path, key)}: {key} must be a table ([{key}...])")
        return value

    def text(self, data: Mapping[str, Any], path: tuple[str, ...], key: str, *, required: bool = False) -> str:
        value = data.get(key, "")
        if not isinstance(value, str):
            raise SwarmFileError(f"{self.where(*path, key)}: {key} must be a string, not {value!r}")
        if required and not value.strip():
            raise SwarmFileError(f"{self.where(*path, key)}: {'.'.join((*path, key))} is missing or empty")
        return value.strip()

    def texts(self, data: Mapping[str, Any], path: tuple[str, ...], key: str) -> tuple[str, ...]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SwarmFileError(f"{self.where(*path, key)}: {key} must be a list of strings")
        return tuple(value)

    def flag(self, data: Mapping[str, Any], path: tuple[str, ...], key: str) -> bool:
        value = data.get(key, False)
        if not isinstance(value, bool):
            raise SwarmFileError(f"{self.where(*path, key)}: {key} must be true or false, not {value!r}")
        return value

    def agent(self, name: str, spec: Any) -> AgentSpec:
        path = ("agents", name)
        if not isinstance(spec, dict):
            raise SwarmFileError(f"{self.where(*path)}: agents.{name} must be a table ([agents.{name}])")
        if not _AGENT_NAME.fullmatch(name):
            raise SwarmFileError(f"{self.where(*path)}: agent name {name!r}: use lower-case letters, digits and _")
        self.keys(spec, path, self._AGENT_KEYS)
        tools = self.texts(spec, path, "tools")
        for tool in tools:
            if not _TOOL_NAME.fullmatch(tool):
                line = self.positions.line_of_item(tool, *path, "tools")
                raise SwarmFileError(f"{self.source} line {line}: {tool!r} is no tool name")
        if len(set(tools)) != len(tools):
            raise SwarmFileError(f"{self.where(*path, 'tools')}: agents.{name}.tools lists a tool twice")
        fields: dict[str, Any] = {
            "prompt": self.text(spec, path, "prompt", required=True),
            "tools": tools,
            "tool_only": self.flag(spec, path, "tool_only"),
            "look_first": self.flag(spec, path, "look_first"),
            "hand_over": self.text(spec, path, "hand_over") or f"Hand the caller over to {name}.",
            "hand_over_phrases": self.texts(spec, path, "hand_over_phrases"),
            "hand_over_phrases_from": self.text(spec, path, "hand_over_phrases_from"),
        }
        if "unclear" in spec:
            fields["unclear"] = self.text(spec, path, "unclear", required=True)
        if fields["tool_only"] and not tools:
            raise SwarmFileError(f"{self.where(*path, 'tool_only')}: agent {name!r} is tool_only but has no tools")
        return AgentSpec(name, **fields)

    def tool(self, name: str, spec: Any) -> ToolSpec:
        path = ("tools", name)
        if not isinstance(spec, dict):
            raise SwarmFileError(f"{self.where(*path)}: tools.{name} must be a table ([tools.{name}])")
        if not _TOOL_NAME.fullmatch(name) or name.startswith(HAND_OVER_PREFIX):
            raise SwarmFileError(
                f"{self.where(*path)}: tool name {name!r}: letters, digits and _, not starting {HAND_OVER_PREFIX}"
            )
        self.keys(spec, path, self._TOOL_KEYS)
        question, function = self.text(spec, path, "question"), self.text(spec, path, "function")
        if bool(question) == bool(function):
            raise SwarmFileError(
                f'{self.where(*path)}: tools.{name} needs either question = "..." (the agent asks it) or '
                'function = "package.module:function" (a Python function), not both'
            )
        if function and not _FUNCTION.fullmatch(function):
            raise SwarmFileError(f"{self.where(*path, 'function')}: {function!r}: write package.module:function")
        description = self.text(spec, path, "description", required=bool(question))
        return ToolSpec(
            name,
            description=description,
            question=question,
            hands_over=self.flag(spec, path, "hands_over"),
            function=function,
            writes=self.flag(spec, path, "writes"),
            says_result=self.flag(spec, path, "says_result") or bool(question),
            examples=self.texts(spec, path, "examples"),
        )
