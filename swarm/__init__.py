"""A swarm of LLM agents for one caller at a time: agents hand the caller over to each other, call tools, and
every change is an event, so a session can be stored and resumed.

What a user imports from here: the `Registry` (providers, tools, agents and swarms by name), the specs it holds,
`Session` (one caller's turns) and the `Speculation` it starts at a caller's pause, `Tool` and its helpers, the
tool modes, `yes_or_no`, and the messages and events a session reads and writes. The model back ends live in
`swarm.providers` (`Provider` is the protocol).
"""

from swarm.confirmations import yes_or_no
from swarm.errors import SwarmError
from swarm.events import (
    AgentChanged,
    AssistantText,
    DigitsRequested,
    EndReason,
    Escalated,
    EscalationReason,
    Event,
    Rescued,
    ToolCalled,
    ToolCallRepaired,
    UserText,
    ValidationFailed,
    event_from_dict,
    events_from_json,
    events_to_json,
)
from swarm.messages import CompletionRequest, Message, ToolCall, ToolSpec
from swarm.providers.base import Completion, Delta, Provider, ProviderError
from swarm.registry import Registry, navigate_back_tool, navigate_tool
from swarm.session import Session
from swarm.specs import Agent, RegistryError, SessionConfig, SwarmSpec
from swarm.speculation import Speculation
from swarm.tool_modes import TOOL_MODES, resolve_tool_mode
from swarm.tools import CallSession, Tool, ToolContext, result_text, tool_from_function

__all__ = [
    "TOOL_MODES",
    "Agent",
    "AgentChanged",
    "AssistantText",
    "CallSession",
    "Completion",
    "CompletionRequest",
    "Delta",
    "DigitsRequested",
    "EndReason",
    "Escalated",
    "EscalationReason",
    "Event",
    "Message",
    "Provider",
    "ProviderError",
    "Registry",
    "RegistryError",
    "Rescued",
    "Session",
    "SessionConfig",
    "Speculation",
    "SwarmError",
    "SwarmSpec",
    "Tool",
    "ToolCall",
    "ToolCallRepaired",
    "ToolCalled",
    "ToolContext",
    "ToolSpec",
    "UserText",
    "ValidationFailed",
    "event_from_dict",
    "events_from_json",
    "events_to_json",
    "navigate_back_tool",
    "navigate_tool",
    "resolve_tool_mode",
    "result_text",
    "tool_from_function",
    "yes_or_no",
]
