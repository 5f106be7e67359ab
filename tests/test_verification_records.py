"""Issue 29's security questions after the call: the attempts and outcomes in the call record, on the supervisor's
page and in /metrics, the caller's answer masked everywhere (offline router, a real shop, a real aiohttp server)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from callcenter.agents import SWARM, build_registry
from callcenter.call_records import CallRecord, CallRecords
from callcenter.config import SupervisorConfig
from callcenter.metrics import VoiceMetrics
from callcenter.shop import Order, Shop
from callcenter.supervisor import LiveCalls, Sources, supervisor_app
from callcenter.supervisor.views import shown
from callcenter.verification import MASKED_ANSWER, Verification, attempts
from swarm.events import AssistantText, Event, UserText
from swarm.session import Session

pytestmark = pytest.mark.timeout(30)

OWNER = "+4930555555"
STRANGER = "+442079460321"
POSTCODE = "80331"
WRONG = "10115"
TOKEN = "s3cret-supervisor-token"


@pytest.fixture
def shop(database_url: str) -> Iterator[Shop]:
    with Shop(database_url) as s:
        yield s


def session(shop: Shop, caller: str, call_id: str) -> Session:
    registry = build_registry(shop, {}, verification=Verification())
    return registry.session(call_id, SWARM, metadata={"caller": caller})


def spaced(digits: str) -> str:
    return " ".join(digits)


async def wrong_then_right(shop: Shop, call_id: str = "verified") -> tuple[Session, Order]:
    """A caller from another phone names the owner's order, says a wrong postcode, then the right one."""
    order = shop.seed_demo_order(OWNER, [("CB-140", 2)], days_ago=2, postcode=POSTCODE)
    caller = session(shop, STRANGER, call_id)
    await caller.complete(f"I want to return an item from my order {spaced(order.order_number)}")
    assert "doesn't match" in await caller.complete(f"The postcode is {spaced(WRONG)}.")
    assert (await caller.complete(f"It's {spaced(POSTCODE)}.")).startswith("I found your order")
    return caller, order


def record_of(caller: Session, call_id: str) -> CallRecord:
    record = CallRecord(call_id, STRANGER, "shop", 1_700_000_000.0, 1_700_000_060.0, "completed")
    record.transcript = transcript(caller.events)
    record.add_session_events("triage", caller.events)
    return record


