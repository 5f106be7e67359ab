"""What the caller says over the agent: which words stop it (speech.turn_words)."""

from __future__ import annotations

from speech.turn_words import stops_agent

AGENT = "Our returns policy covers everything you bought in the last thirty days."


def test_yes_over_the_agents_statement_agrees_and_no_or_more_words_interrupt() -> None:
    # espeak-ng's "Yeah" reaches Whisper as "Yes." (benchmarks/turn_taking.py); over a question it is an
    # answer, which callcenter/conversation.py decides before these words (tests/test_conversation.py).
    assert not stops_agent("Yes.", True, AGENT, duration_s=0.8)
    assert not stops_agent("Yes, okay.", True, AGENT, duration_s=1.2)
    assert stops_agent("No.", True, AGENT, duration_s=0.8)
    assert stops_agent("Yes, but I want a refund.", True, AGENT, duration_s=2.0)
