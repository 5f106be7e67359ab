"""The supervisor's page in milliseconds: its config rules, its token on every route, past-call search and
detail, and the live feed of a Conversation running on fakes (tests/voice_fakes.py) over a real WebSocket.
The page in a real browser, with a real SIP call, is tests/test_supervisor_browser.py."""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from aiohttp import WSMsgType, WSServerHandshakeError
from aiohttp.test_utils import TestClient, TestServer

from callcenter.app import App, open_app
from callcenter.call_records import CallRecord, CallRecords
from callcenter.config import (
    Config,
    ConfigError,
    LLMConfig,
    SupervisorConfig,
    load_config,
)
from callcenter.conversation import Conversation, Transcript, VoiceSettings
from callcenter.supervisor import LiveCalls, Sources, supervisor_app
from callcenter.supervisor.auth import COOKIE
from callcenter.supervisor.routes import STATIC
from tests.voice_fakes import (
    Caller,
    FakeCall,
    FakeEndpointer,
    FakeSynthesizer,
    FakeTranscriber,
    running,
    until,
)

pytestmark = pytest.mark.timeout(30)

TOKEN = "s3cret-supervisor-token"
CALLER = "+442079460321"
CARD = "4111 1111 1111 1111"
OPERATOR = "7000"


# ---- config -------------------------------------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "voiceswarm.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("listen", ["0.0.0.0:9461", "[::]:9461", "192.168.1.20:9461", "supervisor.example.com:9461"])
def test_no_open_page_beyond_loopback(tmp_path: Path, listen: str) -> None:
    with pytest.raises(ConfigError, match=r"supervisor\.token"):
        load_config(write(tmp_path, f'[supervisor]\nlisten = "{listen}"\n'), {})
    config = load_config(
        write(tmp_path, f'[supervisor]\nlisten = "{listen}"\n'), {"VOICESWARM_SUPERVISOR_TOKEN": TOKEN}
    )
    assert config.supervisor.token == TOKEN


@pytest.mark.parametrize("listen", ["127.0.0.1:9461", "localhost:9461", "[::1]:9461"])
def test_loopback_page_may_go_without_a_token(tmp_path: Path, listen: str) -> None:
    assert load_config(write(tmp_path, f'[supervisor]\nlisten = "{listen}"\n'), {}).supervisor.listen == listen


def test_page_is_off_by_default_and_a_short_token_is_refused(tmp_path: Path) -> None:
    assert Config().supervisor.listen == ""
    with pytest.raises(ConfigError, match=r"supervisor\.token is too short"):
        load_config(write(tmp_path, '[supervisor]\nlisten = "0.0.0.0:9461"\ntoken = "1234"\n'), {})
    with pytest.raises(ConfigError, match=r"supervisor\.listen"):
        load_config(write(tmp_path, '[supervisor]\nlisten = "9461"\n'), {})


# ---- the page, on fakes -------------------------------------------------------------------------------------


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    app = await open_app(Config(llm=replace(LLMConfig(), provider="offline"), database=str(tmp_path / "shop.db")))
    yield app
    app.close()


@dataclass
class Page:
    client: TestClient
    live: LiveCalls
    records: CallRecords

    async def get(self, path: str, **options: Any) -> Any:
        response = await self.client.get(path, headers={"Authorization": f"Bearer {TOKEN}"}, **options)
        assert response.status == 200, await response.text()
        return await response.json()


async def open_page(app: App, tmp_path: Path, *, masked: bool = True, region: str = "DE") -> AsyncIterator[Page]:
    records = CallRecords(tmp_path / "calls.db")
    live = LiveCalls(poll_s=0.01)
    sources = Sources(
        live,
        records,
        app.shop,
        lambda: {"state": "serving", "active_calls": len(live.calls)},
        masked=masked,
        region=region,
    )
    async with TestClient(TestServer(supervisor_app(SupervisorConfig(token=TOKEN), sources))) as client:
        yield Page(client, live, records)
    await live.close()
    records.close()


@pytest.fixture
async def page(app: App, tmp_path: Path) -> AsyncIterator[Page]:
    async for opened in open_page(app, tmp_path):
        yield opened


