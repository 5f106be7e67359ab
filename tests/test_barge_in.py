"""Words over the agent (callcenter.call.barge_in), in microseconds: what the running turn said and how much of
it the caller heard decide whether the words answer it, stop it, or finish the caller's own sentence."""

from __future__ import annotations

from callcenter.call.barge_in import QUESTION_END_SAMPLES, WENT_ON_SAMPLES, AgentSoFar

QUESTION = [("Your order is on its way.", 16000), ("Is there anything else?", 40000)]


def test_a_question_heard_nearly_to_its_end_is_answered() -> None:
    near_end = AgentSoFar(QUESTION, 40000 - QUESTION_END_SAMPLES, done=True, greeting=False)
    assert near_end.answers_question() and near_end.stopped_by(True, "Yeah.", 0.4)
    assert not AgentSoFar(QUESTION, 40000 - QUESTION_END_SAMPLES - 1, done=True, greeting=False).answers_question()
    assert not AgentSoFar(QUESTION, 39000, done=False, greeting=False).answers_question()  # more is coming


def test_over_the_greetings_question_an_okay_is_no_answer() -> None:
    greeting = AgentSoFar([("Hello, how can I help you today?", 24000)], 23000, done=True, greeting=True)
    assert not greeting.answers_question()
    assert not greeting.stopped_by(True, "Okay.", 0.4)


def test_words_before_the_first_sentence_was_heard_go_on_with_the_callers_own() -> None:
    assert AgentSoFar(QUESTION, 0, done=False, greeting=False).went_on()
    assert AgentSoFar([], 0, done=False, greeting=False).went_on()
    assert not AgentSoFar(QUESTION, 16000, done=False, greeting=False).went_on()  # the first sentence was heard
    long_first = [("Let me look that up for you in our catalogue right now.", 30000)]
    assert not AgentSoFar(long_first, WENT_ON_SAMPLES + 1, done=False, greeting=False).went_on()
