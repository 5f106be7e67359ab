"""Checks over a session's events: each returns None when it holds, else what went wrong in one sentence.

The scenario scorer and the pytest fixture's `expect` both use these, so a scenario file and a user's own
test mean the same thing by "handed over" or "called with these arguments".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from callcenter.shop import spoken_digits
from callcenter.testbed.scenario import pattern
from swarm import AgentChanged, AssistantText, Event, ToolCalled


def handoffs(events: Sequence[Event]) -> list[str]:
    return [e.agent for e in events if isinstance(e, AgentChanged)]


def tool_calls(events: Sequence[Event]) -> list[ToolCalled]:
    return [e for e in events if isinstance(e, ToolCalled)]


def said(events: Sequence[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, AssistantText)]


def check_handoffs(events: Sequence[Event], agents: Sequence[str]) -> str | None:
    """The agents were handed over to in this order (other hand-overs may come between)."""
    seen = handoffs(events)
    rest = iter(seen)
    if all(agent in rest for agent in agents):
        return None
    return f"expected hand-over(s) to {' > '.join(agents)}, saw {' > '.join(seen) or 'none'}"


def check_no_handoff(events: Sequence[Event]) -> str | None:
    seen = handoffs(events)
    return None if not seen else f"expected no hand-over, saw {' > '.join(seen)}"


def check_called(events: Sequence[Event], tool: str, arguments: dict[str, Any] | None = None) -> str | None:
    """Some call of `tool` had (at least) these arguments; a call of several products or lines at once (`also`, as
    place_order and create_return take them) counts as a call for each."""
    calls = [c for c in tool_calls(events) if c.name == tool]
    if not calls:
        names = sorted({c.name for c in tool_calls(events)})
        return f"expected a call of {tool}, saw calls of {', '.join(names) or 'no tool'}"
    wanted = arguments or {}
    if any(not argument_mismatches(wanted, line) for c in calls for line in each_line(c.arguments)):
        return None
    seen = "; ".join(json.dumps(c.arguments, ensure_ascii=False, sort_keys=True) for c in calls)
    return f"expected {tool} with {json.dumps(wanted, ensure_ascii=False, sort_keys=True)}, it was called with {seen}"


def each_line(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """A call's arguments as one call per product: {"sku": A, "quantity": 1, "also": {B: 2}} is A x1 and B x2."""
    also = arguments.get("also")
    if not isinstance(also, dict) or not also:
        return [arguments]
    one = {k: v for k, v in arguments.items() if k != "also"}
    return [one, *({**one, "sku": sku, "quantity": quantity} for sku, quantity in also.items())]


def check_not_called(events: Sequence[Event], tool: str) -> str | None:
    calls = [c for c in tool_calls(events) if c.name == tool]
    if not calls:
        return None
    return f"{tool} must never be called, it was called with {json.dumps(calls[0].arguments, ensure_ascii=False, sort_keys=True)}"


def check_says(events: Sequence[Event], regex: str) -> str | None:
    if any(pattern(regex).search(text) for text in said(events)):
        return None
    return f"no reply matched /{regex}/"


def check_never_says(events: Sequence[Event], regex: str) -> str | None:
    for text in said(events):
        found = pattern(regex).search(text)
        if found:
            return f"said {found.group(0)!r}, which must never be said (/{regex}/), in: {text!r}"
    return None


def argument_mismatches(wanted: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Arguments in `wanted` that `actual` lacks or has otherwise; strings compare without case, and a
    number written with digits matches however its digits were spaced ("1 2 3 4 5" is 12345)."""
    return [name for name, value in wanted.items() if name not in actual or not _same(value, actual[name])]


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str) and isinstance(actual, (str, int)) and not isinstance(actual, bool):
        if expected.isdigit():
            return spoken_digits(str(actual)) == expected
        return isinstance(actual, str) and expected.casefold().strip() == actual.casefold().strip()
    return bool(expected == actual and type(expected) is type(actual))


_WORDS = re.compile(r"[a-z']+")


def prompt_leaks(text: str, prompts: Sequence[str], sayable: Sequence[str] = (), window: int = 8) -> str | None:
    """A run of `window` words of an agent's instructions said to the caller: the prompt was revealed.
    Lines the agents are meant to say (`sayable`: their fixed questions, which prompts quote) do not count."""
    spoken = " ".join(_WORDS.findall(text.lower()))
    for line in sayable:
        spoken = spoken.replace(" ".join(_WORDS.findall(line.lower())), "|")
    for prompt in prompts:
        words = _WORDS.findall(prompt.lower())
        for start in range(len(words) - window + 1):
            run = " ".join(words[start : start + window])
            if run in spoken:
                return run
    return None
