"""speech.transcriber with the real Whisper models on a corpus spoken by Piper and espeak-ng through the
phone path (tests/speech_corpus.py); bad input; no network; the `voiceswarm transcribe` command.

WER is measured after Whisper's English normaliser, on the 27 sentences of caller_utterances.jsonl.
Speed is not asserted here (benchmarks/speech_stt.py measures it).
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jiwer import wer
from whisper_normalizer.english import EnglishTextNormalizer

from harness import speech_corpus as corpus
from speech.audio import resample, write_wav
from speech.transcriber import TINY_WINDOW_S, Thresholds, Transcriber, Transcript, compression_ratio, whisper_audio
from speech.whisper_window import MARGIN_S, window_frames

pytestmark = pytest.mark.timeout(600)

RATE = corpus.PHONE_RATE
_normal = EnglishTextNormalizer()


def score(references: list[str], hypotheses: list[str]) -> float:
    return wer([_normal(r) for r in references], [_normal(h) for h in hypotheses])


@pytest.fixture(scope="session")
def corpus_dir(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = getattr(pytestconfig, "cache", None)
    return cache.mkdir("speech_corpus") if cache is not None else tmp_path_factory.mktemp("speech_corpus")


@pytest.fixture(scope="session")
def piper_corpus(corpus_dir: Path) -> list[tuple[str, np.ndarray]]:
    return corpus.corpus("piper", corpus.sentences("caller_utterances.jsonl"), corpus_dir)


@pytest.fixture(scope="session")
def espeak_corpus(corpus_dir: Path) -> list[tuple[str, np.ndarray]]:
    return corpus.corpus("espeak", corpus.sentences("caller_utterances.jsonl"), corpus_dir)


@pytest.fixture(scope="module")
def tiny() -> Iterator[Transcriber]:
    transcriber = Transcriber("tiny.en")
    yield transcriber
    transcriber.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Transcriber]:
    transcriber = Transcriber("base", cache_dir=tmp_path_factory.mktemp("models"))
    yield transcriber
    transcriber.close()


def transcribe_all(
    transcriber: Transcriber, items: list[tuple[str, np.ndarray]], prompt: str | None = None
) -> list[Transcript]:
    return [transcriber.transcribe_sync(pcm, prompt=prompt) for _, pcm in items]


# ---- accuracy --------------------------------------------------------------------------------------------


# Measured on this corpus (benchmarks/speech_stt.py has the bigger set): Piper through the phone path
# scores 1-3% with base and 3-5% with tiny.en; the targets are 8% and 12%.
@pytest.mark.parametrize(("model", "target"), [("tiny.en", 0.12), ("base", 0.08)])
def test_piper_voice_through_the_phone_is_understood(
    request: pytest.FixtureRequest, piper_corpus, model: str, target: float
) -> None:
    transcriber: Transcriber = request.getfixturevalue("tiny" if model == "tiny.en" else "base")
    transcripts = transcribe_all(transcriber, piper_corpus)
    assert score([text for text, _ in piper_corpus], [t.text for t in transcripts]) <= target
    # Clear speech is trusted: the agent should not ask a clear caller to repeat, nor wait for a second pass.
    assert sum(t.confident for t in transcripts) >= 0.9 * len(transcripts)
    # Piper samples its voice afresh each run, and one-word turns ("Hello?", "Yes.") sit at the retry line
    # (logprob -0.4 to -0.5): base retried 0-1 of 27 in six fresh corpora here, and 3 once in CI.
    assert sum(t.retried for t in transcripts) <= 0.15 * len(transcripts)


def plain_whisper(directory: Path, items: list[tuple[str, np.ndarray]], scratch: Path) -> list[str]:
    """The baseline of benchmarks/speech_stt.py: off-the-shelf faster-whisper, every default, a 16 kHz WAV."""
    from faster_whisper import WhisperModel

    model = WhisperModel(str(directory))
    texts = []
    for number, (_, pcm) in enumerate(items):
        write_wav(scratch / f"{number}.wav", resample(pcm, RATE, 16000), 16000)
        texts.append("".join(segment.text for segment in model.transcribe(str(scratch / f"{number}.wav"))[0]).strip())
    return texts


# Issue 5's target: with the domain prompt (and the beam-search retry of unclear turns), at least 20% fewer
# word errors than plain faster-whisper on the hard caller's audio. Measured on these 27 sentences: tiny.en
# 31% -> 19% (17% without the encoder's 20 s window), base 28% -> 20%; on the 80 sentences of
# triage_untouched.jsonl (never tuned on) tiny.en 37% -> 27% (-25%; -16% without the window), base 29% -> 22%.
@pytest.mark.parametrize("model", ["tiny.en", "base"])
def test_the_domain_prompt_helps_a_hard_caller(
    request: pytest.FixtureRequest, espeak_corpus, tmp_path: Path, model: str
) -> None:
    transcriber: Transcriber = request.getfixturevalue("tiny" if model == "tiny.en" else "base")
    references = [text for text, _ in espeak_corpus]
    plain = score(references, plain_whisper(transcriber.directory, espeak_corpus, tmp_path))
    ours = score(references, [t.text for t in transcribe_all(transcriber, espeak_corpus, corpus.domain_prompt())])
    assert ours <= 0.8 * plain, (ours, plain)


@contextmanager
def encoded_frames() -> Iterator[list[int]]:
    """The width of every window Whisper's encoder is given, in log-mel frames (100 a second)."""
    from faster_whisper import WhisperModel

    widths: list[int] = []
    plain_encode = WhisperModel.encode

    def encode(self: Any, features: np.ndarray) -> Any:
        widths.append(features.shape[-1])
        return plain_encode(self, features)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WhisperModel, "encode", encode)
        yield widths


