"""The shop against real databases: SQLite (in memory and in a file) and a throw-away PostgreSQL."""

from __future__ import annotations

import csv
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callcenter.shop import (
    CatalogueError,
    InvalidRequest,
    NotReturnable,
    Order,
    OutOfStock,
    Shop,
    ShopError,
    UnknownProduct,
    spoken_digits,
)
from callcenter.shop_tools import euros, shop_tools
from callcenter.store import parse_url
from callcenter.store.database import SqliteDatabase
from harness.postgres import count_rows
from swarm.tools import ToolContext
from tests.tool_fakes import NoSession

DIGIT_WORDS = "zero one two three four five six seven eight nine".split()
PHONE = "+49 170 1234567"


def catalogue_size() -> int:
    text = resources.files("callcenter").joinpath("data/products.csv").read_text(encoding="utf-8")
    return len(list(csv.DictReader(text.splitlines())))


def count(db: str, table: str) -> int:
    # A second connection sees only what was committed.
    return count_rows(db, table)


def stock(shop: Shop, sku: str) -> int:
    product = shop.get_product(sku)
    assert product is not None
    return product.stock


def spoken(number: str) -> str:
    return " ".join(DIGIT_WORDS[int(d)] for d in number)


@pytest.fixture
def db(database_url: str) -> str:
    return database_url


@pytest.fixture
def shop(db: str) -> Iterator[Shop]:
    with Shop(db) as s:
        yield s


@pytest.fixture
def file_shop(db: str) -> Iterator[Shop]:
    with Shop.open(db) as s:
        yield s


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.peers)])
def read_only_shop(request: pytest.FixtureRequest) -> Iterator[Shop]:
    url = ":memory:" if request.param == "sqlite" else request.getfixturevalue("postgres").new_schema()
    with Shop(url) as s:
        yield s


# --- catalogue ------------------------------------------------------------------------


def test_memory_shop_loads_the_packaged_catalogue(shop: Shop) -> None:
    charger = shop.get_product("CH-110")
    assert charger is not None
    assert charger.name == "USB-C phone charger"
    assert charger.price_cents == 2490
    assert charger.stock == 80
    assert len(shop.search("a", limit=50)) == 0  # a stop word alone matches nothing


def test_reopening_a_file_neither_duplicates_nor_resets_the_catalogue(db: str) -> None:
    with Shop(db) as first:
        first.place_order(PHONE, [("VC-510", 2)], "k1")
    assert count(db, "products") == catalogue_size()
    with Shop(db) as again:
        assert stock(again, "VC-510") == 4
    assert count(db, "products") == catalogue_size()
    if db.startswith("sqlite"):
        assert count(db, "products_fts") == catalogue_size()  # PostgreSQL's index is a column of products


def test_file_database_uses_wal_and_foreign_keys(file_shop: Shop, db: str) -> None:
    if file_shop.database.dialect != "sqlite":
        pytest.skip("SQLite's pragmas")
    with sqlite3.connect(parse_url(db).target) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert isinstance(file_shop.database, SqliteDatabase)
    with pytest.raises(sqlite3.IntegrityError):
        # Reaching into the connection is the only way to see the pragma is on for it.
        file_shop.database.raw_connection.execute(
            "INSERT INTO order_lines (order_id, sku, quantity, unit_price_cents) VALUES (999, 'HP-100', 1, 1)"
        )


def test_own_catalogue_csv_is_loaded_instead(tmp_path: Path, db: str) -> None:
    own = tmp_path / "own.csv"
    own.write_text(
        "sku,name,description,price_eur,stock,category\nZZ-1,Garden gnome,A gnome for the garden,0.30,3,garden\n"
    )
    with Shop(db, catalogue_csv=own) as shop:
        assert shop.get_product("HP-100") is None
        gnome = shop.get_product("zz-1")
        assert gnome is not None and gnome.price_cents == 30


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ("A-1,x,y,abc,1,z\n", r"line 2, price_eur: 'abc' is not a price"),
        ("A-1,x,y,1.00,1,z\nA-2,x,y,1.00,-1,z\n", r"line 3, stock: -1: stock is zero or more"),
        ("A-1,x,y,1.00,1,z\na-1,x,y,1.00,1,z\n", r"line 3, sku: A-1 is also on line 2"),
    ],
)
def test_broken_catalogue_names_file_and_line(tmp_path: Path, db: str, rows: str, problem: str) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("sku,name,description,price_eur,stock,category\n" + rows)
    with pytest.raises(CatalogueError, match=r"bad\.csv " + problem):
        Shop(db, catalogue_csv=bad)


