"""`voiceswarm eval SUITE... --llm LLM[,LLM...] --repeat K`: the scenarios × LLMs × K trials, scored."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from callcenter.config import Config
from callcenter.llm_spec import USAGE, LLMSpec, LLMSpecError, parse_llm
from callcenter.shop import ShopError
from callcenter.swarm_file import SwarmFile, SwarmFileError, load_swarm_file
from callcenter.testbed.llms import OpenLLM, open_llm
from callcenter.testbed.report import baseline_diff, markdown, summarise
from callcenter.testbed.runner import TrialResult, run_trial
from callcenter.testbed.scenario import Scenario, ScenarioError, load_suite
from callcenter.testbed.state import ShopState
from callcenter.testbed.trial_shop import BuiltInStore, ShopUnderTest, shop_under_test
from callcenter.testbed.voices import VoiceError, parse_voice
from speech import ModelError
from swarm import ProviderError

if TYPE_CHECKING:  # the phone path imports the voice server and the speech models: only in audio mode
    from callcenter.testbed.phonecall import AudioMode


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("eval", help="score scenario files against one or more LLMs (pass^k)")
    p.add_argument("suite", nargs="+", help="scenario .toml files or directories of them")
    p.add_argument(
        "--llm",
        default="offline",
        help=f"LLMs, comma-separated: {USAGE} (default: offline)",
    )
    p.add_argument("--repeat", "-k", type=int, default=1, help="trials per scenario and LLM (pass^1..pass^K)")
    p.add_argument("--only", action="append", default=[], help="run only scenarios whose id contains this (repeatable)")
    p.add_argument("--jobs", type=int, default=1, help="trials run at once per LLM (the offline router gains nothing)")
    p.add_argument("--json", dest="json_out", help="write every run and the summary to this file")
    p.add_argument("--baseline", help="an earlier --json file: print what got better and worse")
    p.add_argument("--min-pass", type=float, help="exit 1 when an LLM's overall pass^1 is below this (0..1)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument(
        "--voice",
        nargs="+",
        help="audio mode: each trial is a real SIP call to a voice server; the caller speaks with piper, espeak "
        "(espeak-ng), or WAV recordings (FILE.wav with its words in FILE.txt); trials run one at a time",
    )
    p.add_argument(
        "--noise", type=float, metavar="SNR_DB", help="audio mode: white noise this many dB below the speech"
    )
    p.add_argument(
        "--codec", choices=("pcmu", "pcma"), help="audio mode: the G.711 codec the caller offers (default pcmu)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    try:
        # The configured swarm file's agents, and the configured shop: the trials run on them.
        swarm = load_swarm_file(config.swarm.file or None)
        shop = shop_under_test(config)
        scenarios = [
            s
            for s in load_suite(args.suite, agents=tuple(swarm.agents))
            if not args.only or any(o in s.id for o in args.only)
        ]
        specs = [parse_llm(t.strip()) for t in args.llm.split(",") if t.strip()]
        baseline = json.loads(Path(args.baseline).read_text(encoding="utf-8")) if args.baseline else None
        audio = audio_mode(args)
    except (ScenarioError, LLMSpecError, VoiceError, SwarmFileError, OSError, ValueError) as error:
        print(f"voiceswarm eval: {error}", file=sys.stderr)
        return 2
    if not scenarios or args.repeat < 1:
        print("voiceswarm eval: nothing to run (no scenario selected, or --repeat below 1)", file=sys.stderr)
        return 2
    if audio is not None and args.jobs > 1 and not args.quiet:
        print("voiceswarm eval: audio trials run one at a time (--jobs is ignored)", file=sys.stderr)
    if shop.one_at_a_time and args.jobs > 1 and not args.quiet:
        print(f"voiceswarm eval: trials on {shop.description} run one at a time (--jobs is ignored)", file=sys.stderr)
    if not args.quiet and not isinstance(shop, BuiltInStore):
        print(f"voiceswarm eval: the trials place orders in {shop.description}", file=sys.stderr)
    try:
        results = asyncio.run(_evaluate(scenarios, specs, args, config, audio, shop, swarm))
    except (ScenarioError, LLMSpecError, ProviderError, ModelError, ShopError, SwarmFileError) as error:
        print(f"\nvoiceswarm eval: {error}", file=sys.stderr)
        return 2
    summary = {**(audio.summary() if audio is not None else {"mode": "text"}), **summarise(results, args.repeat)}
    report = {"runs": [r.to_dict() for r in results], "summary": summary}
    print(markdown(summary))
    for run_ in results:
        if run_.skipped:
            print(f"\nSKIPPED {run_.llm} {run_.scenario} #{run_.trial}: {run_.skipped}")
        elif not run_.passed:
            print(f"\nFAILED {run_.llm} {run_.scenario} #{run_.trial}: " + "; ".join(run_.failures))
    if baseline is not None:
        print("\nAgainst the baseline:\n" + "\n".join(baseline_diff(baseline, report)))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    if args.min_pass is not None:
        # "brains": the --json summary's key for the LLMs (kept: that format is fixed, and CI parses it).
        low = {
            n: s["pass_hat"]["1"] for n, s in summary["brains"].items() if (s["pass_hat"]["1"] or 0.0) < args.min_pass
        }
        if low:
            print(
                "\nbelow --min-pass {}: {}".format(args.min_pass, ", ".join(f"{n} {v:.2f}" for n, v in low.items())),
                file=sys.stderr,
            )
            return 1
    return 0


def audio_mode(args: argparse.Namespace) -> AudioMode | None:
    """The phone path's settings from --voice, --noise and --codec; None: text mode. Raises VoiceError."""
    if args.voice is None:
        if args.noise is not None or args.codec is not None:
            raise VoiceError("--noise and --codec are for audio mode: name the caller's voice with --voice")
        return None
    from callcenter.testbed.phonecall import AudioMode

    return AudioMode(parse_voice(args.voice), args.noise, args.codec or "pcmu")


