"""Whole phone calls with real parts: a real SIP caller (the built-in TestCaller, or sipp) speaks Piper
audio over RTP to a VoiceServer on 127.0.0.1, which hears it with Whisper, answers through the shop's
swarm and speaks back with Piper; the caller transcribes what it hears with Whisper.

The speech models are loaded once for the module, with Whisper tiny.en (base would add ~1 s per
utterance on this CPU; these tests check content, not accuracy or speed). The model behind the swarm is
either the offline router or a scripted model served over Ollama's wire protocol (tests/fake_ollama.py).
Every wait is bounded; assertions are on what was said, heard and stored, not on how fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from callcenter.call_records import CallRecord
from callcenter.config import Config, LLMConfig, SipConfig, VoiceConfig
from callcenter.conversation import VoiceSettings
from callcenter.redact import DIGIT_WORDS
from callcenter.server import VoiceServer
from callcenter.testbed.dialer import TestCaller
from callcenter.voice import SpeechModels
from harness.fake_ollama import FakeOllama, Reply
from harness.peers import Peers, sip_request

pytestmark = pytest.mark.timeout(150)

CALLER = "+442079460321"
RETURN_LINE = "I want to return the headphones I bought last week."
OPERATOR = "7000"


# ---- the parts ---------------------------------------------------------------------------------------------


@pytest.fixture
async def serve(tmp_path: Path, speech: SpeechModels) -> AsyncIterator[Callable[..., object]]:
    """serve(llm=LLMConfig(...), no_media_timeout_s=..., **VoiceConfig fields) -> a started VoiceServer on
    127.0.0.1:<free port> with a fresh shop (holding the caller's headphones order) and call records."""
    servers = contextlib.AsyncExitStack()

    async def start(
        llm: LLMConfig = LLMConfig(provider="offline"), *, no_media_timeout_s: float = 30.0, **voice: Any
    ) -> VoiceServer:
        config = Config(
            llm=llm,
            database=str(tmp_path / "shop.db"),
            sip=SipConfig(listen="127.0.0.1:0", no_media_timeout_s=no_media_timeout_s),
            voice=VoiceConfig(
                **{
                    "whisper_model": "tiny.en",
                    "calls_database": str(tmp_path / "calls.db"),
                    "metrics_listen": "",
                    "shutdown_deadline_s": 2.0,
                    **voice,
                }
            ),
        )
        server = await servers.enter_async_context(VoiceServer(config, speech=speech))
        server.app.shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=6)
        return server

    async with servers:
        yield start


class WatchedOllama(FakeOllama):
    """FakeOllama that also counts the chat requests whose client went away before the answer."""

    abandoned = 0

    async def _chat(self, request):  # aiohttp's handler
        try:
            return await super()._chat(request)
        except asyncio.CancelledError:
            self.abandoned += 1
            raise


def uri(server: VoiceServer) -> str:
    host, port = server.address
    return f"sip:shop@{host}:{port}"


def rows(server: VoiceServer, table: str) -> list[sqlite3.Row]:
    with contextlib.closing(sqlite3.connect(server.config.database)) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(f"SELECT * FROM {table}").fetchall()


async def record_of(server: VoiceServer, timeout_s: float = 20.0) -> CallRecord:
    """The call's record, written by the server once the call has ended on its side."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        records = server.records.recent(5)
        if records:
            assert len(records) == 1, [r.call_id for r in records]
            return records[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no call record within {timeout_s} s")


async def until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s} s")
        await asyncio.sleep(0.05)


def agent_lines(record: CallRecord) -> list[str]:
    """What the agents said; the acknowledgements of a slow answer ("One moment, please.") are not theirs."""
    return [line["text"] for line in record.transcript if line["who"] == "agent" and line.get("via") is None]


class Scrape:
    """One reading of /metrics (the Prometheus text format)."""

    def __init__(self, text: str) -> None:
        self.samples = [sample for family in text_string_to_metric_families(text) for sample in family.samples]

    def __call__(self, name: str, **labels: str) -> float:
        """The sample's value; KeyError names it when it is missing."""
        for sample in self.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
        raise KeyError(f"{name}{labels} is not on the page")

    def by(self, name: str, label: str) -> dict[str, float]:
        return {sample.labels[label]: sample.value for sample in self.samples if sample.name == name}


