"""The answer to the security question is what the caller said to it (callcenter.verification.answer_said), not
what a model writes into find_order's argument: the 1.5B wrote one before any question was asked (a failed
attempt the caller never made) and wrote something else over the caller's right postcode."""

from __future__ import annotations

from callcenter.agents import AGENTS, SWARM, build_registry
from callcenter.shop import Shop
from callcenter.verification import attempts
from swarm.messages import CompletionRequest
from swarm.providers.scripted import ScriptedProvider, reply

OWNER, STRANGER, POSTCODE = "+4930555555", "+442079460321", "80331"


def careless_model(number: str):
    """Hands over to refund, then always calls find_order with the order's number and a made-up answer."""

    def step(request: CompletionRequest):
        if request.messages[-1].role == "tool":
            return reply("Sorry, could you say that again?")
        if "find_order" not in {t.name for t in request.tools}:
            return reply("", ("navigate_to_refund", {}))
        return reply("", ("find_order", {"order_number": number, "verification": "it arrived broken"}))

    return step


async def test_a_models_answer_before_any_question_is_none_and_the_callers_own_words_answer_it() -> None:
    shop = Shop(":memory:")
    order = shop.seed_demo_order(OWNER, [("CB-140", 1)], days_ago=2, postcode=POSTCODE)
    model = ScriptedProvider(careless_model(order.order_number), name="model")
    registry = build_registry(shop, dict.fromkeys(AGENTS, model), route_first=False)
    session = registry.session("c1", SWARM, metadata={"caller": STRANGER})
    first = await session.complete(f"I want to return the cable from order {order.order_number}.")
    assert first.startswith("For your security") and "match" not in first, first
    assert "failed" not in [a["outcome"] for a in attempts(session.events)]
    second = await session.complete("The postcode is 8 0 3 3 1.")
    assert "Shall I start a return" in second, second
    assert [a["outcome"] for a in attempts(session.events)] == ["passed"]


async def test_words_that_are_not_the_factor_still_fail() -> None:
    shop = Shop(":memory:")
    order = shop.seed_demo_order(OWNER, [("CB-140", 1)], days_ago=2, postcode=POSTCODE)
    model = ScriptedProvider(careless_model(order.order_number), name="model")
    registry = build_registry(shop, dict.fromkeys(AGENTS, model), route_first=False)
    session = registry.session("c1", SWARM, metadata={"caller": STRANGER})
    await session.complete(f"I want to return the cable from order {order.order_number}.")
    second = await session.complete("The postcode is 1 0 1 1 5.")
    assert "Shall I start a return" not in second and order.order_number not in second.replace(" ", "")
    outcomes = [a["outcome"] for a in attempts(session.events)]
    assert outcomes[0] == "failed" and "passed" not in outcomes, outcomes
