"""The mid-sentence words rule (speech.turn_words.unfinished, voice.mid_sentence_wait) on text alone.

Every caller sentence in the repository's corpora (the triage sets, the caller utterances, the demo suite's
caller lines; none was written for this rule), as written (a "?" is Whisper's, and a question is finished):
- finished sentences the rule would hold (their reply comes up to 1.5 s later: the rule's cost);
- the sentence cut after each of its words but the last (where a caller may pause): how many cuts the rule
  holds, so the rest is heard in time. A cut can also end where a sentence could, so 100% is not the aim.

    .venv/bin/python benchmarks/mid_sentence.py
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from speech.turn_words import unfinished

ROOT = Path(__file__).resolve().parent.parent


def sentences() -> dict[str, list[str]]:
    corpora: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests" / "data").glob("*.jsonl")):
        if path.stem.startswith("languages_"):
            continue  # callers in other languages and in accented English: English word rules do not apply
        corpora[path.stem] = [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]
    lines = []
    for path in sorted((ROOT / "evals" / "shop").glob("*.toml")):
        scenario = tomllib.loads(path.read_text())
        lines += [turn["say"] for turn in scenario.get("turn", []) + scenario.get("if_asked", []) if turn.get("say")]
    corpora["demo suite caller lines"] = sorted(set(lines))
    return corpora


def main() -> None:
    print("| corpus | sentences | finished ones held | cuts held (mid-sentence) |")
    print("|---|---:|---:|---:|")
    totals = [0, 0, 0, 0]
    for name, texts in sentences().items():
        bare = [re.sub(r"[.!?]+$", "", t.strip()) for t in texts]
        cuts = [" ".join(t.split()[:n]) for t in bare for n in range(1, len(t.split()))]
        counts = (len(texts), sum(unfinished(t) for t in texts), len(cuts), sum(unfinished(c) for c in cuts))
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        print(row(name, *counts))
    print(row("all", *totals))


def row(name: str, n: int, held: int, cuts: int, cuts_held: int) -> str:
    return f"| {name} | {n} | {held} ({held / n:.1%}) | {cuts_held}/{cuts} ({cuts_held / max(1, cuts):.0%}) |"


if __name__ == "__main__":
    main()
