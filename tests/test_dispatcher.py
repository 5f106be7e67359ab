"""Three `serve` nodes behind Kamailio's dispatcher (docs/kamailio-dispatcher.cfg), sharing one PostgreSQL.

Calls from sipp spread over the nodes; one node dies and the dispatcher's OPTIONS probes take it out, so new
calls reach the others; one node drains (what SIGTERM does) with calls live on it: they finish, new calls go
elsewhere, none is lost; the call records of every node are in the one database.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections import Counter
from pathlib import Path
from typing import TypedDict

import pytest

from callcenter.call_records import CallRecord
from callcenter.voice import SpeechModels
from harness.cluster import dispatcher, node, node_process
from harness.peers import LOCAL, Peers
from harness.postgres import Cluster
from telephony.endpoint import EndpointConfig, SipEndpoint
from telephony.sip_call import SipCall

pytestmark = pytest.mark.timeout(240)
CALL_MS = "1500"  # how long each sipp call stays up
# The caller's side gives up on a call whose audio stopped after this long, as a PBX's RTP timeout does.
CALLER_MEDIA_TIMEOUT_S = 3.0


class SippOptions(TypedDict):
    """Peers.start_sipp's options for one batch of calls."""

    calls: int
    rate: float
    limit: int
    timeout_s: float
    extra: tuple[str, ...]


def batch(count: int, hold_ms: str = CALL_MS) -> SippOptions:
    return {"calls": count, "rate": 10, "limit": count, "timeout_s": 40, "extra": ("-d", hold_ms)}


async def records_settled(node_records, expected: int, timeout_s: float = 20.0) -> list[CallRecord]:
    """The records of all nodes (read through one node), once `expected` calls are in."""
    async with asyncio.timeout(timeout_s):
        while True:
            found = await asyncio.to_thread(node_records.recent, 200)
            if len(found) >= expected:
                return found
            await asyncio.sleep(0.2)


async def test_calls_spread_fail_over_and_drain_behind_the_dispatcher(
    postgres: Cluster, peers: Peers, tmp_path: Path, speech: SpeechModels
) -> None:
    if shutil.which("kamailio") is None or shutil.which("sipp") is None:
        pytest.skip("apt-get install kamailio sip-tester")
    url = postgres.new_schema()
    stacks = [contextlib.AsyncExitStack() for _ in range(3)]
    a, b, c = [await stack.enter_async_context(node(url, speech, deadline_s=10.0)) for stack in stacks]
    names = {server.records.node: label for server, label in ((a, "a"), (b, "b"), (c, "c"))}
    try:
        async with dispatcher(tmp_path / "kamailio", [a.address, b.address, c.address]) as kamailio:
            for server in (a, b, c):
                await kamailio.until_state(server.address, True, 10)
            target = (LOCAL, kamailio.port)

            # 1. Round robin over the three.
            run = await peers.sipp(target, "record_route.xml", **batch(9))
            assert (run.successful, run.failed) == (9, 0), run.logs.get("errors.log", "") + kamailio.log[-3000:]
            served = Counter(names[r.node] for r in await records_settled(a.records, 9))
            assert served == {"a": 3, "b": 3, "c": 3}, served

            # 2. Node c dies (no call live on it): the probes mark it down, new calls reach a and b.
            await stacks[2].aclose()
            down_s = await kamailio.until_state(c.address, False, 20)
            run = await peers.sipp(target, "record_route.xml", **batch(4))
            assert (run.successful, run.failed) == (4, 0), (await kamailio.states(), c.address, kamailio.log[-3000:])
            served = Counter(names[r.node] for r in await records_settled(a.records, 13))
            assert served["c"] == 3 and served["a"] + served["b"] == 10, served

            # 3. Node b drains with calls live on it: they finish; new calls all go to a; none is lost.
            process, workdir = await peers.start_sipp(target, "record_route.xml", **batch(4, hold_ms="4000"))
            async with asyncio.timeout(10):
                while not b.endpoint.calls:
                    await asyncio.sleep(0.05)
            await b.drain()
            assert b.node.health()["state"] == "draining"
            await kamailio.until_state(b.address, False, 10)
            run = await peers.sipp(target, "record_route.xml", **batch(3))
            assert (run.successful, run.failed) == (3, 0), run.logs.get("errors.log", "")
            live = await peers.wait_sipp(process, workdir, 60)
            assert (live.successful, live.failed) == (4, 0), live.logs.get("errors.log", "")
            records = await records_settled(a.records, 20)
            assert len(records) == 20 and {r.disposition for r in records} <= {"completed", "abandoned"}, records
            assert Counter(names[r.node] for r in records[:3])["a"] == 3  # the newest, after the drain
    finally:
        for stack in stacks:
            await stack.aclose()
    print(f"dispatcher marked the dead node down after {down_s:.2f} s")


