"""What the caller says over the agent: which words stop it (speech.turn_words)."""

from __future__ import annotations

import pytest

from speech.turn_words import is_interruption, stops_agent

AGENT = "Our returns policy covers everything you bought in the last thirty days."


def test_yes_over_the_agents_statement_agrees_and_no_or_more_words_interrupt() -> None:
    # espeak-ng's "Yeah" reaches Whisper as "Yes." (benchmarks/turn_taking.py); over a question it is an
    # answer, which callcenter/conversation.py decides before these words (tests/test_conversation.py).
    assert not stops_agent("Yes.", True, AGENT, duration_s=0.8)
    assert not stops_agent("Yes, okay.", True, AGENT, duration_s=1.2)
    assert stops_agent("No.", True, AGENT, duration_s=0.8)
    assert stops_agent("Yes, but I want a refund.", True, AGENT, duration_s=2.0)


@pytest.mark.parametrize(
    "hum", ["Mmmm.", "MMMM, okay.", "Hmmm.", "Mm-hmm-hmm.", "Mhm, yeah.", "Uhh.", "Umm.", "Uhm.", "Uh huh, right."]
)
def test_a_hum_in_any_spelling_does_not_interrupt(hum: str) -> None:
    assert not is_interruption(hum)


@pytest.mark.parametrize("words", ["Hm, my order?", "Uh, wait.", "Mmm, no.", "Mm-mm.", "Hm-mm.", "Huh?", "M.", "Mom."])
def test_words_beside_a_hum_or_like_one_interrupt(words: str) -> None:
    assert is_interruption(words)
