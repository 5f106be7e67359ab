"""The endpointer on phone-path speech made here: espeak-ng and Piper -> 8 kHz -> mu-law -> 20 ms frames."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from speech.endpointer import Endpointer, Event, FrameError, SpeechEnded, SpeechPaused, SpeechResumed, SpeechStarted
from speech.vad import VadModel, VadModelError
from telephony.g711 import ulaw_decode, ulaw_encode
from tests.speech_fixtures import RATE, ended, espeak, run, silence

FIRST = "Hi, I'd like to buy a new phone charger."
SECOND = "Do you have wireless headphones in stock?"


@pytest.mark.parametrize("voice, frame", [("espeak", 160), ("espeak", 240), ("piper", 160)])
def test_two_sentences_give_two_turns_that_hold_the_speech(model, piper, voice, frame):
    speak = espeak if voice == "espeak" else piper
    first, second = speak(FIRST), speak(SECOND)
    pcm = np.concatenate([silence(0.5), first, silence(1.0), second, silence(1.0)])
    second_onset = 1.5 + first.size / RATE
    truths = [(0.5, 0.5 + first.size / RATE), (second_onset, second_onset + second.size / RATE)]

    turns = ended(run(Endpointer(model), pcm, frame))

    assert len(turns) == 2
    for turn, (onset, offset) in zip(turns, truths, strict=True):
        assert turn.reason == "silence"
        start = round(turn.start_s * RATE)
        assert np.array_equal(turn.audio, pcm[start : start + turn.audio.size])
        assert turn.duration_s == pytest.approx(turn.audio.size / RATE)
        # the whole voice is inside, with at most the two pads (0.3 s each) and Silero's lag around it
        assert turn.start_s <= onset and turn.start_s + turn.duration_s >= offset
        assert 0.0 <= turn.duration_s - (offset - onset) <= 0.9


def test_a_short_pause_inside_a_sentence_does_not_split_it(model):
    head, tail = espeak("I would like to return"), espeak("the blue headphones I bought last week.")
    pcm = np.concatenate([silence(0.5), head, silence(0.25), tail, silence(1.0)])

    turns = ended(run(Endpointer(model), pcm))

    assert len(turns) == 1
    assert turns[0].duration_s >= (head.size + tail.size) / RATE


@pytest.mark.parametrize("text", [FIRST, SECOND, "Where is my order?", "Yes."])
def test_speech_started_comes_within_300_ms_of_the_voice(model, text):
    speech = espeak(text)
    onset = 0.7
    pcm = np.concatenate([silence(0.7), speech, silence(1.0)])

    events = run(Endpointer(model), pcm)

    assert [type(event) for _, event in events] == [SpeechStarted, SpeechEnded]
    returned_at, started = events[0]
    assert returned_at - onset <= 0.3
    assert onset - 0.1 <= started.at_s <= returned_at


@pytest.mark.parametrize("voice", ["espeak", "piper"])
def test_a_short_yes_after_a_long_silence_is_heard(model, piper, voice):
    # The caller waits 20 s for a slow model, then answers in one word: the demo's lost "Yes."
    yes = espeak("Yes.") if voice == "espeak" else piper("Yes.")
    turns = ended(run(Endpointer(model), np.concatenate([silence(20), yes, silence(1.0)])))
    assert len(turns) == 1
    assert 20 - 0.35 <= turns[0].start_s <= 20


def _noise(seconds: float, dbfs: float) -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.clip(rng.normal(0, 32768 * 10 ** (dbfs / 20), int(seconds * RATE)), -32768, 32767).astype(np.int16)


def _tone(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (8000 * np.sin(2 * np.pi * 1000 * t)).astype(np.int16)


@pytest.mark.parametrize(
    "name, pcm",
    [
        ("30 s of silence", silence(30)),
        ("white noise at -25 dBFS", _noise(10, -25)),
        ("white noise at -10 dBFS", _noise(10, -10)),
        ("1 kHz tone", _tone(10)),
        ("DC offset", np.full(10 * RATE, 6000, dtype=np.int16)),
    ],
)
def test_no_turn_without_speech(model, name, pcm):
    assert run(Endpointer(model), ulaw_decode(ulaw_encode(pcm))) == []


@pytest.mark.parametrize("damage", ["dc offset", "clipping", "noise at 10 dB SNR"])
def test_damaged_speech_still_gives_its_turns(model, damage):
    first, second = espeak(FIRST), espeak(SECOND)
    pcm = np.concatenate([silence(0.5), first, silence(1.0), second, silence(1.0)]).astype(np.float64)
    if damage == "dc offset":
        pcm += 4000
    elif damage == "clipping":
        pcm *= 10  # peaks ten times over full scale
    else:
        speech_rms = np.sqrt(np.mean(np.concatenate([first, second]).astype(np.float64) ** 2))
        pcm += np.random.default_rng(3).normal(0, speech_rms / 10 ** (10 / 20), pcm.size)
    pcm = ulaw_decode(ulaw_encode(np.clip(pcm, -32768, 32767).astype(np.int16)))

    turns = ended(run(Endpointer(model), pcm))

    assert len(turns) == 2
    assert all(turn.reason == "silence" for turn in turns)


def test_max_utterance_cuts_a_long_turn_into_pieces_without_overlap(model):
    sentences = [espeak(FIRST), espeak(SECOND)] * 4
    speech = np.concatenate([np.concatenate([s, silence(0.3)]) for s in sentences])
    pcm = np.concatenate([silence(0.5), speech, silence(1.0)])

    turns = ended(run(Endpointer(model, max_utterance_s=4.0), pcm))

    assert speech.size / RATE > 16
    assert [turn.reason for turn in turns[:-1]] == ["max_length"] * (len(turns) - 1) and len(turns) >= 4
    assert turns[-1].reason == "silence"
    assert all(turn.duration_s <= 4.0 for turn in turns)
    for piece, after in itertools.pairwise(turns):
        assert after.start_s >= piece.start_s + piece.duration_s - 1e-9


def test_two_calls_sharing_one_model_hear_what_they_would_alone(model):
    one = np.concatenate([silence(0.3), espeak(FIRST), silence(1.0), espeak("Yes."), silence(0.8)])
    two = np.concatenate([silence(1.1), espeak(SECOND), silence(1.0)])
    alone = [run(Endpointer(model), pcm) for pcm in (one, two)]

    together: list[list[tuple[float, Event]]] = [[], []]
    endpointers = [Endpointer(model, call_id="one"), Endpointer(model, call_id="two")]
    for start in range(0, max(one.size, two.size), 160):
        for index, pcm in enumerate((one, two)):
            if start < pcm.size:
                chunk = pcm[start : start + 160]
                together[index] += [((start + chunk.size) / RATE, e) for e in endpointers[index].feed(chunk)]

    with ThreadPoolExecutor(2) as pool:  # and from two threads at once
        threaded = list(pool.map(lambda pcm: run(Endpointer(model), pcm), (one, two)))

    assert len(ended(alone[0])) == 2 and len(ended(alone[1])) == 1
    for mine, reference in [*zip(together, alone, strict=True), *zip(threaded, alone, strict=True)]:
        assert [(t, type(e)) for t, e in mine] == [(t, type(e)) for t, e in reference]
        for (_, a), (_, b) in zip(mine, reference, strict=True):
            if isinstance(a, SpeechEnded):
                assert (a.start_s, a.reason) == (b.start_s, b.reason) and np.array_equal(a.audio, b.audio)
            else:
                assert a == b


@pytest.mark.parametrize("pre_roll_ms", [0, 300])
def test_the_turn_keeps_the_pre_roll_before_the_start(model, pre_roll_ms):
    pcm = np.concatenate([silence(1.0), espeak(SECOND), silence(1.0)])

    events = [event for _, event in run(Endpointer(model, pre_roll_ms=pre_roll_ms), pcm)]

    started, turn = events
    assert isinstance(started, SpeechStarted) and isinstance(turn, SpeechEnded)
    assert started.at_s - turn.start_s == pytest.approx(pre_roll_ms / 1000, abs=0.021)


def test_reset_forgets_the_turn_in_progress(model):
    speech = espeak(FIRST)
    endpointer = Endpointer(model)
    run(endpointer, np.concatenate([silence(0.3), speech[: speech.size // 2]]))
    endpointer.reset()

    events = run(endpointer, np.concatenate([silence(1.0), speech, silence(1.0)]))

    turns = ended(events)
    assert len(turns) == 1
    assert 0.5 <= turns[0].start_s <= 1.0  # times restart at the reset


@pytest.mark.parametrize(
    "frame", [np.zeros(160, dtype=np.float32), np.zeros((2, 160), dtype=np.int16), b"\x00" * 320, [0] * 160]
)
def test_a_frame_that_is_not_pcm16_is_refused_with_a_clear_error(model, frame):
    with pytest.raises(FrameError, match="1-D numpy int16"):
        Endpointer(model).feed(frame)


def test_an_empty_frame_is_nothing(model):
    endpointer = Endpointer(model)
    assert endpointer.feed(np.zeros(0, dtype=np.int16)) == []
    assert ended(run(endpointer, np.concatenate([silence(0.5), espeak("Yes."), silence(1.0)])))[0].start_s < 0.5


def test_a_missing_or_foreign_model_file_is_named(tmp_path: Path):
    with pytest.raises(VadModelError, match="pip install"):
        VadModel(tmp_path / "missing.onnx")
    foreign = tmp_path / "other.onnx"
    foreign.write_bytes(b"not silero")
    with pytest.raises(VadModelError, match="sha256"):
        VadModel(foreign)


def test_a_pause_announces_the_audio_the_turn_will_end_with(model):
    pcm = np.concatenate([silence(0.5), espeak(FIRST), silence(1.0)])

    events = run(Endpointer(model, post_roll_ms=200, pause_ms=200), pcm)

    assert [type(event) for _, event in events] == [SpeechStarted, SpeechPaused, SpeechEnded]
    (paused_at, paused), (ended_at, turn) = events[1], events[2]
    assert paused.start_s == turn.start_s and np.array_equal(paused.audio, turn.audio)
    assert ended_at - paused_at == pytest.approx(0.3, abs=0.021)  # the head start: end_silence - pause


def test_speech_after_a_pause_makes_the_turn_longer_than_the_pause_said(model):
    speech = espeak(FIRST)
    pcm = np.concatenate([silence(0.5), speech, silence(0.35), speech, silence(1.0)])

    events = run(Endpointer(model, post_roll_ms=200, pause_ms=200), pcm)

    pauses = [event for _, event in events if isinstance(event, SpeechPaused)]
    [turn] = ended(events)
    assert len(pauses) == 2 and all(p.start_s == turn.start_s for p in pauses)
    # The voice came back once, after the first pause and before the second: work on the first can stop.
    kinds = [type(event) for _, event in events]
    assert kinds == [SpeechStarted, SpeechPaused, SpeechResumed, SpeechPaused, SpeechEnded]
    [(resumed_at, resumed)] = [(at, event) for at, event in events if isinstance(event, SpeechResumed)]
    assert 0.5 + speech.size / RATE + 0.2 < resumed.at_s <= resumed_at < 0.5 + speech.size / RATE + 0.5
    assert pauses[0].audio.size < turn.audio.size and np.array_equal(pauses[1].audio, turn.audio)
    assert turn.duration_s > 2 * speech.size / RATE


def test_no_pause_events_unless_asked(model):
    events = run(Endpointer(model), np.concatenate([silence(0.5), espeak(FIRST), silence(1.0)]))
    assert not any(isinstance(event, SpeechPaused) for _, event in events)


@pytest.mark.parametrize("pause_ms", [100, 500, 600])
def test_a_pause_outside_tail_to_end_silence_is_refused(model, pause_ms):
    with pytest.raises(ValueError, match="pause_ms"):
        Endpointer(model, post_roll_ms=200, end_silence_ms=500, pause_ms=pause_ms)


def run_finishing(endpointer: Endpointer, pcm: np.ndarray, after_pause_s: float) -> list[tuple[float, Event]]:
    """As run(), calling finish() after_pause_s after each SpeechPaused, as the conversation does once the
    pause's words are transcribed and finished."""
    events: list[tuple[float, Event]] = []
    finish_at = None
    for start in range(0, pcm.size, 160):
        at = (start + 160) / RATE
        if finish_at is not None and at >= finish_at:
            endpointer.finish()
            finish_at = None
        for event in endpointer.feed(pcm[start : start + 160]):
            events.append((at, event))
            if isinstance(event, SpeechPaused):
                finish_at = at + after_pause_s
    return events


