"""Several products in one order, and several lines of one order sent back, in one read-back (callcenter.basket):
blind7's callers who wanted two things were sold one, or none, in every trial."""

from __future__ import annotations

from typing import cast

import pytest

from callcenter.agents import AGENTS, SWARM, build_registry
from callcenter.basket import count_back, count_in, kept_lines, listed_products, named_lines, without_taken_back
from callcenter.shop import Shop
from callcenter.shop_backend import ShopBackend
from callcenter.shop_tools import shop_tools
from callcenter.store.domain import OneProductPerOrder
from callcenter.testbed.checks import check_called
from swarm import ToolContext
from swarm.confirmations import adds_to
from swarm.events import ToolCalled
from swarm.messages import CompletionRequest
from swarm.providers.scripted import ScriptedProvider, reply

CALLER = "+4930123456"
NOTTINGHAM = (
    "Ey up, me duck. I'm doing a little office in the spare room and I'm after two bits off you, one of them quiet "
    "wireless mice and a desk lamp, the LED one with the dimmer. Can you put them both on the one order, please?"
)
ABERDEEN = (
    "Aye, hello there. I got a kettle, a toaster and a blender from you for my new flat, and the kettle and the "
    "toaster came cream, not white like the picture. I'd like to send those two back, but I'm keeping the blender."
)


@pytest.fixture
def shop() -> Shop:
    return Shop(":memory:")


@pytest.mark.parametrize(
    ("said", "listed"),
    [
        (NOTTINGHAM, [("MS-210", 1), ("DL-530", 1)]),  # "mice" is a mouse; "the LED one" adds no second lamp
        ("I'd like two yoga mats and a water bottle, please.", [("YM-620", 2), ("BT-630", 1)]),
        ("A 27 inch monitor and two bike lights.", [("MN-230", 1), ("BK-640", 2)]),  # 27 is the monitor's own
        ("I bought a kettle from you last month and now I'd like a toaster.", []),  # the kettle is had, not wanted
        ("No, not the headphones, the wired earbuds.", []),  # one wanted, one turned down
        # blind12: the one named first is taken back, the one left is offered alone
        ("I'll have the slim fitness band - na, sorry, not the band, I mean the proper smartwatch.", [("SW-330", 1)]),
        # blind13: "Not yoga mat" to the mat on offer
        ("I want the yoga mat. Oh, sorry, mistake! Not yoga mat. For me the bike light set, please.", [("BK-640", 1)]),
        ("I want a phone charger with a long cable.", []),  # one product described
        ("A quiet one for the bedroom and a cheap one.", []),  # nothing named by its kind
        # blind21: a count said again of a product is the one meant
        (
            "Two bike lights and a water bottle. Ah no, hang on, make it three bike lights.",
            [("BK-640", 3), ("BT-630", 1)],
        ),
        # blind22: a verb names no kind ("set"), and the sounds and the address after a list leave it searched
        (
            "Howay, hiya. Erm, right, I'm after a kettle, the one where you can set the temperature, and a toaster, "
            "erm, the two-slice one, both on the one order, like, and it's to gan to the new flat, that's Flat 2, "
            "14 Queen Street, Alnwick, NE66 1AB, and it's Jordan Robson, and thanks, pet.",
            [("KT-410", 1), ("TB-430", 1)],
        ),
        # blind39 Bantry: "no charger" takes back the charger named before, and "without" the band
        (
            "Make it the power bank instead, the battery pack — just the one, and no charger.",
            [("PB-130", 1)],
        ),
        ("The smartwatch, please, without the fitness band.", [("SW-330", 1)]),
        # blind40 Ambleside: the band told of, then taken back after "So"
        ("Wait, the band has no GPS. So not the band, the smartwatch instead. Just one.", [("SW-330", 1)]),
        ("No, I want the power bank and the USB-C charger.", [("PB-130", 1), ("CH-110", 1)]),
        # blind40 Ambleside: a dash parts the thing taken back from the one wanted
        (
            "My colleague says the band has no GPS. So not the band — the smartwatch instead, the one with the GPS and "
            "the heart rate. Just one.",
            [("SW-330", 1)],
        ),
        # blind41 Skipton: "the ones with ..." describes the thing named before it
        (
            "Right, what about the wired earbuds then, the ones with the little microphone on the cable. What do they "
            "cost?",
            [],
        ),
        ("Two wired earbuds and one USB-C cable.", [("HP-200", 2), ("CB-140", 1)]),
        # blind11: a question about the one named asks for no second product
        ("I saw you have a desk lamp. Does it have a USB port so that I can charge my phone from it?", []),
        # blind33: what a thing is charged with describes it
        (
            "How much is the bike light set, the front and back lights you charge with a cable? And how much is the "
            "steel water bottle?",
            [("BK-640", 1), ("BT-630", 1)],
        ),
    ],
)
def test_the_products_a_caller_lists(shop: Shop, said: str, listed: list[tuple[str, int]]) -> None:
    assert [(product.sku, quantity) for product, quantity in listed_products(shop, said)] == listed


