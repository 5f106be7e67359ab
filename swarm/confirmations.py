"""A read-back the caller plainly agreed to: the tool's own proposal, run without asking the model.

A tool that writes returns, before it writes, a "proposal" ({"tool": ..., "arguments": ...}) beside its
read-back ("That is one yoga mat for 25 euros. Shall I place the order?"). When the caller's whole answer is
a plain yes ("Yes, please.", "Great, go ahead."), nothing is left for a model to decide, and a small one
decided it badly: Qwen2.5-Coder 1.5B answered "Yes, please." with the wrong quantity, with speech, or with
another agent's words. Anything more than a plain yes ("Yes, two of them.") still goes to the model.
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
    "for me one the and buy return start place".split()
)


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


def plain_yes(text: str) -> bool:
    """A yes and nothing else: no number, no other product, no condition."""
    return yes_or_no(text) is True and all(word in _PLAIN for word in normalise(text).split())


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
