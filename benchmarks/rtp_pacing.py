"""RTP send pacing and CPU cost of N RtpSessions in one process, on 127.0.0.1.

The N sessions talk in pairs (session 2k with 2k+1; a single session talks to itself), so every session
sends and receives one stream, as our side of N calls does: each plays a tone (G.711 encode per packet)
and a reader per session consumes `audio_in` as the conversation loop would. Sending starts are spread
over one 20 ms period, as calls arriving at random times would be.

Reported per N (median of the runs): send-interval p50/p99/max over all packets, packets lost (sent by
one session and never received by its partner), slots skipped because the loop was too late, mean
RFC 3550 interarrival jitter, and the CPU time of this process (time.process_time) as a percentage of
one core, in total and per session (one call's media).

Usage: .venv/bin/python benchmarks/rtp_pacing.py [--seconds 10] [--runs 3] [--calls 1,10,50,100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telephony.codec import PCMU
from telephony.media_clock import PTIME
from telephony.rtp import IntervalHistogram, RtpSession

SETTLE = 0.3  # seconds after sending stops for the last packets to land


@dataclass
class Run:
    p50: float
    p99: float
    max_ms: float
    sent: int
    lost: int
    skipped: int
    jitter_ms: float
    cpu_percent: float


async def consume(session: RtpSession) -> None:
    async for _ in session.audio_in:
        pass


async def one_run(calls: int, seconds: float, prepare: Callable[[RtpSession], None] | None = None) -> Run:
    """`prepare(session)` for each session before it starts (benchmarks/recording.py puts a recorder on it)."""
    sessions = [await RtpSession.open("127.0.0.1", (20000, 40000), no_media_timeout=None) for _ in range(calls)]
    if prepare is not None:
        for session in sessions:
            prepare(session)
    readers = [asyncio.create_task(consume(session)) for session in sessions]
    t = np.arange(int(8000 * (seconds + 1))) / 8000
    pcm = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    partners = [index ^ 1 if index ^ 1 < calls else index for index in range(calls)]
    for index, session in enumerate(sessions):  # everyone listens before anyone talks: no packet lands unheard
        session.start(("127.0.0.1", sessions[partners[index]].local_port), PCMU, 101, direction="recvonly")
        await asyncio.sleep(PTIME / calls)  # the 20 ms clock of each session starts here
    wall, cpu = time.perf_counter(), time.process_time()
    for session in sessions:
        session.play(pcm)
        session.set_direction("sendrecv")
    await asyncio.sleep(seconds)
    cpu_percent = 100 * (time.process_time() - cpu) / (time.perf_counter() - wall)
    for session in sessions:
        session.set_direction("recvonly")
    await asyncio.sleep(SETTLE)
    stats = [session.stats for session in sessions]
    for session in sessions:
        await session.close()
    await asyncio.gather(*readers)
    intervals = IntervalHistogram()
    for stat in stats:
        intervals.merge(stat.send_intervals)
    lost = sum(stats[i].packets_sent - stats[partners[i]].packets_received for i in range(calls))
    return Run(
        intervals.percentile(50),
        intervals.percentile(99),
        intervals.max_ms,
        sum(s.packets_sent for s in stats),
        lost,
        sum(s.send_skipped for s in stats),
        statistics.fmean(s.jitter_ms for s in stats),
        cpu_percent,
    )


async def bare_timer(seconds: float) -> IntervalHistogram:
    """The same absolute 20 ms clock with no RTP at all: what this machine's scheduler allows."""
    loop = asyncio.get_running_loop()
    intervals, slot, last = IntervalHistogram(), loop.time(), None
    for _ in range(int(seconds / PTIME)):
        now = loop.time()
        if last is not None:
            intervals.add((now - last) * 1000)
        last, slot = now, slot + PTIME
        await asyncio.sleep(max(0.0, slot - loop.time()))
    return intervals


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", default="1,10,50,100")
    args = parser.parse_args()
    print(
        f"{args.runs} run(s) of {args.seconds:.0f} s each, medians; PCMU 20 ms both ways per call; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    floor = await bare_timer(args.seconds)
    print(
        f"reference, a bare asyncio 20 ms timer: p50 {floor.percentile(50):.1f} ms, p99 {floor.percentile(99):.1f} ms, "
        f"max {floor.max_ms:.1f} ms\n"
    )
    header = (
        "calls",
        "pkts sent/s",
        "send p50 ms",
        "p99 ms",
        "max ms",
        "lost",
        "skipped",
        "jitter ms",
        "CPU % core",
        "CPU %/call",
    )
    print(" | ".join(header))
    print(" | ".join("-" * len(h) for h in header))
    for calls in (int(n) for n in args.calls.split(",")):
        runs = [await one_run(calls, args.seconds) for _ in range(args.runs)]

        def median(field: str) -> float:
            return statistics.median(getattr(run, field) for run in runs)  # noqa: B023 (only called in this iteration)

        cpu = median("cpu_percent")
        print(
            " | ".join(
                [
                    f"{calls:5d}",
                    f"{median('sent') / args.seconds:11.0f}",
                    f"{median('p50'):11.1f}",
                    f"{median('p99'):6.1f}",
                    f"{median('max_ms'):6.1f}",
                    f"{median('lost'):4.0f}",
                    f"{median('skipped'):7.0f}",
                    f"{median('jitter_ms'):9.2f}",
                    f"{cpu:10.1f}",
                    f"{cpu / calls:10.2f}",
                ]
            ),
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
