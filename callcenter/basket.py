"""Several things in one read-back: the products a caller lists ("one of them quiet wireless mice and a desk lamp,
... both on the one order"), a product added to the one on offer ("And the wireless mouse too"), and the lines of one
order that go back ("the kettle and the toaster came cream ... I'm keeping the blender"). place_order and
create_return took one product each, and callers who wanted two were sold one or none (blind7, every trial).

A product counts as named only by its kind (its name's last word) or by two words of its name, said in a part of the
sentence of its own, so a word that merely ranks a product ("quiet" the humidifier) never adds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol

from callcenter.store.domain import OrderLine, Product
from callcenter.store.spoken import number_tokens, words
from callcenter.store.terms import query_terms
from swarm.numbers import KINDS, MEASURE, PRICE_ECHO, PRICE_SAID, SIZE
from swarm.sentences import split_sentences

MAX_SEARCHES = 12  # each part that names something is one catalogue search (an HTTP call to the shop's own system)
MAX_QUANTITY = 99  # a longer number is a code, not how many

# Where a caller's list breaks: sentence ends, commas, and the words that join the things of a list.
# A dash parts them as a comma does: "So not the band — the smartwatch instead" (blind40 Ambleside), and a colon before
# a space: "So not the headphones: make it the waterproof portable speaker instead" (blind44 Largs; not "7:30").
_PARTS = re.compile(
    r"(?i)\s*(?:[.!?;,\u2013\u2014]|:(?=\s))+\s*|\s+-\s+|\s+(?:and|plus|but|as well as|along with|together with|also)\s+"
)
# A part that keeps a thing, or says what it is not: "I'm keeping the blender", "not the headphones", "the blender
# stays", "I don't want to send the mouse back". A problem said with a no ("it does not work") keeps nothing, and nor
# does a thing not needed: "the webcam I don't need" sends it back (blind12 kept it).
_KEPT = re.compile(
    r"(?i)\b(?:keep|keeps|keeping|kept|stays?|staying|except|apart from|hang(?:ing)? on to"
    r"|not (?:the|that|this|my|a|an|those|these|them)|don'?t (?:want|need) to (?:return|send|give)|don'?t (?:return|send)"
    r"|(?:is|'s|are) (?:fine|grand|good|ok|okay|alright|all right))\b"
)
# Where a sentence's clauses break: a keeping word reaches no further.
_CLAUSES = re.compile(r"\s*[;,]+\s*|\s+but\s+")
# A part that takes back a thing named before: "not the band", "Nah, hold up, not that", "Not yoga mat" (blind13);
# "without the charger", "never mind the grinder"; a short "no charger" ("Make it the power bank instead ... and no
# charger." was offered both: blind39 Bantry, 4 of 4), not "no, I want the power bank".
_TAKEN_BACK = re.compile(
    r"(?i)^\W*(?:(?:and|but|so|then|okay|ok|right|well|oh|no|nah|na|sorry|wait|actually|hold up|hang on|i mean)\W+)*"
    r"(?:not|without|never mind|forget(?: about)?)\b"
    r"|^\W*(?:and\s+|but\s+)?no\s+(?:more\s+)?(?:the\s+|a\s+|an\s+)?[\w-]+(?:\s+[\w-]+){0,2}\W*$"
)
# A part that wants a thing no more is no wish to buy it: "I don't want the headphones, just the mouse".
_NOT_WANTED = re.compile(r"(?i)\bdon'?t (?:want|need)\b")
# A part that keeps what the part before it named: "The screen protectors are great, I'm keeping them" (blind10).
_KEPT_BEFORE = re.compile(
    r"(?i)\b(?:keep|keeps|keeping|hang(?:ing)? on to|hold(?:ing)? on to) (?:them|it|those|these|that)\b"
    r"|\b(?:they|it|those|these|that one|this one)(?:'re| are| is|'s) (?:fine|grand|good|ok|okay|alright|all right)\b"
)
# A part that sends something back: its count is how many go ("send two of them back", "Two chargers back, mind").
_GOING = re.compile(r"(?i)\b(?:back|return|returning|refund)\b")
# A part about what the caller already has: "I bought a kettle from you last month" asks for no kettle now.
_HAD = re.compile(r"(?i)\b(?:bought|ordered|purchased|got|had|already have|i have|i've)\b")
# A question about the thing named, not a wish for another: blind11's "does it have a USB port so that I can charge
# my phone from it?" put a phone charger beside the desk lamp asked about.
_ABOUT_IT = re.compile(r"(?i)\b(?:does|do|is|are|can|will|would|has|have) (?:it|they|this|that|these|those)\b")
# A part that names no thing to search for: a sound or a greeting alone, a street address, a postcode. "Howay ... Erm
# ... so I'm after a kettle ... and a toaster ... that's Flat 2, 14 Queen Street, Amble, NE65 0BX" left the kettle
# beyond the last searches, and the toaster was offered alone (blind22).
_NO_THING = re.compile(
    r"(?i)^\W*(?:(?:erm|um|uh|er|ah|oh|howay|hiya|hi|hello|hey|right|like|well|so|okay|ok|now|look|listen)\W*)+$"
    r"|\bflat \d|\b\d+[a-z]? [a-z]+ (?:street|road|lane|avenue|close|drive|way|terrace|crescent|place|gardens|court)\b"
    r"|\b[a-z]{1,2}\d[a-z\d]? ?\d[a-z]{2}\b"
)
# What a thing is charged or plugged with describes it, and is not asked for: "the front and back lights you charge
# with a cable" offered a USB-C cable beside the bike lights (blind33).
_USED_WITH = re.compile(
    r"(?i)\b(?:you|it|they|that|which)(?: can| could)? (?:charge|charges|plug|plugs|connect|connects|power|powers)\b.*$"
)
# A part that describes the thing named before it: "the wired earbuds then, the ones with the little microphone on the
# cable" offered a USB-C cable beside the earbuds (blind41 Skipton, 4 of 4).
_DESCRIBES = re.compile(r"(?i)^\W*(?:the |a |an )?ones? (?:with|that|which|where|for|you)\b")
# The word after these is a verb.
_VERB = re.compile(r"(?i)\b(?:can|could|to|will|would|you|we|they|i)\s+(?=([a-z]+))")
# All of what was bought goes back: "I want give back everything" (blind8).
_EVERYTHING = re.compile(r"(?i)\b(?:everything|all of (?:it|them)|the whole (?:order|lot)|all of the order)\b")
# Words that add to what is on offer rather than change it: "and the mouse too", "as well", "both".
# "Too much" says what is wrong with it: "Two hundred seventy-nine? Oh ho. Bas, too much, ji. ... Only the camera I will
# take." added the webcam to the monitor on offer (blind17).
ADDING = re.compile(
    r"(?i)\b(?:too(?! (?:much|many|dear|expensive|pricey|big|small|long|late))|as well|also|and|plus|another|both"
    r"|with it|on the same order|on the one order)\b"
)


class Catalogue(Protocol):
    def search(self, text: str, limit: int = 3) -> list[Product]: ...


def listed_products(shop: Catalogue, text: str) -> list[tuple[Product, int]]:
    """The products the caller's words list, each with how many, in the order said: two or more, or the one left when
    the words take back one named before it ("the slim fitness band - na, not the band, I mean the smartwatch":
    blind12 was offered both); else []."""
    chosen: dict[str, tuple[Product, int]] = {}
    naming = [part for part in wanted_parts(text) if query_terms(part).words and not _NO_THING.search(part)]
    # The last of them: a caller tells the story first and lists what they want after it (blind18's two things came
    # after twelve parts of a story, and one was offered).
    for part in naming[-MAX_SEARCHES:]:
        product = named_product(shop, part)
        if product is not None and product.sku not in chosen:
            chosen[product.sku] = (product, count_in(part, product.name))
        elif product is not None and (count := said_count(part, product.name)) is not None:
            # A count said again of a product is the one meant: "two of them braided USB-C cables ... Ah no, hang on,
            # make it three cables" was read back as two (blind21).
            chosen[product.sku] = (product, count)
    taken_back = [part for part in _parts(text) if _TAKEN_BACK.search(part)] if chosen else []
    refused = {p.sku for p in (named_product(shop, part) for part in taken_back[:MAX_SEARCHES]) if p is not None}
    left = [chosen[sku] for sku in chosen if sku not in refused]
    return left if len(left) >= 2 or (left and refused & chosen.keys()) else []


def without_taken_back(text: str) -> str:
    """The words without the parts that take back a thing ("Not them big headphones, they're long."), when the rest
    still names something to look for: the search for "the cheap wired ones ... with a mic" found the headphones. So
    are the parts that want a thing no more: "Because if it has, I don't want the earphones ... So just the camera then,
    one." over the webcam on offer found and offered the earbuds (blind26, 4 of 4)."""
    kept = [part for part in _parts(text) if not (_TAKEN_BACK.search(part) or _NOT_WANTED.search(part))]
    rest = ", ".join(kept)
    return rest if len(kept) < len(_parts(text)) and query_terms(rest).words else text


