"""pass^k, the summary of an eval, its Markdown tables, and what changed against a baseline run."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from math import comb
from typing import Any

from callcenter.testbed.runner import TrialResult

METRICS = (
    "tools_expected",
    "tools_selected",
    "arg_errors_first_try",
    "arg_errors_after_feedback",
    "rescues",
    "placeholders",
    "provider_errors",
    "repairs",
)


def pass_hat_k(successes: int, trials: int, k: int) -> float | None:
    """τ-bench's pass^k: the chance that k trials drawn from these n all pass; None when n < k."""
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials")
    if k < 1 or trials < k:
        return None
    return comb(successes, k) / comb(trials, k)


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def summarise(results: Sequence[TrialResult], k: int) -> dict[str, Any]:
    """Per LLM: pass^1..pass^k per scenario and averaged over scenarios, and the counts behind the metrics."""
    llms: dict[str, Any] = {}
    for llm in dict.fromkeys(r.llm for r in results):
        runs = [r for r in results if r.llm == llm]
        scenarios: dict[str, Any] = {}
        for scenario in dict.fromkeys(r.scenario for r in runs):
            # A trial the backend could not run is neither a pass nor a failure (TrialResult.skipped).
            mine = [r for r in runs if r.scenario == scenario and not r.skipped]
            passed = sum(r.passed for r in mine)
            scenarios[scenario] = {
                "trials": len(mine),
                "passed": passed,
                "pass_hat": {str(j): pass_hat_k(passed, len(mine), j) for j in range(1, k + 1)},
                "turn_latency_p50_s": percentile([t for r in mine for t in r.turn_latency_s], 50),
            }
            skipped = next((r.skipped for r in runs if r.scenario == scenario and r.skipped), "")
            unchecked = list(dict.fromkeys(u for r in mine for u in r.unchecked))
            scenarios[scenario].update({"skipped": skipped} if skipped else {})
            scenarios[scenario].update({"unchecked": unchecked} if unchecked else {})
        overall = {}
        for j in range(1, k + 1):
            values = [s["pass_hat"][str(j)] for s in scenarios.values() if s["pass_hat"][str(j)] is not None]
            overall[str(j)] = sum(values) / len(values) if values else None
        totals = {m: sum(r.metrics.get(m, 0) for r in runs) for m in METRICS}
        latencies = [t for r in runs for t in r.turn_latency_s]
        llms[llm] = {
            "scenarios": scenarios,
            "pass_hat": overall,
            "metrics": totals,
            "tool_selection_accuracy": totals["tools_selected"] / totals["tools_expected"]
            if totals["tools_expected"]
            else None,
            "turn_latency_p50_s": percentile(latencies, 50),
            "turn_latency_p95_s": percentile(latencies, 95),
            "duration_s": round(sum(r.duration_s for r in runs), 2),
        }
    # The --json summary's key for the LLM specs stays "brains" (read below too): that format is fixed, and CI
    # parses it.
    return {"k": k, "brains": llms}


def mode_line(summary: dict[str, Any]) -> str:
    """How the trials were run: in text, or through the phone path with which voice, noise and codec."""
    if summary.get("mode") != "audio":
        return "Mode: text (the caller's turns go straight to the session)."
    noise = "no noise" if summary["noise_snr_db"] is None else f"noise at {summary['noise_snr_db']:g} dB SNR"
    return (
        f"Mode: audio (SIP and RTP to a voice server; caller voice {summary['voice']}, {noise}, "
        f"codec {summary['codec']}; trials one at a time; turn latency is voice-to-voice as the caller hears it)."
    )


def markdown(summary: dict[str, Any]) -> str:
    k = summary["k"]
    names = list(summary["brains"])
    audio = summary.get("mode") == "audio"
    heads = [f"pass^{j}" for j in range(1, k + 1)] + (["voice-to-voice p50"] if audio else [])
    lines = [
        mode_line(summary),
        "",
        "| scenario | LLM | " + " | ".join(heads) + " |",
        "|" + "---|" * (2 + len(heads)),
    ]
    scenarios = list(dict.fromkeys(s for b in summary["brains"].values() for s in b["scenarios"]))
    for scenario in scenarios:
        for name in names:
            row = summary["brains"][name]["scenarios"].get(scenario)
            if row is not None:
                cells = [_fraction(row["pass_hat"][str(j)]) for j in range(1, k + 1)]
                cells += [_seconds(row.get("turn_latency_p50_s"))] if audio else []
                lines.append(f"| {scenario} | {name} | " + " | ".join(cells) + " |")
    for name in names:
        overall = summary["brains"][name]["pass_hat"]
        lines.append(
            f"| **overall** | {name} | "
            + " | ".join(f"**{_fraction(overall[str(j)])}**" for j in range(1, k + 1))
            + (f" | {_seconds(summary['brains'][name]['turn_latency_p50_s'])}" if audio else "")
            + " |"
        )
    notes = {
        (scenario, kind, text)
        for b in summary["brains"].values()
        for scenario, row in b["scenarios"].items()
        for kind, text in [("skipped", row.get("skipped", ""))] + [("not checked", u) for u in row.get("unchecked", [])]
        if text
    }
    if notes:
        lines += ["", "What the shop could not run or report:"]
        lines += [f"- {scenario}: {kind}: {text}" for scenario, kind, text in sorted(notes)]
    lines += [
        "",
        "| LLM | tool selection | arg errors 1st try | arg errors after feedback | rescues | placeholders "
        "| provider errors | repairs | turn p50 | turn p95 | run time |",
        "|" + "---|" * 11,
    ]
    for name in names:
        b = summary["brains"][name]
        m = b["metrics"]
        lines.append(
            f"| {name} | {_fraction(b['tool_selection_accuracy'])} | {m['arg_errors_first_try']} | {m['arg_errors_after_feedback']} "
            f"| {m['rescues']} | {m['placeholders']} | {m['provider_errors']} | {m['repairs']} "
            f"| {_seconds(b['turn_latency_p50_s'])} | {_seconds(b['turn_latency_p95_s'])} | {b['duration_s']:.1f} s |"
        )
    return "\n".join(lines)


def baseline_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What got better and worse since `old` (both --json outputs), by pass^1 per LLM and scenario; an old file is read by the same keys."""
    lines: list[str] = []
    for llm, now in new["summary"]["brains"].items():
        before = old.get("summary", {}).get("brains", {}).get(llm)
        if before is None:
            lines.append(f"{llm}: not in the baseline")
            continue
        for scenario, row in now["scenarios"].items():
            was = before["scenarios"].get(scenario)
            if was is None:
                lines.append(f"new     {llm} {scenario}: pass^1 {_fraction(row['pass_hat']['1'])}")
                continue
            a, b = was["pass_hat"].get("1"), row["pass_hat"]["1"]
            if a is not None and b is not None and a != b:
                word = "better " if b > a else "worse  "
                lines.append(f"{word} {llm} {scenario}: pass^1 {_fraction(a)} -> {_fraction(b)}")
        for scenario in before["scenarios"].keys() - now["scenarios"].keys():
            lines.append(f"gone    {llm} {scenario}")
        a, b = before["pass_hat"].get("1"), now["pass_hat"]["1"]
        lines.append(f"overall {llm}: pass^1 {_fraction(a)} -> {_fraction(b)}")
    return lines


def _fraction(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"
