"""Several nodes: order write latency on SQLite and PostgreSQL, and what a dispatcher does when a node dies or drains.

1. Order writes: 20 threads of one node place orders at once (each its own idempotency key), on a SQLite file
   and on a throw-away PostgreSQL cluster with fsync on (tests/postgres.py); p50/p99 of `Shop.place_order`.
2. Three in-process `serve` nodes (offline router) on one PostgreSQL behind Kamailio running
   docs/kamailio-dispatcher.cfg (ping interval 1 s here, 10 s in the docs), sipp callers (tests/cluster.py):
   - kill: node c's SIP socket is closed with calls live on it (as a crash looks from the network); reported:
     seconds until the dispatcher holds it inactive, calls lost among those live on it and among new ones;
   - drain: node b drains (what SIGTERM does) with calls live on it; calls lost, live and new.
3. Talking load: two `serve` processes (each its own Whisper tiny.en and event loop) on one PostgreSQL behind
   the same Kamailio; N callers per node (benchmarks/voice_to_voice.py's callers, in a child process: Piper
   lines as RTP, three each) against a scripted model answering after 200 ms; per node and N, voice-to-voice
   and speech-to-text from the call records, and whether `max_stt_delay_s = 2` (docs/several-nodes.md) would
   have the node refuse new calls. Both nodes share this machine's cores: the row for N per node is the load
   of 2N calls on one machine, not what N calls cost a node of its own.

Usage: .venv/bin/python benchmarks/several_nodes.py [--orders 25] [--calls 6] [--talking 1,2,3 (0: skip)]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.voice_to_voice import MODEL_DELAY_S, pct, run_callers
from benchmarks.voice_to_voice import model as scripted_model
from callcenter.call_records import CallRecords
from callcenter.config import VoiceConfig
from callcenter.shop import Shop
from callcenter.store import open_database
from callcenter.voice import SpeechModels
from harness.cluster import dispatcher, node, node_process
from harness.fake_ollama import FakeOllama
from harness.peers import LOCAL, Peers
from harness.postgres import cluster

WRITERS = 20
STT_LIMIT_S = 2.0  # docs/several-nodes.md's max_stt_delay_s


def order_latencies(url: str, orders_each: int) -> list[float]:
    csv = Path(tempfile.mkdtemp()) / "stock.csv"
    csv.write_text(f"sku,name,description,price_eur,stock,category\nBM-1,Bench item,,1.00,{WRITERS * orders_each},x\n")
    shop = Shop(url, csv, database=open_database(url, pool_size=WRITERS))
    latencies: list[float] = []
    lock, barrier = threading.Lock(), threading.Barrier(WRITERS)

    def writer(index: int) -> None:
        barrier.wait()
        for n in range(orders_each):
            started = time.perf_counter()
            shop.place_order(f"+1 555 {index:04}", [("BM-1", 1)], f"bench-{index}-{n}")
            with lock:
                latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert shop.get_product("BM-1").stock == 0  # type: ignore[union-attr]
    shop.close()
    return latencies


def percentile(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100)[int(p) - 1] if len(values) > 1 else values[0]


async def failures(
    peers: Peers, target: tuple[str, int], count: int, call_ms: int
) -> tuple[asyncio.subprocess.Process, Path]:
    return await peers.start_sipp(
        target, "record_route.xml", calls=count, rate=10, limit=count, timeout_s=60, extra=("-d", str(call_ms))
    )


@dataclass
class Outage:
    """What callers lost when one of the nodes went away (killed or drained)."""

    old_lost: int  # calls live when it went that failed
    on_node: int  # calls live on that node when it went
    new_lost: int  # of `total` new calls made right after
    total: int


@dataclass
class NodesResult:
    dead_s: float  # until the dispatcher stopped sending to the killed node
    kill: Outage
    drain: Outage


async def nodes_benchmark(url: str, workdir: Path, calls: int) -> NodesResult:
    speech = await asyncio.to_thread(SpeechModels.load, VoiceConfig(whisper_model="tiny.en"))
    peers = Peers(workdir)
    stacks = [contextlib.AsyncExitStack() for _ in range(3)]
    try:
        a, b, c = [await stack.enter_async_context(node(url, speech, deadline_s=30.0)) for stack in stacks]
        async with dispatcher(workdir / "kamailio", [a.address, b.address, c.address]) as kamailio:
            for server in (a, b, c):
                await kamailio.until_state(server.address, True, 10)
            target = (LOCAL, kamailio.port)
            # Kill: calls live on every node, then c's socket goes.
            live = await failures(peers, target, 3 * calls, 6000)
            async with asyncio.timeout(15):
                while len(c.endpoint.calls) < 1:
                    await asyncio.sleep(0.05)
            on_c = len(c.endpoint.calls)
            killed = time.monotonic()
            await c.endpoint._transport.close()  # a crash, as the network sees it
            await kamailio.until_state(c.address, False, 30)
            dead_s = time.monotonic() - killed
            new = await peers.sipp(
                target, "record_route.xml", calls=calls, rate=10, limit=calls, timeout_s=60, extra=("-d", "1000")
            )
            old = await peers.wait_sipp(*live, 90)
            kill = Outage(old.failed, on_c, new.failed, calls)
            # Drain: calls live on a and b, then b drains.
            live = await failures(peers, target, 2 * calls, 5000)
            async with asyncio.timeout(15):
                while len(b.endpoint.calls) < 1:
                    await asyncio.sleep(0.05)
            on_b = len(b.endpoint.calls)
            await b.drain()
            new = await peers.sipp(
                target, "record_route.xml", calls=calls, rate=10, limit=calls, timeout_s=60, extra=("-d", "1000")
            )
            old = await peers.wait_sipp(*live, 90)
            drain = Outage(old.failed, on_b, new.failed, calls)
            return NodesResult(dead_s, kill, drain)
    finally:
        for stack in stacks:
            with contextlib.suppress(Exception):
                await stack.aclose()
        await peers.close()
        speech.close()


async def talking_benchmark(url: str, workdir: Path, counts: list[int]) -> list[tuple[int, str, int, list[dict]]]:
    """(calls per node, node, lines of all callers that got no reply, that node's turn timings) for each N."""
    rows = []
    async with FakeOllama(scripted_model) as llm, contextlib.AsyncExitStack() as stack:
        lines = f'provider = "ollama"\nhost = "{llm.url}"\ntimeout = 30.0'
        nodes = [await stack.enter_async_context(node_process(url, workdir / name, llm=lines)) for name in ("a", "b")]
        async with dispatcher(workdir / "kamailio-talking", [n.address for n in nodes]) as kamailio:
            for each in nodes:
                await kamailio.until_state(each.address, True, 10)
            records = CallRecords(url)
            try:
                for n in counts:
                    started = time.time()
                    heard = await run_callers(f"sip:shop@{LOCAL}:{kamailio.port}", 2 * n, n, "scripted")
                    found: list = []
                    async with asyncio.timeout(30):
                        while len(found) < 2 * n:
                            await asyncio.sleep(0.5)
                            found = [r for r in await asyncio.to_thread(records.recent, 200) if r.started_at >= started]
                    for name in sorted({r.node for r in found}):
                        mine = [r for r in found if r.node == name]
                        rows.append((n, name, heard.count(None), [t for r in mine for t in r.turns]))
            finally:
                records.close()
    return rows


def talking_table(rows: list[tuple[int, str, int, list[dict]]]) -> None:
    print(
        f"\ntalking load: two serve processes, a scripted model ({MODEL_DELAY_S * 1000:.0f} ms), Whisper tiny.en, "
        f"seconds; load average now {os.getloadavg()[0]:.1f}"
    )
    print(
        f"| calls per node | node | turns | v2v p50 | v2v p95 | stt p50 | stt p95 | max_stt_delay_s {STT_LIMIT_S:g} | unanswered (all) |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for n, name, unanswered, turns in rows:
        v2v = [t["voice_to_voice_s"] for t in turns if t["voice_to_voice_s"] is not None]
        stt = [t["stt_s"] for t in turns if t["stt_s"] is not None]
        admission = "would refuse" if stt and statistics.median(stt) >= STT_LIMIT_S else "serving"
        print(
            f"| {n} | {name} | {len(v2v)} | {pct(v2v, 50):.2f} | {pct(v2v, 95):.2f} | {pct(stt, 50):.2f} | "
            f"{pct(stt, 95):.2f} | {admission} | {unanswered} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=25, help="orders per writer")
    parser.add_argument("--calls", type=int, default=6, help="calls per phase and node")
    parser.add_argument("--talking", default="1,2,3", help="talking calls per node, comma-separated; 0: skip")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        sqlite = order_latencies(f"sqlite:///{folder}/shop.db", args.orders)
        rows.append(("SQLite (WAL, one file)", sqlite))
    with cluster(durable=True) as server:
        rows.append(("PostgreSQL 15 (fsync on, pool of 20)", order_latencies(server.new_schema(), args.orders)))
        with tempfile.TemporaryDirectory() as folder:
            nodes = asyncio.run(nodes_benchmark(server.new_schema(), Path(folder), args.calls))
        talking = [int(n) for n in args.talking.split(",") if int(n)]
        if talking:
            with tempfile.TemporaryDirectory() as folder:
                talked = asyncio.run(talking_benchmark(server.new_schema(), Path(folder), talking))
    print(f"\norder writes, {WRITERS} concurrent writers x {args.orders} orders")
    print("| database | p50 ms | p99 ms |\n| --- | ---: | ---: |")
    for name, values in rows:
        print(f"| {name} | {1000 * percentile(values, 50):.1f} | {1000 * percentile(values, 99):.1f} |")
    kill, drain = nodes.kill, nodes.drain
    print("\nthree nodes behind Kamailio's dispatcher (ping interval 1 s, threshold 2, fr_timer 2 s)")
    print("| what | value |\n| --- | ---: |")
    print(f"| dispatcher stops sending to a killed node after | {nodes.dead_s:.1f} s |")
    print(f"| kill: calls lost of those live (killed node had {kill.on_node} live) | {kill.old_lost} |")
    print(f"| kill: new calls lost right after the kill | {kill.new_lost} of {kill.total} |")
    print(f"| drain: calls lost of those live (draining node had {drain.on_node} live) | {drain.old_lost} |")
    print(f"| drain: new calls lost during the drain | {drain.new_lost} of {drain.total} |")
    if talking:
        talking_table(talked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
