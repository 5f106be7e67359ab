"""The semantic end of turn: the endpointer with a judge (fakes for the verdicts), and Smart Turn v3.2
itself on phone-path speech (skipped when `python -m speech.turn install` has not been run)."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from speech.endpointer import Endpointer, SpeechEnded, SpeechPaused
from speech.turn import InlineJudge, TurnModel, TurnModelError, find_model
from tests.speech_fixtures import RATE, ended, espeak, run, silence

SENTENCE = "I want to return the headphones I bought last week."


class Judge:
    """Gives the scripted probabilities in order; `late` frames after each submit (0: at once)."""

    def __init__(self, *probabilities: float, late: int = 0, fail: bool = False) -> None:
        self.probabilities, self.late, self.fail = list(probabilities), late, fail
        self.asked: list[np.ndarray] = []
        self.pending: list[tuple[int, Future[float], float]] = []

    def submit(self, pcm16_8k: np.ndarray) -> Future[float]:
        self.asked.append(pcm16_8k)
        verdict: Future[float] = Future()
        probability = self.probabilities.pop(0)
        if self.fail:
            verdict.set_exception(RuntimeError("broken model"))
        elif self.late == 0:
            verdict.set_result(probability)
        else:
            self.pending.append((self.late, verdict, probability))
        return verdict

    def tick(self) -> None:
        for item in list(self.pending):
            frames, verdict, probability = item
            self.pending.remove(item)
            if frames <= 1:
                if not verdict.cancelled():
                    verdict.set_result(probability)
            else:
                self.pending.append((frames - 1, verdict, probability))


def run_judged(endpointer: Endpointer, judge: Judge, pcm: np.ndarray) -> list:
    events = []
    for start in range(0, pcm.size, 160):
        judge.tick()
        events += [((start + 160) / RATE, event) for event in endpointer.feed(pcm[start : start + 160])]
    return events


def voice_end(pcm_voice: np.ndarray, lead_s: float = 0.5) -> float:
    return lead_s + pcm_voice.size / RATE


def test_done_by_the_judge_ends_the_turn_after_the_short_silence(model) -> None:
    voice = espeak(SENTENCE)
    judge = Judge(0.9)
    endpointer = Endpointer(
        model, end_silence_ms=2000, post_roll_ms=200, pause_ms=200, judge=judge, turn_silence_ms=200
    )
    events = run_judged(endpointer, judge, np.concatenate([silence(0.5), voice, silence(3.0)]))
    ((ended_at, turn),) = [(at, e) for at, e in events if isinstance(e, SpeechEnded)]
    assert turn.reason == "complete" and turn.turn_probability == 0.9
    assert ended_at - voice_end(voice) < 0.45  # 200 ms of silence plus the VAD's own lag, not 2 s
    # The judge heard the same audio the turn ends with (and the early transcript was started on).
    paused = [e for _, e in events if isinstance(e, SpeechPaused)]
    assert np.array_equal(judge.asked[0], turn.audio) and np.array_equal(paused[0].audio, turn.audio)


def test_mid_sentence_by_the_judge_waits_for_the_long_silence(model) -> None:
    voice = espeak(SENTENCE)
    judge = Judge(0.2)
    endpointer = Endpointer(model, end_silence_ms=2000, judge=judge, turn_silence_ms=200)
    events = run_judged(endpointer, judge, np.concatenate([silence(0.5), voice, silence(3.0)]))
    ((ended_at, turn),) = [(at, e) for at, e in events if isinstance(e, SpeechEnded)]
    assert turn.reason == "silence" and turn.turn_probability == 0.2
    assert ended_at - voice_end(voice) > 1.9


@pytest.mark.parametrize(
    ("probability", "reason", "wait_s"),
    [(0.9, "complete", (0.2, 0.45)), (0.3, "silence", (0.45, 0.75)), (0.05, "silence", (1.9, 2.3))],
)
def test_an_unsure_verdict_ends_at_the_silence_a_sure_mid_sentence_one_holds(
    model, probability, reason, wait_s
) -> None:
    # done >= 0.8 ends at once; unsure (0.1..0.8) ends after end_silence_ms, as without a judge;
    # below the hold threshold the caller is heard as mid-sentence and gets the long wait.
    voice = espeak(SENTENCE)
    judge = Judge(probability)
    endpointer = Endpointer(
        model, end_silence_ms=500, judge=judge, turn_threshold=0.8, turn_hold_threshold=0.1, turn_max_silence_ms=2000
    )
    events = run_judged(endpointer, judge, np.concatenate([silence(0.5), voice, silence(3.0)]))
    ((ended_at, turn),) = [(at, e) for at, e in events if isinstance(e, SpeechEnded)]
    assert turn.reason == reason and turn.turn_probability == probability
    assert wait_s[0] < ended_at - voice_end(voice) < wait_s[1]


def test_a_hold_threshold_over_the_done_one_is_refused(model) -> None:
    with pytest.raises(ValueError, match="turn_hold_threshold"):
        Endpointer(model, end_silence_ms=500, judge=Judge(), turn_threshold=0.5, turn_hold_threshold=0.6)


def test_a_late_verdict_ends_the_turn_on_the_frame_it_arrives(model) -> None:
    voice = espeak(SENTENCE)
    now, late = Judge(0.9), Judge(0.9, late=5)
    at = {}
    for name, judge in (("now", now), ("late", late)):
        endpointer = Endpointer(model, end_silence_ms=2000, judge=judge)
        events = run_judged(endpointer, judge, np.concatenate([silence(0.5), voice, silence(3.0)]))
        at[name] = next(t for t, e in events if isinstance(e, SpeechEnded))
    assert at["late"] - at["now"] == pytest.approx(0.1, abs=0.001)  # 5 frames of 20 ms


def test_the_caller_going_on_drops_the_verdict_and_a_later_pause_is_judged_again(model) -> None:
    head, tail = espeak("I would like to return"), espeak("the blue headphones I bought last week.")
    judge = Judge(0.1, 0.95, late=30)  # the first verdict would come 600 ms late, after the caller went on
    endpointer = Endpointer(model, end_silence_ms=2000, judge=judge)
    events = run_judged(endpointer, judge, np.concatenate([silence(0.5), head, silence(0.5), tail, silence(3.0)]))
    turns = ended(events)
    assert len(turns) == 1 and turns[0].reason == "complete" and len(judge.asked) == 2
    assert turns[0].duration_s >= (head.size + tail.size) / RATE


def test_a_broken_judge_leaves_the_turn_to_silence(model) -> None:
    judge = Judge(0.9, fail=True)
    endpointer = Endpointer(model, end_silence_ms=700, judge=judge, turn_hold_threshold=0.1, turn_max_silence_ms=2000)
    voice = espeak(SENTENCE)
    [(ended_at, turn)] = [
        (at, e)
        for at, e in run_judged(endpointer, judge, np.concatenate([silence(0.5), voice, silence(2.5)]))
        if isinstance(e, SpeechEnded)
    ]
    assert turn.reason == "silence" and turn.turn_probability is None
    assert ended_at - voice_end(voice) < 1.0  # end_silence_ms, not the long wait a "mid-sentence" verdict gets


def test_a_turn_silence_not_under_the_end_silence_is_refused(model) -> None:
    with pytest.raises(ValueError, match="turn_silence_ms"):
        Endpointer(model, end_silence_ms=500, judge=Judge(), turn_silence_ms=500)


# ---- Smart Turn v3.2 itself ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smart_turn() -> TurnModel:
    if find_model() is None:
        pytest.skip("Smart Turn not installed: python -m speech.turn install")
    return TurnModel()


def test_smart_turn_hears_a_finished_sentence_from_a_cut_one(smart_turn, piper) -> None:
    # Piper through 8 kHz mu-law, 200 ms of silence after the voice, as the endpointer hands it over.
    # Not every sentence: it hears "...headphones I bought last week." (Piper's flat end) as unfinished;
    # benchmarks/turn_taking.py measures how often, and what that costs. Piper speaks each synthesis a little
    # differently and the cut's score moves with it (0.03 to 0.74 measured, 0.64 failed "< 0.5" here), so
    # this holds the ranking, over the median of three syntheses, not a threshold.
    done, cut = "I'd like to buy a new phone charger.", "I'd like to buy a new"
    finished, unfinished = (
        np.median([smart_turn.probability(np.concatenate([piper(t), silence(0.2)])) for _ in range(3)])
        for t in (done, cut)
    )
    assert finished > 0.8 and finished > unfinished, (finished, unfinished)


def test_smart_turn_ends_a_real_turn_early_through_the_endpointer(smart_turn, model, piper) -> None:
    voice = piper("I'd like to buy a new phone charger.")
    endpointer = Endpointer(model, end_silence_ms=2000, judge=InlineJudge(smart_turn))
    events = run(endpointer, np.concatenate([silence(0.5), voice, silence(2.5)]))
    ((ended_at, turn),) = [(at, e) for at, e in events if isinstance(e, SpeechEnded)]
    assert turn.reason == "complete" and ended_at - voice_end(voice) < 0.5


def test_a_missing_or_foreign_turn_model_is_named(tmp_path: Path) -> None:
    with pytest.raises(TurnModelError, match=r"speech\.turn install"):
        TurnModel(tmp_path / "missing.onnx")
    foreign = tmp_path / "other.onnx"
    foreign.write_bytes(b"not smart turn")
    with pytest.raises(TurnModelError, match="sha256"):
        TurnModel(foreign)
