"""Masking what identifies a caller in text: card numbers, IBANs, phone numbers, e-mail addresses.

Used on transcripts (stored and shown to supervisors) and on caller numbers in logs. The text comes from
Whisper and from SIP headers, so numbers come written ("4111 1111 1111 1111", "sip:+4930123456@pbx"),
spoken digit by digit ("four one one one ..."), or mixed. Every candidate is checked before it is masked
(Luhn for cards, mod 97 for IBANs, the numbering plan for phones, via python-stdnum and phonenumbers), so
prices, dates, product names and the shop's order numbers stay readable. A masked item keeps its shape and
its last digits, enough for a supervisor to tell two callers apart and no more:

    card  4111 1111 1111 1111    -> **** **** **** 1111   (last 4, as on receipts)
    IBAN  DE89 3704 0044 0532 0130 00 -> DE** **** **** **** **30 00   (country and last 4)
    phone sip:+4930123456@pbx   -> sip:+********56@pbx   (last 2)
    email jane.doe@example.com  -> ***@***.com
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import phonenumbers
from stdnum import iban, luhn

DIGIT_WORDS = {
    "zero": "0",
    "oh": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
}
# The countries phonenumbers knows the numbering plans of: what privacy.phone_region may be.
PHONE_REGIONS = frozenset(phonenumbers.SUPPORTED_REGIONS)
MASK = "*"
# No number is written in more pieces than it has digits, and none has more than 19 (a card; E.164 allows 15,
# plus 00): longer stretches are searched in windows of this many pieces, so a hostile line costs linear time.
MAX_PIECES = 19
CARD_KEEP, PHONE_KEEP, IBAN_KEEP = 4, 2, 4
# Shortest phone number masked: a Berlin number with its area code has 10 digits, a German mobile 11; six
# digits would hit the shop's order numbers (5 to 8 digits, see callcenter/store/shop_store.py) too often.
PHONE_MIN_DIGITS = 7
# Words just before a number that say it is a card: Whisper mishears a digit now and then, and a card number that
# fails Luhn by one digit still gives the other fifteen away.
CARD_WORDS = re.compile(r"\b(card|credit|debit|visa|mastercard|amex|american express|maestro)\b", re.IGNORECASE)
CARD_WORDS_BEFORE = 40  # characters
# No card or phone number is longer than 19 digits, and nothing the shop says is either: a longer run is
# numbers said together ("4242 4242 4242 4242 4242 4242"), masked whole whatever its pieces are.
LONGEST_NUMBER = 19

# A digit token is any decimal digit (full-width "４１１１" too: \d is Unicode) and may be glued to letters
# ("card4111...", "4111...x"); a digit word needs word boundaries ("someone" holds no "one").
_TOKEN = r"(?:\d+|\b(?:" + "|".join(DIGIT_WORDS) + r")\b)"
# Between the pieces of one number: up to 4 separator characters of any kind people and Whisper write (spaces,
# dots, commas, dashes of every width, underscores, slashes, parentheses, bullets), but never a newline, nor
# "@" or ":" (a SIP URI's host and port are not the rest of its user's number). Prices ("24.90") and dates
# ("01.12.2026") are runs too short or shaped to be masked.
_SEP_CHARS = r"[^\S\n]|[-‐‑‒–—―−－_.,/\\()·•|~]"
_SEP = r"(?:" + _SEP_CHARS + r"){1,4}"
_RUN = re.compile(
    r"(?P<plus>\+[ \t]?|\bplus[ \t]+)?(?P<body>" + _TOKEN + r"(?:" + _SEP + _TOKEN + r")*)",
    re.IGNORECASE,
)
_PIECE = re.compile(_TOKEN, re.IGNORECASE)
_DATE = re.compile(r"^(\d{1,2}[-/.]\d{1,2}[-/.](\d{2}|\d{4})|\d{4}[-/.]\d{1,2}[-/.]\d{1,2})$", re.ASCII)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?\b")
_IN_SIP_USER = re.compile(r"sips?:[^\s<>\"@]*$", re.IGNORECASE)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?P<tld>[A-Za-z]{2,})\b")
# "jane dot doe at example dot com": only with a known top-level domain, as "at" is a common word.
_SPOKEN_EMAIL = re.compile(
    r"\b[a-z0-9]+(?: (?:dot|underscore|dash) [a-z0-9]+)* at [a-z0-9]+(?: dot [a-z0-9]+)*"
    r" dot (?P<tld>com|org|net|de|uk|eu|fr|nl|at|ch|it|es|info|io)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Piece:
    start: int  # in the text
    end: int
    digits: str  # "4111", or "4" for the word "four"


def redact(text: str, region: str = "DE") -> str:
    """The text with card numbers, IBANs, phone numbers and e-mail addresses masked.

    `region` is the country whose national phone numbers ("030 1234567") are recognised; numbers written
    with + or 00 are recognised whatever it is.
    """
    if not text:
        return text
    text = _EMAIL.sub(_mask_email, text)
    text = _SPOKEN_EMAIL.sub(lambda m: f"{MASK * 3} at {MASK * 3} dot {m['tld']}", text)
    text = _IBAN.sub(_mask_iban, text)
    return _RUN.sub(lambda m: _mask_run(m, region), text)


def _mask_email(match: re.Match[str]) -> str:
    if _IN_SIP_USER.search(match.string, 0, match.start()):
        return match[0]  # a SIP URI's user part: a phone number in it is masked as one, an extension is kept
    return f"{MASK * 3}@{MASK * 3}.{match['tld']}"


def _mask_iban(match: re.Match[str]) -> str:
    # The pattern may have run on into a following word ("... 0130 00 THANKS"): try shorter ends too.
    written = match[0]
    for end in range(len(written), 14, -1):
        candidate = written[:end]
        if (end == len(written) or written[end] == " ") and iban.is_valid(candidate):
            return _keep_last(candidate, IBAN_KEEP, keep_first=2) + written[end:]
    return written


def _keep_last(written: str, keep: int, keep_first: int = 0) -> str:
    """`written` with every letter and digit masked except the first `keep_first` and the last `keep` digits."""
    out = []
    seen = 0
    total = sum(c.isalnum() for c in written)
    for char in written:
        if char.isalnum():
            seen += 1
            out.append(char if seen <= keep_first or seen > total - keep else MASK)
        else:
            out.append(char)
    return "".join(out)


def _pieces(match: re.Match[str]) -> list[_Piece]:
    offset = match.start("body")
    found = []
    for piece in _PIECE.finditer(match["body"]):
        word = piece[0].lower()
        digits = DIGIT_WORDS.get(word) or "".join(str(unicodedata.decimal(c)) for c in word)  # "４" -> "4"
        found.append(_Piece(offset + piece.start(), offset + piece.end(), digits))
    return found


def _mask_run(match: re.Match[str], region: str) -> str:
    pieces = _pieces(match)
    if _DATE.match(match["body"]):
        return match[0]
    international = match["plus"] is not None
    card_context = CARD_WORDS.search(match.string, max(0, match.start() - CARD_WORDS_BEFORE), match.start()) is not None
    masks: list[tuple[int, int, int]] = []  # (first piece, last piece, digits kept)
    start = 0
    # Greedy from the left, longest first: "call 0151 23456789 about order 4711" masks the phone only; a
    # whole run that is not one number may still hold one ("129 0151 23456789").
    while start < len(pieces):
        for stop in range(min(len(pieces), start + MAX_PIECES), start, -1):
            keep = _classify(
                pieces[start:stop],
                region,
                international and start == 0,
                card_context,
                whole=start == 0 and stop == len(pieces),
            )
            if keep is not None:
                masks.append((start, stop, keep))
                start = stop
                break
        else:
            start += 1
    total = sum(len(p.digits) for p in pieces)
    shown = total - sum(len(p.digits) for first, stop, _ in masks for p in pieces[first:stop])
    # Digits left beside a card or phone number found in the same run may be the rest of it (a card read on
    # after a prefix that looked like a phone, or a longer number): the whole run is masked then.
    if total > LONGEST_NUMBER or (masks and total >= 13 and shown > CARD_KEEP):
        masks = [(0, len(pieces), CARD_KEEP)]
    if not masks:
        return match[0]
    return _apply(match, pieces, masks)


def _classify(pieces: list[_Piece], region: str, international: bool, card_context: bool, whole: bool) -> int | None:
    """How many digits to keep if these pieces are a card or phone number, else None."""
    digits = "".join(p.digits for p in pieces)
    if international and len(digits) >= PHONE_MIN_DIGITS and _is_phone(digits, region, True):
        return PHONE_KEEP
    # A valid card number is one however it is split ("41 11 11 ..."); one that fails Luhn but follows "card"
    # only when written as cards are.
    if 13 <= len(digits) <= 19 and (luhn.is_valid(digits) or (card_context and _card_shaped(pieces))):
        return CARD_KEEP
    if international:  # "+" is otherwise a phone number's alone
        return None
    if len(digits) >= (PHONE_MIN_DIGITS if whole else PHONE_MIN_DIGITS + 2) and _is_phone(
        digits, region, international
    ):
        return PHONE_KEEP
    return None


def _card_shaped(pieces: list[_Piece]) -> bool:
    """Cards are written as one block, in fours (Amex 4-6-5), or read out digit by digit."""
    sizes = [len(p.digits) for p in pieces]
    return (
        len(sizes) == 1
        or all(s == 1 for s in sizes)
        or sizes == [4, 6, 5]
        or (all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4)
    )


def _is_phone(digits: str, region: str, international: bool) -> bool:
    if international:
        candidate = "+" + digits
    elif digits.startswith("00"):
        candidate = digits  # phonenumbers reads the region's international prefix
    else:
        # Where national numbers start with a trunk prefix ("0" in most of Europe), a number without it is
        # not a national phone number: "30123456" is an order number, "030 123456" a Berlin line.
        metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
        prefix = metadata.national_prefix if metadata is not None else None
        if prefix == "0" and not digits.startswith("0"):
            return False
        candidate = digits
    try:
        number = phonenumbers.parse(candidate, region)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_valid_number(number)


def _apply(match: re.Match[str], pieces: list[_Piece], masks: list[tuple[int, int, int]]) -> str:
    text = match.string
    out = [text[match.start() : pieces[0].start]]
    cursor = pieces[0].start
    for first, stop, keep in masks:
        span = pieces[first:stop]
        out.append(text[cursor : span[0].start])
        total = sum(len(p.digits) for p in span)
        seen = 0
        for index, piece in enumerate(span):
            if index:
                out.append(text[span[index - 1].end : piece.start])
            seen += len(piece.digits)
            visible = min(len(piece.digits), max(0, keep - (total - seen)))  # this piece's digits in the kept tail
            out.append(_mask_piece(text[piece.start : piece.end], visible))
        cursor = span[-1].end
    out.append(text[cursor : match.end()])
    return "".join(out)


def _mask_piece(written: str, visible: int) -> str:
    if not written.isdecimal():
        return written if visible else MASK  # a digit word: kept whole or masked whole
    return MASK * (len(written) - visible) + written[len(written) - visible :]
