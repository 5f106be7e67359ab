"""Numbers as callers say them, shared by the checks, the read-backs and the offline router."""

from __future__ import annotations

import re

# A digit said as a word; "oh" is a zero in a code ("double one oh five") and an "oh" anywhere else, so it is
# left to whoever knows they are reading a code.
DIGIT_WORDS: dict[str, str] = {
    w: str(n) for n, w in enumerate("zero one two three four five six seven eight nine".split())
}
# How many, said as a word: "two yoga mats", "twelve mats" (blind14's yoga class).
COUNT_WORDS: dict[str, int] = {
    w: n
    for n, w in enumerate(
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen"
        " eighteen nineteen".split(),
        1,
    )
}
# The tens of a number said in words, "sixty-nine" being one number and not a nine.
TENS_WORDS: dict[str, int] = {
    w: 20 + 10 * n for n, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}

# A count said as a word or a short number; longer numbers are codes.
_A_COUNT = r"(?:\d{1,2}|" + "|".join(COUNT_WORDS) + r")"
# A number of a measure, a time or money counts no items: "after two hours", "a two metre cable", "27 inch", "within
# fifty pounds either way" (blind18: read back 50 laptop stands).
MEASURE = re.compile(
    r"(?i)\b[\w-]+[\s-]+(?:hours?|minutes?|days?|weeks?|months?|years?|metres?|meters?|inch(?:es)?|watts?|litres?"
    r"|liters?|mm|cm|slices?|pounds?|quid|euros?|dollars?|pence|bucks)\b"
)
# A price said in words, its cents a second number: "Fourteen ninety?" said back to 14.90 euros is no fourteen cases
# (blind32: 14 were ordered, 4 of 4), nor is "nine ninety-nine" nine.
_UNIT_WORDS = "|".join(w for w, n in COUNT_WORDS.items() if n < 10)
_TENS = "(?:" + "|".join(TENS_WORDS) + r")(?:[\s-]+(?:" + _UNIT_WORDS + "))?"
PRICE_SAID = re.compile(r"(?i)\b(?:" + "|".join(COUNT_WORDS) + "|" + _TENS + r")[\s-]+" + _TENS + r"\b")
# A price said back as a question, which asks nothing: "Fourteen ninety? Vala, that's not bad at all. Go on then, I'll
# have one" (blind32: the 1.5B's, 5-11 s).
PRICE_ECHO = re.compile(
    rf"(?i)(?:^|(?<=[.!?]))\s*(?:{PRICE_SAID.pattern.removeprefix('(?i)')}|\d+[.,]\d\d"
    # Or a whole price of 20 or more: "Forty-two? To — okay. ... I'll have it — the one blender." (blind42 Kilkeel).
    rf"|{_TENS}|[2-9]\d|\d{{3}})"
    r"(?: (?:euros?|pounds?|quid))?\s*\?"
)
# A size counts no items either, its number after it: "Size forty-four, black" (blind14's one pair of shoes).
# So is a number of two digits after "a" or "the", but before a thing counted: "we're both a 42, black", "the 42 in
# black" (blind23); not "the 12 cables".
SIZE = re.compile(
    r"(?i)\bsizes? (?:uk |eu |us )?(?:(?:" + "|".join(TENS_WORDS) + r")[\s-]+\w+|[\w-]+)"
    r"|\b(?:an?|the) \d{2}\b(?!\s*(?:of|x|[a-z]+s)\b)"
)
# A number taken back asks for nothing: "just the one keyboard now, not two" (blind10 was offered two again).
TAKEN_BACK = re.compile(rf"\bnot (?:the )?{_A_COUNT}\b", re.IGNORECASE)


# Kinds counted, not things: "the prices of three things: the mouse, the stand and the keyboard" asks for no three
# mice (blind31), nor "two things together, on one order" for two grinders. Nor do the parts a thing has: "the burr
# grinder ..., the one with the fifteen settings. Can you send me one?" asked for fifteen (blind42 Tobermory).
KINDS = re.compile(
    rf"(?i)\b{_A_COUNT} (?:different |other |more )?(?:things|items|products|prices|questions)\b"
    rf"|\b(?:with|has|have|having)(?: the| its| all the| all)? {_A_COUNT}(?: different)? (?!of\b)[a-z]+\b"
)


def counting_nothing(text: str) -> str:
    """The words with the numbers that count no items (measures, times, sizes, prices, kinds counted, numbers taken
    back) blanked out."""
    text = PRICE_ECHO.sub(" ", text)
    return TAKEN_BACK.sub(" ", SIZE.sub(" ", MEASURE.sub(" ", PRICE_SAID.sub(" ", KINDS.sub(" ", text)))))
