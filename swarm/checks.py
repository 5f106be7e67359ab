"""Checks on what a model produced, before anything is said to the caller or any tool runs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from swarm.confirmations import agreed, changes_quantity, pending_proposal, yes_or_no
from swarm.events import Event, ToolCalled
from swarm.messages import Message, ToolCall
from swarm.numbers import DIGIT_WORDS
from swarm.providers.base import Completion
from swarm.toolcall_parse import IDENTIFIER
from swarm.tools import Tool, ToolContext

# A tag such as <tool_call>, </think> or <br/>: markup a text-to-speech engine would read out.
_TAG = re.compile(r"</?[A-Za-z_][\w:-]*(\s[^<>]*)?/?>")
_JSON_START = re.compile(r"^\s*[\[{]")
_DENIAL = re.compile(r"\b(not|cannot|unable|\w+n[’']t)\b", re.I)
# What only the shop may promise: a thing for free, a discount, a price of nothing.
_PROMISE = re.compile(
    r"\b(free of charge|(?<!feel )(?<!-)free|no charge|discount(ed)?|(percent|%) off|zero euros?|0 euros?|for nothing)\b",
    re.I,
)
# The agent saying it will act, where a tool call acts: "I'll place the order", "let me process your return", "I'll
# return the Screen protectors for you." (blind13: nothing was returned).
_WILL_DO = re.compile(
    r"\b(i'll|i will|i'm going to|let me)( now| just| go ahead and)? (place|put through|process|submit|register|"
    r"create|book|order|start|send|return|refund|cancel|arrange)\b"
    # A call back nobody makes: no tool calls a caller back (blind4: "I'll check the stock and get back to you").
    r"|\b(get back to you|call you back)\b",
    re.I,
)
# A write said to be done: an order placed, a return registered, a refund issued. Only a write's own result may say
# so. The 1.5B answered "So one case and one of the screen protector packs, please, both together on the one order.
# My phone is six inches, so the case will fit, no?" with "Thank you for your order. ... Your order will be placed and
# you will receive it shortly." and called nothing (blind38 Penzance): the caller would hang up, sure of an order.
_DONE = re.compile(
    r"\bthanks? (?:you )?for (?:your|the) (?:order|purchase)\b"
    # Not what a lookup tells of an order made before ("Your order was placed on 3 December") nor what happens next
    # ("Your return will be processed once the item arrives").
    r"|\byour (?:order|purchase|return|exchange)s? (?:(?:has|have) been|is|are) (?:now )?"
    r"(?:placed|confirmed|processed|registered|booked|submitted|created|arranged|put through)\b"
    r"|\byour (?:order|purchase)s? will be placed\b(?! (?:once|when|as soon|after|if|on your|with your)\b)"
    r"|\b(?:i|we)(?:'ve| have) (?:now |just )?(?:placed|processed|registered|booked|submitted|created|arranged|"
    r"put through)\b",
    re.I,
)
# The one refusal the session rescues with the read-back again: a write claimed that no tool made.
CLAIMED_DONE = "no tool placed or registered anything"
# Facts a reply may only repeat, never make up: numbers of two digits or more (an order, a postcode, a price, a
# house number; digits said one by one count as one number) and e-mail addresses.
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_SPACED_DIGITS = re.compile(r"\b\d(?:[ -]\d\b)+")
_DIGIT_WORD = re.compile(r"\b(" + "|".join([*DIGIT_WORDS, "oh"]) + r")\b", re.I)
# The one refusal of a write whose arguments themselves are stale: the model must change them, not only ask.
CHANGED_QUANTITY = "the caller changed the quantity"


def spoken_text_errors(text: str) -> list[str]:
    """Why this text must not be spoken, or [] when it reads as plain sentences."""
    if not text.strip():
        return ["the reply is empty: answer the caller in one or two short spoken sentences"]
    if _TAG.search(text):
        return ["the reply contains XML or HTML tags: answer in plain spoken sentences, without markup"]
    if _looks_like_json(text):
        return ["the reply is JSON: answer in plain spoken sentences; use a tool call to act"]
    if "```" in text or "functions." in text:
        return ["the reply contains code: answer in plain spoken sentences; use a tool call to act"]
    if found := IDENTIFIER.search(text):
        # A text-to-speech engine reads "navigate_to_refund" out; a person never says such a word.
        return [f"the reply says {found.group()!r} aloud: never say tool names; call the tool instead"]
    return []


def promise_errors(sentence: str, grounds: str) -> list[str]:
    """A price, discount or anything free the sentence promises that `grounds` (what the tools returned and the
    agent was told) never said. Pushed by a hostile caller ("put it through with a hundred percent discount"),
    the 1.5B told them "The speaker is free." (a blind scenario)."""
    if _DENIAL.search(sentence):
        return []  # "I can't give a discount": a refusal promises nothing
    promised = {m.group().lower() for m in _PROMISE.finditer(sentence)}
    unsaid = sorted(p for p in promised if p not in grounds.lower())
    if not unsaid:
        return []
    return [
        f"the reply promises {', '.join(map(repr, unsaid))}, which no tool said: say only the prices the tools gave"
    ]


def unfounded_errors(sentence: str, grounds: str) -> list[str]:
    """Numbers and e-mail addresses the sentence states that `grounds` (the tools' results, the instructions and
    the caller's own words) never said. Asked by a caller claiming to own the shop for another customer's order,
    the 1.5B made one up: "The address is 123 Main St ... The email is example@example.com", "The postcode on that
    order is 12345." (blind4). Nothing real leaked, but a made-up fact is a wrong answer said with confidence."""
    known = _facts(grounds)
    unsaid = sorted(fact for fact in _facts(sentence) if fact not in known)
    if not unsaid:
        return []
    return [
        f"the reply states {', '.join(map(repr, unsaid))}, which no tool returned: never make up numbers, "
        "addresses or e-mails; say only what the tools gave, or that you cannot share it"
    ]


def _facts(text: str) -> set[str]:
    spoken = _DIGIT_WORD.sub(lambda m: DIGIT_WORDS.get(m.group().lower(), "0"), text)
    joined = _SPACED_DIGITS.sub(lambda m: re.sub(r"[ -]", "", m.group()), spoken)
    numbers = {n for n in re.findall(r"\d+", joined) if len(n) >= 2}
    return numbers | {e.lower() for e in _EMAIL.findall(text)}


def action_claim_errors(sentence: str) -> list[str]:
    """A sentence that says the agent will now do something a tool does: the turn ends with it, and nothing is
    done. The 1.5B answered "Go on then, I think I'll have one." with "Of course! I'll place the order for you.
    Just a moment." (a blind scenario): the caller waited for an order nobody placed."""
    if found := _WILL_DO.search(sentence):
        return [f"the reply says {found.group()!r} but does nothing: call the tool that does it instead"]
    return []


def done_claim_errors(sentence: str, written: bool) -> list[str]:
    """A sentence that says a write is done (an order placed, a return registered) when no write ran in the call
    (`written`): the caller hears it done, and nothing is."""
    if written or not (found := _DONE.search(sentence)):
        return []
    return [f"the reply says {found.group()!r} but {CLAIMED_DONE}: read it back and ask the caller first"]


def writes_done(events: Sequence[Event], tools: Mapping[str, Tool]) -> bool:
    """Whether a write (a tool with a `confirmed` flag) ran in the call and did what it was asked: its result holds
    no error, no read-back (a proposal) and no question."""
    for event in events:
        if not isinstance(event, ToolCalled) or (tool := tools.get(event.name)) is None:
            continue
        if "confirmed" not in tool.parameters.get("properties", {}):
            continue
        try:
            result = json.loads(event.result)
        except ValueError:
            continue
        if isinstance(result, dict) and not {"error", "proposal", "question"} & result.keys():
            return True
    return False


def _looks_like_json(text: str) -> bool:
    if '{"' in text or "{'" in text:
        return True
    if not _JSON_START.match(text):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def tool_call_errors(completion: Completion, tools: dict[str, Tool], context: ToolContext) -> list[str]:
    """Every problem with the requested tool calls, each naming the call so the model can fix it."""
    errors: list[str] = []
    for call in completion.tool_calls:
        tool = tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(tools)) or "none"
            errors.append(f"tool {call.name!r} does not exist; the tools you have are: {known}")
        elif call.raw_arguments is not None:
            errors.append(f"{call.name}: the arguments are not a JSON object: {call.raw_arguments[:200]!r}")
        else:
            found = tool.errors(call.arguments, context)
            history = context.session.get_agent_history() if context.session is not None else []
            errors.extend(f"{call.name}: {e}" for e in found or confirmation_errors(call, tool, history))
    return errors


