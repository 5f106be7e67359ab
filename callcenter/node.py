"""This node's state for the dispatcher in front of it: serving, overloaded (admission control) or draining.

The SIP endpoint asks `admission()` before every new call and every OPTIONS probe: over a limit, both get
503 with Retry-After, so Kamailio's dispatcher marks the node down and sends the next calls to the others;
back under every limit, the next probe is answered 200 and the node is used again. No limit is on by default.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

log = logging.getLogger(__name__)

STATES = ("serving", "overloaded", "draining")
# CPU is measured over at least this long: one probe's worth of scheduling noise is no overload.
CPU_WINDOW_S = 2.0


@dataclass(frozen=True)
class AdmissionLimits:
    max_active_calls: int = 0  # 0: no limit (sip.max_calls still answers 486 past its hard limit)
    max_cpu_percent: float = 0.0  # of the whole machine, by this process; 0: no limit
    max_stt_delay_s: float = 0.0  # median end-of-speech-to-transcript of the last turns; 0: no limit
    retry_after_s: float = 30.0


class NodeState:
    def __init__(
        self,
        limits: AdmissionLimits,
        active_calls: Callable[[], int],
        recent_stt_s: Callable[[], Sequence[float]],
        draining: Callable[[], bool],
        *,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] = time.process_time,
        cores: int | None = None,
    ) -> None:
        self.limits = limits
        self._active_calls, self._recent_stt_s, self._draining = active_calls, recent_stt_s, draining
        self._clock, self._cpu_clock = clock, cpu_clock
        self._cores = cores or os.cpu_count() or 1
        self._sample = (clock(), cpu_clock())
        self._cpu_percent = 0.0
        self._reason: str | None = None
        self.refusals = 0

    def cpu_percent(self) -> float:
        now, cpu = self._clock(), self._cpu_clock()
        wall = now - self._sample[0]
        if wall >= CPU_WINDOW_S:
            self._cpu_percent = 100.0 * (cpu - self._sample[1]) / (wall * self._cores)
            self._sample = (now, cpu)
        return self._cpu_percent

    def stt_delay_s(self) -> float:
        recent = self._recent_stt_s()
        return median(recent) if recent else 0.0

    def overload(self) -> str | None:
        """Which limit is exceeded, in words, or None."""
        limits = self.limits
        calls = self._active_calls()
        if limits.max_active_calls and calls >= limits.max_active_calls:
            return f"{calls} calls (limit {limits.max_active_calls})"
        cpu = self.cpu_percent()
        if limits.max_cpu_percent and cpu >= limits.max_cpu_percent:
            return f"CPU {cpu:.0f}% (limit {limits.max_cpu_percent:g}%)"
        stt = self.stt_delay_s()
        if limits.max_stt_delay_s and stt >= limits.max_stt_delay_s:
            return f"speech-to-text {stt:.2f} s (limit {limits.max_stt_delay_s:g} s)"
        return None

    def admission(self) -> float | None:
        """For SipEndpoint.admission: None admits, else the Retry-After in seconds."""
        reason = self.overload()
        if reason != self._reason:  # one log line per change of state, not one per probe
            log.info("event=node_%s reason=%s", "overloaded" if reason else "serving", reason or "-")
            self._reason = reason
        if reason is None:
            return None
        self.refusals += 1
        return self.limits.retry_after_s

    @property
    def state(self) -> str:
        if self._draining():
            return "draining"
        return "overloaded" if self.overload() else "serving"

    def health(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "active_calls": self._active_calls(),
            "cpu_percent": round(self.cpu_percent(), 1),
            "stt_delay_s": round(self.stt_delay_s(), 3),
            "overload": self.overload(),
            "refusals": self.refusals,
        }
