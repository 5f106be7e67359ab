"""A provider for any OpenAI-compatible chat-completions server (OpenAI, DeepSeek, vLLM, llama.cpp)."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from swarm.constrained import SayStream, reply_schema, to_constrained_messages
from swarm.messages import CompletionRequest, Message, ToolCall, ToolSpec
from swarm.providers.base import Completion, Delta, ProviderError, ProviderTimeout, ProviderUnavailable
from swarm.text_protocol import TextProtocolStream, to_text_protocol_messages
from swarm.tool_modes import TOOL_MODES

_T = TypeVar("_T")
log = logging.getLogger(__name__)
# llama.cpp's timings worth a log line: tokens processed, taken from the cache, generated, and the time of each.
_TIMING_KEYS = ("prompt_n", "cache_n", "predicted_n", "prompt_ms", "predicted_ms")

# What an admin should check first, by the HTTP status the server answered.
_STATUS_HINTS = {
    401: "check the API key",
    403: "check the API key and its permissions",
    404: "check the model name and that base_url ends in /v1",
    429: "the server is rate-limiting; lower the load or raise its limits",
}


class OpenAIProvider:
    """Streams chat completions through the official ``openai`` client.

    How tools reach the model (`tool_mode`): "native" sends them as `tools` and reads `tool_calls`; "text"
    describes them in a system message and parses `<tool_call>` blocks (servers or models without tool
    calls); "constrained" lets the server decode only replies that the schema of "say this" or "call one
    of these tools" allows (`response_format` with a JSON schema: llama.cpp's server, vLLM, OpenAI).
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        # Local servers (vLLM, llama.cpp) ignore the key, but the client refuses to start without one.
        api_key: str = "unused",
        timeout: float = 30.0,
        name: str = "openai",
        tool_mode: str = "native",
        # A reply is a few spoken sentences or one call: the bound stops a model that never ends.
        max_tokens: int | None = 256,
        # Low, as for Ollama (llm.options): servers default to ~0.8, and a phone agent should not improvise.
        temperature: float | None = 0.2,
        # Server-specific fields for a request (llama.cpp's `id_slot`), beside the OpenAI ones.
        extra_body: Callable[[CompletionRequest], dict[str, Any]] | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise ImportError(
                "the OpenAI-compatible provider needs the openai package: pip install 'voiceswarm[openai]'"
            ) from exc
        if tool_mode not in TOOL_MODES:
            raise ValueError(f"tool_mode is {tool_mode!r}; use one of {', '.join(TOOL_MODES)}")
        self._openai = openai
        self.name = name
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.tool_mode = tool_mode
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.extra_body = extra_body
        # Retries are off: a caller is waiting on the line, and the session has its own fallback.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)

    async def aclose(self) -> None:
        await self._client.close()

    def stream(self, request: CompletionRequest) -> AsyncGenerator[Delta | Completion, None]:
        """An async generator of Deltas then one Completion; closing it early (barge-in) ends the request."""
        if self.tool_mode == "text" and request.tools:
            return self._stream_text_protocol(request)
        if self.tool_mode == "constrained":
            return self._stream_constrained(request)
        return self._stream_native(request)

    async def _stream_native(self, request: CompletionRequest) -> AsyncGenerator[Delta | Completion, None]:
        text: list[str] = []
        calls: dict[int, _PartialCall] = {}
        body = self._body([to_openai_message(m) for m in request.messages], request)
        # Some servers reject an empty tools list, so send none at all.
        if request.tools:
            body["tools"] = [to_openai_tool(t) for t in request.tools]
            if request.tool_required:
                body["tool_choice"] = "required"
        timings: dict[str, float] = {}
        async with aclosing(self._deltas(body, request, timings)) as deltas:
            async for delta in deltas:
                if delta.content:
                    text.append(delta.content)
                    yield Delta(delta.content)
                for part in delta.tool_calls or ():
                    calls.setdefault(part.index, _PartialCall()).add(part)
        yield Completion("".join(text), tuple(calls[i].finish() for i in sorted(calls)), timings or None)

    async def _stream_text_protocol(self, request: CompletionRequest) -> AsyncGenerator[Delta | Completion, None]:
        reply = TextProtocolStream()
        body = self._body(to_text_protocol_messages(request.messages, request.tools), request)
        timings: dict[str, float] = {}
        async with aclosing(self._deltas(body, request, timings)) as deltas:
            async for delta in deltas:
                if new := reply.feed(delta.content or ""):
                    yield Delta(new)
        tail, spoken, calls = reply.finish()
        if tail:
            yield Delta(tail)
        yield Completion(spoken, calls, timings or None)

    async def _stream_constrained(self, request: CompletionRequest) -> AsyncGenerator[Delta | Completion, None]:
        reply = SayStream()
        body = self._body(to_constrained_messages(request.messages, request.tools), request)
        schema = reply_schema(request.tools, say=not request.tool_required)
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
        timings: dict[str, float] = {}
        async with aclosing(self._deltas(body, request, timings)) as deltas:
            async for delta in deltas:
                if new := reply.feed(delta.content or ""):
                    yield Delta(new)
        spoken, calls = reply.finish([t.name for t in request.tools])
        yield Completion(spoken, calls, timings or None)

    def _body(self, messages: list[dict[str, Any]], request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.extra_body is not None and (extra := self.extra_body(request)):
            body["extra_body"] = extra
        return body

    async def _deltas(
        self, body: dict[str, Any], request: CompletionRequest, timings: dict[str, float]
    ) -> AsyncGenerator[Any, None]:
        """The first choice's deltas, each wait on the server bounded and every failure a ProviderError.

        `timings` receives the server's account of the request (llama.cpp sends it with the last chunk)."""
        # The timeout bounds the time spent waiting on the server, summed over the whole reply. The
        # consumer's own time (speaking a sentence) is not the server's, and an asyncio.timeout around
        # the yields would fire in the consumer's code rather than here.
        loop = asyncio.get_running_loop()
        left = self.timeout

        async def wait(step: Awaitable[_T]) -> _T:
            nonlocal left
            started = loop.time()
            try:
                return await self._guard(step, left)
            finally:
                left -= loop.time() - started

        try:
            chunks = await wait(self._client.chat.completions.create(**body))
        except ProviderUnavailable:
            # llama.cpp's server closes a kept-alive connection as the client reuses it (measured: ~1 request
            # in 4 back to back). Nothing was answered yet, so asking once more, on a new connection, is safe.
            chunks = await wait(self._client.chat.completions.create(**body))
        try:
            while True:
                try:
                    chunk = await wait(chunks.__anext__())
                except StopAsyncIteration:
                    return
                if isinstance(extra := getattr(chunk, "timings", None), dict):
                    timings.update(extra)
                for choice in chunk.choices[:1]:  # n is never above 1; usage chunks have none
                    yield choice.delta
        finally:
            await chunks.close()
            if timings:
                log.info(
                    "event=llm_timings client=%s agent=%s %s",
                    request.client_id,
                    request.agent,
                    " ".join(f"{key}={timings[key]:g}" for key in _TIMING_KEYS if key in timings),
                )

    async def _guard(self, awaitable: Awaitable[_T], seconds: float) -> _T:
        """Await one step of the request, turning every failure into a ProviderError."""
        openai = self._openai
        where = f"{self.name} at {self.base_url} (model {self.model!r})"
        try:
            async with asyncio.timeout(seconds):
                return await awaitable
        except (TimeoutError, openai.APITimeoutError) as exc:
            raise ProviderTimeout(f"{where} gave no complete reply within {self.timeout:g} s") from exc
        except openai.APIConnectionError as exc:
            raise ProviderUnavailable(f"cannot reach {where}: {exc}; is the server running?") from exc
        except openai.APIStatusError as exc:
            hint = _STATUS_HINTS.get(exc.status_code, "see the server's log")
            raise ProviderError(f"{where} answered HTTP {exc.status_code}: {exc.message}; {hint}") from exc
        except openai.APIError as exc:
            raise ProviderError(f"{where} failed: {exc.message}") from exc
        except ValueError as exc:  # a chunk that is not JSON or not a chat.completion.chunk
            raise ProviderError(f"{where} sent a malformed stream: {exc}") from exc


@dataclass
class _PartialCall:
    """One tool call as its pieces arrive: the arguments come split over many chunks."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def add(self, part: Any) -> None:
        # id and name arrive whole in the first piece; later pieces may repeat or omit them.
        self.id = self.id or part.id or ""
        if part.function is not None:
            self.name = self.name or part.function.name or ""
            if part.function.arguments:
                self.arguments.append(part.function.arguments)

    def finish(self) -> ToolCall:
        call_id = self.id or f"call_{uuid.uuid4().hex[:12]}"  # llama.cpp may omit ids
        raw = "".join(self.arguments)
        if not raw.strip():
            return ToolCall(call_id, self.name, {})
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return ToolCall(call_id, self.name, parsed)
        return ToolCall(call_id, self.name, {}, raw_arguments=raw)


def to_openai_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    # Echo malformed arguments as the model wrote them, so it sees what it got wrong.
                    "function": {
                        "name": c.name,
                        "arguments": c.raw_arguments or json.dumps(c.arguments, ensure_ascii=False),
                    },
                }
                for c in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def to_openai_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }
