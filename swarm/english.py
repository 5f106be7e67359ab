"""Whether a word is English, for the words a caller says beside a yes in the language they grew up with.

Callers here say yes in English and thank or agree in their other language in the same breath: "Hari, yes, go ahead
with the return, please." (Sinhala), "Io, yes, go ahead please. Vinaka." (Fijian). Each blind set brought a language
the listed words (swarm.confirmations) did not have, and the 1.5B, given the turn, ran out of its 20 s. A word is
taken as English when the English word counts of pyspellchecker (from film subtitles) say it often enough, or when it
joins two such words ("webcam", "earbuds", "smartwatch": product names, never to be passed over)."""

from __future__ import annotations

import functools
from collections.abc import Mapping

# Counts below this are names, borrowings and typos of the subtitles ("oui" 325, "dobro" 50); "humidifier" is 169.
_SAID = 100
# Below this, a word is rare: a dialect's or another language's homograph more often than an answer's word.
_RARE = 1000
# Each half of a compound is a common word: "web" + "cam", "ear" + "buds".
_HALF_SAID = 1000
_HALF_LETTERS = 3


@functools.cache
def _counts() -> Mapping[str, int]:
    from spellchecker import SpellChecker  # 0.2 s to read its list: only when a word is not one of the listed ones

    return SpellChecker(language="en", distance=1).word_frequency.dictionary


def foreign(word: str) -> bool:
    """A word of letters that is no English word, nor two English words joined."""
    if len(word) < 2 or not word.isalpha():
        return False
    counts = _counts()
    if counts.get(word, 0) >= _SAID:
        return False
    halves = range(_HALF_LETTERS, len(word) - _HALF_LETTERS + 1)
    return not any(counts.get(word[:i], 0) >= _HALF_SAID and counts.get(word[i:], 0) >= _HALF_SAID for i in halves)


def rare(word: str) -> bool:
    """A word of letters that is no English word or a rare one ("kale", "bach", "webale"): beside a yes, more likely
    the caller's other language or dialect than a word that changes it."""
    return word.isalpha() and (foreign(word) or _counts().get(word, 0) < _RARE)
