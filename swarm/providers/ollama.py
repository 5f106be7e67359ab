"""Ollama as a provider: native tool calls, or the `<tool_call>` text protocol for models without them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

import httpx
import ollama

from swarm.constrained import SayStream, reply_schema, to_constrained_messages
from swarm.messages import CompletionRequest, Message, ToolCall, ToolSpec
from swarm.providers.base import Completion, Delta, ProviderError, ProviderTimeout, ProviderUnavailable
from swarm.text_protocol import TextProtocolStream, to_text_protocol_messages
from swarm.tool_modes import TOOL_MODES


class OllamaProvider:
    """Streams chat replies from an Ollama server through the official `ollama` client."""

    def __init__(
        self,
        host: str,
        model: str,
        *,
        options: dict[str, Any] | None = None,
        keep_alive: float | str | None = None,
        timeout: float = 30.0,
        native_tools: bool = True,
        name: str = "ollama",
        # "native", "text" or "constrained" (see OpenAIProvider); None: native_tools decides native or text.
        tool_mode: str | None = None,
        # A reply is a few spoken sentences or one call: the bound stops a model that never ends.
        max_tokens: int | None = 256,
    ) -> None:
        self.host = host
        self.model = model
        self.options = dict(options or {})
        self.keep_alive = keep_alive
        self.timeout = timeout
        self.tool_mode = tool_mode or ("native" if native_tools else "text")
        if self.tool_mode not in TOOL_MODES:
            raise ValueError(f"tool_mode is {tool_mode!r}; use one of {', '.join(TOOL_MODES)}")
        self.native_tools = self.tool_mode == "native"
        self.name = name
        if max_tokens is not None:
            self.options.setdefault("num_predict", max_tokens)

    def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        """An async generator of Deltas then one Completion; closing it early (barge-in) ends the request."""
        if self.tool_mode == "constrained":
            return self._stream_constrained(request)
        if self.tool_mode == "text" and request.tools:
            return self._stream_text_protocol(request)
        return self._stream_native(request)

    async def _stream_native(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        text, calls = "", list[Any]()
        tools = [to_ollama_tool(t) for t in request.tools]
        async with aclosing(self._chunks(to_ollama_messages(request.messages), tools)) as parts:
            async for part in parts:
                if part.message.content:
                    text += part.message.content
                    yield Delta(part.message.content)
                calls.extend(part.message.tool_calls or ())
        yield Completion(text, tuple(from_ollama_calls(calls)))

    async def _stream_text_protocol(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        reply = TextProtocolStream()
        messages = to_text_protocol_messages(request.messages, request.tools)
        async with aclosing(self._chunks(messages, [])) as parts:
            async for part in parts:
                if new := reply.feed(part.message.content or ""):
                    yield Delta(new)
        tail, spoken, calls = reply.finish()
        if tail:
            yield Delta(tail)
        yield Completion(spoken, calls)

    async def _stream_constrained(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        reply = SayStream()
        messages = to_constrained_messages(request.messages, request.tools)
        schema = reply_schema(request.tools, say=not request.tool_required)
        async with aclosing(self._chunks(messages, [], schema)) as parts:
            async for part in parts:
                if new := reply.feed(part.message.content or ""):
                    yield Delta(new)
        spoken, calls = reply.finish([t.name for t in request.tools])
        yield Completion(spoken, calls)

    async def _chunks(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> AsyncGenerator[Any, None]:
        """The reply's chunks, with every client and network failure turned into a ProviderError."""
        loop = asyncio.get_running_loop()
        # Bounded per await rather than with one asyncio.timeout across the yields: a deadline that fired
        # while the consumer runs its own code would cancel the consumer, not this stream.
        deadline = loop.time() + self.timeout
        try:
            async with ollama.AsyncClient(self.host, timeout=self.timeout) as client:
                # No I/O yet: with stream=True the request is sent on the first anext().
                chunks = await client.chat(
                    self.model,
                    messages,
                    tools=tools or None,
                    stream=True,
                    # Ollama compiles the JSON schema into a grammar: only replies it allows are decoded.
                    format=schema,
                    options=self.options or None,
                    keep_alive=self.keep_alive,
                )
                try:
                    while True:
                        async with asyncio.timeout_at(deadline):
                            try:
                                chunk = await anext(chunks)
                            except StopAsyncIteration:
                                return
                        yield chunk
                finally:
                    await chunks.aclose()
        except ollama.ResponseError as e:
            raise ProviderError(self._describe(e)) from e
        except (TimeoutError, httpx.TimeoutException) as e:
            raise ProviderTimeout(
                f"Ollama at {self.host} gave no complete reply from model {self.model!r} within {self.timeout:g} s"
            ) from e
        # The client turns a refused connection into ConnectionError only when not streaming; streaming
        # lets httpx.ConnectError through.
        except (ConnectionError, httpx.TransportError) as e:
            raise ProviderUnavailable(f"no Ollama server answers at {self.host}: {str(e) or type(e).__name__}") from e
        except ValueError as e:  # a line that is not JSON, or JSON that is not a chat chunk
            raise ProviderError(f"{self.host} does not answer like an Ollama server: {e}") from e

    def _describe(self, e: ollama.ResponseError) -> str:
        if e.status_code == 404:
            return f"model {self.model!r} is not pulled on {self.host}: run `ollama pull {self.model}` ({e.error})"
        if "does not support tools" in e.error:
            return (
                f"model {self.model!r} on {self.host} has no native tool calls: set native_tools = false "
                f"for it to use the <tool_call> text protocol ({e.error})"
            )
        status = f"HTTP {e.status_code}" if e.status_code > 0 else "mid-reply"
        return f"Ollama at {self.host} failed ({status}) with model {self.model!r}: {e.error}"


# --- native tool calls --------------------------------------------------------------------------------


def to_ollama_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            # Ollama wants arguments as an object; a malformed call's raw text cannot be sent back as one.
            item["tool_calls"] = [{"function": {"name": c.name, "arguments": c.arguments}} for c in m.tool_calls]
        if m.role == "tool" and m.tool_name:
            item["tool_name"] = m.tool_name
        out.append(item)
    return out


def to_ollama_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


def from_ollama_calls(calls: Sequence[Any]) -> list[ToolCall]:
    """Our ToolCalls from the client's; the client keeps no call id, so ids are numbered per reply."""
    # The client has already validated the arguments as a JSON object (a chunk with anything else is a
    # ValueError, reported as a broken server).
    return [ToolCall(f"call_{n}", c.function.name, dict(c.function.arguments)) for n, c in enumerate(calls)]


# --- health check ---------------------------------------------------------------------------------------


async def check_ollama(host: str, model: str, timeout: float = 2.0) -> str | None:
    """None when the Ollama server at `host` answers and has `model` pulled, else why not."""
    try:
        async with asyncio.timeout(timeout):
            async with ollama.AsyncClient(host, timeout=timeout) as client:
                listed = await client.list()
    except (TimeoutError, httpx.TimeoutException):
        return f"no Ollama server answers at {host} within {timeout:g} s"
    except (ConnectionError, httpx.TransportError):
        return f"no Ollama server answers at {host}"
    except ollama.ResponseError as e:
        return f"{host} answered GET /api/tags with HTTP {e.status_code} ({e.error}): is it an Ollama server?"
    except ValueError as e:
        return f"{host} does not answer like an Ollama server: {e}"
    names = [m.model for m in listed.models if m.model]
    if _with_tag(model) in map(_with_tag, names):
        return None
    have = ", ".join(names) or "none"
    return f"model {model!r} is not pulled on {host}: run `ollama pull {model}` (pulled: {have})"


def _with_tag(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"
