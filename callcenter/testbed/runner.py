"""One trial: a fresh shop, the scenario's caller against one LLM, then the score.

A trial passes only when every check was made and held: a turn that could not be taken (its condition never
came up, the call had ended) is a failure, never a skipped check. What the backend itself cannot do or report
(callcenter.testbed.trial_shop) is said beside the result: a scenario it cannot run is skipped, a check it cannot
make is listed as unchecked.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from callcenter.agents import DEFAULT_SWARM, SWARM
from callcenter.app import App, agents_registry
from callcenter.config import Config
from callcenter.shop import Order, Shop
from callcenter.swarm_file import SwarmFile
from callcenter.testbed import checks
from callcenter.testbed.llms import OpenLLM
from callcenter.testbed.rules import SpeakingRules
from callcenter.testbed.scenario import Scenario, Turn, pattern, render, render_value
from callcenter.testbed.state import ShopState
from callcenter.testbed.textcall import CallOver, TextCall, TurnResult
from callcenter.testbed.trial_shop import BuiltInStore, ShopUnderTest
from swarm import Event, Registry, Rescued, Session, ToolCallRepaired, ValidationFailed

if TYPE_CHECKING:  # the phone path's imports (the voice server, the speech models) cost seconds in text mode
    from callcenter.testbed.phonecall import PhoneLine

log = logging.getLogger(__name__)
# Answers to side questions a conditional turn may need before its condition comes up.
MAX_DETOURS = 3


@dataclass
class TrialResult:
    llm: str  # the LLM spec as given (LLMSpec.text)
    scenario: str
    trial: int
    passed: bool
    failures: list[str]
    turn_latency_s: list[float]
    duration_s: float
    metrics: dict[str, int] = field(default_factory=dict)
    transcript: list[list[str]] = field(default_factory=list)
    # The backend could not run this scenario at all (why): neither passed nor failed, left out of pass^k.
    skipped: str = ""
    # Checks the backend could not make (why): the trial passed or failed on the others.
    unchecked: list[str] = field(default_factory=list)
    # The session's events (hand-overs, tool calls and results, refusals, repairs): why a trial went as it did.
    events: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        # The --json key for the LLM spec stays "brain", first in each run: that format is fixed, and CI parses it.
        record = asdict(self)
        return {"brain": record.pop("llm"), **record}


async def run_trial(
    scenario: Scenario,
    llm: OpenLLM,
    trial: int,
    folder: Path,
    expected: ShopState,
    config: Config,
    phone: PhoneLine | None = None,
    *,
    shop: ShopUnderTest | None = None,
    swarm: SwarmFile | None = None,
) -> TrialResult:
    """In text (phone None) or through the whole phone path: a VoiceServer on the trial's shop, called over SIP.
    `shop`: the backend (default: a fresh built-in store per trial); `swarm`: the swarm file (default: the demo's)."""
    started = time.monotonic()
    name = f"{scenario.id}.{_slug(llm.spec.text)}.{trial}"
    under_test = shop or BuiltInStore()
    reason = under_test.skipped(scenario)
    if reason is not None:
        return TrialResult(llm.spec.text, scenario.id, trial, False, [], [], 0.0, skipped=reason)
    # An order system over HTTP is asked with a blocking client: off the event loop (it may be served from it).
    opened = await asyncio.to_thread(under_test.open, folder, name, scenario)
    # Over HTTP the scenario names the backend's products (its SKUs), as the agents will.
    scenario, values = opened.scenario, opened.values
    swarm = swarm or DEFAULT_SWARM
    failures: list[str] = []
    latencies: list[float] = []
    call: Caller | None = None
    try:
        registry = agents_registry(config, opened.backend, llm.providers(values), swarm)
        if phone is None:
            session = registry.session(
                f"eval-{scenario.id}-{trial}", SWARM, metadata={"caller": scenario.caller}, config=config.session
            )
            call = TextCall(session)
            try:
                await _play(scenario, call, values, failures, latencies)
            finally:
                # The caller has hung up, as a phone call's end disposes it: the warm read of its last turn is
                # cancelled, not left to hold the server through the next trial's first turns (blind34 Port
                # Talbot: a read of 1,916 tokens 10 s into the next trial, whose first model turn timed out).
                session.dispose()
        else:
            try:
                # The voice server's App holds a built-in store; over HTTP it is an empty one the tools never see.
                store = opened.backend if isinstance(opened.backend, Shop) else Shop(":memory:", seed_catalogue=False)
                try:
                    app = App(config, store, registry, llm.description, backend=opened.backend)
                    async with phone.call(app, scenario.caller, folder, name, scenario.language) as call:
                        await _play(scenario, call, values, failures, latencies)
                finally:
                    if store is not opened.backend:
                        store.close()
            except Exception as error:  # the phone path failed: the trial could not be checked
                log.exception("phone call failed scenario=%s", scenario.id)
                failures.append(f"the phone call failed: {error}")
        orders = await asyncio.to_thread(opened.backend.find_orders, customer_phone=scenario.caller, limit=50)
        rules = SpeakingRules.build(
            await asyncio.to_thread(opened.products),
            registry.tools,
            _prompts(registry),
            [cents for o in orders for cents in _parts_of(o)],
            [*(a.unclear for a in swarm.agents.values()), *config.session.placeholders, config.session.apology],
        )
    finally:
        opened.close()
    failures += (await asyncio.to_thread(opened.state)).differences(expected)
    if call is not None:
        failures += score_events(scenario, call, values, rules)
    return TrialResult(
        llm.spec.text,
        scenario.id,
        trial,
        not failures,
        failures,
        latencies,
        round(time.monotonic() - started, 3),
        trial_metrics(scenario, call.events if call is not None else []),
        [list(line) for line in call.transcript] if call is not None else [],
        unchecked=opened.unchecked(),
        events=[event.to_dict() for event in call.events] if call is not None else [],
    )


class Caller(Protocol):
    """The caller's side of a call as the runner plays it: TextCall (text) or PhoneCall (audio)."""

    session: Session
    ended_by: str | None
    transcript: list[tuple[str, str]]

    @property
    def events(self) -> list[Event]: ...
    @property
    def last_reply(self) -> str: ...
    @property
    def transferred(self) -> bool: ...
    async def say(self, text: str) -> TurnResult: ...
    async def dtmf(self, keys: str) -> TurnResult: ...
    def silence(self, seconds: float) -> TurnResult | Awaitable[TurnResult]: ...


async def _play(
    scenario: Scenario, call: Caller, values: dict[str, str], failures: list[str], latencies: list[float]
) -> None:
    reactions = {index: r.times for index, r in enumerate(scenario.reactions)}
    where = "the answers after the last turn"
    try:
        for number, turn in enumerate(scenario.turns, 1):
            where = f"turn {number} ({turn.describe()})"
            if turn.when and not await _await_condition(scenario, call, turn, reactions, values, latencies, failures):
                failures.append(f"{where}: the agent never asked; its last reply: {call.last_reply!r}")
                return
            result = await _take(call, turn, values)
            _timed(result, turn.budget_s or scenario.expect.turn_budget_s, number, latencies, failures)
        where = "the answers after the last turn"
        # After the last turn the caller still answers what the agent asks (a second read-back, say).
        for _ in range(MAX_DETOURS):
            if not await _detour(scenario, call, reactions, values, latencies, failures):
                return
    except CallOver as over:
        failures.append(f"{where} was never taken: {over}")
    except Exception as error:  # a crash in a turn is a failed trial, reported, not an aborted eval
        log.exception("turn failed scenario=%s", scenario.id)
        failures.append(f"{where} raised {error!r}")


async def _await_condition(
    scenario: Scenario,
    call: Caller,
    turn: Turn,
    reactions: dict[int, int],
    values: dict[str, str],
    latencies: list[float],
    failures: list[str],
) -> bool:
    """Answer the agent's side questions with the scenario's if_asked rules until it says what `turn` waits for."""
    for _ in range(MAX_DETOURS + 1):
        if pattern(turn.when or "").search(call.last_reply):
            return True
        if not await _detour(scenario, call, reactions, values, latencies, failures):
            return False
    return False


async def _detour(
    scenario: Scenario,
    call: Caller,
    reactions: dict[int, int],
    values: dict[str, str],
    latencies: list[float],
    failures: list[str],
) -> bool:
    """Answer the agent's last reply with the first if_asked rule it matches (and has uses left); False: none."""
    if call.ended_by is not None:
        return False
    index = next(
        (i for i, r in enumerate(scenario.reactions) if reactions[i] and pattern(r.when).search(call.last_reply)), None
    )
    if index is None:
        return False
    reactions[index] -= 1
    result = await call.say(render(scenario.reactions[index].say, values))
    _timed(result, scenario.expect.turn_budget_s, 0, latencies, failures)
    return True


async def _take(call: Caller, turn: Turn, values: dict[str, str]) -> TurnResult:
    if turn.say is not None:
        return await call.say(render(turn.say, values))
    if turn.dtmf is not None:
        return await call.dtmf(render(turn.dtmf, values))
    result = call.silence(turn.silence_s or 0.0)
    return await result if inspect.isawaitable(result) else result


def _timed(result: TurnResult, budget: float | None, number: int, latencies: list[float], failures: list[str]) -> None:
    if result.latency_s is None:
        return
    latencies.append(round(result.latency_s, 4))
    if budget is not None and result.latency_s > budget:
        which = f"turn {number}" if number else "a side answer"
        failures.append(f"{which} took {result.latency_s:.2f} s, over its budget of {budget:g} s")


def score_events(scenario: Scenario, call: Caller, values: dict[str, str], rules: SpeakingRules) -> list[str]:
    """Every expectation on the call's events and words that does not hold."""
    events, expect = call.events, scenario.expect
    problems = [checks.check_handoffs(events, expect.handoffs)]
    if expect.no_handoff:
        problems.append(checks.check_no_handoff(events))
    problems += [checks.check_called(events, c.tool, render_value(c.arguments, values)) for c in expect.called]
    problems += [checks.check_not_called(events, tool) for tool in expect.never_called]
    problems += [checks.check_says(events, regex) for regex in expect.says]
    problems += [checks.check_never_says(events, regex) for regex in expect.never_says]
    if expect.transfer is not None and call.transferred != expect.transfer:
        escalation = call.session.escalated()
        problems.append(
            f"unexpected transfer to a person ({escalation.text})" if escalation else "expected a transfer to a person"
        )
    if expect.ended is not None and (call.ended_by is not None) != expect.ended:
        problems.append("expected the call to end" if expect.ended else f"the call ended ({call.ended_by})")
    # An LLM that gave no reply is not judged by what the apology does (it hands over to a person, which is
    # what some scenarios expect): the trial could not be checked, so it fails.
    problems += [
        f"the LLM gave no reply ({e.detail})" for e in events if isinstance(e, Rescued) and e.stage == "provider_error"
    ]
    found = [p for p in problems if p is not None]
    for text in checks.said(events):
        found += rules.violations(text)
    return found


def _parts_of(order: Order) -> set[int]:
    """What some of an order's lines come to, each line whole or in part: a refund of two lines of three ("the monitor
    and the laptop stand go back ... the refund of 311 euros") is a sum no one product costs (blind34)."""
    sums = {0}
    for line in order.lines:
        sums = {s + line.unit_price_cents * k for s in sums for k in range(line.quantity + 1)}
    return sums - {0}


def trial_metrics(scenario: Scenario, events: list[Event]) -> dict[str, int]:
    """Counts the report adds up: tool selection, argument errors, rescues, repairs."""
    wanted = [c.tool for c in scenario.expect.called] + [f"navigate_to_{a}" for a in scenario.expect.handoffs]
    called = {c.name for c in checks.tool_calls(events)}
    first = after = 0
    previous: Event | None = None
    for event in events:
        if isinstance(event, ValidationFailed):
            # A failure right after a failure is one the model's feedback did not fix.
            if isinstance(previous, ValidationFailed):
                after += 1
            else:
                first += 1
        previous = event
    stages = [e.stage for e in events if isinstance(e, Rescued)]
    return {
        "tools_expected": len(wanted),
        "tools_selected": sum(name in called for name in wanted),
        "arg_errors_first_try": first,
        "arg_errors_after_feedback": after,
        "rescues": stages.count("flush"),
        "placeholders": stages.count("placeholder"),
        "provider_errors": stages.count("provider_error"),
        "repairs": sum(isinstance(e, ToolCallRepaired) for e in events),
    }


def _prompts(registry: Registry) -> list[str]:
    return [text for agent in registry.agents.values() for text in (agent.prompt, *agent.system)]


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)[:40]
