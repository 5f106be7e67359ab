"""The tools the shop's agents call. Results are JSON for the model, with a "say" line fit for the ear.

Writes need the caller's explicit yes: without confirmed=true a tool only reads back what it would do
and returns it as a "proposal", which the model (or the offline router) runs again after the yes.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

from num2words import num2words

from callcenter.shop import Order, Product, ShopError, spoken_digits
from callcenter.shop_backend import ShopBackend
from callcenter.store.domain import ForAPerson, ShopUnavailable
from callcenter.store.terms import query_terms
from callcenter.verification import (
    CallState,
    Verification,
    an_attempt,
    answer_said,
    call_state,
    named_in_call,
    proves,
    question_open,
)
from swarm import Escalated, Event, Tool, ToolCalled, ToolContext, UserText, tool_from_function
from swarm.confirmations import yes_or_no


def euros(cents: int) -> str:
    """A price as a person says it: "24 euros 90", "129 euros"."""
    whole, rest = divmod(cents, 100)
    unit = "euro" if whole == 1 else "euros"
    return f"{whole} {unit} {rest:02d}" if rest else f"{whole} {unit}"


def _caller(context: ToolContext) -> str:
    return str(context.metadata.get("caller", ""))


def _owns(caller: str, order: Order) -> bool:
    """The identified caller is the order's customer: the whole number, never a part of it."""
    return bool(caller) and order.customer_key == caller


def _to_a_person(context: ToolContext) -> dict[str, Any]:
    # Too many wrong answers: a person takes over (the channel transfers once this is said), and the tools
    # answer nothing more about orders in this call.
    if not any(isinstance(event, Escalated) for event in context.session.events):
        context.session.escalate("verification_failed")
    return {"say": "I'm sorry, I can't confirm that order with you. I'll put you through to a colleague, please hold."}


def _system_down(context: ToolContext, error: ShopUnavailable) -> dict[str, Any]:
    # The shop's own system (over HTTP) did not answer or refused: an apology, and a person takes over; the tool's
    # result keeps what the system answered, for the call record (never said: it may be JSON or a status line).
    if not any(isinstance(event, Escalated) for event in context.session.events):
        context.session.escalate("backend_unavailable", error.detail[:300])
    say = f"I'm sorry, {error} I'll put you through to a colleague, please hold."
    return {"error": str(error), "backend": error.detail[:300], "say": say}


def _said_back(
    orders: list[Order], product: str | None, *, guessed: bool = False, status: bool = False
) -> dict[str, Any]:
    order = orders[0]
    line = _matching_line(order, product)
    when = order.created_at.strftime("%d %B").lstrip("0")
    opening = "I couldn't find that product, but I found" if guessed else "I found"
    found = f"{opening} your order {_digits(order.order_number)} from {when} with the {line.name}."
    if status:
        # An agent that takes no returns (an order-status agent of a swarm file): the order's status, no proposal.
        say = f"{found} Its status is {order.status}. Is there anything else I can help with?"
        return {"orders": [_order(o) for o in orders], "say": say}
    say = f"{found} Shall I start a return for it?"
    proposal = _proposal("create_return", line.name, order_number=order.order_number, sku=line.sku, quantity=1)
    return {"orders": [_order(o) for o in orders], "say": say, "proposal": proposal}


