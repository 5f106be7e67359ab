"""Words held mid-sentence (callcenter.call.hearing, Hearing._hold): the rest heard alone, or with them.

A caller who pauses mid-sentence ("my order number is four five ... eight two one") is heard in two
utterances. The rest was once transcribed alone and joined to the held words as text; now the rest is
transcribed with the held words' audio (Hearing._to_transcribe), so Whisper hears it in context. Each
sentence of triage_untouched.jsonl (never used to tune anything) is cut at its last word where the
mid-sentence rule holds it (speech.turn_words.unfinished) and the halves are spoken apart, by Piper and
espeak-ng, through 8 kHz G.711. WER of the whole sentence after Whisper's English normaliser, and the
median time of the rest's transcription (the part of it the caller waits for).

    .venv/bin/python benchmarks/held_words.py [--model tiny.en]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import speech_corpus as corpus
from speech.transcriber import Transcriber
from speech.turn_words import unfinished

CACHE = Path(tempfile.gettempdir()) / "voiceswarm-speech-corpus"


def cuts(texts: list[str]) -> list[tuple[str, str]]:
    """(held words, the rest) at the last cut the rule holds, with two words at least on either side."""
    pairs = []
    for text in texts:
        words = text.split()
        held = [i for i in range(2, len(words) - 1) if unfinished(" ".join(words[:i]))]
        if held:
            pairs.append((" ".join(words[: held[-1]]), " ".join(words[held[-1] :])))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="tiny.en")
    args = parser.parse_args()
    from jiwer import wer
    from whisper_normalizer.english import EnglishTextNormalizer

    normal = EnglishTextNormalizer()
    pairs = cuts(corpus.sentences("triage_untouched.jsonl"))
    transcriber = Transcriber(args.model, workers=1)
    prompt = corpus.domain_prompt()
    print(f"{len(pairs)} sentences cut where the rule holds, {args.model}\n")
    print(
        "| voice | WER, the rest alone (+ held text) | WER, the rest with the held audio | rest alone, p50 | with held audio, p50 |"
    )
    print("|---|---:|---:|---:|---:|")
    for voice in corpus.VOICES:
        firsts = corpus.corpus(voice, [first for first, _ in pairs], CACHE)
        rests = corpus.corpus(voice, [rest for _, rest in pairs], CACHE)
        references, alone, joined, alone_s, joined_s = [], [], [], [], []
        for (first, first_pcm), (rest, rest_pcm) in zip(firsts, rests, strict=True):
            references.append(normal(f"{first} {rest}"))
            held = transcriber.transcribe_sync(first_pcm, prompt=prompt).text
            started = time.perf_counter()
            alone.append(normal(f"{held} {transcriber.transcribe_sync(rest_pcm, prompt=prompt).text}"))
            alone_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            joined.append(
                normal(transcriber.transcribe_sync(np.concatenate([first_pcm, rest_pcm]), prompt=prompt).text)
            )
            joined_s.append(time.perf_counter() - started)
        print(
            f"| {voice} | {wer(references, alone):.1%} | {wer(references, joined):.1%} "
            f"| {statistics.median(alone_s):.2f} s | {statistics.median(joined_s):.2f} s |"
        )
    transcriber.close()


if __name__ == "__main__":
    main()