def test_the_lines_a_caller_sends_back_are_those_named_and_not_kept(shop: Shop) -> None:
    order = shop.place_order(CALLER, [("KT-410", 1), ("TB-430", 1), ("BL-440", 1)], "k1")
    assert [(line.sku, n) for line, n in named_lines(order.lines, ABERDEEN)] == [("KT-410", 1), ("TB-430", 1)]
    assert [line.sku for line, _ in named_lines(order.lines, "The kettle does not work.")] == ["KT-410"]  # no keep
    assert named_lines(order.lines, "Something in it is broken.") == []


def test_how_many_of_each_line_go_back(shop: Shop) -> None:
    # Blind8: "I buy two light bulb ... and one lamp for the desk. I want give back everything."
    order = shop.place_order(CALLER, [("LB-520", 2), ("DL-530", 1), ("YM-620", 3)], "k1")
    said = "I buy two light bulb, the colour ones, and one lamp for the desk. Bulbs is not connecting with my Alexa."
    assert [(line.sku, n) for line, n in named_lines(order.lines, said)] == [("LB-520", 2), ("DL-530", 1)]
    every = "I want to send back everything, the bulbs and the yoga mats."
    assert [(line.sku, n) for line, n in named_lines(order.lines, every)] == [("LB-520", 2), ("YM-620", 3)]
    assert [(line.sku, n) for line, n in named_lines(order.lines, "the bulbs and the lamp")] == [
        ("LB-520", 1),
        ("DL-530", 1),
    ]


def test_lines_kept_by_a_pronoun_after_them_stay(shop: Shop) -> None:
    # Blind10: "The screen protectors are grand, I'm keeping them" sent the protectors back beside the case.
    order = shop.place_order(CALLER, [("PH-310", 1), ("PH-320", 2)], "k1")
    said = "I'd like to send the case back, please. The screen protectors, I'm keeping them, and the speaker is fine."
    assert kept_lines(order.lines, said) == {"PH-320"}
    assert [(line.sku, n) for line, n in named_lines(order.lines, said)] == [("PH-310", 1)]
    broken = "The screen protector is cracked, I don't want it."  # not kept: it goes back
    assert kept_lines(order.lines, "and the case I don't need, I have one already") == set()  # blind12
    assert kept_lines(order.lines, "I don't want to send the case back") == {"PH-310"}
    assert kept_lines(order.lines, broken) == set() and named_lines(order.lines, broken)[0][0].sku == "PH-320"
    # Blind17: "it" is the last thing named in its sentence, parts before it.
    told = "The screen protectors are excellent, genau, very solid, I keep them. But the case, na ja, it cracked."
    assert kept_lines(order.lines, told) == {"PH-320"}
    assert kept_lines(order.lines, "The case cracked. Very solid, I keep it.") == set()  # another sentence's thing
    # Blind32: what the keeping joins to it is kept; and one of two sent back is not kept by keeping "my" one.
    assert kept_lines(order.lines, "I keep the case and the screen protectors.") == {"PH-310", "PH-320"}
    assert kept_lines(order.lines, "I keep the case, and send the screen protectors back.") == {"PH-310"}
    partly = "I want to send one screen protector back, only one. I keep my screen protector and the case."
    assert kept_lines(order.lines, partly) == {"PH-310"}
    assert [(line.sku, n) for line, n in named_lines(order.lines, partly)] == [("PH-320", 1)]


