"""Triage's hand-over decided without a generation: the router's phrases, the sentence classifier, both.

For every labelled set, the sure calls of triage's router (`OfflineRouter.sure_call`) with the phrases alone, the
classifier alone (callcenter.triage_classifier: sure of buy or return, else unsure) and both (the phrases with the
classifier as second opinion, as `llm.triage_classifier` wires them): sure and right / sure and wrong / unsure. Then
the offline brain's triage accuracy (best_tool's fuzzy phrases, as benchmarks/offline_router.py) before and with
the classifier's sure calls, and the classifier's time per sentence.

The classifier's examples and margin come from caller_utterances and triage_tuning only; the other sets were never
looked at to choose anything. `--without-unseen` leaves out triage_unseen (read once, last).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from callcenter.agents import build_registry  # noqa: E402
from callcenter.shop import Shop  # noqa: E402
from callcenter.triage_classifier import LABELS, MARGIN, TriageClassifier, examples  # noqa: E402
from swarm.messages import CompletionRequest, Message, ToolSpec  # noqa: E402
from swarm.providers.offline import OfflineRouter  # noqa: E402

DATA = ROOT / "tests" / "data"
SETS = (
    ("caller_utterances", "tuned on"),
    ("triage_tuning", "tuned on"),
    ("triage_untouched", "held out"),
    ("triage_heldout", "held out"),
    ("triage_fresh", "held out"),
    ("triage_blind", "held out"),
    ("triage_unseen", "held out, read once"),
)
INTENT = {
    "navigate_to_sales": "buy",
    "navigate_to_refund": "return",
    "transfer_to_operator": "operator",
    "end_call": "goodbye",
    None: "unclear",
}
RUNS = 5
TOOLS = {"buy": "navigate_to_sales", "return": "navigate_to_refund"}
MARGINS = (0.0, 0.03, 0.05, 0.08, 0.10, 0.12, 0.15, 0.20)


class Fixed:
    """A classifier whose sure call is set from outside (a left-out example's verdict), for the router to combine."""

    def __init__(self) -> None:
        self.tool: str | None = None

    def decides(self, tool: str) -> bool:
        return tool in TOOLS.values()

    def sure_tool(self, request: CompletionRequest) -> str | None:
        return self.tool

    def asked_tool(self, request: CompletionRequest) -> str | None:
        return self.tool


def leave_one_out(classifier: TriageClassifier) -> None:
    """How the margin was chosen: each example classified by the centroids of the others, sure when its nearest
    class is buy or return by the margin; then that verdict as the router's second opinion (sure_call)."""
    labelled = examples()
    vectors = classifier.embedder.embed([text for text, _ in labelled])
    labels = np.array([label for _, label in labelled])
    fixed = Fixed()
    both, tools = router(fixed)
    verdicts = []
    for i, (text, label) in enumerate(labelled):
        rest = np.arange(len(labelled)) != i
        means = np.array([vectors[rest & (labels == c)].mean(axis=0) for c in LABELS])
        similarities = (means / np.linalg.norm(means, axis=1, keepdims=True)) @ vectors[i]
        first, second = np.argsort(similarities)[::-1][:2]
        verdicts.append((LABELS[first], float(similarities[first] - similarities[second]), label, text))
    print(
        f"Leave-one-out on the classifier's {len(labelled)} examples (caller_utterances + triage_tuning, deduplicated):"
    )
    print()
    print("| margin | classifier alone: sure / of them wrong | with the phrases: sure / of them wrong |")
    print("|---|---|---|")
    for margin in MARGINS:
        sure = wrong = sure_both = wrong_both = 0
        for nearest, gap, label, text in verdicts:
            fixed.tool = TOOLS.get(nearest) if gap >= margin else None
            sure += fixed.tool is not None
            wrong += fixed.tool is not None and nearest != label
            call = both.sure_call(CompletionRequest("triage", "bench", (Message("user", text),), tools))
            if call is not None:
                sure_both += 1
                wrong_both += INTENT[call.name] != label and not (
                    INTENT[call.name] == "operator" and label == "neither"
                )
        mark = " (chosen)" if margin == MARGIN else ""
        print(f"| {margin:.2f}{mark} | {sure} / {wrong} | {sure_both} / {wrong_both} |")
    print()


def router(classifier: TriageClassifier | Fixed | None) -> tuple[OfflineRouter, tuple[ToolSpec, ...]]:
    registry = build_registry(Shop(":memory:"), {}, classifier=classifier)
    offline = registry.providers["offline"]
    assert isinstance(offline, OfflineRouter)
    return offline, tuple(registry.tools[name].spec() for name in registry.agents["triage"].tools)


def tally(calls: list[str | None], intents: list[str]) -> str:
    """sure and right / sure and wrong / unsure, of tool names against labelled intents."""
    right = sum(c is not None and INTENT[c] == i for c, i in zip(calls, intents, strict=True))
    unsure = calls.count(None)
    return f"{right} / {len(calls) - right - unsure} / {unsure}"


def main() -> None:
    classifier = TriageClassifier()
    classifier.warm()
    leave_one_out(classifier)
    phrases, tools = router(None)
    both, _ = router(classifier)
    sets = [s for s in SETS if not (s[0] == "triage_unseen" and "--without-unseen" in sys.argv)]
    print("Sure and right / sure and wrong / unsure; offline brain: triage accuracy (buy, return, operator, unclear).")
    print()
    print("| set | role | n | phrases | classifier | both | offline brain before | with the classifier |")
    print("|---|---|---|---|---|---|---|---|")
    times: list[float] = []
    wrong: list[str] = []
    for name, role in sets:
        rows = [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]
        intents = [row["intent"] for row in rows]
        requests = [CompletionRequest("triage", "bench", (Message("user", row["text"]),), tools) for row in rows]
        alone = [phrases.sure_call(r) for r in requests]
        combined = [both.sure_call(r) for r in requests]
        classified = [classifier.sure_tool(r) for r in requests]
        before = [phrases.best_tool(row["text"], tools) for row in rows]
        after = [both.route(r).tool_calls for r in requests]
        hits_before = sum(INTENT[t.name if t else None] == i for t, i in zip(before, intents, strict=True))
        hits_after = sum(INTENT[c[0].name if c else None] == i for c, i in zip(after, intents, strict=True))
        print(
            f"| {name} | {role} | {len(rows)} | {tally([c.name if c else None for c in alone], intents)} | "
            f"{tally(classified, intents)} | {tally([c.name if c else None for c in combined], intents)} | "
            f"{hits_before / len(rows):.1%} | {hits_after / len(rows):.1%} |"
        )
        for row, call in zip(rows, combined, strict=True):
            if call is not None and INTENT[call.name] != row["intent"]:
                wrong.append(f"{name}: {row['text']!r} ({row['intent']}) -> {call.name}")
        if name == "triage_tuning":
            for _ in range(RUNS):
                for row in rows:
                    start = time.perf_counter()
                    classifier.classify(row["text"])
                    times.append(time.perf_counter() - start)
    print()
    print(f"classifier: {statistics.median(times) * 1e3:.1f} ms a sentence (median of {len(times)}, one thread)")
    for line in wrong:
        print(f"sure and wrong, both: {line}")


if __name__ == "__main__":
    main()
