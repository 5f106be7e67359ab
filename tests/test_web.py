"""The WebSocket endpoint /api/v1/session/{client_id}, served by aiohttp and driven by the real `websockets` client:
its turns, and its door (issue 25: tokens, signed callers, Origin and Host, limits)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from aiohttp import web
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidStatus

import callcenter.call.rules as rules_module
from callcenter.app import App, open_app
from callcenter.call import VoiceSettings
from callcenter.config import Config, LLMConfig, WebConfig
from callcenter.web import MAX_FRAME_BYTES, make_web_app
from callcenter.web_tokens import issue

CALLER = "+44 20 7946 0321"
RETURN_LINE = "I want to return the headphones I bought last week"
WAIT = 10.0
KEY = "k9Jx2Lm4Np6Qr8St0Uv3Wy5Za7Bc9De1Fg"
TOKEN = "Zq3-vN8xKp2_wR7tYh5m"
LOCKED = WebConfig(token=TOKEN, signing_key=KEY, allowed_origins=("https://shop.example",))


@dataclass
class Server:
    app: App
    db: Path
    base: str

    def url(self, client_id: str, caller: str | None = CALLER, **query: str) -> str:
        """The session's URL; with a caller, their signed token (as the shop's site would hand it out)."""
        if caller is not None:
            query["token"] = issue(KEY, caller)
        return f"{self.base}/api/v1/session/{quote(client_id)}" + (f"?{urlencode(query)}" if query else "")


def rows(db: Path, table: str) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(f"SELECT * FROM {table}").fetchall()


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, config: WebConfig, settings: VoiceSettings | None = None) -> AsyncIterator[Server]:
    db = tmp_path / "shop.db"
    app = await open_app(Config(llm=LLMConfig(provider="offline"), database=str(db)), "offline")
    app.shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=6)
    runner = web.AppRunner(make_web_app(app, config, settings), shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    try:
        yield Server(app, db, f"ws://127.0.0.1:{port}")
    finally:
        await runner.cleanup()
        app.close()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    async with serving(tmp_path, LOCKED) as server:
        yield server


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


# ---- the call rules (issue 26): the phone's, as the testbed's text calls drive them --------------------------------

CALL = VoiceSettings(greeting="Hello, this is the shop's chat.", operator="the client", reprompt_after_s=0.4)


async def frames(ws: ClientConnection) -> list[dict[str, Any]]:
    """What the server sends up to and including the next {"event": "done"}, without the caller's doing."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(WAIT):
        while not events or events[-1]["event"] != "done":
            events.append(json.loads(await ws.recv()))
    return events


async def closed(ws: ClientConnection) -> str:
    """The reason the server gave when it closed the socket."""
    with pytest.raises(ConnectionClosedOK):
        await asyncio.wait_for(ws.recv(), WAIT)
    return ws.close_reason or ""


def said(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e["event"] == "reply"]


async def test_a_call_is_greeted_and_0_reaches_a_person_who_takes_over_in_the_client(tmp_path: Path) -> None:
    async with serving(tmp_path, LOCKED, CALL) as server, connect(server.url("call-0", call="1")) as ws:
        assert said(await frames(ws)) == [CALL.greeting]
        events = await turn(ws, {"keys": "50"})  # a key nobody asked for, then 0: a person, as on the phone
        assert said(events) == [CALL.handover]
        assert events[-1] == {"event": "done", "agent": "triage", "escalation": "caller_pressed_0", "ending": None}
        assert await closed(ws) == "the call has ended"


async def test_a_silent_caller_is_reprompted_then_the_call_ends(tmp_path: Path) -> None:
    settings = replace(CALL, reprompts_before_hangup=1)
    async with serving(tmp_path, LOCKED, settings) as server, connect(server.url("call-silent", call="1")) as ws:
        assert said(await frames(ws)) == [settings.greeting]
        assert said(await frames(ws)) == [settings.reprompt]
        events = await frames(ws)
        assert said(events) == [settings.silence_goodbye] and events[-1]["ending"] == "caller_silent"
        assert await closed(ws) == "the call has ended"


async def test_the_callers_words_start_the_silence_again(tmp_path: Path) -> None:
    settings = replace(CALL, reprompt_after_s=2.0)
    async with serving(tmp_path, LOCKED, settings) as server, connect(server.url("call-talk", call="1")) as ws:
        assert said(await frames(ws)) == [settings.greeting]
        for _ in range(2):  # each turn within the silence allowed: no re-prompt comes between them
            await asyncio.sleep(0.8)
            assert settings.reprompt not in said(await turn(ws, {"data": RETURN_LINE}))
        assert said(await frames(ws)) == [settings.reprompt]


