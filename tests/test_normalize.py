"""normalize_for_speech: what the voice must say for prices, numbers, times, dates, codes and markup."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callcenter.shop import Shop
from callcenter.shop_tools import euros, shop_tools
from speech.normalize import normalize_for_speech
from swarm.tools import ToolContext
from tests.tool_fakes import NoSession

CASES = [
    # prices, in every shape the agents and the LLM write them
    ("€24.90", "twenty four euros ninety"),
    ("24.90 euros", "twenty four euros ninety"),
    ("24 euros 90", "twenty four euros ninety"),
    ("It costs 24 euros 90 in total.", "It costs twenty four euros ninety in total."),
    ("EUR 129", "one hundred and twenty nine euros"),
    ("129 EUR", "one hundred and twenty nine euros"),
    ("24,90 €", "twenty four euros ninety"),
    ("€1,299.00", "one thousand two hundred and ninety nine euros"),
    ("24.05 euros", "twenty four euros oh five"),
    ("€0.50", "fifty cents"),
    ("1 euro", "one euro"),
    ("$5", "five dollars"),
    ("£3.50", "three pounds fifty"),
    # numbers and ordinals
    ("2", "two"),
    ("42nd", "forty second"),
    ("1,299", "one thousand two hundred and ninety nine"),
    ("Bluetooth 5.3", "Bluetooth five point three"),
    ("sizes 38 to 46", "sizes thirty eight to forty six"),
    ("It is 12 in total", "It is twelve in total"),
    # times
    ("10:30", "ten thirty"),
    ("10:00", "ten o'clock"),
    ("9am", "nine a m"),
    ("9:05 pm", "nine oh five p m"),
    ("14:00", "two p m"),
    ("We open at 9 a.m. Then we close at 6 p.m.", "We open at nine a m. Then we close at six p m."),
    # dates
    ("from 24 November with", "from the twenty fourth of November with"),
    ("on the 3rd of May 2026", "on the third of May twenty twenty six"),
    ("2026-11-30", "the thirtieth of November twenty twenty six"),
    ("November 24, 2026", "November twenty fourth twenty twenty six"),
    ("You may 10 times", "You may ten times"),  # "may" the verb stays a verb
    # codes and digits read one by one
    ("order 40110", "order four zero one one zero"),
    ("your order number is 40110", "your order number is four zero one one zero"),
    ("The order number is 4 0 1 1 0.", "The order number is four zero one one zero."),
    ("HP-100", "H P one zero zero"),
    ("Ref 0042", "Ref zero zero four two"),
    ("Call +49 170 1234567.", "Call plus four nine, one seven zero, one two three four five six seven."),
    ("(020) 7946 0321", "zero two zero, seven nine four six, zero three two one"),
    # percentages and the catalogue's units
    ("20% off", "twenty percent off"),
    ("2.5 %", "two point five percent"),
    ("a 3.5 mm jack", "a three point five millimetres jack"),
    ("20 W", "twenty watts"),
    ("30 h battery", "thirty hours battery"),
    ("1.7 l", "one point seven litres"),
    ("10000 mAh", "ten thousand milliamp hours"),
    ("10,000 mAh", "ten thousand milliamp hours"),
    ("a 4K webcam with MP3", "a four K webcam with MP three"),
    ("2 cm", "two centimetres"),
    ("1 h", "one hour"),
    # abbreviations
    ("e.g. this, approx. 5 kg, No. 7", "for example this, approximately five kilos, number seven"),
    ("Q&A 24/7", "Q and A twenty four seven"),
    # markup, emoji and links would be read aloud
    ("**Great!** See [our page](https://shop.example/x) 😀👍", "Great! See our page"),
    ("# Options\n- the `HP-100`\n- the *HP-200*", "Options. the H P one zero zero. the H P two zero zero"),
    ("<b>Done</b> ✅", "Done"),
    ("", ""),
    ("🙂 ", ""),
]


@pytest.mark.parametrize(("text", "spoken"), CASES)
def test_normalizes_for_the_ear(text: str, spoken: str) -> None:
    assert normalize_for_speech(text) == spoken


@given(st.integers(min_value=0, max_value=99_999_99))
def test_every_price_the_shop_says_has_no_digits_left(cents: int) -> None:
    spoken = normalize_for_speech(f"That is {euros(cents)} in total.")
    assert not re.search(r"\d", spoken)
    assert re.fullmatch(r"That is [a-z ]+ (euros?|cents?)( [a-z ]+)? in total\.", spoken), spoken


@given(st.text(max_size=200))
def test_any_text_gives_text_without_markup(text: str) -> None:
    spoken = normalize_for_speech(text)
    assert not re.search(r"[*`#<>|~]|\s{2}", spoken)
    assert spoken == spoken.strip()


async def test_the_shops_tool_lines() -> None:
    """Every "say" line the shop's tools produce, through a real shop: no digit or code left for the voice."""
    shop = Shop(":memory:")
    tools = {tool.name: tool for tool in shop_tools(shop)}
    context = ToolContext(
        client_id="call-1", agent="sales", session=NoSession(), metadata={"caller": "+4915100000000"}, session_id="s1"
    )
    try:
        found = await tools["search_products"].call({"query": "wireless headphones"}, context)
        sku = found["products"][0]["sku"]
        proposal = await tools["place_order"].call({"sku": sku, "quantity": 2}, context)
        placed = await tools["place_order"].call({"sku": sku, "quantity": 1, "confirmed": True}, context)
        order = await tools["find_order"].call({"order_number": placed["order_number"]}, context)
        ask = await tools["create_return"].call({"order_number": placed["order_number"], "sku": sku}, context)
        done = await tools["create_return"].call(
            {"order_number": placed["order_number"], "sku": sku, "confirmed": True}, context
        )
    finally:
        shop.close()
    lines = [found["say"], proposal["say"], placed["say"], order["say"], ask["say"], done["say"]]
    spoken = [normalize_for_speech(line) for line in lines]
    for line in spoken:
        assert not re.search(r"\d", line), line
    assert (
        f"The order number is {spelled(placed['order_number'])}, and the total is one hundred and twenty nine euros."
        in spoken[2]
    )
    assert "for two hundred and fifty eight euros in total" in spoken[1]
    assert re.search(r"from the \w+( \w+)? of \w+ with the", spoken[3])
    assert f"found your order {spelled(placed['order_number'])} from" in spoken[3]
    assert f"registered, number {spelled(done['return_number'])}." in spoken[5]


def spelled(code: str) -> str:
    return " ".join("zero one two three four five six seven eight nine".split()[int(d)] for d in code)


@given(st.text(alphabet="0123456789.,:%€$£ -/+()thndsrEURamp", max_size=60))
def test_number_soup_is_said_in_words(text: str) -> None:
    assert not re.search(r"\d", normalize_for_speech(text))
