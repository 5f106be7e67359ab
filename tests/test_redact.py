"""Redaction: what identifies a caller is masked, what the shop needs to read (prices, order numbers, dates,
product names) is not."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stdnum import luhn

from callcenter.call_records import CallRecord, CallRecords
from callcenter.redact import redact
from callcenter.shop_tools import digits, euros
from callcenter.store.shop_store import NUMBER_WIDTHS
from swarm.events import ToolCalled, UserText

MASKED = [
    # cards: written in fours, compact, with dashes, read out as words, Amex
    ("My card is 4111 1111 1111 1111, expiry 12/27.", "My card is **** **** **** 1111, expiry 12/27."),
    ("4111111111111111", "************1111"),
    ("use 5500-0000-0000-0004 please", "use ****-****-****-0004 please"),
    ("four one one one one one one one one one one one one one one one", "* * * * * * * * * * * * one one one one"),
    ("amex 3782 822463 10005", "amex **** ****** *0005"),
    # a misheard digit fails Luhn, but "card" says what it is
    ("my credit card is 4111 1111 1111 1112", "my credit card is **** **** **** 1112"),
    # IBANs, grouped and compact, with words after them
    ("IBAN DE89 3704 0044 0532 0130 00 thanks", "IBAN DE** **** **** **** **30 00 thanks"),
    ("GB82WEST12345698765432", "GB****************5432"),
    # phones: E.164, in SIP URIs, national with the trunk prefix, 00, spoken, in parentheses
    ("sip:+4930123456@127.0.0.1", "sip:+********56@127.0.0.1"),
    ('"Jane" <sip:+4915100000000@pbx.example.com>;tag=1', '"Jane" <sip:+***********00@pbx.example.com>;tag=1'),
    ("call me on 030 1234567 please", "call me on *** *****67 please"),
    ("my number is 0151 23456789", "my number is **** ******89"),
    ("(030) 12345678", "(***) ******78"),
    ("0049 151 23456789", "**** *** ******89"),
    ("+1 415 555 2671", "+* *** *** **71"),
    ("plus four nine three zero one two three four five six seven", "plus * * * * * * * * * six seven"),
    ("zero one five one two three four five six seven eight nine", "* * * * * * * * * * eight nine"),
    # a run that is more than one number: the phone inside it is found
    ("that is 129 0151 23456789", "that is 129 **** ******89"),
    # issue 25: runs longer than a card, other separators, full-width digits, digits glued to words
    ("my order number is 4242 4242 4242 4242 4242 4242", "my order number is **** **** **** **** **** 4242"),
    ("424242424242424242424242", "********************4242"),
    ("4111.1111.1111.1111", "****.****.****.1111"),
    ("4111_1111_1111_1111", "****_****_****_1111"),
    ("4111 – 1111 – 1111 – 1111", "**** – **** – **** – 1111"),
    ("４１１１ １１１１ １１１１ １１１１", "**** **** **** １１１１"),
    ("card4111111111111111", "card************1111"),
    ("4111111111111111x", "************1111x"),
    ("41 11 11 11 11 11 11 11", "** ** ** ** ** ** 11 11"),
    ("+4111111111111111", "+************1111"),
    # e-mail, written and spoken
    ("mail jane.doe@example.com ok", "mail ***@***.com ok"),
    ("it's jane dot doe at example dot com", "it's *** at *** dot com"),
]

KEPT = [
    "The order number is 5 3 0 3 0 1 2 3, and the total is 129 euros.",
    "order 30123456",  # a valid Berlin number without its 0: the shop's numbers never start with 0
    "It costs 24.90 euros, 129.00 in total",
    "on 01/12/2026 or 2026-12-01 at 10:30",
    "the 27 inch monitor MN-230, a USB-C cable CB-140 and 2 HP-100",
    "a 4111-1111-1111-1112 number",  # fails Luhn and nothing says card: a reference, not a card
    "orders 12, 24, 36, 48, 59, 90, 15",
    "sip:alice@example.com",  # an extension's name, not a number
    "someone gave one two three",
    "oh, I see",
    "GB82WEST12345698765431",  # mod 97 fails (and its digits fail Luhn): not an IBAN, not a card
    "call 12345",
    "It costs 24.90 euros. 3 left",
    "on 01.12.2026",
    "",
]


@pytest.mark.parametrize(("text", "expected"), MASKED)
def test_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("text", KEPT)
def test_kept(text: str) -> None:
    assert redact(text) == text


def test_national_numbers_follow_the_region() -> None:
    # "415 555 2671" is a US number; in Germany it is no number at all.
    assert redact("call 415 555 2671") == "call 415 555 2671"
    assert redact("call 415 555 2671", region="US") == "call *** *** **71"


def test_card_words_count_only_near_the_number() -> None:
    # "card" said a sentence earlier does not turn a reference number into a card.
    far = "I paid by card last week, and I also have a voucher, its reference is 4111 1111 1111 1112"
    assert redact(far) == far
    # nor an E.164 number of card length into a card
    assert redact("card? call +4915100000000") == "card? call +***********00"


def test_masking_twice_changes_nothing() -> None:
    once = redact(" ".join(text for text, _ in MASKED))
    assert redact(once) == once


@given(st.sampled_from(NUMBER_WIDTHS).flatmap(lambda w: st.integers(10 ** (w - 1), 10**w - 1)), st.integers(1, 99_999))
def test_what_the_shop_says_is_never_masked(number: int, cents: int) -> None:
    # The shop's own sentences (shop_tools), with the numbers it draws (shop_store), written and spoken.
    said = f"Your order is placed. The order number is {digits(str(number))}, and the total is {euros(cents)}."
    assert redact(said) == said
    assert redact(f"my order is {number}") == f"my order is {number}"


@given(st.integers(10**14, 10**15 - 1))
def test_every_valid_card_number_is_masked(body: int) -> None:
    card = str(body) + luhn.calc_check_digit(str(body))
    grouped = " ".join(card[i : i + 4] for i in range(0, 16, 4))
    assert redact(grouped) == "**** **** **** " + card[-4:]


# ---- stored call records ---------------------------------------------------------------------------------

CARD, PHONE = "4111 1111 1111 1111", "+4915100000000"


def _record(call_id: str) -> CallRecord:
    record = CallRecord(
        call_id,
        PHONE,
        "shop",
        1.0,
        2.0,
        "completed",
        transcript=[
            {"at": 0.5, "who": "caller", "text": f"My card is {CARD} and my e-mail jane.doe@example.com"},
            {"at": 1.0, "who": "agent", "text": "The order number is 5 3 0 3 0 1 2 3."},
        ],
    )
    record.add_session_events(
        "triage",
        [
            UserText(f"call me back on {PHONE}"),
            ToolCalled(
                agent="sales",
                call_id="t1",
                name="place_order",
                arguments={"phone": PHONE, "sku": "CH-110"},
                result=json.dumps({"order_number": "53030123", "say": f"Noted, {PHONE}.", "total_cents": 2490}),
            ),
        ],
    )
    return record


@pytest.mark.parametrize("redaction", [redact, None], ids=["redacted", "verbatim"])
def test_stored_records_are_redacted_when_asked(tmp_path: Path, redaction: Callable[[str], str] | None) -> None:
    records = CallRecords(tmp_path / "calls.db", redaction=redaction)
    try:
        records.save(_record("c1"))
        stored, events = records.get("c1"), records.session_events("c1")
        earlier = records.calls_from("0151 00000000")  # found by the number however it was written
    finally:
        records.close()
    assert stored is not None and [r.call_id for r in earlier] == ["c1"]
    assert stored.caller == PHONE  # the call log keeps who called
    assert stored.transcript[1]["text"] == "The order number is 5 3 0 3 0 1 2 3."
    assert stored.orders == ["53030123"]
    caller_line, user_text, tool = stored.transcript[0]["text"], events[0], events[1]
    assert isinstance(user_text, UserText) and isinstance(tool, ToolCalled)
    if redaction is None:
        assert CARD in caller_line and PHONE in user_text.text and tool.arguments["phone"] == PHONE
        return
    assert caller_line == "My card is **** **** **** 1111 and my e-mail ***@***.com"
    assert user_text.text == "call me back on +***********00"
    assert tool.arguments == {"phone": "+***********00", "sku": "CH-110"}
    assert json.loads(tool.result) == {"order_number": "53030123", "say": "Noted, +***********00.", "total_cents": 2490}
    assert stored.tool_calls[0]["arguments"]["phone"] == "+***********00"
    with contextlib.closing(sqlite3.connect(tmp_path / "calls.db")) as conn:
        dump = "\n".join(conn.iterdump())
    # The number: in the caller column and its key (the whole number in E.164, what calls are found by) only.
    assert dump.count(PHONE) == 2 and "4111" not in dump and "jane" not in dump


# ---- issue 25: a valid card never survives, whatever is around it and between its digits --------------------

# What people and Whisper put between digits; the property draws 1 to 3 of them between any two digits.
SEPARATORS = [" ", "  ", "\t", "\u00a0", ".", ". ", ",", ", ", "-", " - ", "–", "—", "_", "/", "(", ")", "·", "|"]
FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
# Text around the card: anything but digits, digit words' letters run together are fine, newlines are not
# separators (a new line is a new line of the transcript).
AROUND = st.text(st.characters(blacklist_categories=("Nd", "Cs"), blacklist_characters="\n"), max_size=30)


@st.composite
def written_cards(draw: st.DrawFn) -> tuple[str, str]:
    length = draw(st.integers(13, 19))
    body = draw(st.text("0123456789", min_size=length - 1, max_size=length - 1))
    card = body + luhn.calc_check_digit(body)
    if draw(st.booleans()):
        card = card.translate(FULL_WIDTH)
    written = card[0]
    for digit in card[1:]:
        gap = draw(st.lists(st.sampled_from(SEPARATORS), max_size=2))
        written += "".join(gap)[:4] + digit
    return card, draw(AROUND) + written + draw(AROUND)


def _visible_digits(text: str) -> int:
    return sum(c.isdecimal() for c in text)


@settings(max_examples=400, deadline=None)
@given(written_cards())
def test_a_valid_card_never_survives_in_any_text_with_any_separators(drawn: tuple[str, str]) -> None:
    card, text = drawn
    masked = redact(text)
    # The text around holds no digits: whatever digits are left are the card's, and at most its last four.
    assert _visible_digits(masked) <= 4, masked
    assert _visible_digits(text) == len(card)
