"""Scenario files: one TOML file is one scenario, a directory of them is a suite.

A scenario says what the caller does (turns: plain, conditional, typed digits, silence), how the shop looks
before the call (past orders, sold-out products), and what must be true after it: the database's end state
(the reference actions replayed on a fresh shop, the τ-bench way), the events, what must never be said and
how long a turn may take. Everything is checked at load time, so a typo fails the file, never a trial.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callcenter.errors import CallCenterError

DEFAULT_CALLER = "+44 20 7946 0321"
AGENT_NAMES = ("triage", "sales", "refund")
# Conditions callers' turns often wait for, by name; any other `when` is a regular expression.
CONDITIONS = {
    "asks_to_confirm": (
        r"\b(shall i|should i|do you want me to|would you like me to|can i go ahead|confirm|go ahead"
        r"|(is|does) that (sound )?(right|correct|good)|would you like to (order|buy|place|proceed"
        r"|purchase|go ahead|start the return|return (it|them|this)))\b[^.!]*\?"
    ),
    "asks_order_number": r"\border number\b|\bnumber of (the|your) order\b",
    # The security question before another phone's order is read (callcenter.verification).
    "asks_postcode": r"\bpost ?code\b|\be-?mail address\b",
    "asks_buy_or_return": r"\bbuy\b.*\breturn\b|\breturn\b.*\bbuy\b",
    "asks_what_product": r"\b(what|which) (product|item)\b|\blooking for\b|\bdescribe\b",
}
_TEMPLATE = re.compile(r"\{([a-z_]+(?:\.[A-Za-z0-9_-]+)*)\}")


class ScenarioError(CallCenterError):
    """A scenario file that cannot be run as written; the message names the file and the key."""


@dataclass(frozen=True)
class SeedOrder:
    """A past purchase in the shop before the call; `name` is how turns and actions refer to its number."""

    name: str
    items: tuple[tuple[str, int], ...]
    days_ago: float = 6.0
    phone: str | None = None  # None: the scenario's caller
    postcode: str = "10115"  # the delivery's, what a caller from another phone proves the order with
    email: str = ""


@dataclass(frozen=True)
class Turn:
    """One thing the caller does: say text, type digits, or stay silent for some seconds.

    With `when`, the caller waits for the agent to say something matching it (answering `if_asked` rules
    meanwhile); if the agent never does, the trial fails: an answer to a question never asked proves nothing.
    """

    say: str | None = None
    dtmf: str | None = None
    silence_s: float | None = None
    when: str | None = None  # a regular expression (or a CONDITIONS name) the agent's last reply must match
    budget_s: float | None = None  # this turn's latency budget; None: the scenario's

    @property
    def kind(self) -> str:
        return "say" if self.say is not None else "dtmf" if self.dtmf is not None else "silence"

    def describe(self) -> str:
        what = {
            "say": f"say {self.say!r}",
            "dtmf": f"type {self.dtmf!r}",
            "silence": f"stay silent {self.silence_s} s",
        }[self.kind]
        return f"when the agent matches /{self.when}/, {what}" if self.when else what


@dataclass(frozen=True)
class Reaction:
    """A scenario-wide answer to a question the agent may ask on the way (at most `times` times)."""

    when: str
    say: str
    times: int = 1


@dataclass(frozen=True)
class Action:
    """A reference action: a call of the shop's own write functions, replayed on a fresh shop."""

    action: str  # "place_order" or "create_return"
    items: tuple[tuple[str, int], ...] = ()
    order: str | None = None  # a SeedOrder's name, for create_return
    sku: str | None = None
    quantity: int = 1


@dataclass(frozen=True)
class ToolExpectation:
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Expectations:
    handoffs: tuple[str, ...] = ()  # agents handed over to, in this order (others may come between)
    no_handoff: bool = False  # the call stays with triage
    called: tuple[ToolExpectation, ...] = ()
    never_called: tuple[str, ...] = ()
    transfer: bool | None = None  # escalated to a person; None: not checked
    ended: bool | None = None  # the agent or the silence ended the call
    says: tuple[str, ...] = ()  # patterns some reply must match
    never_says: tuple[str, ...] = ()  # patterns no reply may match (beside the global rules)
    turn_budget_s: float | None = None


