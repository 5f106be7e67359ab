"""The call centre's own tools: typed functions named by import path in the swarm file."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from callcenter.agents import SWARM, build_registry
from callcenter.shop import Shop
from callcenter.swarm_file import SwarmFileError, parse_swarm_file
from swarm.events import ToolCalled
from swarm.registry import Registry
from swarm.tools import ToolContext
from tests.tool_fakes import NoSession

PACKAGED = Path(__file__).parent.parent / "callcenter" / "data" / "swarm.toml"
CALLER = "+4917012345678"

CRM = '''
from __future__ import annotations

from typing import Any, Literal

from swarm.tools import ToolContext

VISITS: list[tuple[str, str]] = []


def lookup_customer(context: ToolContext, postcode: str) -> dict[str, Any]:
    """Find the caller in the CRM.

    Args:
        postcode: the caller's postcode
    """
    return {"customer": f"{context.metadata['caller']}@{postcode}", "say": f"You are on file at {postcode}."}


def book_visit(day: Literal["monday", "tuesday"], confirmed: bool = False) -> dict[str, Any]:
    """Book a technician's visit."""
    if not confirmed:
        # The proposal is what the caller's yes runs (swarm.confirmations), with confirmed=true.
        proposal = {"tool": "book_visit", "arguments": {"day": day}}
        return {"say": f"Shall I book the visit on {day}?", "needs_confirmation": True, "proposal": proposal}
    VISITS.append(("visit", day))
    return {"say": f"Booked for {day}."}


def cancel_contract(contract: str) -> dict[str, Any]:
    """Cancel the caller's contract at once."""
    return {"say": "Cancelled."}


def untyped(contract):  # noqa: ANN001, ANN201
    """No types."""
    return {}
'''

SERVICE = """
[agents.service]
tools = [{tools}, "navigate_back", "transfer_to_operator", "end_call"]
hand_over = "Hand the caller over to service for a technician's visit."
hand_over_phrases = ["technician", "engineer", "repair visit"]
prompt = "You book technicians' visits for callers."
"""


@pytest.fixture(scope="module")
def crm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("site")
    (root / "acme_crm").mkdir()
    (root / "acme_crm" / "__init__.py").write_text("")
    (root / "acme_crm" / "tools.py").write_text(textwrap.dedent(CRM))
    sys.path.insert(0, str(root))
    try:
        yield "acme_crm.tools"
    finally:
        sys.path.remove(str(root))


def swarm_text(crm: str, tools: list[str], declarations: str) -> str:
    text = PACKAGED.read_text(encoding="utf-8")
    text = text.replace('"ask_buy_or_return"]', '"ask_buy_or_return", "navigate_to_service"]', 1)
    text = text.replace("precedence = [", 'precedence = ["navigate_to_service", ', 1)  # "I need" is also a sales word
    listed = ", ".join(f'"{t}"' for t in tools)
    return text + SERVICE.format(tools=listed) + declarations.replace("CRM", crm)


def registry_of(text: str) -> Registry:
    # Left open: the shop's tools may be called (an in-memory database, gone with the test's objects).
    return build_registry(Shop(":memory:"), {}, swarm=parse_swarm_file(text, "own.toml"))


def line_of(text: str, fragment: str, after: str) -> int:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i, line in enumerate(lines[start:], start + 1) if fragment in line)


GOOD = """
[tools.lookup_customer]
function = "CRM:lookup_customer"
says_result = true

[tools.book_visit]
function = "CRM:book_visit"
writes = true
says_result = true
examples = ["book a visit", "send a technician"]
"""


async def test_typed_functions_become_tools_with_their_schema(crm: str) -> None:
    registry = registry_of(swarm_text(crm, ["lookup_customer", "book_visit"], GOOD))
    lookup = registry.tools["lookup_customer"]
    assert lookup.description == "Find the caller in the CRM."
    assert lookup.parameters["properties"] == {"postcode": {"type": "string", "description": "the caller's postcode"}}
    assert lookup.parameters["required"] == ["postcode"]  # the context is given, never asked of the model
    assert lookup.changes_nothing and not registry.tools["book_visit"].changes_nothing
    day = registry.tools["book_visit"].parameters["properties"]["day"]
    assert day["enum"] == ["monday", "tuesday"]
    context = ToolContext("call-1", "service", NoSession(), {"caller": CALLER})
    result = await lookup.call({"postcode": "10115"}, context)
    assert result["customer"] == f"{CALLER}@10115"
    assert registry.tools["book_visit"].errors({"day": "sunday"}, context)  # the schema is enforced


async def test_a_call_reaches_the_function_through_the_swarm(crm: str) -> None:
    registry = registry_of(swarm_text(crm, ["lookup_customer", "book_visit"], GOOD))
    session = registry.session("call-1", SWARM, metadata={"caller": CALLER})
    await session.complete("I need a technician to come round")
    assert session.get_agent_name() == "service"
    reply = await session.complete("please send a technician on monday")
    called = [e for e in session.events if isinstance(e, ToolCalled) and e.name == "book_visit"]
    assert called and called[-1].arguments.get("day") == "monday"
    assert reply == "Shall I book the visit on monday?"  # a write is read back first: nothing booked yet
    visits = sys.modules[crm].VISITS
    assert visits == []
    assert await session.complete("yes please") == "Booked for monday. Is there anything else I can help with?"
    assert visits == [("visit", "monday")]


def test_a_write_without_a_confirmation_step_is_named_with_its_line(crm: str) -> None:
    declared = '\n[tools.cancel_contract]\nfunction = "CRM:cancel_contract"\nwrites = true\n'
    text = swarm_text(crm, ["cancel_contract"], declared)
    line = line_of(text, '"cancel_contract"', "[agents.service]")
    with pytest.raises(
        SwarmFileError, match=rf"own\.toml line {line}: .*'cancel_contract', which writes without a confirmation step"
    ):
        registry_of(text)
    registry_of(text.replace("writes = true", "writes = false"))  # a reading tool needs none


@pytest.mark.parametrize(
    ("function", "problem"),
    [
        ("CRM:untyped", r"leaves contract without a type"),
        ("CRM:missing", r"has no function 'missing'"),
        ("acme_nowhere.tools:lookup", r"cannot import acme_nowhere\.tools"),
    ],
)
def test_a_function_that_cannot_be_a_tool_is_named_with_its_line(crm: str, function: str, problem: str) -> None:
    text = swarm_text(crm, ["mine"], f'\n[tools.mine]\nfunction = "{function}"\n')
    line = line_of(text, "function =", "[tools.mine]")
    with pytest.raises(SwarmFileError, match=rf"own\.toml line {line}: .*{problem}"):
        registry_of(text)
