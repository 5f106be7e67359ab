"""Ollama as a provider: native tool calls, or the `<tool_call>` text protocol for models without them."""
from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

import httpx
import ollama

from swarm.messages import CompletionRequest, Message, ToolCall, ToolSpec
from swarm.providers.base import Completion, Delta, ProviderError, ProviderTimeout, ProviderUnavailable

DEFAULT_HOST = "http://127.0.0.1:11434"

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
# An unclosed block runs to the end of the reply: small models often forget the closing tag.
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_COMPLETE_BLOCK = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')


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
    ) -> None:
        self.host = host
        self.model = model
        self.options = dict(options or {})
        self.keep_alive = keep_alive
        self.timeout = timeout
        self.native_tools = native_tools
        self.name = name

    def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        """An async generator of Deltas then one Completion; closing it early (barge-in) ends the request."""
        if self.native_tools:
            return self._stream_native(request)
        return self._stream_text_protocol(request)

    async def _stream_native(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        text, calls = "", []
        tools = [to_ollama_tool(t) for t in request.tools]
        async with aclosing(self._chunks(to_ollama_messages(request.messages), tools)) as parts:
            async for part in parts:
                if part.message.content:
                    text += part.message.content
                    yield Delta(part.message.content)
                calls.extend(part.message.tool_calls or ())
        yield Completion(text, tuple(from_ollama_calls(calls)))

    async def _stream_text_protocol(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        text, sent = "", ""
        messages = to_text_protocol_messages(request.messages, request.tools)
        async with aclosing(self._chunks(messages, [])) as parts:
            async for part in parts:
                text += part.message.content or ""
                if len(visible := visible_text(text)) > len(sent):
                    yield Delta(visible[len(sent):])
                    sent = visible
        # A trailing "<" that never became a tag is ordinary text after all.
        if len(visible := visible_text(text, final=True)) > len(sent):
            yield Delta(visible[len(sent):])
        spoken, calls = parse_tool_calls(text)
        yield Completion(spoken, calls)

    async def _chunks(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AsyncIterator[Any]:
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


# --- the <tool_call> text protocol --------------------------------------------------------------------


def tool_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system message that teaches a model without native tool calls how to call ours."""
    listing = "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}, ensure_ascii=False)
        for t in tools
    )
    return (
        "You can call these tools, each described as JSON with its parameters' JSON schema:\n"
        f"<tools>\n{listing}\n</tools>\n"
        "To call a tool, write a block like this, with arguments as a JSON object matching the schema:\n"
        '<tool_call>{"name": "tool_name", "arguments": {"parameter": "value"}}</tool_call>\n'
        "Write one block per call; you may write several. Each result comes back to you as "
        '<tool_response name="tool_name">result</tool_response>. '
        "When no tool is needed, answer in plain text without any block."
    )


def render_tool_call(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        # Show the model its own malformed block, so the error that follows makes sense to it.
        return f"{_OPEN}{call.raw_arguments}{_CLOSE}"
    return f"{_OPEN}{json.dumps({'name': call.name, 'arguments': call.arguments}, ensure_ascii=False)}{_CLOSE}"


def render_tool_response(name: str, content: str) -> str:
    return f'<tool_response name="{name}">\n{content}\n</tool_response>'


def to_text_protocol_messages(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Ollama messages for a model that knows only system, user and assistant text."""
    out: list[dict[str, Any]] = []
    last_was_tool = False
    for m in messages:
        if m.role == "tool":
            text = render_tool_response(m.tool_name or "", m.content)
            if last_was_tool:  # several results of one turn go back as one user message
                out[-1]["content"] += "\n" + text
            else:
                out.append({"role": "user", "content": text})
            last_was_tool = True
            continue
        content = m.content
        if m.role == "assistant" and m.tool_calls:
            content = "\n".join([content, *map(render_tool_call, m.tool_calls)]).lstrip("\n")
        out.append({"role": m.role, "content": content})
        last_was_tool = False
    if tools:
        # Right after the agent's own system prompt: the instructions stay early and in a stable place,
        # which keeps Ollama's prompt cache useful from one turn to the next.
        at = next((i for i, item in enumerate(out) if item["role"] != "system"), len(out))
        out.insert(at, {"role": "system", "content": tool_prompt(tools)})
    return out


def parse_tool_calls(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """Split a reply into its text outside `<tool_call>` blocks and the calls the blocks hold."""
    calls = tuple(_parse_block(body, f"call_{n}") for n, body in enumerate(_BLOCK.findall(text)))
    return _BLOCK.sub("", text).strip(), calls


def _parse_block(body: str, call_id: str) -> ToolCall:
    raw = body.strip()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        found = _NAME.search(raw)
        return ToolCall(call_id, found.group(1) if found else "", {}, raw_arguments=raw)
    # Llama-style models write "parameters"; some write the arguments as a JSON string.
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    if not isinstance(arguments, dict):
        return ToolCall(call_id, data["name"], {}, raw_arguments=raw)
    return ToolCall(call_id, data["name"], arguments)


def visible_text(text: str, final: bool = False) -> str:
    """The part of a growing reply that may be spoken: never anything that is or may become a block.

    It only ever grows as `text` grows, so a stream can send the new tail as a Delta.
    """
    shown = _COMPLETE_BLOCK.sub("", text)
    if (start := shown.find(_OPEN)) >= 0:
        return shown[:start]
    if not final:
        for size in range(min(len(_OPEN) - 1, len(shown)), 0, -1):
            if _OPEN.startswith(shown[-size:]):
                return shown[:-size]
    return shown


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