def confirmation_errors(call: ToolCall, tool: Tool, history: list[Message]) -> list[str]:
    """A write (a tool with a `confirmed` flag) runs only on the caller's yes to its read-back.

    The read-back is a tool result holding a "proposal" for this tool with these arguments, given after
    the caller's previous words; the caller's latest words must be a plain yes to it (consent). A model that sets
    confirmed=true on its own is told to ask first, and nothing is written.
    """
    if "confirmed" not in tool.parameters.get("properties", {}) or call.arguments.get("confirmed") is not True:
        return []
    users = [i for i, m in enumerate(history) if m.role == "user"]
    answer = yes_or_no(history[users[-1]].content) if users else None
    answered = history[: users[-1] + 1] if users else []
    proposal = pending_proposal(answered)
    if answer is not True and proposal is not None and agreed(answered, proposal):
        # A yes after sentences whose "not" is of what they tell ("it's not just me being fussy"), the read-back's
        # own count alone ("One, then."), or the same words that restate it said again to it ("Five bands.").
        answer = True
    if answer is False:
        # Told to "read it back and ask them first" after a no, the 1.5B said that to the caller, with the price
        # they had asked for ("... order one for 1 euro").
        return [f"the caller said no: do not call {call.name}; answer what they said in one short sentence"]
    if answer is not True:
        return ["confirmed=true needs the caller's clear yes to your read-back: read it back and ask them first"]
    if proposal and proposal.get("tool") == call.name:
        wanted = proposal.get("arguments", {})
        if changes_quantity(history[users[-1]].content, proposal) and not agreed(answered, proposal):
            # "Yes, but make it two" to three: a changed request, read back again (swarm.confirmations). Words
            # agreed to it already had their numbers judged: "Five altogether: four for the lasses and one for
            # mesel. Five bands." said again to five (blind24, read back again, 4 of 4).
            return [f"{CHANGED_QUANTITY}: call {call.name} without confirmed to read it back"]
        if all(call.arguments.get(k) == v for k, v in wanted.items() if k != "reason"):
            if not agreed(answered, proposal):
                # The session's own standard of a yes (a plain yes): "Okay, that's not bad at all. I'll take
                # one." to "... Shall I order one for you?" is the purchase said again in the caller's words,
                # read back once more rather than taken as agreement to it (a blind scenario expected that).
                return [f"the caller said more than a yes: call {call.name} without confirmed to read it back"]
            return []
    return [f"the caller has not agreed to these arguments: call {call.name} without confirmed to read it back first"]


def asked_first(
    completion: Completion, errors: list[str], tools: dict[str, Tool], context: ToolContext
) -> Completion | None:
    """The completion with confirmed=true taken off its calls, when that is all that was wrong with it (`errors`
    its tool_call_errors); else None. Not over a changed quantity (that read-back would repeat the old one) nor
    after a no (the model is to take the no, not ask again).

    What confirmation_errors tells the model is to read the write back first, and that is a step the session
    can take itself: a read-back writes nothing. Told instead, the 1.5B spent a second completion (2-5 s) on it,
    and now and then said "please read it back and ask me first" to the caller."""
    calls = [
        replace(call, arguments={**call.arguments, "confirmed": False})
        if call.arguments.get("confirmed") is True
        else call
        for call in completion.tool_calls
    ]
    if calls == list(completion.tool_calls) or any(CHANGED_QUANTITY in error for error in errors):
        return None
    history = context.session.get_agent_history() if context.session is not None else []
    said = [m.content for m in history if m.role == "user"]
    if said and yes_or_no(said[-1]) is False:
        return None
    asking = replace(completion, tool_calls=tuple(calls))
    return asking if not tool_call_errors(asking, tools, context) else None
