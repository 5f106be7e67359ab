"""Numbers as callers say them, shared by the checks, the read-backs and the offline router."""

from __future__ import annotations

# A digit said as a word; "oh" is a zero in a code ("double one oh five") and an "oh" anywhere else, so it is
# left to whoever knows they are reading a code.
DIGIT_WORDS: dict[str, str] = {
    w: str(n) for n, w in enumerate("zero one two three four five six seven eight nine".split())
}
# How many, said as a word: "two yoga mats".
COUNT_WORDS: dict[str, int] = {
    w: n for n, w in enumerate("one two three four five six seven eight nine ten".split(), 1)
}
# The tens of a number said in words, "sixty-nine" being one number and not a nine.
TENS_WORDS: dict[str, int] = {
    w: 20 + 10 * n for n, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
