"""The call rules (callcenter.call.rules) in milliseconds: events and a clock in, what to do out."""

from __future__ import annotations

from dataclasses import replace

from callcenter.call.rules import (
    DRAIN_GRACE_S,
    CallRules,
    Disposition,
    EndCall,
    Escalate,
    HangUp,
    Interrupt,
    KeypadClosed,
    KeypadOpened,
    LetHear,
    RunDigits,
    Say,
    StartTurn,
    Transfer,
    WaitForCaller,
    WaitForDigits,
)
from callcenter.call.settings import VoiceSettings
from swarm.events import DigitsRequested, EndReason

SETTINGS = VoiceSettings(operator="7000", reprompt_after_s=8.0, reprompts_before_hangup=2, max_call_s=600.0)
ASKED = DigitsRequested(agent="refunds", tool="find_order", argument="order_number", max_digits=4)


def goodbye(text: str, end: EndReason, disposition: Disposition = "completed") -> StartTurn:
    return StartTurn((EndCall(end), Say(text), LetHear(), HangUp(disposition)))


def test_the_call_opens_with_the_greeting() -> None:
    rules = CallRules(SETTINGS, 0.0)
    assert rules.start(0.0) == [StartTurn((Say(SETTINGS.greeting),))]
    assert not rules.closing


def test_an_overloaded_node_says_its_notice_and_hands_over() -> None:
    rules = CallRules(SETTINGS, 0.0)
    steps = (Escalate("overload"), Say(SETTINGS.overload_notice), LetHear(), Transfer("7000"))
    assert rules.start(0.0, overflow=True) == [StartTurn(steps)]
    assert rules.closing


def test_a_silent_caller_is_reprompted_then_hung_up_on() -> None:
    rules = CallRules(SETTINGS, 0.0)
    rules.start(0.0)
    assert rules.tick(7.9, busy=False) == []
    assert rules.due() == 8.0
    assert rules.tick(8.0, busy=False) == [StartTurn((Say(SETTINGS.reprompt),))]
    assert rules.tick(15.0, busy=False) == []
    assert rules.tick(16.0, busy=False) == [StartTurn((Say(SETTINGS.reprompt),))]
    assert rules.tick(24.0, busy=False) == [goodbye(SETTINGS.silence_goodbye, "caller_silent", "abandoned")]
    assert rules.closing and rules.clock_stopped and rules.due() is None
    assert rules.tick(100.0, busy=False) == []


def test_a_busy_call_or_a_caller_who_speaks_is_not_silent() -> None:
    rules = CallRules(SETTINGS, 0.0)
    rules.start(0.0)
    assert rules.tick(7.0, busy=True) == []  # the caller in a long sentence, the agent thinking or talking
    assert rules.tick(14.0, busy=False) == []
    assert len(rules.tick(15.0, busy=False)) == 1
    assert rules.reprompts == 1
    rules.activity(16.0)
    assert rules.spoke() == []
    assert rules.reprompts == 0 and rules.due() == 24.0


def test_the_call_ends_at_its_time_limit_even_while_busy() -> None:
    rules = CallRules(SETTINGS, 0.0)
    rules.start(10.0)
    assert rules.tick(609.0, busy=True) == []
    assert rules.tick(610.0, busy=True) == [goodbye(SETTINGS.max_call_goodbye, "max_duration")]
    assert rules.clock_stopped


def test_0_reaches_a_person_once_and_other_keys_mean_nothing() -> None:
    rules = CallRules(SETTINGS, 0.0)
    assert rules.key("5", 1.0, agent_talking=True) == []
    assert rules.last_activity == 1.0
    handover = (LetHear(), Say(SETTINGS.handover), LetHear(), Transfer("7000"))
    assert rules.key("0", 2.0, agent_talking=False) == [Escalate("caller_pressed_0"), StartTurn(handover)]
    assert rules.key("0", 3.0, agent_talking=False) == []  # already handing over
    assert rules.person("supervisor") == []


