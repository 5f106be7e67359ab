"""The hearing (callcenter.call.hearing) alone, in milliseconds: endpointer events in, what the caller said out, told
to a listener that stands in for the conversation (what the agent is doing, and what it does with the words)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from callcenter.call import CallerSaid, Heard, Hearing, VoiceSettings
from callcenter.call.barge_in import AgentSoFar
from speech import EndpointerEvent, SpeechEnded, SpeechPaused, SpeechStarted
from speech.turn_words import BACKCHANNEL_PROMPT
from tests.voice_fakes import FakeEndpointer, FakeLanguageCheck, FakeTranscriber, settle, until

SETTINGS = VoiceSettings(early_reply=True, mid_sentence_wait_s=0.05)
AGENT = AgentSoFar((("Your order is on its way.", 16000), ("It should arrive on Friday.", 40000)), 8000, True, False)


@dataclass
class Agent:
    """The conversation as the hearing sees it: what the agent is doing, and a log of what it was told."""

    closing: bool = False
    keypad_open: bool = False
    agent_paused: bool = False
    busy: bool = False
    so_far: AgentSoFar = AGENT
    told: list[str] = field(default_factory=list)
    said: list[CallerSaid] = field(default_factory=list)

    def agent_busy(self) -> bool:
        return self.busy

    def agent_so_far(self) -> AgentSoFar:
        return self.so_far

    def caller_started(self) -> None:
        self.told.append("started")

    def caller_stopped(self) -> None:
        self.told.append("stopped")

    def resume_agent(self) -> None:
        self.told.append("resume")
        self.agent_paused = False

    async def stop_agent(self) -> None:
        self.told.append("stop")
        self.agent_paused = False

    def reply_outdated(self) -> None:
        self.told.append("outdated")

    def other_language(self, heard: Heard) -> None:
        assert heard.language is not None
        self.told.append(f"language {heard.language.code}: {heard.text}")

    def answer(self, said: CallerSaid) -> bool:
        self.said.append(said)
        return said.confident


class Ear:
    """A hearing fed by a fake endpointer, with a fake transcriber, telling an `Agent`."""

    def __init__(self, settings: VoiceSettings = SETTINGS, languages: dict[str, str] | None = None) -> None:
        self.agent, self.endpointer, self.transcriber = Agent(), FakeEndpointer(), FakeTranscriber()
        self.language = FakeLanguageCheck(self.transcriber, languages or {})
        self.speculated: list[str] = []
        self.hearing = Hearing(
            self.agent,
            self.endpointer,
            self.transcriber,
            settings,
            call_id="call-1",
            speculate=self._speculate,
            language_check=self.language if languages is not None else None,
        )
        self._at = 0.0

    def _speculate(self, text: str) -> None:
        self.speculated.append(text)  # the model's start: none here

    async def events(self, *events: EndpointerEvent) -> None:
        self.endpointer.pending.append(list(events))
        self.hearing.feed(np.zeros(160, np.int16))
        await settle()

    async def say(self, text: str, seconds: float = 1.0, *, pause_first: bool = True) -> None:
        self._at += 2.0
        audio = self.transcriber.utterance(text, seconds)
        await self.events(SpeechStarted(self._at))
        if pause_first:
            await self.events(SpeechPaused(audio, self._at))
        await self.events(SpeechEnded(audio, self._at, seconds, "silence"))
        await until(lambda: not self.hearing.transcribing, what="heard")

    def texts(self) -> list[str]:
        return [said.words.text for said in self.agent.said]


async def test_a_finished_sentence_is_told_as_said_with_its_time_to_transcript() -> None:
    ear = Ear()
    await ear.say("Where is my order?")
    assert ear.agent.told == ["started", "stopped"] and ear.texts() == ["Where is my order?"]
    said = ear.agent.said[0]
    assert said.confident and not said.waited and said.timing.transcript_s is not None and said.timing.early


async def test_the_model_starts_at_the_pause_only_when_the_agent_is_free() -> None:
    ear = Ear()
    await ear.say("Where is my order?")
    assert ear.speculated == ["Where is my order?"] and ear.endpointer.finished == 1
    ear.agent.busy = True  # talking, thinking, or waiting for keys
    await ear.say("And my refund?")
    assert ear.speculated == ["Where is my order?"] and ear.texts()[-1] == "And my refund?"


async def test_words_that_stop_mid_sentence_wait_and_are_heard_whole_with_the_rest() -> None:
    ear = Ear()
    await ear.say("My order number is")
    assert ear.agent.said == [] and ear.hearing.held is not None and "outdated" in ear.agent.told
    await ear.say("4 5 8 2 1.")
    assert ear.texts() == ["My order number is 4 5 8 2 1."] and ear.hearing.held is None
    assert ear.transcriber.heard[-1] == "My order number is 4 5 8 2 1."  # heard again as one sentence
    assert ear.speculated == []  # never on half a sentence


async def test_held_words_the_caller_says_no_more_after_are_answered_when_the_wait_runs_out() -> None:
    ear = Ear()
    await ear.say("My order number is")
    await until(lambda: ear.agent.said, what="the wait over")
    assert ear.texts() == ["My order number is"] and ear.agent.said[0].waited


async def test_words_over_the_paused_agent_stop_it_a_backchannel_lets_it_go_on() -> None:
    ear = Ear()
    ear.agent.agent_paused = True
    await ear.say("Mm-hm.", 0.4)
    assert ear.agent.told[-1] == "resume" and ear.agent.said == []
    ear.agent.agent_paused = True
    await ear.say("Stop, I want to cancel it instead.", 2.0)
    assert "stop" in ear.agent.told and ear.texts() == ["Stop, I want to cancel it instead."]


async def test_a_short_sound_over_the_agent_is_heard_again_before_it_stops_it() -> None:
    ear = Ear()
    ear.transcriber.hums["And then make some."] = "Mm-hmm."  # tiny.en heard a hum as words; the second hearing not
    ear.agent.agent_paused = True
    await ear.say("And then make some.", 1.1)
    assert ear.agent.told[-1] == "resume" and ear.agent.said == [] and BACKCHANNEL_PROMPT in ear.transcriber.prompts


async def test_another_language_at_the_calls_start_is_told_and_not_answered() -> None:
    german = "Guten Tag, ich habe eine Frage."
    ear = Ear(languages={german: "de"})
    ear.transcriber.unclear.add(german)
    await ear.say(german, 2.0)
    assert ear.agent.told[-1] == f"language de: {german}" and ear.agent.said == []


async def test_nothing_is_heard_to_be_answered_while_the_call_closes() -> None:
    ear = Ear(replace(SETTINGS, mid_sentence_wait_s=None))
    ear.agent.closing = True
    await ear.say("Wait, one more thing.")
    assert ear.agent.said == [] and ear.transcriber.heard == [] and ear.hearing.at_pause is None