def shop_tools(
    shop: ShopBackend, verification: Verification | None = None, *, status_only: frozenset[str] = frozenset()
) -> list[Tool]:
    """The sales and refund tools, bound to one shop; orders are read and returned only for a caller
    identified or verified as `verification` says (callcenter.verification). To the agents in `status_only` (they
    take no returns) find_order says the order's status instead of proposing a return."""
    policy = verification or Verification()

    def _read_back(orders: list[Order], product: str | None, context: ToolContext, **how: Any) -> dict[str, Any]:
        return _said_back(orders, product, status=context.agent in status_only, **how)

    def search_products(context: ToolContext, query: str, quantity: int = 1) -> dict[str, Any]:
        """Search the catalogue for products matching what the caller asked for.

        Args:
            query: the caller's words about the product, e.g. "wireless headphones"
            quantity: how many the caller wants, if they said
        """
        if not query_terms(query).named():
            # Words that name nothing to look for ("Good afternoon! I'd like to order something, please."): the 1.5B
            # made up a search for "coffee" and offered a grinder. Asked, their next words are the search.
            return {
                "products": [],
                "say": "What product are you looking for?",
                "question": {"tool": "search_products", "arguments": {"quantity": quantity}, "answer": "query"},
            }
        try:
            found = shop.search(query, limit=3)
        except ShopUnavailable as error:
            return _system_down(context, error)
        if not found:
            # An open question: to "Could you describe it another way?" callers said "Yes, please.", which the
            # 1.5B took for a yes to an order (place_order refused: a second completion, 5 s in all).
            return {"products": [], "say": "I'm sorry, I couldn't find that. What else could I look up for you?"}
        offered = _still_offered(context, found)
        if offered is not None:
            return _found([offered], quantity, described=True)
        return _found(found, quantity)

    def _still_offered(context: ToolContext, found: list[Product]) -> Product | None:
        """The product on offer when the caller's words ask about it ("could I charge two phones off it? And what's
        the price of it?") and name none of those found by its kind: the 1.5B searched that sentence, found the
        charging pad and sold it instead of the power bank on offer (blind6). "A case for it" names a case."""
        events = context.session.events
        said = next((e.text for e in reversed(events) if isinstance(e, UserText)), "")
        offered = _offered_sku(events)
        if offered is None or offered == found[0].sku or not _REFERS_BACK.search(said) or yes_or_no(said) is False:
            return None  # "No, not that one": what they turned down is not kept on offer
        spoken = set(re.findall(r"[a-z]+", said.lower()))
        if any(_kind(p) in spoken or f"{_kind(p)}s" in spoken for p in found):
            return None
        return shop.get_product(offered)

    def place_order(context: ToolContext, sku: str, quantity: int = 1, confirmed: bool = False) -> dict[str, Any]:
        """Order a product for the caller. Call it first without confirmed to read the order back;
        call it again with confirmed=true only after the caller clearly said yes.

        Args:
            sku: the product code from search_products
            quantity: how many, at least 1
            confirmed: true only after the caller agreed to the read-back
        """
        try:
            return _place_order(context, sku, quantity, confirmed)
        except ShopUnavailable as error:
            return _system_down(context, error)

    def _place_order(context: ToolContext, sku: str, quantity: int, confirmed: bool) -> dict[str, Any]:
        product = shop.get_product(sku)
        if product is None:
            # The 1.5B, never having searched, passed the caller's words as the code ("coffee machine"): what
            # the catalogue finds for them is offered, as search_products would, and nothing is written.
            found = shop.search(sku, limit=3)
            if found:
                return _found(found, quantity)
            return {
                "error": f"no product {sku!r}",
                "say": "I'm sorry, I can't find that product. Which one would you like?",
            }
        if quantity < 1:
            return {"error": "quantity must be at least 1"}
        total = euros(product.price_cents * quantity)
        if not confirmed:
            say = f"That is {quantity} {product.name} for {total} in total. Shall I place the order?"
            return {
                "say": say,
                "needs_confirmation": True,
                "proposal": _proposal("place_order", product.name, sku=sku, quantity=quantity),
            }
        try:
            order = shop.place_order(_caller(context), [(sku, quantity)], f"{context.session_id}:{sku}:{quantity}")
        except ShopUnavailable:
            raise
        except ShopError as error:
            return {"error": str(error), "say": f"I'm sorry, {error}"}
        say = f"Your order is placed. The order number is {_digits(order.order_number)}, and the total is {total}."
        return {"order_number": order.order_number, "total_cents": order.total_cents, "say": say}

    async def find_order(
        context: ToolContext,
        order_number: str | None = None,
        product: str | None = None,
        verification: str | None = None,
    ) -> dict[str, Any]:
        """Find the caller's order, by its number or else by the caller's phone number and the product.
        If the result says needs_verification, ask the caller its question, then call find_order again with
        the same order_number and their answer as verification.

        Args:
            order_number: the order number if the caller gave it
            product: words about the product the order contained
            verification: the caller's answer to the security question (the postcode or e-mail they said)
        """
        try:
            return await _find_order(context, order_number, product, verification)
        except ShopUnavailable as error:
            return _system_down(context, error)

    async def _find_order(
        context: ToolContext, order_number: str | None, product: str | None, verification: str | None
    ) -> dict[str, Any]:
        state = call_state(context.session.events)
        if state.exhausted(policy):
            return _to_a_person(context)
        caller = _identified(context)
        number = spoken_digits(order_number) if isinstance(order_number, str) else ""
        if number and not named_in_call(context.session.events, number):
            number = ""  # invented: the caller's own orders, or the question for the number, not a security check
        if not number:
            # Words that hold no number (an answer to the question for it: "I don't know it.") ask no more.
            asked = not (isinstance(order_number, str) and order_number.strip())
            return await asyncio.to_thread(_own_orders, context, caller, product, asked)
        named = await asyncio.to_thread(_named, number)
        if named is not None and (_owns(caller, named) or number in state.verified):
            return _read_back([named], product, context)
        events = context.session.events
        # An answer is what the caller said (or typed) to a question the tool asked: a model's argument before any
        # question is no answer, and the caller's own words count whatever the model wrote.
        answers = [a for a in (verification if question_open(events) else None, answer_said(events)) if a]
        if answers and not any(an_attempt(answer) for answer in answers):
            # Words that cannot be the answer ("yes", "hold on", "forget it, just the cable then") are no wrong
            # answer: the question is asked again, and nothing is counted.
            return _needs_verification(context, number, product)
        if answers:
            if named is not None and any(proves(answer, named, policy.verify_with) for answer in answers):
                return {**_read_back([named], product, context), "verification": "passed", "order_number": number}
            return _failed(context, state, number, product)
        if caller and product:
            # A misheard or invented number (a small model writes "12345") beside the caller's own order.
            own = await asyncio.to_thread(shop.find_orders, customer_phone=caller, product_text=product)
            if own:
                return _read_back(own, product, context)
        return _needs_verification(context, number, product)

    def _own_orders(context: ToolContext, caller: str, product: str | None, ask: bool = True) -> dict[str, Any]:
        orders = shop.find_orders(customer_phone=caller, product_text=product) if caller else []
        guessed = not orders and bool(product) and bool(caller)
        if guessed:
            # Product words none of their orders matches, often misheard ("handphone" for "headphones", seen
            # with a hard caller): their latest order, read back by its own product, for them to say yes or no.
            orders = shop.find_orders(customer_phone=caller)
        if not orders and not ask:
            return {"orders": [], "say": "I'm sorry, without the order number I can't find that order."}
        if not orders:
            # The caller may type the number instead of saying it: the voice layer runs this tool with it.
            asked = {"product": product} if product else {}
            context.request_digits("find_order", "order_number", ORDER_NUMBER_MAX_DIGITS, **asked)
            # A question, so the lookup run on the caller's first words is said at once (the 1.5B took 5 s to ask
            # it beside a second call) and the number they say next is the router's answer to it.
            return {
                "orders": [],
                "say": "I couldn't find that order. Could you tell me the order number?",
                "question": {"tool": "find_order", "arguments": asked, "answer": "order_number"},
            }
        return _read_back(orders, product, context, guessed=guessed)

    def _named(number: str) -> Order | None:
        found = shop.find_orders(order_number=number, limit=1)
        return found[0] if found else None

    def _identified(context: ToolContext) -> str:
        """The customer the caller ID names, where it counts at all."""
        return shop.customer_key(_caller(context)) if policy.caller_id == "trusted" else ""

    def _needs_verification(context: ToolContext, number: str, product: str | None) -> dict[str, Any]:
        # The same answer whether or not the order exists, and nothing of it: no oracle for guessing numbers.
        asked = {"order_number": number, **({"product": product} if product else {})}
        # A postcode of digits may be typed as well: the voice layer runs this tool with it.
        context.request_digits("find_order", "verification", ORDER_NUMBER_MAX_DIGITS, **asked)
        return {
            "verification": "needed",
            "needs_verification": f"ask the caller: {policy.question!r}, then call find_order again with "
            "this order_number and their answer as verification",
            "say": policy.question,
            "question": {"tool": "find_order", "arguments": asked, "answer": "verification"},
        }

    def _failed(context: ToolContext, state: CallState, number: str, product: str | None) -> dict[str, Any]:
        if state.failures + 1 >= policy.max_attempts:
            return {**_to_a_person(context), "verification": "failed"}
        again = _needs_verification(context, number, product)
        return {**again, "verification": "failed", "say": "I'm sorry, that doesn't match. " + policy.question}

    async def create_return(
        context: ToolContext, order_number: str, sku: str, quantity: int = 1, reason: str = "", confirmed: bool = False
    ) -> dict[str, Any]:
        """Start a return of an item from an order. Only with confirmed=true after the caller clearly said yes.

        Args:
            order_number: the order the item came from
            sku: the product code of the item
            quantity: how many items go back
            reason: why, in the caller's words
            confirmed: true only after the caller agreed
        """
        try:
            return await _create_return(context, order_number, sku, quantity, reason, confirmed)
        except ShopUnavailable as error:
            return _system_down(context, error)

    async def _create_return(
        context: ToolContext, order_number: str, sku: str, quantity: int, reason: str, confirmed: bool
    ) -> dict[str, Any]:
        state = call_state(context.session.events)
        if state.exhausted(policy):
            return _to_a_person(context)
        number = spoken_digits(order_number) if isinstance(order_number, str) else ""
        if number not in state.verified:
            named = await asyncio.to_thread(_named, number) if number else None
            if named is None or not _owns(_identified(context), named):
                # Nothing is written, and nothing said of the order, for a caller not verified for it.
                return _needs_verification(context, number, None)
        if not confirmed:
            # The item by name: "Shall I start the return of 1 item from order ...?" left a caller with three things in
            # the order asking which (blind7).
            product = await asyncio.to_thread(shop.get_product, sku) if isinstance(sku, str) and sku else None
            item = product.name if product is not None else "item"
            say = f"Shall I start the return of {quantity} {item} from order {_digits(number)}?"
            arguments = {"order_number": number, "sku": sku, "quantity": quantity, "reason": reason}
            proposal = _proposal("create_return", item if product is not None else "", **arguments)
            return {"say": say, "needs_confirmation": True, "proposal": proposal}
        try:
            made = await asyncio.to_thread(
                shop.create_return, number, sku, quantity, reason or "not given", f"{context.session_id}:{number}:{sku}"
            )
        except ForAPerson as error:
            # The shop's system takes no returns by phone (django-oscar has no returns API): a colleague registers
            # it there; the channel transfers once this is said.
            if not any(isinstance(event, Escalated) for event in context.session.events):
                context.session.escalate("staff_only", "returns")
            return {"error": "returns are registered by a person", "say": f"I'm sorry, {error}"}
        except ShopUnavailable:
            raise
        except ShopError as error:
            return {"error": str(error), "say": f"I'm sorry, {error}"}
        say = (
            f"Your return is registered, number {_digits(made.return_number)}. "
            "You'll get a prepaid label by email, and the refund follows when the item arrives."
        )
        return {"return_number": made.return_number, "say": say}

    return [
        # Every result has a say line written for the ear: it is the agent's reply (swarm.tools.Tool.says_result).
        tool_from_function(
            search_products, examples=SALES_PHRASES, says_result=True, changes_nothing=True, finds="products"
        ),
        tool_from_function(
            place_order, examples=("order it", "i'll take it", "buy it", "place the order"), says_result=True
        ),
        tool_from_function(find_order, examples=RETURN_PHRASES, says_result=True, changes_nothing=True, finds="orders"),
        tool_from_function(create_return, examples=("return it", "start the return"), says_result=True),
    ]


