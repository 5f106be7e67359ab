"""Piper on this machine: voice load time, time to first audio and real-time factor by sentence length,
with and without cutting the first sentence at its first clause (median of 5 runs each).

Time to first audio: from the call of synthesize_stream until its first 8 kHz PCM16 chunk (normalising,
Piper, resampling, levelling). RTF: synthesis time of the whole text / duration of its audio. Other
processes on the machine inflate the medians; the minimum is the figure for an idle core.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piper import PiperVoice  # noqa: E402

from speech.models import piper_voice_paths  # noqa: E402
from speech.normalize import normalize_for_speech  # noqa: E402
from speech.synthesizer import TELEPHONE_RATE, Synthesizer, SynthesizerConfig, speech_pieces  # noqa: E402

RUNS = 5
SENTENCES = (
    ("5", "Shall I place the order?"),
    ("10", "We have the wireless headphones for 24 euros 90."),
    ("10, a comma", "Your order is placed, and the total is 20 euros."),
    ("10, no boundary", "The wireless headphones are in stock in our Berlin warehouse."),
    ("20", "I found your order from 24 November with the wireless mouse, shall I start the return now?"),
)


async def measure(synthesizer: Synthesizer, text: str) -> tuple[float, float, float]:
    """(seconds to the first chunk, seconds for all, seconds of audio)."""
    started = time.perf_counter()
    first, samples = None, 0
    async for chunk in synthesizer.synthesize_stream(text):
        first = first if first is not None else time.perf_counter() - started
        samples += chunk.size
    return first or 0.0, time.perf_counter() - started, samples / TELEPHONE_RATE


def _ms(seconds: Iterator[float]) -> str:
    values = list(seconds)
    return f"{1000 * statistics.median(values):.0f} / {1000 * min(values):.0f}"


async def main() -> None:
    model, config = piper_voice_paths()
    loads = []
    for _ in range(3):
        started = time.perf_counter()
        PiperVoice.load(model, config_path=config)
        loads.append(time.perf_counter() - started)
    started = time.perf_counter()
    piper_voice_paths()
    verify = time.perf_counter() - started
    print(
        f"voice load (PiperVoice.load, median of 3): {1000 * statistics.median(loads):.0f} ms; "
        f"sha256 check of the voice files: {1000 * verify:.0f} ms; cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}\n"
    )

    # No cache: every run renders, as the first time a sentence is said.
    split = Synthesizer(SynthesizerConfig(cached_pieces=0))
    whole = Synthesizer(SynthesizerConfig(split_first_clause=False, cached_pieces=0))
    await measure(split, "Warming up.")
    print(
        "| words | sentence | first piece words | TTFA whole ms (median / min) | TTFA split ms (median / min) "
        "| total ms | audio s | RTF |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, text in SENTENCES:
        runs_whole, runs_split = [], []
        for _ in range(RUNS):  # interleaved, so that both see the same load from other processes
            runs_whole.append(await measure(whole, text))
            runs_split.append(await measure(split, text))
        head = speech_pieces(normalize_for_speech(text))[0]
        total = statistics.median(r[1] for r in runs_split)
        audio = statistics.median(r[2] for r in runs_split)
        print(
            f"| {label} | {text} | {len(head.split())} | {_ms(r[0] for r in runs_whole)} | {_ms(r[0] for r in runs_split)} "
            f"| {1000 * total:.0f} | {audio:.2f} | {total / audio:.3f} |"
        )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    split.close()
    whole.close()


if __name__ == "__main__":
    asyncio.run(main())
