"""A spoken test corpus built on the fly (no audio is committed): sentences from tests/data spoken by
espeak-ng (en-us) or by Piper, then sent through the phone path (8 kHz, G.711 mu-law and back).

Used by the speech tests and benchmarks/speech_stt.py. Built once and cached as .npz files.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from speech.audio import read_wav, resample
from speech.models import piper_voice_paths
from speech.turn_words import TRAILING_OFF_PROMPT, unfinished
from telephony.g711 import ulaw_decode, ulaw_encode

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PRODUCTS = Path(__file__).resolve().parent.parent / "callcenter" / "data" / "products.csv"
VOICES = ("piper", "espeak")
PHONE_RATE = 8000
# The endpointer hands over an utterance with a little audio before the speech and the silence that
# ended the turn after it.
LEAD_S, TRAIL_S = 0.2, 0.5
VERSION = 1  # bump when the way the corpus is made changes


def sentences(*names: str) -> list[str]:
    return [
        json.loads(line)["text"] for name in names for line in (DATA / name).read_text().splitlines() if line.strip()
    ]


def domain_prompt() -> str:
    """Whisper's initial prompt as callcenter.voice builds it from the shop's catalogue."""
    with open(PRODUCTS, newline="") as file:
        names = [row["name"] for row in sorted(csv.DictReader(file), key=lambda row: row["sku"])]  # the shop's order
    prompt = (
        "Hello, thank you for calling. Hi, I'd like to order something, please. Is it in stock? "
        "I want to return what I bought, it doesn't work. Can I get a refund? Yes, my order number is 4 2 1 7. "
        f"{TRAILING_OFF_PROMPT} You sell"
    )
    for number, name in enumerate(names):
        name = name if name[:2].isupper() else name[:1].lower() + name[1:]
        if len(prompt) + len(name) > 880:
            break
        prompt += f"{',' if number else ''} the {name}"
    return prompt + "."


def heads(texts: list[str]) -> list[str]:
    """Each sentence up to its last word where the mid-sentence rule holds (two words at least): where a caller
    may pause."""
    cut = []
    for text in texts:
        words = text.split()
        held = [n for n in range(2, len(words)) if unfinished(" ".join(words[:n]))]
        if held:
            cut.append(" ".join(words[: held[-1]]))
    return cut


def phone_path(pcm: np.ndarray, rate: int) -> np.ndarray:
    """What a caller's audio looks like after the PSTN: 8 kHz, through G.711 mu-law, with the pauses."""
    narrow = resample(pcm, rate, PHONE_RATE)
    padded = np.concatenate(
        [np.zeros(int(LEAD_S * PHONE_RATE), np.int16), narrow, np.zeros(int(TRAIL_S * PHONE_RATE), np.int16)]
    )
    return ulaw_decode(ulaw_encode(padded))


def espeak(text: str, voice: str = "en-us") -> tuple[np.ndarray, int]:
    done = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True, timeout=30)
    return read_wav(io.BytesIO(done.stdout))


@cache
def _piper_voice():  # piper.PiperVoice
    from piper import PiperVoice

    model, config = piper_voice_paths()
    return PiperVoice.load(model, config_path=config)


def piper(text: str) -> tuple[np.ndarray, int]:
    chunks = list(_piper_voice().synthesize(text))
    return np.concatenate([chunk.audio_int16_array for chunk in chunks]), chunks[0].sample_rate


def noise(seconds: float, dbfs: float, seed: int = 5) -> np.ndarray:
    """White noise at an RMS level in dB relative to full scale (float samples, int16 scale)."""
    white = np.random.default_rng(seed).standard_normal(int(seconds * PHONE_RATE))
    return white / np.sqrt(np.mean(white**2)) * 32768 * 10 ** (dbfs / 20)


def phone(samples: np.ndarray) -> np.ndarray:
    """Samples clipped to int16 and through G.711 mu-law and back."""
    return ulaw_decode(ulaw_encode(np.clip(np.rint(samples), -32768, 32767).astype(np.int16)))


def bad_input() -> dict[str, np.ndarray]:
    """PCM16 8 kHz that holds no speech: what must never come out as a confident sentence."""
    t = np.arange(3 * PHONE_RATE) / PHONE_RATE
    return {
        "empty": np.zeros(0, np.int16),
        "one sample": np.array([1200], np.int16),
        "30 s of silence": np.zeros(30 * PHONE_RATE, np.int16),
        "30 s of line hiss": phone(noise(30, -60)),
        "white noise": phone(noise(3, -20)),
        "loud white noise, 8 s": phone(noise(8, -10)),
        "clipped noise": phone(noise(3, -20) * 100),
        "full-scale square wave": np.where((np.arange(3 * PHONE_RATE) // 20) % 2, 32767, -32768).astype(np.int16),
        "DC offset": np.full(3 * PHONE_RATE, 12000, np.int16),
        "30 s DC offset with hiss": phone(20000 + noise(30, -50)),
        "mains hum": phone(3000 * np.sin(2 * np.pi * 50 * t) + 1500 * np.sin(2 * np.pi * 150 * t)),
        "clicks": np.where(np.arange(3 * PHONE_RATE) % 800 == 0, 30000, 0).astype(np.int16),
    }


def corpus(voice: str, texts: list[str], cache_dir: Path) -> list[tuple[str, np.ndarray]]:
    """(text, PCM16 8 kHz phone audio) for each sentence, spoken by `voice` ("piper" or "espeak")."""
    speak = {"piper": piper, "espeak": espeak}[voice]
    key = hashlib.sha256(json.dumps([VERSION, voice, texts]).encode()).hexdigest()[:16]
    file = cache_dir / f"{voice}-{key}.npz"
    if file.exists():
        with np.load(file) as stored:
            return [(text, stored[f"a{i}"]) for i, text in enumerate(texts)]
    audio = [phone_path(*speak(text)) for text in texts]
    cache_dir.mkdir(parents=True, exist_ok=True)
    temp = file.with_suffix(".tmp.npz")
    arrays: dict[str, Any] = {f"a{i}": pcm for i, pcm in enumerate(audio)}
    np.savez(temp, **arrays)
    temp.replace(file)
    return list(zip(texts, audio, strict=True))
