"""The router-first steps of a turn: what a session does without a generation where the agent's router is sure of
it (swarm.providers.base.Router). A plain yes to a read-back is its call, confirmed; a question asked in passing goes
to the agent it is for and comes back to the read-back left; a lookup likely on the caller's words runs before the
model asks; a plain no is answered. Each step returns None when it is unsure, and the model decides."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from swarm.checks import tool_call_errors
from swarm.confirmations import (
    adds_to,
    agreed,
    asks_more,
    changes_quantity,
    consent,
    holds_off,
    names_item,
    narrows,
    pending_proposal,
    plain_no,
    recounts,
    same_action,
    turned_away,
    turns_away,
    yes_or_no,
)
from swarm.events import CallEnded, Escalated
from swarm.messages import CompletionRequest, Message, ToolCall
from swarm.providers.base import Completion, Router
from swarm.sentences import split_sentences
from swarm.specs import NAVIGATE_PREFIX, Agent, Catalog, SessionConfig
from swarm.tools import Tool, ToolContext, result_text

log = logging.getLogger("swarm.session")  # one logger for the turn's events, as before the steps had a module


@dataclass(frozen=True)
class Outcome:
    """How a step of the turn ended: the tool calls to run (none: the turn is over)."""

    tool_calls: tuple[ToolCall, ...] = ()
    ran: Mapping[str, str] | None = None  # results of calls already run and recorded, by call id (a lookup)


class Turns(Protocol):
    """What the steps read of a session (swarm.session.Session), and the one thing they record through it."""

    client_id: str
    registry: Catalog
    config: SessionConfig

    @property
    def came_from(self) -> str | None: ...
    def get_agent_history(self, agent: str | None = None) -> list[Message]: ...
    def get_user_history(self) -> list[Message]: ...
    def completion_request(
        self, agent: Agent, messages: Sequence[Message] | None = None, *, entered: bool = False
    ) -> CompletionRequest: ...
    def tools_of(self, agent: Agent) -> dict[str, Tool]: ...
    def tool_context(self, agent: Agent) -> ToolContext: ...
    def record_tool(self, agent: Agent, call: ToolCall, result: str, context: ToolContext) -> None: ...
    def escalated(self) -> Escalated | None: ...
    def ended(self) -> CallEnded | None: ...


class RouterSteps:
    """A session's router-first steps; it reads the session's history and records through it."""

    def __init__(self, session: Turns) -> None:
        self.session = session

    async def routed(self, agent: Agent, entered: bool) -> Outcome | None:
        """The agent's next step without a generation, where its router is sure of it: a tool-only agent's
        call, or, just handed the caller, its first one. A lookup (Tool.finds) is run here and counts only if
        it found something or asks the caller a question, or ran on the caller's first words; else, finding nothing, it
        is dropped unrecorded, and the model answers."""
        passed = self._passed_offer(agent) if agent.tool_on_entry and not entered else None
        # After "Is there anything else I can help with?" the caller starts afresh, as if just handed over: "Ah no,
        # it'll turn up. The other thing is the wireless charging pad ... I want to send it back. The order number for
        # the pad is ..." after a late cable's status went to the 1.5B (blind35 Bray).
        afresh = agent.tool_on_entry and not entered and passed is None and self._asked_anything_else(agent)
        # After a lookup that found only what cannot be had (sold out), or nothing, the caller's next words are a new
        # wish: "Ache! ... never mind the grinder, then. The kettle ... One of those kettles instead, please." went to
        # the 1.5B, 8-30 s (blind42 Tobermory), and "I just want two air humidifiers and one waterproof speaker" to "I
        # couldn't find that. What else could I look up for you?", 6-20 s (blind43 Ruthin). Kept only if it offers
        # something.
        unoffered = agent.tool_on_entry and not (entered or passed is not None or afresh) and self._offered_none(agent)
        if not (agent.tool_only or (agent.tool_on_entry and (entered or passed is not None or afresh or unoffered))):
            return self._sure_hand_over(agent)
        request = self.session.completion_request(agent, entered=entered)
        call = self.sure_call(agent, request)
        if call is None and agent.tool_on_entry and (entered or passed is not None or afresh or unoffered):
            call = self._likely_lookup(agent, request)
        tool = self.session.registry.tools[call.name] if call is not None else None
        if call is None or tool is None:
            return None
        log.info("event=routed client=%s agent=%s tool=%s", self.session.client_id, agent.name, call.name)
        if tool.finds is None:
            return Outcome((call,))
        context, control = self.session.tool_context(agent), (self.session.escalated(), self.session.ended())
        try:
            result = await asyncio.wait_for(tool.call(call.arguments, context), self.session.config.tool_timeout)
        except Exception as error:  # noqa: BLE001 - the lookup was only a head start: the model decides
            log.warning(
                "event=lookup_failed client=%s tool=%s error=%s",
                self.session.client_id,
                call.name,
                type(error).__name__,
            )
            return None
        # A lookup that asks the caller a question only they can answer (an order's security question) found what
        # the model would have reached a generation later (2-4 s, heard through the phone): its question is said.
        found = isinstance(result, dict) and (result.get(tool.finds) or isinstance(result.get("question"), dict))
        if passed is not None:
            # After a no, only something else than what was turned down: "No, not that one ... the little in-ear ones
            # with the wire?" went to the 1.5B, which asked "What product are you looking for?" (blind7). After words
            # that are neither, only the offer with more in it: "And the wireless mouse too, mind." (blind7).
            offered, (proposal, refused) = result.get("proposal") if isinstance(result, dict) else None, passed
            said = self.session.get_agent_history(agent.name)[-1].content
            # Or the same offer told about ("described"), for a caller who holds off to ask about it: "Not yet,
            # please. Before you order it, um, does it fold flat?" (blind15, blind16: the 1.5B asked "What product are
            # you looking for?"; blind24: "Hang about ... Do thik watch need one of they smartphones to work?").
            # Or, to a question beside words that keep to the offer, the offer told about again: "So one case and one
            # of the screen protector packs ... so the case will fit, no?" (blind38 Penzance: the 1.5B said the order
            # was placed).
            told = bool(result.get("described")) and (holds_off(said) or not refused) and "?" in said
            if not isinstance(offered, dict) or not result.get(tool.finds):
                found = False
            elif offered.get("tool") != proposal.get("tool"):
                # Another act than the one offered: "And the other thing: the electric kettle I bought last week, I want
                # to send it back." to a colleague offered for a late parcel went to the 1.5B (blind34).
                found = True
            elif refused:
                found = told or not same_action(offered, proposal)
            else:
                # The same offer again for words that name it and ask nothing ("Righto, no worries. I'll grab one of
                # the quiet ones for the bedroom then, the ultrasonic humidifier."): the 1.5B wrote a product code
                # of its own and could not find it (blind8, 4 of 4).
                named = names_item(said, offered) and (same_action(offered, proposal) or narrows(offered, proposal))
                recounted = recounts(offered, proposal) and changes_quantity(said, proposal)
                found = told or adds_to(offered, proposal) or named or recounted
        if unoffered and not (isinstance(result, dict) and isinstance(result.get("proposal"), dict)):
            found = False
        if afresh and isinstance(result, dict) and (result.get("guessed") or not self._asked_for(result, tool, call)):
            # "how long does the refund take?" after "anything else?" names no order to offer back, nor does "Great,
            # thanks. When will the label come?" ask for one to be found.
            found = False
        kept = found or (entered and self._first_words())
        if not kept and control == (self.session.escalated(), self.session.ended()):
            return None  # unless the tool escalated or ended the call (a shop that is down): its line is said
        text = result_text(result)
        self.session.record_tool(agent, call, text, context)
        return Outcome((call,), {call.id: text})

    def _sure_hand_over(self, agent: Agent) -> Outcome | None:
        """A hand-over the router is sure of on the agent's other turns, with nothing read back or asked: "Thanks. I'd
        also like to buy a pair of wired earbuds." after a return was written cost the 1.5B its 20 s (the tuned suite,
        two of 40 trials beside other work). Any other step is the model's."""
        call = self.sure_call(agent, self.session.completion_request(agent))
        if call is None or not call.name.startswith(NAVIGATE_PREFIX):
            return None
        log.info("event=routed client=%s agent=%s tool=%s", self.session.client_id, agent.name, call.name)
        return Outcome((call,))

    def _asked_anything_else(self, agent: Agent) -> bool:
        """Whether the agent's last words before the caller's asked if there is anything else."""
        history = self.session.get_agent_history(agent.name)
        said = next((m.content for m in reversed(history[:-1]) if m.role == "assistant" and m.content), "")
        return bool(_ANYTHING_ELSE.search(said))

    def _asked_for(self, result: dict[str, Any], tool: Tool, call: ToolCall) -> bool:
        """Whether a lookup found something, or asks its question about a number the caller said (an order's) or
        about words that ask for something ("can I also return the mouse?")."""
        said = self.session.get_agent_history()[-1].content
        numbered = any(re.search(r"\d", str(value)) for value in call.arguments.values())
        wishes = any(wish.group() != "?" for wish in _WISH.finditer(said))  # a question alone asks for nothing
        return bool(result.get(tool.finds or "")) or numbered or wishes

    def _offered_none(self, agent: Agent) -> bool:
        """Whether the agent's last step before the caller's words was its lookup, which offered nothing (what it found
        cannot be had, or it found nothing) and asked no question of its own."""
        history = self.session.get_agent_history(agent.name)
        if len(history) < 2 or history[-1].role != "user":
            return False
        last = next((m for m in reversed(history[:-1]) if m.role != "assistant" or m.tool_calls), None)
        tool = self.session.tools_of(agent).get(last.tool_name or "") if last is not None else None
        if last is None or last.role != "tool" or tool is None or tool.finds is None:
            return False
        try:
            result = json.loads(last.content)
        except ValueError:
            return False
        return isinstance(result, dict) and "proposal" not in result and "question" not in result

    def _passed_offer(self, agent: Agent) -> tuple[dict[str, Any], bool] | None:
        """The pending read-back the caller's last words do not agree to, and whether they say no to it."""
        history = self.session.get_agent_history(agent.name)
        proposal = pending_proposal(history)
        said = history[-1].content if history and history[-1].role == "user" else ""
        answer = consent(said, proposal) if proposal is not None and said else True
        # Turned away from without a no ("too much ... Leave the screen. Only the camera I will take.") is turned down.
        return (
            None if proposal is None or answer is True else (proposal, answer is False or turned_away(said, proposal))
        )

    def sure_call(self, agent: Agent, request: CompletionRequest) -> ToolCall | None:
        """The agent's router's sure call for this request, if the agent has a router (not its own model) and the
        call passes the tool's checks."""
        router = self.router(agent)
        return self._checked_call(agent, router.sure_call(request) if router is not None else None)

    def _likely_lookup(self, agent: Agent, request: CompletionRequest) -> ToolCall | None:
        """Just handed the caller, the router unsure of the step: the agent's one lookup (Tool.finds) on the
        caller's words, as the model would have called it (a look-first agent's first reply is a tool call) but
        without its 3-8 s generation. _routed keeps it only if it finds something; else the model decides."""
        router = self.router(agent)
        lookups = [name for name, tool in self.session.tools_of(agent).items() if tool.finds is not None]
        if router is None or len(lookups) != 1:
            return None
        return self._checked_call(agent, router.call_of(request, lookups[0]))

    def _first_words(self) -> bool:
        """Whether a lookup run on entry has only the caller's first words to go on. Finding nothing there, it
        is the answer: the model, with nothing earlier to draw on, looked again on the same words and found nothing
        too (in the eval logs, the 1.5B found something after an empty lookup on entry only in words said to another
        agent before), for 4-5 s more beside a second call ("next day delivery on air fryers", heard latency)."""
        return len(self.session.get_user_history()) == 1

    def router(self, agent: Agent) -> Router | None:
        router = (
            self.session.registry.providers.get(agent.router)
            if agent.router and agent.router != agent.provider
            else None
        )
        return router if isinstance(router, Router) else None

    def _checked_call(self, agent: Agent, call: ToolCall | None) -> ToolCall | None:
        if call is None or tool_call_errors(
            Completion("", (call,)), self.session.tools_of(agent), self.session.tool_context(agent)
        ):
            return None
        return call

    def answered_proposal(self, agent: Agent) -> ToolCall | None:
        """The read-back's own call when the caller's words settle it without the model: confirmed on a plain yes
        to it (swarm.confirmations), or unconfirmed with the change they make, read back again, when the agent's
        router is sure of the change ("could you make it three instead?")."""
        history = self.session.get_agent_history(agent.name)
        proposal = pending_proposal(history)
        if proposal is None or not history:
            return None
        if agreed(history, proposal):  # "Yes, three please." to three is consent
            call = ToolCall("agreed_0", str(proposal["tool"]), {**proposal.get("arguments", {}), "confirmed": True})
            event = "plain_yes"
        elif (router := self.router(agent)) is not None:
            changed = router.changed_call(self.session.completion_request(agent))
            if changed is None:
                return None  # a no, or words the router is unsure of: the model decides
            call, event = changed, "changed_read_back"
        else:
            return None
        if tool_call_errors(Completion("", (call,)), self.session.tools_of(agent), self.session.tool_context(agent)):
            return None  # not this agent's tool, or arguments it would refuse: the model decides
        log.info("event=%s client=%s agent=%s tool=%s", event, self.session.client_id, agent.name, call.name)
        return call

    def resumed(self, agent: Agent) -> ToolCall | None:
        """The read-back the caller left to ask something in passing, read back again on a plain no to what they were
        offered there: "How much is the yoga mat?" over a cable's return was handed to sales, and "Not today, thanks."
        to its offer left the return unasked (blind19). None unless the words say no and ask nothing more, and the
        agent the caller came from read back something they neither agreed to nor turned down."""
        history = self.session.get_agent_history(agent.name)
        proposal = pending_proposal(history)
        said = history[-1].content if history and history[-1].role == "user" else ""
        if proposal is None or consent(said, proposal) is not False or asks_more(said):
            return None
        router = self.router(agent)
        if router is not None and router.sure_call(self.session.completion_request(agent)) is not None:
            return None  # a no with another request after it: "No. Actually, can I speak to someone?"
        return self.left_read_back()

    def asked_beside(self, agent: Agent) -> tuple[str, ToolCall] | None:
        """Another agent and its lookup for what the caller asked beside their answers to the read-back just done:
        "Yes, go on, love, send the grinder back for me money. And while I've got you, I'll have a kettle instead, the
        one with the temperature thing. Just the one." had the grinder's return written, and the kettle was never
        offered (blind23, 4 of 4). The sentences from the first the router is sure hands over on its own, in the
        caller's last two turns that say yes, then in the turn that brought the caller to this agent: "I want to send
        them back for a refund. And then, once that's sorted, I want to buy the ... headphones" (blind24, 4 of 4)."""
        router = self.router(agent)
        if router is None:
            return None
        history = self.session.get_agent_history(agent.name)
        users = [m.content for m in history if m.role == "user"]
        said_yes = [said for said in reversed(users[-2:]) if yes_or_no(said) is True]
        # Not beside a yes: "Wait, not yet ... My last one was plastic and all scratched."
        entering = _entering_turn(history, agent.name)
        for said in [*said_yes, *entering]:
            # Each part, with the whole sentence it is part of ("I want to send it back, and then buy ...").
            parts = [(part, whole) for whole in split_sentences(said.strip()) for part in _THEN.split(whole) if part]
            for i, (sentence, whole) in enumerate(parts):
                if _KEPT.search(sentence) or (said in entering and not _WISH.search(whole)):
                    continue
                rest = " ".join(part for part, _ in parts[i:])
                hand_over = router.sure_call(
                    replace(self.session.completion_request(agent), messages=(*history, Message("user", sentence)))
                )
                if hand_over is not None and hand_over.name.startswith(NAVIGATE_PREFIX):
                    return self._lookup_for(hand_over.name.removeprefix(NAVIGATE_PREFIX), rest, router)
        return None

    def _lookup_for(self, name: str, said: str, router: Router) -> tuple[str, ToolCall] | None:
        """Agent `name`'s one lookup on these words, if the router fills it."""
        target = self.session.registry.agents.get(name)
        lookups = (
            [n for n, t in self.session.tools_of(target).items() if t.finds is not None] if target is not None else []
        )
        if target is None or len(lookups) != 1:
            return None
        messages = (*self.session.get_agent_history(name), Message("user", said))
        call = self._checked_call(
            target, router.call_of(replace(self.session.completion_request(target), messages=messages), lookups[0])
        )
        return (name, call) if call is not None else None

    def declined(self, agent: Agent) -> str | None:
        """What is said to a plain no to the read-back, where the router is sure of no other step: "No, thank you, not
        today." and "No, on second thought I'll keep them." went to the 1.5B, which ran out of its 20 s beside other
        work (the tuned suite, 3 of 40)."""
        history = self.session.get_agent_history(agent.name)
        proposal = pending_proposal(history)
        said = history[-1].content if history and history[-1].role == "user" else ""
        if proposal is None or self.router(agent) is None or consent(said, proposal) is not False:
            return None
        return self.session.config.declined if plain_no(said) else None

    def left_read_back(self) -> ToolCall | None:
        """The read-back call of the agent the caller came from, if it read back something the caller left unanswered
        to ask another agent something in passing (its own tool, unconfirmed: read back again)."""
        left = self.session.came_from
        if left is None:
            return None
        view = self.session.get_agent_history(left)
        handed = max((i for i, m in enumerate(view) if m.role == "tool" and m.agent == left), default=-1)
        asked = max((i for i, m in enumerate(view[:handed]) if m.role == "user"), default=-1)
        waiting = pending_proposal(view[: asked + 1]) if asked >= 0 else None
        spoke = any(m.role == "assistant" and m.agent == left and not m.tool_calls for m in view[asked:])
        if waiting is None or spoke or not _in_passing(view[asked].content, waiting):
            return None
        arguments = {k: v for k, v in waiting.get("arguments", {}).items() if k != "confirmed"}
        call = ToolCall("resumed_0", str(waiting["tool"]), arguments)
        came_from = self.session.registry.agents[left]
        if tool_call_errors(
            Completion("", (call,)), self.session.tools_of(came_from), self.session.tool_context(came_from)
        ):
            return None
        log.info("event=resumed client=%s agent=%s tool=%s", self.session.client_id, left, call.name)
        return call

    def named_any_turn(self, agent: Agent) -> ToolCall | None:
        """A tool the router may take on any turn (Tool.any_turn) that the caller's words name: "Can I just speak to a
        real person, please?" over a return's read-back cost the 1.5B 4.5 s to transfer (blind3)."""
        router = self.router(agent)
        phrases = {name: tool.any_turn for name, tool in self.session.tools_of(agent).items() if tool.any_turn}
        named = (
            router.named_call(self.session.completion_request(agent), phrases)
            if router is not None and phrases
            else None
        )
        call = self._checked_call(agent, named)
        if call is not None:
            log.info("event=named_any_turn client=%s agent=%s tool=%s", self.session.client_id, agent.name, call.name)
        return call

    def answered_question(self, agent: Agent) -> ToolCall | None:
        """The call a tool's question asked for, the caller's words its answer, when the agent's router is sure they
        are one ("It's M one, one A E."): the 1.5B wrote the same call, ~25 tokens, in 2-3 s."""
        router = self.router(agent)
        call = router.answer_call(self.session.completion_request(agent)) if router is not None else None
        if call is None or tool_call_errors(
            Completion("", (call,)), self.session.tools_of(agent), self.session.tool_context(agent)
        ):
            return None
        log.info("event=question_answered client=%s agent=%s tool=%s", self.session.client_id, agent.name, call.name)
        return call

    def asked_again(self, agent: Agent) -> str | None:
        router = self.router(agent)
        asked = router.asked_again(self.session.completion_request(agent)) if router is not None else None
        if asked is not None:
            log.info("event=asked_again client=%s agent=%s", self.session.client_id, agent.name)
        return asked


