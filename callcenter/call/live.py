"""The calls live on this node: one registry, kept by whoever answers the calls (the voice service adds each call
it answers and ends it when it is over) and read by whatever acts on all of them: a drain says its goodbye to each
call still live and waits for them to end; the supervisor's feed is told of each call coming and going.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from telephony import Call


class Drainable(Protocol):
    def end_for_drain(self, goodbye: str) -> bool: ...


C = TypeVar("C", bound=Drainable)
C_in = TypeVar("C_in", bound=Drainable, contravariant=True)


class Watcher(Protocol[C_in]):
    """Told of each call as it comes and goes (the supervisor's feed, callcenter.supervisor.LiveCalls)."""

    def add(self, call: Call, conversation: C_in) -> None: ...

    def end(self, call_id: str, disposition: str) -> None: ...


@dataclass(frozen=True)
class LiveConversation(Generic[C]):
    call: Call
    conversation: C


class LiveConversations(Generic[C]):
    """The live calls by call id, each with its conversation; `watchers` are told of each call added and ended."""

    def __init__(self, *watchers: Watcher[C]) -> None:
        self._calls: dict[str, LiveConversation[C]] = {}
        self._watchers = watchers

    def add(self, call: Call, conversation: C) -> None:
        self._calls[call.call_id] = LiveConversation(call, conversation)
        for watcher in self._watchers:
            watcher.add(call, conversation)

    def end(self, call_id: str, disposition: str) -> None:
        if self._calls.pop(call_id, None) is not None:
            for watcher in self._watchers:
                watcher.end(call_id, disposition)

    def get(self, call_id: str) -> LiveConversation[C] | None:
        return self._calls.get(call_id)

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[LiveConversation[C]]:
        """The calls live now (a copy: calls may end while it is read)."""
        return iter(list(self._calls.values()))

    def end_for_drain(self, goodbye: str) -> int:
        """The node is going away: each call still live hears `goodbye` and ends (callcenter.call.rules' drain).
        Returns how many goodbyes are said (a call already ending says its own)."""
        return sum(live.conversation.end_for_drain(goodbye) for live in self)
