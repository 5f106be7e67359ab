"""The call rules: what a call says and does around the caller's turns, the same for every channel.

The greeting (or the overload notice and a hand-over), re-prompts of a silent caller and the hang-up after them,
the call's time limit, "0 for a person", the keypad a tool asked for, the hand-over or the goodbye after a turn,
and the goodbye of a node that drains. `CallRules` is a state machine: each method takes one event (and the time,
for its clock) and returns what to do; it does no I/O of its own. The phone (callcenter.conversation) and the
testbed's text calls (callcenter.testbed.textcall) drive it, so both obey one set of rules.

What it returns is of two kinds. *Actions* are done at once: start a turn (which replaces the running one), stop
the agent, wait for more keys, record an escalation, or note that the keypad opened or closed. A turn's *steps* are
done one after the other by the turn: say a prepared line, let what was said be heard, record the call's end, run a
tool with typed digits, transfer, hang up. A driver that has no audio (text) does the waiting steps at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from callcenter.call.settings import VoiceSettings
from callcenter.keypad import Keypad
from swarm import DigitsRequested, EndReason, EscalationReason

# At a drain's deadline, a caller who is talking gets this long to finish before the goodbye.
DRAIN_GRACE_S = 5.0
# Escalations nobody in the conversation announced yet: the caller hears the hand-over line first (an agent's
# transfer tool comes with its own words, and an overloaded node's notice says it).
ANNOUNCED_BY_US: frozenset[EscalationReason] = frozenset(
    {"caller_pressed_0", "supervisor", "caller_language", "caller_unclear"}
)
# Unclear words in a row before the caller goes to a person: a French caller the language check scored just under its
# bar heard "Sorry, I didn't catch that." to each sentence and hung up unserved (the espeak-ng suite, french_buy).
UNCLEAR_BEFORE_PERSON = 2

Disposition = Literal["completed", "transferred", "abandoned", "failed"]


# --- a turn's steps -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Say:
    """Say this prepared line (recorded in the session as the agent's)."""

    text: str


@dataclass(frozen=True)
class LetHear:
    """Let everything said so far be heard to its end (resumed, if the caller had paused it)."""


@dataclass(frozen=True)
class EndCall:
    """Record in the session that the call ends, and why."""

    reason: EndReason


@dataclass(frozen=True)
class WaitForCaller:
    """Let a caller who is talking finish their sentence, up to `timeout_s` (what they say is not answered)."""

    timeout_s: float


@dataclass(frozen=True)
class RunDigits:
    """Run the tool that asked for digits with these, say its answer (digits_answered), then end the turn
    (after_turn)."""

    request: DigitsRequested
    digits: str


@dataclass(frozen=True)
class Transfer:
    """Transfer the caller to `target`; when that fails, do what transfer_failed() says."""

    target: str


@dataclass(frozen=True)
class HangUp:
    """Hang up; the call ends with this disposition."""

    disposition: Disposition


# --- actions done at once, and notes (either) ---------------------------------------------------------------------


@dataclass(frozen=True)
class Escalate:
    """Record in the session that the caller must reach a person."""

    reason: EscalationReason


@dataclass(frozen=True)
class KeypadOpened:
    """A tool asked for digits: the caller's keys are now its input."""

    request: DigitsRequested


@dataclass(frozen=True)
class KeypadClosed:
    """The keypad is closed (typed, spoken, call_ended); a pending digit timeout is dropped."""

    reason: str
    digits: int


Note = KeypadOpened | KeypadClosed
Step = Say | LetHear | EndCall | WaitForCaller | RunDigits | Transfer | HangUp | Escalate | Note


@dataclass(frozen=True)
class StartTurn:
    """Start a turn of these steps; it replaces the running one (what the caller has not heard of it is never said)."""

    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Interrupt:
    """Stop the agent now; the session keeps what the caller heard."""

    reason: str


@dataclass(frozen=True)
class WaitForDigits:
    """More keys may come: call digits_due() after `timeout_s` unless a key or the keypad's closing comes first."""

    timeout_s: float


Action = StartTurn | Interrupt | WaitForDigits | Escalate | Note


class CallRules:
    """One call's rules. `now` is the driver's clock in seconds (time.monotonic() on the phone, the caller's
    silences in text); the rules only compare its readings."""

    def __init__(self, settings: VoiceSettings, now: float) -> None:
        self.settings = settings
        self.started = now
        self.last_activity = now  # the caller's last sound or key, or the agent's last turn
        self.reprompts = 0  # since the caller last said or typed something
        self.unclear = 0  # the caller's unclear utterances since the last clear one
        self.keypad: Keypad | None = None  # a tool asked for digits and the caller may type them
        self.closing = False  # a goodbye or a hand-over is under way: the caller can no longer interrupt it
        self.drained = False  # ended by drain(): the node went away
        self.clock_stopped = False  # the call's time ran out, or its silence: tick() has nothing more to say

    # --- the call's opening and its clock ---------------------------------------------------------------------

    def start(self, now: float, *, overflow: bool = False) -> list[Action]:
        """The call is answered: the greeting, or (`overflow`: the node is over its limits) the overload notice
        and a hand-over."""
        self.started = now
        if not overflow:
            return [StartTurn((Say(self.settings.greeting),))]
        self.closing = True  # the notice is said to its end
        steps = (Escalate("overload"), Say(self.settings.overload_notice), *self._hand_over("overload"))
        return [StartTurn(steps)]

    def activity(self, now: float) -> None:
        """The caller made a sound or pressed a key: the silence starts again from here."""
        self.last_activity = now

    def tick(self, now: float, busy: bool) -> list[Action]:
        """The clock: the call's time limit, a re-prompt after reprompt_after_s of silence, the goodbye after
        reprompts_before_hangup of them. `busy`: the caller is talking, or the agent is hearing, thinking or
        talking (a caller in the middle of a long sentence is not silent: "Are you still there?" came 8 s into
        one)."""
        if self.clock_stopped:
            return []
        if now - self.started >= self.settings.max_call_s:
            self.clock_stopped = True
            return [StartTurn(self._goodbye(self.settings.max_call_goodbye, "max_duration"))]
        if busy or self.closing:
            self.last_activity = now
            return []
        if now - self.last_activity < self.settings.reprompt_after_s:
            return []
        self.reprompts += 1
        self.last_activity = now
        if self.reprompts > self.settings.reprompts_before_hangup:
            self.clock_stopped = True
            return [StartTurn(self._goodbye(self.settings.silence_goodbye, "caller_silent", "abandoned"))]
        return [StartTurn((Say(self.settings.reprompt),))]

    def due(self) -> float | None:
        """When tick() will next have something to say if the call stays silent (None: never)."""
        if self.clock_stopped:
            return None
        return min(self.started + self.settings.max_call_s, self.last_activity + self.settings.reprompt_after_s)

    # --- the caller's turns -----------------------------------------------------------------------------------

    def spoke(self) -> list[Action]:
        """The caller's words are answered (said instead of typed: an open keypad closes)."""
        self.reprompts = 0
        return self._close_keypad("spoken")

    def repeat(self) -> tuple[Step, ...]:
        """The turn failed: the caller is asked to say it again."""
        return (Say(self.settings.repeat),)

    def unclear_words(self) -> list[Action]:
        """The caller's words were unclear: they are asked to say them again; unclear again, they go to a person."""
        self.unclear += 1
        if self.unclear >= UNCLEAR_BEFORE_PERSON and (person := self.person("caller_unclear")):
            return person
        return [StartTurn(self.repeat())]

    def understood(self) -> None:
        """The caller's words were clear: unclear ones before them no longer count."""
        self.unclear = 0

    def after_turn(
        self, escalation: EscalationReason | None, ended: bool, digit_request: DigitsRequested | None
    ) -> tuple[Step, ...]:
        """The agent's turn is said: the rest of it, from the session's state now (an escalation, the agent's
        goodbye, a tool's request for digits)."""
        steps: list[Step] = []
        if digit_request is not None:
            self.keypad = Keypad(digit_request)
            steps.append(KeypadOpened(digit_request))
        if escalation is not None:
            steps += self._hand_over(escalation)
        elif ended:
            self.closing = True  # a goodbye is said to its end
            steps += [LetHear(), HangUp("completed")]
        return tuple(steps)

    # --- the keypad -------------------------------------------------------------------------------------------

    def key(self, key: str, now: float, agent_talking: bool) -> list[Action]:
        """A key the caller pressed: the digits a tool asked for, else 0 for a person (other keys mean nothing)."""
        self.last_activity = now
        if self.closing:
            return []
        keypad = self.keypad
        if keypad is None:
            return self.person("caller_pressed_0") if key == "0" else []
        actions: list[Action] = []
        if not keypad.digits and agent_talking:
            actions.append(Interrupt("keypad"))  # a caller who types has heard enough of the question
        if keypad.press(key):
            return actions + self.digits_due()
        return [*actions, WaitForDigits(self.settings.digit_timeout_s)]

    def digits_due(self) -> list[Action]:
        """The digits are complete (#, the tool's maximum, or the pause after the last key): the tool runs."""
        keypad = self.keypad
        actions = self._close_keypad("typed")
        if keypad is not None and keypad.digits and not self.closing:
            self.reprompts = 0
            actions.append(StartTurn((RunDigits(keypad.request, keypad.digits),)))
        return actions

    def digits_answered(self, say: str | None) -> tuple[Step, ...]:
        """The tool ran with the typed digits: its say line, or (refused, gone, nothing to say) the request to
        say the number instead."""
        return (Say(say or self.settings.digits_not_taken),)

    # --- the call's end ---------------------------------------------------------------------------------------

    def person(self, reason: EscalationReason) -> list[Action]:
        """The caller goes to a person now (keypad 0, the supervisor's button, another language); nothing when
        the call is already ending."""
        if self.closing:
            return []
        steps = self._hand_over(reason)
        return [Escalate(reason), StartTurn(steps)]

    def transfer_failed(self) -> tuple[Step, ...]:
        return self._goodbye(self.settings.no_operator, "no_operator", "failed")

    def drain(self, goodbye: str) -> list[Action]:
        """The node is going away: the agent stops, the caller may finish the sentence they are in (up to
        DRAIN_GRACE_S), hears `goodbye`, and the call ends. Nothing when the call is already ending."""
        if self.closing:
            return []
        self.drained = True
        return [StartTurn((WaitForCaller(DRAIN_GRACE_S), *self._goodbye(goodbye, "drained")))]

    def call_ended(self) -> list[Action]:
        return self._close_keypad("call_ended")

    def _hand_over(self, reason: EscalationReason) -> tuple[Step, ...]:
        self.closing = True
        target = self.settings.operator
        if target is None:
            return (LetHear(), *self._goodbye(self.settings.no_operator, "no_operator", "failed"))
        announce = (Say(self.settings.handover), LetHear()) if reason in ANNOUNCED_BY_US else ()
        return (LetHear(), *announce, Transfer(target))

    def _goodbye(self, text: str, end: EndReason, disposition: Disposition = "completed") -> tuple[Step, ...]:
        self.closing = True
        return (EndCall(end), Say(text), LetHear(), HangUp(disposition))

    def _close_keypad(self, reason: str) -> list[Action]:
        keypad, self.keypad = self.keypad, None
        return [] if keypad is None else [KeypadClosed(reason, len(keypad.digits))]
