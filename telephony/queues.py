"""A bounded queue for real-time streams: when the consumer falls behind, the oldest item goes."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class DropOldestQueue(Generic[T]):
    """Filled from protocol callbacks (put never blocks), read with `async for`, which ends after close()."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError(f"queue size must be at least 1, got {maxsize}")
        self.maxsize = maxsize
        self.dropped = 0
        self._items: deque[T] = deque()
        self._ready = asyncio.Event()
        self._closed = False

    def put(self, item: T) -> None:
        if self._closed:
            return
        if len(self._items) >= self.maxsize:
            self._items.popleft()
            self.dropped += 1
        self._items.append(item)
        self._ready.set()

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    def __len__(self) -> int:
        return len(self._items)

    def __aiter__(self) -> DropOldestQueue[T]:
        return self

    async def __anext__(self) -> T:
        while not self._items:
            if self._closed:
                raise StopAsyncIteration
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()