def test_how_many_of_one_line_go_back_is_the_count_of_the_return_not_of_the_purchase(shop: Shop) -> None:
    (line,) = shop.place_order(CALLER, [("CH-110", 3)], "k1").lines
    derry = (
        "I got three of them USB-C wall chargers last week. So I want to send two of them back, and I'll keep the one."
    )
    assert count_back(derry, line) == 2
    assert count_back("Two chargers back, mind. I'm keeping one of the three.", line) == 2
    assert count_back("The charger stopped working after two hours.", line) == 1  # no count of the return
    assert count_back("Send all ten back.", line) == 3  # never more than was bought


def test_how_many_is_the_first_number_not_in_the_products_name() -> None:
    assert count_in("a couple, two of the two slice toasters", "Two slice toaster") == 1
    assert count_in("three of the 27 inch monitors", "27 inch monitor") == 3
    assert count_in("the desk lamp", "Desk lamp") == 1


def test_an_offer_with_more_in_it_adds_to_the_one_before() -> None:
    lamp = {"tool": "place_order", "arguments": {"sku": "DL-530", "quantity": 1}}
    both = {"tool": "place_order", "arguments": {"sku": "DL-530", "quantity": 1, "also": {"MS-210": 1}}}
    three = {"tool": "place_order", "arguments": {"sku": "DL-530", "quantity": 1, "also": {"MS-210": 1, "YM-620": 1}}}
    other = {"tool": "place_order", "arguments": {"sku": "MS-210", "quantity": 1}}
    assert adds_to(both, lamp) and adds_to(three, both)
    assert not adds_to(lamp, lamp) and not adds_to(other, lamp) and not adds_to(lamp, both)


def test_a_call_of_several_lines_counts_as_a_call_for_each() -> None:
    call = ToolCalled(
        "refund", "r", "create_return", {"order_number": "1", "sku": "KT-410", "also": {"TB-430": 1}}, "{}"
    )
    assert check_called([call], "create_return", {"sku": "TB-430", "order_number": "1"}) is None
    assert check_called([call], "create_return", {"sku": "BL-440"}) is not None


def session_with(shop: Shop, model: ScriptedProvider):
    registry = build_registry(shop, dict.fromkeys(AGENTS, model), route_first=True)
    return registry.session("c1", SWARM, metadata={"caller": CALLER})


def answers(text: str) -> ScriptedProvider:
    return ScriptedProvider(lambda request: reply(text), name="model")


async def test_two_products_asked_for_at_once_are_offered_and_ordered_as_one_order(shop: Shop) -> None:
    model = answers("The model answers.")
    session = session_with(shop, model)
    offer = await session.complete(NOTTINGHAM)
    assert offer.startswith("We have the Wireless mouse for 21 euros and the Desk lamp for 27 euros.")
    assert offer.endswith("Shall I order one of each for you?")
    assert (await session.complete("Yes, please.")).startswith("Your order is placed.")
    assert model.requests == []
    await session.complete("Yes, please.")  # a second yes writes nothing more
    orders = shop.find_orders(customer_phone=CALLER)
    assert [sorted((line.sku, line.quantity) for line in order.lines) for order in orders] == [
        [("DL-530", 1), ("MS-210", 1)]
    ]


