"""A node draining (SIGTERM) with a call still live at the deadline: a real SIP caller (the built-in TestCaller,
with RTP both ways) is talking when the deadline comes; it hears nothing over its sentence, then the spoken
goodbye, then a BYE; the call record says the call was ended by the drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from callcenter.call_records import CallRecords
from callcenter.config import Config, LLMConfig, SipConfig, VoiceConfig
from callcenter.server import VoiceServer
from callcenter.testbed.dialer import TestCaller
from callcenter.voice import SpeechModels

pytestmark = pytest.mark.timeout(120)
DEADLINE_S = 2.0
# One breath, no comma: the caller's endpointer hears one utterance (~3.5 s of speech).
LINE = "I would like to know how long the delivery of the wireless headphones takes to Berlin"


async def test_at_the_deadline_a_talking_caller_hears_the_goodbye_after_their_sentence_then_bye(
    tmp_path: Path, speech: SpeechModels
) -> None:
    config = Config(
        llm=LLMConfig(provider="offline"),
        database=str(tmp_path / "shop.db"),
        sip=SipConfig(listen="127.0.0.1:0", no_media_timeout_s=30.0),
        voice=VoiceConfig(
            whisper_model="tiny.en",
            calls_database=str(tmp_path / "calls.db"),
            metrics_listen="",
            shutdown_deadline_s=DEADLINE_S,
        ),
    )
    caller = TestCaller(speech)
    caller.prepare(LINE)
    async with contextlib.AsyncExitStack() as node:
        server = await node.enter_async_context(VoiceServer(config, speech=speech))
        host, port = server.address
        async with caller.connected(f"sip:shop@{host}:{port}"):
            await caller.agent_turn()  # the greeting
            await server.drain()
            drained_at = time.monotonic()
            leaving = asyncio.create_task(node.aclose())  # what serve does after SIGTERM
            await asyncio.sleep(DEADLINE_S - 0.5)
            await caller.say(LINE)  # still talking at the deadline
            assert await caller.hung_up(30), "no BYE after the goodbye"
        await asyncio.wait_for(leaving, 30)
    exchange = caller.exchange
    said_from, said_to = exchange.spoken[-1]
    assert said_from < drained_at + DEADLINE_S < said_to
    # Nothing over the caller's sentence; then the goodbye, after the deadline.
    assert exchange.loudest(drained_at, said_to) < -50.0, exchange.levels[-200:]
    goodbye_at = exchange.first_sound(after=said_to)
    assert goodbye_at is not None and goodbye_at - said_to < 3.0
    assert exchange.end_reason == "remote_hangup"
    heard = exchange.heard().lower()
    assert "call again" in heard, exchange.lines
    records = CallRecords(tmp_path / "calls.db")
    try:
        [record] = records.recent()
    finally:
        records.close()
    assert record.end_reason == "drained" and record.disposition == "completed"
    agent = [line["text"] for line in record.transcript if line["who"] == "agent"]
    assert agent == [config.voice.greeting, config.voice.drain_goodbye]  # the sentence cut by the drain is not answered
