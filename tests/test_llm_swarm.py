"""The shop's swarm on the real local model (Qwen2.5-Coder 1.5B in llama.cpp's server), in its default tool mode.

Outcomes only (who has the caller, which rows the shop holds), never wording; triage with a tolerance
over a handful of sentences, run once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from callcenter.agents import AGENTS, SWARM, build_registry
from callcenter.shop import Shop
from swarm.providers.local import LocalServer
from swarm.providers.openai_compat import OpenAIProvider
from swarm.registry import Registry
from swarm.tool_modes import resolve_tool_mode

pytestmark = [pytest.mark.llm, pytest.mark.timeout(900)]

CALLER = "+442079460321"
# Written for this test, apart from the benchmark's sets: (what the caller says, where they must end up).
TRIAGE = [
    ("Hi, I want to buy a kettle.", "sales"),
    ("Do you have wireless headphones in stock?", "sales"),
    ("The jacket I ordered doesn't fit, I want to send it back.", "refund"),
    ("My order arrived broken and I'd like a refund.", "refund"),
    ("Can I talk to a real person please?", "operator"),
    ("Hello? Who is this?", "triage"),
]


@pytest.fixture
async def shop_swarm(local_15b: LocalServer, tmp_path: Path) -> AsyncIterator[tuple[Registry, Path]]:
    provider = OpenAIProvider("local", local_15b.base_url, timeout=180, tool_mode=resolve_tool_mode("auto", "local"))
    db = tmp_path / "shop.db"
    shop = Shop(str(db))
    shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=6)
    try:
        yield build_registry(shop, {agent: provider for agent in AGENTS}), db
    finally:
        await provider.aclose()
        shop.close()


def rows(db: Path, table: str) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(f"SELECT * FROM {table}").fetchall()


async def test_triage_hands_over_to_the_right_place(shop_swarm: tuple[Registry, Path]) -> None:
    registry, _ = shop_swarm
    outcomes = []
    for n, (text, expected) in enumerate(TRIAGE):
        session = registry.session(f"triage-{n}", SWARM, metadata={"caller": CALLER})
        reply = await session.complete(text)
        escalation = session.escalated()
        where = "operator" if escalation and escalation.reason == "caller_asked" else session.get_agent_name()
        outcomes.append((text, expected, where, reply))
        assert "{" not in reply and "_" not in reply, reply  # never JSON or a tool name for the ear
    wrong = [o for o in outcomes if o[1] != o[2]]
    assert len(wrong) <= 1, wrong


async def converse(registry: Registry, lines: list[str], db: Path, table: str, answer: str = "Yes.") -> list[str]:
    """The caller's lines in turn; after a yes, while nothing is written and the agent asks something (a
    read-back, or which one), the caller answers `answer`, at most twice, as a caller on the phone would."""
    session = registry.session("call", SWARM, metadata={"caller": CALLER})
    replies = [await session.complete(line) for line in lines]
    for _ in range(2):
        if not lines[-1].startswith("Yes") or rows(db, table) or not replies[-1].rstrip().endswith("?"):
            break
        replies.append(await session.complete(answer))
    return replies


async def test_purchase_writes_exactly_the_order(shop_swarm: tuple[Registry, Path]) -> None:
    registry, db = shop_swarm
    before = len(rows(db, "orders"))
    replies = await converse(
        registry,
        ["I'd like to buy a new phone charger.", "Yes, please."],
        db,
        "order_lines",
        answer="Yes, one USB-C phone charger, please.",
    )
    new_orders = rows(db, "orders")[before:]
    assert len(new_orders) == 1, replies
    lines = [r for r in rows(db, "order_lines") if r["order_id"] == new_orders[0]["id"]]
    assert [(r["sku"], r["quantity"]) for r in lines] == [("CH-110", 1)], replies
    assert rows(db, "returns") == []


async def test_return_writes_exactly_the_return(shop_swarm: tuple[Registry, Path]) -> None:
    registry, db = shop_swarm
    orders = len(rows(db, "orders"))
    replies = await converse(registry, ["I want to return the headphones I bought last week.", "Yes."], db, "returns")
    returns = rows(db, "returns")
    assert [r["sku"] for r in returns] == ["HP-100"], replies
    assert len(rows(db, "orders")) == orders


async def test_a_caller_who_says_no_gets_nothing_written(shop_swarm: tuple[Registry, Path]) -> None:
    registry, db = shop_swarm
    orders = len(rows(db, "orders"))
    await converse(
        registry, ["I want to return the headphones I bought last week.", "No, I'll keep them."], db, "returns"
    )
    await converse(registry, ["I'd like to buy a new phone charger.", "No thanks, not today."], db, "orders")
    assert rows(db, "returns") == [] and len(rows(db, "orders")) == orders