ORDER_NUMBER_MAX_DIGITS = 10  # the shop's numbers are shorter; # ends a shorter one at once


def _stock_line(product: Product, quantity: int) -> str:
    if product.stock <= 0:
        return "I'm afraid it's out of stock at the moment."
    if product.stock < quantity:
        return f"I'm afraid we have only {num2words(product.stock)} in stock."
    return f"It's in stock. Shall I order {num2words(quantity)} for you?"


def _found(found: list[Product], quantity: int, *, described: bool = False) -> dict[str, Any]:
    """What a search found, as the caller hears it: the best match (`described`: and what it is), its stock, and
    the offer to order it."""
    best, quantity = found[0], max(1, quantity)
    what = f" {best.description.rstrip('.')}." if described and best.description else ""
    say = f"We have the {best.name} for {euros(best.price_cents)}.{what} " + _stock_line(best, quantity)
    return {"products": [_product(p) for p in found], "say": say, **_offer(best, quantity)}


def _offer(product: Product, quantity: int) -> dict[str, Any]:
    if product.stock < quantity or product.stock <= 0:
        return {}
    return {"proposal": _proposal("place_order", product.name, sku=product.sku, quantity=quantity)}


def _proposal(tool: str, item: str = "", **arguments: Any) -> dict[str, Any]:
    # `item`: the name the read-back said, so an answer that names it again ("Yes, just the headphones.") is known
    # for one (swarm.confirmations.restates_item).
    return {"tool": tool, "arguments": arguments, **({"item": item} if item else {})}


