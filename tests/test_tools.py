"""tool_from_function: the JSON schema from type hints and docstring, validation errors, and how the call runs."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any

import pytest
from pydantic import Field

from swarm.tools import Tool, ToolContext, tool_from_function
from tests.tool_fakes import NoSession


def lookup(
    context: ToolContext, query: str, limit: int = 3, colour: str | None = None, exact: bool = False
) -> dict[str, Any]:
    """Search the catalogue for what the caller asked for.

    Only products in stock are listed.

    Args:
        query: the caller's words about the product
        limit (int): how many products at most
        colour: a colour the caller named
        exact: true to match the words exactly
    """
    return {
        "client": context.client_id,
        "query": query,
        "limit": limit,
        "colour": colour,
        "thread": threading.current_thread(),
    }


async def lookup_async(context: ToolContext, query: str) -> dict[str, Any]:
    """Search asynchronously."""
    await asyncio.sleep(0)
    return {"agent": context.agent, "query": query, "thread": threading.current_thread()}


def order(sku: str, quantity: Annotated[int, Field(ge=1, le=10)]) -> int:
    """Order some items.

    Args:
        sku: the product code
        quantity: how many
    """
    return quantity


def wrapped_doc(query: str) -> str:
    """Search.

    Args:
        query: the caller's words about the product,
            as they said them
    """
    return query


def context(agent: str = "sales") -> ToolContext:
    return ToolContext(client_id="call-42", agent=agent, session=NoSession(), metadata={"caller": "+4915100000000"})


@pytest.fixture
def tool() -> Tool:
    return tool_from_function(lookup)


def test_name_and_description_come_from_the_function(tool: Tool) -> None:
    assert tool.name == "lookup"
    assert tool.description == "Search the catalogue for what the caller asked for."
    assert tool_from_function(lookup, name="find", description="Find.").spec().name == "find"


def test_schema_has_parameter_descriptions_and_required(tool: Tool) -> None:
    schema = tool.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    props = schema["properties"]
    assert set(props) == {"query", "limit", "colour", "exact"}
    assert props["query"] == {"type": "string", "description": "the caller's words about the product"}
    assert props["limit"] == {"type": "integer", "default": 3, "description": "how many products at most"}
    assert props["exact"]["type"] == "boolean"
    assert "title" not in schema and all("title" not in p for p in props.values())


def test_optional_string_is_a_plain_string(tool: Tool) -> None:
    assert tool.parameters["properties"]["colour"] == {"type": "string", "description": "a colour the caller named"}


def test_context_parameter_is_hidden_from_the_schema(tool: Tool) -> None:
    assert "context" not in tool.parameters["properties"]
    assert "context" not in tool.parameters["required"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "'query' is a required property"),
        ({"query": 3}, "at 'query': 3 is not of type 'string'"),
        ({"query": "kettle", "limit": "two"}, "at 'limit': 'two' is not of type 'integer'"),
        ({"query": "kettle", "colour": None}, "at 'colour': None is not of type 'string'"),
        ({"query": "kettle", "exact": "yes"}, "at 'exact': 'yes' is not of type 'boolean'"),
    ],
)
def test_errors_name_the_field(tool: Tool, arguments: dict[str, Any], expected: str) -> None:
    assert tool.errors(arguments, context()) == [expected]


def test_errors_for_non_object_and_valid_arguments(tool: Tool) -> None:
    assert tool.errors(["kettle"], context()) == ["arguments must be a JSON object, got list"]
    assert tool.errors({"query": "kettle", "limit": 2, "colour": "red"}, context()) == []


def test_extra_validator_runs_after_the_schema() -> None:
    seen: list[dict[str, Any]] = []

    def no_zebras(arguments: dict[str, Any], ctx: ToolContext) -> list[str]:
        seen.append(arguments)
        return ["we sell no zebras"] if "zebra" in arguments["query"] else []

    tool = tool_from_function(lookup, validate=no_zebras)
    assert tool.errors({"query": "zebra"}, context()) == ["we sell no zebras"]
    assert tool.errors({"query": "kettle"}, context()) == []
    # A schema error stops there: the extra check never sees arguments of the wrong shape.
    assert tool.errors({"query": 1}, context()) == ["at 'query': 1 is not of type 'string'"]
    assert len(seen) == 2


async def test_sync_function_runs_in_a_thread_and_gets_the_context(tool: Tool) -> None:
    async with asyncio.timeout(5):
        result = await tool.call({"query": "kettle", "colour": "red"}, context())
    assert result["client"] == "call-42"
    assert (result["query"], result["limit"], result["colour"]) == ("kettle", 3, "red")
    assert result["thread"] is not threading.current_thread()


async def test_async_function_is_awaited_on_the_loop(tool: Tool) -> None:
    async with asyncio.timeout(5):
        result = await tool_from_function(lookup_async).call({"query": "kettle"}, context("refund"))
    assert result["agent"] == "refund" and result["query"] == "kettle"
    assert result["thread"] is threading.current_thread()


async def test_annotated_constraints_reach_schema_errors_and_call() -> None:
    tool = tool_from_function(order)
    assert tool.parameters["properties"]["quantity"]["minimum"] == 1
    assert tool.parameters["properties"]["quantity"]["maximum"] == 10
    assert tool.errors({"sku": "CH-110", "quantity": 0}, context()) == [
        "at 'quantity': 0 is less than the minimum of 1"
    ]
    with pytest.raises(ValueError):
        await tool.call({"sku": "CH-110", "quantity": 0}, context())


def test_annotated_parameter_keeps_its_type_and_description() -> None:
    prop = tool_from_function(order).parameters["properties"]["quantity"]
    assert prop["type"] == "integer" and prop["description"] == "how many"


def test_multi_line_parameter_description_is_kept_whole() -> None:
    description = tool_from_function(wrapped_doc).parameters["properties"]["query"]["description"]
    assert description == "the caller's words about the product, as they said them"
