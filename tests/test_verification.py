"""A caller reaches only their own orders (issue 29): the two attacks of the issue, the security question asked
and checked by the tools, three wrong answers to a person; with the offline router on a real shop, SQLite and
(marked peers) PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callcenter.agents import SWARM, build_registry
from callcenter.config import ConfigError, load_config
from callcenter.shop import Order, Shop
from callcenter.shop_tools import shop_tools
from callcenter.verification import Verification, VerificationError, proves
from harness.postgres import count_rows
from swarm.events import Escalated, Event, ToolCalled
from swarm.messages import Message
from swarm.session import Session
from swarm.tools import Tool, ToolContext, result_text

GERMAN = "+4930555555"
FRENCH = "+33930555555"  # another country, the same last nine digits
STRANGER = "+44 20 7946 0321"
POSTCODE = "80331"
EMAIL = "jane.doe@example.com"


@pytest.fixture
def shop(database_url: str) -> Iterator[Shop]:
    with Shop(database_url) as s:
        yield s


def session(shop: Shop, caller: str, policy: Verification | None = None) -> Session:
    registry = build_registry(shop, {}, verification=policy or Verification())
    return registry.session(f"call-{caller}", SWARM, metadata={"caller": caller})


def order_of(shop: Shop, phone: str, **factors: str) -> Order:
    return shop.seed_demo_order(phone, [("CB-140", 3)], days_ago=2, postcode=POSTCODE, email=EMAIL, **factors)


def leaks(said: str, order: Order) -> list[str]:
    """What of `order` a reply gave away: its number, date or items."""
    spoken = " ".join(order.order_number)
    when = order.created_at.strftime("%d %B").lstrip("0")
    return [part for part in (spoken, order.order_number, when, "charger", "cable") if part.lower() in said.lower()]


def escalations(events: list[Event]) -> list[Escalated]:
    return [e for e in events if isinstance(e, Escalated)]


async def test_a_number_with_the_same_last_nine_digits_in_another_country_gets_nothing(
    shop: Shop, database_url: str
) -> None:
    # Reproduction 1: the German customer buys; a caller from France with the same last nine digits asks to
    # return "my phone charger". Before: the German order was read back and a return filed against it.
    buyer = session(shop, GERMAN)
    await buyer.complete("I'd like to buy three phone chargers")
    assert "Your order is placed" in await buyer.complete("yes please")
    german = shop.find_orders(customer_phone=GERMAN)[0]

    french = session(shop, FRENCH)
    said = [await french.complete("I want to return my phone charger"), await french.complete("yes")]
    assert not any(leaks(line, german) for line in said), said
    assert count_rows(database_url, "returns") == 0
    # The German caller still reaches their own order by their number.
    owner = session(shop, GERMAN)
    assert german.order_number in (await owner.complete("I want to return my phone charger")).replace(" ", "")


async def test_an_order_named_by_number_from_another_phone_is_told_only_after_its_postcode(
    shop: Shop, database_url: str
) -> None:
    # Reproduction 2: anyone naming an order number was read that order and could return it.
    order = order_of(shop, GERMAN)
    caller = session(shop, STRANGER)
    asked = await caller.complete(f"I want to return an item from my order {' '.join(order.order_number)}")
    assert "postcode" in asked and not leaks(asked.replace(" ".join(order.order_number), ""), order), asked
    assert not leaks(await caller.complete("yes"), order)
    assert count_rows(database_url, "returns") == 0
    # The caller answers the security question with the postcode on the order: now it is theirs to return.
    found = await caller.complete(f"The postcode is {' '.join(POSTCODE)}.")
    assert found.startswith(f"I found your order {' '.join(order.order_number)}") and "USB-C cable" in found
    assert "return is registered" in await caller.complete("Yes, please.")
    assert count_rows(database_url, "returns") == 1


async def test_an_unverified_caller_cannot_tell_a_real_order_number_from_an_invented_one(shop: Shop) -> None:
    order = order_of(shop, GERMAN)
    invented = "99999" if order.order_number != "99999" else "88888"
    replies = []
    for number in (order.order_number, invented):
        caller = session(shop, STRANGER)
        said = await caller.complete(f"I want to return something from my order {' '.join(number)}")
        replies.append(said)
        answered = await caller.complete("my postcode is 1 2 3 4 5")
        replies.append(answered)
    assert replies[0] == replies[2] and replies[1] == replies[3], replies
    assert "doesn't match" in replies[1]


async def test_three_wrong_answers_lead_to_a_person_and_nothing_more(shop: Shop, database_url: str) -> None:
    order = order_of(shop, GERMAN)
    caller = session(shop, STRANGER)
    await caller.complete(f"I want to return an item from my order {' '.join(order.order_number)}")
    wrong = ["It's 1 1 1 1 1.", "It's 2 2 2 2 2.", "It's 3 3 3 3 3."]
    said = [await caller.complete(guess) for guess in wrong]
    assert "doesn't match" in said[0] and "doesn't match" in said[1] and not escalations(caller.events[:-3])
    assert "colleague" in said[2]
    assert [e.reason for e in escalations(caller.events)] == ["verification_failed"]
    # The right answer after that changes nothing: the call is a person's now.
    late = await caller.complete(f"Oh wait, it's {' '.join(POSTCODE)}.")
    assert not leaks(late, order) and count_rows(database_url, "returns") == 0


async def test_guessing_across_order_numbers_shares_one_count(shop: Shop) -> None:
    caller = session(shop, STRANGER)
    for guess in ("12345", "23456", "34567"):
        await caller.complete(f"I want to return something from my order {' '.join(guess)}")
        await caller.complete("the postcode is 1 0 1 1 5")
    assert [e.reason for e in escalations(caller.events)] == ["verification_failed"]


# --- the tools themselves, as any model would call them ------------------------------------------------


class Log:
    """The session a tool sees: its events (the tools' earlier results) and the escalations it asks for."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.escalated: list[str] = []

    def escalate(self, reason: str, detail: str = "") -> None:
        self.escalated.append(reason)

    def end_call(self, reason: str = "goodbye", detail: str = "") -> None:
        raise AssertionError("no tool here ends the call")

    def change_agent(self, name: str) -> None:
        raise AssertionError("no tool here changes the agent")

    def navigate_back(self) -> str:
        raise AssertionError("no tool here navigates")

    def get_agent_history(self, agent: str | None = None) -> list[Message]:
        return []


def tools(shop: Shop, policy: Verification | None = None) -> dict[str, Tool]:
    return {t.name: t for t in shop_tools(shop, policy)}


async def call(tool: Tool, log: Log, caller: str, **arguments: Any) -> dict[str, Any]:
    context = ToolContext("c1", "refund", log, metadata={"caller": caller})
    result: dict[str, Any] = await tool.call(arguments, context)
    log.events.append(ToolCalled("refund", f"t{len(log.events)}", tool.name, arguments, result_text(result)))
    return result


async def test_a_model_that_writes_create_return_for_another_customers_order_writes_nothing(
    shop: Shop, database_url: str
) -> None:
    order = order_of(shop, GERMAN)
    refund = tools(shop)["create_return"]
    arguments = {"order_number": order.order_number, "sku": "CB-140", "quantity": 1, "confirmed": True}
    result = await call(refund, Log(), STRANGER, **arguments)
    assert result["verification"] == "needed" and "return_number" not in result
    assert count_rows(database_url, "returns") == 0
    # The owner, from the number on the order, may.
    assert "return_number" in await call(refund, Log(), GERMAN, **arguments)


async def test_claimed_caller_id_is_not_enough_even_for_the_own_number(shop: Shop) -> None:
    order = order_of(shop, GERMAN)
    find = tools(shop, Verification(caller_id="claimed"))["find_order"]
    log = Log()
    assert (await call(find, log, GERMAN, product="charger"))["orders"] == []  # asks for the order number
    asked = await call(find, log, GERMAN, order_number=order.order_number)
    assert asked["verification"] == "needed" and "orders" not in asked
    passed = await call(find, log, GERMAN, order_number=order.order_number, verification=EMAIL)
    assert passed["verification"] == "passed" and passed["orders"][0]["order_number"] == order.order_number


@pytest.mark.parametrize(
    ("factors", "answer", "proved"),
    [
        (("postcode",), "my postcode is eight oh three three one", True),
        (("postcode",), "80331 80332 80333", False),  # a list of guesses is no answer
        (("postcode",), EMAIL, False),  # the e-mail is not asked for
        (("email",), "jane dot doe at example dot com", True),
        (("email",), "jane at example dot com", False),
        (("phone_digits",), "five five five five", True),
        (("phone_digits",), "1 2 3 5 5 5 5", False),
    ],
)
def test_which_factors_prove_an_order_is_configurable(
    shop: Shop, factors: tuple[str, ...], answer: str, proved: bool
) -> None:
    assert proves(answer, order_of(shop, GERMAN), factors) is proved


def test_a_factor_the_order_lacks_proves_nothing(shop: Shop) -> None:
    bare = shop.seed_demo_order(GERMAN, [("HP-100", 1)], days_ago=1, postcode="", email="")
    assert not proves("", bare, ("postcode", "email"))
    assert not proves("nothing", None, ("postcode",))


@pytest.mark.parametrize(
    "bad", [Verification(caller_id="maybe"), Verification(verify_with=("pin",)), Verification(max_attempts=0)]
)
def test_unusable_settings_are_refused(bad: Verification) -> None:
    with pytest.raises(VerificationError, match="callers"):
        bad.check()


_NUMBERS = st.sampled_from([GERMAN, FRENCH, STRANGER, "+491701234567", "+14155550123", "anonymous", ""])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    owner=_NUMBERS,
    caller=_NUMBERS,
    answers=st.lists(st.from_regex(r"[0-9a-z@. ]{0,12}", fullmatch=True), max_size=4),
    use_number=st.booleans(),
)
async def test_no_tool_reads_or_returns_another_customers_order_without_its_factor(
    shop: Shop, owner: str, caller: str, answers: list[str], use_number: bool
) -> None:
    order = shop.seed_demo_order(owner, [("KT-410", 1)], days_ago=1, postcode=POSTCODE, email=EMAIL)
    theirs = bool(shop.customer_key(caller)) and shop.customer_key(caller) == order.customer_key
    named = tools(shop)
    log = Log()
    number = order.order_number if use_number else None
    results = [await call(named["find_order"], log, caller, order_number=number, product="kettle")]
    for answer in answers:
        results.append(await call(named["find_order"], log, caller, order_number=number, verification=answer))
    results.append(
        await call(named["create_return"], log, caller, order_number=order.order_number, sku="KT-410", confirmed=True)
    )
    proved = any(proves(a, order, ("postcode", "email")) for a in answers[:3]) and use_number
    if not (theirs or proved):
        for result in results:
            seen = [o["order_number"] for o in result.get("orders", [])]
            assert order.order_number not in seen, result
            assert "return_number" not in result, result
            assert " ".join(order.order_number) not in result.get("say", ""), result


