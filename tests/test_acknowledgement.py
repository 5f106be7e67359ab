"""A slow answer's silence is filled (callcenter.acknowledgement), in milliseconds with the fakes of
tests/voice_fakes.py: an acknowledgement when the answer is late, something short again while it stays late,
nothing on a fast turn; heard and recorded, never in the model's history; stopped with the turn."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from callcenter.acknowledgement import ACKNOWLEDGEMENTS, STILL_WORKING, Fillers
from callcenter.conversation import Conversation, VoiceSettings
from swarm.events import AssistantText
from swarm.messages import CompletionRequest
from swarm.providers.base import Completion, Delta
from swarm.registry import Agent, Registry, SwarmSpec
from tests.voice_fakes import Caller, FakeCall, FakeEndpointer, FakeSynthesizer, FakeTranscriber, running, settle, until

pytestmark = pytest.mark.timeout(20)

ANSWER = "The kettle is forty euros."
FILLERS = Fillers(after_s=0.1, still_s=0.3)
SETTINGS = VoiceSettings(greeting="Hello.", reprompt_after_s=30.0, early_reply=False, fillers=FILLERS)


class SlowModel:
    """Answers every turn after `delay_s`."""

    def __init__(self, delay_s: float) -> None:
        self.name, self.delay_s = "slow", delay_s

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        await asyncio.sleep(self.delay_s)
        yield Delta(ANSWER)
        yield Completion(ANSWER)


class Line:
    def __init__(self, delay_s: float, settings: VoiceSettings = SETTINGS) -> None:
        registry = Registry()
        registry.add_provider("slow", SlowModel(delay_s))
        registry.add_agent(Agent("desk", "You answer.", "slow"))
        registry.add_swarm(SwarmSpec("desk", ("desk",), "desk"))
        self.call = FakeCall()
        self.endpointer, self.transcriber, self.synthesizer = FakeEndpointer(), FakeTranscriber(), FakeSynthesizer()
        self.session = registry.session(self.call.call_id, "desk")
        self.conversation = Conversation(
            self.call, self.session, self.endpointer, self.transcriber, self.synthesizer, settings
        )
        self.caller = Caller(self.call, self.endpointer, self.transcriber)

    def heard(self) -> list[tuple[str, str | None]]:
        lines = self.conversation.transcript.lines
        return [(line["text"], line.get("via")) for line in lines if line["who"] == "agent"]

    async def answered(self, turns: int) -> None:
        """The agent has answered this many turns, and the caller has heard it all."""
        await until(
            lambda: len(self.conversation.transcript.turns) == turns, what=f"{turns} turns answered", timeout_s=8.0
        )
        await until(lambda: not self.call.playing, what="heard")

    async def greeted(self) -> None:
        await settle()
        await until(lambda: not self.call.playing, what="the greeting heard")


async def test_a_slow_answer_is_acknowledged_first_and_the_model_never_sees_it() -> None:
    line = Line(delay_s=0.6)
    async with running(line.conversation):
        await line.greeted()
        await line.caller.say("How much is the kettle?")
        await line.answered(1)
    assert line.heard() == [("Hello.", None), (ACKNOWLEDGEMENTS[0], "acknowledgement"), (ANSWER, None)]
    timing = line.conversation.transcript.turns[0]
    assert timing.acknowledged_s is not None and timing.first_audio_s is not None
    assert timing.acknowledged_s < timing.first_audio_s
    assert timing.breakdown()["first_sound_s"] == timing.acknowledged_s
    said = [e.text for e in line.session.events if isinstance(e, AssistantText)]
    assert ACKNOWLEDGEMENTS[0] not in " ".join(said)


async def test_a_fast_answer_has_no_acknowledgement() -> None:
    line = Line(delay_s=0.0)
    async with running(line.conversation):
        await line.greeted()
        await line.caller.say("How much is the kettle?")
        await line.answered(1)
    assert line.heard() == [("Hello.", None), (ANSWER, None)]
    assert line.conversation.transcript.turns[0].acknowledged_s is None


async def test_a_long_wait_hears_something_short_again_and_never_the_same_phrase_twice_in_a_row() -> None:
    line = Line(delay_s=1.6)
    async with running(line.conversation):
        await line.greeted()
        await line.caller.say("How much is the kettle?")
        await line.answered(1)
        await line.caller.say("And the toaster?")
        await line.answered(2)
    fillers = [text for text, via in line.heard() if via == "acknowledgement"]
    assert fillers[0] == ACKNOWLEDGEMENTS[0] and fillers[1] == STILL_WORKING[0]
    assert len(fillers) >= 4
    assert all(a != b for a, b in itertools.pairwise(fillers))


async def test_the_caller_going_on_stops_the_acknowledgements() -> None:
    line = Line(delay_s=3.0)
    async with running(line.conversation):
        await line.greeted()
        await line.caller.say("How much is the kettle?")
        await until(lambda: len(line.heard()) == 2, what="the acknowledgement")
        await line.caller.say("Sorry, I mean the blue one.", seconds=2.0)  # over it: the turn is taken back
        await until(lambda: line.heard()[-1] == (ANSWER, None), what="the answer", timeout_s=8.0)
    fillers = [text for text, via in line.heard() if via == "acknowledgement"]
    # The first turn's "still working" never came: the next filler is the new turn's acknowledgement.
    assert fillers[:2] == [ACKNOWLEDGEMENTS[0], ACKNOWLEDGEMENTS[1]]
    assert len(line.conversation.transcript.turns) == 1  # the whole sentence, answered once