def record(
    call_id: str,
    caller: str = CALLER,
    *,
    started: float = 1_700_000_000.0,
    disposition: str = "completed",
    **fields: Any,
) -> CallRecord:
    return CallRecord(call_id, caller, "shop", started, started + 60, disposition, **fields)


ROUTES = [
    ("GET", "/"),
    ("GET", "/static/app.js"),
    ("GET", "/api/calls"),
    ("GET", "/api/call?id=past-1"),
    ("GET", "/api/recording?id=past-1"),
    ("GET", "/api/health"),
    ("POST", "/api/hand-over?id=call-1"),
    ("POST", "/api/hang-up?id=call-1"),
    ("GET", "/api/live"),
]
WRONG = [
    {},
    {"headers": {"Authorization": "Bearer wrong-token-wrong-token"}},
    {"headers": {"Authorization": "Basic " + base64.b64encode(b"admin:wrong-token").decode()}},
    {"headers": {"Authorization": "Basic !!not base64"}},
    {"params": {"token": "wrong-token-wrong-token"}},
    {"cookies": {COOKIE: "wrong"}},
    {"headers": {"Authorization": f"Bearer {TOKEN[:-1]}"}},
]


@pytest.mark.parametrize("method,path", ROUTES)
async def test_every_route_is_401_and_serves_nothing_without_the_token(app, page, tmp_path, method, path) -> None:
    recording = tmp_path / "past-1.wav"
    recording.write_bytes(b"RIFF-secret-audio")
    page.records.save(
        record("past-1", transcript=[{"at": 1.0, "who": "caller", "text": "my secret words"}], recording=str(recording))
    )
    line = Line(app)
    page.live.add(line.call, line.conversation)
    for options in WRONG:
        page.client.session.cookie_jar.clear()
        response = await page.client.request(method, path, **options)
        body = await response.text()
        assert response.status == 401, (options, body)
        assert response.headers["WWW-Authenticate"].startswith("Basic")
        assert "Content-Security-Policy" in response.headers
        assert "secret" not in body and CALLER[-4:] not in body and "call-1" not in body
    assert line.call.transfers == [] and not line.call.closed.is_set()  # neither button did anything
    page.live.end("call-1", "completed")
    line.call.hang_up_remote()


async def test_the_live_feed_refuses_a_wrong_token_before_the_upgrade(page) -> None:
    for options in WRONG:
        page.client.session.cookie_jar.clear()
        if "cookies" in options:  # ws_connect takes no cookies=: the header then
            options = {"headers": {"Cookie": "; ".join(f"{k}={v}" for k, v in options["cookies"].items())}}
        with pytest.raises(WSServerHandshakeError) as refused:
            await page.client.ws_connect("/api/live", **options)
        assert refused.value.status == 401, options


async def test_the_token_opens_the_page_in_any_of_its_forms(page) -> None:
    basic = base64.b64encode(f"supervisor:{TOKEN}".encode()).decode()
    for headers in ({"Authorization": f"Bearer {TOKEN}"}, {"Authorization": f"Basic {basic}"}):
        response = await page.client.get("/api/health", headers=headers)
        assert response.status == 200 and (await response.json())["state"] == "serving"
    # A link with ?token= leaves it in a cookie, out of the address bar; the cookie then opens everything.
    response = await page.client.get(f"/?token={TOKEN}", allow_redirects=False)
    assert response.status == 302 and response.headers["Location"] == "/"
    cookie = response.cookies[COOKIE]
    assert cookie.value == TOKEN and cookie["httponly"] and cookie["samesite"] == "Strict"
    response = await page.client.get("/", cookies={COOKIE: TOKEN})
    html = await response.text()
    assert response.status == 200 and '<script src="/static/app.js"' in html
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
    ws = await page.client.ws_connect(f"/api/live?token={TOKEN}")
    assert (await ws.receive_json(timeout=5))["event"] == "snapshot"
    await ws.close()


async def test_a_page_without_a_token_answers_only_to_its_loopback_names(app, tmp_path) -> None:
    records = CallRecords(tmp_path / "calls.db")
    sources = Sources(LiveCalls(), records, app.shop, lambda: {"state": "serving"})
    async with TestClient(TestServer(supervisor_app(SupervisorConfig(), sources), host="127.0.0.1")) as client:
        for host, status in (
            ("127.0.0.1:9461", 200),
            ("localhost:9461", 200),
            ("[::1]:9461", 200),
            ("rebound.example:9461", 403),
            ("10.0.0.5", 403),
        ):
            response = await client.get("/api/health", headers={"Host": host})
            assert response.status == status, host
    records.close()


