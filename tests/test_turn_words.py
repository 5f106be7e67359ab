"""What the caller says over the agent: which words stop it (speech.turn_words), and Whisper told that a
caller over the agent is mostly saying "mm-hm" (with real Whisper and Piper: marked models)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pytest

from speech.turn_words import BACKCHANNELS, LISTENING_PROMPT, listening_prompt, stops_agent, words
from tests.speech_fixtures import silence

if TYPE_CHECKING:
    from speech.transcriber import Transcriber

AGENT = "Our returns policy covers everything you bought in the last thirty days."


def test_yes_over_the_agents_statement_agrees_and_no_or_stop_interrupts() -> None:
    assert not stops_agent("Yes.", True, AGENT, duration_s=0.8)
    assert not stops_agent("Yes, okay.", True, AGENT, duration_s=1.2)
    assert stops_agent("No.", True, AGENT, duration_s=0.8)
    assert stops_agent("Yes, but I want a refund.", True, AGENT, duration_s=2.0)


def test_the_listening_prompt_follows_the_calls_own_and_primes_only_backchannels() -> None:
    assert listening_prompt("Can I get a refund?") == f"Can I get a refund? {LISTENING_PROMPT}"
    assert listening_prompt(None) == LISTENING_PROMPT
    # Whatever the prompt makes Whisper more likely to write must not stop the agent.
    assert all(word in BACKCHANNELS for word in words(LISTENING_PROMPT))


@pytest.mark.models
@pytest.mark.parametrize(("said", "stops"), [("Mm-hm.", False), ("Stop.", True), ("Wait, I need a refund.", True)])
def test_whisper_told_the_caller_listens_hears_a_hum_as_mm_hm_and_words_as_words(
    piper: Callable[[str], np.ndarray], whisper: Transcriber, said: str, stops: bool
) -> None:
    audio = np.concatenate([silence(0.3), piper(said), silence(0.3)])  # the endpointer's pads
    heard = whisper.transcribe_sync(audio, prompt=listening_prompt(None))
    assert stops_agent(heard.text, heard.confident, AGENT, audio.size / 8000) is stops, heard.text


@pytest.fixture(scope="module")
def whisper() -> Iterator[Transcriber]:
    from speech.transcriber import Transcriber  # here: a fast run of this module does not load it

    transcriber = Transcriber("tiny.en")
    yield transcriber
    transcriber.close()
