"""swarm.english: which words beside a yes are in the caller's other language."""

import pytest

from swarm.english import foreign


@pytest.mark.parametrize("word", ["hari", "vinaka", "aney", "shukriya", "dziekuje", "diolch", "theek", "jah"])
def test_thanks_and_agreement_in_other_languages_are_foreign(word: str) -> None:
    assert foreign(word)


@pytest.mark.parametrize(
    "word",
    [
        "blue",  # a colour the caller may want instead
        "kettle",
        "humidifier",  # a rare English word is still one
        "webcam",  # two English words joined: a product's name
        "earbuds",
        "smartwatch",
        "machan",  # "mac" + "han": taken for English, and read back again (the safe side)
        "a",  # too short to judge
        "42",
    ],
)
def test_english_words_and_names_joined_of_two_are_not(word: str) -> None:
    assert not foreign(word)