async def test_buttons_from_another_sites_page_are_refused(app, page) -> None:
    line = Line(app)
    page.live.add(line.call, line.conversation)
    response = await page.client.post(
        "/api/hang-up?id=call-1", headers={"Origin": "http://evil.example", "Cookie": f"{COOKIE}={TOKEN}"}
    )
    assert response.status == 403 and not line.call.closed.is_set()
    page.live.end("call-1", "completed")
    line.call.hang_up_remote()


async def test_past_calls_by_number_date_and_disposition(page) -> None:
    day = 1_700_000_000.0
    page.records.save(record("a", CALLER, started=day))
    page.records.save(record("b", "0044 20 7946 0321", started=day + 3600, disposition="transferred"))  # 00 for +
    page.records.save(record("c", "+14155550123", started=day + 86_400, disposition="failed"))

    async def ids(**query: str) -> list[str]:
        return [call["call_id"] for call in (await page.get("/api/calls", params=query))["calls"]]

    assert await ids() == ["c", "b", "a"]
    assert await ids(number="+44 20 7946 0321") == ["b", "a"]
    assert await ids(number="+1 415 555 0123") == ["c"]
    assert await ids(since=str(day), until=str(day + 86_400)) == ["b", "a"]
    assert await ids(disposition="failed") == ["c"]
    assert await ids(number="+442079460321", disposition="transferred") == ["b"]
    assert await ids(number="+49 30 555555") == []
    # The last digits alone are no number: they would find other countries' callers too (issue 29).
    for bad in (
        {"disposition": "lost"},
        {"since": "yesterday"},
        {"limit": "many"},
        {"number": "Smith"},
        {"number": "0321"},
    ):
        response = await page.client.get("/api/calls", params=bad, headers={"Authorization": f"Bearer {TOKEN}"})
        assert response.status == 400 and "disposition=" in (await response.json())["error"]
    # Numbers are shown masked: the last digits only.
    assert [call["caller"] for call in (await page.get("/api/calls"))["calls"]] == ["•••0123", "•••0321", "•••0321"]


