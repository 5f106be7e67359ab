"""Whisper's prompt and the mid-sentence words rule: does a caller who stops after "the" get written so?

Each sentence is cut at its last word where the words rule holds (speech.turn_words.unfinished) and the
head is spoken alone by Piper and espeak-ng through 8 kHz G.711: the hard case, a head that sounds like a
finished sentence. Heard by tiny.en with the shop's prompt with and without its heads that trail off
(speech.turn_words.TRAILING_OFF_PROMPT): the heads whose transcript the rule holds (the more the better),
the whole sentences it holds (their reply comes up to 1.5 s later: the cost), and the word errors on them.

    .venv/bin/python benchmarks/trailing_off.py [--sets triage_blind.jsonl,triage_fresh.jsonl]

The prompt was chosen on the default sets (caller_utterances + triage_tuning); the blind ones are the figure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import speech_corpus as corpus
from speech.transcriber import Transcriber
from speech.turn_words import TRAILING_OFF_PROMPT, unfinished

CACHE = Path(tempfile.gettempdir()) / "voiceswarm-speech-corpus"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="caller_utterances.jsonl,triage_tuning.jsonl")
    args = parser.parse_args()
    from jiwer import wer
    from whisper_normalizer.english import EnglishTextNormalizer

    normal = EnglishTextNormalizer()
    texts = corpus.sentences(*args.sets.split(","))
    cut = corpus.heads(texts)
    transcriber = Transcriber("tiny.en", workers=1)
    prompts = {
        "shop's prompt": corpus.domain_prompt(),
        "without the trailing heads": corpus.domain_prompt().replace(f" {TRAILING_OFF_PROMPT}", ""),
    }
    print(f"{len(texts)} sentences ({args.sets}), {len(cut)} heads, tiny.en\n")
    print("| voice | prompt | heads held | finished sentences held | WER, finished sentences |")
    print("|---|---|---:|---:|---:|")
    for voice in corpus.VOICES:
        spoken_heads, spoken = corpus.corpus(voice, cut, CACHE), corpus.corpus(voice, texts, CACHE)
        for name, prompt in prompts.items():
            heard_heads = [transcriber.transcribe_sync(pcm, prompt=prompt).text for _, pcm in spoken_heads]
            heard = [transcriber.transcribe_sync(pcm, prompt=prompt).text for _, pcm in spoken]
            score = wer([normal(t) for t in texts], [normal(h) or "-" for h in heard])
            print(
                f"| {voice} | {name} | {sum(map(unfinished, heard_heads))}/{len(cut)} "
                f"| {sum(map(unfinished, heard))}/{len(texts)} | {score:.1%} |"
            )


if __name__ == "__main__":
    main()
