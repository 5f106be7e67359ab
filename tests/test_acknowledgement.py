"""A slow answer's silence is filled (callcenter.acknowledgement), in milliseconds with the fakes of
tests/voice_fakes.py: an acknowledgement when the answer is late, something short again while it stays late,
nothing on a fast turn; heard and recorded, never in the model's history; stopped with the turn."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import numpy as np
import pytest

from callcenter.acknowledgement import ACKNOWLEDGEMENTS, STILL_WORKING, Fillers, filler
from callcenter.conversation import Conversation, VoiceSettings
from callcenter.playback import Playback
from swarm.events import AssistantText
from swarm.messages import CompletionRequest
from swarm.providers.base import Completion, Delta
from swarm.registry import Agent, Registry, SwarmSpec
from tests.voice_fakes import (
    RATE,
    Caller,
    FakeCall,
    FakeEndpointer,
    FakeSynthesizer,
    FakeTranscriber,
    running,
    settle,
    until,
)

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
    def __init__(
        self,
        delay_s: float,
        settings: VoiceSettings = SETTINGS,
        call: FakeCall | None = None,
        fillers_audio: dict[str, np.ndarray] | None = None,
    ) -> None:
        registry = Registry()
        registry.add_provider("slow", SlowModel(delay_s))
        registry.add_agent(Agent("desk", "You answer.", "slow"))
        registry.add_swarm(SwarmSpec("desk", ("desk",), "desk"))
        self.call = call or FakeCall()
        self.endpointer, self.transcriber, self.synthesizer = FakeEndpointer(), FakeTranscriber(), FakeSynthesizer()
        self.session = registry.session(self.call.call_id, "desk")
        self.conversation = Conversation(
            self.call,
            self.session,
            self.endpointer,
            self.transcriber,
            self.synthesizer,
            settings,
            fillers_audio=fillers_audio,
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


def _voice(*parts: tuple[float, int]) -> np.ndarray:
    """Audio of (seconds, level) parts: a level of 0 is a pause."""
    return np.concatenate([np.full(int(seconds * RATE), level, dtype=np.int16) for seconds, level in parts])


def test_a_filler_stops_after_its_clause_and_at_the_end_of_its_voice_not_in_a_gap_between_words() -> None:
    audio = _voice((0.3, 900), (0.1, 0), (0.3, 900), (0.25, 0), (0.4, 900), (0.3, 0))
    phrase = filler("Bear with me, please.", audio)
    # The 100 ms gap between words is no stop; the comma's 250 ms pause and the end of the voice are, each
    # keeping 40 ms of quiet after the voice.
    assert phrase.stops == ((int(0.74 * RATE), "Bear with me,"), (int(1.39 * RATE), "Bear with me, please."))
    assert filler("Let me see.", audio).stops == ((int(1.39 * RATE), "Let me see."),)
    assert filler("Hello, there, you, all.", audio).stops == ((int(1.39 * RATE), "Hello, there, you, all."),)


async def test_a_cut_drops_what_the_caller_has_not_heard_and_what_comes_next_follows_there() -> None:
    call = FakeCall(speed=1.0)  # the fake's slowest: 10 times real time
    playback = Playback(call)
    playback.play(np.full(10 * RATE, 3, dtype=np.int16))
    await until(lambda: playback.heard > 0, what="playing")
    playback.cut(5 * RATE)
    playback.play(np.full(RATE, 4, dtype=np.int16))
    await until(lambda: not call.playing, what="played", timeout_s=3.0)
    heard = np.concatenate(call.sent)
    assert np.count_nonzero(heard == 3) == 5 * RATE and np.count_nonzero(heard == 4) == RATE
    assert playback.total == playback.heard == 6 * RATE


async def test_an_answer_ready_mid_phrase_follows_the_phrase_s_clause_not_its_end() -> None:
    clause, rest = 8.0, 4.0  # heard in 0.8 and 0.4 s: the fake plays 10 times faster than real time
    rendered = {ACKNOWLEDGEMENTS[0]: _voice((clause, 900), (0.25, 0), (rest, 900), (0.3, 0))}
    line = Line(delay_s=0.1 + 0.4, call=FakeCall(speed=1.0), fillers_audio=rendered)  # ready inside the clause
    async with running(line.conversation):
        await line.greeted()
        await line.caller.say("How much is the kettle?")
        await line.answered(1)
    first, _, _ = ACKNOWLEDGEMENTS[0].partition(",")
    assert line.heard()[1:] == [(first + ",", "acknowledgement"), (ANSWER, None)]
    heard = np.concatenate(line.call.sent)
    assert np.count_nonzero(heard == 900) == int(clause * RATE)  # the clause whole, nothing of the rest