async def test_a_past_call_has_its_transcript_tools_rows_and_latencies(app, page, tmp_path) -> None:
    order = app.shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=2, idempotency_key="past")
    returned = app.shop.create_return(order.order_number, "HP-100", 1, "it broke", "past-return")
    session = app.session("past-2", CALLER)
    await session.complete("I want to return the headphones I bought last week")
    transcript = [
        {"at": 1.0, "who": "agent", "text": "Hello."},
        {"at": 2.0, "who": "caller", "text": f"My card is {CARD}, I want to return the headphones"},
        {"at": 3.0, "who": "agent", "text": "Found it."},
    ]
    past = record(
        "past-2", transcript=transcript, turns=[{"stt_s": 0.4, "llm_s": 0.5, "tts_s": 0.2, "voice_to_voice_s": 1.1}]
    )
    past.add_session_events("triage", session.events)
    past.returns, past.orders = [returned.return_number], [order.order_number]
    page.records.save(past)
    call = await page.get("/api/call", params={"id": "past-2"})
    kinds = [(item["kind"], item.get("who") or item.get("name")) for item in call["items"]]
    # The tool calls come after the caller's line that led to them, before the agent's answer.
    assert kinds[:2] == [("line", "agent"), ("line", "caller")] and kinds[-1] == ("line", "agent")
    assert {name for kind, name in kinds[2:-1]} >= {"navigate_to_refund", "find_order"}, kinds
    assert CARD not in str(call) and "I want to return the headphones" in call["items"][1]["text"]
    assert call["caller"] == "•••0321"
    assert (
        call["order_rows"][0]["order_number"] == order.order_number
        and call["order_rows"][0]["lines"][0]["sku"] == "HP-100"
    )
    assert call["return_rows"][0]["return_number"] == returned.return_number
    assert call["return_rows"][0]["reason"] == "it broke"
    assert call["turns"][0]["voice_to_voice_s"] == 1.1 and call["recording"] is False
    response = await page.client.get("/api/call", params={"id": "nobody"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status == 404


async def test_national_numbers_are_masked_as_written_in_the_configured_region(app, tmp_path) -> None:
    async for page in open_page(app, tmp_path, region="GB"):
        page.records.save(record("uk", transcript=[{"at": 1.0, "who": "caller", "text": "call me on 020 7946 0321"}]))
        text = (await page.get("/api/call", params={"id": "uk"}))["items"][0]["text"]
        assert "7946" not in text and text.startswith("call me on "), text


async def test_unmasked_when_configured(app, tmp_path) -> None:
    async for page in open_page(app, tmp_path, masked=False):
        page.records.save(record("raw", transcript=[{"at": 1.0, "who": "caller", "text": f"card {CARD}"}]))
        call = await page.get("/api/call", params={"id": "raw"})
        assert call["caller"] == CALLER and call["items"][0]["text"] == f"card {CARD}"


async def test_the_recording_is_served_when_its_file_exists(page, tmp_path) -> None:
    wav = tmp_path / "rec.wav"
    wav.write_bytes(b"RIFF....WAVEfmt ")
    page.records.save(record("with", recording=str(wav)))
    page.records.save(record("gone", recording=str(tmp_path / "deleted.wav")))
    page.records.save(record("none"))
    assert (await page.get("/api/call", params={"id": "with"}))["recording"] is True
    response = await page.client.get(
        "/api/recording", params={"id": "with"}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert response.status == 200 and await response.read() == wav.read_bytes()
    for call_id in ("gone", "none", "unknown"):
        response = await page.client.get(
            "/api/recording", params={"id": call_id}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert response.status == 404


# ---- the live feed ------------------------------------------------------------------------------------------


class Line:
    """One call on fakes, as in tests/test_conversation.py."""

    def __init__(self, app: App, operator: str | None = OPERATOR) -> None:
        self.call = FakeCall(speed=40.0)
        self.endpointer, self.transcriber = FakeEndpointer(), FakeTranscriber()
        self.session = app.session(self.call.call_id, CALLER)
        self.conversation = Conversation(
            self.call,
            self.session,
            self.endpointer,
            self.transcriber,
            FakeSynthesizer(),
            VoiceSettings(operator=operator, reprompt_after_s=30.0),
        )
        self.caller = Caller(self.call, self.endpointer, self.transcriber)


async def events_until(ws: Any, predicate: Any, seen: list[dict[str, Any]], timeout_s: float = 5.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            message = await ws.receive(timeout=deadline - time.monotonic())
        except TimeoutError:
            break
        assert message.type == WSMsgType.TEXT, message
        event = message.json()
        seen.append(event)
        if predicate(event):
            return event
    raise AssertionError(f"not within {timeout_s} s; seen {seen}")


async def test_the_feed_shows_a_call_as_it_happens_and_when_it_ends(app, page) -> None:
    ws = await page.client.ws_connect("/api/live", headers={"Authorization": f"Bearer {TOKEN}"})
    seen: list[dict[str, Any]] = []
    assert (await events_until(ws, lambda e: True, seen))["calls"] == []
    line = Line(app)
    async with running(line.conversation) as call:
        page.live.add(line.call, line.conversation)
        new = await events_until(ws, lambda e: e["event"] == "call", seen)
        assert new["call"]["caller"] == "•••0321" and new["call"]["agent"] == "triage" and new["call"]["can_hand_over"]
        await events_until(ws, lambda e: e["event"] == "item" and e["item"].get("who") == "agent", seen)
        await events_until(
            ws, lambda e: e["event"] == "state" and e["state"] == "listening", seen
        )  # the greeting's end
        await line.caller.say(f"I'd like to buy a new phone charger. My card is {CARD}.")
        await events_until(ws, lambda e: e["event"] == "turn", seen)
        await until(lambda: call.done() or line.conversation.state == "listening", what="the turn played")
        late = await page.client.ws_connect("/api/live", headers={"Authorization": f"Bearer {TOKEN}"})
        snapshot = await late.receive_json(timeout=5)
        await late.close()
    page.live.end(line.call.call_id, call.result())
    await events_until(ws, lambda e: e["event"] == "ended", seen)
    items = [e["item"] for e in seen if e["event"] == "item"]
    said = [(item["who"], item["text"]) for item in items if item["kind"] == "line"]
    assert said[0] == ("agent", VoiceSettings.greeting)
    assert any(who == "caller" and "phone charger" in text for who, text in said), said
    tools = [item["name"] for item in items if item["kind"] == "tool"]
    assert "navigate_to_sales" in tools and "search_products" in tools
    assert {"event": "agent", "call_id": "call-1", "agent": "sales"} in seen
    assert any(e["event"] == "state" and e["state"] == "agent speaking" for e in seen)
    turn = next(e["turn"] for e in seen if e["event"] == "turn")
    assert turn["stt_s"] is not None and turn["voice_to_voice_s"] is not None
    assert next(e for e in seen if e["event"] == "ended")["disposition"] == "completed"
    assert CARD not in str(seen)
    # A page that connects mid-call gets the whole call so far, numbered as the others saw it.
    late_call = snapshot["calls"][0]
    assert [i["n"] for i in late_call["items"]] == [i["n"] for i in items[: len(late_call["items"])]]
    assert late_call["agent"] == "sales" and len(late_call["turns"]) == 1
    await ws.close()


async def test_hand_over_is_the_keypad_0_transfer_and_end_call_hangs_up(app, page) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    line = Line(app)
    async with running(line.conversation) as call:
        page.live.add(line.call, line.conversation)
        response = await page.client.post("/api/hand-over", params={"id": "call-1"}, headers=headers)
        assert response.status == 200
        await until(call.done, what="the call handed over")
    page.live.end("call-1", call.result())
    assert line.call.transfers == [OPERATOR] and call.result() == "transferred"
    assert line.conversation.transcript.lines[-1]["text"] == VoiceSettings.handover
    response = await page.client.post("/api/hand-over", params={"id": "call-1"}, headers=headers)
    assert response.status == 409  # gone

    line = Line(app, operator=None)
    async with running(line.conversation) as call:
        page.live.add(line.call, line.conversation)
        response = await page.client.post("/api/hand-over", params={"id": "call-1"}, headers=headers)
        assert response.status == 409 and not call.done()  # nobody to hand over to: the call goes on
        response = await page.client.post("/api/hang-up", params={"id": "call-1"}, headers=headers)
        assert response.status == 200
        await until(call.done, what="the call ended")
    page.live.end("call-1", call.result())
    assert line.call.end_reason == "local_hangup" and line.call.transfers == []


async def test_sentences_the_caller_never_heard_leave_the_page() -> None:
    """A barge-in drops the unheard sentences from the transcript; the page is told to drop them too, and a new
    line is never mistaken for one that went."""
    transcript = Transcript()
    session = SimpleNamespace(events=[], get_agent_name=lambda: "triage")
    conversation = cast(  # only the fields LiveCalls reads
        Conversation,
        SimpleNamespace(transcript=transcript, session=session, state="listening", settings=VoiceSettings()),
    )
    live = LiveCalls(poll_s=60.0)
    live.add(SimpleNamespace(call_id="c", caller=CALLER, called="shop"), conversation)
    feed = contextlib.aclosing(live.watch())
    async with feed as events:
        assert (await anext(events))["calls"][0]["items"] == []
        for text in ("One.", "Two.", "Three."):
            transcript.add("agent", text)
        live._update(live.calls["c"])
        said = [await anext(events) for _ in range(3)]
        assert [e["item"]["text"] for e in said] == ["One.", "Two.", "Three."]
        transcript.lines = transcript.lines[:1]  # what Speaking.forget_unheard does (callcenter.call.speaking)
        transcript.add("caller", "Stop.")
        live._update(live.calls["c"])
        assert await anext(events) == {"event": "unsaid", "call_id": "c", "items": [1, 2]}
        assert (await anext(events))["item"] | {"at": 0} == {
            "kind": "line",
            "who": "caller",
            "text": "Stop.",
            "n": 3,
            "at": 0,
        }
        assert [item["text"] for item in live.calls["c"].view()["items"]] == ["One.", "Stop."]
        live.end("c", "completed")
        assert await anext(events) == {"event": "ended", "call_id": "c", "disposition": "completed"}
    await live.close()


def test_the_pages_script_never_parses_text_as_html() -> None:
    """What the browser test shows for one transcript, for every path of the script: no HTML parsing at all."""
    script = (STATIC / "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink
    assert "textContent" in script
