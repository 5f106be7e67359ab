"""A provider for any OpenAI-compatible chat-completions server (OpenAI, DeepSeek, vLLM, llama.cpp)."""
from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from swarm.messages import CompletionRequest, Message, ToolCall, ToolSpec
from swarm.providers.base import Completion, Delta, ProviderError, ProviderTimeout, ProviderUnavailable

_T = TypeVar("_T")

# What an admin should check first, by the HTTP status the server answered.
_STATUS_HINTS = {
    401: "check the API key",
    403: "check the API key and its permissions",
    404: "check the model name and that base_url ends in /v1",
    429: "the server is rate-limiting; lower the load or raise its limits",
}


class OpenAIProvider:
    """Streams chat completions with native tool calls through the official ``openai`` client."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        # Local servers (vLLM, llama.cpp) ignore the key, but the client refuses to start without one.
        api_key: str = "unused",
        timeout: float = 30.0,
        name: str = "openai",
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise ImportError(
                "the OpenAI-compatible provider needs the openai package: pip install 'voiceswarm[openai]'"
            ) from exc
        self._openai = openai
        self.name = name
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        # Retries are off: a caller is waiting on the line, and the session has its own fallback.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
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

        chunks = await wait(self._client.chat.completions.create(**self._body(request)))
        text: list[str] = []
        calls: dict[int, _PartialCall] = {}
        try:
            while True:
                try:
                    chunk = await wait(chunks.__anext__())
                except StopAsyncIteration:
                    break
                for choice in chunk.choices[:1]:  # n is never above 1; usage chunks have none
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        yield Delta(delta.content)
                    for part in delta.tool_calls or ():
                        calls.setdefault(part.index, _PartialCall()).add(part)
        finally:
            await chunks.close()
        yield Completion("".join(text), tuple(calls[i].finish() for i in sorted(calls)))

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [to_openai_message(m) for m in request.messages],
            "stream": True,
        }
        # Some servers reject an empty tools list, so send none at all.
        if request.tools:
            body["tools"] = [to_openai_tool(t) for t in request.tools]
        return body

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
