"""What the shop tools' results hold, and the words they say them in: prices, codes read digit by digit, lists,
and the proposal a read-back makes (the write the caller's yes runs).

Writes need the caller's explicit yes: without confirmed=true a tool only reads back what it would do and returns it
as a "proposal", which the model (or the offline router) runs again after the yes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from callcenter.shop import Order, Product
from callcenter.store.domain import ShopUnavailable
from swarm import Escalated, Event, ToolCalled, ToolContext, UserText


def euros(cents: int) -> str:
    """A price as it is written: "24.90 euros", "129 euros". The voice says it as a person does ("twenty four euros
    ninety": speech.normalize); the text channel, transcripts and evals read the written form, which callers' checks
    look for ("9.90": two blind suites, written apart, waited for it and not for "9 euros 90")."""
    whole, rest = divmod(cents, 100)
    if rest:
        return f"{whole}.{rest:02d} euros"
    return f"{whole} euro" if whole == 1 else f"{whole} euros"


def caller_of(context: ToolContext) -> str:
    return str(context.metadata.get("caller", ""))


def system_down(context: ToolContext, error: ShopUnavailable) -> dict[str, Any]:
    # The shop's own system (over HTTP) did not answer or refused: an apology, and a person takes over; the tool's
    # result keeps what the system answered, for the call record (never said: it may be JSON or a status line).
    if not any(isinstance(event, Escalated) for event in context.session.events):
        context.session.escalate("backend_unavailable", error.detail[:300])
    say = f"I'm sorry, {error} I'll put you through to a colleague, please hold."
    return {"error": str(error), "backend": error.detail[:300], "say": say}


def joined(things: Iterable[str], article: str = "the ") -> str:
    """ "the A", "the A and the B", "the A, the B and the C"."""
    said = [f"{article}{thing}" for thing in things]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def counted(lines: Sequence[tuple[Product, int]] | Sequence[tuple[str, int]]) -> str:
    """ "1 Wireless mouse and 2 Desk lamps", as the read-backs say it."""
    return joined((amount(q, p.name if isinstance(p, Product) else p) for p, q in lines), article="")


def amount(quantity: int, name: str) -> str:
    """How many of a product, as a person says it: "1 Water bottle", "3 Water bottles" (a read-back of "3 Water
    bottle" was no read-back of three bottles to a blind10 caller)."""
    if quantity == 1:
        return f"1 {name}"
    head, _, last = name.rpartition(" ")
    if last.lower() in _IRREGULAR:
        last = _IRREGULAR[last.lower()]
    elif last.lower().endswith(("x", "ch", "sh", "ss")):
        last += "es"
    elif len(last) > 1 and last[-1].lower() == "y" and last[-2].lower() not in "aeiou":
        last = last[:-1] + "ies"
    elif not last.lower().endswith("s"):  # "headphones", "earbuds", "shoes": already more than one
        last += "s"
    return f"{quantity} {head} {last}" if head else f"{quantity} {last}"


_IRREGULAR = {"mouse": "mice"}


def offered_lines(events: Sequence[Event], tool: str) -> dict[str, int]:
    """What the offer the caller's last words answer holds (its product codes and how many), if it is `tool`'s."""
    proposal = answered_proposal(events)
    if proposal is None or proposal.get("tool") != tool:
        return {}
    arguments = proposal.get("arguments", {})
    sku, quantity, also = arguments.get("sku"), arguments.get("quantity", 1), arguments.get("also") or {}
    if not isinstance(sku, str) or not isinstance(quantity, int) or not isinstance(also, dict):
        return {}
    return {sku: quantity, **{k: v for k, v in also.items() if isinstance(k, str) and isinstance(v, int)}}


def proposed(tool: str, item: str = "", **arguments: Any) -> dict[str, Any]:
    # `item`: the name the read-back said, so an answer that names it again ("Yes, just the headphones.") is known
    # for one (swarm.confirmations.restates_item).
    return {"tool": tool, "arguments": arguments, **({"item": item} if item else {})}


def answered_proposal(events: Sequence[Event]) -> dict[str, Any] | None:
    """The proposal of the last tool result before the caller's last words, if it made one."""
    last_said = max((i for i, e in enumerate(events) if isinstance(e, UserText)), default=-1)
    before = next((e for e in reversed(events[:last_said]) if isinstance(e, ToolCalled)), None)
    return _proposal_of(before) if before is not None else None


def _proposal_of(event: ToolCalled) -> dict[str, Any] | None:
    """The proposal a tool's result made, if it made one."""
    try:
        proposal = json.loads(event.result).get("proposal")
    except (ValueError, AttributeError):
        return None
    return proposal if isinstance(proposal, dict) and isinstance(proposal.get("arguments"), dict) else None


def proposed_orders(events: Sequence[Event]) -> set[str]:
    """The order numbers of every proposal made in the call (read back for a return, agreed or not)."""
    proposals = [p for e in events if isinstance(e, ToolCalled) and (p := _proposal_of(e)) is not None]
    return {n for p in proposals if isinstance(n := p["arguments"].get("order_number"), str)}


def returned_products(events: Sequence[Event]) -> set[str]:
    """The products read back or registered for return in the call."""
    calls = [e for e in events if isinstance(e, ToolCalled)]
    proposals = [p for e in calls if (p := _proposal_of(e)) is not None and p.get("tool") == "create_return"]
    returns = [e.arguments for e in calls if e.name == "create_return"] + [p["arguments"] for p in proposals]
    return {str(arguments["sku"]) for arguments in returns if isinstance(arguments, dict) and arguments.get("sku")}


def placed_orders(events: Sequence[Event]) -> set[str]:
    """The numbers of the orders placed in the call."""
    numbers: set[str] = set()
    for event in events:
        if isinstance(event, ToolCalled) and event.name == "place_order":
            try:
                result = json.loads(event.result)
            except ValueError:
                continue
            found = [result.get("order_number"), *result.get("order_numbers", ())] if isinstance(result, dict) else []
            numbers.update(n for n in found if isinstance(n, str))
    return numbers


def product_json(p: Product) -> dict[str, Any]:
    return {"sku": p.sku, "name": p.name, "price": euros(p.price_cents), "stock": p.stock, "description": p.description}


def order_json(o: Order) -> dict[str, Any]:
    lines = [{"sku": line.sku, "name": line.name, "quantity": line.quantity} for line in o.lines]
    return {"order_number": o.order_number, "date": o.created_at.date().isoformat(), "status": o.status, "lines": lines}


def digits(code: str) -> str:
    """Order codes read digit by digit, as people write them down."""
    return " ".join(code)


# What the 1.5B echoed into `also` of a product ({"sku": ..., "quantity": 3, "name": ...}) or of a read-back's
# proposal ({"tool": 1, "arguments": 1}) (blind10): no product of an order.
_ECHOED = frozenset(
    {"sku", "quantity", "name", "description", "price", "stock", "confirmed", "also", "order_number", "reason"}
    | {"tool", "arguments", "item"}
)


def more_items(sku: str, also: Any) -> dict[str, int]:
    """The more products or lines of `also` beside `sku`, without what the model echoed into it."""
    if not isinstance(also, dict):
        return {}
    return {str(code): count for code, count in also.items() if str(code) not in {sku, *_ECHOED}}
