"""Where a turn's time goes on the local model: the demo's two calls (buy, return) as text, turn by turn.

Each turn of the shop's swarm on llama.cpp's server (after start-up's prefill) is timed from the caller's
words to the first sentence and to the end, and every completion the turn asked for (a hand-over, a tool
call, a repair after validation feedback each cost one) is listed with llama.cpp's own counts: prompt
tokens processed, tokens taken from the cache, tokens generated, and the milliseconds of each. The last
table counts validation failures, feedback rounds, rescues and placeholders per 100 turns.

The calls follow the demo (callcenter/demo.py): after the caller's yes, while nothing is written and the
agent asks a question, the caller answers (demo.ANSWERS, at most twice), as in the demo.

Usage: .venv/bin/python benchmarks/local_llm_turns.py [--model qwen2.5-coder-1.5b] [--repeat 1] [--threads N]
       [--parallel 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from callcenter.agents import AGENTS, SWARM, build_registry  # noqa: E402
from callcenter.config import LLMConfig  # noqa: E402
from callcenter.demo import ANSWERS, CALLER, CALLS, MAX_ANSWERS  # noqa: E402
from callcenter.llm_choice import LLMChoice, prefill  # noqa: E402
from callcenter.local_model import local_server  # noqa: E402
from callcenter.shop import Shop  # noqa: E402
from swarm.events import Rescued, ToolCallRepaired, ValidationFailed  # noqa: E402
from swarm.messages import CompletionRequest  # noqa: E402
from swarm.providers.base import Completion, Delta, Provider  # noqa: E402
from swarm.providers.local import LocalProvider  # noqa: E402


@dataclass
class Call:
    """One completion as the session asked for it."""

    agent: str
    seconds: float
    first_delta_s: float | None
    timings: dict[str, float]
    tool_calls: tuple[str, ...]


@dataclass
class Turn:
    call: str
    said: str
    first_sentence_s: float
    seconds: float
    reply: str
    completions: list[Call] = field(default_factory=list)


class Recorder:
    """A provider that passes everything through and notes each completion."""

    def __init__(self, inner: Provider) -> None:
        self.inner, self.name = inner, inner.name
        self.calls: list[Call] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        started, first = time.perf_counter(), None
        async for item in self.inner.stream(request):
            if isinstance(item, Delta) and first is None:
                first = time.perf_counter() - started
            if isinstance(item, Completion):
                self.calls.append(
                    Call(
                        request.agent,
                        time.perf_counter() - started,
                        first,
                        dict(item.timings or {}),
                        tuple(c.name for c in item.tool_calls),
                    )
                )
            yield item


async def run_call(
    registry, recorder: Recorder, title: str, lines: list[str], shop: Shop, n: int
) -> tuple[list[Turn], list]:
    session = registry.session(f"{title}-{n}", SWARM, metadata={"caller": CALLER})
    turns: list[Turn] = []

    async def turn(text: str) -> str:
        before = len(recorder.calls)
        started, first, sentences = time.perf_counter(), None, []
        async for sentence in session.stream(text):
            first = first if first is not None else time.perf_counter() - started
            sentences.append(sentence)
        total = time.perf_counter() - started
        reply = " ".join(sentences)
        turns.append(Turn(title, text, first if first is not None else total, total, reply, recorder.calls[before:]))
        print(_row(turns[-1]), file=sys.stderr, flush=True)  # as it goes: a slow machine may not reach the end
        return reply

    written = _written(shop)
    replies = [await turn(line) for line in lines]
    for _ in range(MAX_ANSWERS):
        if _written(shop) != written or not replies[-1].rstrip().endswith("?"):
            break
        replies.append(await turn(ANSWERS[title]))
    return turns, session.events


def _written(shop: Shop) -> tuple[int, int]:
    orders = shop.find_orders(customer_phone=CALLER)
    return len(orders), sum(line.returned_quantity for order in orders for line in order.lines)


def _cell(calls: list[Call], key: str) -> str:
    return "+".join(f"{c.timings.get(key, 0):.0f}" for c in calls) or "-"


def turn_table(turns: list[Turn]) -> None:
    print(
        "| call | caller says | completions (agent: tools) | prompt tok | cached tok | generated tok | prompt s | "
        "generate s | first sentence s | turn s | reply |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for t in turns:
        print(_row(t))
    print()


def _row(t: Turn) -> str:
    agents = ", ".join(f"{c.agent}{': ' + '/'.join(c.tool_calls) if c.tool_calls else ''}" for c in t.completions)
    prompt_s = "+".join(f"{c.timings.get('prompt_ms', 0) / 1000:.1f}" for c in t.completions)
    gen_s = "+".join(f"{c.timings.get('predicted_ms', 0) / 1000:.1f}" for c in t.completions)
    return (
        f"| {t.call.split()[-1]} | {t.said} | {len(t.completions)} ({agents}) | {_cell(t.completions, 'prompt_n')} "
        f"| {_cell(t.completions, 'cache_n')} | {_cell(t.completions, 'predicted_n')} | {prompt_s} | {gen_s} "
        f"| {t.first_sentence_s:.1f} | {t.seconds:.1f} | {t.reply[:70]} |"
    )


def summary(turns: list[Turn], events: list, outcomes: list[str]) -> None:
    calls = [c for t in turns for c in t.completions]
    med = lambda values: statistics.median(values) if values else 0.0  # noqa: E731
    print("| per turn (median over the turns) | value |")
    print("|---|---:|")
    print(f"| turns | {len(turns)} |")
    print(
        f"| completions per turn | {med([len(t.completions) for t in turns]):.1f} (mean {len(calls) / max(1, len(turns)):.2f}) |"
    )
    print(f"| first sentence s | {med([t.first_sentence_s for t in turns]):.1f} |")
    print(f"| whole turn s | {med([t.seconds for t in turns]):.1f} |")
    print(f"| prompt tokens processed per completion | {med([c.timings.get('prompt_n', 0) for c in calls]):.0f} |")
    print(f"| prompt tokens from the cache per completion | {med([c.timings.get('cache_n', 0) for c in calls]):.0f} |")
    print(f"| tokens generated per completion | {med([c.timings.get('predicted_n', 0) for c in calls]):.0f} |")
    print(
        f"| prompt s / generate s per completion | {med([c.timings.get('prompt_ms', 0) / 1000 for c in calls]):.1f} / "
        f"{med([c.timings.get('predicted_ms', 0) / 1000 for c in calls]):.1f} |"
    )
    print(f"| outcome of each call | {'; '.join(outcomes)} |")
    print()
    counts: Counter[str] = Counter()
    for event in events:
        if isinstance(event, ValidationFailed):
            counts["validation failed (a feedback round)"] += 1
        elif isinstance(event, Rescued):
            counts[f"rescue: {event.stage}"] += 1
        elif isinstance(event, ToolCallRepaired):
            counts[f"tool call repaired ({event.form})"] += 1
    print("| per 100 turns | count |")
    print("|---|---:|")
    for name in (
        "validation failed (a feedback round)",
        "rescue: flush",
        "rescue: placeholder",
        "rescue: repeated_call",
        "rescue: provider_error",
    ):
        counts.setdefault(name, 0)
    for name, count in sorted(counts.items()):
        print(f"| {name} | {100 * count / max(1, len(turns)):.0f} |")
    print()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=LLMConfig().local_model)
    parser.add_argument("--repeat", type=int, default=1, help="times to run the two calls")
    parser.add_argument("--parallel", type=int, default=len(AGENTS), help="llama.cpp's slots (1: as before)")
    parser.add_argument("--threads", type=int, default=LLMConfig().local_threads)
    args = parser.parse_args()
    llm = LLMConfig(local_threads=args.threads)
    print(
        f"# local_llm_turns: {args.model}, {llm.local_threads} threads, "
        f"{args.parallel} slots; {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at start (other work on the machine inflates times)\n"
    )
    server = local_server(args.model, threads=llm.local_threads, ctx=llm.local_ctx, parallel=args.parallel)
    provider = LocalProvider(server, model=server.spec.name, timeout=180.0, name=f"local:{server.spec.name}")
    started = time.perf_counter()
    await provider.start()
    recorder = Recorder(provider)
    shop = Shop(":memory:")
    shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=6)
    registry = build_registry(shop, dict.fromkeys(AGENTS, recorder))
    await prefill(registry, SWARM, LLMChoice(dict.fromkeys(AGENTS, provider), "bench", (provider,)))
    print(f"start-up and prefill of the {len(AGENTS)} agents: {time.perf_counter() - started:.1f} s\n")
    turns, events, outcomes = [], [], []
    try:
        for n in range(args.repeat):
            for title, lines in CALLS.items():
                before = _written(shop)
                call_turns, call_events = await run_call(registry, recorder, title, lines, shop, n)
                turns += call_turns
                events += call_events
                orders, returns = (a - b for a, b in zip(_written(shop), before, strict=True))
                outcomes.append(f"{title.split()[-1]}: {orders} order, {returns} return")
    finally:
        await provider.aclose()
        shop.close()
    turn_table(turns)
    summary(turns, events, outcomes)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    asyncio.run(main())