@pytest.mark.parametrize(
    ("said", "answer", "ordered"),
    [
        ("Both, please.", "Your order is placed.", True),
        ("Oh, both of them then, thanks.", "Your order is placed.", True),
        ("Both are too dear for me.", "The model answers.", False),
        ("Both, but in blue.", "The model answers.", False),
    ],
)
async def test_each_price_asked_for_is_said_and_both_takes_both(shop: Shop, said: str, answer: str, ordered: bool):
    # Blind26: "How much is the camera, and how much the earphones? Tell me both, please." heard one price.
    model = answers("The model answers.")
    session = session_with(shop, model)
    offer = await session.complete("How much is the power bank, and how much is the wireless charging pad?")
    assert offer.startswith("We have the Power bank for 34.50 euros and the Wireless charging pad for 29.90 euros.")
    assert offer.endswith("Shall I order one of each for you?")
    assert (await session.complete(said)).startswith(answer)
    assert bool(shop.find_orders(customer_phone=CALLER)) is ordered


async def test_each_price_asked_for_is_said_of_what_the_words_found(shop: Shop) -> None:
    # Neither "camera" nor "earphones" names a product here; the words around them found both.
    session = session_with(shop, answers("The model answers."))
    offer = await session.complete(
        "I need a camera for video calls on the computer, and cheap earphones with a wire and a microphone. How much "
        "is the camera, and how much are the earphones?"
    )
    assert offer.startswith("We have the HD webcam for 49 euros and the Wired earbuds for 19.90 euros.")


async def test_one_price_asked_for_beside_another_question_is_one_product(shop: Shop) -> None:
    session = session_with(shop, answers("The model answers."))
    offer = await session.complete("How much is the kettle, and how much is delivery?")
    assert offer.startswith("We have the Electric kettle for 45 euros.") and "Shall I order one for you?" in offer


async def test_a_product_added_at_the_read_back_joins_the_order_on_offer(shop: Shop) -> None:
    model = answers("The model answers.")
    session = session_with(shop, model)
    assert (await session.complete("I'd like to buy a desk lamp, please.")).startswith("We have the Desk lamp")
    added = await session.complete("And the wireless mouse too, mind. Both of them on the one order.")
    assert "Wireless mouse" in added and "Desk lamp" in added and model.requests == []
    await session.complete("Yes, please.")
    (order,) = shop.find_orders(customer_phone=CALLER)
    assert sorted(line.sku for line in order.lines) == ["DL-530", "MS-210"]


async def test_a_question_at_the_read_back_is_still_the_models(shop: Shop) -> None:
    model = answers("Delivery takes two days.")
    session = session_with(shop, model)
    await session.complete("I'd like to buy a desk lamp, please.")
    assert await session.complete("How long does delivery take to Leeds?") == "Delivery takes two days."


async def test_two_lines_of_one_order_go_back_after_one_yes(shop: Shop) -> None:
    order = shop.place_order(CALLER, [("KT-410", 1), ("TB-430", 1), ("BL-440", 1)], "k1")

    def finds(request: CompletionRequest):
        if request.agent == "triage":
            return reply("", ("navigate_to_refund", {}))
        return reply("", ("find_order", {"product": request.messages[-1].content}))

    session = session_with(shop, ScriptedProvider(finds, name="model"))
    read_back = await session.complete(ABERDEEN)
    assert read_back.endswith("Shall I start a return of 1 Electric kettle and 1 Toaster?")
    assert "Blender" not in read_back
    done = await session.complete("Aye, go ahead.")
    assert done.startswith("Your returns are registered: the Electric kettle, number")
    (after,) = shop.find_orders(order_number=order.order_number)
    assert {line.sku: line.returned_quantity for line in after.lines} == {"KT-410": 1, "TB-430": 1, "BL-440": 0}


