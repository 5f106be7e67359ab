"""A swarm of LLM agents for one caller at a time: agents hand the caller over to each other, call tools, and
every change is an event, so a session can be stored and resumed.

What a user imports from here: the `Registry` (providers, tools, agents and swarms by name), the specs it holds,
`Session` (one caller's turns), `Tool` and its helpers, and the messages and events a session reads and writes.
The model back ends live in `swarm.providers` (`Provider` is the protocol; `swarm.providers.local`,
`.openai_compat`, `.ollama`, `.offline` and `.scripted` implement it); import the one you use.
"""

from swarm.errors import SwarmError
from swarm.events import Event, events_from_json, events_to_json
from swarm.messages import CompletionRequest, Message, ToolCall, ToolSpec
from swarm.providers.base import Completion, Delta, Provider, ProviderError
from swarm.registry import Registry, navigate_back_tool, navigate_tool
from swarm.session import Session
from swarm.specs import Agent, RegistryError, SessionConfig, SwarmSpec
from swarm.tools import CallSession, Tool, ToolContext, tool_from_function

__all__ = [
    "Agent",
    "CallSession",
    "Completion",
    "CompletionRequest",
    "Delta",
    "Event",
    "Message",
    "Provider",
    "ProviderError",
    "Registry",
    "RegistryError",
    "Session",
    "SessionConfig",
    "SwarmError",
    "SwarmSpec",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolSpec",
    "events_from_json",
    "events_to_json",
    "navigate_back_tool",
    "navigate_tool",
    "tool_from_function",
]
