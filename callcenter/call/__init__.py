"""One call: the hearing and the call rules every channel drives (the phone, the WebSocket, the testbed's text calls).

`CallRules` (rules.py) says what a call does around the caller's turns: greeting, re-prompts, time limit, keypad
and "0 for a person", hand-over, goodbye, drain. `Hearing` (hearing.py) turns the caller's audio into what they said:
endpointer events, transcripts begun at a pause (and the model's early start), held half-sentences, second hearings,
the language check; it tells the call what it heard (`Heard`, `CallerSaid`) through the `Listener` seam (seams.py,
with the speech parts a call needs). callcenter.conversation drives both for the phone; `CallInText` (text.py)
drives the rules where there is no audio (the WebSocket, `chat`), as callcenter.testbed.textcall does for the eval.
Of the hearing, what needs no audio: heard.py holds the caller's words as kept between breaths, barge_in.py decides
whether words over the agent stop it, answer it or finish the caller's sentence, language.py checks the call's
first words for a language the agents do not serve. `Speaking` (speaking.py) is the agent's voice: its replies and prepared lines
played, and what the caller heard of them. `Dtmf` (dtmf.py) takes the phone caller's keys to the rules and times the
wait for more digits. record.py is what a call leaves for its record (the lines of both
sides, each turn's timings). settings.py holds what a call says and how long it waits. `LiveConversations` (live.py)
holds the calls live on a node, for whatever acts on all of them (a drain, the supervisor's feed).
"""

from callcenter.call.heard import CallerSaid, Heard
from callcenter.call.hearing import Hearing
from callcenter.call.live import LiveConversations
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
from callcenter.call.seams import Endpointing, Listener, Synthesizing, Transcribing
from callcenter.call.settings import VoiceSettings
from callcenter.call.speaking import Speaking
from callcenter.call.text import CallInText

__all__ = [
    "DRAIN_GRACE_S",
    "Action",
    "CallInText",
    "CallRules",
    "CallerSaid",
    "Disposition",
    "EndCall",
    "Endpointing",
    "Escalate",
    "HangUp",
    "Heard",
    "Hearing",
    "Interrupt",
    "KeypadClosed",
    "KeypadOpened",
    "LetHear",
    "Listener",
    "LiveConversations",
    "RunDigits",
    "Say",
    "Speaking",
    "StartTurn",
    "Step",
    "Synthesizing",
    "Transcribing",
    "Transfer",
    "VoiceSettings",
    "WaitForCaller",
    "WaitForDigits",
]
