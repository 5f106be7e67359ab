"""What recording a call costs: the CPU of the recorder (callcenter.recordings) per call, on the event loop that
paces every call's RTP and on the writer thread, with files really written.

N recorders are fed `--seconds` of a call each, a second at a time as fast as they take it (then the writer catches up): per 20 ms slot one sent frame (a tone)
and one received frame (another tone), as the RTP session hands them over, in the slot-major order of the shared
media clock. The loop's share is the thread CPU time of the feeding thread; the writer's is the process CPU time
minus it, after every file is closed. Both are given per second of call audio, and as the percentage of one core
a call being recorded in real time costs.

Then the same in real time, with real RTP: N RtpSessions in pairs (benchmarks/rtp_pacing.py's run) for
`--pacing-seconds`, without and with a recorder on each, alternating, and the process's CPU and the send
intervals' p99 of each.

Usage: .venv/bin/python benchmarks/recording.py [--seconds 60] [--runs 3] [--calls 1,20,100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.rtp_pacing import one_run
from callcenter.config import VoiceConfig
from callcenter.recordings import FRAME, CallRecorder, Recordings
from telephony.rtp import RtpSession


async def run(calls: int, seconds: float, directory: Path) -> tuple[float, float, int]:
    """(loop CPU s, writer CPU s, bytes written) for `calls` recorded calls of `seconds` each."""
    recordings = Recordings(VoiceConfig(recording="on", recording_dir=str(directory), recording_days=0))
    recorders = [recordings.start(f"bench-{n}") for n in range(calls)]
    t = np.arange(FRAME) / 8000
    sent = (8000 * np.sin(2 * np.pi * 440 * t)).astype("<i2").tobytes()
    heard = (6000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16)
    process = time.process_time()
    loop_cpu = 0.0
    for _second in range(int(seconds)):
        started = time.thread_time()
        for _ in range(50):
            for recorder in recorders:
                recorder.slot(sent, 0)
            for recorder in recorders:
                recorder.received(heard)
        loop_cpu += time.thread_time() - started
        # Let the writer catch up, as one real second would (else the recorders give up: "the disk did not keep up").
        await asyncio.wrap_future(recordings._executor.submit(lambda: None))
    for recorder in recorders:
        await recorder.stop()
    await asyncio.to_thread(recordings.close)
    writer_cpu = time.process_time() - process - loop_cpu
    written = sum(path.stat().st_size for path in directory.glob("*/*.wav"))
    return loop_cpu, writer_cpu, written


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="call audio per recorder")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", default="1,20,100")
    parser.add_argument("--pacing-calls", type=int, default=50)
    parser.add_argument("--pacing-seconds", type=float, default=5.0)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(
        f"{args.runs} run(s), medians; {args.seconds:.0f} s of call audio per recorder; load average {load:.1f} "
        f"on {os.cpu_count()} cores"
    )
    header = [
        "calls",
        "loop µs / slot / call",
        "writer µs / s / call",
        "loop % of a core / call",
        "total % of a core / call",
        "MB / call-minute",
    ]
    print(" | ".join(header))
    print(" | ".join("-" * len(h) for h in header))
    for calls in (int(c) for c in args.calls.split(",")):
        results = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as directory:
                results.append(await run(calls, args.seconds, Path(directory)))
        loop_cpu = statistics.median(r[0] for r in results)
        writer_cpu = statistics.median(r[1] for r in results)
        written = statistics.median(r[2] for r in results)
        audio = calls * args.seconds  # seconds of call audio recorded
        print(
            " | ".join(
                [
                    f"{calls:5d}",
                    f"{loop_cpu / (audio * 50) * 1e6:21.1f}",
                    f"{writer_cpu / audio * 1e6:20.0f}",
                    f"{loop_cpu / audio * 100:23.3f}",
                    f"{(loop_cpu + writer_cpu) / audio * 100:24.3f}",
                    f"{written / audio * 60 / 1e6:16.2f}",
                ]
            )
        )
    await pacing(args.pacing_calls, args.pacing_seconds, args.runs)


async def pacing(calls: int, seconds: float, runs: int) -> None:
    print(
        f"\nreal time: {calls} RTP sessions in pairs, {seconds:.0f} s a run, {runs} runs each way, alternating, medians"
    )
    print("recording | CPU % of a core | CPU %/call | send p99 ms | skipped slots")
    print("--------- | --------------- | ---------- | ----------- | -------------")
    results: dict[bool, list] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as directory:
        recordings = Recordings(VoiceConfig(recording="on", recording_dir=directory, recording_days=0))
        recorders: list[CallRecorder] = []

        def record(session: RtpSession) -> None:
            recorders.append(recordings.start(f"pacing-{len(recorders)}"))
            session.tap = recorders[-1]

        for _ in range(runs):
            for on in (False, True):
                results[on].append(await one_run(calls, seconds, record if on else None))
        for recorder in recorders:
            await recorder.stop()
        recordings.close()
    for on in (False, True):
        cpu = statistics.median(r.cpu_percent for r in results[on])
        print(
            f"{'on' if on else 'off':>9} | {cpu:15.1f} | {cpu / calls:10.2f} | "
            f"{statistics.median(r.p99 for r in results[on]):11.1f} | {statistics.median(r.skipped for r in results[on]):13.0f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
