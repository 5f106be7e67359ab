"""A read-back the caller plainly agreed to: the tool's own proposal, run without asking the model.

A tool that writes returns, before it writes, a "proposal" ({"tool": ..., "arguments": ...}) beside its
read-back ("That is one yoga mat for 25 euros. Shall I place the order?"). When the caller's whole answer is
a plain yes ("Yes, please.", "Great, go ahead."), nothing is left for a model to decide, and a small one
decided it badly: Qwen2.5-Coder 1.5B answered "Yes, please." with the wrong quantity, with speech, or with
another agent's words. Anything more than a plain yes ("Yes, two of them." to one) still goes to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from swarm.messages import Message

_YES = re.compile(r"\b(yes|yeah|yep|yup|sure|correct|okay|ok|please do|go ahead|absolutely|right|do it|confirm)\b")
_NO = re.compile(r"\b(no|nope|don't|do not|not|cancel|stop|wait)\b")
# The only words a plain yes is made of: agreement, politeness, and "it"/"them" for the thing read back.
_PLAIN = frozenset(
    "yes yeah yep yup sure correct okay ok absolutely right confirm please do it go ahead that's that "
    "great perfect lovely fine good sounds thanks thank you i'll i'd i will i would like take them order is "
    "for me one the and buy return start place of".split()
)
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def normalise(text: str) -> str:
    text = text.lower().replace("’", "'")
    return " " + re.sub(r"[^a-z0-9' ]+", " ", text).strip() + " "


def yes_or_no(text: str) -> bool | None:
    """True for a yes, False for a no (a no anywhere wins), None when neither is said."""
    said = normalise(text)
    if _NO.search(said):
        return False
    if _YES.search(said):
        return True
    return None


def plain_yes(text: str, quantity: int | None = None) -> bool:
    """A yes and nothing else: no other product, no condition, and no number but the read-back's own
    `quantity` ("Yes, three please." to three light bulbs; "Yes, two of them." to one is a change)."""
    return yes_or_no(text) is True and all(
        word in _PLAIN or (quantity is not None and _number(word) == quantity) for word in normalise(text).split()
    )


def _number(word: str) -> int | None:
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word)


def pending_proposal(messages: Sequence[Message]) -> dict[str, Any] | None:
    """The action the last tool result asked the caller to confirm, when the last message answers it."""
    for message in reversed(messages[:-1]):
        if message.role == "user":
            return None
        if message.role == "tool":
            return proposal_in(message)
    return None


def proposal_in(message: Message) -> dict[str, Any] | None:
    """The proposal ({"tool": ..., "arguments": ...}) a tool result carries, if it carries one."""
    try:
        result = json.loads(message.content)
    except ValueError:
        return None
    proposal = result.get("proposal") if isinstance(result, dict) else None
    return proposal if isinstance(proposal, dict) and "tool" in proposal else None


def pending_question(messages: Sequence[Message]) -> dict[str, Any] | None:
    """The question the last tool result asked the caller, when the last message may answer it.

    A tool that needs something only the caller can say (find_order's security question) returns, beside the
    question it says, {"tool": ..., "arguments": ..., "answer": <argument>}: the caller's next words are that
    argument of that call. Any brain can follow it; the offline router does (swarm.providers.offline)."""
    for message in reversed(messages[:-1]):
        if message.role == "user":
            return None
        if message.role == "tool":
            try:
                result = json.loads(message.content)
            except ValueError:
                return None
            question = result.get("question") if isinstance(result, dict) else None
            if isinstance(question, dict) and isinstance(question.get("tool"), str):
                return question if isinstance(question.get("answer"), str) else None
            return None
    return None
