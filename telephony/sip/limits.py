"""Per-source limits with bounded memory: a token bucket for new INVITEs, and log lines at most once a
minute per (kind, source) so that a flood of bad packets cannot flood the log as well."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

MAX_SOURCES = 4096  # the least recently seen source is forgotten beyond this

V = TypeVar("V")


class _Bounded(OrderedDict[object, V]):
    def touch(self, key: object, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > MAX_SOURCES:
            self.popitem(last=False)


class RateLimiter:
    """`rate` events a second per key on average, with bursts of up to `burst`."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a rate limit needs rate > 0 and burst >= 1, got rate={rate} burst={burst}")
        self.rate, self.burst, self._clock = rate, burst, clock
        self._buckets: _Bounded[tuple[float, float]] = _Bounded()

    def allow(self, key: object) -> bool:
        now = self._clock()
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        allowed = tokens >= 1.0
        self._buckets.touch(key, (tokens - 1.0 if allowed else tokens, now))
        return allowed

    def retry_after(self) -> int:
        """Whole seconds until one more event is allowed (for Retry-After)."""
        return max(1, round(1.0 / self.rate))


class LogLimiter:
    """True the first time a (kind, source) is seen in each `every`-second window."""

    def __init__(self, every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.every, self._clock = every, clock
        self._last: _Bounded[float] = _Bounded()

    def allow(self, kind: str, source: str) -> bool:
        now = self._clock()
        last = self._last.get((kind, source))
        if last is not None and now - last < self.every:
            return False
        self._last.touch((kind, source), now)
        return True
