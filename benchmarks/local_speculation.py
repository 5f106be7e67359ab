"""llama.cpp's draftless speculative decoding on the local model: the same completions with and without it.

A reply of the local model often repeats words already in its prompt: a tool result's say line, a product's
name, the JSON of a tool call like the last one. n-gram speculation copies a draft from the slot's own tokens
and checks it in one batch, which on a CPU costs about what reading a few prompt tokens does.

The workload is real: `--capture FILE` runs two text calls of the demo's kind (`voiceswarm chat`, the model
taking every step, no router) and keeps every chat-completion request the provider sent, in order. The
replay then sends those requests, one after another as the calls did, to a fresh server per variant and
round (variants interleaved round by round, so that the machine's load falls on all alike), each pinned to
its agent's slot as in a call, and prints per variant the medians over rounds of: the wall time of all the
completions, the generation's tokens per second, and llama.cpp's draft counts; and how many replies came out
the same as without speculation (sampling at the calls' temperature 0.2 with a fixed seed).

Usage: .venv/bin/python benchmarks/local_speculation.py   (captures var/speculation.jsonl once, then replays it)
       .venv/bin/python benchmarks/local_speculation.py --capture FILE
       .venv/bin/python benchmarks/local_speculation.py --replay FILE [--rounds 3] [--variants none,draft:4,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from callcenter.config import LLMConfig  # noqa: E402
from callcenter.local_model import local_model_file  # noqa: E402
from swarm.providers import LocalServer, ServerSpec  # noqa: E402

# Two calls in the words of the tuning set (../shared/data/caller_utterances.jsonl and follow-ups).
CALLS = (
    ("Hi, I would like to buy a new phone charger.", "the fast one, how much is it", "Yes, please.", "thanks, bye"),
    ("The toaster you sent me does not work.", "my postcode is SW1A 1AA", "yes, the toaster", "Yes, please."),
)
DEFAULT = ROOT / "var" / "speculation.jsonl"
VARIANTS = "none,ngram-simple:12:48,ngram-simple:4:16,ngram-map-k:4:16,draft:4"
CAPTURING = """
import json, os, sys
sys.path.insert(0, os.environ["ROOT"])
from swarm.providers import openai_compat
_body = openai_compat.OpenAIProvider._body
def body(self, messages, request):
    out = _body(self, messages, request)
    with open(os.environ["CAPTURE"], "a") as file:
        file.write(json.dumps({"agent": request.agent, **out}) + "\\n")
    return out
openai_compat.OpenAIProvider._body = body
from callcenter.cli import main
sys.exit(main(sys.argv[1:]))
"""


@dataclass
class Round:
    wall_s: float = 0.0
    predicted_n: int = 0
    predicted_ms: float = 0.0
    draft_n: int = 0
    accepted_n: int = 0
    replies: list[str] = field(default_factory=list)


def capture(path: Path) -> None:
    """Run the calls through `voiceswarm chat` with the local model and no router; keep the requests."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as config:
        config.write("[llm]\nprovider = 'local'\nroute_first = false\n")
    env = {**os.environ, "ROOT": str(ROOT), "CAPTURE": str(path)}
    for number, lines in enumerate(CALLS):
        command = [
            sys.executable,
            "-c",
            CAPTURING,
            "--config",
            config.name,
            "chat",
            "--caller",
            f"+4416329600{number:02d}",
        ]
        subprocess.run(
            command,
            input="\n".join(lines) + "\n",
            text=True,
            env=env,
            check=True,
            timeout=600,
            stdout=subprocess.DEVNULL,
        )
    print(f"{sum(1 for _ in path.open())} requests in {path}")


def replay_once(requests: list[dict], spec: ServerSpec) -> Round:
    server = LocalServer(spec)
    server.start()
    result = Round()
    try:
        with httpx.Client(base_url=server.url, timeout=120.0) as client:
            for request in requests:
                body = {k: v for k, v in request.items() if k not in ("agent", "extra_body")}
                body |= request.get("extra_body") or {}
                body |= {"stream": False, "seed": 7}
                started = time.monotonic()
                answer = client.post("/v1/chat/completions", json=body).raise_for_status().json()
                result.wall_s += time.monotonic() - started
                timings = answer.get("timings", {})
                result.predicted_n += timings.get("predicted_n", 0)
                result.predicted_ms += timings.get("predicted_ms", 0.0)
                result.draft_n += timings.get("draft_n", 0)
                result.accepted_n += timings.get("draft_n_accepted", 0)
                message = answer["choices"][0]["message"]
                result.replies.append(json.dumps([message.get("content"), message.get("tool_calls")]))
    finally:
        server.stop()
    return result


def spec_of(variant: str, slots: int) -> ServerSpec:
    """`none`, `KIND:N:M` (an n-gram kind, llama_server.SPECULATION) or `draft:M` (the 0.5B drafting M)."""
    llm = LLMConfig()
    file = local_model_file(llm.local_model)
    kind, _, sizes = variant.partition(":")
    if kind == "draft":
        draft = local_model_file("qwen2.5-coder-0.5b").path
        return replace(spec_of("none", slots), draft_model=draft, draft_max=int(sizes or 16))
    n, _, m = sizes.partition(":")
    return ServerSpec(
        file.path,
        file.chat_template,
        threads=llm.local_threads,
        batch_threads=llm.local_batch_threads,
        parallel=slots,
        name=file.name,
        spec_type=kind,
        spec_n=int(n or 12),
        spec_m=int(m or 48),
    )


def replay(path: Path, variants: list[str], rounds: int) -> None:
    requests = [json.loads(line) for line in path.open()]
    slots = 1 + max((r.get("extra_body") or {}).get("id_slot", 0) for r in requests)
    runs: dict[str, list[Round]] = {v: [] for v in variants}
    for number in range(rounds):
        for variant in variants:
            runs[variant].append(replay_once(requests, spec_of(variant, slots)))
            last = runs[variant][-1]
            print(f"round {number + 1} {variant}: {last.wall_s:.1f} s, {last.predicted_n} tokens", flush=True)
    base = runs[variants[0]]
    print(f"\n{len(requests)} completions a round, {rounds} rounds, medians; load average {os.getloadavg()[0]:.1f}\n")
    print("| variant | all completions s | generation tokens/s | drafted / accepted tokens | replies as without |")
    print("|---|---|---|---|---|")
    for variant, done in runs.items():
        wall = statistics.median(r.wall_s for r in done)
        speed = statistics.median(r.predicted_n / (r.predicted_ms / 1000) for r in done if r.predicted_ms)
        drafted = statistics.median(r.draft_n for r in done)
        accepted = statistics.median(r.accepted_n for r in done)
        same = statistics.median(
            sum(a == b for a, b in zip(r.replies, b_.replies, strict=True)) for r, b_ in zip(done, base, strict=True)
        )
        print(
            f"| {variant} | {wall:.1f} | {speed:.1f} | {drafted:.0f} / {accepted:.0f} | {same:.0f} of {len(requests)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capture", type=Path)
    parser.add_argument("--replay", type=Path)
    parser.add_argument("--variants", default=VARIANTS)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not (args.capture or args.replay):  # `make bench`: the calls captured once, then replayed
        args.replay = DEFAULT
        if not DEFAULT.exists():
            args.capture = DEFAULT
    if args.capture:
        capture(args.capture)
    if args.replay:
        replay(args.replay, args.variants.split(","), args.rounds)


if __name__ == "__main__":
    main()
