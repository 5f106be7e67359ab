"""A fake OpenAI-compatible server for the provider tests (aiohttp on localhost, real SSE chunk format): the
`server` fixture, and helpers to build the chunks it streams."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from swarm.messages import CompletionRequest, Message, ToolSpec
from swarm.providers.base import Completion, Delta
from swarm.providers.openai_compat import OpenAIProvider

MODEL = "qwen2.5-7b-instruct"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class FakeServer:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    handler: Handler | None = None


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def tool_piece(index: int, arguments: str, *, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    piece: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        piece |= {"id": call_id, "type": "function"}
        piece["function"]["name"] = name
    return chunk({"tool_calls": [piece]})


async def send_sse(request: web.Request, chunks: list[dict[str, Any]], pause: float = 0.0) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for item in chunks:
        await response.write(f"data: {json.dumps(item)}\n\n".encode())
        await asyncio.sleep(pause)
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def answering(chunks: list[dict[str, Any]], pause: float = 0.0) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return await send_sse(request, chunks, pause)

    return handle


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    fake = FakeServer("")

    async def completions(request: web.Request) -> web.StreamResponse:
        fake.requests.append(await request.json())
        assert fake.handler is not None, "the test set no handler"
        return await fake.handler(request)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    fake.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"  # type: ignore[union-attr]
    try:
        yield fake
    finally:
        await runner.cleanup()


def request(*messages: Message, tools: tuple[ToolSpec, ...] = ()) -> CompletionRequest:
    return CompletionRequest(agent="triage", client_id="call-1", messages=messages, tools=tools)


async def items(provider: OpenAIProvider, req: CompletionRequest) -> list[Delta | Completion]:
    return [item async for item in provider.stream(req)]
