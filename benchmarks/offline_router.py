"""Triage accuracy of the offline router (buy / return / wants a person / unclear).

The phrases were tuned on caller_utterances.jsonl and triage_tuning.jsonl; triage_untouched.jsonl was
written independently afterwards and never tuned on: its row is the figure that counts (target 90%).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from callcenter.agents import build_registry  # noqa: E402
from callcenter.shop import Shop  # noqa: E402
from swarm.providers.offline import OfflineRouter  # noqa: E402

DATA = ROOT / "tests" / "data"
SETS = (
    ("caller_utterances.jsonl", "tuned on"),
    ("triage_tuning.jsonl", "tuned on"),
    ("triage_untouched.jsonl", "never tuned on"),
)
INTENT = {
    "navigate_to_sales": "buy",
    "navigate_to_refund": "return",
    "transfer_to_operator": "operator",
    "end_call": "goodbye",
    None: "unclear",
}


def main() -> None:
    registry = build_registry(Shop(":memory:"), {})
    router = registry.providers["offline"]
    assert isinstance(router, OfflineRouter)  # registered as a Provider: best_tool is the router's own
    tools = tuple(registry.tools[name].spec() for name in registry.agents["triage"].tools)
    print(
        f"| {'set':<24} | {'role':<15} | {'n':>3} | {'accuracy':>8} |   buy | return | operator | unclear | us/sentence |"
    )
    print(f"|{'-' * 26}|{'-' * 17}|{'-' * 5}|{'-' * 10}|-------|--------|----------|---------|-------------|")
    for name, role in SETS:
        rows = [json.loads(line) for line in (DATA / name).read_text().splitlines()]
        hits: Counter[str] = Counter()
        totals: Counter[str] = Counter()
        times: list[float] = []
        for row in rows:
            start = time.perf_counter()
            tool = router.best_tool(row["text"], tools)
            times.append(time.perf_counter() - start)
            totals[row["intent"]] += 1
            hits[row["intent"]] += INTENT[tool.name if tool else None] == row["intent"]
        per = " | ".join(
            f"{hits[i]}/{totals[i]}".rjust(w) for i, w in (("buy", 5), ("return", 6), ("operator", 8), ("unclear", 7))
        )
        accuracy = sum(hits.values()) / len(rows)
        print(
            f"| {name:<24} | {role:<15} | {len(rows):>3} | {accuracy:>8.1%} | {per} | {statistics.median(times) * 1e6:>11.0f} |"
        )


if __name__ == "__main__":
    main()
