"""AudioSocket send pacing and CPU cost of N calls in one process, on 127.0.0.1: benchmarks/rtp_pacing.py for the
Asterisk AudioSocket path.

N TCP clients play Asterisk: each sends its UUID and then echoes every message it reads, so the server's
receive path runs as often as its send path. The server plays a tone on every call and a reader per call
consumes `audio_in`. Connections are spread over one 20 ms period, as calls arriving at random times would be.
The send instants are those of the call's MediaTap (called in the slot, right after the write).

Reported per N (median of the runs): send-interval p50/p99/max over all slots, slots skipped because the loop
was too late (or the peer did not read), and the CPU time of this process (server and clients) as a
percentage of one core, in total and per call.

Usage: .venv/bin/python benchmarks/audiosocket_pacing.py [--seconds 10] [--runs 3] [--calls 1,10,50,100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telephony.audiosocket import AudioSocketCall, AudioSocketServer
from telephony.audiosocket_wire import HEADER_BYTES, KIND_UUID, encode
from telephony.media_clock import PTIME
from telephony.rtp import IntervalHistogram

SETTLE = 0.3  # seconds after the clients stop for the calls to end


@dataclass
class Run:
    p50: float
    p99: float
    max_ms: float
    sent: int
    skipped: int
    cpu_percent: float


class IntervalTap:
    """A MediaTap that keeps the intervals between a call's slots."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.intervals = IntervalHistogram()
        self._last: float | None = None

    def slot(self, sent: bytes | None, skipped: int) -> None:
        now = self._loop.time()
        if self._last is not None:
            self.intervals.add((now - self._last) * 1000)
        self._last = now

    def received(self, frame: np.ndarray) -> None:
        pass


async def asterisk(address: tuple[str, int], seconds: float) -> None:
    """One client: the UUID, then echo each message back for `seconds`."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(encode(KIND_UUID, uuid.uuid4().bytes))
    try:
        async with asyncio.timeout(seconds):
            while True:
                header = await reader.readexactly(HEADER_BYTES)
                payload = await reader.readexactly(int.from_bytes(header[1:], "big"))
                writer.write(header + payload)
    except TimeoutError:
        pass
    writer.close()
    await writer.wait_closed()


async def one_run(calls: int, seconds: float) -> Run:
    t = np.arange(int(8000 * (seconds + 1))) / 8000
    pcm = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    taps: list[IntervalTap] = []

    async def on_call(call: AudioSocketCall) -> None:
        tap = IntervalTap()
        taps.append(tap)
        call.tap = tap
        call.play(pcm)
        async for _ in call.audio_in:
            pass

    server = AudioSocketServer("127.0.0.1", 0, on_call, no_media_timeout_s=None)
    await server.start()
    wall, cpu = time.perf_counter(), time.process_time()
    clients = []
    for _ in range(calls):
        clients.append(asyncio.create_task(asterisk(server.local_address, seconds)))
        await asyncio.sleep(PTIME / calls)
    await asyncio.gather(*clients)
    cpu_percent = 100 * (time.process_time() - cpu) / (time.perf_counter() - wall)
    await asyncio.sleep(SETTLE)
    await server.stop(deadline_s=1.0)
    intervals = IntervalHistogram()
    for tap in taps:
        intervals.merge(tap.intervals)
    return Run(
        intervals.percentile(50),
        intervals.percentile(99),
        intervals.max_ms,
        intervals.count + len(taps),
        server.metrics.send_skipped,
        cpu_percent,
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", default="1,10,50,100")
    args = parser.parse_args()
    print(
        f"{args.runs} run(s) of {args.seconds:.0f} s each, medians; slin 20 ms both ways per call; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n"
    )
    header = ("calls", "slots/s", "send p50 ms", "p99 ms", "max ms", "skipped", "CPU % core", "CPU %/call")
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
                    f"{median('sent') / args.seconds:7.0f}",
                    f"{median('p50'):11.1f}",
                    f"{median('p99'):6.1f}",
                    f"{median('max_ms'):6.1f}",
                    f"{median('skipped'):7.0f}",
                    f"{cpu:10.1f}",
                    f"{cpu / calls:10.2f}",
                ]
            ),
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