@pytest.mark.parametrize("after_pause_s, end_after_pause_s", [(0.06, 0.18), (0.3, 0.3)])
def test_finished_words_end_the_turn_at_the_shorter_silence(model, after_pause_s, end_after_pause_s):
    pcm = np.concatenate([silence(0.5), espeak(FIRST), silence(1.0)])
    endpointer = Endpointer(model, post_roll_ms=120, pause_ms=120, finished_silence_ms=300)

    events = run_finishing(endpointer, pcm, after_pause_s)

    assert [type(event) for _, event in events] == [SpeechStarted, SpeechPaused, SpeechEnded]
    (paused_at, paused), (ended_at, turn) = events[1], events[2]
    assert turn.reason == "complete" and np.array_equal(paused.audio, turn.audio)
    # At finished_silence_ms (300 - 120 after the pause), or at once when the words come later than that.
    assert ended_at - paused_at == pytest.approx(end_after_pause_s, abs=0.021)


def test_the_voice_coming_back_forgets_that_the_words_were_finished(model):
    head, tail = espeak("I would like to return"), espeak("the blue headphones I bought last week.")
    pcm = np.concatenate([silence(0.5), head, silence(0.25), tail, silence(1.0)])
    endpointer = Endpointer(model, post_roll_ms=120, pause_ms=120, finished_silence_ms=400)
    events: list[tuple[float, Event]] = []
    for start in range(0, pcm.size, 160):
        events += [((start + 160) / RATE, event) for event in endpointer.feed(pcm[start : start + 160])]
        if len(events) == 2:  # the first pause, inside the sentence: its words were (wrongly) finished
            assert isinstance(events[1][1], SpeechPaused)
            endpointer.finish()

    [turn] = ended(events)
    assert turn.reason == "silence" and turn.duration_s >= (head.size + tail.size) / RATE


def test_finished_words_change_nothing_without_a_shorter_silence(model):
    pcm = np.concatenate([silence(0.5), espeak(FIRST), silence(1.0)])
    events = run_finishing(Endpointer(model, post_roll_ms=120, pause_ms=120), pcm, 0.0)
    [turn] = ended(events)
    assert turn.reason == "silence"
    assert events[-1][0] - events[1][0] == pytest.approx(0.38, abs=0.021)


@pytest.mark.parametrize("finished_silence_ms", [0, 600])
def test_a_finished_silence_beyond_the_end_of_turn_is_refused(model, finished_silence_ms):
    with pytest.raises(ValueError, match="finished_silence_ms"):
        Endpointer(model, end_silence_ms=500, finished_silence_ms=finished_silence_ms)
