"""A call opens no network connection except to the configured LLM server (audited with sys.addaudithook)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from callcenter.app import open_app
from callcenter.config import Config, LLMConfig
from harness.fake_ollama import FakeOllama, Reply

CALLER = "+44 20 7946 0321"
# Audit hooks cannot be removed: the one hook records only while a test holds `recording`.
_destinations: list[Any] = []
_lookups: list[Any] = []
_recording: list[bool] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _recording:
        return
    if event == "socket.connect":
        _destinations.append(args[1])
    elif event == "socket.getaddrinfo":  # a name lookup is traffic too (DNS)
        _lookups.append(args[0])


sys.addaudithook(_audit)


@contextmanager
def recording() -> Iterator[list[Any]]:
    _destinations.clear()
    _lookups.clear()
    _recording.append(True)
    try:
        yield _destinations
    finally:
        _recording.clear()


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    # Proxy variables from the machine running the tests would redirect httpx; the test is about our code.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_the_audit_hook_sees_connections() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        with recording() as seen, socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    assert seen == [("127.0.0.1", port)]


async def whole_call(app: Any) -> list[str]:
    """A caller returns the headphones, then buys a charger, then asks for a person."""
    session = app.session("net-call", CALLER)
    replies = [
        await session.complete(line)
        for line in (
            "I want to return the headphones I bought last week",
            "yes",
            "I'd like to buy a new phone charger.",
            "yes",
            "Can I speak to a person please?",
        )
    ]
    assert session.escalated()
    return replies


async def test_offline_call_connects_nowhere(tmp_path: Path) -> None:
    config = Config(llm=LLMConfig(provider="offline", host="http://127.0.0.1:9"), database=str(tmp_path / "shop.db"))
    with recording() as seen:
        app = await open_app(config)
        try:
            app.shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=6)
            replies = await whole_call(app)
        finally:
            app.close()
    assert any("return is registered" in r for r in replies) and any("order is placed" in r for r in replies)
    assert seen == [] and _lookups == []


def polite_model(body: dict) -> Reply:
    """Hands over to sales and searches; the search result's say line is the reply."""
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    if "search_products" not in tools:
        return Reply(tool_calls=[("navigate_to_sales", {})])
    return Reply(tool_calls=[("search_products", {"query": "phone charger"})])


@pytest.mark.parametrize("provider", ["ollama", "auto"])
async def test_ollama_call_connects_only_to_the_llm_host(tmp_path: Path, provider: str) -> None:
    async with FakeOllama(polite_model) as server:
        port = int(server.url.rsplit(":", 1)[1])
        # The phrases alone (no classifier): words they are unsure of go to the model.
        llm = replace(LLMConfig(), provider=provider, host=server.url, timeout=5.0, triage_classifier=False)
        with recording() as seen:
            app = await open_app(Config(llm=llm, database=str(tmp_path / "shop.db")))
            try:
                session = app.session("net-llm", CALLER)
                # Words the router is not sure of (Agent.router): the model hands over, and sales' likely lookup
                # searches them (Session._likely_lookup).
                reply = await session.complete("Is there a USB-C phone charger?")
            finally:
                app.close()
    assert reply.startswith("We have the USB-C phone charger") and session.get_agent_name() == "sales"
    assert [r["messages"][-1]["content"] for r in server.requests] == ["Is there a USB-C phone charger?"]
    assert seen and set(seen) == {("127.0.0.1", port)}
    assert set(_lookups) <= {"127.0.0.1"}


