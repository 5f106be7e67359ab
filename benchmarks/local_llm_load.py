"""What the local LLM costs the calls, and what a warm prompt cache saves the first caller.

Table 1, per way of running llama.cpp's server (threads x niceness of its child process; first row: no
LLM): while the server generates without pause (one request after another, 128 tokens each), this process
runs --calls RTP sessions in pairs (benchmarks/rtp_pacing.py's run: PCMU 20 ms both ways) and, in a
thread, Whisper (the default tiny.en Transcriber) on a 3 s phone utterance, one after another. Reported:
RTP send-interval p99 and max, slots skipped, Whisper latency p50/p95 and count, and the LLM's own
generation and prompt speed (llama.cpp's timings), so the price of each choice to the LLM is beside it.

Table 2, the first caller: the first turn of a new call ("I'd like to buy a new phone charger.") through the
shop's swarm on the local model: on a server that has seen no prompt (cold), then on a new server after
start-up's prefill (warm), then the --callers'th caller's (10); first sentence and whole turn (session.stream).

Usage: .venv/bin/python benchmarks/local_llm_load.py [--model qwen2.5-coder-1.5b] [--seconds 12] [--calls 10]
       [--configs 1x0,1x10,2x0,2x10] [--callers 10] [--skip-load] [--skip-first-turn]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.rtp_pacing import one_run  # noqa: E402
from callcenter.agents import SWARM, build_registry  # noqa: E402
from callcenter.config import Config, LLMConfig  # noqa: E402
from callcenter.llm_choice import LLMChoice, prefill  # noqa: E402
from callcenter.local_model import local_model_file  # noqa: E402
from callcenter.shop import Shop  # noqa: E402
from speech.transcriber import Transcriber  # noqa: E402
from swarm.providers.local import LocalProvider, LocalServer, ServerSpec  # noqa: E402

FIRST_TURN = "I'd like to buy a new phone charger."
STORY = [{"role": "user", "content": "Tell me a long story about a small shop that sells phone chargers."}]


def utterance() -> np.ndarray:
    from benchmarks.speech_stt import utterance as stt_utterance

    return stt_utterance(3)


class Generator(threading.Thread):
    """Keeps the server generating; collects llama.cpp's per-request speeds."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop = url, threading.Event()
        self.gen: list[float] = []  # tokens/s of each request
        self.prompt: list[float] = []

    def run(self) -> None:
        # No kept-alive connections: llama.cpp's server closes them as they are reused (see LocalProvider).
        with httpx.Client(timeout=300, headers={"Connection": "close"}) as client:
            while not self.stop.is_set():
                # A new prompt each time, so prompt processing is part of the load as in real turns.
                messages = [{"role": "system", "content": f"You are storyteller number {time.time_ns()}."}, *STORY]
                reply = client.post(self.url + "/v1/chat/completions", json={"messages": messages, "max_tokens": 64})
                timings = reply.json()["timings"]
                self.gen.append(timings["predicted_per_second"])
                self.prompt.append(timings["prompt_per_second"])


class Listener(threading.Thread):
    """Whisper, one utterance after another, as callers' turns would come."""

    def __init__(self, transcriber: Transcriber, pcm: np.ndarray) -> None:
        super().__init__(daemon=True)
        self.transcriber, self.pcm, self.stop = transcriber, pcm, threading.Event()
        self.latencies: list[float] = []

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.perf_counter()
            self.transcriber.transcribe_sync(self.pcm)
            self.latencies.append(time.perf_counter() - started)


def load_row(
    label: str, server: LocalServer | None, transcriber: Transcriber, pcm: np.ndarray, calls: int, seconds: float
) -> str:
    generator = Generator(server.url) if server else None
    listener = Listener(transcriber, pcm)
    if generator:
        generator.start()
        time.sleep(1.0)  # generation under way before measuring
    listener.start()
    rtp = asyncio.run(one_run(calls, seconds))
    listener.stop.set()
    listener.join()
    speeds = ""
    if generator:
        generator.stop.set()
        generator.join()
        if generator.gen:  # the request under way when the window closed counts too: join() waited for it
            speeds = f"{statistics.median(generator.gen):.1f} | {statistics.median(generator.prompt):.0f}"
    whisper = sorted(listener.latencies)
    p95 = whisper[min(len(whisper) - 1, int(0.95 * len(whisper)))]
    return (
        f"| {label} | {rtp.p99:.1f} | {rtp.max_ms:.1f} | {rtp.skipped} | {statistics.median(whisper):.2f} | {p95:.2f} "
        f"| {len(whisper)} | {speeds or '- | -'} |"
    )


