"""Registries of providers, tools, agents and swarms, checked once at start-up."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from swarm.events import Event
from swarm.providers.base import Provider
from swarm.session import Session
from swarm.specs import NAVIGATE_PREFIX, Agent, RegistryError, SessionConfig, SwarmSpec
from swarm.tools import Tool, ToolContext

# The specs are defined in swarm.specs (below the session); most users import them from here with the Registry.
__all__ = [
    "NAVIGATE_PREFIX",
    "Agent",
    "Registry",
    "RegistryError",
    "SessionConfig",
    "SwarmSpec",
    "navigate_back_tool",
    "navigate_tool",
]


@dataclass
class Registry:
    providers: dict[str, Provider] = field(default_factory=dict)
    tools: dict[str, Tool] = field(default_factory=dict)
    agents: dict[str, Agent] = field(default_factory=dict)
    swarms: dict[str, SwarmSpec] = field(default_factory=dict)

    def add_provider(self, name: str, provider: Provider) -> None:
        _add(self.providers, "provider", name, provider)

    def add_tool(self, tool: Tool) -> None:
        _add(self.tools, "tool", tool.name, tool)

    def add_agent(self, agent: Agent) -> None:
        _add(self.agents, "agent", agent.name, agent)

    def add_swarm(self, swarm: SwarmSpec) -> None:
        _add(self.swarms, "swarm", swarm.name, swarm)

    def check(self) -> None:
        """Raise RegistryError listing every reference to a name nobody registered."""
        problems: list[str] = []
        for agent in self.agents.values():
            for provider in filter(None, (agent.provider, agent.fallback)):
                if provider not in self.providers:
                    problems.append(f"agent {agent.name!r} uses unknown provider {provider!r}")
            problems += [f"agent {agent.name!r} uses unknown tool {t!r}" for t in agent.tools if t not in self.tools]
        for swarm in self.swarms.values():
            problems += [f"swarm {swarm.name!r} has unknown agent {a!r}" for a in swarm.agents if a not in self.agents]
            if swarm.default_agent not in swarm.agents:
                problems.append(f"swarm {swarm.name!r}: default agent {swarm.default_agent!r} is not one of its agents")
        if problems:
            raise RegistryError("; ".join(problems))

    def session(
        self,
        client_id: str,
        swarm: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        config: SessionConfig | None = None,
        events: list[Event] | None = None,
    ) -> Session:
        """A new session for one caller (or one resumed from its stored events)."""
        if swarm not in self.swarms:
            raise RegistryError(f"unknown swarm {swarm!r}")
        self.check()
        return Session(self, self.swarms[swarm], client_id, metadata or {}, config or SessionConfig(), events or [])


def _add(table: dict[str, Any], kind: str, name: str, value: Any) -> None:
    if not name:
        raise RegistryError(f"a {kind} needs a name")
    if name in table:
        raise RegistryError(f"{kind} {name!r} is registered twice")
    table[name] = value


def navigate_tool(target: str, description: str, examples: tuple[str, ...] = ()) -> Tool:
    """A tool that hands the caller over to another agent, which then answers in the same turn."""

    async def call(arguments: dict[str, Any], context: ToolContext) -> str:
        context.session.change_agent(target)
        return f"The caller is now with the {target} agent."

    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    return Tool(f"{NAVIGATE_PREFIX}{target}", description, parameters, call, examples=examples, changes_nothing=True)


def navigate_back_tool(examples: tuple[str, ...] = ()) -> Tool:
    """A tool that returns to the previous agent (or the swarm's default)."""

    async def call(arguments: dict[str, Any], context: ToolContext) -> str:
        agent = context.session.navigate_back()
        return f"The caller is now with the {agent} agent."

    description = "Hand the caller back when they want something this agent does not handle."
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    return Tool("navigate_back", description, parameters, call, examples=examples, changes_nothing=True)
