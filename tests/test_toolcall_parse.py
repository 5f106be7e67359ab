"""The tolerant parser on the forms small models were measured to write instead of a tool call."""

from __future__ import annotations

import pytest

from swarm.messages import ToolCall
from swarm.toolcall_parse import extract_tool_calls

TRIAGE = ("navigate_to_sales", "navigate_to_refund", "transfer_to_operator", "end_call")
SALES = ("search_products", "place_order", "navigate_back")


@pytest.mark.parametrize(
    ("reply", "form"),
    [
        ('{"name": "navigate_to_refund", "arguments": {}}', "json"),
        ('{{"name": "navigate_to_refund", "arguments": {{}}}}', "doubled_braces"),
        ('```json\n{"name": "navigate_to_refund", "arguments": {}}\n```', "fenced_json"),
        ('<tool_call>\n{"name": "navigate_to_refund", "arguments": {}}\n</tool_call>', "tool_call_tag"),
        ('<tool_call>{"name": "navigate_to_refund", "arguments": {}}', "tool_call_tag"),
        (
            '<tool_response name="navigate_to_refund">\nThe caller wants a refund.\n</tool_response>',
            "tool_response_tag",
        ),
        ("functions.navigate_to_refund:", "functions_prefix"),
        ("I understand. Please call navigate_to_refund.", "prose"),
        ('{"function": {"name": "navigate_to_refund", "arguments": "{}"}}', "json"),
        ('{"name": "navigate_to_refund", "parameters": {}}', "json"),
        ('{"tool": "navigate_to_refund", "arguments": {}}', "json"),
    ],
)
def test_each_measured_form_is_the_call_it_names(reply: str, form: str) -> None:
    found = extract_tool_calls(reply, TRIAGE)
    assert found is not None and found.form == form and not found.errors
    assert [(c.name, c.arguments) for c in found.calls] == [("navigate_to_refund", {})]


def test_arguments_survive_every_json_form() -> None:
    for reply in (
        'Let me look. {"name": "search_products", "arguments": {"query": "kettle"}}',
        '{{"name": "search_products", "arguments": {{"query": "kettle"}}}}',
        '```\n{"name": "search_products", "arguments": {"query": "kettle"}}\n```',
        'functions.search_products: {"query": "kettle"}',
        '<tool_response name="search_products">{"query": "kettle"}</tool_response>',
    ):
        found = extract_tool_calls(reply, SALES)
        assert found is not None and [c.arguments for c in found.calls] == [{"query": "kettle"}], reply


def test_plain_speech_is_not_a_call() -> None:
    assert extract_tool_calls("Would you like to buy something, or return something?", TRIAGE) is None
    assert extract_tool_calls("It costs twenty four euros ninety.", SALES) is None


def test_a_tool_the_agent_lacks_is_still_returned_for_validation_to_refuse() -> None:
    # Validation names the agent's real tools in its feedback; the parser does not guess a substitute.
    found = extract_tool_calls('{"name": "create_return", "arguments": {}}', TRIAGE)
    assert found is not None and [c.name for c in found.calls] == ["create_return"]


def test_prose_naming_an_unknown_or_several_tools_is_feedback_not_a_call() -> None:
    unknown = extract_tool_calls("Let me call find_order for you.", TRIAGE)
    assert unknown is not None and not unknown.calls and "never say tool names" in unknown.errors[0]
    several = extract_tool_calls("Either navigate_to_sales or navigate_to_refund.", TRIAGE)
    assert several is not None and not several.calls and "several tools" in several.errors[0]


def test_json_that_is_no_call_is_feedback() -> None:
    found = extract_tool_calls('{"say": "hello"}', TRIAGE)
    assert found is not None and not found.calls and found.errors


def test_broken_json_keeps_the_name_and_raw_text_for_the_error() -> None:
    found = extract_tool_calls('{"name": "search_products", "arguments": {"query": "kettle"', SALES)
    assert found is not None
    (call,) = found.calls
    assert call.name == "search_products" and call.raw_arguments is not None and "kettle" in call.raw_arguments


def test_several_blocks_are_several_calls_in_order() -> None:
    reply = '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>'
    found = extract_tool_calls(reply, ("a", "b"))
    assert found is not None and found.calls == (ToolCall("call_0", "a", {"x": 1}), ToolCall("call_1", "b", {}))
