"""Time per turn spent outside the LLM (a scripted model answering at once), and memory per idle session.

Targets (issue 2): under 2 ms per turn, under 50 KB per idle session.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from callcenter.agents import AGENTS, SWARM, build_registry
from callcenter.shop import Shop
from swarm.messages import CompletionRequest
from swarm.providers.scripted import ScriptedProvider, reply

TURNS = 200
RUNS = 5


def answer(request: CompletionRequest):
    """A text reply, or a catalogue search then a text reply when the caller says "search"."""
    last = request.messages[-1]
    if last.role == "tool":
        return "We have that in stock for twenty four euros ninety. Shall I order one?"
    if request.agent == "triage":
        return reply("", ("navigate_to_sales", {}))
    if last.content.startswith("search"):
        return reply("", ("search_products", {"query": "phone charger"}))
    return "Sure. What else can I help you with today?"


async def turn_times_ms(shop: Shop, tool_turns: bool) -> list[float]:
    model = ScriptedProvider(answer, name="scripted")
    registry = build_registry(shop, {agent: model for agent in AGENTS})
    session = registry.session("bench", SWARM, metadata={"caller": "+441234567890"})
    await session.complete("I want to buy something")  # hand-over to sales, outside the timing
    times = []
    for turn in range(TURNS):
        text = f"search phone charger {turn}" if tool_turns else f"tell me more {turn}"
        start = time.perf_counter()
        await session.complete(text)
        times.append((time.perf_counter() - start) * 1000)
    return times


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def idle_session_bytes(shop: Shop, count: int = 1000) -> float:
    registry = build_registry(shop, {})
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    sessions = [registry.session(f"caller-{i}", SWARM, metadata={"caller": f"+44{i:09d}"}) for i in range(count)]
    for session in sessions:
        session.emit("Hello, you are through to the shop. How can I help?")
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    del sessions
    return grown / count


async def main() -> None:
    shop = Shop(":memory:")
    text = [await turn_times_ms(shop, tool_turns=False) for _ in range(RUNS)]
    tools = [await turn_times_ms(shop, tool_turns=True) for _ in range(RUNS)]
    memory = [idle_session_bytes(shop) for _ in range(3)]
    print(f"swarm overhead, median of {RUNS} runs of {TURNS} turns each (scripted model, answers at once)")
    print(f"| {'measure':<52} | {'value':>10} | target   |")
    print(f"|{'-' * 54}|{'-' * 12}|----------|")
    for label, runs in (("text reply", text), ("catalogue search, then text", tools)):
        median = statistics.median(statistics.median(run) for run in runs)
        tail = statistics.median(p95(run) for run in runs)
        print(f"| {'per turn, ' + label + ', median (ms)':<52} | {median:>10.3f} | < 2 ms   |")
        print(f"| {'per turn, ' + label + ', p95 (ms)':<52} | {tail:>10.3f} |          |")
    print(
        f"| {'idle session after a greeting (KB, median of 3)':<52} | {statistics.median(memory) / 1024:>10.1f} | < 50 KB  |"
    )


if __name__ == "__main__":
    asyncio.run(main())
