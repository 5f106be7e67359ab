"""The caller's first pause, in milliseconds with the fakes of tests/voice_fakes.py: the model started there
(voice.early_reply) is taken when the caller stays silent and dropped without a trace when they go on; words
of a finished sentence end the turn sooner (voice.finished_silence_ms)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from callcenter.conversation import Conversation, VoiceSettings
from swarm.events import ToolCalled, UserText
from swarm.messages import CompletionRequest, ToolCall
from swarm.providers.base import Completion, Delta
from swarm.registry import Agent, Registry, SwarmSpec
from swarm.speculation import Speculation
from swarm.tools import tool_from_function
from tests.voice_fakes import Caller, FakeCall, FakeEndpointer, FakeSynthesizer, FakeTranscriber, running, settle, until

pytestmark = pytest.mark.timeout(20)

SETTINGS = VoiceSettings(greeting="Hello.", reprompt_after_s=30.0, early_reply=True)


class NoteTaker:
    """A model that notes down what the caller said (a tool with a side effect), then says so."""

    def __init__(self, delay_s: float = 0.05) -> None:
        self.name, self.delay_s = "notes", delay_s
        self.requests: list[CompletionRequest] = []
        self.finished: list[CompletionRequest] = []  # requests whose stream ran to its end

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        self.requests.append(request)
        await asyncio.sleep(self.delay_s)
        last = request.messages[-1]
        if last.role == "tool":
            yield Delta("Noted, thank you.")
            yield Completion("Noted, thank you.")
        else:
            yield Completion("", (ToolCall(f"call_{len(self.requests)}", "note", {"text": last.content}),))
        self.finished.append(request)


class Line:
    def __init__(self, settings: VoiceSettings = SETTINGS) -> None:
        self.notes: list[str] = []

        def note(text: str) -> dict:
            """Note down what the caller said."""
            self.notes.append(text)
            return {"noted": True}

        self.model = NoteTaker()
        registry = Registry()
        registry.add_provider("notes", self.model)
        registry.add_tool(tool_from_function(note))
        registry.add_agent(Agent("desk", "You take notes.", "notes", ("note",)))
        registry.add_swarm(SwarmSpec("desk", ("desk",), "desk"))
        self.call = FakeCall()
        self.endpointer, self.transcriber, self.synthesizer = FakeEndpointer(), FakeTranscriber(), FakeSynthesizer()
        self.session = registry.session(self.call.call_id, "desk")
        self.conversation = Conversation(
            self.call, self.session, self.endpointer, self.transcriber, self.synthesizer, settings
        )
        self.caller = Caller(self.call, self.endpointer, self.transcriber)

    def said(self) -> list[str]:
        return [line["text"] for line in self.conversation.transcript.lines if line["who"] == "agent"]

    def user_texts(self) -> list[str]:
        return [e.text for e in self.session.events if isinstance(e, UserText)]

    async def agent_done(self) -> None:
        await settle()
        await until(
            lambda: (
                not self.call.playing and not self.conversation.hearing.transcribing and not self.conversation.answering
            ),
            what="agent done",
        )


async def test_the_model_started_at_the_pause_is_the_turns_when_the_caller_stays_silent() -> None:
    line = Line()
    async with running(line.conversation):
        await line.agent_done()
        await line.caller.start()
        audio = await line.caller.pause("Please note my name.")
        await until(lambda: line.model.finished, what="the model's start on the pause")
        # Read ahead only: the tool call is known, but nothing ran and nothing is in the session.
        assert line.notes == [] and line.user_texts() == []
        assert not [e for e in line.session.events if isinstance(e, ToolCalled)]
        await line.caller.finish(audio)
        await line.agent_done()
    assert line.notes == ["Please note my name."]
    assert line.user_texts() == ["Please note my name."]
    assert line.said()[-1] == "Noted, thank you."
    # The pause's request served the turn: one request for it, one after the tool's result.
    assert [m.content for m in line.model.requests[0].messages if m.role == "user"] == ["Please note my name."]
    assert len(line.model.requests) == 2
    assert [t.early_reply for t in line.conversation.transcript.turns] == [True]


async def test_the_model_started_at_the_pause_is_dropped_when_the_caller_goes_on() -> None:
    line = Line()
    async with running(line.conversation):
        await line.agent_done()
        history = line.session.get_raw_history()
        await line.caller.start()
        await line.caller.pause("Please note my name.")
        await until(lambda: line.model.finished, what="the model's start on the pause")
        await line.caller.end("Please note my name is Ann.", 2.0)
        await line.agent_done()
    # The tool call read ahead for "Please note my name." never ran, and its words never reached the history.
    assert line.notes == ["Please note my name is Ann."]
    assert line.user_texts() == ["Please note my name is Ann."]
    assert line.session.get_raw_history()[: len(history)] == history
    assert "Please note my name." not in [m.content for m in line.session.get_raw_history()]
    assert len(line.model.requests) == 3  # the dropped start, then the turn's own two
    assert [t.early_reply for t in line.conversation.transcript.turns] == [False]


async def thinking_at_the_pause(line: Line) -> Speculation | None:
    """The caller pauses and the model, slow to answer, starts on the pause's words: that start."""
    line.model.delay_s = 5.0
    await line.agent_done()
    await line.caller.start()
    await line.caller.pause("Please note my name.")
    await until(lambda: line.model.requests, what="the model's start on the pause")
    return line.conversation.hearing.speculation