def transcript(events: list[Event]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for n, event in enumerate(events):
        if isinstance(event, UserText):
            lines.append({"at": float(n), "who": "caller", "text": event.text})
        elif isinstance(event, AssistantText):
            lines.append({"at": float(n), "who": "agent", "text": event.text})
    return lines


def holds_an_answer(text: str) -> list[str]:
    return [answer for answer in (POSTCODE, WRONG, spaced(POSTCODE), spaced(WRONG)) if answer in text]


async def test_the_call_record_holds_a_failed_then_a_passed_attempt_masked(shop: Shop, tmp_path: Path) -> None:
    caller, order = await wrong_then_right(shop)
    record = record_of(caller, "verified")
    assert [(v["order_number"], v["outcome"], v["answer"]) for v in record.verifications] == [
        (order.order_number, "failed", MASKED_ANSWER),
        (order.order_number, "passed", MASKED_ANSWER),
    ]
    assert [v["turn"] for v in record.verifications] == [2, 3]  # after the caller's second and third lines
    # The tool calls hold the answer masked too; the caller's own words stay in the transcript as said.
    checked = [call["arguments"] for call in record.tool_calls if "verification" in call["arguments"]]
    assert [arguments["verification"] for arguments in checked] == [MASKED_ANSWER, MASKED_ANSWER]
    records = CallRecords(tmp_path / "calls.db")
    try:
        records.save(record)
        stored = records.get("verified")
        assert stored is not None and stored.verifications == record.verifications
        assert not holds_an_answer(json.dumps([stored.verifications, stored.tool_calls]))
    finally:
        records.close()


async def test_a_question_left_open_is_given_up_and_the_owner_is_never_asked(shop: Shop) -> None:
    order = shop.seed_demo_order(OWNER, [("CB-140", 1)], days_ago=2, postcode=POSTCODE)
    stranger = session(shop, STRANGER, "open")
    await stranger.complete(f"I want to return an item from my order {spaced(order.order_number)}")
    assert [v["outcome"] for v in attempts(stranger.events)] == ["gave_up"]
    # A wrong answer with tries left leaves the question open too; the third wrong one is a person, not open.
    await stranger.complete(f"It's {spaced(WRONG)}.")
    assert [v["outcome"] for v in attempts(stranger.events)] == ["failed", "gave_up"]
    await stranger.complete("It's 2 2 2 2 2.")
    await stranger.complete("It's 3 3 3 3 3.")
    assert [v["outcome"] for v in attempts(stranger.events)] == ["failed", "failed", "failed"]
    owner = session(shop, OWNER, "owner")
    assert order.order_number in (await owner.complete("I want to return my phone charger")).replace(" ", "")
    assert attempts(owner.events) == []


@contextlib.asynccontextmanager
async def supervisor_page(shop: Shop, records: CallRecords, *, masked: bool) -> AsyncIterator[TestClient]:
    live = LiveCalls(poll_s=0.01)
    sources = Sources(live, records, shop, lambda: {"state": "serving"}, masked=masked)
    async with TestClient(TestServer(supervisor_app(SupervisorConfig(token=TOKEN), sources))) as client:
        yield client
    await live.close()


# Unmasked: a page that shows callers' words in clear (privacy) still hides the answers.
@pytest.mark.parametrize("masked", [True, False])
async def test_the_supervisor_sees_the_attempts_never_the_answers(shop: Shop, tmp_path: Path, masked: bool) -> None:
    caller, order = await wrong_then_right(shop)
    records = CallRecords(tmp_path / "calls.db")
    records.save(record_of(caller, "verified"))
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(records.close)
        client = await stack.enter_async_context(supervisor_page(shop, records, masked=masked))
        response = await client.get(
            "/api/call", params={"id": "verified"}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert response.status == 200
        body = await response.text()
        call = json.loads(body)
        assert [(v["order_number"], v["outcome"], v["answer"]) for v in call["verifications"]] == [
            (order.order_number, "failed", MASKED_ANSWER),
            (order.order_number, "passed", MASKED_ANSWER),
        ]
        assert not holds_an_answer(body), body
        lines = [item for item in call["items"] if item["kind"] == "line"]
        # The caller's other words are shown; the two answers are masked, each in its place.
        assert f"my order {spaced(order.order_number)}" in lines[0]["text"]
        assert [line["text"] for line in lines if line["who"] == "caller"][1:] == [MASKED_ANSWER, MASKED_ANSWER]
        checks = [item for item in call["items"] if item["kind"] == "tool" and "verification" in item["arguments"]]
        assert [item["arguments"]["verification"] for item in checks] == [MASKED_ANSWER, MASKED_ANSWER]
        assert (call["caller"] == "•••0321") is masked


@pytest.mark.parametrize("published", ["before its check", "after its check"])
async def test_the_live_feed_never_shows_an_answer(shop: Shop, published: str) -> None:
    """The caller's answer is masked as its line is published, whether the page looks before or after the tool
    checked it; the caller's other lines are shown."""
    order = shop.seed_demo_order(OWNER, [("CB-140", 1)], days_ago=2, postcode=POSTCODE)
    caller = session(shop, STRANGER, "live")
    transcript = SimpleNamespace(lines=[], turns=[])
    conversation = SimpleNamespace(
        transcript=transcript, session=caller, state="listening", settings=SimpleNamespace(operator=None)
    )
    live = LiveCalls(poll_s=60.0)  # looked at by hand below
    live.add(SimpleNamespace(call_id="live", caller=STRANGER, called="shop"), conversation)  # type: ignore[arg-type]
    try:
        for text in (f"Return my order {spaced(order.order_number)}", f"It's {spaced(WRONG)}.", spaced(POSTCODE)):
            transcript.lines.append({"at": 0.0, "who": "caller", "text": text})
            if published == "before its check":
                live._update(live.calls["live"])
            reply = await caller.complete(text)
            live._update(live.calls["live"])
            transcript.lines.append({"at": 0.0, "who": "agent", "text": reply})
        assert reply.startswith("I found your order")
        items = live.calls["live"].view()["items"]
        feed = json.dumps(shown(items, masked=True))
        assert not holds_an_answer(feed), feed
        said = [item["text"] for item in items if item.get("who") == "caller"]
        assert said == [f"Return my order {spaced(order.order_number)}", MASKED_ANSWER, MASKED_ANSWER]
    finally:
        live.end("live", "completed")
        await live.close()


async def test_the_counter_on_metrics_moves_by_outcome(shop: Shop) -> None:
    metrics = VoiceMetrics()

    def scraped() -> dict[str, float]:
        families = text_string_to_metric_families(metrics.exposition().decode())
        return {
            s.labels["outcome"]: s.value
            for family in families
            for s in family.samples
            if s.name == "voiceswarm_verifications_total"
        }

    assert scraped() == {"passed": 0, "failed": 0, "gave_up": 0}  # every series from the start
    caller, _ = await wrong_then_right(shop)
    metrics.count_verifications(record_of(caller, "verified").verifications)
    assert scraped() == {"passed": 1, "failed": 1, "gave_up": 0}
    stranger = session(shop, STRANGER, "left")
    await stranger.complete("I want to return an item from my order 5 5 5 5 5")
    metrics.count_verifications(record_of(stranger, "left").verifications)
    assert scraped() == {"passed": 1, "failed": 1, "gave_up": 1}


# ---- no suffix matching: the call records find a caller by the whole number ------------------------------------

GERMAN, FRENCH = "+4930555555", "+33930555555"  # another country, the same last nine digits


def test_a_colliding_number_from_another_country_finds_none_of_the_callers_calls(database_url: str) -> None:
    records = CallRecords(database_url)
    try:
        for call_id, number, started in (("de", GERMAN, 1.0), ("fr", FRENCH, 2.0)):
            records.save(CallRecord(call_id, number, "shop", started, started + 1, "completed"))
        assert [r.call_id for r in records.calls_from(FRENCH)] == ["fr"]
        assert [r.call_id for r in records.calls_from("030 555555")] == ["de"]  # national, in the region
        assert [r.call_id for r in records.search(number="0033 9 30 55 55 55")] == ["fr"]
        assert [r.call_id for r in records.search(number=GERMAN)] == ["de"]
        # The last digits are no number: refused, not a search across countries; nine of them are a German
        # national number (+49 930 555555), nobody's here.
        with pytest.raises(ValueError, match="whole phone number"):
            records.search(number="5555")
        assert records.calls_from("5555") == []
        assert records.search(number="930555555") == [] and records.calls_from("930555555") == []
        # What the records kept before: the last nine digits, both calls under one key. Opening re-keys them.
        records.database.write(lambda conn: conn.execute("UPDATE calls SET caller_key = '930555555'"))
    finally:
        records.close()
    reopened = CallRecords(database_url)
    try:
        assert [r.call_id for r in reopened.calls_from(FRENCH)] == ["fr"]
        assert [r.call_id for r in reopened.search(number=GERMAN)] == ["de"]
    finally:
        reopened.close()
