"""What a swarm is made of: its agents, its session settings, and the names a session looks up.

Below both the registry (which checks and holds them) and the session (which runs them), so neither imports
the other's module to know what an agent is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from swarm.errors import SwarmError
from swarm.providers.base import Provider
from swarm.tools import Tool


class RegistryError(SwarmError):
    """A duplicate or dangling name in the swarm's configuration; raised at start-up, not mid-call."""


# The name of a hand-over to another agent is this and the agent's name.
NAVIGATE_PREFIX = "navigate_to_"


@dataclass(frozen=True)
class Agent:
    name: str
    prompt: str
    provider: str
    tools: tuple[str, ...] = ()
    # Extra system messages after the prompt (house rules, today's date, the caller's number...).
    system: tuple[str, ...] = ()
    # A provider to use when the main one fails (the offline router when the LLM server is down).
    fallback: str | None = None
    # The agent answers only through its tools (triage: hand over, transfer, or ask its one question), so
    # a model that can be forced to call one is (CompletionRequest.tool_required).
    tool_only: bool = False
    # Its first reply after a hand-over is a tool call: the caller said what they want, and the agent's
    # first step is to look it up (the 1.5B model handed a return said "Please provide the order number.").
    tool_on_entry: bool = False
    # A provider that is also a `Router`, asked before the model where a generation costs seconds: a tool-only
    # agent's step (triage's hand-over) and, handed the caller, the agent's first tool (its likely lookup, on
    # the caller's words) are taken from it when it is sure. The model decides the rest.
    router: str | None = None


@dataclass(frozen=True)
class SwarmSpec:
    name: str
    agents: tuple[str, ...]
    default_agent: str


@dataclass(frozen=True)
class SessionConfig:
    history_size: int = 25
    # Tries after the first one when the model's output fails validation.
    max_retries: int = 2
    max_tool_calls: int = 6
    tool_timeout: float = 10.0
    placeholders: tuple[str, ...] = (
        "Sorry, I didn't catch that. Could you say it again?",
        "I'm sorry, could you repeat that, please?",
        "Sorry, could you say that once more in other words?",
    )
    apology: str = "I'm sorry, I'm having a technical problem. Let me put you through to a colleague."
    # Said to a no to an offer made in passing, before the read-back the caller left for it is asked again.
    resumed: str = "All right, I won't do that."
    # Asked after a write the caller agreed to, when nothing else follows in the turn ("Your order is placed ..."):
    # the caller hears the turn is theirs, and what they say next starts afresh (router_steps). Empty: not asked.
    after_done: str = "Is there anything else I can help with?"
    # Said to a plain no to a read-back.
    declined: str = "All right, I won't do that. Is there anything else I can help with?"


class Catalog(Protocol):
    """The registered names a session looks up: a `swarm.registry.Registry`, checked before the session starts."""

    @property
    def providers(self) -> Mapping[str, Provider]: ...

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    @property
    def agents(self) -> Mapping[str, Agent]: ...
