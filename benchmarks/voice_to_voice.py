"""Voice-to-voice latency of whole calls: N built-in SIP callers talk to one VoiceServer at once.

Each caller says 3 lines (Piper, sent as RTP), each after the agent's previous turn. The model is a
scripted one behind Ollama's wire protocol (tests/fake_ollama.py) that answers every turn after a fixed
200 ms, with a new first clause each time (a phrase said before would come from the synthesizer's
cache). Per server turn, from the Conversation's TurnTiming, whose clock starts when the endpointer
decides the caller has stopped (end_silence_ms = 500 ms after the last voiced frame):
  stt  end of speech -> transcript             llm  transcript -> the model's first sentence
  tts  first sentence -> its first audio       v2v  end of speech -> first reply audio handed to RTP
and measured at the caller, "heard": the end of the caller's actual speech -> the first frame of the
reply with speech in it (this includes the endpointer's 500 ms, the network and the jitter buffers).
"turns" can exceed "lines" when the server's endpointer cut a line in two; "unanswered" counts lines
after which the caller heard nothing within its turn timeout; "early" is the share of turns transcribed
from the caller's first pause (voice.early_transcript_ms), before the end of the turn was certain, and
"reply" the share whose model reply was started there too (voice.early_reply) and taken by the turn;
"load" is the machine's load average.

With --llm local the LLM is the demo's: the packaged Qwen2.5-Coder-1.5B in llama.cpp's server (its prompts
prefilled at start-up), and the callers say the demo's purchase (LOCAL_LINES), each reply waited for up to
LOCAL_TIMEOUT_S; "llm" is then the real model's time to the first sentence, hand-overs and tool calls included.

Calls start spread over 4 seconds (in a seeded random order), so their turns do not all line up. The
callers run in a child process (on the same 2 cores: their RTP and VAD take a little CPU) and skip Whisper.

Usage: .venv/bin/python benchmarks/voice_to_voice.py [--calls 1,4,8] [--models tiny.en,base] [--no-search]
                                                    [--early-ms 200 (0: transcribe at the end of the turn)]
                                                    [--end-silence-ms 500] [--finished-ms 0 (off)]
                                                    [--whisper-window 0 (30: Whisper's own)]
                                                    [--llm scripted|local] [--early-reply on|off|both]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from callcenter.config import Config, LLMConfig, SipConfig, VoiceConfig  # noqa: E402
from callcenter.server import VoiceServer  # noqa: E402
from callcenter.testbed.dialer import CallerTiming, TestCaller  # noqa: E402
from callcenter.voice import SpeechModels  # noqa: E402
from harness.fake_ollama import FakeOllama, Reply  # noqa: E402

LINES = (
    "Hello, I would like to know when your shop is open.",
    "And how long does a delivery to London usually take?",
    "Thank you, that is all I needed to know today.",
)
# The demo's purchase, and the answer to a read-back question (tests/test_llm_swarm.py's conversation).
LOCAL_LINES = ("I'd like to buy a new phone charger.", "Yes, please.", "Yes, one USB-C phone charger, please.")
LOCAL_TIMEOUT_S = 60.0
MODEL_DELAY_S = 0.2
MIN_TURNS = 12  # repeat small runs until this many turns are measured
TARGET_P95_S = 2.0
MAX_SEARCH_CALLS = 16
SPREAD_S = 4.0  # calls start this far apart at most
CALLERS_TIMEOUT_S = 600.0


_replies = itertools.count(1)


def model(body: dict) -> Reply:
    # A new first clause every turn: a phrase said before would come from the synthesizer's cache.
    return Reply(
        f"Your ticket number is {next(_replies)}, and I can help you with that. Is there anything else "
        "you would like to know?",
        delay=MODEL_DELAY_S,
    )


@dataclass
class Turns:
    stt: list[float] = field(default_factory=list)
    llm: list[float] = field(default_factory=list)
    tts: list[float] = field(default_factory=list)
    v2v: list[float] = field(default_factory=list)
    heard: list[float] = field(default_factory=list)
    early: list[bool] = field(default_factory=list)
    early_reply: list[bool] = field(default_factory=list)
    lines: int = 0  # lines the callers said
    unanswered: int = 0  # lines after which the caller heard nothing (should stay 0)
    load: list[float] = field(default_factory=list)  # the machine's 1-minute load average after each round

    def extend(self, other: Turns) -> None:
        for name in ("stt", "llm", "tts", "v2v", "heard", "early", "early_reply", "load"):
            getattr(self, name).extend(getattr(other, name))
        self.lines += other.lines
        self.unanswered += other.unanswered


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else math.nan


async def one_round(speech: SpeechModels, calls: int, seed: int, voice: dict[str, Any], llm_kind: str) -> Turns:
    """One VoiceServer with `voice` ([voice] settings) and `calls` callers saying their lines."""
    turns = Turns()
    with tempfile.TemporaryDirectory() as folder:
        async with contextlib.AsyncExitStack() as stack:
            if llm_kind == "local":
                llm_config = LLMConfig(provider="local", timeout=LOCAL_TIMEOUT_S)
            else:
                llm = await stack.enter_async_context(FakeOllama(model))
                llm_config = LLMConfig(provider="ollama", host=llm.url, timeout=30.0)
            config = Config(
                llm=llm_config,
                database=str(Path(folder) / "shop.db"),
                sip=SipConfig(listen="127.0.0.1:0", max_calls=MAX_SEARCH_CALLS + 4),
                voice=VoiceConfig(
                    calls_database=str(Path(folder) / "calls.db"),
                    metrics_listen="",
                    shutdown_deadline_s=5.0,
                    **voice,
                ),
            )
            async with VoiceServer(config, speech=speech) as server:
                host, port = server.address
                heard = await run_callers(f"sip:shop@{host}:{port}", calls, seed, llm_kind)
                deadline = time.monotonic() + 20
                while len(server.records.recent(calls + 1)) < calls and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)
                records = server.records.recent(calls + 1)
    # Server turns (an utterance cut in two by a pause is two turns), and what the callers heard after each line.
    for record in records:
        for timing in record.turns:
            if timing["voice_to_voice_s"] is not None:
                turns.stt.append(timing["stt_s"])
                turns.llm.append(timing["llm_s"])
                turns.tts.append(timing["tts_s"])
                turns.v2v.append(timing["voice_to_voice_s"])
                turns.early.append(bool(timing["early_transcript"]))
                turns.early_reply.append(bool(timing.get("early_reply")))
    turns.lines = len(heard)
    turns.heard = [h for h in heard if h is not None]
    turns.unanswered = turns.lines - len(turns.heard)
    turns.load.append(os.getloadavg()[0])
    return turns


async def run_callers(uri: str, calls: int, seed: int, llm_kind: str) -> list[float | None]:
    """The callers run in a process of their own, so the server's event loop carries only the server's work."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--callers",
        uri,
        "--calls",
        str(calls),
        "--seed",
        str(seed),
        "--llm",
        llm_kind,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(child.communicate(), CALLERS_TIMEOUT_S)
    except TimeoutError:
        child.kill()
        await child.wait()
        raise RuntimeError(f"the callers did not finish within {CALLERS_TIMEOUT_S} s") from None
    if child.returncode != 0:
        raise RuntimeError(f"the callers failed (exit {child.returncode})")
    return json.loads(out.decode().strip().splitlines()[-1])


