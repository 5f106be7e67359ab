"""The calls live on a node have one owner (callcenter.call.LiveConversations): a drain says its goodbye to the
calls in it, and the supervisor's feed hears of each call from it, without the page."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import cast

from callcenter.call import LiveConversations, VoiceSettings
from callcenter.conversation import Conversation, Transcript
from callcenter.supervisor import LiveCalls
from telephony.call import Call


@dataclass
class Talking:
    """A conversation as the registry and the supervisor's feed see it."""

    ending: bool = False
    goodbyes: list[str] = field(default_factory=list)
    transcript: Transcript = field(default_factory=Transcript)
    session: SimpleNamespace = field(
        default_factory=lambda: SimpleNamespace(events=[], get_agent_name=lambda: "triage")
    )
    state: str = "listening"
    settings: VoiceSettings = field(default_factory=VoiceSettings)

    def end_for_drain(self, goodbye: str) -> bool:
        if self.ending:
            return False
        self.ending = True
        self.goodbyes.append(goodbye)
        return True


def a_call(call_id: str) -> Call:
    return cast(Call, SimpleNamespace(call_id=call_id, caller="+442079460321", called="shop"))


def test_a_drain_says_goodbye_to_each_call_still_live_once() -> None:
    calls: LiveConversations[Talking] = LiveConversations()
    first, second, gone = Talking(), Talking(ending=True), Talking()
    for call_id, conversation in (("a", first), ("b", second), ("c", gone)):
        calls.add(a_call(call_id), conversation)
    calls.end("c", "completed")
    assert len(calls) == 2 and calls.get("c") is None
    assert calls.end_for_drain("We are closing. Goodbye.") == 1  # b was already saying its own goodbye
    assert first.goodbyes == ["We are closing. Goodbye."] and second.goodbyes == [] and gone.goodbyes == []
    assert calls.end_for_drain("Again.") == 0
    calls.end("a", "completed")
    calls.end("b", "completed")
    assert not calls and list(calls) == []


async def test_the_supervisors_feed_hears_of_each_call_from_the_registry() -> None:
    feed = LiveCalls(poll_s=60.0)
    calls: LiveConversations[Conversation] = LiveConversations(feed)
    conversation = cast(Conversation, Talking())
    async with contextlib.aclosing(feed.watch()) as events:
        assert (await anext(events))["calls"] == []
        calls.add(a_call("a"), conversation)
        came = await anext(events)
        assert came["event"] == "call" and came["call"]["call_id"] == "a"
        entry = calls.get("a")
        assert entry is not None and entry.conversation is conversation is feed.calls["a"].conversation
        calls.end("a", "transferred")
        assert await anext(events) == {"event": "ended", "call_id": "a", "disposition": "transferred"}
        calls.end("a", "completed")  # a call ends once: the feed is not told twice
        assert feed.calls == {}
    await feed.close()