def test_the_encoder_hears_a_short_window_for_a_short_turn_and_all_of_a_long_one(
    tiny: Transcriber, piper_corpus
) -> None:
    _text, short = piper_corpus[0]
    long = np.concatenate([pcm for _, pcm in piper_corpus[:7]])  # ~22 s: more than the window
    assert tiny.window_s == TINY_WINDOW_S < long.size / RATE + MARGIN_S < 30
    with encoded_frames() as widths:
        tiny.transcribe_sync(short)
        tiny.transcribe_sync(long)
    assert widths[0] == TINY_WINDOW_S * 100
    assert widths[-1] == math.ceil((long.size / RATE + MARGIN_S) * 100) < 3000


def test_the_short_window_hears_the_words_whispers_own_window_hears(
    tiny: Transcriber, piper_corpus, espeak_corpus
) -> None:
    full = Transcriber("tiny.en", window_s=30.0)
    with encoded_frames() as widths:
        full.transcribe_sync(piper_corpus[0][1])
    assert widths == [3000]
    for items in (piper_corpus, espeak_corpus):
        references = [text for text, _ in items]
        windowed = score(references, [t.text for t in transcribe_all(tiny, items, corpus.domain_prompt())])
        whole = score(references, [t.text for t in transcribe_all(full, items, corpus.domain_prompt())])
        # Measured on these 27 (part of the 107 the window was chosen on): Piper 1% / 1%, espeak-ng 19% / 17%;
        # on 100 never tuned on (triage_blind + triage_fresh): 6.5% / 7.4%, 30.3% / 32.0%.
        assert windowed <= whole + 0.03, (windowed, whole)
    full.close()


def test_base_keeps_whispers_own_window_and_so_does_the_language_detector(base: Transcriber, piper_corpus) -> None:
    windowed = Transcriber("base", cache_dir=base.directory.parent, window_s=20.0)
    with encoded_frames() as widths:
        base.transcribe_sync(piper_corpus[0][1])
        windowed.transcribe_sync(piper_corpus[0][1])
        windowed.whisper.detect_language(whisper_audio(piper_corpus[0][1], RATE))
    assert widths == [3000, 2000, 3000]
    windowed.close()


def test_the_window_is_at_least_window_s_and_the_utterance_and_a_margin() -> None:
    assert window_frames(2.0, 15.0) == 1500
    assert window_frames(14.0, 15.0) == 1600
    assert window_frames(27.9, 15.0) == 2990
    assert window_frames(28.0, 15.0) is None  # Whisper's own 30 s
    assert window_frames(1.0, 30.0) is None


def test_only_unclear_speech_is_decoded_again(base: Transcriber, espeak_corpus) -> None:
    greedy = Transcriber("base", cache_dir=base.directory.parent, retry_beam_size=1)
    try:
        audio = [pcm for _, pcm in espeak_corpus][:10]
        first = [greedy.transcribe_sync(pcm) for pcm in audio]
        final = [base.transcribe_sync(pcm) for pcm in audio]
    finally:
        greedy.close()
    limits = base.thresholds
    unclear = [
        t.no_speech_prob <= limits.max_no_speech_prob
        and (t.avg_logprob < limits.retry_below_logprob or compression_ratio(t.text) > limits.max_compression_ratio)
        for t in first
    ]
    assert [t.retried for t in final] == unclear and 0 < sum(unclear) < len(unclear)
    assert all(f == g for f, g, u in zip(final, first, unclear, strict=True) if not u)  # a clear turn is decoded once


