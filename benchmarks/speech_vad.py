"""The endpointer on phone-path speech: CPU per frame, speech kept per threshold, end-of-turn delay.

The corpus is made here: the sentences of tests/data/caller_utterances.jsonl spoken by espeak-ng en-us
and by Piper joe, resampled to 8 kHz, through mu-law and back, trimmed to the voice, fed in
20 ms frames with 1 s of silence between sentences.
"""

from __future__ import annotations

import io
import itertools
import json
import statistics
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import soxr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speech.endpointer import Endpointer, Event, SpeechEnded, SpeechStarted  # noqa: E402
from speech.models import piper_voice_paths  # noqa: E402
from speech.vad import CONTEXT, WINDOW, VadModel, VadStream  # noqa: E402
from telephony.g711 import ulaw_decode, ulaw_encode  # noqa: E402

RATE = 8000
FRAME = 160
GAP_S = 1.0


def phone_path(pcm: np.ndarray, rate: int) -> np.ndarray:
    phone = ulaw_decode(ulaw_encode(soxr.resample(pcm, rate, RATE)))
    blocks = phone[: phone.size // 80 * 80].astype(np.float64).reshape(-1, 80)
    rms = np.sqrt((blocks**2).mean(axis=1))
    loud = np.nonzero(rms > rms.max() / 100)[0]  # within 40 dB of the loudest 10 ms
    return phone[loud[0] * 80 : (loud[-1] + 1) * 80]


def espeak(text: str) -> np.ndarray:
    out = subprocess.run(["espeak-ng", "-v", "en-us", "--stdout", text], capture_output=True, check=True).stdout
    with wave.open(io.BytesIO(out)) as wav:
        return phone_path(np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16), wav.getframerate())


def piper_voice():
    from piper import PiperVoice

    model, config = piper_voice_paths()
    voice = PiperVoice.load(model, config_path=config)
    return lambda text: phone_path(
        np.concatenate([c.audio_int16_array for c in voice.synthesize(text)]), voice.config.sample_rate
    )


def corpus(sentences: list[np.ndarray]) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """One stream: 1 s silence, sentence, 1 s silence, ...; with each sentence's (first, end) sample."""
    gap = np.zeros(int(GAP_S * RATE), dtype=np.int16)
    parts, spans, at = [gap], [], gap.size
    for speech in sentences:
        parts += [speech, gap]
        spans.append((at, at + speech.size))
        at += speech.size + gap.size
    return np.concatenate(parts), spans


def feed(endpointer: Endpointer, pcm: np.ndarray) -> list[tuple[int, Event]]:
    events: list[tuple[int, Event]] = []
    for start in range(0, pcm.size, FRAME):
        events += [(start + FRAME, e) for e in endpointer.feed(pcm[start : start + FRAME])]
    return events


