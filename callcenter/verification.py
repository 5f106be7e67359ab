"""Identification and verification (ID&V) of a caller before an order is read or changed (issue 29).

The caller is *identified* by their number, matched whole (E.164, callcenter.store.phones), and only where the
trunk vouches for it (`caller_id = "trusted"`). An order of anyone else is *verified* by a factor that is on the
order (its postcode, e-mail, the last digits of the phone on file), said by the caller and compared here, by
the tools, whatever brain asks: a prompt can be talked out of a rule, a tool cannot.

The state of a call's verification is read from its session events (the tools' own results), never kept
beside them: a replayed session is verified exactly as the original was, and nothing the model writes can
make a caller verified.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from callcenter.errors import CallCenterError
from callcenter.store.domain import Order
from callcenter.store.phones import last_digits
from callcenter.store.spoken import number_tokens, spoken_digits, words
from swarm import AssistantText, Event, ToolCalled, UserText
from swarm.sentences import split_sentences

# "trusted": the trunk vouches for the caller's number (a carrier's network asserted identity, a PBX that
# checks its extensions), so a caller is the customer whose number they call from. "claimed": the number is
# only the caller's word (an open SIP door, a text channel), so every order needs a factor.
CALLER_ID_MODES = ("trusted", "claimed")
# What on an order a caller may prove it is theirs with, and how the agent asks for each.
FACTORS = {
    "postcode": "the postcode the order was delivered to",
    "email": "the e-mail address on the order",
    "phone_digits": "the last four digits of the phone number on the order",
}
# The tools whose results carry a verification outcome; no other tool's result is believed.
VERIFYING_TOOLS = frozenset({"find_order", "create_return"})
# Words around a factor that are not part of it: "my postcode is 1 0 1 1 5", "it's jane at example dot com".
_FILLER = frozenset(
    "my the is it its it's that this was our and uh um er erm okay ok yes yeah yep yup aye right sure well so please "
    "postcode post postal code zip zipcode email mail address at dot phone number last four digits of "
    "on order delivered to let me see hmm think sorry actually now".split()  # "The postcode? Let me see, ..."
)
_REPEATS = {"double": 2, "triple": 3}
# "Oh," before the answer is a sound more often than a zero.
_INTERJECTION = re.compile(r"^\s*oh\s*[,.!]", re.IGNORECASE)
# "the postcode's M one, one A E": an "'s" is "is", a filler word, not an s of the postcode ("postcodes m11ae").
_IS = re.compile(r"['’]s\b")
_E_MAIL = re.compile(r"\be-mail\b", re.IGNORECASE)  # one filler word, not the letter e (postcode E1 6AN) and "mail"
# A longer answer is not a postcode said once but a list of guesses.
MAX_ANSWER_WORDS = 16
# The longest postcode or digits answer, filler words dropped ("SW1A1AA", "owne83rl" for "my own postcode is
# E8 3RL"), with room: longer words with a digit in them are something else ("just the cable then, one of them").
_ATTEMPT_CHARS = 12
_PIECE_END = re.compile(r"(?<=[.?!])\s+|,\s+")
_NAMED = re.compile(r"(?i)\b(?:is|it's|was)\b|:")
# An e-mail address as written or as said, alone of the words around it: "But the e-mail I know: ioana dot marin at
# example dot com." (blind10: the words before it made the whole answer no e-mail).
_JOIN = r"\s*(?:\.|\s(?:dot|underscore|dash|hyphen)\s)\s*"
_SAID_EMAIL = re.compile(rf"(?i)\b[\w+-]+(?:{_JOIN}[\w+-]+)*(?:\s*@\s*|\s+at\s+)[\w-]+(?:{_JOIN}[\w-]+)+")
# What a call record and the supervisor see of an answer to the security question, right or wrong: that one was
# given, not its length (a postcode's length says which country), nor anything of it.
MASKED_ANSWER = "•••"
# The outcomes of a call's verifications: an answer that matched, one that did not, and a question the caller
# left open (hung up or moved on after being asked, or after a wrong answer with tries left).
OUTCOMES = ("passed", "failed", "gave_up")


class VerificationError(CallCenterError, ValueError):
    """The verification settings cannot be used; the message names the key."""


@dataclass(frozen=True)
class Verification:
    """The `[callers]` settings: how far the caller ID counts and what else proves an order."""

    caller_id: str = "trusted"
    verify_with: tuple[str, ...] = ("postcode", "email")
    max_attempts: int = 3
    # The country whose national numbers ("030 555555") callers' numbers are read in.
    phone_region: str = "DE"

    def check(self) -> None:
        if self.caller_id not in CALLER_ID_MODES:
            raise VerificationError(f"callers.caller_id is {self.caller_id!r}; use one of {', '.join(CALLER_ID_MODES)}")
        unknown = [f for f in self.verify_with if f not in FACTORS]
        if unknown or not self.verify_with:
            raise VerificationError(
                f"callers.verify_with is {list(self.verify_with)!r}; name one or more of {', '.join(FACTORS)}"
            )
        if not 1 <= self.max_attempts <= 10:
            raise VerificationError(f"callers.max_attempts is {self.max_attempts}; use 1 to 10")

    @property
    def question(self) -> str:
        """What the agent asks for, the same whether or not the order exists: no oracle for guessing."""
        said = [FACTORS[f] for f in self.verify_with]
        either = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]
        return f"For your security, could you tell me {either}?"


def proves(answer: str, order: Order | None, factors: Iterable[str]) -> bool:
    """Whether the caller's `answer` is one of the order's `factors`; an order that does not exist is never
    proved, and a factor missing on the order proves nothing."""
    if order is None:
        return False
    values = {"postcode": order.postcode, "email": order.email, "phone_digits": last_digits(order.customer_key)}
    return any(_matches(said, values.get(factor, ""), factor) for said in _forms(answer) for factor in factors)


def _forms(answer: str) -> tuple[str, ...]:
    """The answer whole, without an "Oh," before it, and its last sentence: "Oh, erm, the postcode? It's LS6 3BN,
    yeah." (the "Oh" of the whole is a zero). What comes before the last sentence explains; it is no second guess.
    The whole stays too: "Oh, one, oh, six, seven." is a postcode of five digits."""
    bare = _INTERJECTION.sub(" ", answer).strip()
    sentences = split_sentences(bare)
    # Each form on its own is short, or it is no answer: a long last sentence is a story, and a story before a short
    # one explains ("It was delivered to my sister's ... Can I give you the e-mail instead? It's tunde dot ...").
    # And the one piece (sentence or clause) with a digit in it, when only one has: "It was delivered here, to my
    # house, so the postcode is GU2 7XH.", "GU2 7XH. It came to my house." (blind9). Two such pieces are two guesses.
    coded = [piece for piece in _PIECE_END.split(bare) if any(c.isdigit() for c in piece)]
    emails = [found.group() for found in _SAID_EMAIL.finditer(bare)]
    # What follows the last "is" of the one coded piece: "The postcode where they were delivered is LS8 2PU." (blind11)
    named = [_NAMED.split(coded[0])[-1]] if len(coded) == 1 else []
    forms = (answer, bare, sentences[-1], *coded[:1] * (len(coded) == 1), *named, *emails[:1] * (len(emails) == 1))
    return tuple(form for form in dict.fromkeys(forms) if len(words(form)) <= MAX_ANSWER_WORDS)


def _matches(answer: str, value: str, factor: str) -> bool:
    if factor == "phone_digits":
        # Exactly the digits said: "1 2 3 4 5 6 7 8" holds every four-digit guess inside it.
        return bool(value) and spoken_digits(answer) == value
    said = _compact(answer)
    return bool(value) and bool(said) and said == _compact(value)


def an_attempt(answer: str) -> bool:
    """Whether the words may answer the security question at all: what it asks for (a postcode, digits) has a
    digit and is short once the filler words are gone, or has an e-mail address's shape. "Fine, forget it. Just
    the cable then, one of them." is no wrong answer but another request (blind4): it costs the caller no attempt."""
    return any(_attempt(said) for said in _forms(answer))


