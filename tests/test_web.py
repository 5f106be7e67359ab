"""The WebSocket endpoint /api/v1/session/{client_id}, served by aiohttp and driven by the real `websockets` client."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from aiohttp import web
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedOK

from callcenter.app import App, open_app
from callcenter.config import Config, LLMConfig
from callcenter.web import make_web_app

CALLER = "+44 20 7946 0321"
RETURN_LINE = "I want to return the headphones I bought last week"
WAIT = 10.0


@dataclass
class Server:
    app: App
    db: Path
    base: str

    def url(self, client_id: str, caller: str | None = CALLER) -> str:
        query = f"?{urlencode({'caller': caller})}" if caller is not None else ""
        return f"{self.base}/api/v1/session/{quote(client_id)}{query}"


def rows(db: Path, table: str) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(f"SELECT * FROM {table}").fetchall()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    db = tmp_path / "shop.db"
    app = await open_app(Config(llm=LLMConfig(provider="offline"), database=str(db)), "offline")
    app.shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=6)
    runner = web.AppRunner(make_web_app(app), shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    try:
        yield Server(app, db, f"ws://127.0.0.1:{port}")
    finally:
        await runner.cleanup()
        app.close()


async def turn(ws: ClientConnection, message: Any) -> list[dict[str, Any]]:
    """Send one caller message and read the events up to and including {"event": "done"}."""
    await ws.send(message if isinstance(message, str) else json.dumps(message))
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(WAIT):
        while not events or events[-1]["event"] not in ("done", "error"):
            events.append(json.loads(await ws.recv()))
    return events


async def test_return_over_websocket(server: Server) -> None:
    async with connect(server.url("web-return"), open_timeout=WAIT) as ws:
        events = await turn(ws, {"data": RETURN_LINE})
        assert {"event": "agent_change", "from": "triage", "to": "refund"} in events
        calls = [e for e in events if e["event"] == "tool_call"]
        assert "find_order" in [c["name"] for c in calls]
        replies = [e["text"] for e in events if e["event"] == "reply"]
        assert any("headphones" in text.lower() for text in replies)
        assert events[-1] == {"event": "done", "agent": "refund", "escalation": None, "ending": None}
        assert rows(server.db, "returns") == []

        events = await turn(ws, {"data": "yes"})
        created = [e for e in events if e["event"] == "tool_call" and e["name"] == "create_return"]
        assert created and created[0]["arguments"]["confirmed"] is True
        assert events[-1]["event"] == "done"
    returns = rows(server.db, "returns")
    assert len(returns) == 1 and returns[0]["sku"] == "HP-100"


async def test_plain_text_message_is_the_callers_words(server: Server) -> None:
    async with connect(server.url("web-plain"), open_timeout=WAIT) as ws:
        events = await turn(ws, RETURN_LINE)
    assert events[-1] == {"event": "done", "agent": "refund", "escalation": None, "ending": None}


async def test_transfer_request_is_reported_in_done(server: Server) -> None:
    async with connect(server.url("web-person"), open_timeout=WAIT) as ws:
        events = await turn(ws, {"data": "Can I speak to a person please?"})
    assert [e["name"] for e in events if e["event"] == "tool_call"] == ["transfer_to_operator"]
    assert events[-1]["event"] == "done" and events[-1]["escalation"]


async def test_the_end_of_the_call_is_sent_in_done_and_the_socket_closes(server: Server) -> None:
    async with connect(server.url("web-bye"), open_timeout=WAIT) as ws:
        events = await turn(ws, {"data": "No thanks, that's all. Goodbye!"})
        assert [e["name"] for e in events if e["event"] == "tool_call"] == ["end_call"]
        assert events[-1] == {"event": "done", "agent": "triage", "escalation": None, "ending": "goodbye"}
        with pytest.raises(ConnectionClosedOK):
            await asyncio.wait_for(ws.recv(), WAIT)
    assert ws.close_code == 1000 and ws.close_reason == "the call has ended"


@pytest.mark.parametrize("message", [{"text": "hello"}, {"data": 42}, {"data": "   "}, ""])
async def test_message_without_data_gets_an_error_and_the_socket_stays_usable(server: Server, message: Any) -> None:
    async with connect(server.url("web-error"), open_timeout=WAIT) as ws:
        events = await turn(ws, message)
        assert len(events) == 1 and events[0]["event"] == "error" and "data" in events[0]["error"]
        events = await turn(ws, {"data": RETURN_LINE})
        assert events[-1]["event"] == "done" and events[-1]["agent"] == "refund"


async def test_concurrent_clients_never_see_each_others_words(server: Server) -> None:
    # Each client's search query carries its own marker word; the tool_call events echo the query.
    lines = {
        "client-a": ["I'd like to buy a phone charger aardvarkone", "I'd like to buy a kettle aardvarktwo"],
        "client-b": ["I'd like to buy a phone charger zebraone", "I'd like to buy a kettle zebratwo"],
    }

    async def talk(client_id: str, caller: str) -> str:
        seen: list[str] = []
        async with connect(server.url(client_id, caller), open_timeout=WAIT) as ws:
            for _ in range(3):
                for line in lines[client_id]:
                    seen.append(json.dumps(await turn(ws, {"data": line})))
        return "\n".join(seen)

    async with asyncio.timeout(4 * WAIT):
        a, b = await asyncio.gather(talk("client-a", "+4915100000001"), talk("client-b", "+4915100000002"))
    assert "aardvarkone" in a and "aardvarktwo" in a
    assert "zebraone" in b and "zebratwo" in b
    assert "zebra" not in a and "aardvark" not in b


async def test_same_client_id_later_gets_its_own_order(server: Server) -> None:
    numbers: list[str] = []
    for caller in ("+4915100000001", "+4915100000002"):
        async with connect(server.url("kiosk", caller), open_timeout=WAIT) as ws:
            await turn(ws, {"data": "I'd like to buy a new phone charger."})
            events = await turn(ws, {"data": "yes"})
        placed = [json.loads(e["result"]) for e in events if e["event"] == "tool_call" and e["name"] == "place_order"]
        numbers.append(placed[-1]["order_number"])
    assert numbers[0] != numbers[1]
    phones = {row["customer_phone"] for row in rows(server.db, "orders") if row["order_number"] in numbers}
    assert len(phones) == 2
