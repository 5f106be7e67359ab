"""A small Ollama-compatible HTTP server for tests, answering /api/chat from a script.

    async with FakeOllama([Reply("Hello there."), Reply(tool_calls=[("find_product", {"query": "kettle"})])]) as server:
        provider = OllamaProvider(server.url, "qwen3:4b")
        ...
        assert server.requests[0]["messages"][-1]["content"] == "..."

It speaks what the `ollama` client 0.6.x expects: `stream: true` (Ollama's default) gives
`application/x-ndjson`, the content word by word in `done: false` lines, tool calls (arguments as JSON
objects) in a line of their own, then a `done: true` line with durations in nanoseconds; `stream: false`
gives one JSON object. `GET /api/tags` lists `models`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self

from aiohttp import web


@dataclass
class Reply:
    """One scripted answer to POST /api/chat."""

    content: str = ""
    # (name, arguments object), sent as Ollama's {"function": {"name", "arguments"}}.
    tool_calls: list[tuple[str, dict]] = field(default_factory=list)
    # Seconds before the first byte of the response.
    delay: float = 0.0
    # With status 200: sent as an {"error": ...} line after the content when streaming, or as a JSON body
    # with status 500 when not streaming.
    error: str | None = None
    # Anything but 200: the whole answer is this status with {"error": error or a default} as its body.
    status: int = 200


class FakeOllama:
    """An Ollama server on 127.0.0.1 on a free port, for the duration of an `async with`.

    `script` is either the replies in order (a request past its end gets a 500), or a callable that
    receives each /api/chat request body and returns the Reply to it. `models` are the names /api/tags
    lists; a chat request for any other model gets Ollama's 404. `url` is "http://127.0.0.1:PORT";
    `requests` holds every /api/chat request body received, in order.
    """

    def __init__(
        self,
        script: list[Reply] | Callable[[dict], Reply],
        models: tuple[str, ...] = ("qwen3:4b",),
    ) -> None:
        self.script = script
        self.models = models
        self.requests: list[dict] = []
        self.url = ""
        self._served = 0
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/", self._root)
        app.router.add_get("/api/tags", self._tags)
        app.router.add_post("/api/chat", self._chat)
        # Cancel handlers whose client left (a test that timed out), and don't wait on them at exit.
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _root(self, request: web.Request) -> web.Response:
        return web.Response(text="Ollama is running")

    async def _tags(self, request: web.Request) -> web.Response:
        return web.json_response({"models": [_model_entry(name) for name in self.models]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        model = body.get("model", "")
        if _with_tag(model) not in map(_with_tag, self.models):
            return _error(404, f'model "{model}" not found, try pulling it first')
        reply = self._next_reply(body)
        if reply is None:
            return _error(500, f"FakeOllama script exhausted after {self._served} replies")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            return _error(reply.status, reply.error or f"scripted HTTP {reply.status}")
        if body.get("stream", True):
            return await self._stream(request, model, reply)
        if reply.error:
            return _error(500, reply.error)
        message = {"role": "assistant", "content": reply.content, **_tool_calls(reply)}
        return web.json_response({**_head(model), "message": message, **_done(reply)})

    def _next_reply(self, body: dict) -> Reply | None:
        if callable(self.script):
            reply = self.script(body)
        elif self._served < len(self.script):
            reply = self.script[self._served]
        else:
            return None
        self._served += 1
        return reply

    async def _stream(self, request: web.Request, model: str, reply: Reply) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        lines = [
            {**_head(model), "message": {"role": "assistant", "content": word}, "done": False}
            for word in re.findall(r"\s*\S+\s*|\s+", reply.content)
        ]
        if reply.tool_calls:
            lines.append(
                {**_head(model), "message": {"role": "assistant", "content": "", **_tool_calls(reply)}, "done": False}
            )
        if reply.error:
            lines.append({"error": reply.error})
        else:
            lines.append({**_head(model), "message": {"role": "assistant", "content": ""}, **_done(reply)})
        for line in lines:
            await response.write(json.dumps(line).encode() + b"\n")
            # Let each line leave as its own chunk, as a real token stream does.
            await asyncio.sleep(0)
        await response.write_eof()
        return response


def _head(model: str) -> dict[str, Any]:
    return {"model": model, "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z")}


def _tool_calls(reply: Reply) -> dict[str, Any]:
    if not reply.tool_calls:
        return {}
    return {"tool_calls": [{"function": {"name": name, "arguments": args}} for name, args in reply.tool_calls]}


def _done(reply: Reply) -> dict[str, Any]:
    words = len(reply.content.split()) + len(reply.tool_calls)
    return {
        "done": True,
        "done_reason": "stop",
        "total_duration": 250_000_000,
        "load_duration": 10_000_000,
        "prompt_eval_count": 42,
        "prompt_eval_duration": 40_000_000,
        "eval_count": words,
        "eval_duration": 200_000_000,
    }


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _model_entry(name: str) -> dict[str, Any]:
    family = name.split(":")[0].split("/")[-1]
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-05-01T10:00:00.000000000Z",
        "size": 2_600_000_000,
        "digest": "0" * 64,
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": family,
            "families": [family],
            "parameter_size": "4.0B",
            "quantization_level": "Q4_K_M",
        },
    }


def _with_tag(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"