async def test_the_supervisor_page_connects_nowhere(tmp_path: Path) -> None:
    """Serving the page, its files, past calls, health and the live feed: only its own listener is reached, and
    the page loads nothing from another host (its files name no URL but SVG's namespace)."""
    from aiohttp.test_utils import TestClient, TestServer

    from callcenter.call_records import CallRecord, CallRecords
    from callcenter.config import SupervisorConfig
    from callcenter.supervisor import LiveCalls, Sources, supervisor_app
    from callcenter.supervisor.routes import STATIC

    app = await open_app(Config(llm=LLMConfig(provider="offline"), database=str(tmp_path / "shop.db")))
    records = CallRecords(tmp_path / "calls.db")
    records.save(
        CallRecord(
            "net-past",
            CALLER,
            "shop",
            1.0,
            61.0,
            "completed",
            transcript=[{"at": 2.0, "who": "caller", "text": "my card is 4111 1111 1111 1111"}],
        )
    )
    live = LiveCalls()
    page = supervisor_app(
        SupervisorConfig(token="no-network-token-123"), Sources(live, records, app.shop, lambda: {"state": "serving"})
    )
    headers = {"Authorization": "Bearer no-network-token-123"}
    try:
        async with TestClient(TestServer(page, host="127.0.0.1")) as client:
            with recording() as seen:
                for path in (
                    "/",
                    "/static/app.js",
                    "/static/style.css",
                    "/api/calls",
                    "/api/call?id=net-past",
                    "/api/health",
                ):
                    assert (await client.get(path, headers=headers)).status == 200, path
                ws = await client.ws_connect("/api/live", headers=headers)
                assert (await ws.receive_json(timeout=5))["event"] == "snapshot"
                await ws.close()
            port = client.port
    finally:
        await live.close()
        records.close()
        app.close()
    assert seen and set(seen) == {("127.0.0.1", port)}
    assert set(_lookups) <= {"127.0.0.1"}
    for name in ("index.html", "app.js", "style.css"):
        text = (STATIC / name).read_text().replace('"http://www.w3.org/2000/svg"', "")
        assert "http://" not in text and "https://" not in text, name


async def test_redaction_records_and_metrics_connect_nowhere(tmp_path: Path) -> None:
    # phonenumbers and python-stdnum read their tables from the installed package, lazily: first use is here.
    from callcenter.call_records import CallRecord, CallRecords
    from callcenter.metrics import TelephonyCollector, VoiceMetrics
    from callcenter.redact import redact
    from telephony.endpoint import EndpointConfig, SipEndpoint
    from telephony.sip_call import SipCall

    async def no_calls(call: SipCall) -> None:  # the endpoint is never started
        raise AssertionError("no call was expected")

    with recording() as seen:
        masked = [
            redact(f"call me on {number}", region)
            for number, region in (
                ("+1 415 555 2671", "DE"),
                ("020 7946 0018", "GB"),
                ("0151 23456789", "DE"),
                ("415 555 2671", "US"),
            )
        ]
        records = CallRecords(tmp_path / "calls.db", redaction=redact)
        records.save(
            CallRecord(
                "c1",
                CALLER,
                "shop",
                1.0,
                2.0,
                "completed",
                transcript=[{"at": 0.0, "who": "caller", "text": "card 4111 1111 1111 1111"}],
            )
        )
        stored = records.get("c1")
        records.close()
        endpoint = SipEndpoint(EndpointConfig(listen_host="127.0.0.1", listen_port=0), no_calls)
        metrics = VoiceMetrics()
        metrics.registry.register(TelephonyCollector(endpoint))
        page = metrics.exposition()
    assert all("*" in text for text in masked) and stored and "4111" not in stored.transcript[0]["text"]
    assert b"voiceswarm_sip_requests_received_total" in page
    assert seen == [] and _lookups == []


async def test_an_order_over_http_connects_only_to_the_shops_host(oscar_shop: Any, tmp_path: Path) -> None:
    """[shop.http] (the reference oscar shop, harness/oscar.py): a purchase through the agents reaches the shop's
    host and port, and nothing else (no proxy, no DNS beyond the address)."""
    from callcenter.config import load_config
    from harness.oscar import TOKEN_ENV

    config = replace(
        load_config(oscar_shop.config_file(tmp_path), {TOKEN_ENV: oscar_shop.token}), database=str(tmp_path / "l.db")
    )
    with recording() as seen:
        app = await open_app(config)
        try:
            session = app.session("net-http-shop", CALLER)
            await session.complete("I'd like to buy a new phone charger.")
            reply = await session.complete("yes")
        finally:
            app.close()
    assert reply.startswith("Your order is placed.")
    assert seen and set(seen) == {("127.0.0.1", oscar_shop.port)}
    assert set(_lookups) <= {"127.0.0.1"}