def test_without_an_operator_the_caller_hears_so_and_the_call_fails() -> None:
    rules = CallRules(replace(SETTINGS, operator=None), 0.0)
    [escalate, turn] = rules.person("caller_pressed_0")
    assert escalate == Escalate("caller_pressed_0")
    assert turn == StartTurn((LetHear(), *goodbye(SETTINGS.no_operator, "no_operator", "failed").steps))


def test_a_failed_transfer_says_no_colleague_can_take_the_call() -> None:
    rules = CallRules(SETTINGS, 0.0)
    assert rules.transfer_failed() == goodbye(SETTINGS.no_operator, "no_operator", "failed").steps


def test_the_digits_a_tool_asked_for_run_it() -> None:
    rules = CallRules(SETTINGS, 0.0)
    assert rules.after_turn(None, False, ASKED) == (KeypadOpened(ASKED),)
    # The first key stops a question still being said; then each key waits for the next.
    assert rules.key("4", 1.0, agent_talking=True) == [Interrupt("keypad"), WaitForDigits(SETTINGS.digit_timeout_s)]
    assert rules.key("0", 1.2, agent_talking=True) == [WaitForDigits(SETTINGS.digit_timeout_s)]  # a digit here
    assert rules.key("*", 1.4, agent_talking=False) == [WaitForDigits(SETTINGS.digit_timeout_s)]  # starts again
    assert rules.key("2", 1.6, agent_talking=False) == [WaitForDigits(SETTINGS.digit_timeout_s)]
    assert rules.key("#", 1.8, agent_talking=False) == [
        KeypadClosed("typed", 1),
        StartTurn((RunDigits(ASKED, "2"),)),
    ]
    assert rules.keypad is None
    assert rules.digits_answered(None) == (Say(SETTINGS.digits_not_taken),)
    assert rules.digits_answered("Your order is on its way.") == (Say("Your order is on its way."),)


def test_the_digits_end_at_the_tools_maximum_or_the_pause() -> None:
    rules = CallRules(SETTINGS, 0.0)
    rules.after_turn(None, False, ASKED)
    for key in "123":
        rules.key(key, 1.0, agent_talking=False)
    assert rules.key("4", 1.0, agent_talking=False)[-1] == StartTurn((RunDigits(ASKED, "1234"),))
    rules.after_turn(None, False, ASKED)
    rules.key("9", 2.0, agent_talking=False)
    assert rules.digits_due() == [KeypadClosed("typed", 1), StartTurn((RunDigits(ASKED, "9"),))]
    rules.after_turn(None, False, ASKED)
    rules.key("*", 3.0, agent_talking=False)
    assert rules.digits_due() == [KeypadClosed("typed", 0)]  # nothing typed: nothing runs


def test_speaking_closes_the_keypad() -> None:
    rules = CallRules(SETTINGS, 0.0)
    rules.after_turn(None, False, ASKED)
    rules.key("4", 1.0, agent_talking=False)
    assert rules.spoke() == [KeypadClosed("spoken", 1)]
    assert rules.keypad is None and rules.digits_due() == []


def test_after_a_turn_the_agents_transfer_or_goodbye_ends_the_call() -> None:
    rules = CallRules(SETTINGS, 0.0)
    assert rules.after_turn(None, False, None) == ()
    assert rules.after_turn("caller_asked", False, None) == (LetHear(), Transfer("7000"))  # the agent said why
    assert rules.closing
    rules = CallRules(SETTINGS, 0.0)
    assert rules.after_turn(None, True, None) == (LetHear(), HangUp("completed"))
    assert rules.closing
    assert rules.key("0", 1.0, agent_talking=False) == []


def test_a_draining_node_lets_the_caller_finish_then_says_goodbye() -> None:
    rules = CallRules(SETTINGS, 0.0)
    [turn] = rules.drain("We're closing, goodbye.")
    assert turn == StartTurn((WaitForCaller(DRAIN_GRACE_S), *goodbye("We're closing, goodbye.", "drained").steps))
    assert rules.drained and rules.closing
    assert rules.drain("again") == []


def test_the_text_calls_clock_is_the_callers_silence() -> None:
    rules = CallRules(SETTINGS, 0.0)
    rules.start(0.0)
    rules.activity(5.0)
    assert rules.due() == 13.0