def named_product(shop: Catalogue, text: str) -> Product | None:
    """The best match of the catalogue that the words name (by kind or two of its words), if one does."""
    # A word said as a verb names no kind: "the one where you can set the temperature" is no Bike light set (blind22).
    verbs = {m.lower() for m in _VERB.findall(text)}
    said = tuple(word for word in query_terms(text).words if word not in verbs)
    if not said:
        return None
    return next((p for p in shop.search(text, limit=3) if names(said, p.name)), None)


def wanted_parts(text: str) -> list[str]:
    """The parts of the words that may ask for a product: not those that keep one, tell of one they had, or ask
    about the one named ("does it have a USB port so that I can charge my phone from it?")."""
    return [
        _USED_WITH.sub("", part)
        for part in _parts(text)
        if not (
            _KEPT.search(part)
            or _NOT_WANTED.search(part)
            or _HAD.search(part)
            or _ABOUT_IT.search(part)
            or _DESCRIBES.search(part)
        )
    ]


def named_lines(lines: Sequence[OrderLine], text: str) -> list[tuple[OrderLine, int]]:
    """The lines of an order the words name outside any part that keeps them, in the order's own order, each with
    how many go back: the most said of it ("two light bulb"), all of it for "everything", else one. A count in a part
    about what was bought ("I got three of them chargers") says nothing of how many go back."""
    named: dict[str, int] = {}
    kept = kept_lines(lines, text)
    for part in _parts(text):
        said = query_terms(part).words
        for line in lines:
            if names(said, line.name) and not _KEPT.search(part):
                count = 0 if _HAD.search(part) else said_count(part, line.name) or 0
                named[line.sku] = max(named.get(line.sku, 0), count)
    whole = bool(_EVERYTHING.search(text))
    return [
        (line, min(line.returnable_quantity, named[line.sku] or (line.returnable_quantity if whole else 1)))
        for line in lines
        if line.sku in named and line.sku not in kept and line.returnable_quantity > 0
    ]


