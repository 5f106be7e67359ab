"""The words that end a turn mid-sentence (speech.turn_words.unfinished): the caller paused, they did not finish."""

from __future__ import annotations

import pytest

from speech.turn_words import unfinished


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
    ],
)
def test_finished_sentences_are_answered(text: str) -> None:
    assert not unfinished(text)
