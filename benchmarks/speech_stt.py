"""Speech to text: latency, accuracy, memory and throughput of speech.Transcriber against plain faster-whisper.

The baseline is the off-the-shelf call: `WhisperModel(directory).transcribe("utterance-16k.wav")` with
every default (compute type from the model file, beam 5, temperature fallback, timestamps, language
detection on the multilingual base). The corpus is made here (tests/speech_corpus.py): sentences spoken by
Piper (joe) and espeak-ng (en-us, a hard caller), through 8 kHz G.711 mu-law. WER after Whisper's
English normaliser (whisper-normalizer). The domain prompt is the one callcenter.voice builds.

Targets (issue 5): 3 s utterance <= 0.5 s p50 with tiny.en, <= 1.0 s with base; WER on Piper <= 8% with
base, <= 12% with tiny.en; on espeak-ng, >= 20% fewer errors than the baseline with the domain prompt.
"Transcriber + prompt" is the default: greedy, and a beam-5 retry only for unclear turns ("retried" counts
them; "a retried turn" is the latency such a turn costs).
Run: `.venv/bin/python benchmarks/speech_stt.py [--big]` (--big adds triage_tuning.jsonl: 107 sentences).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import speech_corpus as corpus  # noqa: E402
from speech.audio import resample, write_wav  # noqa: E402
from speech.models import whisper_model_dir  # noqa: E402
from speech.transcriber import Thresholds, Transcriber  # noqa: E402

MODELS = ("tiny.en", "base")
RUNS = 5
CACHE = Path(tempfile.gettempdir()) / "voiceswarm-speech-corpus"
# Each latency utterance is padded with silence to exactly its length.
LATENCY_TEXTS = {
    1: "Yes, please.",
    3: "I want to return the wireless headphones I bought last week.",
    8: "I want to return the headphones I bought last week. They stopped working after two days, "
    "and I would like a refund to my card, please.",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big", action="store_true", help="also the 80 sentences of triage_tuning.jsonl")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child]()))
        return
    load = os.getloadavg()[0]
    print(
        f"# speech_stt on {os.cpu_count()} cores, load average {load:.1f} at start (other work on the machine inflates times)\n"
    )
    latency_table()
    threads_table()
    wer_table(args.big)
    print(
        f"| one core, 3 s utterances (taskset to 1 CPU, workers=1, cpu_threads=1) | {'utterances/s':>12} | {'CPU s each':>10} |"
    )
    print("|---|---:|---:|")
    for model in MODELS:
        result = child("one_core_" + model)
        print(f"| {model} | {result['per_s']:>12.2f} | {result['cpu_s']:>10.3f} |")
    print()
    print("| peak RSS (VmHWM, fresh process) | MB |")
    print("|---|---:|")
    for mode, label in (
        ("rss_both", "tiny.en + base loaded, one utterance each"),
        ("rss_base_voice", "base + Piper voice, one utterance + one sentence"),
    ):
        print(f"| {label} | {child(mode)['rss_mb']:.0f} |")


def utterance(seconds: int) -> np.ndarray:
    [(_, padded)] = corpus.corpus("piper", [LATENCY_TEXTS[seconds]], CACHE)
    voiced = np.nonzero(np.abs(padded) > 300)[0]
    speech = padded[voiced[0] : voiced[-1] + 1]
    room = seconds * corpus.PHONE_RATE - speech.size
    assert room >= 0, f"{LATENCY_TEXTS[seconds]!r} is longer than {seconds} s"
    return np.concatenate([np.zeros(room // 3, np.int16), speech, np.zeros(room - room // 3, np.int16)])


def timed(function, runs: int = RUNS) -> list[float]:
    function()  # warm-up: first-call allocations are not what a caller waits for
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return times


def plain_model(model: str):  # faster_whisper.WhisperModel
    from faster_whisper import WhisperModel

    return WhisperModel(str(whisper_model_dir(model)))


def plain_transcribe(plain, path: Path) -> str:
    segments, _ = plain.transcribe(str(path))
    return "".join(segment.text for segment in segments).strip()


def latency_table() -> None:
    prompt = corpus.domain_prompt()
    print(
        "| STT latency, p50 of 5 (min) | utterance | plain faster-whisper | greedy, no retry | Transcriber + prompt "
        "| a retried turn (greedy, then beam 5) | + prompt, always beam 5 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as scratch:
        for model in MODELS:
            plain = plain_model(model)
            greedy = Transcriber(model, workers=1, retry_beam_size=1)
            transcriber = Transcriber(model, workers=1)
            retrying = Transcriber(
                model, workers=1, thresholds=Thresholds(retry_below_logprob=1.0)
            )  # every turn retried
            beam5 = Transcriber(model, workers=1, beam_size=5)
            for seconds in LATENCY_TEXTS:
                pcm = utterance(seconds)
                wav = Path(scratch) / f"{seconds}s-16k.wav"
                write_wav(wav, resample(pcm, corpus.PHONE_RATE, 16000), 16000)
                cells = [
                    timed(partial(plain_transcribe, plain, wav)),
                    timed(partial(greedy.transcribe_sync, pcm)),
                    timed(partial(transcriber.transcribe_sync, pcm, prompt=prompt)),
                    timed(partial(retrying.transcribe_sync, pcm, prompt=prompt)),
                    timed(partial(beam5.transcribe_sync, pcm, prompt=prompt)),
                ]
                print(
                    f"| {model} | {seconds} s | "
                    + " | ".join(f"{statistics.median(t):.3f} s ({min(t):.3f})" for t in cells)
                    + " |"
                )
            for each in (greedy, transcriber, retrying, beam5):
                each.close()
            del plain
    print()


def threads_table() -> None:
    """One stream's latency and two concurrent streams' throughput for the ways to split the cores."""
    pcm = utterance(3)
    print("| 3 s utterance | workers x cpu_threads | one stream p50 | two concurrent streams: utterances/s |")
    print("|---|---|---:|---:|")
    for model in MODELS:
        for workers, threads in ((1, 2), (2, 1), (2, 2)):
            transcriber = Transcriber(model, workers=workers, cpu_threads=threads)
            single = statistics.median(timed(partial(transcriber.transcribe_sync, pcm)))
            with ThreadPoolExecutor(2) as callers:
                started = time.perf_counter()
                list(callers.map(transcriber.transcribe_sync, [pcm] * (4 * RUNS)))
                rate = 4 * RUNS / (time.perf_counter() - started)
            transcriber.close()
            print(f"| {model} | {workers} x {threads} | {single:.3f} s | {rate:.2f} |")
    print()


def wer_table(big: bool) -> None:
    from jiwer import wer
    from whisper_normalizer.english import EnglishTextNormalizer

    normal = EnglishTextNormalizer()

    def score(references: list[str], hypotheses: list[str]) -> float:
        return wer([normal(r) for r in references], [normal(h) for h in hypotheses]) if references else 0.0

    names = ("caller_utterances.jsonl", "triage_tuning.jsonl") if big else ("caller_utterances.jsonl",)
    texts = corpus.sentences(*names)
    prompt = corpus.domain_prompt()
    print(
        f"| WER, {len(texts)} sentences ({' + '.join(names)}) | voice | plain faster-whisper | greedy, no prompt "
        "| greedy + prompt | Transcriber + prompt | + prompt, always beam 5 | Transcriber + prompt vs plain | retried |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    trust = []
    with tempfile.TemporaryDirectory() as scratch:
        for model in MODELS:
            plain = plain_model(model)
            greedy = Transcriber(model, workers=1, retry_beam_size=1)
            transcriber = Transcriber(model, workers=1)
            beam5 = Transcriber(model, workers=1, beam_size=5)
            for voice in corpus.VOICES:
                items = corpus.corpus(voice, texts, CACHE)
                wav = Path(scratch) / "u.wav"
                plain_out = []
                for _, pcm in items:
                    write_wav(wav, resample(pcm, corpus.PHONE_RATE, 16000), 16000)
                    plain_out.append(plain_transcribe(plain, wav))
                bare = [greedy.transcribe_sync(pcm) for _, pcm in items]
                prompted = [greedy.transcribe_sync(pcm, prompt=prompt) for _, pcm in items]
                ours = [transcriber.transcribe_sync(pcm, prompt=prompt) for _, pcm in items]
                wide = [beam5.transcribe_sync(pcm, prompt=prompt) for _, pcm in items]
                rates = [score(texts, plain_out)] + [
                    score(texts, [t.text for t in out]) for out in (bare, prompted, ours, wide)
                ]
                fewer = f"{(rates[0] - rates[3]) / rates[0]:+.0%}" if rates[0] else "-"
                print(
                    f"| {model} | {voice} | "
                    + " | ".join(f"{r:.1%}" for r in rates)
                    + f" | {fewer} | {sum(t.retried for t in ours)}/{len(ours)} |"
                )
                for label, out in (("Transcriber + prompt", ours), ("beam 5 + prompt", wide)):
                    sure = [i for i, t in enumerate(out) if t.confident]
                    doubt = [i for i, t in enumerate(out) if not t.confident]
                    trust.append(
                        f"| {model} | {voice}, {label} | {len(doubt) / len(out):.1%} | "
                        f"{score([texts[i] for i in sure], [out[i].text for i in sure]):.1%} | "
                        f"{score([texts[i] for i in doubt], [out[i].text for i in doubt]):.1%} | "
                        f"{max(t.no_speech_prob for t in out):.2f} | {min(t.avg_logprob for t in out):.2f} |"
                    )
            for name, pcm in corpus.bad_input().items():
                t = transcriber.transcribe_sync(pcm)
                trust.append(
                    f"| {model} | no speech: {name} | {'NO' if t.confident else 'yes'} | {t.text[:30]!r} | | {t.no_speech_prob:.2f} | {t.avg_logprob:.2f} |"
                )
            for each in (greedy, transcriber, beam5):
                each.close()
            del plain
    print()
    print(
        "| confidence (default Thresholds) | audio | not confident | WER when confident (speech) / text (noise) | WER when not | max no_speech_prob | min avg_logprob |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    print("\n".join(trust))
    print()


# ---- measured in a fresh process -----------------------------------------------------------------------


def child(mode: str) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode], capture_output=True, text=True, timeout=900, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _rss_mb() -> float:
    """Peak RSS of this process. getrusage's ru_maxrss survives exec on Linux (the child would report
    the benchmark's own peak), so the kernel's per-image high-water mark is read where there is one."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_both() -> dict:
    pcm = utterance(3)
    for model in MODELS:
        Transcriber(model, workers=1).transcribe_sync(pcm)
    return {"rss_mb": _rss_mb()}


def _rss_base_voice() -> dict:
    from speech.synthesizer import Synthesizer

    Transcriber("base", workers=1).transcribe_sync(utterance(3))
    Synthesizer().synthesize("Your refund of twenty four euros ninety is on its way.")
    return {"rss_mb": _rss_mb()}


def _one_core(model: str) -> dict:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # before the model's threads exist
    pcm = utterance(3)
    transcriber = Transcriber(model, workers=1, cpu_threads=1)
    transcriber.transcribe_sync(pcm)
    runs = 10
    cpu, started = time.process_time(), time.perf_counter()
    for _ in range(runs):
        transcriber.transcribe_sync(pcm)
    return {"per_s": runs / (time.perf_counter() - started), "cpu_s": (time.process_time() - cpu) / runs}


CHILDREN = {
    "rss_both": _rss_both,
    "rss_base_voice": _rss_base_voice,
    "one_core_tiny.en": lambda: _one_core("tiny.en"),
    "one_core_base": lambda: _one_core("base"),
}


if __name__ == "__main__":
    main()