def test_the_corpus_prompt_is_the_one_the_app_builds() -> None:
    from types import SimpleNamespace

    from callcenter.shop import Shop
    from callcenter.voice import domain_prompt

    shop = Shop(":memory:")
    try:
        assert domain_prompt(SimpleNamespace(shop=shop)) == corpus.domain_prompt()  # type: ignore[arg-type]
    finally:
        shop.close()
    assert "the robot vacuum cleaner" in corpus.domain_prompt()


def test_a_transcriber_wide_domain_prompt_is_used_unless_a_call_brings_its_own(
    base: Transcriber, espeak_corpus
) -> None:
    with_domain = Transcriber("base", cache_dir=base.directory.parent, domain_prompt=corpus.domain_prompt())
    try:
        audio = [pcm for _, pcm in espeak_corpus][:4]  # a few suffice: the texts must be identical, not good
        assert [with_domain.transcribe_sync(pcm).text for pcm in audio] == [
            base.transcribe_sync(pcm, prompt=corpus.domain_prompt()).text for pcm in audio
        ]
        assert [with_domain.transcribe_sync(pcm, prompt="").text for pcm in audio] == [
            base.transcribe_sync(pcm).text for pcm in audio
        ]
        assert with_domain._model is base._model  # one model per process
    finally:
        with_domain.close()


def test_any_sample_rate(base: Transcriber, piper_corpus) -> None:
    _text, pcm = piper_corpus[0]
    wide = resample(pcm, RATE, 22050)
    assert _normal(base.transcribe_sync(wide, rate=22050).text) == _normal(base.transcribe_sync(pcm).text)


async def test_transcribe_runs_in_the_pool_without_blocking_the_loop(
    base: Transcriber, piper_corpus, caplog: pytest.LogCaptureFixture
) -> None:
    items = piper_corpus[:4]
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    beat = asyncio.create_task(ticker())
    with caplog.at_level(logging.INFO, logger="speech.transcriber"):
        transcripts = await asyncio.gather(*(base.transcribe(pcm, call_id=f"c{i}") for i, (_, pcm) in enumerate(items)))
    beat.cancel()
    assert [t.text for t in transcripts] == [t.text for t in transcribe_all(base, items)]
    records = [r for r in caplog.records if "event=transcribed" in r.getMessage()]
    assert {(r.threadName or "").rsplit("_", 1)[0] for r in records} == {"whisper"}  # never the event loop's thread
    assert {f"call=c{i}" for i in range(4)} <= {r.getMessage().split()[1] for r in records}
    assert ticks > 0


# ---- bad input -------------------------------------------------------------------------------------------

BAD_INPUT = corpus.bad_input()


@pytest.mark.parametrize("name", list(BAD_INPUT))
@pytest.mark.parametrize("model", ["tiny.en", "base"])
def test_bad_input_never_gives_a_confident_sentence(request: pytest.FixtureRequest, model: str, name: str) -> None:
    transcriber: Transcriber = request.getfixturevalue("tiny" if model == "tiny.en" else "base")
    pcm = BAD_INPUT[name]
    transcript = transcriber.transcribe_sync(pcm)
    assert not transcript.confident, transcript
    assert transcript.duration_s == pytest.approx(pcm.size / RATE)


@pytest.mark.parametrize("damage", ["DC offset", "clipping", "quiet"])
def test_damaged_speech_is_still_understood(base: Transcriber, piper_corpus, damage: str) -> None:
    # Several sentences: Piper speaks each a little differently every time the corpus is made, and one
    # clipped word more or less must not decide the test.
    items = piper_corpus[:6]
    transcripts = []
    for _, pcm in items:
        samples = pcm.astype(np.float64)
        damaged = {"DC offset": samples + 9000, "clipping": samples * 10, "quiet": samples / 20}[damage]
        transcripts.append(base.transcribe_sync(np.clip(np.rint(damaged), -32768, 32767).astype(np.int16)))
    assert all(t.confident for t in transcripts), transcripts
    assert score([text for text, _ in items], [t.text for t in transcripts]) <= 0.2, transcripts  # 6-8% here


def test_quiet_audio_skips_the_model(base: Transcriber) -> None:
    transcript = base.transcribe_sync(corpus.phone(corpus.noise(5, -70)))
    assert transcript == Transcript("", float("-inf"), 1.0, 5.0, False)


def test_thresholds_decide_confidence(base: Transcriber, piper_corpus) -> None:
    _text, pcm = piper_corpus[0]
    strict = Transcriber("base", cache_dir=base.directory.parent, thresholds=Thresholds(min_avg_logprob=-0.0001))
    try:
        assert base.transcribe_sync(pcm).confident and not strict.transcribe_sync(pcm).confident
    finally:
        strict.close()