async def callers_main(uri: str, calls: int, seed: int, llm_kind: str) -> int:
    """Child process: `calls` TestCallers say LINES; prints, per line said, seconds until the reply was heard."""
    speech = await asyncio.to_thread(SpeechModels.load, VoiceConfig(whisper_model="tiny.en"))
    lines = LOCAL_LINES if llm_kind == "local" else LINES
    # A turn of the real model can be a hand-over, a tool call and a reply: wait as long as the server does.
    timing = CallerTiming(turn_timeout_s=2 * LOCAL_TIMEOUT_S + 10) if llm_kind == "local" else CallerTiming()
    try:
        callers = [
            TestCaller(speech, caller_id=f"+4420794600{n:02d}", transcribe=False, timing=timing) for n in range(calls)
        ]
        callers[0].prepare(*lines)
        for caller in callers:
            caller.voices = callers[0].voices
        offsets = random.Random(seed).sample([i * SPREAD_S / calls for i in range(calls)], calls)

        async def talk(caller: TestCaller, offset: float) -> None:
            await asyncio.sleep(offset)
            await caller.call(uri, list(lines))

        await asyncio.gather(*(talk(c, o) for c, o in zip(callers, offsets, strict=True)))
    finally:
        speech.close()
    heard = []
    for caller in callers:
        for _, ended in caller.exchange.spoken:
            first = caller.exchange.first_sound(ended)
            heard.append(None if first is None else first - ended)
    print(json.dumps(heard), flush=True)
    return 0


async def measure(speech: SpeechModels, calls: int, voice: dict[str, Any], llm_kind: str = "scripted") -> Turns:
    turns = Turns()
    # The real model is slow: one round of its calls, not MIN_TURNS.
    rounds = 1 if llm_kind == "local" else max(1, math.ceil(MIN_TURNS / (calls * len(LINES))))
    for seed in range(rounds):
        turns.extend(await one_round(speech, calls, seed, voice, llm_kind))
    return turns