def kept_lines(lines: Sequence[OrderLine], text: str) -> set[str]:
    """The product codes of the lines the words keep: named in a part that keeps them ("I'm keeping the blender"),
    or in the part before one that keeps "them" ("The screen protectors are great, I'm keeping them")."""
    kept: set[str] = set()
    for sentence in split_sentences(text):
        # "them" is the last thing named in the same sentence: "The cable is excellent, genau, braided, very solid, I
        # keep it." (blind17 read the cable back with the charger).
        before: set[str] = set()
        for clause in _CLAUSES.split(sentence):
            # What the keeping joins to it is kept too: "I keep my mat and the bottle" (blind32 sent the bottle back).
            keeping = False
            for part in _parts(clause):
                said = query_terms(part).words
                here = {line.sku for line in lines if names(said, line.name)}
                keeping = bool(_KEPT.search(part)) or (keeping and not _GOING.search(part))
                if keeping:
                    kept |= here
                if not here and _KEPT_BEFORE.search(part):
                    kept |= before
                before = here or before
    # Some of a line sent back, the rest kept: "So I want to send one mat back, only one. I keep my mat and the
    # bottle." of two mats read back the bottle (blind32, 4 of 4).
    return {line.sku for line in lines if line.sku in kept and not _partly_going(text, line)}


def _partly_going(text: str, line: OrderLine) -> bool:
    """Whether a part that sends something back names the line with fewer than it has that may go back."""
    return any(
        names(query_terms(part).words, line.name)
        and _GOING.search(part)
        and not (_KEPT.search(part) or _HAD.search(part))
        and 0 < (said_count(part, line.name) or 0) < line.returnable_quantity
        for part in _parts(text)
    )