def _attempt(answer: str) -> bool:
    said, spoken = _compact(answer), words(answer)
    e_mail = "@" in answer or ("at" in spoken and "dot" in spoken)
    return e_mail or (any(c.isdigit() for c in said) and len(said) <= _ATTEMPT_CHARS)


def _compact(text: str) -> str:
    """A factor as said or as stored, without spaces, punctuation and filler words: "SW1A 1AA" and "s w one a
    one a a", "jane.doe@example.com" and "jane dot doe at example dot com" compare equal."""
    kept: list[str] = []
    repeat = 1
    for word in words(_IS.sub(" is", _E_MAIL.sub("email", text))):
        if word in _REPEATS:
            repeat = _REPEATS[word]
            continue
        if word not in _FILLER:
            kept.extend(["0" if word == "oh" else word] * repeat)
        repeat = 1
    return "".join(token for token, _ in number_tokens(kept))


@dataclass(frozen=True)
class CallState:
    """What this call proved so far, read from the session's events."""

    verified: frozenset[str]  # order numbers the caller gave a factor for
    failures: int  # wrong factors, over all orders: guessing in a loop ends in the same place

    def exhausted(self, policy: Verification) -> bool:
        return self.failures >= policy.max_attempts


def call_state(events: Sequence[Event]) -> CallState:
    verified: set[str] = set()
    failures = 0
    for event in events:
        if not isinstance(event, ToolCalled) or event.name not in VERIFYING_TOOLS:
            continue
        outcome = _outcome(event.result)
        if outcome is None:
            continue
        if outcome.get("verification") == "passed" and isinstance(number := outcome.get("order_number"), str):
            verified.add(number)
        elif outcome.get("verification") == "failed":
            failures += 1
    return CallState(frozenset(verified), failures)


