"""A deterministic model for tests and benchmarks: replies and tool calls from a script."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from swarm.messages import CompletionRequest, ToolCall
from swarm.providers.base import Completion, Delta, ProviderError

Step = Completion | Exception | str
Script = Iterable[Step] | Callable[[CompletionRequest], Step]


def reply(text: str = "", *calls: tuple[str, dict[str, Any]]) -> Completion:
    """A scripted completion: text and (name, arguments) tool calls."""
    return Completion(text, tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls)))


class ScriptedProvider:
    def __init__(self, script: Script, *, name: str = "scripted", delay: float = 0.0) -> None:
        self.name = name
        self.delay = delay
        self.requests: list[CompletionRequest] = []
        self._script = script if callable(script) else iter(script)
        self._ids = itertools.count()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        self.requests.append(request)
        step = self._script(request) if callable(self._script) else next(self._script, None)
        if step is None:
            raise ProviderError(f"scripted provider {self.name!r} ran out of replies")
        if self.delay:
            await asyncio.sleep(self.delay)
        if isinstance(step, Exception):
            raise step
        completion = Completion(step) if isinstance(step, str) else step
        for word in completion.text.split(" "):
            if word:
                yield Delta(word + " ")
        # Fresh ids per call, as a real model gives, so resumed histories never repeat one.
        calls = tuple(
            ToolCall(f"call_{next(self._ids)}", c.name, c.arguments, c.raw_arguments) for c in completion.tool_calls
        )
        yield Completion(completion.text, calls)
