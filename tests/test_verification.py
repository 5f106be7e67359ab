"""A caller reaches only their own orders (issue 29): the two attacks of the issue, the security question asked
and checked by the tools, three wrong answers to a person; with the offline router on a real shop, SQLite and
(marked peers) PostgreSQL."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callcenter.agents import SWARM, build_registry
from callcenter.config import ConfigError, load_config
from callcenter.shop import Order, Shop
from callcenter.shop_tools import shop_tools
from callcenter.store.phones import customer_key, last_digits
from callcenter.verification import CALLER_ID_MODES, FACTORS, Verification, VerificationError, proves
from harness.postgres import count_rows
from swarm.events import Escalated, Event, ToolCalled, UserText
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


async def test_an_order_number_nobody_said_is_no_order_number(shop: Shop) -> None:
    # The 1.5B, told "I'd like to return a kettle", wrote order_number "12345": from another phone that was a
    # security question about an order the caller never named, instead of the question for its number.
    order_of(shop, GERMAN)
    find = tools(shop)["find_order"]
    log = Log()
    log.events.append(UserText("I'd like to return a charger I bought from you."))
    invented = await call(find, log, STRANGER, order_number="12345", product="charger")
    assert invented["orders"] == [] and "order number" in invented["say"] and "verification" not in invented
    log.events.append(UserText("The order number is 1 2 3 4 5."))
    said = await call(find, log, STRANGER, order_number="12345", product="charger")
    assert said["verification"] == "needed"  # said by the caller: the rule of an order named by number


async def test_claimed_caller_id_is_not_enough_even_for_the_own_number(shop: Shop) -> None:
    order = order_of(shop, GERMAN)
    find = tools(shop, Verification(caller_id="claimed"))["find_order"]
    log = Log()
    assert (await call(find, log, GERMAN, product="charger"))["orders"] == []  # asks for the order number
    log.events.append(UserText(f"It's order {order.order_number}."))
    asked = await call(find, log, GERMAN, order_number=order.order_number)
    assert asked["verification"] == "needed" and "orders" not in asked
    passed = await call(find, log, GERMAN, order_number=order.order_number, verification=EMAIL)
    assert passed["verification"] == "passed" and passed["orders"][0]["order_number"] == order.order_number


@pytest.mark.parametrize(
    ("factors", "answer", "proved"),
    [
        (("postcode",), "my postcode is eight oh three three one", True),
        (("postcode",), "Aye, the postcode's eight oh three three one.", True),  # "'s" is no s of the postcode
        (("postcode",), "80331 80332 80333", False),  # a list of guesses is no answer
        (
            ("postcode",),
            "Oh, erm, the postcode? It's eight oh three three one, yeah.",
            True,
        ),  # blind5: its last sentence
        (("postcode",), "Oh, it's 80331.", True),  # "Oh," is a sound, not a zero
        (("postcode",), "Oh, eight oh three three one.", True),
        (("postcode",), "80332. Or maybe 80331.", False),  # a second guess is no answer
        (("postcode",), EMAIL, False),  # the e-mail is not asked for
        (("email",), "jane dot doe at example dot com", True),
        (("email",), "jane at example dot com", False),
        (  # blind6: a story and a question of their own before the e-mail; its last sentence is the answer
            ("email",),
            "It was delivered to my sister's place and I don't know her postcode offhand. Can I give you the e-mail "
            "on the order instead? It's jane dot doe at example dot com.",
            True,
        ),
        # blind10: the one e-mail address in the words, whatever is said around it; two are two guesses
        (("email",), "It's the one I use for everything, the address is jane dot doe at example dot com.", True),
        (("email",), "The postcode, I am not sure. But the e-mail I know: jane dot doe at example dot com.", True),
        (("email",), "Maybe jane at example dot com, or jane dot doe at example dot com?", False),
        # blind9: the code in the last clause of a long sentence, or in the one sentence with a digit
        (("postcode",), "It was delivered here, to my house, so the postcode is 80331.", True),
        (("postcode",), "80331. It came to my house.", True),
        (("postcode",), "Yes. The postcode where they were delivered is 80331.", True),  # blind11: after its "is"
        (("postcode",), "80332. It came to my house, the postcode is 80331.", False),  # two guesses
        (("phone_digits",), "five five five five", True),
        (("phone_digits",), "1 2 3 5 5 5 5", False),
    ],
)
def test_which_factors_prove_an_order_is_configurable(
    shop: Shop, factors: tuple[str, ...], answer: str, proved: bool
) -> None:
    assert proves(answer, order_of(shop, GERMAN), factors) is proved


def test_a_postcode_that_begins_with_a_zero_may_begin_with_oh(shop: Shop) -> None:
    dresden = shop.seed_demo_order(GERMAN, [("HP-100", 1)], days_ago=1, postcode="01067")
    assert proves("Oh, one, oh, six, seven.", dresden, ("postcode",))  # "Oh," here is the zero
    assert proves("Oh, it's 01067.", dresden, ("postcode",))
    assert not proves("Oh, one, oh, six, eight.", dresden, ("postcode",))


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


# ---- the property: for any customers, orders and requests, no order without its owner's number or its factor ----

# Customers' numbers in several countries, in groups that share their last digits (reproduction 1's collision):
# +49 30 555555 and +45 30 55 55 55, +49 930 555555 and +33 9 30 55 55 55, +44 20 7946 0321 and +1 207 946 0321...
_TAILS = ("30555555", "930555555", "612345678", "2079460321", "4155550123", "1701234567")
_CODES = ("49", "33", "44", "1", "34", "31", "41", "43", "45", "48")
CUSTOMERS = tuple(f"+{code}{tail}" for tail in _TAILS for code in _CODES if customer_key(f"+{code}{tail}", "DE"))
# Callers who are nobody's number, and the German customers dialling as Germans do (read in the region, DE).
NOBODY = ("anonymous", "", "+1", "0321", "555555", "sip:+4930555555@pbx", "+49 30 555555 999999 999")
NATIONAL = tuple("0" + number[3:] for number in CUSTOMERS if number.startswith("+49"))
SKUS = ("CB-140", "HP-100", "KT-410", "CH-110")
POSTCODES = ("80331", "10115", "SW1A 1AA", "75001", "")  # shared by customers now and then, or missing
EMAILS = ("jane.doe@example.com", "max@example.de", "")
INVENTED = "9" * 9  # longer than any order number the shop gives


def _norm(text: str) -> str:
    return "".join(text.lower().split())


def factor_values(order: Order) -> dict[str, str]:
    return {"postcode": order.postcode, "email": order.email, "phone_digits": last_digits(order.customer_key)}


@dataclass(frozen=True)
class Request:
    tool: str  # find_order or create_return
    order: int  # the order named: an index into the call's orders, one past them for a number nobody has, -1: none
    spoken: bool  # the number said digit by digit ("8 1 2 3 4") rather than written
    product: bool  # product words given too
    answer: str  # "", "right" (the named order's factor), "other" (another order's), "guess"
    factor: str  # which factor a right or other answer is
    guess: str
    dressed: bool  # the answer inside words ("my postcode is ...")
    confirmed: bool


_REQUESTS = st.builds(
    Request,
    tool=st.sampled_from(["find_order", "find_order", "create_return"]),
    order=st.integers(-1, 4),
    spoken=st.booleans(),
    product=st.booleans(),
    answer=st.sampled_from(["", "right", "right", "other", "guess", "guess"]),
    factor=st.sampled_from(sorted(FACTORS)),
    guess=st.one_of(
        st.sampled_from([" ", "0", "a", "@", ".", "my", "is", "postcode", "0000", "at dot"]),
        st.from_regex(r"[0-9]{4,5}|[a-z0-9@. ]{0,12}", fullmatch=True),
    ),
    dressed=st.booleans(),
    confirmed=st.booleans(),
)
_POLICIES = st.builds(
    Verification,
    caller_id=st.sampled_from(CALLER_ID_MODES),
    verify_with=st.lists(st.sampled_from(sorted(FACTORS)), min_size=1, max_size=3, unique=True).map(tuple),
    max_attempts=st.integers(1, 4),
)
_SEEDS = itertools.count()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    customers=st.lists(
        st.tuples(
            st.sampled_from(CUSTOMERS), st.sampled_from(SKUS), st.sampled_from(POSTCODES), st.sampled_from(EMAILS)
        ),
        min_size=1,
        max_size=4,
    ),
    # An order's customer (by the index of their order), anyone's number, nobody's, or a German one as dialled.
    caller=st.one_of(st.integers(0, 3), st.sampled_from(CUSTOMERS), st.sampled_from(NOBODY), st.sampled_from(NATIONAL)),
    policy=_POLICIES,
    requests=st.lists(_REQUESTS, min_size=1, max_size=6),
)
async def test_no_tool_reads_or_changes_another_customers_order_without_its_factor(
    shop: Shop,
    customers: list[tuple[str, str, str, str]],
    caller: int | str,
    policy: Verification,
    requests: list[Request],
) -> None:
    if isinstance(caller, int):
        caller = customers[caller % len(customers)][0]
    # The shop keeps the orders of earlier examples: they are other customers' orders too, checked the same way.
    orders = [
        shop.seed_demo_order(
            phone, [(sku, 1)], days, postcode=postcode, email=email, idempotency_key=f"p{next(_SEEDS)}"
        )
        for days, (phone, sku, postcode, email) in enumerate(customers, start=1)
    ]
    named, log = tools(shop, policy), Log()
    identified = customer_key(caller, "DE") if policy.caller_id == "trusted" else ""
    proofs: list[tuple[str, str]] = []  # (order number named, the factor value the caller said with it)
    returns_before = _return_numbers(shop)

    def may_see(number: str) -> bool:
        """The oracle, apart from the tools' own rules: the caller is the order's identified customer, or named
        the order with a value one of its configured factors has."""
        found = shop.find_orders(order_number=number, limit=1)
        if not found:
            return False
        order = found[0]
        if identified and identified == order.customer_key:
            return True
        values = factor_values(order)
        factors = {_norm(values[f]) for f in policy.verify_with if values[f]}
        return any(named_number == number and _norm(said) in factors for named_number, said in proofs)

    for request in requests:
        target = orders[request.order] if 0 <= request.order < len(orders) else None
        number = target.order_number if target else INVENTED if request.order >= 0 else ""
        arguments: dict[str, Any] = {"order_number": " ".join(number) if request.spoken else number}
        if not number:
            del arguments["order_number"]  # the caller's own orders, by their number and the product
        if request.product:
            arguments["product"] = target.lines[0].name if target else "kettle"
        said = ""
        if request.answer in ("right", "other"):
            source = target if request.answer == "right" else orders[(request.order + 1) % len(orders)]
            said = factor_values(source or orders[0])[request.factor]
        elif request.answer == "guess":
            said = request.guess
        if request.tool == "find_order":
            if said:
                proofs.append((number, said))
                arguments["verification"] = f"my {request.factor} is {said}" if request.dressed else said
            result = await call(named["find_order"], log, caller, **arguments)
        else:
            sku = target.lines[0].sku if target else "CB-140"
            arguments = {"order_number": arguments.get("order_number", ""), "sku": sku, "confirmed": request.confirmed}
            result = await call(named["create_return"], log, caller, **arguments)
        for shown_order in result.get("orders", []):
            assert may_see(shown_order["order_number"]), (shown_order, result, proofs)
        proposal = result.get("proposal") or {}
        if proposal.get("tool") == "create_return":
            assert may_see(proposal["arguments"]["order_number"]), (result, proofs)
        if "return_number" in result:
            made = shop.find_return(result["return_number"])
            assert made is not None and may_see(made.order_number), (result, proofs)
        if target is not None and "orders" not in result and not may_see(number):
            # Nothing of an order the caller may not see in what is said either: not its date, not its items.
            when = target.created_at.strftime("%d %B").lstrip("0")
            assert when not in result.get("say", "") and target.lines[0].name not in result.get("say", ""), result
    # Nothing written behind the results' backs: every new return is one a result said, of an order they may see.
    new = _return_numbers(shop) - returns_before
    for return_number in new:
        made = shop.find_return(return_number)
        assert made is not None and may_see(made.order_number), (made, proofs)


def _return_numbers(shop: Shop) -> set[str]:
    rows = shop.database.read(lambda conn: conn.all("SELECT return_number FROM returns"))
    return {row["return_number"] for row in rows}


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