# --- search ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "first"),
    [
        ("I'd like to buy a new phone charger", "CH-110"),
        ("wireless headphones", "HP-100"),
        ("robot vacuum cleaner", "VC-510"),
        ("I want to buy a robot vacuum", "VC-510"),
        ("I want two wireless headphones", "HP-100"),  # a quantity is not a product word
        ("WIRELESS HEADPHONES!!!", "HP-100"),
        ("headphone", "HP-100"),  # singular finds the plural
        ("chargers", "CH-110"),  # plural finds the singular
        ("a coffee grinder please", "CF-420"),
        ("something to keep my drinks cold", "BT-630"),
        ("smart phone case", "PH-310"),
        ("a hoover, please", "VC-510"),  # a brand that became the thing's name
        # What the demo's descriptions say a thing is (blind32: "a battery brick" found the charging pad).
        ("a portable battery pack for my phone", "PB-130"),
        ("a camera for the computer", "WC-240"),
    ],
)
def test_search_ranks_the_obvious_product_first(read_only_shop: Shop, said: str, first: str) -> None:
    found = read_only_shop.search(said)
    assert found and found[0].sku == first


@pytest.mark.parametrize(
    ("said", "sku"),
    [
        ("twenty seven inch monitor", "MN-230"),
        ("running shoes in size forty two", "RS-610"),
        ("two slice toaster", "TB-430"),  # the catalogue spells this number out
        ("usb c cable", "CB-140"),
        ("u s b c cable", "CB-140"),
        ("USB-C charger", "CH-110"),
        ("hp one hundred", "HP-100"),
    ],
)
def test_search_understands_spoken_forms(read_only_shop: Shop, said: str, sku: str) -> None:
    assert read_only_shop.search(said)[0].sku == sku


@pytest.mark.parametrize(
    "said",
    [
        "Yes, that's right.",  # "thats" stemmed to "that" found the laptop stand "that folds flat" (blind3)
        "Could you make it three instead? My daughter's going to want one too.",  # "3.5 mm", "1.7 litre"
        "Okay, that's not bad at all.",
        "I'm after a wee tent, just a two-man one.",  # "two" found the blender's "two travel cups" (blind4)
    ],
)
def test_words_naming_no_product_find_none(read_only_shop: Shop, said: str) -> None:
    assert read_only_shop.search(said) == []


def test_search_respects_the_limit(read_only_shop: Shop) -> None:
    assert len(read_only_shop.search("wireless", limit=2)) == 2
    assert len(read_only_shop.search("wireless", limit=10)) == 3  # HP-100, CH-120, MS-210


@pytest.mark.parametrize(
    "hostile",
    [
        "",
        "   ",
        '"',
        "'",
        "*",
        "-",
        "- - -",
        "OR",
        "AND NOT",
        "NEAR(",
        "NEAR(wireless headphones, 2)",
        "name: charger",
        "{name description}: phone",
        "charger*",
        '"unterminated phrase',
        "(((",
        ")",
        "^wireless",
        "'; DROP TABLE products; --",
        ";DROP TABLE products",
        "\x00\x01 wireless",
        "I want to buy a",
        "ü" * 5000,
    ],
)
def test_hostile_search_text_is_harmless(file_shop: Shop, db: str, hostile: str) -> None:
    assert isinstance(file_shop.search(hostile), list)
    assert count(db, "products") == catalogue_size()
    assert file_shop.search("wireless headphones")[0].sku == "HP-100"


