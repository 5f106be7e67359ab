"""The session takes tool calls written as text, feeds back what it cannot take, and never speaks either."""

from __future__ import annotations

import pytest

from swarm.events import Rescued, ToolCalled, ValidationFailed
from swarm.providers.scripted import ScriptedProvider, reply
from swarm.registry import Agent, Registry, SessionConfig, SwarmSpec, navigate_tool
from swarm.tools import tool_from_function


def search(query: str) -> dict:
    """Search products.

    Args:
        query: what the caller wants
    """
    return {"say": f"We have a {query} for ten euros."}


def build(triage: list, sales: list | None = None) -> tuple[Registry, ScriptedProvider]:
    registry = Registry()
    model = ScriptedProvider(triage, name="triage-model")
    registry.add_provider("triage-model", model)
    registry.add_provider("sales-model", ScriptedProvider(sales or ["What would you like?"], name="sales-model"))
    registry.add_tool(navigate_tool("sales", "Hand over to sales."))
    registry.add_tool(navigate_tool("refund", "Hand over to returns."))
    registry.add_tool(tool_from_function(search))
    registry.add_agent(Agent("triage", "You triage.", "triage-model", ("navigate_to_sales", "search")))
    registry.add_agent(Agent("sales", "You sell.", "sales-model", ()))
    registry.add_agent(Agent("refund", "You take returns.", "sales-model", ()))
    registry.add_swarm(SwarmSpec("shop", ("triage", "sales", "refund"), "triage"))
    return registry, model


BAD_FORMS = [
    '{"name": "navigate_to_sales", "arguments": {}}',
    '{{"name": "navigate_to_sales", "arguments": {{}}}}',
    '```json\n{"name": "navigate_to_sales", "arguments": {}}\n```',
    '<tool_response name="navigate_to_sales">\nok\n</tool_response>',
    "functions.navigate_to_sales:",
    "Sure. Please call navigate_to_sales.",
    '<tool_call>\n{"name": "navigate_to_sales", "arguments": {}}\n</tool_call>',
]


@pytest.mark.parametrize("written", BAD_FORMS)
async def test_a_call_written_as_text_hands_over_and_nothing_of_it_is_spoken(written: str) -> None:
    registry, model = build([written])
    session = registry.session("c1", "shop")
    said = [s async for s in session.stream("I want to buy a kettle")]
    assert session.get_agent_name() == "sales"
    assert said[-1] == "What would you like?"
    assert not any(ch in " ".join(said) for ch in "{}<>`_") and "functions" not in " ".join(said)
    assert len(model.requests) == 1  # taken at once: no feedback round
    assert [e.kind for e in session.events].count("tool_call_repaired") == 1


async def test_arguments_written_as_text_are_validated_against_the_schema() -> None:
    registry, model = build(
        [
            '{"name": "search", "arguments": {"product": "kettle"}}',
            '{"name": "search", "arguments": {"query": "kettle"}}',
            "Anything else?",
        ]
    )
    session = registry.session("c1", "shop")
    said = await session.complete("a kettle please")
    (failed,) = [e for e in session.events if isinstance(e, ValidationFailed)]
    assert "query" in " ".join(failed.errors)
    assert said == "We have a kettle for ten euros. Anything else?" or "Anything else?" in said
    assert [e.arguments for e in session.events if isinstance(e, ToolCalled)] == [{"query": "kettle"}]
    # The model saw its own rejected call and why, in a tool message answering it.
    feedback = model.requests[1].messages
    assert feedback[-1].role == "tool" and "query" in feedback[-1].content


async def test_a_tool_the_agent_lacks_is_feedback_and_never_runs() -> None:
    registry, _model = build(['{"name": "navigate_to_refund", "arguments": {}}', reply("", ("navigate_to_sales", {}))])
    session = registry.session("c1", "shop")
    await session.complete("I want to buy something")
    errors = next(e for e in session.events if isinstance(e, ValidationFailed)).errors
    assert "does not exist" in errors[0] and "navigate_to_sales" in errors[0]
    assert session.get_agent_name() == "sales"


async def test_ambiguous_prose_goes_back_to_the_model_not_to_the_caller() -> None:
    registry, model = build(
        ["I could use navigate_to_sales or navigate_to_refund here.", "Would you like to buy something?"]
    )
    session = registry.session("c1", "shop")
    said = await session.complete("hmm")
    assert said == "Would you like to buy something?"
    assert "several tools" in next(e for e in session.events if isinstance(e, ValidationFailed)).errors[0]
    assert "navigate_to_sales" in model.requests[1].messages[-2].content  # its own reply, shown back to it


async def test_json_for_the_ear_is_never_spoken_even_when_every_try_fails() -> None:
    registry, _ = build(['{"say": "hi"}', '{"answer": 1}', "[1, 2]", '{"reply": "x"}'])
    session = registry.session("c1", "shop")
    said = await session.complete("hello")
    assert said == SessionConfig().placeholders[0]
    assert [e.stage for e in session.events if isinstance(e, Rescued)] == ["flush", "placeholder"]


async def test_text_before_a_written_call_is_spoken_and_text_after_it_is_not() -> None:
    registry, _ = build(
        ['Let me pass you on. {"name": "navigate_to_sales", "arguments": {}} You are now with sales, they said yes.']
    )
    session = registry.session("c1", "shop")
    said = [s async for s in session.stream("buy")]
    assert said == ["Let me pass you on.", "What would you like?"]