async def test_a_caller_who_goes_on_stops_the_model_started_at_the_pause() -> None:
    line = Line()
    async with running(line.conversation):
        started = await thinking_at_the_pause(line)
        line.model.delay_s = 0.0
        await line.caller.end("Please note my name is Ann.", 2.0)
        await line.agent_done()
    assert started is not None and started._task.cancelled()
    assert line.model.requests[0] not in line.model.finished and line.notes == ["Please note my name is Ann."]


async def test_the_voice_coming_back_after_a_pause_stops_the_model_started_there_at_once() -> None:
    line = Line()
    async with running(line.conversation):
        started = await thinking_at_the_pause(line)
        await line.caller.resume()  # still talking: the turn has not ended
        assert started is not None and started._task.cancelled()
        assert line.conversation.hearing.at_pause is None and line.conversation.hearing.speculation is None
        line.model.delay_s = 0.0
        await line.caller.end("Please note my name is Ann.", 2.0)
        await line.agent_done()
    assert line.notes == ["Please note my name is Ann."]


async def test_words_that_stop_mid_sentence_do_not_start_the_model() -> None:
    line = Line()
    async with running(line.conversation):
        await line.agent_done()
        await line.caller.start()
        await line.caller.pause("Please note my")  # the turn will wait for the rest (turn_words.unfinished)
        await until(
            lambda: (
                line.conversation.hearing.at_pause is not None
                and line.conversation.hearing.at_pause.transcription.done()
            )
        )
        await settle()
        assert line.model.requests == [] and line.conversation.hearing.speculation is None
        await line.caller.end("Please note my name is Ann.", 2.0)
        await line.agent_done()
    assert line.notes == ["Please note my name is Ann."] and len(line.model.requests) == 2


async def test_off_the_model_waits_for_the_end_of_the_turn() -> None:
    line = Line(replace(SETTINGS, early_reply=False))
    async with running(line.conversation):
        await line.agent_done()
        await line.caller.start()
        audio = await line.caller.pause("Please note my name.")
        await settle(0.1)
        assert line.model.requests == []
        await line.caller.finish(audio)
        await line.agent_done()
    assert line.notes == ["Please note my name."] and len(line.model.requests) == 2


async def pause_heard(line: Line, text: str) -> None:
    await line.agent_done()
    await line.caller.start()
    await line.caller.pause(text)
    await until(
        lambda: (
            line.conversation.hearing.at_pause is not None and line.conversation.hearing.at_pause.transcription.done()
        )
    )
    await settle()


@pytest.mark.parametrize("early_reply", [True, False])
async def test_a_finished_sentence_at_the_pause_ends_the_turn_sooner(early_reply: bool) -> None:
    line = Line(replace(SETTINGS, early_reply=early_reply))
    async with running(line.conversation):
        await pause_heard(line, "Please note my name.")
        assert line.endpointer.finished == 1


@pytest.mark.parametrize("text", ["Please note my.", "Please note my name"])
async def test_words_that_stop_mid_sentence_do_not_end_the_turn_sooner(text: str) -> None:
    line = Line()
    async with running(line.conversation):
        await pause_heard(line, text)
        assert line.endpointer.finished == 0


async def test_words_whisper_is_unsure_of_do_not_end_the_turn_sooner() -> None:
    line = Line()
    line.transcriber.mumbled.add("Please note my name.")
    async with running(line.conversation):
        await pause_heard(line, "Please note my name.")
        assert line.endpointer.finished == 0 and line.model.requests == []
