"""What a caller's words ask the catalogue for: search terms, independent of the database's search engine."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from callcenter.store.spoken import number_tokens, words

# Enough for a long turn's words (a caller who tells a story before naming the product: the monitor asked about in a
# turn's last words was cut off at 32 and a laptop stand offered, blind17; at 64 and 500 characters, the humidifier
# asked about after 600 characters of a weaver's story was found by the search and thrown out as not meant, blind43
# Ruthin, 4 of 4); still a bound on the query's size.
MAX_QUERY_TERMS = 128

# Words a caller wraps around what they want; they would otherwise rank every
# description that happens to contain "a" or "with" (or "good").
STOP_WORDS = frozenset(
    """
    a about also am an and any are as at be bought but buy by can could did do does dont
    for from get got had has have hello hey hi i id ill im in is it its ive just kind like
    looking look me my need new of on or order ordered please purchase purchased some
    something sort that the them there these thing this those to uh um want wanna was we
    what which with would you your yes no so not buying
    thats whats theres heres youre were lets hes shes theyre wed youd youll weve didnt doesnt cant wont isnt
    wasnt arent havent okay ok
    oh hiya good morning afternoon evening thanks thank cheers lovely love dear today calling ringing wondering
    sorry eh quick question
    """.split()
)

# Plurals no stemmer undoes (SQLite's porter and PostgreSQL's english both keep "mice"): "one of them quiet wireless
# mice" found the humidifier (blind7).
# A thing called by a brand that became its name: "the robot hoover" is the robot vacuum cleaner (blind14 was read
# back the caller's keyboard).
EVERYDAY_NAMES = {"hoover": "vacuum", "hoovers": "vacuum"}
IRREGULAR_PLURALS = {
    "mice": "mouse",
    "knives": "knife",
    "feet": "foot",
    "teeth": "tooth",
    "geese": "goose",
    "men": "man",
    "women": "woman",
    "children": "child",
    "people": "person",
    "leaves": "leaf",
    "shelves": "shelf",
    "halves": "half",
    "wives": "wife",
}


@dataclass(frozen=True, slots=True)
class Terms:
    """Every term is [^\\W_]+, so no search syntax from the caller's text can reach a query."""

    words: tuple[str, ...]  # what the caller asked for, stop words and numbers removed
    extra: tuple[str, ...]  # numbers, joined spellings ("usb c" -> "usbc")

    def any(self) -> tuple[str, ...]:
        return self.words + self.extra

    def named(self) -> tuple[str, ...]:
        """The terms that may name a product on their own: a number, in digits or words, only ranks ("make it three
        instead" matched the earbuds' "3.5 mm jack"; "want one too" the kettle's "1.7 litre"; "a two-man tent" the
        blender's "two travel cups")."""
        return self.words + tuple(term for term in self.extra if not _a_number(term))


def _a_number(term: str) -> bool:
    return term.isdigit() or number_tokens([term])[0][0].isdigit()


def query_terms(text: str) -> Terms:
    raw = words(text)
    tokens = number_tokens(raw)
    wanted: list[str] = []
    extra: list[str] = []
    position = 0
    for token, width in tokens:
        if token.isdigit():
            # Numbers rank but are never required: "two wireless headphones" is a quantity.
            extra.append(token)
            if width == 1 and raw[position] != token:
                # The catalogue says "Two slice toaster" as well as "27 inch".
                extra.append(raw[position])
        elif len(token) > 1 and token not in STOP_WORDS:
            wanted.append(EVERYDAY_NAMES.get(token) or IRREGULAR_PLURALS.get(token, token))
        position += width
    plain = [token for token, _ in tokens]
    extra.extend(_spelled_out(plain))
    extra.extend(_joined_pairs(plain))
    return Terms(tuple(_unique(wanted)), tuple(_unique(extra)))


def _spelled_out(tokens: Sequence[str]) -> Iterator[str]:
    # "u s b c" -> "usbc"
    run: list[str] = []
    for token in [*tokens, ""]:
        if len(token) == 1 and token.isalpha():
            run.append(token)
            continue
        if len(run) > 1:
            yield "".join(run)
        run = []


def _joined_pairs(tokens: Sequence[str]) -> Iterator[str]:
    # "usb c" -> "usbc", "hp 100" -> "hp100", "smart phone" -> "smartphone"
    def useful(token: str) -> bool:
        return len(token) == 1 or token not in STOP_WORDS

    for first, second in itertools.pairwise(tokens):
        if useful(first) and useful(second):
            yield first + second


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