async def _refuse(call: SipCall) -> None:
    await call.hangup()  # the caller only dials out


async def test_a_killed_nodes_caller_is_ended_by_its_media_timeout_and_new_calls_reach_the_others(
    postgres: Cluster, peers: Peers, tmp_path: Path, speech: SpeechModels
) -> None:
    """SIGKILL: the node sends no BYE and Kamailio (which does not carry the media) cannot tell. What ends its
    caller's call is the caller's side noticing that the audio stopped, as a PBX's RTP timeout does; here our
    own endpoint as the caller, with a 3 s no-media timeout. The other node's call goes on."""
    if shutil.which("kamailio") is None or shutil.which("sipp") is None:
        pytest.skip("apt-get install kamailio sip-tester")
    url = postgres.new_schema()
    async with node(url, speech) as a, node_process(url, tmp_path / "killed") as killed:
        async with dispatcher(tmp_path / "kamailio", [a.address, killed.address]) as kamailio:
            for address in (a.address, killed.address):
                await kamailio.until_state(address, True, 10)
            caller = SipEndpoint(
                EndpointConfig(
                    listen_host=LOCAL,
                    listen_port=0,
                    rtp_port_range=(32000, 34000),
                    no_media_timeout_s=CALLER_MEDIA_TIMEOUT_S,
                ),
                _refuse,
            )
            await caller.start()
            try:
                calls = [await caller.dial(f"sip:shop@{LOCAL}:{kamailio.port}") for _ in range(2)]
                on_a = {call.call_id for call in a.endpoint.calls}
                [to_a] = [call for call in calls if call.call_id in on_a]  # round robin: one call on each node
                [to_killed] = [call for call in calls if call.call_id not in on_a]
                await asyncio.sleep(1.0)  # both calls up, audio flowing both ways
                os.kill(killed.process.pid, signal.SIGKILL)
                killed_at = time.monotonic()
                await asyncio.wait_for(to_killed.closed.wait(), CALLER_MEDIA_TIMEOUT_S + 5)
                ended_s = time.monotonic() - killed_at
                assert to_killed.end_reason == "media_timeout"
                assert not to_a.closed.is_set()  # the live node's call is untouched
                down_s = await kamailio.until_state(killed.address, False, 20) + ended_s
                run = await peers.sipp(
                    (LOCAL, kamailio.port),
                    "record_route.xml",
                    calls=3,
                    rate=10,
                    limit=3,
                    timeout_s=40,
                    extra=("-d", CALL_MS),
                )
                assert (run.successful, run.failed) == (3, 0), run.logs.get("errors.log", "")
                await to_a.hangup()
            finally:
                await caller.stop(1.0)
        records = await records_settled(a.records, 4)
    assert len(records) == 4 and {r.node for r in records} == {a.records.node}, records
    assert to_killed.call_id not in {r.call_id for r in records}  # its node died before writing it: the one lost
    print(f"killed node's caller hung up after {ended_s:.2f} s; dispatcher marked it down after {down_s:.2f} s")