def load_table(model: str, configs: list[tuple[int, int]], calls: int, seconds: float) -> None:
    file = local_model_file(model)
    transcriber = Transcriber("tiny.en")
    pcm = utterance()
    transcriber.transcribe_sync(pcm)  # warm-up
    print(
        f"| {model} server (child process) | RTP send p99 ms | max ms | skipped | Whisper 3 s p50 s | p95 s | "
        "Whispers | LLM gen tok/s | LLM prompt tok/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(load_row("no LLM", None, transcriber, pcm, calls, seconds), flush=True)
    for threads, nice in configs:
        server = LocalServer(ServerSpec(file.path, file.chat_template, threads=threads, nice=nice, name=model))
        server.start()
        try:
            print(load_row(f"{threads} threads, nice {nice}", server, transcriber, pcm, calls, seconds), flush=True)
        finally:
            server.stop()
    transcriber.close()
    print()


async def timed_turn(registry, caller: int) -> tuple[float, float]:  # a Registry
    session = registry.session(f"caller-{caller}", SWARM, metadata={"caller": "+442079460321"})
    started = time.perf_counter()
    first = None
    async for _sentence in session.stream(FIRST_TURN):
        first = first or time.perf_counter() - started
    total = time.perf_counter() - started
    return first or total, total


async def first_turn_table(model: str, threads: int, callers: int) -> None:
    file = local_model_file(model)
    llm = LLMConfig(provider="local", local_model=model, local_threads=threads, timeout=120.0)
    rows = []
    for warm in (False, True):
        server = LocalServer(ServerSpec(file.path, file.chat_template, threads=threads, name=model))
        provider = LocalProvider(server, model=model, timeout=llm.timeout, name=f"local:{model}")
        await provider.start()
        llm_choice = LLMChoice(dict.fromkeys(("triage", "sales", "refund"), provider), "bench", (provider,))
        shop = Shop(":memory:")
        registry = build_registry(shop, llm_choice.per_agent)
        if warm:
            started = time.perf_counter()
            await prefill(registry, SWARM, llm_choice)
            print(f"prefill of the 3 agents at start-up: {time.perf_counter() - started:.1f} s", flush=True)
            rows.append(("first caller, after prefill (warm)", *await timed_turn(registry, 1)))
            for caller in range(2, callers):
                await timed_turn(registry, caller)
            rows.append((f"caller {callers}", *await timed_turn(registry, callers)))
        else:
            rows.append(("first caller, no prefill (cold)", *await timed_turn(registry, 1)))
        await provider.aclose()
        shop.close()
    print(f"| first turn, {model}, {threads} threads: {FIRST_TURN!r} | first sentence s | whole turn s |")
    print("|---|---:|---:|")
    for label, first, total in rows:
        print(f"| {label} | {first:.2f} | {total:.2f} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=LLMConfig().local_model)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--configs", default="1x0,1x10,2x0,2x10", help="THREADSxNICE,...")
    parser.add_argument("--callers", type=int, default=10, help="the warm caller whose first turn is reported")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--skip-first-turn", action="store_true")
    args = parser.parse_args()
    print(
        f"# local_llm_load on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start "
        "(other work on the machine inflates times)\n"
    )
    if not args.skip_load:
        configs = [tuple(int(n) for n in c.split("x")) for c in args.configs.split(",")]
        load_table(args.model, configs, args.calls, args.seconds)  # type: ignore[arg-type]
    if not args.skip_first_turn:
        asyncio.run(first_turn_table(args.model, Config().llm.local_threads, args.callers))


if __name__ == "__main__":
    main()