def row(whisper: str, calls: int, t: Turns, early_reply: bool = True) -> str:
    return (
        f"| {whisper:<7} | {'on' if early_reply else 'off':<11} | {calls:>5} | {t.lines:>5} | {len(t.v2v):>5} | {pct(t.v2v, 50):7.2f} | {pct(t.v2v, 95):7.2f} | "
        f"{pct(t.stt, 50):7.2f} | {pct(t.llm, 50):7.2f} | {pct(t.tts, 50):7.2f} | {pct(t.heard, 50):9.2f} | "
        f"{pct(t.heard, 95):9.2f} | {t.unanswered:>10} | {sum(t.early) / max(1, len(t.early)):5.0%} | "
        f"{sum(t.early_reply) / max(1, len(t.early_reply)):5.0%} | {max(t.load):4.1f} |"
    )


HEADER = (
    "| whisper | early_reply | calls | lines | turns | v2v p50 | v2v p95 | stt p50 | llm p50 | tts p50 | heard p50 "
    "| heard p95 | unanswered | early | reply | load |\n"
    "|---------|-------------|-------|-------|-------|---------|---------|---------|---------|---------|-----------"
    "|-----------|------------|-------|-------|------|"
)


async def largest_under_target(
    speech: SpeechModels, measured: dict[int, Turns], whisper: str, voice: dict[str, Any]
) -> int:
    """The most simultaneous calls whose v2v p95 stays under TARGET_P95_S (bisection, up to MAX_SEARCH_CALLS)."""

    def passes(turns: Turns) -> bool:
        return pct(turns.v2v, 95) < TARGET_P95_S and not turns.unanswered

    good = max((n for n, t in measured.items() if passes(t)), default=0)
    bad = min((n for n, t in measured.items() if n > good and not passes(t)), default=MAX_SEARCH_CALLS + 1)
    while bad - good > 1:
        middle = (good + bad) // 2
        turns = await measure(speech, middle, voice)
        print(row(whisper, middle, turns, voice["early_reply"]), flush=True)
        good, bad = (middle, bad) if passes(turns) else (good, middle)
    return good


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", default="1,4,8")
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--no-search", action="store_true", help="skip the search for the most calls under 2 s")
    parser.add_argument("--early-ms", type=int, default=VoiceConfig.early_transcript_ms)
    parser.add_argument("--end-silence-ms", type=int, default=VoiceConfig.end_silence_ms)
    parser.add_argument(
        "--finished-ms", type=int, default=VoiceConfig.finished_silence_ms, help="voice.finished_silence_ms (0: off)"
    )
    parser.add_argument("--whisper-window", type=float, default=VoiceConfig.whisper_window_s, help="0: the model's")
    parser.add_argument(
        "--early-reply",
        choices=("on", "off", "both"),
        default="on" if VoiceConfig.early_reply else "off",
        help="start the model at the caller's first pause (voice.early_reply); both: each, call count by call count",
    )
    parser.add_argument(
        "--llm",
        choices=("scripted", "local"),
        default="scripted",
        help="scripted: a 200 ms model; local: the packaged 1.5B model (then --no-search is implied)",
    )
    parser.add_argument("--callers", metavar="URI", help=argparse.SUPPRESS)  # the child process's mode
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.callers:
        return await callers_main(args.callers, int(args.calls), args.seed, args.llm)
    counts = [int(n) for n in args.calls.split(",")]
    llm = (
        "the local model (qwen2.5-coder-1.5b, the demo's purchase)"
        if args.llm == "local"
        else f"a scripted model answering after {MODEL_DELAY_S * 1000:.0f} ms"
    )
    print(
        f"{os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.2f}; LLM: {llm}; early transcripts "
        f"after {args.early_ms} ms of silence; end of turn after {args.end_silence_ms} ms "
        f"({args.finished_ms or 'never'} ms for finished words); seconds\n",
        flush=True,
    )
    summary = []
    settings = {
        "early_transcript_ms": args.early_ms,
        "end_silence_ms": args.end_silence_ms,
        "finished_silence_ms": args.finished_ms,
    }
    for whisper in args.models.split(","):
        ears = VoiceConfig(whisper_model=whisper, whisper_window_s=args.whisper_window)
        speech = await asyncio.to_thread(SpeechModels.load, ears)
        try:
            print(HEADER, flush=True)
            measured = {}
            modes = {"on": [True], "off": [False], "both": [False, True]}[args.early_reply]
            for calls in counts:
                for early_reply in modes:
                    voice = {**settings, "early_reply": early_reply}
                    measured[calls] = await measure(speech, calls, voice, args.llm)
                    print(row(whisper, calls, measured[calls], early_reply), flush=True)
            if not args.no_search and args.llm == "scripted":
                best = await largest_under_target(speech, measured, whisper, voice)
                summary.append(
                    f"whisper {whisper}: at most {best} simultaneous talking calls keep v2v p95 under "
                    f"{TARGET_P95_S:g} s"
                )
            print(flush=True)
        finally:
            speech.close()
    for line in summary:
        print(line)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
