"""The 20 ms media clock of every call's audio out (RTP sessions, AudioSocket calls): one chain of loop timers
on an absolute schedule (start + n * 20 ms, so no drift), ticking every session registered with it.

An endpoint (or an AudioSocket server) shares one clock among all its calls: one timer callback per 20 ms sends
every call's packet and then takes in what every call received, where a timer and a socket callback per call cost
a TimerHandle, a heap push and pop and a loop pass per call per packet. Each session still sends exactly every
20 ms; calls share the instant, not the audio. All sends go first, so that no call's packet waits for the others' input.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

log = logging.getLogger(__name__)

PTIME = 0.020
MAX_CATCH_UP = 3  # a late event loop sends at most this many missed packets back to back, then skips


class Ticked(Protocol):
    def on_slot(self, skipped: int) -> None:
        """Send this slot's packet; `skipped` slots before it were given up because the loop was too late."""

    def after_slot(self) -> None:
        """Take in what arrived (after every session has sent)."""


class MediaClock:
    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._sessions: dict[int, Ticked] = {}  # by id(): insertion order is tick order, kept stable
        self._timer: asyncio.Handle | None = None
        self._next_slot = 0.0
        self._in_slot = False  # sessions come and go during a slot: the slot itself decides what follows

    def add(self, session: Ticked) -> None:
        """Tick `session` from the next slot on (the first one starts the clock at once)."""
        self._sessions[id(session)] = session
        if self._timer is None and not self._in_slot:
            self._next_slot = self._loop.time()
            self._timer = self._loop.call_soon(self._on_slot)

    def discard(self, session: Ticked) -> None:
        self._sessions.pop(id(session), None)
        if not self._sessions and self._timer is not None and not self._in_slot:
            self._timer.cancel()
            self._timer = None

    def _on_slot(self) -> None:
        behind = int((self._loop.time() - self._next_slot) / PTIME)
        skipped = max(0, behind - MAX_CATCH_UP)  # keep the clock: skip slots rather than flood the peers
        self._next_slot += skipped * PTIME
        sessions = list(self._sessions.values())
        self._in_slot = True
        try:
            for session in sessions:
                try:
                    session.on_slot(skipped)
                except Exception:  # one session's bug must not silence the others
                    log.exception("event=media_slot_failed session=%r", session)
            for session in sessions:
                try:
                    session.after_slot()
                except Exception:
                    log.exception("event=media_slot_failed session=%r", session)
        finally:
            self._in_slot = False
        self._next_slot += PTIME  # a slot already due runs on the next loop pass: missed packets go promptly
        self._timer = self._loop.call_at(self._next_slot, self._on_slot) if self._sessions else None