def count_back(text: str, line: OrderLine) -> int:
    """How many of one line go back: the count said in a part that sends something back ("send two of them back"), not
    in one about what was bought or is kept ("I got three", "I'll keep the one"); else one. Never more than may go
    back."""
    for part in _parts(text):
        if _KEPT.search(part) or _HAD.search(part):
            continue
        if _GOING.search(part):
            count = said_count(part, line.name)
            if count is not None:
                return max(1, min(count, line.returnable_quantity))
    return 1


def names(said: Iterable[str], name: str) -> bool:
    """Whether the search terms `said` name the product `name`: its kind, or two words of its name."""
    own = query_terms(name).words
    if not own:
        return False
    said = list(said)
    hits = sum(any(_same_word(word, mine) for word in said) for mine in own)
    return hits >= 2 or any(_same_word(word, own[-1]) for word in said)


def kind(product: Product) -> str:
    """What kind of thing a product is: its name's last word ("Power bank" -> "bank", "Smartphone case" -> "case")."""
    return product.name.lower().split()[-1] if product.name.strip() else ""


def near_match(asked: str, product: Product) -> bool:
    """Whether the product is only near what a product's name asks for: its words (three at most: a sentence's are
    not judged) name neither its kind nor two of its words, and half of them or more are nowhere in it ("coffee
    machine" found the Coffee grinder, "air fryer" the Air humidifier, each offered as if it were what was asked
    for). "A watch" names the Smartwatch by its name's end; "a vacuum" the Robot vacuum cleaner."""
    said = query_terms(asked).words
    end = kind(product)
    if not 0 < len(said) <= 3 or names(said, product.name) or any(len(w) >= 5 and end.endswith(w) for w in said):
        return False
    return 2 * _in_product(said, product) <= len(said)


def may_mean(asked: str, product: Product) -> bool:
    """Whether many words (four or more: a caller's sentence) may mean the product found for them: they name it (its
    kind or two of its words), or two of them are in it. One word in common is chance: "lasting power of attorney"
    found the Power bank, and "cancel it and return it" the headphones' noise cancelling (blind13: both offered)."""
    said = query_terms(asked).words
    return len(said) < 4 or names(said, product.name) or _of_product(said, product) >= 2


def _of_product(said: Sequence[str], product: Product) -> int:
    """How many of the product's own words (name, description, category) the words say, each counted once: "flatmate"
    and "flat" are one "flat" (blind15's "my flatmate ... our shared flat money" found the Laptop stand that folds
    flat)."""
    own = set(query_terms(f"{product.name} {product.description} {product.category}").words)
    return sum(any(_alike(word, mine) for word in said) for mine in own)


def _in_product(said: Sequence[str], product: Product) -> int:
    """How many of the words are in the product's name, description or category, in one of their forms ("charge"
    and "charging", "wire" and "wired")."""
    own = query_terms(f"{product.name} {product.description} {product.category}").words
    return sum(any(_alike(word, mine) for mine in own) for word in said)


def _alike(one: str, other: str) -> bool:
    return one.rstrip("s") == other.rstrip("s") or (min(len(one), len(other)) >= 4 and one[:4] == other[:4])


def count_in(text: str, name: str) -> int:
    """How many the words ask for (said_count), else one."""
    return said_count(text, name) or 1


def said_count(text: str, name: str) -> int | None:
    """The first number of the words that is not part of the product's name ("27 inch monitor", "Two slice
    toaster"), if they say one."""
    own = {token for token, _ in number_tokens(words(name))}
    said = MEASURE.sub(" ", SIZE.sub(" ", PRICE_SAID.sub(" ", KINDS.sub(" ", PRICE_ECHO.sub(" ", text)))))
    for token, _ in number_tokens(words(said)):
        if token.isdigit() and token not in own and 0 < int(token) <= MAX_QUANTITY:
            return int(token)
    return None


def _parts(text: str) -> list[str]:
    return [part for part in _PARTS.split(text) if part.strip()]


def _same_word(one: str, other: str) -> bool:
    """The same word, singular or plural ("lamps", "lamp"; "glasses", "glass"); irregular plurals ("mice") are
    undone by query_terms."""
    return bool(_forms(one) & _forms(other))


def _forms(word: str) -> set[str]:
    forms = {word}
    for ending in ("es", "s"):
        if word.endswith(ending) and len(word) > len(ending) + 2:
            forms.add(word[: -len(ending)])
    return forms
