"""How many a caller wants when they count it out for a group: "There's six of us on the shift counting me, but Mick
and Dave have already got theirs, so one each for the rest of us" is four; "two lamps for each classroom, and there's
three classrooms" is six; "That's nine bulbs altogether" is nine. The 1.5B cannot do the sum (blind26: eight less
three read back as eight), nor could the router, which read the first number said."""

from __future__ import annotations

import re

from swarm.numbers import COUNT_WORDS, SIZE, TENS_WORDS
from swarm.sentences import split_sentences

_N = r"(\d{1,2}|" + "|".join(COUNT_WORDS) + r")"
_MOST = 99  # more is no group a caller counts aloud
# How many each: a small count of its own, not the end of a price ("Twenty-five each", "seventy-nine each").
_K = r"(?<!-)\b(one|two|three|four|[1-4])"
_TENS_BEFORE = re.compile(r"(?i)\b(?:" + "|".join(TENS_WORDS) + r")\s*$")
_NOT_A_THING = r"(?!of\b|euros?\b|pounds?\b|quid\b|pence\b|bucks\b|dollars?\b)"  # "45 euros each" is a price
# So many for each of them: "one each", "one set each", "one for each", "one apiece", "two lamps for each", "two per".
_EACH = re.compile(
    rf"(?i){_K} {_NOT_A_THING}(?:\w+ )?(?:each|apiece)\b|{_K} {_NOT_A_THING}(?:\w+ )?(?:for|in) (?:each|every)\b"
    rf"|{_K} {_NOT_A_THING}(?:\w+ )?per\b"
)
# The total, said as one: "That's nine bulbs altogether", "twelve in total", "a total of six".
_TOTAL = re.compile(
    rf"(?i)\b{_N} (?:[a-z]+ )?(?:altogether|all together|in total|in all|all told)\b|\ba total of {_N}\b"
)
# A purchase told of, not asked for: "Last week I ordered two of the humidifiers ... one for each of the twins'
# bedrooms" sends one back.
_PAST = re.compile(r"(?i)\b(?:ordered|bought|got them|had them|returned)\b")
# A group counted: "six of us", "the four lads", "my three boys", "six on the shift", "eight in the class".
_GROUP = re.compile(
    rf"(?i)\b{_N} (?:of (?:us|them|you|my|our|the)\b|(?:[a-z]+ )?(?:on|in) the \w+|people\b|folk\b)"
    rf"|\b(?:my|our|the|all|there'?s|there is|there are|we'?re|we are|we'?ve got|we have(?: got)?|i'?ve got|i have"
    rf"(?: got)?|i got) {_N}"
    rf" (?!euros?|pounds?|quid|pence|bucks|of each)[a-z]+"
)
# A group counted in its parts: "four in one group and three in the other", "two in the first van, three in the
# second" (blind31: read back as ten, then four).
_IN_PART = re.compile(
    rf"(?i)\b{_N} (?:\w+ )?in (?:one|another|the (?:one|first|second|third|fourth|other|last|next|big|small))\b"
)
# A name or a person: "Mick", "me", "my nephew Andreas", "our Bilal", "the new lad".
_PERSON = r"(?:me|myself|I|(?:my|our|the) (?:new )?(?!own\b|rest\b|others?\b)[a-z]+(?: [A-Z][a-z]+)?|[A-Z][a-z]+)"
_PEOPLE = rf"{_PERSON}(?:(?:,| and|, and) {_PERSON})*"
# People left out of it: "less Mick and Dave", "except Glenys and Mair", "not counting me".
_LESS = re.compile(rf"\b(?:less|minus|except|bar|but not|not counting|apart from|other than) ({_PEOPLE})")
# People who have one already: "Mick and Dave have already got theirs", "Glenys and Mair bring their own".
_OWN = re.compile(
    rf"\b({_PEOPLE})(?:'ve| have| has| had)?(?: already)? (?:got|have|has|bring|brings|brought|had|use|uses)"
    rf"(?: already)? (?:(?:their|his|her|my|our) own|theirs|his|hers|mine|ours)\b"
)
# So many of the group left out by their number: "but the two new Toyotas, the wire is already built in the car, so
# not for them", "the two Toyotas don't need it" (blind33: read back as three of six cars, less two, plus one).
_LESS_COUNTED = re.compile(
    rf"(?i)\bthe {_N} (?:[a-z]+ ){{0,3}}?(?:don'?t|do not|doesn'?t|won'?t) need\b"
    rf"|\bthe {_N} [^.?!]*?\bnot for (?:them|those|these)\b"
)
# People added to it: "plus Andreas", "and one for my nephew Andreas".
_PLUS = re.compile(rf"\bplus ({_PEOPLE})")
_ONE_MORE = re.compile(r"(?i)\b(?:and|plus) one (?:\w+ )?for (?!each|every|all|the rest|them|us)")


def headcount(text: str) -> int | None:
    """How many "one each" (or two each) comes to, when the words count whom or what it is for; or the total the
    caller worked out and said themselves ("That's nine bulbs altogether"); else None."""
    if (said := _TOTAL.search(text)) is not None and not _told_of(said.group(), text):
        return _count(next(g for g in said.groups() if g))
    each = next((m for m in _EACH.finditer(text) if not _TENS_BEFORE.search(text[: m.start()])), None)
    if each is None or _told_of(each.group(), text):
        return None
    groups = [next(g for g in match.groups() if g) for match in _GROUP.finditer(SIZE.sub(" ", text))]
    parts = [_count(match.group(1)) for match in _IN_PART.finditer(text)]
    if not groups and len(parts) < 2:
        return None
    people = sum(parts) if len(parts) >= 2 else _count(groups[0])
    people -= sum(_people(m.group(1)) for m in _LESS.finditer(text))
    people -= sum(_people(m.group(1)) for m in _OWN.finditer(text))
    people -= sum(_count(next(g for g in m.groups() if g)) for m in _LESS_COUNTED.finditer(text))
    people += sum(_people(m.group(1)) for m in _PLUS.finditer(text))
    total = _count(next(g for g in each.groups() if g)) * people + len(_ONE_MORE.findall(text))
    return total if 0 < total <= _MOST else None


def _told_of(said: str, text: str) -> bool:
    """Whether these words are in a sentence about a purchase made before."""
    return any(_PAST.search(sentence) and said in sentence for sentence in split_sentences(text))


def _count(word: str) -> int:
    return int(word) if word.isdigit() else COUNT_WORDS[word.lower()]


def _people(said: str) -> int:
    """How many people are named, each once: "me, and me, Glenys and Mair" are three."""
    return len({name.strip().lower() for name in re.split(r",? and |, ", said)})