async def test_a_model_that_repeats_itself_is_stopped() -> None:
    registry, _ = build(["Hello there. " * 40])
    session = registry.session("c1", "shop")
    said = [s async for s in session.stream("hi")]
    assert said == ["Hello there."]


WRITES: list[dict] = []


def order(sku: str, confirmed: bool = False) -> dict:
    """Order a product; confirmed only after the caller's yes.

    Args:
        sku: the product code
        confirmed: true after the caller agreed
    """
    if not confirmed:
        return {"say": f"Shall I order {sku}?", "proposal": {"tool": "order", "arguments": {"sku": sku}}}
    WRITES.append({"sku": sku})
    return {"say": "Ordered."}


def build_writer(script: list) -> Registry:
    registry = Registry()
    registry.add_provider("m", ScriptedProvider(script, name="m"))
    registry.add_tool(tool_from_function(order))
    registry.add_agent(Agent("sales", "You sell.", "m", ("order",)))
    registry.add_swarm(SwarmSpec("shop", ("sales",), "sales"))
    return registry


async def test_a_write_without_the_read_back_and_the_callers_yes_is_read_back_instead() -> None:
    # Told to read it back first, the 1.5B spent a second completion on it (2-5 s of a caller's wait), and now
    # and then said "please read it back and ask me first" to the caller: the session asks itself.
    WRITES.clear()
    eager = '{"name": "order", "arguments": {"sku": "K1", "confirmed": true}}'
    session = build_writer([eager, "Shall I order K1?", eager]).session("c1", "shop")
    said = await session.complete("yes I want the kettle K1")
    assert WRITES == [] and said == "Shall I order K1?"
    assert [e.stage for e in session.events if isinstance(e, Rescued)] == ["read_back_first"]
    assert not [e for e in session.events if isinstance(e, ValidationFailed)]
    assert await session.complete("yes") == "Ordered." and WRITES == [{"sku": "K1"}]  # the yes to it writes once


async def test_yes_to_the_read_back_writes_once_and_a_no_writes_nothing() -> None:
    WRITES.clear()
    ask = reply("", ("order", {"sku": "K1"}))
    confirm = reply("", ("order", {"sku": "K1", "confirmed": True}))
    session = build_writer([ask, "Shall I order K1?", confirm, "Done."]).session("c1", "shop")
    await session.complete("the kettle K1 please")
    assert WRITES == []
    await session.complete("yes please")
    assert WRITES == [{"sku": "K1"}]
    WRITES.clear()
    other = build_writer([ask, "Shall I order K1?", confirm, confirm, confirm, "Alright, no order."]).session(
        "c2", "shop"
    )
    await other.complete("the kettle K1 please")
    said = await other.complete("no thanks")
    assert WRITES == [] and said == "Alright, no order."
    # Not "read it back and ask them first", which the 1.5B said to a caller who had said no.
    refused = next(e for e in other.events if isinstance(e, ValidationFailed))
    assert refused.errors == [
        "order: the caller said no: do not call order; answer what they said in one short sentence"
    ]


async def test_yes_to_other_arguments_is_not_a_yes_to_these() -> None:
    WRITES.clear()
    ask = reply("", ("order", {"sku": "K1"}))
    switched = reply("", ("order", {"sku": "K2", "confirmed": True}))
    session = build_writer([ask, "Shall I order K1?", switched, "Sorry, which one?"]).session("c1", "shop")
    await session.complete("the kettle please")
    await session.complete("yes, K2 then")  # more than a plain yes: the model decides, and K2 was never read back
    assert WRITES == []
    plain = build_writer([ask, "Shall I order K1?", switched]).session("c2", "shop")
    await plain.complete("the kettle please")
    await plain.complete("yes")  # a plain yes runs what was read back (K1); the model is not asked
    assert WRITES == [{"sku": "K1"}]


async def test_a_yes_said_with_the_purchase_in_the_callers_words_is_read_back_once_more() -> None:
    # A blind scenario: "Okay, that's not bad at all. I'll take one." to the offer, and the 1.5B wrote the order.
    WRITES.clear()
    ask = reply("", ("order", {"sku": "K1"}))
    confirm = reply("", ("order", {"sku": "K1", "confirmed": True}))
    session = build_writer([ask, "Shall I order K1?", confirm, "Shall I order K1?", confirm]).session("c1", "shop")
    await session.complete("the kettle please")
    said = await session.complete("Okay, that's not bad at all. I'll take one.")
    assert WRITES == [] and said == "Shall I order K1?"  # the model's write, run as its read-back
    assert [e.stage for e in session.events if isinstance(e, Rescued)] == ["read_back_first"]
    assert await session.complete("Yes, go ahead.") == "Ordered." and WRITES == [{"sku": "K1"}]


async def test_the_same_call_again_in_one_turn_speaks_the_first_results_say_line() -> None:
    registry, model = build(
        [reply("", ("search", {"query": "kettle"})), reply("", ("search", {"query": "kettle"}))] * 3
    )
    session = registry.session("c1", "shop")
    said = await session.complete("a kettle")
    assert said == "We have a kettle for ten euros."
    assert [e.kind for e in session.events].count("tool_call") == 1 and len(model.requests) == 2
