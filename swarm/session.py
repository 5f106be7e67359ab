"""One caller's session: the active agent, the shared history, and the turn loop with validation and rescue."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from swarm.checks import (
    action_claim_errors,
    asked_first,
    promise_errors,
    spoken_text_errors,
    tool_call_errors,
    unfounded_errors,
)
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
from swarm.events import (
    AgentChanged,
    AssistantText,
    CallEnded,
    DigitsRequested,
    EndReason,
    Escalated,
    EscalationReason,
    Event,
    Flushed,
    Rescued,
    SystemText,
    ToolCalled,
    ToolCallRepaired,
    UserText,
    ValidationFailed,
)
from swarm.history import History
from swarm.messages import CompletionRequest, Message, ToolCall
from swarm.providers.base import Completion, Delta, PromptCache, Provider, ProviderError, Router
from swarm.sentences import SentenceSplitter, split_sentences
from swarm.specs import NAVIGATE_PREFIX, Agent, Catalog, RegistryError, SessionConfig, SwarmSpec
from swarm.speculation import Speculation
from swarm.toolcall_parse import extract_tool_calls
from swarm.tools import Tool, ToolContext, result_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Outcome:
    """How one completion ended once validated: the tool calls to run (none: the turn is over)."""

    tool_calls: tuple[ToolCall, ...] = ()
    ran: Mapping[str, str] | None = None  # results of calls already run and recorded, by call id (a lookup)


class Session:
    def __init__(
        self,
        registry: Catalog,
        swarm: SwarmSpec,
        client_id: str,
        metadata: Mapping[str, Any],
        config: SessionConfig,
        events: list[Event],
    ) -> None:
        self.registry = registry
        self.swarm = swarm
        self.client_id = client_id
        self.session_id = uuid.uuid4().hex
        self.metadata = dict(metadata)
        self.config = config
        self.events: list[Event] = []
        self.history = History(config.history_size)
        # Control, from the events like the rest: a resumed session is escalated or ended as the original was.
        self._escalation: Escalated | None = None
        self._ending: CallEnded | None = None
        self._agent = swarm.default_agent
        self._stack: list[str] = []
        self._lock = asyncio.Lock()
        self._speculation: Speculation | None = None  # the running turn's, until its first request takes it
        self._rescues = 0
        self._disposed = False
        # The server reading the history while the caller hears a say line (PromptCache): the next turn waits
        # for it rather than racing it to another of the server's slots, where the prompt is not cached.
        self._warming: asyncio.Future[None] | None = None
        # The sentences the model's attempts spoke in the running turn: a retry that says one again says it silently
        # (the 1.5B, sent back, said "Understood. I'll send the Running shoes back for now." three times: blind4).
        self._spoken_in_turn: list[str] = []
        for event in events:
            self._record(event)

    # --- state -----------------------------------------------------------------------------------------------

    def _record(self, event: Event) -> None:
        """Every change goes through here, so replaying the events rebuilds the same session."""
        self.events.append(event)
        match event:
            case UserText(text=text):
                self.history.push(Message("user", text))
            case AssistantText(agent=agent, text=text):
                self.history.push(Message("assistant", text, agent=agent))
            case SystemText(agent=agent, text=text):
                self.history.push(Message("system", text, agent=agent))
            case ToolCalled(agent=agent, call_id=cid, name=name, arguments=args, result=result):
                call = ToolCall(cid, name, args)
                self.history.push(
                    Message("assistant", "", agent=agent, tool_calls=(call,)),
                    Message("tool", result, agent=agent, tool_call_id=cid, tool_name=name),
                )
            case AgentChanged(agent=agent, stack=stack):
                self._agent, self._stack = agent, list(stack)
            case Flushed(agent=agent):
                self.history.flush(agent)
            case Escalated():
                self._escalation = event
            case CallEnded():
                self._ending = event

    def get_agent_name(self) -> str:
        return self._agent

    def change_agent(self, name: str) -> None:
        """Hand over to another agent of this swarm; the current one goes on the navigation stack."""
        if name not in self.swarm.agents:
            raise RegistryError(f"swarm {self.swarm.name!r} has no agent {name!r}")
        if name != self._agent:
            self._record(AgentChanged(self._agent, name, [*self._stack, self._agent]))

    def navigate_back(self) -> str:
        """Return to the previous agent, or the default one when there is none; returns the new agent."""
        stack = list(self._stack)
        target = stack.pop() if stack else self.swarm.default_agent
        if target != self._agent:
            self._record(AgentChanged(self._agent, target, stack))
        return target

    # --- commits (between turns, or from tools) ----------------------------------------------------------------

    def commit_user_message(self, text: str) -> None:
        self._record(UserText(text))

    def commit_system_message(self, text: str) -> None:
        self._record(SystemText(self._agent, text))

    def commit_assistant_message(self, text: str) -> None:
        self._record(AssistantText(self._agent, text))

    def commit_tool_output(
        self,
        call_id: str,
        name: str,
        content: str,
        arguments: dict[str, Any] | None = None,
        requests: Sequence[DigitsRequested] = (),
    ) -> None:
        """A tool's result, and what the tool asked of the keypad while it ran (ToolContext.requests)."""
        self._record(ToolCalled(self._agent, call_id, name, arguments or {}, content))
        for request in requests:
            self._record(request)

    def commit_flush(self) -> None:
        self._record(Flushed(self._agent))

    def commit_heard(self, heard: str) -> None:
        """After a barge-in: what the agents said since the caller last spoke becomes only what was heard.

        The turn's tool calls and results stay; its spoken text is replaced by `heard` (possibly nothing),
        so the model never believes it told the caller something they did not hear.
        """
        last_user = max((i for i, e in enumerate(self.events) if isinstance(e, UserText)), default=-1)
        kept = [e for i, e in enumerate(self.events) if i <= last_user or not isinstance(e, AssistantText)]
        if heard:
            kept.append(AssistantText(self._agent, heard))
        self._replay(kept)

    def retract(self, text: str, since: int = 0) -> bool:
        """Take back the turn that answered the caller's `text`, its first event at `since` or after (the
        caller went on before hearing a word of it, and their whole sentence comes as one turn). Only a turn
        that changed nothing: its tools only read or handed over, and it neither escalated nor ended the
        call; else False, and it stands. Events before its own (a turn it replaced, unwinding) stay."""
        at = next((i for i in range(since, len(self.events)) if self.events[i] == UserText(text)), None)
        if at is None:
            return True  # it never reached the session
        if not all(self._changes_nothing(event) for event in self.events[at + 1 :]):
            return False
        self._replay(self.events[:at])
        return True

    def _changes_nothing(self, event: Event) -> bool:
        if isinstance(event, ToolCalled):
            tool = self.registry.tools.get(event.name)
            return tool is not None and tool.changes_nothing
        return not isinstance(event, Escalated | CallEnded | UserText)

    def _replay(self, events: list[Event]) -> None:
        self.events, self.history = [], History(self.config.history_size)
        self._agent, self._stack = self.swarm.default_agent, []
        self._escalation = self._ending = None
        for event in events:
            self._record(event)

    # --- control: what the channel must do (tools and the voice layer say it, the channels act on it) ------------

    def escalate(self, reason: EscalationReason, detail: str = "") -> None:
        """The caller must reach a person."""
        self._record(Escalated(reason, detail))

    def end_call(self, reason: EndReason = "goodbye", detail: str = "") -> None:
        """The conversation is over once what was said is heard."""
        self._record(CallEnded(reason, detail))

    def escalated(self) -> Escalated | None:
        return self._escalation

    def ended(self) -> CallEnded | None:
        return self._ending

    def digit_request(self) -> DigitsRequested | None:
        """The digits the last tool run since the caller last spoke or typed asked for, if it asked."""
        for event in reversed(self.events):
            if isinstance(event, DigitsRequested):
                return event
            if isinstance(event, (ToolCalled, UserText)):
                return None  # a later tool's result (or the caller) came after any request
        return None

    # --- getters ---------------------------------------------------------------------------------------------

    def get_raw_history(self) -> list[Message]:
        return self.history.raw()

    def get_agent_history(self, agent: str | None = None) -> list[Message]:
        return self.history.for_agent(agent or self._agent)

    def get_user_history(self) -> list[Message]:
        return [m for m in self.history.raw() if m.role == "user"]

    def get_assistant_history(self) -> list[Message]:
        return [m for m in self.history.raw() if m.role == "assistant" and not m.tool_calls]

    def get_last_user_message(self) -> str | None:
        return _last_content(self.get_user_history())

    def get_last_assistant_message(self) -> str | None:
        return _last_content(self.get_assistant_history())

    def get_last_system_message(self) -> str | None:
        return _last_content([m for m in self.history.raw() if m.role == "system"])

    # --- operations ------------------------------------------------------------------------------------------

    async def complete(self, text: str) -> str:
        """The caller said `text`: run one turn and return everything the agents said."""
        return " ".join([s async for s in self.stream(text)])

    async def stream(self, text: str, speculation: Speculation | None = None) -> AsyncIterator[str]:
        """Like complete, but yield each sentence as soon as it is ready (what the voice loop speaks).
        A `speculation` (speculate) is the turn's first completion if it asked exactly the same."""
        async with self._turn():
            self._record(UserText(text))
            self._speculation = speculation
            try:
                async for sentence in self._run_turn():
                    yield sentence
            finally:
                self._take_speculation(None)  # never asked for (a rescue, a placeholder): stopped

    def speculate(self, text: str) -> Speculation | None:
        """Start the model on `text` before the caller's turn is certain: the first completion the turn
        would ask for, read ahead; nothing is recorded and no tool runs. None while a turn is running."""
        agent = self.registry.agents[self._agent]
        if self._disposed or self._lock.locked():
            return None
        history = self.history.copy()
        history.push(Message("user", text))
        request = self.completion_request(agent, self._view(agent, history))
        if agent.tool_only and self._sure_call(agent, request) is not None:
            return None  # the router answers the turn: no generation to start
        return Speculation(self.registry.providers[agent.provider], request)

    def _take_speculation(self, request: CompletionRequest | None) -> Speculation | None:
        """The running turn's speculation if it asked exactly `request`; either way it is no longer pending."""
        speculation, self._speculation = self._speculation, None
        if speculation is not None and speculation.request == request and not speculation.cancelled:
            speculation.taken = True
            return speculation
        if speculation is not None:
            speculation.cancel()
        return None

    async def execute(self, instruction: str) -> str:
        """Let the model take the initiative on an instruction the caller did not say (e.g. greet after a hand-over)."""
        async with self._turn():
            self._record(SystemText(self._agent, instruction))
            return " ".join([s async for s in self._run_turn()])

    def emit(self, text: str) -> str:
        """Say a prepared text without the model; it is recorded as the active agent's."""
        self._record(AssistantText(self._agent, text))
        return text

    def dispose(self) -> None:
        self._disposed = True
        if self._warming is not None:
            self._warming.cancel()

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        if self._disposed:
            raise RuntimeError(f"session {self.client_id} is disposed")
        async with self._lock:
            yield

    # --- the turn loop ---------------------------------------------------------------------------------------

    async def _run_turn(self) -> AsyncIterator[str]:
        calls_left = self.config.max_tool_calls
        results: dict[str, str] = {}  # this turn's calls (agent, name, arguments) and what they returned
        hand_overs: set[tuple[str, str]] = set()  # (from, to) of this turn's hand-overs
        spoke = False
        entered = False  # the agent was handed the caller in this turn, by the call just run
        agent = self.registry.agents[self._agent]
        self._spoken_in_turn = []
        settled = self._named_any_turn(agent) or self._answered_proposal(agent) or self._answered_question(agent)
        if settled is None and (resumed := self._resumed(agent)) is not None:
            yield self.emit(self.config.resumed)
            self.navigate_back()
            settled = resumed
        elif settled is None and (asked := self._asked_again(agent)) is not None:
            yield self.emit(asked)
            return
        while True:
            agent = self.registry.agents[self._agent]
            outcome = _Outcome()
            if settled is not None:
                outcome, settled = _Outcome((settled,)), None
            elif (routed := await self._routed(agent, entered)) is not None:
                outcome = routed
            elif not entered and (declined := self._declined(agent)) is not None:
                yield self.emit(declined)
                return
            else:
                async for item in self._checked_completion(agent, entered):
                    if isinstance(item, str):
                        spoke = True
                        yield item
                    else:
                        outcome = item
            if not outcome.tool_calls:
                return
            if len(outcome.tool_calls) > calls_left:
                yield self._placeholder(agent, "too many tool calls in one turn")
                return
            calls_left -= len(outcome.tool_calls)
            for call in outcome.tool_calls:
                key = _call_key(agent, call)
                if key in results:
                    # A small model shown a result often calls the same tool again instead of speaking
                    # it: running it again would only loop, so its "say" line is what the caller hears.
                    yield self._say_last(agent, [*results.values(), results[key]], "repeated_call")
                    return
                ran = outcome.ran.get(call.id) if outcome.ran else None
                results[key] = ran if ran is not None else await self._run_tool(agent, call)
                if self._agent != agent.name:
                    if (agent.name, self._agent) in hand_overs:
                        # The same hand-over twice in one turn: a small model passing the caller around (seen:
                        # four hand-overs after a return was written, a completion each) would only loop to the
                        # call limit. A corrected one (triage -> sales -> triage -> refund) repeats none.
                        if not spoke:
                            yield self._say_last(agent, list(results.values()), "handover_loop")
                        return
                    hand_overs.add((agent.name, self._agent))
                    entered = True
                    break  # the new agent answers; calls meant for the old one are dropped
            else:
                entered = False
                if (say := self._result_reply(outcome.tool_calls, results, agent)) is not None:
                    said = self.emit(say)
                    done = any(call.arguments.get("confirmed") is True for call in outcome.tool_calls)
                    if done and (left := self._left_read_back()) is not None:
                        # What was offered in passing is done ("Your order is placed."): back to the read-back left.
                        yield said
                        self.navigate_back()
                        settled = left
                        continue
                    if done and (beside := self._asked_beside(agent)) is not None:
                        # Then what they asked another agent for beside their yes: "... I'll have a kettle instead".
                        yield said
                        self.change_agent(beside[0])
                        settled = beside[1]
                        continue
                    self._warm(agent)
                    yield said
                    return

    async def _routed(self, agent: Agent, entered: bool) -> _Outcome | None:
        """The agent's next step without a generation, where its router is sure of it: a tool-only agent's
        call, or, just handed the caller, its first one. A lookup (Tool.finds) is run here and counts only if
        it found something or asks the caller a question; finding nothing it is dropped unrecorded, and the model
        answers."""
        passed = self._passed_offer(agent) if agent.tool_on_entry and not entered else None
        if not (agent.tool_only or (agent.tool_on_entry and (entered or passed is not None))):
            return self._sure_hand_over(agent)
        request = self.completion_request(agent, entered=entered)
        call = self._sure_call(agent, request)
        if call is None and agent.tool_on_entry and (entered or passed is not None):
            call = self._likely_lookup(agent, request)
        tool = self.registry.tools[call.name] if call is not None else None
        if call is None or tool is None:
            return None
        log.info("event=routed client=%s agent=%s tool=%s", self.client_id, agent.name, call.name)
        if tool.finds is None:
            return _Outcome((call,))
        context, control = self._context(agent), (self._escalation, self._ending)
        try:
            result = await asyncio.wait_for(tool.call(call.arguments, context), self.config.tool_timeout)
        except Exception as error:  # noqa: BLE001 - the lookup was only a head start: the model decides
            log.warning(
                "event=lookup_failed client=%s tool=%s error=%s", self.client_id, call.name, type(error).__name__
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
            said = self.get_agent_history(agent.name)[-1].content
            # Or the same offer told about ("described"), for a caller who holds off to ask about it: "Not yet,
            # please. Before you order it, um, does it fold flat?" (blind15, blind16: the 1.5B asked "What product are
            # you looking for?"; blind24: "Hang about ... Do thik watch need one of they smartphones to work?").
            told = bool(result.get("described")) and holds_off(said) and "?" in said
            if not isinstance(offered, dict) or not result.get(tool.finds):
                found = False
            elif refused:
                found = told or not same_action(offered, proposal)
            else:
                # The same offer again for words that name it and ask nothing ("Righto, no worries. I'll grab one of
                # the quiet ones for the bedroom then, the ultrasonic humidifier."): the 1.5B wrote a product code
                # of its own and could not find it (blind8, 4 of 4).
                named = names_item(said, offered) and (same_action(offered, proposal) or narrows(offered, proposal))
                recounted = recounts(offered, proposal) and changes_quantity(said, proposal)
                found = told or adds_to(offered, proposal) or named or recounted
        if not found and control == (self._escalation, self._ending):
            return None  # unless the tool escalated or ended the call (a shop that is down): its line is said
        text = result_text(result)
        self._record_tool(agent, call, text, context)
        return _Outcome((call,), {call.id: text})

    def _sure_hand_over(self, agent: Agent) -> _Outcome | None:
        """A hand-over the router is sure of on the agent's other turns, with nothing read back or asked: "Thanks. I'd
        also like to buy a pair of wired earbuds." after a return was written cost the 1.5B its 20 s (the tuned suite,
        two of 40 trials beside other work). Any other step is the model's."""
        call = self._sure_call(agent, self.completion_request(agent))
        if call is None or not call.name.startswith(NAVIGATE_PREFIX):
            return None
        log.info("event=routed client=%s agent=%s tool=%s", self.client_id, agent.name, call.name)
        return _Outcome((call,))

    def _passed_offer(self, agent: Agent) -> tuple[dict[str, Any], bool] | None:
        """The pending read-back the caller's last words do not agree to, and whether they say no to it."""
        history = self.get_agent_history(agent.name)
        proposal = pending_proposal(history)
        said = history[-1].content if history and history[-1].role == "user" else ""
        answer = consent(said, proposal) if proposal is not None and said else True
        # Turned away from without a no ("too much ... Leave the screen. Only the camera I will take.") is turned down.
        return (
            None if proposal is None or answer is True else (proposal, answer is False or turned_away(said, proposal))
        )

    def _sure_call(self, agent: Agent, request: CompletionRequest) -> ToolCall | None:
        """The agent's router's sure call for this request, if the agent has a router (not its own model) and the
        call passes the tool's checks."""
        router = self._router(agent)
        return self._checked_call(agent, router.sure_call(request) if router is not None else None)

    def _likely_lookup(self, agent: Agent, request: CompletionRequest) -> ToolCall | None:
        """Just handed the caller, the router unsure of the step: the agent's one lookup (Tool.finds) on the
        caller's words, as the model would have called it (a look-first agent's first reply is a tool call) but
        without its 3-8 s generation. _routed keeps it only if it finds something; else the model decides."""
        router = self._router(agent)
        lookups = [name for name, tool in self._tools(agent).items() if tool.finds is not None]
        if router is None or len(lookups) != 1:
            return None
        return self._checked_call(agent, router.call_of(request, lookups[0]))

    def _router(self, agent: Agent) -> Router | None:
        router = self.registry.providers.get(agent.router) if agent.router and agent.router != agent.provider else None
        return router if isinstance(router, Router) else None

    def _checked_call(self, agent: Agent, call: ToolCall | None) -> ToolCall | None:
        if call is None or tool_call_errors(Completion("", (call,)), self._tools(agent), self._context(agent)):
            return None
        return call

    async def _checked_completion(self, agent: Agent, entered: bool = False) -> AsyncIterator[str | _Outcome]:
        """Complete with validation feedback, then a clean view, then a placeholder; yields sentences said."""
        await self._warmed()
        scratch: list[Message] = []
        for _ in range(self.config.max_retries + 1):
            async for item in self._attempt(agent, self._view(agent) + scratch, entered):
                if isinstance(item, str):
                    yield item
                else:
                    result = item
            if result.outcome is not None:
                yield result.outcome
                return
            if result.provider_failed:
                yield self._apologise(agent, result.errors[0])
                return
            self._record(ValidationFailed(agent.name, result.errors))
            scratch += result.feedback
        self._record(Rescued(agent.name, "flush", "; ".join(result.errors)))
        clean = [m for m in self._view(agent) if m.role == "system"][:1] + self.get_user_history()[-1:]
        async for item in self._attempt(agent, clean, entered):
            if isinstance(item, str):
                yield item
            else:
                result = item
        if result.outcome is not None:
            yield result.outcome
        elif result.provider_failed:
            yield self._apologise(agent, result.errors[0])
        else:
            yield self._placeholder(agent, "; ".join(result.errors))

    async def _attempt(self, agent: Agent, messages: list[Message], entered: bool) -> AsyncIterator[str | _Attempt]:
        """One attempt's sentences as each is accepted (the first is spoken before the reply ends), then the attempt."""
        attempt = _Attempt(self, agent, messages, entered)
        async with contextlib.aclosing(attempt.run()) as sentences:
            async for sentence in sentences:
                yield sentence
        yield attempt

    def _view(self, agent: Agent, history: History | None = None) -> list[Message]:
        system = [Message("system", agent.prompt, agent=agent.name)]
        system += [Message("system", text, agent=agent.name) for text in agent.system]
        return system + (history or self.history).for_agent(agent.name)

    def completion_request(
        self, agent: Agent, messages: Sequence[Message] | None = None, *, entered: bool = False
    ) -> CompletionRequest:
        """What the agent's model is asked: its view of the history (or these messages) and its tools;
        `entered`: the agent was just handed the caller."""
        tools = tuple(t.spec() for t in self._tools(agent).values())
        view = self._view(agent) if messages is None else messages
        required = bool(tools) and (agent.tool_only or (entered and agent.tool_on_entry))
        return CompletionRequest(agent.name, self.client_id, tuple(view), tools, required)

    def _warm(self, agent: Agent) -> None:
        """Let the agent's server read the history the model has not seen (the tool result and its say line)."""
        provider = self.registry.providers[agent.provider]
        if isinstance(provider, PromptCache):
            read = functools.partial(provider.warm, self.completion_request(agent))  # the history as it is now
            self._warming = asyncio.ensure_future(_after(self._warming, read))

    async def _warmed(self) -> None:
        """Wait for this session's warm read before asking the model, so the two do not race for the server's
        threads (a plain yes asks no model: it does not wait). Shielded: a barge-in cancels the turn, not the
        read. Other calls' reads and turns still share the server."""
        if self._warming is not None:
            with contextlib.suppress(Exception):  # a failed read only cost time
                await asyncio.shield(self._warming)
            self._warming = None

    def _tools(self, agent: Agent) -> dict[str, Tool]:
        return {name: self.registry.tools[name] for name in agent.tools}

    def _context(self, agent: Agent) -> ToolContext:
        return ToolContext(self.client_id, agent.name, self, self.metadata, self.session_id)

    def _answered_proposal(self, agent: Agent) -> ToolCall | None:
        """The read-back's own call when the caller's words settle it without the model: confirmed on a plain yes
        to it (swarm.confirmations), or unconfirmed with the change they make, read back again, when the agent's
        router is sure of the change ("could you make it three instead?")."""
        history = self.get_agent_history(agent.name)
        proposal = pending_proposal(history)
        if proposal is None or not history:
            return None
        if agreed(history, proposal):  # "Yes, three please." to three is consent
            call = ToolCall("agreed_0", str(proposal["tool"]), {**proposal.get("arguments", {}), "confirmed": True})
            event = "plain_yes"
        elif (router := self._router(agent)) is not None:
            changed = router.changed_call(self.completion_request(agent))
            if changed is None:
                return None  # a no, or words the router is unsure of: the model decides
            call, event = changed, "changed_read_back"
        else:
            return None
        if tool_call_errors(Completion("", (call,)), self._tools(agent), self._context(agent)):
            return None  # not this agent's tool, or arguments it would refuse: the model decides
        log.info("event=%s client=%s agent=%s tool=%s", event, self.client_id, agent.name, call.name)
        return call

    def _resumed(self, agent: Agent) -> ToolCall | None:
        """The read-back the caller left to ask something in passing, read back again on a plain no to what they were
        offered there: "How much is the yoga mat?" over a cable's return was handed to sales, and "Not today, thanks."
        to its offer left the return unasked (blind19). None unless the words say no and ask nothing more, and the
        agent the caller came from read back something they neither agreed to nor turned down."""
        history = self.get_agent_history(agent.name)
        proposal = pending_proposal(history)
        said = history[-1].content if history and history[-1].role == "user" else ""
        if proposal is None or consent(said, proposal) is not False or asks_more(said):
            return None
        router = self._router(agent)
        if router is not None and router.sure_call(self.completion_request(agent)) is not None:
            return None  # a no with another request after it: "No. Actually, can I speak to someone?"
        return self._left_read_back()

    def _asked_beside(self, agent: Agent) -> tuple[str, ToolCall] | None:
        """Another agent and its lookup for what the caller asked beside their answers to the read-back just done:
        "Yes, go on, love, send the grinder back for me money. And while I've got you, I'll have a kettle instead, the
        one with the temperature thing. Just the one." had the grinder's return written, and the kettle was never
        offered (blind23, 4 of 4). The sentences from the first the router is sure hands over on its own, in the
        caller's last two turns that say yes, then in the turn that brought the caller to this agent: "I want to send
        them back for a refund. And then, once that's sorted, I want to buy the ... headphones" (blind24, 4 of 4)."""
        router = self._router(agent)
        if router is None:
            return None
        history = self.get_agent_history(agent.name)
        users = [m.content for m in history if m.role == "user"]
        said_yes = [said for said in reversed(users[-2:]) if yes_or_no(said) is True]
        # Not beside a yes: "Wait, not yet ... My last one was plastic and all scratched."
        for said in [*said_yes, *_entering_turn(history, agent.name)]:
            sentences = split_sentences(said.strip())
            for i, sentence in enumerate(sentences):
                rest = " ".join(sentences[i:])
                hand_over = router.sure_call(
                    replace(self.completion_request(agent), messages=(*history, Message("user", sentence)))
                )
                if hand_over is not None and hand_over.name.startswith(NAVIGATE_PREFIX):
                    return self._lookup_for(hand_over.name.removeprefix(NAVIGATE_PREFIX), rest, router)
        return None

    def _lookup_for(self, name: str, said: str, router: Router) -> tuple[str, ToolCall] | None:
        """Agent `name`'s one lookup on these words, if the router fills it."""
        target = self.registry.agents.get(name)
        lookups = [n for n, t in self._tools(target).items() if t.finds is not None] if target is not None else []
        if target is None or len(lookups) != 1:
            return None
        messages = (*self.get_agent_history(name), Message("user", said))
        call = self._checked_call(
            target, router.call_of(replace(self.completion_request(target), messages=messages), lookups[0])
        )
        return (name, call) if call is not None else None

    def _declined(self, agent: Agent) -> str | None:
        """What is said to a plain no to the read-back, where the router is sure of no other step: "No, thank you, not
        today." and "No, on second thought I'll keep them." went to the 1.5B, which ran out of its 20 s beside other
        work (the tuned suite, 3 of 40)."""
        history = self.get_agent_history(agent.name)
        proposal = pending_proposal(history)
        said = history[-1].content if history and history[-1].role == "user" else ""
        if proposal is None or self._router(agent) is None or consent(said, proposal) is not False:
            return None
        return self.config.declined if plain_no(said) else None

    def _left_read_back(self) -> ToolCall | None:
        """The read-back call of the agent the caller came from, if it read back something the caller left unanswered
        to ask another agent something in passing (its own tool, unconfirmed: read back again)."""
        if not self._stack:
            return None
        left = self._stack[-1]
        view = self.get_agent_history(left)
        handed = max((i for i, m in enumerate(view) if m.role == "tool" and m.agent == left), default=-1)
        asked = max((i for i, m in enumerate(view[:handed]) if m.role == "user"), default=-1)
        waiting = pending_proposal(view[: asked + 1]) if asked >= 0 else None
        spoke = any(m.role == "assistant" and m.agent == left and not m.tool_calls for m in view[asked:])
        if waiting is None or spoke or not _in_passing(view[asked].content, waiting):
            return None
        arguments = {k: v for k, v in waiting.get("arguments", {}).items() if k != "confirmed"}
        call = ToolCall("resumed_0", str(waiting["tool"]), arguments)
        came_from = self.registry.agents[left]
        if tool_call_errors(Completion("", (call,)), self._tools(came_from), self._context(came_from)):
            return None
        log.info("event=resumed client=%s agent=%s tool=%s", self.client_id, left, call.name)
        return call

    def _named_any_turn(self, agent: Agent) -> ToolCall | None:
        """A tool the router may take on any turn (Tool.any_turn) that the caller's words name: "Can I just speak to a
        real person, please?" over a return's read-back cost the 1.5B 4.5 s to transfer (blind3)."""
        router = self._router(agent)
        phrases = {name: tool.any_turn for name, tool in self._tools(agent).items() if tool.any_turn}
        named = router.named_call(self.completion_request(agent), phrases) if router is not None and phrases else None
        call = self._checked_call(agent, named)
        if call is not None:
            log.info("event=named_any_turn client=%s agent=%s tool=%s", self.client_id, agent.name, call.name)
        return call

    def _answered_question(self, agent: Agent) -> ToolCall | None:
        """The call a tool's question asked for, the caller's words its answer, when the agent's router is sure they
        are one ("It's M one, one A E."): the 1.5B wrote the same call, ~25 tokens, in 2-3 s."""
        router = self._router(agent)
        call = router.answer_call(self.completion_request(agent)) if router is not None else None
        if call is None or tool_call_errors(Completion("", (call,)), self._tools(agent), self._context(agent)):
            return None
        log.info("event=question_answered client=%s agent=%s tool=%s", self.client_id, agent.name, call.name)
        return call

    def _asked_again(self, agent: Agent) -> str | None:
        router = self._router(agent)
        asked = router.asked_again(self.completion_request(agent)) if router is not None else None
        if asked is not None:
            log.info("event=asked_again client=%s agent=%s", self.client_id, agent.name)
        return asked

    def _result_reply(self, calls: Sequence[ToolCall], results: dict[str, str], agent: Agent) -> str | None:
        """The last result's "say" line when every call was to a tool whose say line is the reply, else None."""
        if not all(self.registry.tools[c.name].says_result for c in calls):
            return None
        with contextlib.suppress(ValueError, AttributeError):
            say = json.loads(results[_call_key(agent, calls[-1])]).get("say")
            if isinstance(say, str) and say and not spoken_text_errors(say):
                return say
        return None

    def _say_last(self, agent: Agent, results: list[str], stage: str) -> str:
        """The last of these tool results' "say" lines (a navigation's result has none), else a placeholder."""
        for result in reversed(results):
            try:
                say = json.loads(result).get("say")
            except (ValueError, AttributeError):
                continue
            if isinstance(say, str) and say and not spoken_text_errors(say):
                self._record(Rescued(agent.name, stage, "a tool result's say line was spoken"))
                return self.emit(say)
        return self._placeholder(agent, f"{stage}: no tool result to say")

    async def _run_tool(self, agent: Agent, call: ToolCall) -> str:
        tool = self.registry.tools[call.name]
        context = self._context(agent)
        # Shielded: a tool that writes an order finishes (or fails) as a whole even if the caller barges in,
        # and its result is recorded, so the history never holds a call without its result.
        task = asyncio.ensure_future(asyncio.wait_for(tool.call(call.arguments, context), self.config.tool_timeout))
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            self._record_tool(agent, call, await _settle(task), context)
            raise
        except Exception as error:  # noqa: BLE001 - a tool's failure is news for the model, not a crash of the call
            # The message may quote what the caller said ("no order with ..."): DEBUG only; the event keeps it.
            log.warning("tool failed client=%s tool=%s error=%s", self.client_id, call.name, type(error).__name__)
            log.debug("tool failed client=%s tool=%s error=%r", self.client_id, call.name, error)
            result = {"error": f"the tool failed: {error}"}
        text = result_text(result)
        self._record_tool(agent, call, text, context)
        return text

    def _record_tool(self, agent: Agent, call: ToolCall, result: str, context: ToolContext) -> None:
        self._record(ToolCalled(agent.name, call.id, call.name, call.arguments, result))
        for request in context.requests:
            self._record(request)

    def _placeholder(self, agent: Agent, detail: str) -> str:
        # A read-back the caller answered in words the model could not settle is asked again, word for word: it stays
        # the pending one, and the caller's yes is the router's (blind4: "Right. I think I'll just send these ones
        # back for now." heard "Sorry, I didn't catch that. Could you say it again?").
        text = (
            self._read_back_answered(agent)
            or self._own_question(agent)
            or self.config.placeholders[self._rescues % len(self.config.placeholders)]
        )
        self._rescues += 1
        self._record(Rescued(agent.name, "placeholder", detail))
        return self.emit(text)

    def _own_question(self, agent: Agent) -> str | None:
        """A routing agent's own question (triage: buy or return?), which fits whatever the caller said: the 1.5B's
        transfer, refused four times for "I'd like to return a robot vacuum cleaner ... on my husband's mobile",
        ended in "Sorry, I didn't catch that. Could you say it again?" (blind7)."""
        router = self._router(agent)
        return router.unclear(agent.name) if agent.tool_only and router is not None else None

    def _read_back_answered(self, agent: Agent) -> str | None:
        """The read-back (its say line) the caller's last words answered, if they answered one."""
        history = self.get_agent_history(agent.name)
        users = [i for i, message in enumerate(history) if message.role == "user"]
        proposal = pending_proposal(history[: users[-1] + 1]) if users else None
        said = proposal.get("said") if proposal is not None else None
        return said if isinstance(said, str) and said else None

    def _apologise(self, agent: Agent, detail: str) -> str:
        log.error("llm failed client=%s agent=%s error=%s", self.client_id, agent.name, detail)
        self._record(Rescued(agent.name, "provider_error", detail))
        self.escalate("provider_error", detail)
        return self.emit(self.config.apology)


def _entering_turn(history: Sequence[Message], agent: str) -> list[str]:
    """The caller's words that brought them to this agent (the last before its first own message), if any."""
    first = next((i for i, m in enumerate(history) if m.agent == agent), len(history))
    return [m.content for m in reversed(history[:first]) if m.role == "user"][:1]


def _in_passing(said: str, proposal: Mapping[str, Any]) -> bool:
    """Words that leave a read-back only to ask something: neither a yes nor a no to it, a question, and nothing turned
    away from ("Actually, I changed my mind. I want to return the kettle I bought instead." leaves a webcam's)."""
    return consent(said, proposal) is None and asks_more(said) and not turns_away(said) and not _MIND.search(said)


# A mind changed, which no question in passing is.
_MIND = re.compile(r"(?i)\bchanged? (?:my|our) minds?\b")


def _call_key(agent: Agent, call: ToolCall) -> str:
    """A call as this turn's loop checks tell it apart: the same agent, tool and arguments are the same call."""
    return json.dumps([agent.name, call.name, call.arguments], sort_keys=True, default=str)


class _Attempt:
    """One completion request: streams checked sentences, then judges the whole output."""

    def __init__(self, session: Session, agent: Agent, messages: list[Message], entered: bool = False) -> None:
        self.session, self.agent, self.messages, self.entered = session, agent, messages, entered
        self.said: list[str] = []
        self.errors: list[str] = []
        self.feedback: list[Message] = []
        self.outcome: _Outcome | None = None
        self.provider_failed = False
        # Sentences not spoken because they (or one before them) may not reach the caller's ear.
        self.held: list[str] = []
        self.looping = False
        self.completion: Completion | None = None
        self.caller_words = _words(session.get_last_user_message() or "")
        # What the agent may repeat as a promise: its instructions and what its tools returned; as a fact (a number,
        # an e-mail address), also what the caller said.
        self.grounds = " ".join([agent.prompt, *agent.system, *(m.content for m in messages if m.role == "tool")])
        self.facts = " ".join([self.grounds, *(m.content for m in messages if m.role == "user")])

    async def run(self) -> AsyncGenerator[str, None]:
        """Yield each sentence once it may be spoken; then judge the whole output."""
        tools = self.session._tools(self.agent)
        messages = _answerable(self.agent.name, self.messages)
        request = self.session.completion_request(self.agent, messages, entered=self.entered)
        try:
            async for sentence in self._complete(request):
                yield sentence
        finally:
            # Also when the caller barged in: what was already spoken is part of the history.
            if self.said:
                self.session._record(AssistantText(self.agent.name, " ".join(self.said)))
        completion = self.completion
        if completion is None:
            return
        if not completion.tool_calls and (self.errors or self.held):
            completion = self._repaired(completion, tools)
        if not self.errors:
            context = self.session._context(self.agent)
            self.errors = tool_call_errors(completion, tools, context)
            if self.errors and (asking := asked_first(completion, self.errors, tools, context)) is not None:
                self.session._record(Rescued(self.agent.name, "read_back_first", "; ".join(self.errors)))
                completion, self.errors = asking, []
        if not self.errors and not completion.tool_calls and not self.said:
            self.errors = spoken_text_errors("")
        if self.errors:
            self.feedback = _feedback(self.agent.name, completion, self.errors)
        else:
            self.outcome = _Outcome(completion.tool_calls)

    def _repaired(self, completion: Completion, tools: dict[str, Tool]) -> Completion:
        """A reply held back from the speaker may be a tool call written as text: take it if it is one."""
        found = extract_tool_calls(completion.text, tools)
        if found is None:
            return completion
        if found.errors:
            self.errors = list(found.errors)
            return completion
        self.errors = []
        for call in found.calls:
            self.session._record(ToolCallRepaired(self.agent.name, found.form, call.name))
        return Completion(" ".join(self.said), found.calls)

    async def _complete(self, request: CompletionRequest) -> AsyncIterator[str]:
        """Stream from the agent's provider, or its fallback if that fails before a word was said."""
        names = [n for n in (self.agent.provider, self.agent.fallback) if n]
        for index, name in enumerate(names):
            provider = self.session.registry.providers[name]
            speculation = self.session._take_speculation(request) if index == 0 else None
            try:
                async for sentence in self._stream(provider, request, speculation):
                    yield sentence
                return
            except ProviderError as error:
                if self.said or index == len(names) - 1:
                    self.provider_failed, self.errors = True, [str(error)]
                    return
                log.warning("provider %s failed, using %s: %s", name, names[index + 1], error)

    async def _stream(
        self, provider: Provider, request: CompletionRequest, speculation: Speculation | None
    ) -> AsyncIterator[str]:
        splitter = SentenceSplitter()
        completion: Completion | None = None
        source = speculation.items() if speculation is not None else provider.stream(request)
        async with contextlib.aclosing(source) as items:  # type: ignore[type-var]
            async for item in items:
                if isinstance(item, Delta):
                    for sentence in splitter.feed(item.text):
                        if self._say(sentence):
                            yield sentence
                    if self.looping:
                        break
                elif isinstance(item, Completion):
                    completion = item
        if (rest := splitter.flush()) and self._say(rest):
            yield rest
        # Stopped early on a loop: judge what was produced so far.
        self.completion = completion or Completion(" ".join(self.said))

    def _say(self, sentence: str) -> bool:
        """Keep a sentence that may be spoken; from the first one that may not, hold back the rest.

        The stream goes on to the end (the provider bounds its length): what was held back may be a tool
        call written as text, which is taken once the whole reply is known.
        """
        if self.held or self.looping:
            self.held.append(sentence)
            return False
        if sentence in self.said:
            # A small model that repeats itself would go on until the token limit: stop it here.
            self.looping = True
            return False
        if sentence in self.session._spoken_in_turn:
            return False  # an earlier attempt of this turn said it: the caller heard it once
        problems = (
            spoken_text_errors(sentence)
            or self._echo_errors(sentence)
            or promise_errors(sentence, self.grounds)
            or unfounded_errors(sentence, self.facts)
            or action_claim_errors(sentence)
        )
        if problems:
            self.errors = problems
            self.held.append(sentence)
            return False
        self.said.append(sentence)
        self.session._spoken_in_turn.append(sentence)
        return True

    def _echo_errors(self, sentence: str) -> list[str]:
        """A small model often says the caller's own words back (seen with Qwen2.5-Coder 1.5B): never an answer."""
        words = _words(sentence)
        if len(words.split()) >= 4 and f" {words} " in f" {self.caller_words} ":
            return ["the reply repeats the caller's words: answer them, or call one of your tools"]
        return []


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def _answerable(agent: str, messages: list[Message]) -> list[Message]:
    """The messages, the speech they end with (another agent's, before it handed the caller over) told as a note.

    A chat request that ends with the assistant's words asks the server to go on with them (llama.cpp's prefill),
    and with two it refuses ("Cannot have 2 or more assistant messages at the end of the list": blind4, an
    apology and a transfer). A model is to answer the caller, knowing what they just heard."""
    end = len(messages)
    while end and messages[end - 1].role == "assistant" and not messages[end - 1].tool_calls:
        end -= 1
    if end == len(messages):
        return messages
    said = " ".join(m.content for m in messages[end:] if m.content)
    note = f"The caller has just heard: {said!r}. Answer them now without saying it again."
    return [*messages[:end], *([Message("system", note, agent=agent)] if said else [])]


def _feedback(agent: str, completion: Completion, errors: list[str]) -> list[Message]:
    """The rejected output and the reasons, so the model can correct itself on the next try."""
    text = "Your last output could not be used: " + "; ".join(errors) + ". Try again."
    if not completion.tool_calls:
        return [Message("assistant", completion.text, agent=agent), Message("system", text, agent=agent)]
    results = [
        Message("tool", text, agent=agent, tool_call_id=call.id, tool_name=call.name) for call in completion.tool_calls
    ]
    return [Message("assistant", completion.text, agent=agent, tool_calls=completion.tool_calls), *results]


async def _settle(task: asyncio.Future[Any]) -> str:
    try:
        return result_text(await task)
    except BaseException as error:  # noqa: BLE001 - recorded as the result, the turn is already cancelled
        return result_text({"error": f"the tool did not finish: {error!r}"})


async def _after(earlier: asyncio.Future[None] | None, read: Callable[[], Awaitable[None]]) -> None:
    """A warm read that starts once the one before it has ended: one at a time on the server. A read that is
    cancelled goes on there to the end of its prompt (llama.cpp notices the client gone only then), so a
    newer read beside it would halve the speed of both, and of the next turn."""
    if earlier is not None:
        with contextlib.suppress(Exception):
            await earlier
    await read()


def _last_content(messages: list[Message]) -> str | None:
    return messages[-1].content if messages else None
