"""What the caller says over the agent: which words stop it (speech.turn_words)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from speech.transcriber import Transcriber
from speech.turn_words import BACKCHANNEL_PROMPT, heard_again, is_interruption, stops_agent
from tests.speech_fixtures import espeak, silence

AGENT = "Our returns policy covers everything you bought in the last thirty days."


def test_yes_over_the_agents_statement_agrees_and_no_or_more_words_interrupt() -> None:
    # espeak-ng's "Yeah" reaches Whisper as "Yes." (benchmarks/turn_taking.py); over a question it is an
    # answer, which callcenter/conversation.py decides before these words (tests/test_conversation.py).
    assert not stops_agent("Yes.", True, AGENT, duration_s=0.8)
    assert not stops_agent("Yes, okay.", True, AGENT, duration_s=1.2)
    assert stops_agent("No.", True, AGENT, duration_s=0.8)
    assert stops_agent("Yes, but I want a refund.", True, AGENT, duration_s=2.0)


def test_a_phrase_whisper_writes_twice_is_counted_once_against_the_sound() -> None:
    # Prompted with backchannels, tiny.en wrote a 0.9 s "Wait a minute." twice: not words made up for a hum.
    assert stops_agent("Wait a minute. Wait a minute.", True, AGENT, duration_s=0.94)
    assert stops_agent("No, no, no.", True, AGENT, duration_s=0.7)
    # Words that do not repeat still may not outnumber what the sound could hold.
    assert not stops_agent("And then make a chance, wait a minute.", True, AGENT, duration_s=0.94)


@pytest.mark.parametrize(
    "hum", ["Mmmm.", "MMMM, okay.", "Hmmm.", "Mm-hmm-hmm.", "Mhm, yeah.", "Uhh.", "Umm.", "Uhm.", "Uh huh, right."]
)
def test_a_hum_in_any_spelling_does_not_interrupt(hum: str) -> None:
    assert not is_interruption(hum)


@pytest.mark.parametrize("words", ["Hm, my order?", "Uh, wait.", "Mmm, no.", "Mm-mm.", "Hm-mm.", "Huh?", "M.", "Mom."])
def test_words_beside_a_hum_or_like_one_interrupt(words: str) -> None:
    assert is_interruption(words)


@pytest.fixture(scope="module")
def tiny() -> Iterator[Transcriber]:
    transcriber = Transcriber("tiny.en")
    yield transcriber
    transcriber.close()


def hearings(transcriber: Transcriber, text: str) -> tuple[bool, bool]:
    """Whether Whisper's first hearing of `text` (espeak-ng through the phone, with the endpointer's pads)
    stops the agent, and whether the second, prompted with backchannels, does."""
    audio = np.concatenate([silence(0.25), espeak(text), silence(0.25)])
    seconds = audio.size / 8000
    assert heard_again(seconds)
    first, second = (transcriber.transcribe_sync(audio, prompt=p) for p in (None, BACKCHANNEL_PROMPT))
    return (
        stops_agent(first.text, first.confident, AGENT, seconds),
        stops_agent(second.text, second.confident, AGENT, seconds),
    )


@pytest.mark.models
@pytest.mark.parametrize("hum", ["Mm-hm.", "Mhm."])
def test_a_hum_tiny_en_writes_as_words_is_a_hum_when_heard_again(tiny, hum) -> None:
    # Alone, tiny.en heard these as "And then we can." and "M-A-CAM." (words: they would stop the agent).
    assert not hearings(tiny, hum)[1]


@pytest.mark.models
@pytest.mark.parametrize("words", ["Stop.", "No, stop.", "Hold on.", "Sorry?", "Wait a minute."])
def test_short_words_that_stop_the_agent_still_do_when_heard_again(tiny, words) -> None:
    assert hearings(tiny, words) == (True, True)