def closed_tcp_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---- scripted models, answering over Ollama's wire protocol ----------------------------------------------


def _tools(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def _last_tool_result(body: dict) -> dict:
    return json.loads([m for m in body["messages"] if m["role"] == "tool"][-1]["content"])


def refund_model(body: dict) -> Reply:
    """Triage hands over to refund, which finds the order, reads it back, and creates the return after yes."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(_last_tool_result(body)["say"])
    if "find_order" not in _tools(body):
        return Reply(tool_calls=[("navigate_to_refund", {})])
    if last["content"].lower().lstrip(" .,!").startswith("yes"):
        proposal = _last_tool_result(body)["proposal"]
        return Reply(tool_calls=[(proposal["tool"], {**proposal["arguments"], "confirmed": True})])
    return Reply(tool_calls=[("find_order", {"product": "headphones"})])


LONG_REPLY = [
    "Of course, I can help you with a return.",
    "Our returns policy is simple, and it covers everything you bought from us in the last thirty days.",
    "You will get a prepaid shipping label by email as soon as the return is registered.",
    "Please pack the item in its original box if you still have it, with all of its cables.",
    "The refund goes back to the card you paid with, usually within five working days.",
    "Gift cards and vouchers are refunded as store credit instead of money.",
]


def talkative_model(body: dict) -> Reply:
    """A long answer that hands over to refund at its end; refund then thinks for a long time. A second
    caller turn (the barge-in) gets a short answer."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    if len(users) >= 2:
        return Reply("All right, I am listening.")
    if "find_order" not in _tools(body):
        return Reply(" ".join(LONG_REPLY), tool_calls=[("navigate_to_refund", {})])
    return Reply("Let me look that up.", delay=60.0)  # still thinking when the caller interrupts


# ---- the two paths -----------------------------------------------------------------------------------------


async def test_return_call_through_ollama_wire_protocol(serve, speech) -> None:
    async with FakeOllama(refund_model) as model:
        # The model's steps over the wire: the router would take this plain return itself (llm.route_first).
        server = await serve(LLMConfig(provider="ollama", host=model.url, timeout=20.0, route_first=False))
        caller = TestCaller(speech, caller_id=CALLER)
        async with caller.connected(uri(server)):
            await caller.agent_turn()
            await caller.say(RETURN_LINE)
            await caller.agent_turn()
            assert rows(server, "returns") == []  # read back, not yet confirmed
            await caller.say("Yes.")
            await caller.agent_turn()
            if "catch that" in caller.exchange.lines[-1][1]:
                # Piper speaks afresh each run: a caller asked to repeat a short "Yes." says it again, as people do.
                await caller.say("Yes.")
                await caller.agent_turn()
        record = await record_of(server)
    returns = rows(server, "returns")
    assert len(returns) == 1 and returns[0]["sku"] == "HP-100", caller.exchange.lines
    heard = caller.exchange.heard().lower()
    assert "return" in heard and "registered" in heard, caller.exchange.lines
    assert record.agents == ["triage", "refund"]
    assert record.returns == [returns[0]["return_number"]]
    assert record.disposition == "completed" and record.caller == CALLER
    assert len(record.turns) == 2 and all(
        t["voice_to_voice_s"] is not None and t["stt_s"] is not None for t in record.turns
    ), record.turns
    # Each turn was transcribed from the caller's first pause, before the end of the turn was certain.
    assert all(t["early_transcript"] for t in record.turns), record.turns
    assert "voiceswarm_voice_to_voice_seconds_count 2.0" in server.metrics.exposition().decode()
    # The model heard the caller through Whisper.
    said = [m["content"].lower() for body in model.requests for m in body["messages"] if m["role"] == "user"]
    assert any("return" in text and "headphones" in text for text in said), said


async def test_buy_call_through_offline_router(serve, speech, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    metrics_port = closed_tcp_port()
    # Transcribed at the end of each turn only; /metrics served as in production.
    server = await serve(early_transcript_ms=0, metrics_listen=f"127.0.0.1:{metrics_port}")
    orders_before = len(rows(server, "orders"))
    caller = TestCaller(speech, caller_id=CALLER)
    async with caller.connected(uri(server)):
        await caller.agent_turn()
        await caller.say("I'd like to buy a new phone charger.")
        await caller.agent_turn()
        assert len(rows(server, "orders")) == orders_before  # offered and read back only
        await caller.say("Yes, please.")
        await caller.agent_turn()
    record = await record_of(server)
    orders = rows(server, "orders")
    assert len(orders) == orders_before + 1
    new = orders[-1]
    assert [r["sku"] for r in rows(server, "order_lines") if r["order_id"] == new["id"]] == ["CH-110"]
    assert record.agents == ["triage", "sales"] and record.orders == [new["order_number"]]
    assert len(record.turns) == 2 and not any(t["early_transcript"] for t in record.turns), record.turns
    heard = caller.exchange.heard().lower()
    assert "charger" in heard and "order" in heard, caller.exchange.lines
    # Privacy: at INFO and above, neither the caller's words nor their number; at DEBUG both, so this capture
    # would have seen them.
    info = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    debug = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
    said = [line["text"] for line in record.transcript if line["who"] == "caller"]
    assert len(said) == 2 and "event=call_answered" in info and "event=transcribed" in info
    for text in said:
        assert repr(text) in debug and text not in info, text
    assert CALLER in debug and CALLER[3:] not in info and f"caller=+{'*' * 10}21" in info
    # /metrics, read over HTTP from the live server, counts what this call did.
    async with aiohttp.ClientSession() as client, client.get(f"http://127.0.0.1:{metrics_port}/metrics") as page:
        assert page.status == 200 and page.content_type == "text/plain", page.headers
        metrics = Scrape(await page.text())
        async with client.get(
            f"http://127.0.0.1:{metrics_port}/metrics", headers={"Accept": "application/openmetrics-text"}
        ) as page:
            assert page.content_type == "application/openmetrics-text" and (await page.text()).endswith("# EOF\n")
    by_caller = record.end_reason == "remote_hangup"  # else the agent said goodbye and hung up
    received = {"INVITE": 1, "ACK": 1, "BYE": 1} if by_caller else {"INVITE": 1, "ACK": 1}
    assert metrics.by("voiceswarm_sip_requests_received_total", "method") == received
    assert metrics("voiceswarm_sip_responses_sent_total", method="INVITE", code="100") == 1
    assert metrics("voiceswarm_sip_responses_sent_total", method="INVITE", code="200") >= 1  # again until the ACK
    if by_caller:
        assert metrics("voiceswarm_sip_responses_sent_total", method="BYE", code="200") == 1
    else:
        assert metrics("voiceswarm_sip_requests_sent_total", method="BYE") == 1
        assert metrics("voiceswarm_sip_responses_received_total", method="BYE", code="200") == 1
    assert metrics("voiceswarm_sip_invites_received_total") == 1 and metrics("voiceswarm_sip_calls_active") == 0
    # RTP both ways at 50 packets a second, for a call of some seconds; its jitter counted once it ended.
    assert metrics("voiceswarm_rtp_packets_received_total") > 100 and metrics("voiceswarm_rtp_packets_sent_total") > 100
    assert 0 <= metrics("voiceswarm_rtp_packets_lost_total") < metrics("voiceswarm_rtp_packets_received_total") / 20
    assert metrics("voiceswarm_rtp_jitter_seconds_count") == 1
    assert metrics.by("voiceswarm_calls_total", "disposition") == {"completed": 1}


async def test_a_number_read_out_in_two_breaths_is_one_turn(serve, speech) -> None:
    server = await serve()
    caller = TestCaller(speech, caller_id=CALLER)
    async with caller.connected(uri(server)):
        await caller.agent_turn()
        await caller.say("My order number is four five")
        await asyncio.sleep(1.0)  # past the 500 ms that end a turn: the words say the number has only begun
        await caller.say("eight two one.")
        await caller.agent_turn()
    record = await record_of(server)
    said = [line["text"] for line in record.transcript if line["who"] == "caller"]
    assert len(said) == 1 and len(record.turns) == 1, said
    spoken = " ".join(DIGIT_WORDS.get(word, word) for word in said[0].lower().replace("-", " ").split())
    # Both breaths in the one line, in order. Whisper may mishear the single "eight" that opens the second
    # breath (CI heard "A"), so the check is on the digits on either side of it.
    assert re.search(r"45.?21", "".join(ch for ch in spoken if ch.isdigit())), said


def headphones_model(first_reply: str, delay_s: float) -> Callable[[dict[str, Any]], Reply]:
    """Answers the caller's last words after `delay_s`: `first_reply` to the sentence's first half, and a
    reply of its own to the whole."""

    def model(body: dict[str, Any]) -> Reply:
        users = [m["content"].lower() for m in body["messages"] if m["role"] == "user"]
        if "stop" in users[-1] and "headphones" in users[-1]:
            return Reply("I am sorry they broke so soon. I can help with that.", delay=delay_s)
        return Reply(first_reply, delay=delay_s)

    return model


async def said_in_two_halves(
    serve: Any, speech: Any, model: FakeOllama, between: Callable[[TestCaller], Awaitable[Any]]
) -> tuple[Any, TestCaller]:
    """A caller says "I want to return my headphones.", then `between`, then the rest of their sentence; the
    call answers the whole sentence once (asserted): its record, and the caller."""
    server = await serve(LLMConfig(provider="ollama", host=model.url, timeout=20.0, route_first=False))
    caller = TestCaller(speech, caller_id=CALLER)
    caller.prepare("I want to return my headphones.", "They stopped working after two days.")
    async with caller.connected(uri(server)):
        await caller.agent_turn()
        await caller.say("I want to return my headphones.")
        await between(caller)
        await caller.say("They stopped working after two days.")
        await caller.agent_turn()
    record = await record_of(server)
    said = [line["text"].lower() for line in record.transcript if line["who"] == "caller"]
    assert len(said) == 1 and "headphones" in said[0] and "stop" in said[0], said
    # The reply heard is the one to the whole sentence; the one to its first half is not in the record.
    agent = [text.lower() for text in agent_lines(record)][1:]
    assert agent == ["i am sorry they broke so soon.", "i can help with that."], agent
    return record, caller


async def test_a_caller_who_goes_on_before_the_reply_is_heard_is_answered_for_the_whole(serve, speech) -> None:
    # 2.5 s: time for the caller to go on before the reply is heard
    async with FakeOllama(headphones_model("Which headphones are they?", 2.5)) as model:
        record, caller = await said_in_two_halves(serve, speech, model, lambda _: asyncio.sleep(1.0))
    assert len(record.turns) == 1, record.turns
    heard = caller.exchange.heard().lower()
    assert "broke" in heard and "which" not in heard, caller.exchange.lines


async def test_a_caller_who_goes_on_over_the_replys_first_words_is_answered_for_the_whole(serve, speech) -> None:
    # At once, with a long first sentence: a caller still finishing theirs hears its first words.
    first = "Of course, I can help you with a return, just tell me a little more about them."

    async def hears_it_begin(caller: TestCaller) -> None:
        assert await caller.agent_speaking()  # "Of course, ..." reached the caller

    async with FakeOllama(headphones_model(first, 0.2)) as model:
        _, caller = await said_in_two_halves(serve, speech, model, hears_it_begin)
    # The first reply was taken back: nor does the model's history keep it.
    history = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "assistant"]
    assert not [text for text in history if "tell me a little more" in text], history
    assert "broke" in caller.exchange.heard().lower(), caller.exchange.lines


async def test_the_fixed_phrases_are_ready_before_the_first_call(serve, speech, caplog) -> None:
    server = await serve(greeting="Good morning, this is the warm-up test line.")
    caplog.set_level(logging.DEBUG, logger="speech.synthesizer")
    chunks = [chunk async for chunk in server.speech.synthesizer.synthesize_stream(server.service.settings.greeting)]
    assert chunks and not [r for r in caplog.records if "event=tts_piece" in r.getMessage()]


# ---- barge-in and hang-up ----------------------------------------------------------------------------------


async def test_barge_in_stops_the_agent_and_keeps_only_what_was_heard(serve, speech) -> None:
    async with WatchedOllama(talkative_model) as model:
        server = await serve(LLMConfig(provider="ollama", host=model.url, timeout=90.0, route_first=False))
        caller = TestCaller(speech, caller_id=CALLER)
        async with caller.connected(uri(server)):
            await caller.agent_turn()
            await caller.say("Can you tell me how returns work?")
            assert await caller.agent_speaking()
            talking_since = time.monotonic()
            # The long answer is queued and the hand-over ran; the refund agent is still thinking.
            await until(lambda: len(model.requests) >= 2, 60, "the refund agent's request")
            # Its first sentence (2.5 s) has been heard; its last (at ~25 s) is far off.
            await asyncio.sleep(max(0.0, talking_since + 4.0 - time.monotonic()))
            await caller.say("Sorry to interrupt, but I only want to return my headphones today.")
            await caller.agent_turn()
        record = await record_of(server)
    exchange = caller.exchange
    interrupted_at, interruption_ended = exchange.spoken[-1]
    # The agent was talking when the caller started, and quiet from shortly after until the caller stopped.
    assert exchange.loudest(interrupted_at - 1.0, interrupted_at) > -35.0
    assert interruption_ended - interrupted_at > 2.0
    assert exchange.loudest(interrupted_at + 1.5, interruption_ended) < -55.0
    # The refund agent's running completion was cancelled: its HTTP request was abandoned unanswered.
    assert model.abandoned == 1
    # The model's next request holds only what the caller heard of the long answer.
    last = model.requests[-1]["messages"]
    assistant = [m["content"] for m in last if m["role"] == "assistant" and m["content"]]
    heard_text = assistant[-1]
    assert heard_text.startswith(LONG_REPLY[0]) and LONG_REPLY[-1] not in heard_text, assistant
    # Its last words: the first ones are the ones a busy line garbles ("Sorry, Kevin, you're up" in one CI run).
    assert last[-1]["role"] == "user" and "headphones" in last[-1]["content"].lower(), last[-1]
    # So does the call record; the answer to the interruption was heard.
    said = agent_lines(record)
    assert LONG_REPLY[0] in said and LONG_REPLY[-1] not in said, said
    assert "All right, I am listening." in said, (said, exchange.lines)
    assert "listening" in exchange.heard().lower(), exchange.lines


async def test_caller_hanging_up_cancels_everything(serve, speech) -> None:
    async with WatchedOllama(talkative_model) as model:
        server = await serve(LLMConfig(provider="ollama", host=model.url, timeout=90.0, route_first=False))
        await asyncio.sleep(0.2)
        tasks_before = asyncio.all_tasks()
        threads_before = {thread.ident for thread in threading.enumerate()}
        caller = TestCaller(speech, caller_id=CALLER)
        async with caller.connected(uri(server)):
            await caller.agent_turn()
            await caller.say("Can you tell me how returns work?")
            assert await caller.agent_speaking()
            await until(lambda: len(model.requests) >= 2, 60, "the refund agent's request")
            # The caller hangs up while the agent talks and the model thinks.
        record = await record_of(server)
        await until(lambda: model.abandoned == 1, 10, "the model's request abandoned")

        def leftovers() -> list[asyncio.Task]:
            return [t for t in asyncio.all_tasks() - tasks_before if t is not asyncio.current_task()]

        with contextlib.suppress(AssertionError):
            await until(lambda: not leftovers(), 10, "tasks ending")
    assert leftovers() == []
    assert server.endpoint.calls == []
    # The models' pools (the end-of-turn model's too), asyncio's default executor, and tqdm's one monitor thread (faster-whisper starts it).
    shared = ("whisper", "piper", "asyncio_", "tqdm_monitor", "turn")
    extra = [t.name for t in threading.enumerate() if t.ident not in threads_before and not t.name.startswith(shared)]
    assert extra == []
    assert record.disposition == "completed" and record.end_reason == "remote_hangup"
    assert LONG_REPLY[-1] not in agent_lines(record)


# ---- the operator ------------------------------------------------------------------------------------------

_SIPP_CALL = """<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="{name}">
  <send retrans="500">
    <![CDATA[

      INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: "Sipp Caller" <sip:+4930123456@[local_ip]:[local_port]>;tag=[pid]SIPpTag09[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=user1 53655765 2353687637 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[local_ip_type] [local_ip]
      t=0 0
      m=audio [auto_media_port] RTP/AVP 0 101
      a=rtpmap:0 PCMU/8000
      a=rtpmap:101 telephone-event/8000
      a=fmtp:101 0-15

    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="200" rrs="true"/>
  <send>
    <![CDATA[

      ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: "Sipp Caller" <sip:+4930123456@[local_ip]:[local_port]>;tag=[pid]SIPpTag09[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>
{body}
  <recv request="BYE" timeout="40000"/>
  <send>
    <![CDATA[

      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
</scenario>
"""

_NOTIFY = """  <send retrans="500">
    <![CDATA[

      NOTIFY [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: "Sipp Caller" <sip:+4930123456@[local_ip]:[local_port]>;tag=[pid]SIPpTag09[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: {cseq} NOTIFY
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Max-Forwards: 70
      Event: refer
      Subscription-State: {state}
      Content-Type: message/sipfrag;version=2.0
      Content-Length: [len]

      SIP/2.0 {status}

    ]]>
  </send>
  <recv response="200"/>
"""

# Press 0 after the greeting has begun; take the REFER to the operator (Refer-To checked), report the
# transfer's progress and success in NOTIFYs, then expect our BYE.
PRESS_0_AND_ACCEPT_TRANSFER = _SIPP_CALL.format(
    name="press 0, accept the transfer",
    body="""
  <pause milliseconds="1500"/>
  <nop><action><exec play_pcap_audio="pcap/dtmf_2833_0.pcap"/></action></nop>
  <recv request="REFER" timeout="40000">
    <action>
      <ereg regexp="&lt;sip:"""
    + OPERATOR
    + r"""@127\.0\.0\.1[:>]" search_in="hdr" header="Refer-To:" check_it="true" assign_to="target"/>
    </action>
  </recv>
  <send>
    <![CDATA[

      SIP/2.0 202 Accepted
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Content-Length: 0

    ]]>
  </send>
"""
    + _NOTIFY.format(cseq=2, state="active;expires=60", status="100 Trying")
    + _NOTIFY.format(cseq=3, state="terminated;reason=noresource", status="200 OK")
    + """
  <Reference variables="target"/>""",
)

# Answer, send no RTP at all, and wait for the BYE.
SEND_NO_MEDIA = _SIPP_CALL.format(name="no media", body="")


async def run_sipp(peers: Peers, tmp_path: Path, server: VoiceServer, scenario: str, name: str):
    path = tmp_path / name
    path.write_text(scenario)
    run = await peers.sipp(server.address, str(path), timeout_s=45)
    assert run.returncode == 0 and run.successful == 1 and run.failed == 0, run.report()
    return run


async def test_dtmf_0_transfers_to_the_operator_with_refer(serve, peers, tmp_path) -> None:
    server = await serve(operator=OPERATOR)
    run = await run_sipp(peers, tmp_path, server, PRESS_0_AND_ACCEPT_TRANSFER, "press_0.xml")
    record = await record_of(server)
    refer = run.logs["messages.log"].split("REFER sip:", 1)[1].split("\n\n", 1)[0]
    assert f"Refer-To: <sip:{OPERATOR}@127.0.0.1" in refer
    assert record.disposition == "transferred" and record.end_reason == "transferred"
    assert "Please hold, I'm putting you through to a colleague." in agent_lines(record)
    assert server.endpoint.metrics.transfers_succeeded == 1


# Take the REFER straight after the answer (no key pressed): the call the node took over its limits.
ACCEPT_TRANSFER = PRESS_0_AND_ACCEPT_TRANSFER.replace(
    """
  <pause milliseconds="1500"/>
  <nop><action><exec play_pcap_audio="pcap/dtmf_2833_0.pcap"/></action></nop>""",
    "",
    1,
)


async def test_over_the_limit_a_call_is_answered_and_handed_to_the_operator(
    serve, speech, peers, tmp_path, sip_peer
) -> None:
    server = await serve(operator=OPERATOR, max_active_calls=1, overload="transfer")
    async with TestCaller(speech, caller_id=CALLER).connected(uri(server)):  # the one call the limit allows
        probe = await sip_peer()
        probe.send(
            sip_request("OPTIONS", probe.port, server.address[1], call_id="probe", branch="p1"), server.address[1]
        )
        answer = await probe.expect(lambda message: getattr(message, "status", None) is not None)
        assert answer.status == 503 and answer.headers.get("Retry-After") == "30"  # the dispatcher goes elsewhere
        run = await run_sipp(peers, tmp_path, server, ACCEPT_TRANSFER, "overflow.xml")
        record = await record_of(server)
    refer = run.logs["messages.log"].split("REFER sip:", 1)[1].split("\n\n", 1)[0]
    assert f"Refer-To: <sip:{OPERATOR}@127.0.0.1" in refer
    assert record.disposition == "transferred" and record.caller == "+4930123456"
    assert agent_lines(record) == ["All our agents are busy, I'm putting you through to a colleague."]


@pytest.mark.parametrize("operator", [OPERATOR, ""])
async def test_llm_server_down_apologises_and_tries_the_operator(serve, speech, operator) -> None:
    # The model is asked (the router would take this plain return itself), and it is down.
    llm = LLMConfig(provider="ollama", host=f"http://127.0.0.1:{closed_tcp_port()}", timeout=30.0, route_first=False)
    server = await serve(llm, operator=operator)
    caller = TestCaller(speech, caller_id=CALLER)
    async with caller.connected(uri(server)):
        await caller.agent_turn()
        await caller.say(RETURN_LINE)
        assert await caller.hung_up(60)  # the agent ends the call
    record = await record_of(server)
    exchange = caller.exchange
    heard = exchange.heard().lower()
    assert exchange.end_reason == "remote_hangup"
    assert "technical problem" in heard and "colleague" in heard, exchange.lines
    # The apology came at once, not after the 30 s LLM timeout.
    answered = exchange.first_sound(exchange.spoken[-1][1])
    assert answered is not None and answered - exchange.spoken[-1][1] < 10.0
    said = agent_lines(record)
    assert said[1:] == [server.app.config.session.apology, VoiceSettings.no_operator], said
    metrics = server.endpoint.metrics
    # The test caller takes no transfers: the REFER is refused, and the agent says goodbye.
    assert (metrics.transfers_failed, metrics.transfers_succeeded) == ((1, 0) if operator else (0, 0))
    assert record.disposition == "failed"


# ---- bad input ---------------------------------------------------------------------------------------------


async def test_silent_caller_is_reprompted_then_hung_up_on(serve, speech) -> None:
    server = await serve(reprompt_after_s=2.0, reprompts_before_hangup=1)
    caller = TestCaller(speech, caller_id=CALLER)
    async with caller.connected(uri(server)):
        assert await caller.hung_up(60)
    record = await record_of(server)
    heard = caller.exchange.heard().lower()
    assert caller.exchange.end_reason == "remote_hangup"
    assert "still there" in heard and "hear anything" in heard, caller.exchange.lines
    said = agent_lines(record)
    assert len(said) == 3 and "still there" in said[1] and "Goodbye" in said[2], said
    assert record.disposition == "abandoned" and record.turns == []


async def test_call_without_rtp_ends_by_media_timeout_with_a_record(serve, peers, tmp_path) -> None:
    server = await serve(no_media_timeout_s=2.0)
    await run_sipp(peers, tmp_path, server, SEND_NO_MEDIA, "no_media.xml")
    record = await record_of(server)
    assert record.end_reason == "media_timeout" and record.disposition == "failed"
    assert server.endpoint.metrics.media_timeouts == 1


async def test_tool_that_raises_still_gets_a_sensible_answer(serve, speech, monkeypatch) -> None:
    server = await serve()

    def broken(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(server.app.shop, "search", broken)
    orders_before = len(rows(server, "orders"))
    caller = TestCaller(speech, caller_id=CALLER)
    async with caller.connected(uri(server)):
        await caller.agent_turn()
        await caller.say("I'd like to buy a new phone charger.")
        await caller.agent_turn()
    record = await record_of(server)
    failed = [c for c in record.tool_calls if c["name"] == "search_products"]
    assert failed and "database is locked" in failed[0]["result"]
    reply = " ".join(agent_lines(record)[1:]).lower()  # after the greeting
    assert "sorry" in reply and "colleague" in reply, reply
    assert "sorry" in caller.exchange.heard().lower(), caller.exchange.lines
    assert caller.exchange.end_reason == "local_hangup"  # the call went on until the caller hung up
    assert len(rows(server, "orders")) == orders_before and record.disposition == "completed"