# ---- no network -----------------------------------------------------------------------------------------

# The idea of tests/test_no_network.py: one audit hook (hooks cannot be removed) that records while a
# test holds the flag.
_connections: list[Any] = []
_recording = threading.Event()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _recording.is_set() and event in ("socket.connect", "socket.getaddrinfo"):
        _connections.append((event, args[1] if event == "socket.connect" else args[0]))


sys.addaudithook(_audit)


@contextmanager
def recording() -> Iterator[list[Any]]:
    _connections.clear()
    _recording.set()
    try:
        yield _connections
    finally:
        _recording.clear()


def test_the_hook_sees_a_connection() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        address = listener.getsockname()
        with recording() as seen, socket.create_connection(address, timeout=5):
            pass
    assert ("socket.connect", address) in seen


def test_loading_and_running_the_models_opens_no_connection(tmp_path: Path, piper_corpus) -> None:
    from piper import PiperVoice

    from speech.models import piper_voice_paths

    text, pcm = piper_corpus[0]
    Transcriber._models.clear()  # load for real inside the recording
    with recording() as seen:
        heard = []
        for model in ("tiny.en", "base"):
            transcriber = Transcriber(model, cache_dir=tmp_path, workers=1)
            heard.append(transcriber.transcribe_sync(pcm).text)
            transcriber.close()
        voice_model, voice_config = piper_voice_paths()
        voice = PiperVoice.load(voice_model, config_path=voice_config)
        spoken = np.concatenate([chunk.audio_int16_array for chunk in voice.synthesize("Your refund is on its way.")])
    assert seen == []
    assert all(score([text], [h]) <= 0.2 for h in heard) and spoken.size > voice.config.sample_rate


# ---- voiceswarm transcribe --------------------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch):  # the CLI's main
    from callcenter import cli as module

    monkeypatch.delenv("VOICESWARM_DB", raising=False)
    return module.main


def test_cli_transcribes_a_wav_of_any_rate(
    cli, piper_corpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, pcm = piper_corpus[2]
    write_wav(tmp_path / "call.wav", resample(pcm, RATE, 44100), 44100)
    assert (
        cli(
            [
                "transcribe",
                str(tmp_path / "call.wav"),
                "--model",
                "tiny.en",
                "--beam",
                "2",
                "--prompt",
                "robot vacuum cleaner",
            ]
        )
        == 0
    )
    heard, verdict = capsys.readouterr().out.strip().splitlines()
    assert score([text], [heard]) <= 0.2
    assert verdict.startswith("(confident; avg_logprob") and "at 44100 Hz" in verdict


def test_cli_says_what_is_wrong_with_a_file(cli, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["transcribe", str(tmp_path / "missing.wav"), "--model", "tiny.en"]) == 1
    assert "missing.wav: no such file" in capsys.readouterr().err
    (tmp_path / "notes.wav").write_text("hello")
    assert cli(["transcribe", str(tmp_path / "notes.wav")]) == 1
    assert "not a PCM WAV file" in capsys.readouterr().err
    write_wav(tmp_path / "ok.wav", np.zeros(800, np.int16), 8000)
    assert cli(["transcribe", str(tmp_path / "ok.wav"), "--model", "small"]) == 1
    assert "unknown Whisper model 'small'" in capsys.readouterr().err


def test_heads_that_trail_off_in_the_prompt_let_whisper_write_a_head_unfinished(
    tiny: Transcriber, corpus_dir: Path
) -> None:
    """A caller who stops after "the" sounds finished to Whisper, which then writes a finished sentence
    ("I want to return that.") unless its prompt shows callers trailing off (speech.turn_words)."""
    from speech.turn_words import TRAILING_OFF_PROMPT, unfinished

    texts = corpus.heads(corpus.sentences("caller_utterances.jsonl"))
    shop, without = corpus.domain_prompt(), corpus.domain_prompt().replace(f" {TRAILING_OFF_PROMPT}", "")
    assert TRAILING_OFF_PROMPT in shop and without != shop
    held = {prompt: 0 for prompt in (shop, without)}
    for voice in corpus.VOICES:
        for _, pcm in corpus.corpus(voice, texts, corpus_dir):
            for prompt in held:
                held[prompt] += unfinished(tiny.transcribe_sync(pcm, prompt=prompt).text)
    # Whisper's decoding varies a little between runs on these cores (24 / 22, 23 / 21, then 3 apart): a margin of
    # 3 of 38 failed CI now and then; the prompt's heads held are more in every run.
    assert held[shop] >= held[without] + 1, (held[shop], held[without], 2 * len(texts))
