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
from typing import Any

from swarm.checks import (
    CLAIMED_DONE,
    action_claim_errors,
    asked_first,
    done_claim_errors,
    promise_errors,
    spoken_text_errors,
    tool_call_errors,
    unfounded_errors,
    writes_done,
)
from swarm.confirmations import pending_proposal
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
from swarm.providers.base import Completion, Delta, PromptCache, Provider, ProviderError
from swarm.router_steps import Outcome, RouterSteps
from swarm.sentences import SentenceSplitter
from swarm.specs import Agent, Catalog, RegistryError, SessionConfig, SwarmSpec
from swarm.speculation import Speculation
from swarm.toolcall_parse import extract_tool_calls
from swarm.tools import Tool, ToolContext, result_text

log = logging.getLogger(__name__)


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
        self.steps = RouterSteps(self)
        self._lock = asyncio.Lock()
        self._speculation: Speculation | None = None  # the running turn's, until its first request takes it
        self._rescues = 0
        self._disposed = False
        # The server reading the history while the caller hears a say line (PromptCache): the next turn waits
        # for it rather than racing it to another of the server's slots, where the prompt is not cached.
        self._warming: asyncio.Future[None] | None = None
        self._reads: set[asyncio.Future[None]] = set()  # every read not ended, the chain's earlier ones too
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

    @property
    def came_from(self) -> str | None:
        """The agent that handed the caller to the active one, if any (navigate_back returns there)."""
        return self._stack[-1] if self._stack else None

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
        if agent.tool_only and self.steps.sure_call(agent, request) is not None:
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
        # Each read of the chain: a later one not started yet would not pass its cancellation to the one it waits for.
        for read in self._reads:
            read.cancel()

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
        settled = (
            self.steps.named_any_turn(agent)
            or self.steps.answered_proposal(agent)
            or self.steps.answered_question(agent)
        )
        if settled is None and (resumed := self.steps.resumed(agent)) is not None:
            yield self.emit(self.config.resumed)
            self.navigate_back()
            settled = resumed
        elif settled is None and (asked := self.steps.asked_again(agent)) is not None:
            yield self.emit(asked)
            return
        while True:
            agent = self.registry.agents[self._agent]
            outcome = Outcome()
            if settled is not None:
                outcome, settled = Outcome((settled,)), None
            elif (routed := await self.steps.routed(agent, entered)) is not None:
                outcome = routed
            elif not entered and (declined := self.steps.declined(agent)) is not None:
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
                    done = any(call.arguments.get("confirmed") is True for call in outcome.tool_calls)
                    left = self.steps.left_read_back() if done else None
                    beside = self.steps.asked_beside(agent) if done and left is None else None
                    said = self.emit(self._asking_more(say) if done and left is None and beside is None else say)
                    if left is not None:
                        # What was offered in passing is done ("Your order is placed."): back to the read-back left.
                        yield said
                        self.navigate_back()
                        settled = left
                        continue
                    if beside is not None:
                        # Then what they asked another agent for beside their yes: "... I'll have a kettle instead".
                        yield said
                        self.change_agent(beside[0])
                        settled = beside[1]
                        continue
                    self._warm(agent)
                    yield said
                    return

    async def _checked_completion(self, agent: Agent, entered: bool = False) -> AsyncIterator[str | Outcome]:
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
        tools = tuple(t.spec() for t in self.tools_of(agent).values())
        view = self._view(agent) if messages is None else messages
        required = bool(tools) and (agent.tool_only or (entered and agent.tool_on_entry))
        return CompletionRequest(agent.name, self.client_id, tuple(view), tools, required)

    def _warm(self, agent: Agent) -> None:
        """Let the agent's server read the history the model has not seen (the tool result and its say line)."""
        provider = self.registry.providers[agent.provider]
        if isinstance(provider, PromptCache):
            read = functools.partial(provider.warm, self.completion_request(agent))  # the history as it is now
            self._warming = asyncio.ensure_future(_after(self._warming, read))
            self._reads.add(self._warming)
            self._warming.add_done_callback(self._reads.discard)

    async def _warmed(self) -> None:
        """Wait for this session's warm read before asking the model, so the two do not race for the server's
        threads (a plain yes asks no model: it does not wait). Shielded: a barge-in cancels the turn, not the
        read. Other calls' reads and turns still share the server."""
        if self._warming is not None:
            with contextlib.suppress(Exception):  # a failed read only cost time
                await asyncio.shield(self._warming)
            self._warming = None

    def tools_of(self, agent: Agent) -> dict[str, Tool]:
        return {name: self.registry.tools[name] for name in agent.tools}

    def tool_context(self, agent: Agent) -> ToolContext:
        return ToolContext(self.client_id, agent.name, self, self.metadata, self.session_id)

    def _result_reply(self, calls: Sequence[ToolCall], results: dict[str, str], agent: Agent) -> str | None:
        """The last result's "say" line when every call was to a tool whose say line is the reply, else None."""
        if not all(self.registry.tools[c.name].says_result for c in calls):
            return None
        with contextlib.suppress(ValueError, AttributeError):
            say = json.loads(results[_call_key(agent, calls[-1])]).get("say")
            if isinstance(say, str) and say and not spoken_text_errors(say):
                return say
        return None

    def _asking_more(self, say: str) -> str:
        """A done write's say line, then the question for what else, unless it asks one or the call is handed on."""
        if not self.config.after_done or say.rstrip().endswith("?") or self.escalated() or self.ended():
            return say
        return f"{say} {self.config.after_done}"

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
        context = self.tool_context(agent)
        # Shielded: a tool that writes an order finishes (or fails) as a whole even if the caller barges in,
        # and its result is recorded, so the history never holds a call without its result.
        task = asyncio.ensure_future(asyncio.wait_for(tool.call(call.arguments, context), self.config.tool_timeout))
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            self.record_tool(agent, call, await _settle(task), context)
            raise
        except Exception as error:  # noqa: BLE001 - a tool's failure is news for the model, not a crash of the call
            # The message may quote what the caller said ("no order with ..."): DEBUG only; the event keeps it.
            log.warning("tool failed client=%s tool=%s error=%s", self.client_id, call.name, type(error).__name__)
            log.debug("tool failed client=%s tool=%s error=%r", self.client_id, call.name, error)
            result = {"error": f"the tool failed: {error}"}
        text = result_text(result)
        self.record_tool(agent, call, text, context)
        return text

    def record_tool(self, agent: Agent, call: ToolCall, result: str, context: ToolContext) -> None:
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
        router = self.steps.router(agent)
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
        self.outcome: Outcome | None = None
        self.provider_failed = False
        # Sentences not spoken because they (or one before them) may not reach the caller's ear.
        self.held: list[str] = []
        self.looping = False
        self.completion: Completion | None = None
        # Every one of the caller's turns: the 1.5B, told it repeated their last words, said their first (blind25).
        self.caller_turns = [f" {_words(m.content)} " for m in session.get_user_history()]
        # What the agent may repeat as a promise: its instructions and what its tools returned; as a fact (a number,
        # an e-mail address), also what the caller said.
        self.grounds = " ".join([agent.prompt, *agent.system, *(m.content for m in messages if m.role == "tool")])
        self.facts = " ".join([self.grounds, *(m.content for m in messages if m.role == "user")])
        # Whether an order or a return was written in the call: only then may the reply say one is done.
        self.written = writes_done(session.events, session.registry.tools)

    async def run(self) -> AsyncGenerator[str, None]:
        """Yield each sentence once it may be spoken; then judge the whole output."""
        tools = self.session.tools_of(self.agent)
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
        if self.errors and all(CLAIMED_DONE in error for error in self.errors):
            completion = self._claim_dropped(completion, tools)
        if not self.errors:
            context = self.session.tool_context(self.agent)
            self.errors = tool_call_errors(completion, tools, context)
            if self.errors and (asking := asked_first(completion, self.errors, tools, context)) is not None:
                self.session._record(Rescued(self.agent.name, "read_back_first", "; ".join(self.errors)))
                completion, self.errors = asking, []
        if not self.errors and not completion.tool_calls and not self.said:
            self.errors = spoken_text_errors("")
        if self.errors:
            self.feedback = _feedback(self.agent.name, completion, self.errors)
        else:
            self.outcome = Outcome(completion.tool_calls)

    def _claim_dropped(self, completion: Completion, tools: dict[str, Tool]) -> Completion:
        """A write said done that no tool made is not said. Beside the tool calls that do it, they speak for it; else,
        on a read-back the caller's words left unsettled, it is read back again (no generation: a repair cost the
        1.5B another 5-10 s); else the model is told."""
        if completion.tool_calls:
            self.errors = []
            return completion
        history = self.session.get_agent_history(self.agent.name)
        last = max((i for i, message in enumerate(history) if message.role == "user"), default=-1)
        proposal = pending_proposal(history[: last + 1])  # the words said before the claim came after the caller's
        if proposal is None:
            return completion
        arguments = {k: v for k, v in proposal.get("arguments", {}).items() if k != "confirmed"}
        again = Completion(" ".join(self.said), (ToolCall("again_0", str(proposal["tool"]), arguments),))
        if tool_call_errors(again, tools, self.session.tool_context(self.agent)):
            return completion
        self.session._record(Rescued(self.agent.name, "read_back_again", "; ".join(self.errors)))
        self.errors = []
        return again

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
            # Two sentences of the caller's own words said back are a parrot, not a preface to a tool call: the 1.5B
            # went on through a 60-word first turn for 20-25 s (blind25), so the stream stops and the model is told.
            self.looping = sum(bool(self._echo_errors(held)) for held in self.held) >= 2
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
            or done_claim_errors(sentence, self.written)
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
        if len(words.split()) >= 4 and any(f" {words} " in said for said in self.caller_turns):
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