def test_the_callers_section_of_the_config(tmp_path: Path) -> None:
    path = tmp_path / "voiceswarm.toml"
    path.write_text('[callers]\ncaller_id = "claimed"\nverify_with = ["email", "phone_digits"]\nphone_region = "GB"\n')
    callers = load_config(path, {}).callers
    assert callers == Verification("claimed", ("email", "phone_digits"), 3, "GB")
    assert load_config(None, {}).callers == Verification()  # trusted caller ID, postcode or e-mail, 3 tries


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('caller_id = "sure"', "callers.caller_id"),
        ('verify_with = ["pin"]', "callers.verify_with"),
        ("verify_with = []", "callers.verify_with"),
        ("max_attempts = 0", "callers.max_attempts"),
        ('phone_region = "XX"', "callers.phone_region"),
    ],
)
def test_unusable_callers_settings_are_named(tmp_path: Path, table: str, message: str) -> None:
    path = tmp_path / "voiceswarm.toml"
    path.write_text(f"[callers]\n{table}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path, {})


def test_orders_keyed_by_the_last_nine_digits_are_keyed_by_the_whole_number_on_opening(database_url: str) -> None:
    with Shop(database_url) as before:
        number = before.seed_demo_order(GERMAN, [("HP-100", 1)], days_ago=3).order_number
        # What schema version 1 wrote: the number's last nine digits.
        before.database.write(lambda conn: conn.execute("UPDATE orders SET phone_key = '930555555'"))
        assert before.find_orders(customer_phone=GERMAN) == []
    with Shop(database_url) as after:
        assert [o.order_number for o in after.find_orders(customer_phone=GERMAN)] == [number]
        assert after.find_orders(customer_phone=FRENCH) == []