async def test_a_count_or_a_keep_said_at_the_read_back_is_read_back_again(shop: Shop) -> None:
    three = shop.place_order(CALLER, [("CH-110", 3)], "k1")
    two_lines = shop.place_order(CALLER, [("PH-310", 1), ("PH-320", 1)], "k2")

    def finds(request: CompletionRequest):
        if request.agent == "triage":
            return reply("", ("navigate_to_refund", {}))
        return reply("", ("find_order", {"product": request.messages[-1].content}))

    session = session_with(shop, ScriptedProvider(finds, name="model"))
    read_back = await session.complete("I got three USB-C chargers and I want to send two of them back.")
    assert read_back == (
        f"I found your order {' '.join(three.order_number)} from {three.created_at.strftime('%d %B').lstrip('0')}. "
        "Shall I start a return of 2 USB-C phone chargers?"
    )
    session = session_with(shop, ScriptedProvider(finds, name="model"))
    both = await session.complete("I want to return the phone case and the screen protector.")
    assert both.endswith("Shall I start a return of 1 Smartphone case and 1 Screen protector?")
    assert two_lines.order_number.replace("", " ").strip() in both
    narrowed = await session.complete("Just the phone case, please. I'm keeping the screen protector and the speaker.")
    assert "1 Smartphone case" in narrowed and "Screen protector" not in narrowed and narrowed.endswith("?")


async def test_a_yes_that_names_every_line_on_the_one_order_agrees_to_all_of_them(shop: Shop) -> None:
    session = session_with(shop, ScriptedProvider(lambda request: reply("The model answers."), name="model"))
    await session.complete("I'm after a kettle and a toaster, both on the one order.")
    done = await session.complete("Aye, the kettle and the toaster, on the one order. Gan on then, that's canny.")
    assert done.startswith("Your order is placed.") and "80 euros" in done


async def test_another_count_of_a_line_said_at_the_read_back_is_read_back_again(shop: Shop) -> None:
    # Blind21: "Three of the cables, bud, and the one plug-in wall charger ... Three cables, not two." to two cables
    # and a charger went to the 1.5B, which ran out of its 20 s.
    session = session_with(shop, ScriptedProvider(lambda request: reply("The model answers."), name="model"))
    offer = await session.complete("I'd like two yoga mats and a water bottle on the one order, please.")
    assert offer.endswith("Shall I order 2 Yoga mats and 1 Water bottle for you?")
    again = await session.complete("Three of the yoga mats, and the one water bottle. Three mats, not two.")
    assert again.endswith("Shall I order 3 Yoga mats and 1 Water bottle for you?")


async def test_lines_that_cannot_all_go_back_write_none(shop: Shop) -> None:
    order = shop.place_order(CALLER, [("KT-410", 1), ("TB-430", 1)], "k1")
    create_return = next(tool for tool in shop_tools(shop) if tool.name == "create_return")
    context = ToolContext("c1", "refund", session_with(shop, answers("-")), metadata={"caller": CALLER})
    arguments = {"order_number": order.order_number, "sku": "KT-410", "also": {"BL-440": 1}, "confirmed": True}
    result = await create_return.call(arguments, context)
    assert "has no item BL-440" in result["say"] and "return_number" not in result
    (after,) = shop.find_orders(order_number=order.order_number)
    assert all(line.returned_quantity == 0 for line in after.lines)


class OneProductShop:
    """The built-in store behind the rule of an order system that takes one product an order (HttpShop's)."""

    def __init__(self, shop: Shop) -> None:
        self._shop = shop

    def __getattr__(self, name: str):
        return getattr(self._shop, name)

    def place_order(self, phone: str, items, key: str, **contact):
        if len(items) != 1:
            raise OneProductPerOrder("An order over the order system holds one product.")
        return self._shop.place_order(phone, items, key, **contact)


async def test_a_shop_of_one_product_an_order_gets_an_order_for_each(shop: Shop) -> None:
    place_order = next(
        tool for tool in shop_tools(cast(ShopBackend, OneProductShop(shop))) if tool.name == "place_order"
    )
    context = ToolContext("c1", "sales", session_with(shop, answers("-")), metadata={"caller": CALLER})
    arguments = {"sku": "MS-210", "quantity": 1, "also": {"DL-530": 2}, "confirmed": True}
    result = await place_order.call(arguments, context)
    assert result["say"].startswith("Your orders are placed, one for each: number")
    assert "75 euros" in result["say"]  # 21 + 2 x 27
    again = await place_order.call(arguments, context)  # the same yes twice: the same two orders
    assert again["order_numbers"] == result["order_numbers"]
    orders = shop.find_orders(customer_phone=CALLER)
    assert sorted((o.lines[0].sku, o.lines[0].quantity) for o in orders) == [("DL-530", 2), ("MS-210", 1)]


