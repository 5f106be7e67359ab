"""The words that end a turn mid-sentence (speech.turn_words.unfinished): the caller paused, they did not finish."""

from __future__ import annotations

import pytest

from speech.turn_words import heard_unfinished, unfinished


@pytest.mark.parametrize(
    "text",
    [
        "My order number is four five",
        "my order number is 4 5",
        "I want to return the",
        "Can you tell me how",
        "I'd like to order two of",
        "The parcel arrived but",
        "I would like",
        "the order number's",
        "so um",
        "I'd like to buy a new...",
        "How do I send back a?",  # no question ends on an article, whatever Whisper heard in the voice
        "Can I speak to A?",
    ],
)
def test_words_that_cannot_end_a_sentence_wait_for_the_rest(text: str) -> None:
    assert unfinished(text)


@pytest.mark.parametrize(
    "text",
    [
        "I want to return my kettle.",
        "My order number is 45821.",
        "My order number is four five eight two one",
        "Yes it is.",
        "Can you hold on",
        "I can't log in",
        "That's it.",
        "Two of them, please.",
        "",
        "[coughs]",
        "Can you tell me how?",
        "Who am I speaking to?",
    ],
)
def test_finished_sentences_are_answered(text: str) -> None:
    assert not unfinished(text)


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("I'd like to buy a new", True),  # Whisper wrote no full stop: it heard speech going on
        ("I want to return the...", True),
        ("My order number is four five", True),
        ("I'd like to buy a new phone charger.", False),
        ("Can you hold on?", False),
        ("Stop!", False),
        ("Uh-huh\u2026", True),
        ("Um...", True),
        ("Okay, so...", True),
        ("Sure...", False),  # Whisper trails off a lone answer too: it is the whole of it
        ("Yes, please...", False),
        ("No, thank you\u2026", False),
        ("[coughs]", False),
        ("", False),
    ],
)
def test_what_whisper_wrote_without_closing_it_waits_for_the_rest(text: str, held: bool) -> None:
    assert heard_unfinished(text) is held