async def _evaluate(
    scenarios: list[Scenario],
    specs: list[LLMSpec],
    args: argparse.Namespace,
    config: Config,
    audio: AudioMode | None = None,
    under_test: ShopUnderTest | None = None,
    swarm: SwarmFile | None = None,
) -> list[TrialResult]:
    results: list[TrialResult] = []
    total = len(scenarios) * len(specs) * args.repeat
    shop: ShopUnderTest = under_test if under_test is not None else BuiltInStore()
    with tempfile.TemporaryDirectory(prefix="voiceswarm-eval-") as folder, contextlib.ExitStack() as stack:
        work = Path(folder)
        # The reference state depends on the scenario only: replayed once, compared with every trial.
        expected = {s.id: await asyncio.to_thread(shop.expected, work, s) for s in scenarios if shop.skipped(s) is None}
        empty = ShopState({}, Counter(), Counter())  # a skipped scenario's: its trials compare nothing
        # Calls one at a time: two at once would share the 2 cores' Whisper and Piper and measure each other; trials
        # on one live order system would see each other's orders.
        gate = asyncio.Semaphore(1 if audio is not None or shop.one_at_a_time else max(1, args.jobs))
        phone = None
        if audio is not None:
            from callcenter.testbed.phonecall import PhoneLine

            phone = await asyncio.to_thread(PhoneLine.open, audio, config)
            stack.callback(phone.close)

        async def one(llm: OpenLLM, scenario: Scenario, trial: int) -> None:
            async with gate:
                result = await run_trial(
                    scenario, llm, trial, work, expected.get(scenario.id, empty), config, phone, shop=shop, swarm=swarm
                )
            results.append(result)
            _progress(len(results), total, result, args.quiet)

        for spec in specs:
            llm = await open_llm(spec, config, swarm)
            try:
                if not args.quiet:
                    print(f"{spec.text}: {llm.description}", file=sys.stderr)
                await asyncio.gather(*(one(llm, s, t) for s in scenarios for t in range(1, args.repeat + 1)))
            finally:
                llm.close()
    if not args.quiet:
        print(file=sys.stderr)
    # Gathered trials finish in any order: the report lists them as they were asked for.
    order = {
        (spec.text, s.id, t): i
        for i, (spec, s, t) in enumerate(
            (spec, s, t) for spec in specs for s in scenarios for t in range(1, args.repeat + 1)
        )
    }
    return sorted(results, key=lambda r: order[(r.llm, r.scenario, r.trial)])


def _progress(done: int, total: int, result: TrialResult, quiet: bool) -> None:
    if quiet:
        return
    width = 30
    filled = width * done // total
    mark = "pass" if result.passed else "FAIL"
    print(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {mark} {result.scenario[:40]:<40}",
        end="",
        file=sys.stderr,
        flush=True,
    )
