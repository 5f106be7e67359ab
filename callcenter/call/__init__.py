"""One call: the call rules every channel drives (the phone, the testbed's text calls), and their settings.

`CallRules` (rules.py) says what a call does around the caller's turns: greeting, re-prompts, time limit, keypad
and "0 for a person", hand-over, goodbye, drain. callcenter.conversation drives it for the phone, with the
hearing (endpointer events, early transcripts, held words, barge-in); callcenter.testbed.textcall for text.
heard.py holds the caller's words as the hearing keeps them between breaths; record.py what a call leaves for
its record (the lines of both sides, each turn's timings).
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