@dataclass(frozen=True)
class Scenario:
    id: str
    path: Path
    description: str
    caller: str
    turns: tuple[Turn, ...]
    reactions: tuple[Reaction, ...] = ()
    seed_orders: tuple[SeedOrder, ...] = ()
    sold_out: tuple[str, ...] = ()
    reference: tuple[Action, ...] = ()
    expect: Expectations = field(default_factory=Expectations)
    tags: tuple[str, ...] = ()
    language: str = "en"  # what the caller speaks (ISO 639-1): in audio, the voice that says it


def pattern(when: str) -> re.Pattern[str]:
    return re.compile(CONDITIONS.get(when, when), re.IGNORECASE | re.DOTALL)


def render(text: str, values: dict[str, str]) -> str:
    """Fill `{caller}`, `{orders.NAME}` and `{orders.NAME.spoken}` (digits with spaces) from one trial's shop."""

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ScenarioError(f"unknown placeholder {{{key}}}")
        return values[key]

    return _TEMPLATE.sub(one, text)


def render_value(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return render(value, values)
    if isinstance(value, dict):
        return {k: render_value(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, values) for v in value]
    return value


def template_keys(orders: tuple[SeedOrder, ...]) -> set[str]:
    names = {o.name for o in orders}
    return {
        "caller",
        *(f"orders.{n}{part}" for n in names for part in ("", ".spoken", ".postcode", ".postcode.spoken")),
    }


def load_suite(paths: list[str | Path], agents: tuple[str, ...] = AGENT_NAMES) -> list[Scenario]:
    """Scenarios from files and directories (every *.toml in them, by name); ids must be unique. `agents`: the
    swarm's agents, the names [expect] handoffs may use (default: the demo shop's)."""
    files: list[Path] = []
    for item in map(Path, paths):
        if item.is_dir():
            files.extend(sorted(item.glob("*.toml")))
        elif item.is_file():
            files.append(item)
        else:
            raise ScenarioError(f"{item}: no such scenario file or directory")
    if not files:
        raise ScenarioError(f"no scenario files in {', '.join(map(str, paths))}")
    scenarios = [load_scenario(f, agents) for f in files]
    seen: dict[str, Path] = {}
    for s in scenarios:
        if s.id in seen:
            raise ScenarioError(f"{s.path}: the id {s.id!r} is also used by {seen[s.id]}")
        seen[s.id] = s.path
    return scenarios


def load_scenario(path: Path, agents: tuple[str, ...] = AGENT_NAMES) -> Scenario:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return _Reader(path, data, agents).scenario()
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{path}: not valid TOML: {error}") from None
    except (KeyError, TypeError, ValueError, re.error) as error:
        raise ScenarioError(f"{path}: {error}") from None


class _Reader:
    """Reads one file's dict, naming the key in every complaint."""

    def __init__(self, path: Path, data: dict[str, Any], agents: tuple[str, ...] = AGENT_NAMES) -> None:
        self.path, self.data, self.agents = path, data, agents

    def fail(self, message: str) -> ScenarioError:
        return ScenarioError(f"{self.path}: {message}")

    def scenario(self) -> Scenario:
        d = self.data
        self._only(
            d,
            {"id", "description", "caller", "language", "tags", "turn", "if_asked", "setup", "reference", "expect"},
            "the top level",
        )
        setup = d.get("setup", {})
        self._only(setup, {"orders", "sold_out"}, "[setup]")
        orders = tuple(self._seed(i, o) for i, o in enumerate(setup.get("orders", [])))
        if len({o.name for o in orders}) != len(orders):
            raise self.fail("[[setup.orders]] names must be unique")
        turns = tuple(self._turn(i, t) for i, t in enumerate(d.get("turn", [])))
        if not turns:
            raise self.fail("a scenario needs at least one [[turn]]")
        reactions = tuple(Reaction(r["when"], r["say"], int(r.get("times", 1))) for r in d.get("if_asked", []))
        for r in reactions:
            pattern(r.when)
        reference = tuple(self._action(i, a, orders) for i, a in enumerate(d.get("reference", [])))
        scenario = Scenario(
            id=str(d.get("id", self.path.stem)),
            path=self.path,
            description=str(d.get("description", "")),
            caller=str(d.get("caller", DEFAULT_CALLER)),
            turns=turns,
            reactions=reactions,
            seed_orders=orders,
            sold_out=tuple(str(s).upper() for s in setup.get("sold_out", [])),
            reference=reference,
            expect=self._expect(d.get("expect", {})),
            tags=tuple(d.get("tags", ())),
            language=self._language(d.get("language", "en")),
        )
        self._check_templates(scenario)
        return scenario

    def _language(self, value: Any) -> str:
        if not isinstance(value, str) or not re.fullmatch(r"[a-z]{2}", value):
            raise self.fail(f'language is an ISO 639-1 code such as "de", not {value!r}')
        return value

    def _only(self, table: dict[str, Any], allowed: set[str], where: str) -> None:
        unknown = set(table) - allowed
        if unknown:
            raise self.fail(
                f"unknown key(s) {', '.join(sorted(unknown))} in {where}; allowed: {', '.join(sorted(allowed))}"
            )

    def _seed(self, index: int, o: dict[str, Any]) -> SeedOrder:
        self._only(o, {"name", "items", "days_ago", "phone", "postcode", "email"}, f"[[setup.orders]] #{index + 1}")
        return SeedOrder(
            str(o["name"]),
            _items(o["items"]),
            float(o.get("days_ago", 6.0)),
            o.get("phone"),
            str(o.get("postcode", SeedOrder.postcode)),
            str(o.get("email", "")),
        )

    def _turn(self, index: int, t: dict[str, Any]) -> Turn:
        self._only(t, {"say", "dtmf", "silence_s", "when", "budget_s"}, f"[[turn]] #{index + 1}")
        kinds = [k for k in ("say", "dtmf", "silence_s") if k in t]
        if len(kinds) != 1:
            raise self.fail(
                f"[[turn]] #{index + 1} needs exactly one of say, dtmf, silence_s (it has {kinds or 'none'})"
            )
        if "when" in t:
            pattern(t["when"])
        budget = t.get("budget_s")
        silence = t.get("silence_s")
        return Turn(
            t.get("say"),
            t.get("dtmf"),
            None if silence is None else float(silence),
            t.get("when"),
            None if budget is None else float(budget),
        )

    def _action(self, index: int, a: dict[str, Any], orders: tuple[SeedOrder, ...]) -> Action:
        where = f"[[reference]] #{index + 1}"
        kind = a.get("action")
        if kind == "place_order":
            self._only(a, {"action", "items"}, where)
            return Action(kind, items=_items(a["items"]))
        if kind == "create_return":
            self._only(a, {"action", "order", "sku", "quantity"}, where)
            if a["order"] not in {o.name for o in orders}:
                raise self.fail(f"{where}: order {a['order']!r} is not one of the [[setup.orders]]")
            return Action(kind, order=a["order"], sku=str(a["sku"]).upper(), quantity=int(a.get("quantity", 1)))
        raise self.fail(f"{where}: action must be place_order or create_return, not {kind!r}")

    def _expect(self, e: dict[str, Any]) -> Expectations:
        allowed = {
            "handoffs",
            "no_handoff",
            "called",
            "never_called",
            "transfer",
            "ended",
            "says",
            "never_says",
            "turn_budget_s",
        }
        self._only(e, allowed, "[expect]")
        for agent in e.get("handoffs", []):
            if agent not in self.agents:
                raise self.fail(f"[expect] handoffs: {agent!r} is not an agent ({', '.join(self.agents)})")
        called = tuple(ToolExpectation(c["tool"], dict(c.get("arguments", {}))) for c in e.get("called", []))
        for text in (*e.get("says", []), *e.get("never_says", [])):
            pattern(text)
        budget = e.get("turn_budget_s")
        return Expectations(
            handoffs=tuple(e.get("handoffs", ())),
            no_handoff=bool(e.get("no_handoff", False)),
            called=called,
            never_called=tuple(e.get("never_called", ())),
            transfer=e.get("transfer"),
            ended=e.get("ended"),
            says=tuple(e.get("says", ())),
            never_says=tuple(e.get("never_says", ())),
            turn_budget_s=None if budget is None else float(budget),
        )

    def _check_templates(self, s: Scenario) -> None:
        known = template_keys(s.seed_orders)
        texts = [t.say or t.dtmf or "" for t in s.turns] + [r.say for r in s.reactions]
        texts += [str(v) for c in s.expect.called for v in c.arguments.values()]
        for text in texts:
            for key in _TEMPLATE.findall(text):
                if key not in known:
                    raise self.fail(f"unknown placeholder {{{key}}}; known: {', '.join(sorted(known))}")


def _items(raw: Any) -> tuple[tuple[str, int], ...]:
    items = tuple((str(sku).upper(), int(quantity)) for sku, quantity in raw)
    if not items:
        raise ValueError("items must list at least one [sku, quantity]")
    return items
