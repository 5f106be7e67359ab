"""So many each for the people (or rooms) a caller counts (swarm.headcount), and the read-backs that use it: blind24,
blind26, blind27, blind28 and blind29 each had a caller whose count the agent had to work out, each read back wrong."""

from __future__ import annotations

import pytest

from callcenter.agents import AGENTS, SWARM, build_registry
from callcenter.shop import Shop
from swarm.confirmations import consent, new_quantity, picked_lines, restates_quantity
from swarm.headcount import headcount
from swarm.messages import CompletionRequest
from swarm.providers.scripted import ScriptedProvider, reply

CALLER = "+4930123456"


@pytest.mark.parametrize(
    ("said", "people"),
    [
        ("One each for my two grandchildren, please.", 2),
        ("One each for the four of us.", 4),
        ("One each for the four lasses in me walking group and one for mesel.", 5),
        ("There's six of us on the shift counting me, but Mick and Dave have already got theirs, so one each.", 4),
        ("Six on the shift counting me, less Mick and Dave, one each for them as haven't got one.", 4),
        ("My three boys on the bikes, plus Andreas. One set each for all of them, nobody else.", 4),
        ("There's eight of us counting me, and me, Glenys and Mair have got our own. One each for the rest.", 5),
        ("There are ten in the choir, except Huw and Bethan, so one each for the others.", 8),
        ("Two for each classroom, and we've got three classrooms.", 6),
        ("It's two lamps for each classroom, and there is three classrooms.", 6),
        ("Two per room, there are four rooms.", 8),
        # Blind33: a group's members left out by their number, and "I got six cars on the firm".
        (
            "One for every car. I got six cars on the firm, but the two new Toyotas have it built in, so not for them.",
            4,
        ),
        (
            "Six cars on the firm, the two Toyotas don't need it, so one for each other car, and one more for the office.",
            5,
        ),
        # Blind31: a group counted in its parts.
        ("One for every young person going. There's two groups, four in one group and three in the other.", 7),
        ("It's one for every kid: four in the first group and three in the second, and none for me.", 7),
        # The total the caller worked out themselves (blind30: read back as one).
        ("One in every room, a lounge and two bedrooms in each of the three vans. That's nine bulbs altogether.", 9),
        ("A total of six, please.", 6),
        ("I bought four altogether and I want to send two back.", None),
        # Not so many each for people counted: no sum. Nor a price each ("Twenty-five each", "45 euros each").
        ("Twenty-five each. Well, that's not bad at all.", None),
        ("Ah hang on, seventy-nine each. Make it just the one pair, the 42 in black, for me.", None),
        ("The kettle is 45 euros each?", None),
        ("How much is one set, each?", None),
        ("I'll take the kettle and the toaster, one of each.", None),
        ("I want two toasters, one for me and one for my sister.", None),
        ("Last week I ordered two of the humidifiers, one for each of the twins' bedrooms.", None),
    ],
)
def test_one_each_comes_to_the_people_counted(said: str, people: int | None) -> None:
    assert headcount(said) == people


def test_a_read_back_of_another_count_is_changed_to_the_people_counted() -> None:
    six = {"tool": "place_order", "arguments": {"sku": "BT-630", "quantity": 6}, "item": "Water bottle"}
    said = "Same as I said: six on the shift counting me, less Mick and Dave, one each for them."
    assert new_quantity(said, six) == 4
    four = {**six, "arguments": {"sku": "BT-630", "quantity": 4}}
    assert new_quantity(said, four) is None and restates_quantity(said, four)
    # A count said alone at the end of the last sentence is the change: "... so it's four bottles I'm after, four."
    assert new_quantity("Hang on. Six of us, less Mick and Dave, so it's four bottles I'm after, four.", six) == 4


def test_a_thing_named_then_left_is_not_picked() -> None:
    # Blind28: "one of each" of the two named, and the cable left: all three were ordered.
    three = {
        "tool": "place_order",
        "arguments": {"sku": "PB-130", "quantity": 1, "also": {"CH-120": 1, "CB-140": 1}},
        "item": "Power bank, Wireless charging pad and USB-C cable",
    }
    said = (
        "Okay. Then I'll take the power bank and the charging pad, one of each, on the one order. The cable, leave "
        "it, my brother, I have plenty of cables at the depot."
    )
    assert picked_lines(said, three) == {"PB-130": 1, "CH-120": 1}
    assert consent(said, three) is None  # read back again, as picked
    # Blind31: spoken of, then left, with "one of each" of three offered for a count of kinds ("three things").
    three = {**three, "arguments": {"sku": "PB-130", "quantity": 3, "also": {"CH-120": 1, "CB-140": 1}}}
    said = "The cable is dear, right enough. I'll take the power bank and the charging pad, one of each, and leave the cable."
    assert picked_lines(said, three) == {"PB-130": 1, "CH-120": 1}


def test_the_one_thing_picked_of_several_takes_the_count_worked_out() -> None:
    # Blind29: the desk lamp and a charger offered; "two lamps for each classroom ... three classrooms" read back two.
    both = {
        "tool": "place_order",
        "arguments": {"sku": "DL-530", "quantity": 1, "also": {"CH-110": 1}},
        "item": "Desk lamp and USB-C phone charger",
    }
    said = "That's not the right number, love. It's two lamps for each classroom, and there's three classrooms."
    assert picked_lines(said, both) == {"DL-530": 6}


def test_eh_beside_a_yes_agrees() -> None:
    three = {"tool": "place_order", "arguments": {"sku": "TB-430", "quantity": 3}, "item": "Toaster"}
    assert consent("Yes my love, three toasters, that's it, eh. Go ahead.", three) is True


def to_sales(request: CompletionRequest):
    return reply("", ("navigate_to_sales", {})) if request.agent == "triage" else reply("The model answers.")


async def test_one_each_for_the_people_counted_is_read_back_and_ordered() -> None:
    shop = Shop(":memory:")
    model = ScriptedProvider(to_sales, name="model")
    session = build_registry(shop, dict.fromkeys(AGENTS, model)).session("c1", SWARM, metadata={"caller": CALLER})
    asked = await session.complete("Listen, the lights for the bicycle, the ones you charge up. How much is one set?")
    assert asked.startswith("We have the Bike light set for 29 euros")
    said = "So: one set each for my three boys who do the deliveries, and one set for my nephew Andreas."
    assert (await session.complete(said)).startswith("That is 4 Bike light sets for 116 euros")
    assert (await session.complete("Yes, go on.")).startswith("Your order is placed.")
    (order,) = shop.find_orders(customer_phone=CALLER)
    assert [(line.sku, line.quantity) for line in order.lines] == [("BK-640", 4)]