async def test_the_order_proved_in_the_call_is_the_one_its_things_name(shop: Shop) -> None:
    # Blind8: a caller on his wife's phone proved his order by its postcode, then named two lines of it; the lookup
    # searched the orders of the phone he rang from, found none, and the 1.5B timed out.
    order = shop.seed_demo_order("+447418339999", [("LB-520", 2), ("DL-530", 1)], days_ago=6, postcode="PE1 5DD")
    session = session_with(shop, answers("The model answers."))
    spoken = " ".join(order.order_number)
    asked = await session.complete(f"I want to return things. The order number is {spoken}.")
    assert asked.startswith("For your security")
    assert (await session.complete("Yes, post code is PE1 5DD.")).startswith(f"I found your order {spoken}")
    said = "I buy two light bulb, the colour ones, and one lamp for the desk. I want give back everything."
    read_back = await session.complete(said)
    assert read_back.endswith("Shall I start a return of 2 Smart light bulbs and 1 Desk lamp?")
    done = await session.complete("Yes. Everything: two bulb and one lamp. Please do it.")
    assert done.startswith("Your returns are registered")
    (after,) = shop.find_orders(order_number=order.order_number)
    assert {line.sku: line.returned_quantity for line in after.lines} == {"LB-520": 2, "DL-530": 1}


async def test_two_prices_asked_to_compare_are_said_and_the_one_chosen_is_offered(shop: Shop) -> None:
    # Blind9: "What's the price on your smartwatch, and what's the price on the fitness band? I'm just trying to
    # compare the two." heard one price, and an offer of two bands.
    model = answers("The model answers.")
    session = session_with(shop, model)
    asked = (
        "Hi there, how's it going? Sorry, quick question, eh. My dad wants something that counts his steps. What's "
        "the price on your smartwatch, and what's the price on the fitness band? I'm just trying to compare the two."
    )
    both = await session.complete(asked)
    assert both.startswith("We have the Smartwatch for 149 euros and the Fitness band for 39 euros.")
    chosen = "Okay, wow, the band's way cheaper. I'll take the cheaper one, the fitness band. Just the one, please."
    assert (await session.complete(chosen)) == "That is 1 Fitness band for 39 euros in total. Shall I place the order?"
    assert (await session.complete("Champion, aye, all on the one order then.")).startswith("Your order is placed.")
    assert model.requests == []


async def test_another_thing_after_an_offer_is_offered_on_its_own(shop: Shop) -> None:
    # Blind10: a coffee grinder offered for an espresso machine was ordered beside the blender asked for next.
    session = session_with(shop, answers("The model answers."))
    assert (await session.complete("I am looking for a coffee grinder.")).startswith("We have the Coffee grinder")
    instead = "Ah, what a shame. Okay, then another thing: the blender, the small one. How much it costs?"
    # No basket: turned away from, the grinder is not kept on offer; the blender is looked up on its own.
    assert (await session.complete(instead)).startswith("We have the Blender for 42 euros. It's in stock.")
    added = "And the blender too, please."
    session = session_with(shop, answers("The model answers."))
    await session.complete("I am looking for a coffee grinder.")
    assert (await session.complete(added)).startswith("We have the Coffee grinder for 69 euros and the Blender")


async def test_a_count_taken_back_at_the_offer_reads_the_order_back(shop: Shop) -> None:
    # Blind10: "So just the one keyboard then, for me. Only one, not two." to two keyboards offered: offered two again.
    session = session_with(shop, answers("The model answers."))
    offer = await session.complete("I'm after the mechanical keyboards. Two of them, please.")
    assert offer.endswith("Shall I order 2 Mechanical keyboards for you?")
    one = await session.complete("Oh, wait. He's bought one himself. So just the one keyboard then. Only one, not two.")
    assert one == "That is 1 Mechanical keyboard for 89 euros in total. Shall I place the order?"
    assert (await session.complete("Lovely, go ahead.")).startswith("Your order is placed.")
    assert [(line.sku, line.quantity) for line in shop.find_orders(customer_phone=CALLER)[0].lines] == [("KB-220", 1)]