def _entering_turn(history: Sequence[Message], agent: str) -> list[str]:
    """The caller's words that brought them to this agent (the last before its first own message), if any."""
    first = next((i for i, m in enumerate(history) if m.agent == agent), len(history))
    return [m.content for m in reversed(history[:first]) if m.role == "user"][:1]


# Where one wish ends and the next begins inside a sentence: "I want to send it back, please, and then buy the little
# fitness band instead" (blind25: the band was never offered, 4 of 4).
_THEN = re.compile(r"(?i),?\s+(?=(?:and )?then\b|after that\b|once that'?s (?:sorted|done)\b)")
# A sentence that asks for something. Of the words that brought the caller to an agent, only such a one is a wish
# beside the one served: "My phone ... fall in a box of ice ... the corner of the screen is cracked already. I need the
# clear case ..." had the case just bought offered for return (blind38 Penzance, 2 of 4).
_WISH = re.compile(
    r"(?i)\?|\b(?:want|wants|wanted to|wanna|would like|'d like|like to|need|needs|can i|could i|can you|could you"
    r"|may i|please|i'll|i will|going to|gonna|looking for|have to|got to|help)\b"
)
# The agent's "Is there anything else I can help with?" (or any question that asks it), ending its words.
_ANYTHING_ELSE = re.compile(r"(?i)\banything else\b[^.?!]*\?\s*$")
# What the caller keeps is no wish for more of it: "The two wee colour bulbs that came on the same order are dead on,
# I'm keeping them." beside a return was offered two more bulbs (blind35 Dungannon, 3 of 4).
_KEPT = re.compile(r"(?i)\b(?:keep|keeping|kept|hang(?:ing)? on to|hold(?:ing)? on to)\b")


def _in_passing(said: str, proposal: Mapping[str, Any]) -> bool:
    """Words that leave a read-back only to ask something: neither a yes nor a no to it, a question, and nothing turned
    away from ("Actually, I changed my mind. I want to return the kettle I bought instead." leaves a webcam's)."""
    return consent(said, proposal) is None and asks_more(said) and not turns_away(said) and not _MIND.search(said)


# A mind changed, which no question in passing is.
_MIND = re.compile(r"(?i)\bchanged? (?:my|our) minds?\b")