# Words that point back at what is on offer: "off it", "the price of it", "that one".
_REFERS_BACK = re.compile(r"(?i)\b(?:it|its|that one|this one)\b")


def _kind(product: Product) -> str:
    """What kind of thing a product is: its name's last word ("Power bank" -> "bank", "Smartphone case" -> "case")."""
    return product.name.lower().split()[-1] if product.name.strip() else ""


def _offered_sku(events: Sequence[Event]) -> str | None:
    """The product of the offer the caller's last words answer: the last tool result before them, if it offered an
    order (a search's proposal, or place_order's read-back)."""
    last_said = max((i for i, e in enumerate(events) if isinstance(e, UserText)), default=-1)
    before = next((e for e in reversed(events[:last_said]) if isinstance(e, ToolCalled)), None)
    if before is None:
        return None
    try:
        proposal = json.loads(before.result).get("proposal")
    except (ValueError, AttributeError):
        return None
    if not isinstance(proposal, dict) or proposal.get("tool") != "place_order":
        return None
    sku = proposal.get("arguments", {}).get("sku")
    return sku if isinstance(sku, str) else None


def _product(p: Product) -> dict[str, Any]:
    return {"sku": p.sku, "name": p.name, "price": euros(p.price_cents), "stock": p.stock, "description": p.description}


