"""A real phone call buys from the reference shop (issue 24, "Done when"): a SIP caller (callcenter.testbed.dialer.TestCaller,
Piper's voice over RTP) calls the voice server configured for django-oscar (harness/oscar_shop/voiceswarm.toml), and
the order is read back through oscar's own REST API, not VoiceSwarm's tables.

The agents run on the offline router (`llm.provider = "offline"`, the reference config's): no LLM is loaded, so the
call's cost is the speech models (Whisper tiny.en, Piper, the VAD: the `speech` fixture) and the call itself, ~40 s
here. The shop is the session's one oscar (harness/oscar.py), copied fresh for the test.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from callcenter.config import SipConfig
from callcenter.server import VoiceServer
from callcenter.store.spoken import spoken_digits
from callcenter.testbed.dialer import CallerTiming, TestCaller
from callcenter.voice import SpeechModels
from harness.oscar import OscarShop
from tests.test_http_shop_oscar import CHARGER, oscar_config, product_id, stock
from tests.test_voice_e2e import record_of

pytestmark = pytest.mark.timeout(120)

CALLER = "+493090182077"  # the SIP caller ID; oscar stores it as given (E.164)
BUY = "I'd like to buy a phone charger."
YES = "Yes, please."


async def test_a_phone_call_buys_a_charger_and_the_order_is_in_oscar(
    oscar_shop: OscarShop, speech: SpeechModels, tmp_path: Path
) -> None:
    charger = product_id(oscar_shop, CHARGER)
    before = stock(oscar_shop, charger)
    assert oscar_shop.get("/admin/orders/") == []
    config = oscar_config(oscar_shop, tmp_path)
    assert config.shop_http is not None and config.llm.provider == "offline"
    config = replace(
        config,
        sip=SipConfig(listen="127.0.0.1:0", no_media_timeout_s=30.0),
        voice=replace(
            config.voice,
            whisper_model="tiny.en",
            calls_database=str(tmp_path / "calls.db"),
            metrics_listen="",
            shutdown_deadline_s=2.0,
        ),
    )
    caller = TestCaller(speech, caller_id=CALLER, timing=CallerTiming(turn_timeout_s=30.0))
    caller.prepare(BUY, YES)  # synthesized before the call: no CPU taken from the server's turns
    async with VoiceServer(config, speech=speech) as server:
        host, port = server.address
        async with caller.connected(f"sip:shop@{host}:{port}"):
            await caller.agent_turn()
            await caller.say(BUY)
            await caller.agent_turn()
            assert oscar_shop.get("/admin/orders/") == [], caller.exchange.lines  # offered and read back only
            await caller.say(YES)
            await caller.agent_turn()
        record = await record_of(server)
    # Oscar holds the order: one, of one charger, with the caller's number, and its stock dropped by one.
    orders = oscar_shop.get("/admin/orders/")
    assert len(orders) == 1, (orders, caller.exchange.lines)
    [order] = orders
    assert order["shipping_address"]["phone_number"] == CALLER
    [line] = oscar_shop.get(order["lines"])
    assert oscar_shop.get(line["product"])["upc"] == "CH-110" and line["quantity"] == 1, line
    assert stock(oscar_shop, charger) == before - 1
    # The call placed it, and the caller heard oscar's order number (read out digit by digit).
    assert record.caller == CALLER and record.orders == [order["number"]], record
    assert record.agents == ["triage", "sales"], record.agents
    heard = caller.exchange.heard().lower()
    assert "charger" in heard and "order number" in heard, caller.exchange.lines
    # Whisper tiny, hearing oscar's "1 0 0 0 0 1" read out, now and then writes one zero fewer ("10001"): a run
    # of one digit is compared as a run, the number's other digits as they are.
    said = spoken_digits(heard.partition("order number")[2])
    assert _runs(said).startswith(_runs(order["number"])), caller.exchange.lines


def _runs(digits: str) -> str:
    return re.sub(r"(\d)\1+", r"\1", digits)