def window_probs(stream: VadStream, pcm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probability per window and the sample (8 kHz) at which each window's frame ended."""
    probs, ends = [], []
    for start in range(0, pcm.size, FRAME):
        p = stream.push(pcm[start : start + FRAME])
        probs += list(p)
        ends += [start + FRAME] * p.size
    return np.array(probs), np.array(ends)


def unresampled_probs(model: VadModel, pcm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mistake to avoid: 8 kHz samples given to the 16 kHz model as they are."""
    audio = np.concatenate([np.zeros(CONTEXT, np.float32), pcm.astype(np.float32) / 32768])
    count = (audio.size - CONTEXT) // WINDOW
    windows = audio[np.arange(count)[:, None] * WINDOW + np.arange(CONTEXT + WINDOW)]
    probs, _ = model.run(windows, np.zeros((2, 1, 1, 128), dtype=np.float32))  # the batch runs in sequence
    return probs, (np.arange(count) + 1) * WINDOW


def delay_ms(times: list[int], since: int) -> float:
    """From a sample to the first event at or after it."""
    return (min((at for at in times if at >= since), default=since) - since) / RATE * 1000


def inside(ends: np.ndarray, spans: list[tuple[int, int]], lag: int) -> np.ndarray:
    """Windows that ended inside a sentence (allowing for the model's lag at the start)."""
    mask = np.zeros(ends.size, dtype=bool)
    for first, end in spans:
        mask |= (ends > first + lag) & (ends <= end)
    return mask


def cpu_table(model: VadModel, pcm: np.ndarray) -> None:
    endpointer = Endpointer(model)
    per_frame = []
    for start in range(0, pcm.size, FRAME):
        frame = pcm[start : start + FRAME]
        t = time.thread_time_ns()
        endpointer.feed(frame)
        per_frame.append((time.thread_time_ns() - t) / 1000)
    windows = np.zeros((1, CONTEXT + WINDOW), np.float32)
    state = np.zeros((2, 1, 1, 128), dtype=np.float32)
    run = []
    for _ in range(2000):
        t = time.thread_time_ns()
        model.run(windows, state)
        run.append((time.thread_time_ns() - t) / 1000)
    mean = statistics.fmean(per_frame)
    print("\nCPU per 20 ms frame, one thread (thread CPU time, us)")
    print("| frames | median | mean | p95 | model run per 32 ms window (median) | streams per core (20 ms / mean) |")
    print("|-------:|-------:|-----:|----:|------------------------------------:|--------------------------------:|")
    print(
        f"| {len(per_frame)} | {statistics.median(per_frame):.0f} | {mean:.0f} | "
        f"{np.percentile(per_frame, 95):.0f} | {statistics.median(run):.0f} | {20_000 / mean:.0f} |"
    )


def streams_table(model: VadModel, pcm: np.ndarray, counts: tuple[int, ...] = (50, 100, 150)) -> None:
    """Many calls fed round-robin from one thread. Other work on the machine stretches the wall time,
    not the thread's CPU time: the last column is 20 ms over the CPU per stream-frame."""
    seconds = 20
    audio = pcm[: seconds * RATE]
    print(f"\nMany streams on one core ({seconds} s of audio each, frames interleaved, one thread)")
    print(
        "| streams | wall s | real-time factor (wall / audio) | CPU per stream-frame us "
        "| streams one core sustains (CPU) |"
    )
    print(
        "|--------:|-------:|--------------------------------:|------------------------:"
        "|--------------------------------:|"
    )
    for count in counts:
        endpointers = [Endpointer(model, call_id=str(i)) for i in range(count)]
        offsets = [(i * 3217) % (audio.size - FRAME) // FRAME * FRAME for i in range(count)]
        t, cpu = time.perf_counter(), time.thread_time()
        for start in range(0, audio.size, FRAME):
            for endpointer, offset in zip(endpointers, offsets, strict=True):
                at = (offset + start) % (audio.size - FRAME)
                endpointer.feed(audio[at : at + FRAME])
        wall, cpu = time.perf_counter() - t, time.thread_time() - cpu
        per_frame = cpu / count / (audio.size / FRAME)
        print(f"| {count} | {wall:.1f} | {wall / seconds:.2f} | {per_frame * 1e6:.0f} | {0.020 / per_frame:.0f} |")


def with_noise(pcm: np.ndarray, spans: list[tuple[int, int]], snr_db: float) -> np.ndarray:
    speech_rms = np.sqrt(np.mean(np.concatenate([pcm[a:b] for a, b in spans]).astype(np.float64) ** 2))
    noisy = pcm + np.random.default_rng(1).normal(0, speech_rms / 10 ** (snr_db / 20), pcm.size)
    return ulaw_decode(ulaw_encode(np.clip(noisy, -32768, 32767).astype(np.int16)))


def threshold_table(model: VadModel, voices: dict[str, list[np.ndarray]]) -> None:
    print("\nSpeech kept per threshold (stay threshold = threshold - 0.15; end_silence 500 ms)")
    print(
        "| audio | threshold | windows in speech >= threshold | turns (sentences) | speech kept "
        "| end of turn after the voice, ms median | false turns in 30 s of -20 dBFS noise |"
    )
    print(
        "|-------|----------:|-------------------------------:|------------------:|------------:"
        "|---------------------------------------:|--------------------------------------:|"
    )
    noise = np.random.default_rng(0).normal(0, 3277, 30 * RATE)
    noise = ulaw_decode(ulaw_encode(np.clip(noise, -32768, 32767).astype(np.int16)))
    conditions = {}
    for name, sentences in voices.items():
        pcm, spans = corpus(sentences)
        conditions[name] = (pcm, spans)
        if name == "espeak-ng":
            for snr in (10, 5, 0):
                conditions[f"{name} + white noise {snr} dB SNR"] = (with_noise(pcm, spans, snr), spans)
    for name, (pcm, spans) in conditions.items():
        probs, ends = window_probs(model.stream(), pcm)
        speech_windows = probs[inside(ends, spans, lag=800)]
        total = sum(end - first for first, end in spans)
        for threshold in (0.2, 0.3, 0.4, 0.5, 0.6):
            stay = round(threshold - 0.15, 2)
            events = feed(Endpointer(model, threshold=threshold, stay_threshold=stay), pcm)
            turns = [(at, e) for at, e in events if isinstance(e, SpeechEnded)]
            covered = np.zeros(pcm.size, dtype=bool)
            for _, turn in turns:
                first = round(turn.start_s * RATE)
                covered[first : first + turn.audio.size] = True
            kept = sum(int(covered[first:end].sum()) for first, end in spans)
            delays = [delay_ms([at for at, _ in turns], end) for _, end in spans]
            false = sum(
                isinstance(e, SpeechEnded)
                for _, e in feed(Endpointer(model, threshold=threshold, stay_threshold=stay), noise)
            )
            print(
                f"| {name} | {threshold:.1f} (stay {stay:.2f}) | {(speech_windows >= threshold).mean():.1%} | "
                f"{len(turns)} ({len(spans)}) | {kept / RATE:.1f} of {total / RATE:.1f} s ({kept / total:.1%}) | "
                f"{statistics.median(delays):.0f} | {false} |"
            )


def front_end_table(model: VadModel, sentences: list[np.ndarray]) -> None:
    """Why upsample, and why soxr's quick quality: scores, how soon speech is seen, what noise does."""
    clean, spans = corpus(sentences)
    noisy = with_noise(clean, spans, 5)
    gaps = [(end + RATE // 5, first - RATE // 10) for (_, end), (first, _) in itertools.pairwise(spans)]
    print("\nFront end (espeak-ng, phone path): Silero's scores; the model only takes 16 kHz windows")
    print(
        "| 8 kHz -> model | speech median | speech >= 0.5 | first >= 0.5 after onset, ms median "
        "| 5 dB SNR: speech >= 0.5 | 5 dB SNR: gaps >= 0.35 |"
    )
    print(
        "|----------------|--------------:|--------------:|------------------------------------:"
        "|------------------------:|-----------------------:|"
    )
    fronts = {
        "soxr stream QQ (ours)": "QQ",
        "soxr stream LQ": "LQ",
        "soxr stream HQ": "HQ",
        "none: 8 kHz fed as 16 kHz": None,
    }
    for name, quality in fronts.items():

        def scores(pcm: np.ndarray, quality: str | None = quality) -> tuple[np.ndarray, np.ndarray]:
            if quality is None:
                return unresampled_probs(model, pcm)
            stream = model.stream()
            stream._resampler = soxr.ResampleStream(RATE, 16000, 1, dtype="float32", quality=quality)
            return window_probs(stream, pcm)

        probs, ends = scores(clean)
        speech = probs[inside(ends, spans, lag=800)]
        delays = []
        for first, end in spans:
            hits = np.nonzero((ends > first) & (ends <= end + RATE // 2) & (probs >= 0.5))[0]
            if hits.size:
                delays.append((ends[hits[0]] - first) / RATE * 1000)
        noisy_probs, noisy_ends = scores(noisy)
        noisy_speech = noisy_probs[inside(noisy_ends, spans, lag=800)]
        noisy_gaps = noisy_probs[inside(noisy_ends, gaps, lag=0)]
        print(
            f"| {name} | {np.median(speech):.2f} | {(speech >= 0.5).mean():.1%} | "
            f"{statistics.median(delays):.0f} ({len(delays)}/{len(spans)} found) | "
            f"{(noisy_speech >= 0.5).mean():.1%} | {(noisy_gaps >= 0.35).mean():.1%} |"
        )


def non_speech() -> dict[str, np.ndarray]:
    rng, n = np.random.default_rng(2), 20 * RATE
    t = np.arange(n) / RATE

    def colored(alpha: float) -> np.ndarray:  # 1/f^alpha noise at about -20 dBFS
        spectrum = np.fft.rfft(rng.normal(size=n))
        spectrum[1:] /= np.fft.rfftfreq(n, 1 / RATE)[1:] ** (alpha / 2)
        spectrum[0] = 0
        noise = np.fft.irfft(spectrum, n)
        return noise / noise.std() * 3277

    clicks = np.zeros(n)
    clicks[rng.integers(0, n, 200)] = 20000
    return {
        "silence": np.zeros(n),
        "white -20 dBFS": rng.normal(0, 3277, n),
        "white -10 dBFS": rng.normal(0, 10362, n),
        "pink -20 dBFS": colored(1),
        "brown -20 dBFS": colored(2),
        "200 clicks": clicks,
        "hum 50+150 Hz": 3000 * np.sin(2 * np.pi * 50 * t) + 1500 * np.sin(2 * np.pi * 150 * t),
        "1 kHz tone": 8000 * np.sin(2 * np.pi * 1000 * t),
        "C major chord, on/off 2 Hz": sum(np.sin(2 * np.pi * f * t) for f in (262, 330, 392))
        * 3000
        * (np.sin(2 * np.pi * 2 * t) > 0),
        "DC offset 6000": np.full(n, 6000.0),
    }


def non_speech_table(model: VadModel) -> None:
    print("\nNon-speech through mu-law, 20 s each")
    print("| signal | median score | max score | turns at 0.5/0.35 | turns at 0.2/0.05 |")
    print("|--------|-------------:|----------:|------------------:|------------------:|")
    for name, signal in non_speech().items():
        pcm = ulaw_decode(ulaw_encode(np.clip(signal, -32768, 32767).astype(np.int16)))
        probs, _ = window_probs(model.stream(), pcm)
        turns = []
        for high, low in ((0.5, 0.35), (0.2, 0.05)):
            events = feed(Endpointer(model, threshold=high, stay_threshold=low), pcm)
            turns.append(sum(isinstance(e, SpeechEnded) for _, e in events))
        print(f"| {name} | {np.median(probs):.3f} | {probs.max():.3f} | {turns[0]} | {turns[1]} |")


def delay_table(model: VadModel, voices: dict[str, list[np.ndarray]]) -> None:
    print("\nEnd-of-turn delay after the voice really stops, barge-in delay after it starts (threshold 0.5/0.35)")
    print(
        "| voice | end_silence_ms | turns (sentences) | end of turn, ms median | p90 "
        "| SpeechStarted after onset, ms median | p90 |"
    )
    print(
        "|-------|---------------:|------------------:|-----------------------:|----:"
        "|------------------------------------:|----:|"
    )
    for name, sentences in voices.items():
        pcm, spans = corpus(sentences)
        for end_silence in (300, 500, 800):
            events = feed(Endpointer(model, end_silence_ms=end_silence), pcm)
            ends = [at for at, e in events if isinstance(e, SpeechEnded)]
            starts = [at for at, e in events if isinstance(e, SpeechStarted)]
            end_delays = [delay_ms(ends, end) for _, end in spans]
            start_delays = [delay_ms(starts, first) for first, _ in spans]
            print(
                f"| {name} | {end_silence} | {len(ends)} ({len(spans)}) | {statistics.median(end_delays):.0f} | "
                f"{np.percentile(end_delays, 90):.0f} | {statistics.median(start_delays):.0f} | "
                f"{np.percentile(start_delays, 90):.0f} |"
            )


def main() -> None:
    lines = (ROOT / "tests/data/caller_utterances.jsonl").read_text().splitlines()
    texts = [json.loads(line)["text"] for line in lines]
    model = VadModel()
    speak = piper_voice()
    voices = {"espeak-ng": [espeak(text) for text in texts], "piper joe": [speak(text) for text in texts]}
    pcm, _ = corpus(voices["espeak-ng"])
    cpu_table(model, pcm)
    streams_table(model, pcm)
    front_end_table(model, voices["espeak-ng"])
    non_speech_table(model)
    threshold_table(model, voices)
    delay_table(model, voices)


if __name__ == "__main__":
    main()