async def test_a_chat_is_not_greeted_nor_reprompted_but_keeps_the_rules_after_a_turn(tmp_path: Path) -> None:
    async with serving(tmp_path, LOCKED, CALL) as server, connect(server.url("chat-0")) as ws:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(ws.recv(), 1.0)  # over two re-prompt times of silence: nothing
        events = await turn(ws, {"keys": "0"})
        assert said(events) == [CALL.handover] and events[-1]["escalation"] == "caller_pressed_0"
        assert await closed(ws) == "the call has ended"


@pytest.mark.parametrize("keys", [{"keys": "12a"}, {"keys": ""}, {"keys": 0}])
async def test_keys_that_are_no_keys_get_an_error_frame(server: Server, keys: dict[str, Any]) -> None:
    async with connect(server.url("keys"), open_timeout=WAIT) as ws:
        events = await turn(ws, keys)
        assert len(events) == 1 and "keys" in events[0]["error"]
        assert (await turn(ws, {"data": RETURN_LINE}))[-1]["event"] == "done"


async def test_a_rule_changed_once_changes_the_websocket_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As tests/test_call_rules.py shows for the phone and the testbed's text calls: the hand-over line after 0.
    async def press_0(server: Server, client_id: str) -> list[str]:
        async with connect(server.url(client_id, call="1")) as ws:
            return said(await frames(ws)) + said(await turn(ws, {"keys": "0"}))

    async with serving(tmp_path, LOCKED, CALL) as server:
        assert await press_0(server, "rule-1") == [CALL.greeting, CALL.handover]
        monkeypatch.setattr(rules_module, "ANNOUNCED_BY_US", frozenset())
        assert await press_0(server, "rule-2") == [CALL.greeting]


# ---- the door (issue 25) --------------------------------------------------------------------------------------


async def refused(url: str, **options: Any) -> int:
    """The HTTP status the server answered the upgrade with (the test fails if it opened the socket)."""
    with pytest.raises(InvalidStatus) as caught:
        async with connect(url, open_timeout=WAIT, **options):
            pass
    return caught.value.response.status_code


def plus_caller(url: str, caller: str) -> str:
    return url + ("&" if "?" in url else "?") + urlencode({"caller": caller})


def replies(events: list[dict[str, Any]]) -> str:
    return " ".join(e["text"] for e in events if e["event"] == "reply").lower()


async def test_a_foreign_origin_is_refused_even_with_a_good_token(server: Server) -> None:
    # What a page on evil.example could do in the browser of someone who holds a token (or on a kiosk).
    assert await refused(server.url("x"), origin="http://evil.example") == 403
    assert await refused(server.url("x"), origin="https://shop.example.evil.example") == 403
    for origin in ("https://shop.example", server.base.replace("ws://", "http://")):  # allowed, and its own
        async with connect(server.url("x"), origin=origin, open_timeout=WAIT) as ws:  # type: ignore[arg-type]
            assert (await turn(ws, {"data": RETURN_LINE}))[-1]["event"] == "done"


async def test_no_token_or_a_wrong_one_is_refused(server: Server) -> None:
    assert await refused(server.url("x", caller=None)) == 401
    assert await refused(server.url("x", caller=None, token="wrong-token-0123456789")) == 401
    assert await refused(server.url("x", caller=None), additional_headers={"Authorization": "Bearer nope"}) == 401
    other_key = issue("another-key-that-is-long-enough-0123456789", CALLER)
    assert await refused(server.url("x", caller=None, token=other_key)) == 401
    expired = issue(KEY, CALLER, 60, now=time.time() - 120)
    assert await refused(server.url("x", caller=None, token=expired)) == 401


async def test_a_tampered_token_does_not_change_the_caller(server: Server) -> None:
    token = issue(KEY, "+4915100000009")
    prefix, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["caller"] = CALLER
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert await refused(server.url("x", caller=None, token=f"{prefix}.{forged}.{signature}")) == 401


async def test_an_unsigned_caller_is_refused_whatever_else_is_right(server: Server) -> None:
    # The attack of the issue: ?caller= named another customer and read their order.
    assert await refused(plus_caller(server.url("x", caller=None), CALLER)) == 400
    assert await refused(plus_caller(server.url("x", caller=None, token=TOKEN), CALLER)) == 400
    assert await refused(plus_caller(server.url("x"), "+4915100000009")) == 400  # beside a signed token too


