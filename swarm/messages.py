"""The messages a session's history holds and a provider is given."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model's arguments were not a JSON object: the raw text, sent back to the model as an error.
    raw_arguments: str | None = None


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    # The agent that produced the message; user messages have none.
    agent: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    # For role "tool": which call this result answers.
    tool_call_id: str | None = None
    tool_name: str | None = None

    @property
    def shared(self) -> bool:
        """User text and spoken assistant text are seen by every agent; the rest stays with its agent."""
        return self.role == "user" or (self.role == "assistant" and not self.tool_calls)


@dataclass(frozen=True)
class ToolSpec:
    """What a provider is told about a tool: enough to build a function-calling request."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class CompletionRequest:
    agent: str
    client_id: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    # The reply must be a call of one of the tools, never text (OpenAI's tool_choice "required"; in
    # constrained decoding the schema has no "say"). Providers that cannot force it send it as "auto".
    tool_required: bool = False
