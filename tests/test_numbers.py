"""Numbers that count no items, shared by the read-backs, the basket and the offline router."""

from __future__ import annotations

import pytest

from swarm.numbers import counting_nothing


@pytest.mark.parametrize(
    ("said", "left"),
    [
        ("two cables, two metre length", "two cables, length"),
        ("it broke after three hours", "it broke after"),
        ("only one, not two", "only one,"),
        ("just one, not the 2", "just one,"),
        ("I'm 81 years old and I want two", "I'm old and I want two"),
        ("One pair I take. Size forty-four, black.", "One pair I take. , black."),
        ("two pairs in size forty two", "two pairs in"),
        ("a size 9, one pair", "a , one pair"),
        # Blind32 (Rotherham): a price said back in words is no count ("Fourteen ninety?" ordered 14 cases).
        ("Fourteen ninety? Go on then, I'll have one.", "Go on then, I'll have one."),
        ("nine ninety-nine each, two please", "each, two please"),
        ("twenty four of them", "twenty four of them"),
        ("the prices of three things: the mouse, the stand", "the prices of : the mouse, the stand"),  # blind31
        # Blind42 (Tobermory): the parts a thing has count no things ("... with the fifteen settings" ordered fifteen).
        ("the grinder, the one with the fifteen settings. Send me one?", "the grinder, the one . Send me one?"),
        ("two blenders with two travel cups", "two blenders cups"),
        ("I'd like it with two of them", "I'd like it with two of them"),
    ],
)
def test_counting_nothing_blanks_measures_and_numbers_taken_back(said: str, left: str) -> None:
    assert counting_nothing(said).split() == left.split()


def test_a_code_is_no_number_taken_back() -> None:
    assert counting_nothing("not 1234") == "not 1234"
