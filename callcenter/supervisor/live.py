"""A feed of what happens in the calls in progress on this node, for the supervisor's page.

The node's registry of live calls (callcenter.call.LiveConversations, the voice service's) tells the feed of each
call as it comes and goes; the feed looks at the live conversations a few times a second and publishes what
changed (transcript lines, tool calls, the active agent, the state, each turn's latencies). Looking, rather than
hooks in every place a conversation changes, keeps the conversation's code as it is: it only says what state it is
in. A supervisor sees a change within POLL_S.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from callcenter.conversation import Conversation
from callcenter.verification import MASKED_ANSWER, answering
from swarm import ToolCalled
from telephony import Call

log = logging.getLogger(__name__)

POLL_S = 0.2
# Events a watcher may fall behind by before it is dropped (its page reconnects and gets a new snapshot).
QUEUE_EVENTS = 1000

Event = dict[str, Any]


@dataclass
class LiveCall:
    call: Call
    conversation: Conversation
    started_at: float = field(default_factory=time.time)
    items: list[Event] = field(default_factory=list)  # transcript lines and tool calls, in the order they happened
    state: str = ""
    agent: str = ""
    turns: int = 0
    # What was published, by id(): the transcript lines (with their items) and the tool calls. Holding them keeps
    # them alive, so that no new line or event can be given the id of one that went.
    _lines: dict[int, tuple[dict[str, Any], Event]] = field(default_factory=dict)
    _tools: dict[int, ToolCalled] = field(default_factory=dict)
    _next: int = 0

    def number(self, item: Event) -> Event:
        item["n"], self._next = self._next, self._next + 1  # the page finds an item again by its number
        self.items.append(item)
        return item

    def view(self) -> Event:
        conversation = self.conversation
        return {
            "call_id": self.call.call_id,
            "caller": self.call.caller,
            "called": self.call.called,
            "started_at": self.started_at,
            "state": self.state,
            "agent": self.agent,
            "items": list(self.items),
            "turns": [timing.breakdown() for timing in conversation.transcript.turns[: self.turns]],
            "can_hand_over": conversation.settings.operator is not None,
        }


class LiveCalls:
    """Live calls by call id; `watch()` yields a snapshot, then every change, as JSON-ready dicts."""

    def __init__(self, poll_s: float = POLL_S) -> None:
        self.poll_s = poll_s
        self.calls: dict[str, LiveCall] = {}
        self._watchers: set[asyncio.Queue[Event | None]] = set()
        self._ticker: asyncio.Task[None] | None = None

    def add(self, call: Call, conversation: Conversation) -> None:
        live = self.calls[call.call_id] = LiveCall(call, conversation)
        self._update(live, announce=False)
        self._publish({"event": "call", "call": live.view()})
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._tick())

    def end(self, call_id: str, disposition: str) -> None:
        live = self.calls.pop(call_id, None)
        if live is not None:
            self._update(live)
            self._publish({"event": "ended", "call_id": call_id, "disposition": disposition})

    async def watch(self) -> AsyncGenerator[Event, None]:
        queue: asyncio.Queue[Event | None] = asyncio.Queue(QUEUE_EVENTS)
        for live in self.calls.values():
            self._update(live)  # what the others are told next is not in this snapshot twice
        snapshot = {"event": "snapshot", "calls": [live.view() for live in self.calls.values()]}
        self._watchers.add(queue)  # now, not after the snapshot is read: what happens meanwhile is queued
        try:
            yield snapshot
            while (event := await queue.get()) is not None:
                yield event
        finally:
            self._watchers.discard(queue)

    def hand_over(self, call_id: str) -> bool:
        """The same transfer as the caller's keypad 0; False for a call that is gone, ending, or has nobody to go to."""
        live = self.calls.get(call_id)
        if live is None or live.conversation.settings.operator is None:
            return False
        log.info("event=supervisor_hand_over call=%s", call_id)
        return live.conversation.hand_to_person("supervisor")

    async def hang_up(self, call_id: str) -> bool:
        live = self.calls.get(call_id)
        if live is None:
            return False
        log.info("event=supervisor_hang_up call=%s", call_id)
        await live.call.hangup()
        return True

    async def close(self) -> None:
        for queue in self._watchers:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)

    async def _tick(self) -> None:
        while self.calls:
            await asyncio.sleep(self.poll_s)
            for live in list(self.calls.values()):
                try:
                    self._update(live)
                except Exception:  # one odd call must not stop the feed of the others
                    log.exception("event=live_feed_failed call=%s", live.call.call_id)

    def _update(self, live: LiveCall, *, announce: bool = True) -> None:
        """Publish what changed in one call since the last look (or only take it in, for a new call)."""
        call_id = live.call.call_id
        out: list[Event] = []
        lines = live.conversation.transcript.lines
        current = {id(line) for line in lines}
        unsaid = [key for key in live._lines if key not in current]  # the caller never heard them (a barge-in)
        if unsaid:
            gone = [live._lines.pop(key)[1]["n"] for key in unsaid]
            live.items = [item for item in live.items if item["n"] not in gone]
            out.append({"event": "unsaid", "call_id": call_id, "items": gone})
        session = live.conversation.session
        caller_turn = 0
        for line in lines:
            if line.get("who") == "caller":
                caller_turn += 1
            if id(line) not in live._lines:
                # The caller's answer to a security question is never shown, not even for a moment: the line that
                # follows an open question is masked before it is published (the tool's argument is masked by
                # views.shown, the past call's line by views.interleaved).
                answer = line.get("who") == "caller" and answering(session.events, caller_turn)
                item = live.number({"kind": "line", **line, **({"text": MASKED_ANSWER} if answer else {})})
                live._lines[id(line)] = (line, item)
                out.append({"event": "item", "call_id": call_id, "item": item})
        for happened in session.events:
            if isinstance(happened, ToolCalled) and id(happened) not in live._tools:
                live._tools[id(happened)] = happened
                item = live.number(
                    {
                        "kind": "tool",
                        "at": time.time(),
                        "agent": happened.agent,
                        "name": happened.name,
                        "arguments": happened.arguments,
                        "result": happened.result,
                    }
                )
                out.append({"event": "item", "call_id": call_id, "item": item})
        turns = live.conversation.transcript.turns
        for timing in turns[live.turns :]:
            out.append({"event": "turn", "call_id": call_id, "turn": timing.breakdown()})
        live.turns = len(turns)
        for key, value in (("state", live.conversation.state), ("agent", session.get_agent_name())):
            if getattr(live, key) != value:
                setattr(live, key, value)
                out.append({"event": key, "call_id": call_id, key: value})
        if announce:
            for event in out:
                self._publish(event)

    def _publish(self, event: Event) -> None:
        for queue in list(self._watchers):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:  # a watcher that stopped reading: its page reconnects for a new snapshot
                self._watchers.discard(queue)
                queue.get_nowait()
                queue.put_nowait(None)
                log.warning("event=live_watcher_dropped behind=%d", queue.qsize())