def test_fts_syntax_is_not_interpreted(read_only_shop: Shop) -> None:
    # As FTS5 syntax "wireless NOT headphones" would exclude HP-100; as words it ranks it first.
    assert read_only_shop.search("wireless NOT headphones")[0].sku == "HP-100"


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.text(max_size=80))
def test_search_never_raises(read_only_shop: Shop, text: str) -> None:
    found = read_only_shop.search(text)
    assert isinstance(found, list) and len(found) <= 3


# --- spoken numbers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "digits"),
    [
        ("one two three four five", "12345"),
        ("12 345", "12345"),
        ("order number 12-345, please", "12345"),
        ("twelve three forty five", "12345"),
        ("double one oh five", "1105"),
        ("forty two", "42"),
        ("one hundred and twenty three", "123"),
        ("two thousand five hundred", "2500"),
        ("+49 (170) 123-4567", "491701234567"),
        ("no digits here", ""),
    ],
)
def test_spoken_digits(said: str, digits: str) -> None:
    assert spoken_digits(said) == digits


def test_the_digits_at_the_end_of_a_long_story_are_read() -> None:
    # A caller's 600 characters of story ended with the order number, past what a product search reads (blind10).
    story = "I bought a laptop stand and it wobbles like a jelly whenever I type, you see. " * 8
    assert len(story) > 600 and spoken_digits(f"{story} The order number is 5 9 7 3 2.") == "59732"


# --- orders ---------------------------------------------------------------------------


def test_place_order_takes_stock_and_totals_in_cents(shop: Shop) -> None:
    order = shop.place_order(PHONE, [("CH-110", 2), ("CB-140", 1)], "call-1:1")
    assert order.total_cents == 2 * 2490 + 1290
    assert [(line.sku, line.quantity, line.unit_price_cents) for line in order.lines] == [
        ("CH-110", 2, 2490),
        ("CB-140", 1, 1290),
    ]
    assert len(order.order_number) == 5 and order.order_number.isdigit()
    assert order.status == "placed"
    assert order.customer_phone == PHONE
    assert abs(order.created_at - datetime.now(UTC)) < timedelta(minutes=1)
    assert stock(shop, "CH-110") == 78
    assert stock(shop, "CB-140") == 119


def test_the_same_sku_spelled_twice_is_one_line(shop: Shop) -> None:
    order = shop.place_order(PHONE, [("hp-100", 1), ("HP100", 2)], "k")
    assert [(line.sku, line.quantity) for line in order.lines] == [("HP-100", 3)]
    assert stock(shop, "HP-100") == 11


def test_out_of_stock_rolls_everything_back(file_shop: Shop, db: str) -> None:
    # The charger line comes first, so its stock is taken before the vacuum fails.
    with pytest.raises(OutOfStock, match="Only 6 of the Robot vacuum cleaner") as error:
        file_shop.place_order(PHONE, [("CH-110", 1), ("VC-510", 7)], "k")
    assert isinstance(error.value, ShopError)
    assert (error.value.requested, error.value.available) == (7, 6)
    assert stock(file_shop, "CH-110") == 80
    assert stock(file_shop, "VC-510") == 6
    assert count(db, "orders") == 0
    assert count(db, "order_lines") == 0
    # The failed key is free: the caller can still buy what is there.
    assert file_shop.place_order(PHONE, [("VC-510", 6)], "k").total_cents == 6 * 29900


def test_unknown_product_changes_nothing(file_shop: Shop, db: str) -> None:
    with pytest.raises(UnknownProduct, match="XX-999") as error:
        file_shop.place_order(PHONE, [("CH-110", 1), ("XX-999", 1)], "k")
    assert isinstance(error.value, ShopError)
    assert stock(file_shop, "CH-110") == 80
    assert count(db, "orders") == 0


@pytest.mark.parametrize(
    "items", [[], [("CH-110", 0)], [("CH-110", -1)], [("CH-110", True)], [("CH-110",)], ["CH-110"]]
)
def test_invalid_items_are_refused(shop: Shop, items: list[tuple[str, int]]) -> None:
    with pytest.raises(InvalidRequest):
        shop.place_order(PHONE, items, "k")
    assert stock(shop, "CH-110") == 80