async def test_an_offer_turned_away_without_a_no_offers_what_is_asked_for_instead(shop: Shop) -> None:
    # Blind17: "too much" added the webcam to the monitor on offer, and the monitor asked about in the turn's last words
    # (its 39th word) was cut off the search, which offered a laptop stand.
    session = session_with(shop, answers("The model answers."))
    story = (
        "Hello, hello ji. Listen, I am a driving instructor here in Slough, thirty years now, and my son says, dad, do "
        "the theory lessons online also, on the computer, for the learners. So he says I need a proper camera, a web "
        "camera, because the one in the laptop is very bad, all blurry, and maybe also a big screen, the twenty-seven "
        "inch one. How much is that big screen, ji? The monitor."
    )
    assert (await session.complete(story)).startswith("We have the 27 inch monitor for 279 euros.")
    instead = "Two hundred seventy-nine? Oh ho. Too much, ji. Leave the screen. Only the webcam I will take, one piece."
    assert (await session.complete(instead)).startswith("We have the HD webcam for 49 euros. It's in stock.")


def test_products_listed_after_a_long_story_are_all_found(shop: Shop) -> None:
    # Blind18: two things asked for after twelve parts of a story; only the first twelve parts were searched.
    story = (
        "Hello, good afternoon. So, I teach the violin online, grade one, grade five, from my front room, and my "
        "pupils keep telling me, Sir, we only see your ear. Honestly, it is so silly. And the picture from the laptop "
        "is very grainy also, they cannot see my bow. So I need two things. The stand for the laptop, the aluminium "
        "one that folds, and a webcam, the HD one. Both together, one order please, as I am out on Mondays."
    )
    assert [(p.sku, n) for p, n in listed_products(shop, story)] == [("LP-250", 1), ("WC-240", 1)]


async def test_an_offer_left_for_another_act_is_not_turned_into_another_offer(shop: Shop) -> None:
    # The tuned suite: "I changed my mind. I want to return the kettle I bought instead." to a webcam offered was
    # offered a kettle once an offer turned away from (blind17) was looked up again.
    session = session_with(shop, answers("The model answers."))
    assert (await session.complete("I'd like to buy a webcam.")).startswith("We have the HD webcam")
    instead = "Actually, I changed my mind. I want to return the kettle I bought instead."
    answer = await session.complete(instead)
    # Handed to returns (blind33: a return asked for over an offer), where this caller has no kettle's order.
    assert not answer.startswith("We have") and session.get_agent_name() == "refund"


def test_what_the_caller_does_not_want_is_not_searched_for(shop: Shop) -> None:
    # Blind26 (Burnley): "... I don't want the earphones, they hurt my ears anyway. So just the camera then, one." over
    # the webcam on offer found and offered the earbuds.
    said = "Because if it has, I don't want the earphones, they hurt my ears anyway. So just the webcam then, one."
    assert "earphones" not in without_taken_back(said) and "webcam" in without_taken_back(said)
    assert [p.name for p in shop.search(without_taken_back(said), limit=1)] == ["HD webcam"]
    assert (
        without_taken_back("I don't want the earphones.") == "I don't want the earphones."
    )  # nothing else to look for


@pytest.mark.parametrize(
    ("said", "found"),
    [
        # blind44 Largs: a colon parts the thing taken back from the one wanted
        (
            "He says headphones are for pilots. So not the headphones: make it the waterproof portable speaker "
            "instead, the outdoor one, just one.",
            "Portable speaker",
        ),
        ("Not the headphones: the kettle, please.", "Electric kettle"),
        ("The kettle, not the headphones, please, by 7:30.", "Electric kettle"),  # a time is no list
    ],
)
def test_a_thing_taken_back_before_a_colon_is_not_searched_for(shop: Shop, said: str, found: str) -> None:
    assert [p.name for p in shop.search(without_taken_back(said), limit=1)] == [found]