def _outcome(result: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(result)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) and "verification" in parsed else None


def question_open(events: Sequence[Event]) -> bool:
    """Whether the tools' last word on verification in `events` was a question the caller has yet to answer."""
    asked = False
    for event in events:
        if isinstance(event, ToolCalled) and event.name in VERIFYING_TOOLS:
            outcome = _outcome(event.result)
            if outcome is not None:
                asked = "question" in outcome
    return asked


def unanswered(events: Sequence[Event]) -> bool:
    """Whether the tools' last word on verification was the question asked again, or refused, for words that did not
    answer it: a caller who insists a second time hears it refused."""
    last: dict[str, Any] | None = None
    for event in events:
        if isinstance(event, ToolCalled) and event.name in VERIFYING_TOOLS:
            last = _outcome(event.result) or last
    return last is not None and (last.get("unanswered") is True or last.get("verification") == "not given")


def answer_said(events: Sequence[Event]) -> str | None:
    """The caller's last words when they were said to an open security question, else None: what the caller
    answered, whatever a model writes into the tool's argument (the 1.5B wrote one before any question)."""
    last = max((i for i, event in enumerate(events) if isinstance(event, UserText)), default=None)
    if last is None or not question_open(events[:last]):
        return None
    said = events[last]
    return said.text if isinstance(said, UserText) else None


def named_in_call(events: Sequence[Event], number: str) -> bool:
    """Whether `number` came up in this call: the caller said or typed it, or a tool or the agent read it out.
    A number that did not is the model's invention (the 1.5B wrote "12345" before anyone named an order)."""
    for event in events:
        match event:
            case UserText(text=text) | AssistantText(text=text) | ToolCalled(result=text):
                if number in spoken_digits(text):
                    return True
    return False


def answering(events: Sequence[Event], turn: int) -> bool:
    """Whether the caller's `turn`-th line (from 1) answers a security question: one was open before it."""
    seen = 0
    for index, event in enumerate(events):
        if isinstance(event, UserText):
            seen += 1
            if seen == turn:
                return question_open(events[:index])
    return question_open(events)  # the line is not in the session yet: the question open now is the one it answers


def attempts(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The call's answers to the security question and their outcomes, in order, read from the tools' results as
    `call_state` reads them; a question still open at the end of the call is one "gave_up". Each is
    {turn, tool, order_number, outcome, answer}: `turn` counts the caller's turns before it, and the answer is
    MASKED_ANSWER, never what the caller said."""
    found: list[dict[str, Any]] = []
    turn = 0
    open_question: tuple[int, str, str] | None = None  # (turn, tool, order number) of the question last asked
    for event in events:
        if isinstance(event, UserText):
            turn += 1
        if not isinstance(event, ToolCalled) or event.name not in VERIFYING_TOOLS:
            continue
        outcome = _outcome(event.result)
        if outcome is None:
            continue
        number = _order_number(outcome, event.arguments)
        said = outcome.get("verification")
        if said in ("passed", "failed"):
            answered = bool(event.arguments.get("verification"))
            found.append(
                {
                    "turn": turn,
                    "tool": event.name,
                    "order_number": number,
                    "outcome": said,
                    "answer": MASKED_ANSWER if answered else "",
                }
            )
        # A question asked (again), or none: the last wrong answer hands the caller to a person, asking nothing.
        open_question = (turn, event.name, number) if "question" in outcome else None
    if open_question is not None:
        turn, tool, number = open_question
        found.append({"turn": turn, "tool": tool, "order_number": number, "outcome": "gave_up", "answer": ""})
    return found


def _order_number(outcome: dict[str, Any], arguments: dict[str, Any]) -> str:
    # The tool's own spelling where it gave one (a passed result, a question's arguments), else the model's.
    question = outcome.get("question")
    asked = question.get("arguments") if isinstance(question, dict) else None
    for value in (outcome.get("order_number"), asked.get("order_number") if isinstance(asked, dict) else None):
        if isinstance(value, str) and value:
            return value
    given = arguments.get("order_number")
    return spoken_digits(given) if isinstance(given, str) else ""
