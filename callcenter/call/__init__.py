"""One call: the call rules every channel drives (the phone, the testbed's text calls), and their settings.

`CallRules` (rules.py) says what a call does around the caller's turns: greeting, re-prompts, time limit, keypad
and "0 for a person", hand-over, goodbye, drain. callcenter.conversation drives it for the phone, with the
hearing (endpointer events, early transcripts, held words, barge-in); callcenter.testbed.textcall for text.
Of the hearing, what needs no audio: heard.py holds the caller's words as kept between breaths, barge_in.py
decides whether words over the agent stop it, answer it or finish the caller's sentence, language.py checks the
call's first words for a language the agents do not serve. record.py is what a call leaves for its record (the
lines of both sides, each turn's timings).
"""

from callcenter.call.rules import (
    DRAIN_GRACE_S,
    Action,
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
    Step,
    Transfer,
    WaitForCaller,
    WaitForDigits,
)
from callcenter.call.settings import VoiceSettings

__all__ = [
    "DRAIN_GRACE_S",
    "Action",
    "CallRules",
    "Disposition",
    "EndCall",
    "Escalate",
    "HangUp",
    "Interrupt",
    "KeypadClosed",
    "KeypadOpened",
    "LetHear",
    "RunDigits",
    "Say",
    "StartTurn",
    "Step",
    "Transfer",
    "VoiceSettings",
    "WaitForCaller",
    "WaitForDigits",
]
