"""A completion started before the caller's turn is certain (at their first pause), read ahead into a buffer.

Only the model's stream is read: no tool runs and nothing is recorded, so throwing it away leaves the
session as it was. `Session.stream` takes it for the turn's first request when that request is the very
same (same agent, same history with the same caller words, same tools); the turn then goes on as
usual, tools and validation included, from the buffered items.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from swarm.messages import CompletionRequest
from swarm.providers.base import Completion, Delta, Provider


class Speculation:
    """The first completion a turn would ask for, started now; `items` replays it as the provider gave it."""

    def __init__(self, provider: Provider, request: CompletionRequest) -> None:
        self.request = request
        self.taken = False  # a turn asked exactly this request and read it
        self.cancelled = False
        self._items: list[Delta | Completion] = []
        self._error: Exception | None = None
        self._done = False
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._read(provider))

    async def _read(self, provider: Provider) -> None:
        try:
            async with contextlib.aclosing(provider.stream(self.request)) as items:  # type: ignore[type-var]
                async for item in items:
                    self._items.append(item)
                    self._changed.set()
        except Exception as error:  # noqa: BLE001 - given to whoever takes the stream, where it is handled as usual
            self._error = error
        finally:
            self._done = True
            self._changed.set()

    def cancel(self) -> None:
        """Stop the model (its stream is closed, so a server stops generating); a cancelled one is never taken."""
        self.cancelled = True
        self._task.cancel()

    async def items(self) -> AsyncIterator[Delta | Completion]:
        """The provider's items as it gave them, the buffered ones at once, then the rest as they come."""
        index = 0
        try:
            while True:
                while index < len(self._items):
                    yield self._items[index]
                    index += 1
                if self._done:
                    if self._error is not None:
                        raise self._error
                    return
                self._changed.clear()
                await self._changed.wait()
        finally:
            self.cancel()  # a turn interrupted (or done) stops the model as a live stream would
