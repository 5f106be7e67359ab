"""The call rules (callcenter.call.rules) in milliseconds: events and a clock in, what to do out; and one rule
changed once changes the phone's calls and the testbed's text calls alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from callcenter.app import App, open_app
from callcenter.call import rules as rules_module
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
from callcenter.config import Config, LLMConfig
from callcenter.conversation import Conversation
from callcenter.testbed.textcall import TextCall
from swarm.events import DigitsRequested, EndReason
from tests.voice_fakes import FakeCall, FakeEndpointer, FakeSynthesizer, FakeTranscriber, running, until

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


# --- one implementation for both channels -----------------------------------------------------------------------


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    app = await open_app(Config(llm=replace(LLMConfig(), provider="offline"), database=str(tmp_path / "shop.db")))
    yield app
    app.close()


async def press_0_on_the_phone(app: App) -> list[str]:
    call = FakeCall()
    session = app.session(call.call_id, call.caller)
    conversation = Conversation(call, session, FakeEndpointer(), FakeTranscriber(), FakeSynthesizer(), SETTINGS)
    async with running(conversation) as task:
        await until(lambda: not call.playing and conversation.transcript.lines, what="the greeting said")
        call.press("0")
        await until(task.done, what="the call handed over")
    assert call.transfers == ["7000"]
    return [line["text"] for line in conversation.transcript.lines if line["who"] == "agent"]


async def press_0_in_text(app: App) -> list[str]:
    call = TextCall(app.session("text-1", "+442079460321"), SETTINGS)
    await call.dtmf("0")
    assert call.ended_by == "transfer"
    return [text for who, text in call.transcript if who != "caller"]


async def test_a_rule_changed_once_changes_the_phone_and_the_text_call(app, monkeypatch) -> None:
    assert await press_0_on_the_phone(app) == [SETTINGS.greeting, SETTINGS.handover]
    assert await press_0_in_text(app) == [SETTINGS.greeting, SETTINGS.handover]
    # The rule: a caller who pressed 0 hears the hand-over line. Without it, neither channel says it.
    monkeypatch.setattr(rules_module, "ANNOUNCED_BY_US", frozenset())
    assert await press_0_on_the_phone(app) == [SETTINGS.greeting]
    assert await press_0_in_text(app) == [SETTINGS.greeting]


async def test_a_text_call_has_the_phones_clock_and_keys(app) -> None:
    settings = replace(SETTINGS, max_call_s=20.0, reprompts_before_hangup=5)
    call = TextCall(app.session("text-2", "+442079460321"), settings)
    assert call.silence(9).reply == settings.reprompt
    assert call.silence(12).reply == f"{settings.reprompt} {settings.max_call_goodbye}"  # at 16 s, then at 20 s
    assert call.ended_by == "goodbye"
    call = TextCall(app.session("text-3", "+442079460321"), settings)
    result = await call.dtmf("50")  # a key nobody asked for, then 0: a person, as on the phone
    assert result.reply == settings.handover and call.transferred and call.ended_by == "transfer"
    call = TextCall(app.session("text-4", "+442079460321"), replace(settings, operator=None))
    result = await call.dtmf("0")  # nobody to take the call: the caller hears so, and the call ends
    assert result.reply == settings.no_operator and call.ended_by == "transfer"
