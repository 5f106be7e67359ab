"""What the supervisor's page is shown of a call: masked by default, as JSON-ready dicts."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from callcenter.call_records import CallRecord
from callcenter.redact import redact
from callcenter.shop_backend import ShopBackend
from callcenter.store.domain import Order, Return
from callcenter.verification import MASKED_ANSWER, VERIFYING_TOOLS
from swarm import Event, ToolCalled, UserText

# The page's handle on a call (?id=, the buttons): shown as it is, or the page could not name the call. Everything
# else is masked by what it holds, whatever its key: a card number spoken as an "order_number" is still a card.
HANDLE_KEYS = frozenset({"call_id"})
CALLER_KEYS = frozenset({"caller", "called"})
# The tools' argument that holds the caller's answer to the security question: a secret, not merely personal, so
# masked even on a page that shows callers' words in clear (privacy.mask_supervisor off), live and past.
FACTOR_KEYS = frozenset({"verification"})
MIN_ANSWER_CHARS = 3
SHOWN_DIGITS = 4
# What a PBX puts where the caller's number would be when it has none: not an identity, shown as it is.
NO_NUMBER = frozenset({"", "anonymous", "unknown", "unavailable", "restricted", "private", "withheld"})


def masked_number(number: str) -> str:
    """A caller's identity with only the last digits of a number shown ("•••0321"); a name or a SIP user
    without digits is an identity too ("•••"), only "anonymous" and the like stay."""
    if number.strip().lower() in NO_NUMBER:
        return number
    digits = re.sub(r"\D", "", number)
    shown = digits[-SHOWN_DIGITS:] if len(digits) > SHOWN_DIGITS + 2 else ""
    return "•" * 3 + shown


def shown(value: Any, *, masked: bool, region: str = "DE", key: str = "") -> Any:
    """The value with everything a caller may have said redacted (when masked), however deep, under any key;
    national phone numbers as written in `region` (privacy.phone_region). An answer to the security question is
    masked always."""
    if key in FACTOR_KEYS and isinstance(value, str) and value:
        return MASKED_ANSWER
    if isinstance(value, dict) and not masked:
        return {k: shown(v, masked=masked, region=region, key=k) for k, v in value.items()}
    if isinstance(value, list) and not masked:
        return [shown(v, masked=masked, region=region) for v in value]
    if not masked or key in HANDLE_KEYS:
        return value
    if key in CALLER_KEYS and isinstance(value, str):
        return masked_number(value)
    if isinstance(value, str):
        return redact(value, region)
    if isinstance(value, dict):
        # Keys are the tool's or the model's words too ({"4111 1111 1111 1111": ...} from a model that erred).
        return {
            redact(k, region) if isinstance(k, str) else k: shown(v, masked=masked, region=region, key=k)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [shown(v, masked=masked, region=region) for v in value]
    return value


def summary(record: CallRecord) -> dict[str, Any]:
    return {
        "call_id": record.call_id,
        "caller": record.caller,
        "called": record.called,
        "started_at": record.started_at,
        "ended_at": record.ended_at,
        "disposition": record.disposition,
        "agents": record.agents,
        "turns": len(record.turns),
        "orders": record.orders,
        "returns": record.returns,
    }


def past_call(record: CallRecord, events: list[Event], shop: ShopBackend) -> dict[str, Any]:
    """A finished call: its transcript with the tool calls in place, the shop rows it made, its latencies."""
    details = asdict(record)
    details.pop("events")
    recording = details.pop("recording")
    return {
        **summary(record),
        **{k: v for k, v in details.items() if k.startswith("recording_")},
        "end_reason": record.end_reason,
        "node": record.node,
        "verifications": record.verifications,
        "items": interleaved(record.transcript, events),
        "turns": record.turns,
        "recording": bool(recording) and Path(recording).is_file(),
        "order_rows": [order_row(o) for n in record.orders for o in shop.find_orders(order_number=n, limit=1)],
        "return_rows": [return_row(r) for n in record.returns if (r := shop.find_return(n)) is not None],
    }


def interleaved(transcript: list[dict[str, Any]], events: list[Event]) -> list[dict[str, Any]]:
    """Transcript lines and tool calls in one list: each tool call after the caller's line that led to it.

    The record keeps no time for a tool call; the session's events say how many caller turns came before it.
    The caller's answers to the security question are masked: the tools' argument, the caller's line that led to
    a check (the model may have passed on only part of it: "it's eight oh three three one"), and the answer
    wherever else a line holds it (typed on the keypad, said again)."""
    tools: dict[int, list[dict[str, Any]]] = {}
    answers: set[str] = set()
    answered: set[int] = set()  # the caller turns that led to a check
    user_turns = 0
    for event in events:
        if isinstance(event, UserText):
            user_turns += 1
        elif isinstance(event, ToolCalled):
            arguments = event.arguments
            answer = arguments.get("verification") if event.name in VERIFYING_TOOLS else None
            if isinstance(answer, str) and answer.strip():
                answers.add(answer.strip())
                answered.add(user_turns)
                arguments = {**arguments, "verification": MASKED_ANSWER}
            tools.setdefault(user_turns, []).append(
                {
                    "kind": "tool",
                    "agent": event.agent,
                    "name": event.name,
                    "arguments": arguments,
                    "result": event.result,
                }
            )
    items: list[dict[str, Any]] = list(tools.pop(0, []))
    caller_lines = 0
    for line in transcript:
        if line.get("who") == "caller":
            caller_lines += 1
        whole = line.get("who") == "caller" and caller_lines in answered
        items.append({"kind": "line", **line, **_masked_text(line.get("text"), answers, whole)})
        if line.get("who") == "caller":
            items += tools.pop(caller_lines, [])
    return items + [tool for turn in sorted(tools) for tool in tools[turn]]


def _masked_text(text: Any, answers: set[str], whole: bool) -> dict[str, Any]:
    if not isinstance(text, str) or not (answers or whole):
        return {}
    if whole:
        return {"text": MASKED_ANSWER}
    # A short answer ("no", "1") would blot out every price and word that holds it: its own line is masked whole.
    for answer in sorted((a for a in answers if len(a) >= MIN_ANSWER_CHARS), key=len, reverse=True):
        text = text.replace(answer, MASKED_ANSWER)
    return {"text": text}


def order_row(order: Order) -> dict[str, Any]:
    return {
        "order_number": order.order_number,
        "status": order.status,
        "created_at": order.created_at.isoformat(),
        "total_cents": order.total_cents,
        "lines": [{"sku": line.sku, "name": line.name, "quantity": line.quantity} for line in order.lines],
    }


def return_row(row: Return) -> dict[str, Any]:
    return {
        "return_number": row.return_number,
        "order_number": row.order_number,
        "sku": row.sku,
        "name": row.product_name,
        "quantity": row.quantity,
        "reason": row.reason,
        "created_at": row.created_at.isoformat(),
        "refund_cents": row.refund_cents,
    }