async def test_the_signed_callers_orders_are_the_ones_read(server: Server) -> None:
    async with connect(server.url("mine"), open_timeout=WAIT) as ws:
        assert "headphones" in replies(await turn(ws, {"data": RETURN_LINE}))
    # Someone else's token: the same words find nothing of CALLER's, and no return can be filed against it.
    async with connect(server.url("theirs", caller="+4915100000009"), open_timeout=WAIT) as ws:
        events = await turn(ws, {"data": RETURN_LINE})
        events += await turn(ws, {"data": "yes"})
    assert "headphones" not in replies(events)
    assert rows(server.db, "returns") == []


async def test_the_shared_token_opens_a_session_with_no_caller(server: Server) -> None:
    async with connect(
        server.url("crm", caller=None), open_timeout=WAIT, additional_headers={"Authorization": f"Bearer {TOKEN}"}
    ) as ws:
        events = await turn(ws, {"data": RETURN_LINE})
    assert events[-1]["event"] == "done" and "headphones" not in replies(events)


async def test_without_secrets_only_this_machine_by_a_loopback_name(tmp_path: Path) -> None:
    async with serving(tmp_path, WebConfig()) as server:
        async with connect(server.url("local", caller=None), open_timeout=WAIT) as ws:
            assert (await turn(ws, {"data": RETURN_LINE}))[-1]["event"] == "done"
        # A name rebound to 127.0.0.1 (DNS rebinding): the browser would call it the page's own origin.
        port = int(server.base.rpartition(":")[2])
        rebound = server.url("x", caller=None).replace("127.0.0.1", "evil.example")
        origin = f"http://evil.example:{port}"
        assert await refused(rebound, host="127.0.0.1", port=port, origin=origin) == 403
        assert await refused(server.url("x", caller=None), origin="http://evil.example") == 403
        assert await refused(plus_caller(server.url("x", caller=None), "+4930555555")) == 400


async def test_what_it_cannot_take_gets_an_error_frame(tmp_path: Path) -> None:
    async with serving(tmp_path, replace(LOCKED, max_message_chars=100)) as server:
        async with connect(server.url("limits"), open_timeout=WAIT, max_size=None) as ws:
            await ws.send(b"\x00\x01binary")
            assert "binary" in json.loads(await asyncio.wait_for(ws.recv(), WAIT))["error"]
            events = await turn(ws, {"data": "x" * 200})
            assert len(events) == 1 and "too long" in events[0]["error"]
            assert (await turn(ws, {"data": RETURN_LINE}))[-1]["event"] == "done"  # still usable
            await ws.send("y" * (MAX_FRAME_BYTES + 1))  # not even read: closed as too big
            with pytest.raises(ConnectionClosed):
                async with asyncio.timeout(WAIT):
                    while True:
                        await ws.recv()
        assert ws.close_code == 1009


async def test_messages_beyond_the_rate_get_an_error_frame(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, replace(LOCKED, messages_per_minute=2)) as server,
        connect(server.url("rate"), open_timeout=WAIT) as ws,
    ):
        errors = [(await turn(ws, {"text": "not data"}))[0]["error"] for _ in range(3)]
    assert "data" in errors[0] and "data" in errors[1]
    assert "too many messages" in errors[2]


async def test_open_sockets_are_bounded(tmp_path: Path) -> None:
    async with serving(tmp_path, replace(LOCKED, max_sockets=1)) as server:
        async with connect(server.url("first"), open_timeout=WAIT):
            assert await refused(server.url("second")) == 503
        async with asyncio.timeout(WAIT):  # the first one's slot comes back when it closes
            while True:
                try:
                    async with connect(server.url("third"), open_timeout=WAIT) as ws:
                        assert (await turn(ws, {"data": RETURN_LINE}))[-1]["event"] == "done"
                        break
                except InvalidStatus:
                    await asyncio.sleep(0.05)


async def test_repeated_wrong_tokens_are_slowed(server: Server) -> None:
    statuses = [await refused(server.url("x", caller=None, token=f"guess-{n:016d}")) for n in range(6)]
    assert statuses[:5] == [401] * 5 and statuses[5] == 429
    # The right token from the same address now waits too: the guesser cannot tell a hit.
    assert await refused(server.url("x")) == 429
