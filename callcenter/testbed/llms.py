"""The LLMs an eval compares, named in callcenter.llm_spec's words (offline, local[:MODEL], ollama:MODEL,
openai:MODEL@URL, scripted:FILE, ...). An LLM is opened once (a local server starts once) and serves every trial;
a scripted LLM, the testbed's own, starts afresh in each."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callcenter.agents import DEFAULT_SWARM
from callcenter.app import open_agents
from callcenter.config import Config
from callcenter.llm_choice import LLMChoice
from callcenter.llm_spec import LLMSpec, LLMSpecError
from callcenter.shop import Shop
from callcenter.swarm_file import SwarmFile
from callcenter.testbed.scenario import render_value
from swarm import Completion, CompletionRequest, Provider
from swarm.providers import ScriptedProvider, reply


@dataclass
class OpenLLM:
    spec: LLMSpec
    description: str
    # The providers of one trial, given that trial's placeholder values (a scripted LLM starts afresh).
    providers: Callable[[dict[str, str]], dict[str, Provider | None]]
    llm_choice: LLMChoice | None = None

    def close(self) -> None:
        if self.llm_choice is not None:
            self.llm_choice.close()


async def open_llm(spec: LLMSpec, config: Config, swarm: SwarmFile | None = None) -> OpenLLM:
    """The LLM for the agents of `swarm` (default: the demo shop's swarm file)."""
    swarm = swarm or DEFAULT_SWARM
    agents = tuple(swarm.agents)
    if spec.kind == "scripted":
        rules = load_script(Path(spec.file))
        return OpenLLM(
            spec,
            f"scripted LLM {spec.file} ({len(rules)} rules)",
            lambda values: dict.fromkeys(agents, ScriptedProvider(script_for(rules, values), name="scripted")),
        )
    # The local server's prompt cache is warmed once, on a throwaway shop, so trial one is not the slow one.
    with Shop(":memory:") as shop:
        llm_choice, _ = await open_agents(config, shop, swarm, spec)
    return OpenLLM(spec, llm_choice.description, lambda values: dict(llm_choice.per_agent), llm_choice)


# --- scripted LLMs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """When the request matches (agent, the caller's last words, the tool whose result just came back),
    the scripted model says `say`, calls `call`, confirms the pending proposal, or says the tool's result."""

    agent: str | None = None
    user: str | None = None
    after_tool: str | None = None  # None: only when no tool result is pending; "*": after any tool
    say: str | None = None
    call: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    confirm: bool = False
    say_result: bool = False


def load_script(path: Path) -> list[Rule]:
    """A scripted LLM's TOML file: [[rule]] tables, tried in order, the first that matches answers."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        rules = [Rule(**r) for r in data.get("rule", [])]
    except (OSError, tomllib.TOMLDecodeError, TypeError) as error:
        raise LLMSpecError(f"scripted LLM {path}: {error}") from None
    for index, rule in enumerate(rules):
        actions = [rule.say is not None, rule.call is not None, rule.confirm, rule.say_result]
        if sum(actions) != 1:
            raise LLMSpecError(
                f"scripted LLM {path}: [[rule]] #{index + 1} needs exactly one of say, call, confirm, say_result"
            )
    return rules


def script_for(rules: list[Rule], values: dict[str, str]) -> Callable[[CompletionRequest], Completion]:
    """The scripted model of one trial: placeholders ({orders.NAME}) are that trial's order numbers."""

    def step(request: CompletionRequest) -> Completion:
        last = request.messages[-1]
        user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        result = _tool_result(last.content) if last.role == "tool" else None
        for rule in rules:
            if _matches(rule, request.agent, user, last.tool_name if last.role == "tool" else None):
                return _answer(rule, result, request, values)
        if result is not None:
            return reply(str(result.get("say", "Done.")))
        return reply("How can I help you?")

    return step


def _matches(rule: Rule, agent: str, user: str, tool: str | None) -> bool:
    if rule.agent is not None and rule.agent != agent:
        return False
    if rule.user is not None and not re.search(rule.user, user, re.IGNORECASE):
        return False
    if tool is None:
        return rule.after_tool is None
    return rule.after_tool in ("*", tool)


def _answer(
    rule: Rule, result: dict[str, Any] | None, request: CompletionRequest, values: dict[str, str]
) -> Completion:
    if rule.say is not None:
        return reply(render_value(rule.say, values))
    if rule.call is not None:
        return reply("", (rule.call, render_value(rule.arguments, values)))
    if rule.say_result:
        return reply(str((result or {}).get("say", "")))
    proposal = _last_proposal(request)
    if proposal is None:
        return reply("There is nothing to confirm.")
    return reply("", (proposal["tool"], {**proposal["arguments"], "confirmed": True}))


def _last_proposal(request: CompletionRequest) -> dict[str, Any] | None:
    for message in reversed(request.messages):
        if message.role == "tool":
            found = _tool_result(message.content).get("proposal")
            if isinstance(found, dict):
                return found
    return None


def _tool_result(content: str) -> dict[str, Any]:
    try:
        value = json.loads(content)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
