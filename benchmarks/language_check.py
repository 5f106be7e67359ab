"""The spoken-language check (speech.language, voice.languages) on the phone path.

Callers' first sentences in German, French, Spanish, Italian, Portuguese and Polish, and in English read
with those languages' accents, spoken by espeak-ng's voice for each (the only voices here that speak them),
then 8 kHz mu-law; clear English from Piper and espeak-ng en-us (tests/data/caller_utterances.jsonl). The
limits were set on languages_tuning.jsonl; languages_blind.jsonl was written afterwards by someone who had
seen neither the limits nor the results, and is the figure that counts.
- foreign caught: sentences the check would hand to a person (the aim: all);
- accented English handed over: espeak-ng's foreign voices read English that Whisper hears as nonsense too,
  so a person is not the worst outcome for them, but it is not the aim;
- clear English handed over: must be 0.

    .venv/bin/python benchmarks/language_check.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.speech_corpus import corpus, espeak, phone_path, sentences
from speech.language import Language, LanguageCheck

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def judged(check: LanguageCheck, path: Path) -> list[tuple[str, str, Language]]:
    """(language spoken, voice, what the detector heard) for each line of a corpus."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        rows.append((item["lang"], item["voice"], check.detect(phone_path(*espeak(item["text"], item["voice"])))))
    return rows


def main() -> None:
    check = LanguageCheck()
    seconds: list[float] = []
    print("| corpus | foreign caught | accented English handed over | clear English handed over |")
    print("|---|---:|---:|---:|")
    for name in ("tuning", "blind"):
        started = time.perf_counter()
        rows = judged(check, DATA / f"languages_{name}.jsonl")
        seconds.append((time.perf_counter() - started) / len(rows))
        foreign = [check.is_foreign(heard) for spoken, _, heard in rows if spoken != "en"]
        accented = [check.is_foreign(heard) for spoken, _, heard in rows if spoken == "en"]
        print(f"| {name} | {sum(foreign)}/{len(foreign)} | {sum(accented)}/{len(accented)} | |")
    english = sentences("caller_utterances.jsonl")
    with tempfile.TemporaryDirectory() as cache:
        clear = [
            check.is_foreign(check.detect(pcm))
            for v in ("piper", "espeak")
            for _, pcm in corpus(v, english, Path(cache))
        ]
    print(f"| caller utterances (Piper, espeak-ng en-us) | | | {sum(clear)}/{len(clear)} |")
    print(
        f"\nper utterance (synthesis included, median of the two corpora): {statistics.median(seconds) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