def test_same_idempotency_key_places_one_order(file_shop: Shop, db: str) -> None:
    first = file_shop.place_order(PHONE, [("CH-110", 1)], "call-7:charger")
    again = file_shop.place_order(PHONE, [("CH-110", 1)], "call-7:charger")
    assert again == first
    assert count(db, "orders") == 1
    assert stock(file_shop, "CH-110") == 79
    other = file_shop.place_order(PHONE, [("CH-110", 1)], "call-7:another")
    assert other.order_number != first.order_number
    assert count(db, "orders") == 2


def _buy_concurrently(shops: list[Shop], sku: str) -> list[object]:
    barrier = threading.Barrier(len(shops))
    results: list[object] = [None] * len(shops)

    def buy(index: int) -> None:
        barrier.wait()
        try:
            phone = f"+49 170 000000{index}"
            results[index] = shops[index].place_order(phone, [(sku, 1)], f"buyer-{index}")
        except ShopError as error:
            results[index] = error

    threads = [threading.Thread(target=buy, args=(i,)) for i in range(len(shops))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


@pytest.fixture
def scarce_csv(tmp_path: Path) -> Path:
    path = tmp_path / "scarce.csv"
    path.write_text(
        "sku,name,description,price_eur,stock,category\nLE-1,Limited edition speaker,Only three made,99.00,3,audio\n"
    )
    return path


@pytest.mark.parametrize("separate_connections", [True, False], ids=["connection-per-thread", "shared-shop"])
def test_concurrent_orders_never_oversell(db: str, scarce_csv: Path, separate_connections: bool) -> None:
    with Shop(db, catalogue_csv=scarce_csv) as shared:
        shops = [Shop(db) if separate_connections else shared for _ in range(5)]
        try:
            results = _buy_concurrently(shops, "LE-1")
        finally:
            for s in shops:
                if s is not shared:
                    s.close()
        sold = [r for r in results if not isinstance(r, Exception)]
        refused = [r for r in results if isinstance(r, OutOfStock)]
        assert (len(sold), len(refused)) == (3, 2)
        assert stock(shared, "LE-1") == 0
    assert count(db, "orders") == 3


# --- finding orders -------------------------------------------------------------------


@pytest.fixture
def history(shop: Shop) -> dict[str, str]:
    """Three orders of one caller, 20, 5 and 1 day(s) ago, and one of someone else."""
    seed = shop.seed_demo_order
    return {
        "old": seed(PHONE, [("RS-610", 1)], days_ago=20).order_number,
        "headphones": seed(PHONE, [("HP-100", 1), ("CB-140", 2)], days_ago=5).order_number,
        "mouse": seed(PHONE, [("MS-210", 1)], days_ago=1).order_number,
        "stranger": seed("+44 20 7946 0958", [("HP-100", 1)], days_ago=2).order_number,
    }


def numbers(orders: list[Order]) -> list[str]:
    return [order.order_number for order in orders]


def test_find_order_by_number_written_or_spoken(shop: Shop, history: dict[str, str]) -> None:
    number = history["headphones"]
    head, tail = number[:2], number[2:]
    for said in (number, f"{head} {tail}", spoken(number), f"it's {head}-{tail}"):
        found = shop.find_orders(order_number=said)
        assert numbers(found) == [number], said
    assert found[0].lines[0].name == "Wireless over-ear headphones"


def test_find_order_by_unknown_or_empty_number(shop: Shop, history: dict[str, str]) -> None:
    assert shop.find_orders(order_number="1") == []
    assert shop.find_orders(order_number="I don't know it") == []


@pytest.mark.parametrize("phone", [PHONE, "+491701234567", "0170 123 4567", "0049-170-1234567", "01701234567"])
def test_find_orders_by_phone_variants_newest_first(shop: Shop, history: dict[str, str], phone: str) -> None:
    found = shop.find_orders(customer_phone=phone)
    assert numbers(found) == [history["mouse"], history["headphones"], history["old"]]


def test_find_orders_by_phone_ignores_other_callers(shop: Shop, history: dict[str, str]) -> None:
    assert shop.find_orders(customer_phone="+49 170 7654321") == []
    assert numbers(shop.find_orders(customer_phone="0044 20 7946 0958")) == [history["stranger"]]
    # A national form is read in the shop's region (DE by default): 020 7946 0958 is then a German number.
    assert shop.find_orders(customer_phone="020 7946 0958") == []


def test_a_national_number_is_read_in_the_shops_region(db: str) -> None:
    with Shop(db, phone_region="GB") as british:
        number = british.seed_demo_order("+44 20 7946 0958", [("HP-100", 1)], days_ago=2).order_number
        assert numbers(british.find_orders(customer_phone="020 7946 0958")) == [number]
        assert british.find_orders(customer_phone="0170 1234567") == []


def test_the_same_last_nine_digits_in_another_country_are_another_customer(shop: Shop) -> None:
    # Issue 29: matching on the last nine digits gave +33 9 30 55 55 55 the orders of +49 30 555555.
    german = shop.seed_demo_order("+4930555555", [("CB-140", 3)], days_ago=1).order_number
    assert numbers(shop.find_orders(customer_phone="+4930555555")) == [german]
    assert numbers(shop.find_orders(customer_phone="030 555555")) == [german]
    assert shop.find_orders(customer_phone="+33930555555") == []
    assert shop.find_orders(customer_phone="+33 9 30 55 55 55") == []


@pytest.mark.parametrize(
    "caller",
    ["", "anonymous", "Anonymous", "restricted", "unknown", "+49", "12", "not a number", "+4915", "+999 1234567"],
)
def test_withheld_malformed_or_unallocated_numbers_are_no_customer(shop: Shop, caller: str) -> None:
    # An order placed from such a number is kept, but belongs to no caller: nobody reaches it by caller ID.
    shop.place_order(caller, [("CB-140", 1)], f"from {caller!r}")
    assert shop.customer_key(caller) == ""
    assert shop.find_orders(customer_phone=caller) == []


def test_find_orders_by_phone_and_product_words(shop: Shop, history: dict[str, str]) -> None:
    def by_words(text: str) -> list[str]:
        return numbers(shop.find_orders(customer_phone=PHONE, product_text=text))

    assert by_words("the wireless headphones") == [history["headphones"]]
    assert by_words("a usb c cable") == [history["headphones"]]
    assert by_words("my running shoes, they were too small") == [history["old"]]
    assert by_words("the mouse") == [history["mouse"]]
    assert by_words("a toaster") == []
    # Only filler words: no filter at all.
    everything = [history["mouse"], history["headphones"], history["old"]]
    assert by_words("the thing I bought") == everything


def test_find_orders_needs_a_number_or_a_phone(shop: Shop, history: dict[str, str]) -> None:
    assert shop.find_orders(product_text="headphones") == []
    assert shop.find_orders() == []


def test_find_orders_limit(shop: Shop, history: dict[str, str]) -> None:
    assert numbers(shop.find_orders(customer_phone=PHONE, limit=1)) == [history["mouse"]]


def test_seed_demo_order_is_dated_keeps_stock_and_is_not_repeated(shop: Shop) -> None:
    order = shop.seed_demo_order(PHONE, [("SW-330", 1)], days_ago=3)
    assert order.status == "delivered"
    age = datetime.now(UTC) - order.created_at
    assert timedelta(days=3) <= age < timedelta(days=3, minutes=1)
    assert stock(shop, "SW-330") == 18
    assert shop.seed_demo_order(PHONE, [("SW-330", 1)], days_ago=3) == order
    assert len(shop.find_orders(customer_phone=PHONE)) == 1
    with pytest.raises(UnknownProduct):
        shop.seed_demo_order(PHONE, [("NOPE-1", 1)], days_ago=3)


# --- returns --------------------------------------------------------------------------


@pytest.fixture
def bought(shop: Shop) -> str:
    return shop.place_order(PHONE, [("HP-100", 2), ("CB-140", 1)], "buy").order_number


def test_return_restocks_and_refunds_in_cents(shop: Shop, bought: str) -> None:
    made = shop.create_return(spoken(bought), "HP-100", 1, "too tight", "ret-1")
    assert (made.order_number, made.sku, made.quantity) == (bought, "HP-100", 1)
    assert made.refund_cents == 12900
    assert made.product_name == "Wireless over-ear headphones"
    assert made.reason == "too tight"
    assert len(made.return_number) == 5 and made.return_number.isdigit()
    assert stock(shop, "HP-100") == 13  # 14 - 2 + 1
    line = shop.find_orders(order_number=bought)[0].lines[0]
    assert (line.returned_quantity, line.returnable_quantity) == (1, 1)


def test_return_is_idempotent(shop: Shop, bought: str) -> None:
    first = shop.create_return(bought, "HP-100", 1, "broken", "ret-1")
    again = shop.create_return(bought, "HP-100", 1, "broken", "ret-1")
    assert again == first
    assert stock(shop, "HP-100") == 13


@pytest.mark.parametrize(
    ("sku", "quantity", "message"),
    [
        ("XX-999", 1, "does not contain"),  # no such product at all
        ("VC-510", 1, "does not contain"),  # a product, but not in this order
        ("HP-100", 3, "Only 2 of the Wireless over-ear headphones"),
    ],
)
def test_return_refuses_what_was_not_bought(shop: Shop, bought: str, sku: str, quantity: int, message: str) -> None:
    with pytest.raises(NotReturnable, match=message):
        shop.create_return(bought, sku, quantity, "", "ret-x")
    assert stock(shop, "HP-100") == 12
    assert stock(shop, "VC-510") == 6


def test_return_refuses_what_was_already_returned(shop: Shop, bought: str) -> None:
    shop.create_return(bought, "HP-100", 2, "both broken", "ret-1")
    with pytest.raises(NotReturnable, match="already been returned"):
        shop.create_return(bought, "HP-100", 1, "again", "ret-2")
    assert stock(shop, "HP-100") == 14


def test_return_of_an_unknown_order(shop: Shop, bought: str) -> None:
    other = "99999" if bought != "99999" else "88888"
    spelled = " ".join(other)
    with pytest.raises(NotReturnable, match=f"can't find an order with the number {spelled}"):
        shop.create_return(other, "HP-100", 1, "", "ret-1")
    with pytest.raises(NotReturnable, match="can't find an order with that number"):
        shop.create_return("I lost it", "HP-100", 1, "", "ret-1")


def test_order_is_marked_returned_when_everything_came_back(shop: Shop, bought: str) -> None:
    shop.create_return(bought, "HP-100", 2, "", "ret-1")
    assert shop.find_orders(order_number=bought)[0].status == "placed"
    shop.create_return(bought, "CB-140", 1, "", "ret-2")
    assert shop.find_orders(order_number=bought)[0].status == "returned"


def test_return_with_invalid_quantity(shop: Shop, bought: str) -> None:
    with pytest.raises(InvalidRequest):
        shop.create_return(bought, "HP-100", 0, "", "ret-1")
    assert stock(shop, "HP-100") == 12


async def test_a_search_offers_the_quantity_the_caller_asked_for(shop: Shop) -> None:
    search = next(t for t in shop_tools(shop) if t.name == "search_products")
    context = ToolContext("c1", "sales", NoSession())
    two = await search.call({"query": "yoga mat", "quantity": 2}, context)
    assert two["say"].endswith("Shall I order 2 Yoga mats for you?")
    assert two["proposal"]["arguments"] == {"sku": "YM-620", "quantity": 2}
    many = await search.call({"query": "yoga mat", "quantity": 1000}, context)
    assert "only" in many["say"] and "proposal" not in many  # more than the stock: nothing to agree to


@pytest.mark.parametrize("said", ["Oh, hello there, good afternoon! I'd like to order something, please.", "something"])
async def test_words_that_name_nothing_are_asked_what_they_want(shop: Shop, said: str) -> None:
    # The 1.5B, handed "I'd like to order something", searched for "coffee" and offered a grinder (blind6).
    search = next(t for t in shop_tools(shop) if t.name == "search_products")
    asked = await search.call({"query": said}, ToolContext("c1", "sales", NoSession()))
    assert asked["products"] == [] and asked["say"] == "What product are you looking for?"
    assert asked["question"] == {"tool": "search_products", "arguments": {"quantity": 1}, "answer": "query"}
    found = await search.call(
        {"query": "Good afternoon, a laptop stand please"}, ToolContext("c1", "sales", NoSession())
    )
    assert found["products"][0]["sku"] == "LP-250"


async def test_an_order_for_the_callers_words_instead_of_a_code_offers_what_they_name(shop: Shop) -> None:
    # The 1.5B, never having searched, called place_order with sku "coffee machine" (confirmed, after a yes).
    order = next(t for t in shop_tools(shop) if t.name == "place_order")
    context = ToolContext("c1", "sales", NoSession())
    before = stock(shop, "CF-420")
    offered = await order.call({"sku": "coffee grinder", "quantity": 1, "confirmed": True}, context)
    assert offered["say"].startswith("We have the Coffee grinder for") and offered["say"].endswith("?")
    assert offered["proposal"]["arguments"] == {"sku": "CF-420", "quantity": 1}
    assert stock(shop, "CF-420") == before and "order_number" not in offered  # nothing written
    nothing = await order.call({"sku": "qwzx-17", "quantity": 1}, context)
    assert nothing["say"] == "I'm sorry, I can't find that product. Which one would you like?"


def test_an_order_number_or_a_made_up_name_is_no_product_code_to_order(shop: Shop) -> None:
    # Asked what was in an order, the 1.5B called place_order with the order number as the product code and its
    # own argument names in `also` (blind9): sent back to the model before anything runs, find_order named.
    order = next(t for t in shop_tools(shop) if t.name == "place_order")
    context = ToolContext("c1", "sales", NoSession())
    number = order.errors({"sku": "19729", "also": {"quantity": 1, "sku": 19729}}, context)
    assert number[0] == "'19729' is not a product code; to read an order by its number, call find_order"
    assert len(number) == 2 and number[-1].startswith("use only product codes")  # the echoed fields are no codes
    assert order.errors({"sku": "WC-240", "also": {"XX-1": 1}}, context)[0] == "'XX-1' is not a product code"
    assert order.errors({"sku": "WC-240", "also": {"quantity": 3, "sku": 1}}, context) == []
    assert order.errors({"sku": "WC-240", "quantity": 2, "also": {"LP-250": 1}}, context) == []
    assert order.errors({"sku": "coffee grinder"}, context) == []  # words: offered what they name, as above


async def test_a_read_back_echoed_into_a_returns_also_is_no_line(shop: Shop) -> None:
    # Blind10: the 1.5B wrote create_return(..., also={"tool": 1, "arguments": 1}): "order ... has no item tool."
    caller = "+442079460321"
    number = shop.seed_demo_order(caller, [("PB-130", 1)], days_ago=6).order_number
    create = next(t for t in shop_tools(shop) if t.name == "create_return")
    context = ToolContext("c1", "refund", NoSession(), metadata={"caller": caller})
    echoed = {"order_number": number, "sku": "PB-130", "also": {"tool": 1, "arguments": 1}}
    read_back = await create.call(echoed, context)
    assert read_back["say"] == f"Shall I start the return of 1 Power bank from order {' '.join(number)}?"
    assert "also" not in read_back["proposal"]["arguments"]


async def test_misheard_product_words_read_back_the_callers_latest_order(shop: Shop) -> None:
    # A hard caller's "headphones" came through Whisper as "handphone": their one order was not found, and
    # the call stalled on "Could you tell me the order number?". Their latest order is offered by name.
    caller = "+442079460321"
    number = shop.seed_demo_order(caller, [("HP-100", 1)], days_ago=6).order_number
    find = next(t for t in shop_tools(shop) if t.name == "find_order")
    context = ToolContext("c1", "refund", NoSession(), metadata={"caller": caller})
    misheard = await find.call({"product": "handphone"}, context)
    assert misheard["say"].startswith(f"I couldn't find that product, but I found your order {' '.join(number)}")
    assert "Wireless over-ear headphones" in misheard["say"] and misheard["say"].endswith(
        "Shall I start a return for it?"
    )
    assert misheard["proposal"]["arguments"]["order_number"] == number  # nothing is written before a yes
    heard = await find.call({"product": "headphones"}, context)
    assert heard["say"].startswith(f"I found your order {' '.join(number)}")
    stranger = ToolContext("c2", "refund", NoSession(), metadata={"caller": "+441632960999"})
    assert (await find.call({"product": "handphone"}, stranger))["orders"] == []  # no orders: ask for the number


@pytest.mark.parametrize(
    ("said", "closest"),
    [("a coffee machine for espresso", "Coffee grinder"), ("an air fryer", "Air humidifier")],
)
async def test_a_product_only_near_what_was_asked_is_offered_as_the_closest(
    shop: Shop, said: str, closest: str
) -> None:
    # Blind10's espresso machine was offered as "We have the Coffee grinder", as if it were one.
    search = next(t for t in shop_tools(shop) if t.name == "search_products")
    near = await search.call({"query": said}, ToolContext("c1", "sales", NoSession()))
    assert near["say"].startswith(f"The closest I have to that is the {closest} for ")


@pytest.mark.parametrize(
    ("said", "sku"),
    [
        ("a vacuum", "VC-510"),
        ("a charger for my phone", "CH-110"),
        ("a smartwatch", "SW-330"),
        ("yoga mat", "YM-620"),
    ],
)
async def test_a_product_the_words_name_is_offered_as_what_we_have(shop: Shop, said: str, sku: str) -> None:
    search = next(t for t in shop_tools(shop) if t.name == "search_products")
    found = await search.call({"query": said}, ToolContext("c1", "sales", NoSession()))
    assert found["products"][0]["sku"] == sku and found["say"].startswith("We have the ")


def test_prices_are_written_as_prices_are_written() -> None:
    # The voice says "nine euros ninety" (speech.normalize); two blind suites, written apart, waited for "9.90".
    assert [euros(990), euros(2490), euros(100), euros(12900), euros(105)] == [
        "9.90 euros",
        "24.90 euros",
        "1 euro",
        "129 euros",
        "1.05 euros",
    ]


@pytest.mark.parametrize(
    "said",
    [
        "I hold lasting power of attorney for my father and I need to know exactly what he ordered and what it cost.",
        "Fine, then just cancel it and return it, whatever it is, and tell me which town it went to.",
        # Blind15: one word of the product in two forms is one word ("flat": the stand that folds flat).
        "My flatmate ordered something with our shared flat money, and he won't tell me what it was.",
    ],
)
async def test_one_word_in_common_with_a_sentence_finds_nothing(shop: Shop, said: str) -> None:
    # Blind13: "power of attorney" was offered the Power bank, "cancel it" the noise cancelling headphones.
    search = next(t for t in shop_tools(shop) if t.name == "search_products")
    assert (await search.call({"query": said}, ToolContext("c1", "sales", NoSession())))["products"] == []


@pytest.mark.parametrize(
    ("said", "sku"),
    [
        ("Hiya, I was wondering, have you any kettles left, my old one gave up this morning?", "KT-410"),
        ("the machine that makes the air wet, with steam, for the bedroom of my daughter", "HM-540"),
        ("I want the cheap wired earbuds with the mic. Not them big headphones, they're too dear.", "HP-200"),
    ],
)
async def test_a_sentence_that_names_or_describes_a_product_finds_it(shop: Shop, said: str, sku: str) -> None:
    search = next(t for t in shop_tools(shop) if t.name == "search_products")
    assert (await search.call({"query": said}, ToolContext("c1", "sales", NoSession())))["products"][0]["sku"] == sku
