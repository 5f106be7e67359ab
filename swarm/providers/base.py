"""The one interface every LLM provider implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from swarm.errors import SwarmError
from swarm.messages import CompletionRequest, ToolCall


@dataclass(frozen=True)
class Delta:
    """A piece of reply text, streamed as the model produces it."""

    text: str


@dataclass(frozen=True)
class Completion:
    """The whole reply: always the last item a provider yields."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    # The server's own account of the request when it gives one (llama.cpp: prompt_n, cache_n, predicted_n,
    # prompt_ms, predicted_ms), for benchmarks and logs: where a turn's time went.
    timings: Mapping[str, float] | None = None


class ProviderError(SwarmError):
    """The LLM could not give a reply; the session apologises and offers a human."""


class ProviderUnavailable(ProviderError):
    """The LLM server cannot be reached."""


class ProviderTimeout(ProviderError):
    """The LLM server took longer than the configured timeout."""


class Provider(Protocol):
    name: str

    def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        """Yield text deltas as they come, then exactly one Completion; raise ProviderError on failure."""
        ...


@runtime_checkable
class PromptCache(Protocol):
    """A provider whose server keeps the prompts it has read (llama.cpp's): `warm` reads this one now, so the
    next request that starts with it only pays for what follows."""

    async def warm(self, request: CompletionRequest) -> None:
        """Put the request's prompt into the server's cache; never raises (a failed warm-up only costs time)."""
        ...


@runtime_checkable
class Router(Protocol):
    """A fast decider beside the model (the offline router's phrases): it names the tool call the caller's words
    ask for when it is sure, in milliseconds, so the turn need not wait for a generation."""

    def sure_call(self, request: CompletionRequest) -> ToolCall | None:
        """The one tool call the last caller message asks for beyond doubt, its arguments filled; else None."""
        ...

    def call_of(self, request: CompletionRequest, tool: str) -> ToolCall | None:
        """A call of the request's `tool` with the arguments the last caller message gives; None when a required
        one is missing, or a tool's question or a read-back awaits the caller's answer (a no to the read-back may ask
        for something else: "No, not that one, the little in-ear ones")."""
        ...

    def changed_call(self, request: CompletionRequest) -> ToolCall | None:
        """The pending read-back's call again, unconfirmed: with the change the last caller message makes to it for
        sure ("could you make it three instead?" to two), or unchanged for a yes in more words than a plain one that
        says its own quantity ("Yes, just the one bulb. The other three are fine."); else None."""
        ...

    def named_call(self, request: CompletionRequest, phrases: Mapping[str, tuple[str, ...]]) -> ToolCall | None:
        """A call of the one tool (of the request's) among `phrases`' whose phrases the last caller message says
        word for word, with no no, whatever is pending: "Can I just speak to a real person?" at a read-back."""
        ...

    def unclear(self, agent: str) -> str | None:
        """What `agent` asks when it understands nothing ("Would you like to buy something, or return something?")."""
        ...

    def asked_again(self, request: CompletionRequest) -> str | None:
        """The agent's open question said again when the last caller message answered it ("What else could I look up
        for you?") with a plain yes, which names nothing to act on; or a fixed reply the words need no model for
        (time given at a read-back to a caller who asks for it); else None."""
        ...

    def answer_call(self, request: CompletionRequest) -> ToolCall | None:
        """The call a tool's pending question asks for (swarm.confirmations.pending_question), the last caller
        message its answer, when those words plainly are one: a code of digits or an e-mail address ("It's one zero
        one one five."), no question and no no; or words that are no answer at all (a plain yes, "I don't know it"),
        for the tool to ask again or to say it cannot go on, counting no attempt. Else None."""
        ...


@runtime_checkable
class Classifier(Protocol):
    """A second opinion beside the router's phrases (a sentence classifier): the one tool of those it tells apart
    (`decides`) that the caller's last words ask for, when it is sure; never a guess."""

    def decides(self, tool: str) -> bool:
        """Whether `tool` is one of those it tells apart."""
        ...

    def sure_tool(self, request: CompletionRequest) -> str | None:
        """The name of the tool the last caller message asks for, when sure and the tool is the request's; else None."""
        ...

    def asked_tool(self, request: CompletionRequest) -> str | None:
        """The name of the tool the message's end (its last sentences) asks for on its own, when sure; else None."""
        ...


async def collect(provider: Provider, request: CompletionRequest) -> Completion:
    """Run a provider to the end and return its Completion."""
    async for item in provider.stream(request):
        if isinstance(item, Completion):
            return item
    raise ProviderError(f"provider {provider.name!r} ended without a completion")
