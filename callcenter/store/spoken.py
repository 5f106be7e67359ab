"""Numbers as callers say them ("double one oh five", "twelve three forty five") and their phone numbers."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# Longer input is a transcription accident, not a product description. One in eight of the blind suites' turns is
# over 500 characters (the longest 911), most naming the product last.
MAX_QUERY_CHARS = 1200
# A caller's whole turn, read for the numbers in it: a story of 600 characters ended with its order number (blind10).
MAX_TURN_CHARS = 5000

_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine".split())}
_TEENS = {
    w: 10 + i
    for i, w in enumerate("ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())
}
_TENS = {w: 20 + 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_MULTIPLIERS = {"hundred": 100, "thousand": 1000}
_REPEATS = {"double": 2, "triple": 3}

_APOSTROPHES = re.compile(r"['\u2019\u2018`]")
_WORD = re.compile(r"[^\W_]+")


def words(text: str, limit: int = MAX_QUERY_CHARS) -> list[str]:
    """Case-folded words of the first `limit` characters; apostrophes are dropped, not split on, so "I'd" is one stop
    word and not "i" + "d"."""
    text = unicodedata.normalize("NFKC", text[:limit]).casefold()
    return _WORD.findall(_APOSTROPHES.sub("", text))


@dataclass(slots=True)
class _NumberRun:
    """Number words being added up, e.g. "one hundred and twenty three"."""

    total: int = 0
    current: int = 0
    last: str | None = None  # kind of the previous number word
    words: int = 0

    def value(self) -> int:
        return self.total + self.current


def _is_number_word(word: str) -> bool:
    return word in _UNITS or word in _TEENS or word in _TENS


def number_tokens(words: Sequence[str]) -> list[tuple[str, int]]:
    """Replace runs of number words by digits.

    Returns (token, how many words it came from). "forty two" -> ("42", 2),
    "one two three" -> ("1", 1), ("2", 1), ("3", 1): a unit after a unit starts a new number.
    """
    out: list[tuple[str, int]] = []
    run = _NumberRun()

    def flush() -> None:
        nonlocal run
        if run.last is not None:
            out.append((str(run.value()), run.words))
        run = _NumberRun()

    for index, word in enumerate(words):
        additive = run.last in ("hundred", "thousand")
        if word in _UNITS:
            if not (additive or run.last == "tens"):
                flush()
            run.current += _UNITS[word]
            run.last = "unit"
        elif word in _TEENS or word in _TENS:
            if not additive:
                flush()
            run.current += _TEENS.get(word) or _TENS[word]
            run.last = "teen" if word in _TEENS else "tens"
        elif word in _MULTIPLIERS:
            if word == "hundred":
                run.current = (run.current or 1) * 100
            else:
                run.total = (run.value() or 1) * 1000
                run.current = 0
            run.last = word
        elif word == "and" and additive and index + 1 < len(words) and _is_number_word(words[index + 1]):
            pass  # "one hundred and twenty": the "and" belongs to the number
        else:
            flush()
            out.append((word, 1))
            continue
        run.words += 1
    flush()
    return out


def spoken_digits(text: str) -> str:
    """All the digits said or written in ``text``, in order.

    "one two three four five", "12 345", "twelve three forty five" and "double one
    oh five" give "12345", "12345", "12345" and "1105".
    """
    said = [("zero" if w in ("oh", "o") else w) for w in words(text, MAX_TURN_CHARS)]
    expanded: list[str] = []
    repeat = 1
    for word in said:
        if word in _REPEATS:
            repeat = _REPEATS[word]
            continue
        expanded.extend([word] * repeat)
        repeat = 1
    return "".join(token for token, _ in number_tokens(expanded) if token.isdigit())