def _order(o: Order) -> dict[str, Any]:
    lines = [{"sku": line.sku, "name": line.name, "quantity": line.quantity} for line in o.lines]
    return {"order_number": o.order_number, "date": o.created_at.date().isoformat(), "status": o.status, "lines": lines}


def _matching_line(order: Order, product: str | None) -> Any:
    words = set((product or "").lower().split())
    return max(order.lines, key=lambda line: len(words & set(line.name.lower().split())))


def _digits(code: str) -> str:
    """Order codes read digit by digit, as people write them down."""
    return " ".join(code)


# Phrases a caller uses to buy, to return, or to reach a person; shared by triage's hand-over tools and
# the agents' first tools, so the offline router and the LLM prompts speak one vocabulary.
SALES_PHRASES = (
    "buy",
    "by a",
    "purchase",
    "order",
    "place an order",
    "how much",
    "price",
    "cost",
    "cheapest",
    "in stock",
    "available",
    "do you have",
    "have you got",
    "do you sell",
    "you sell",
    "do you carry",
    "looking for",
    "i need",
    "i'm after",
    "want to get",
    "get one",
    "get a new",
    "delivered",
    "delivery",
    "shopping",
    "recommend",
    "a present",
    "a gift",
    "want a new",
    "on offer",
    "deal",
    "discount",
    "on sale",
    "interested in",
)
RETURN_PHRASES = (
    "return",
    "refund",
    "money back",
    "send back",
    "send it back",
    "send them back",
    "broken",
    "doesn't work",
    "does not work",
    "not working",
    "stopped working",
    "won't turn on",
    "damaged",
    "faulty",
    "defective",
    "smashed",
    "cracked",
    "scratched",
    "missing",
    "wrong item",
    "wrong colour",
    "wrong color",
    "wrong size",
    "not what i ordered",
    "exchange",
    "swap",
    "replace",
    "too small",
    "too big",
    "doesn't fit",
    "arrived",
    "never came",
    "changed my mind",
    "my order",
    "cancel",
    "you sent me",
    "i bought",
    "i received",
    "complaint",
    "warranty",
    "repair",
)
OPERATOR_PHRASES = (
    "human",
    "a person",
    "real person",
    "someone real",
    "operator",
    "manager",
    "supervisor",
    "representative",
    "agent",
    "transfer me",
    "put me through",
    "put me on to",
    "put me onto",
    "pass me on to",
    "connect me",
    "speak to someone",
    "talk to someone",
    "speak to somebody",
    "talk to a",
    "speak to a",
    "colleague",
    "not a machine",
    "not a robot",
)
# On a tie, a person wins over a return, and a return over a purchase: callers with a problem use buying
# words too ("the order I placed"), callers who want to buy rarely say "broken".
PRECEDENCE = ("transfer_to_operator", "navigate_to_refund", "find_order")
# Buying words said of a past purchase ("the mug you delivered", "the lamp I ordered"): the router is not sure
# who the caller wants with them, and the model decides (OfflineRouter.sure_call).
DOUBTFUL = ("ordered", "delivered")
