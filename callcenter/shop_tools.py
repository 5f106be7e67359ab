"""The tools the shop's agents call. Results are JSON for the model, with a "say" line fit for the ear.

Writes need the caller's explicit yes: without confirmed=true a tool only reads back what it would do
and returns it as a "proposal", which the model (or the offline router) runs again after the yes.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from num2words import num2words

from callcenter.basket import ADDING, count_in, listed_products, named_lines, named_product
from callcenter.shop import Order, OrderLine, Product, ShopError, spoken_digits
from callcenter.shop_backend import ShopBackend
from callcenter.store.domain import ForAPerson, OneProductPerOrder, Return, ShopUnavailable
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
from swarm.confirmations import cannot_answer, yes_or_no


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
    orders: list[Order],
    product: str | None,
    *,
    guessed: bool = False,
    status: bool = False,
    going: Sequence[tuple[OrderLine, int]] = (),
) -> dict[str, Any]:
    """The order found, read back with the line (or `going`: the lines, and how many of each) the caller's words
    name, and the return proposed."""
    order = orders[0]
    lines = list(going) if len(going) > 1 else [(_matching_line(order, product), 1)]
    when = order.created_at.strftime("%d %B").lstrip("0")
    opening = "I couldn't find that product, but I found" if guessed else "I found"
    found = f"{opening} your order {_digits(order.order_number)} from {when}"
    # With several lines going back, only they are named: an order's other lines said beside them read as going too.
    found += "." if len(lines) > 1 else f" with the {lines[0][0].name}."
    if status:
        # An agent that takes no returns (an order-status agent of a swarm file): the order's status, no proposal.
        say = f"{found} Its status is {order.status}. Is there anything else I can help with?"
        return {"orders": [_order(o) for o in orders], "say": say}
    (first, quantity), *more = lines
    item = _listed((line.name for line, _ in lines), article="")
    arguments: dict[str, Any] = {"order_number": order.order_number, "sku": first.sku, "quantity": quantity}
    if more:
        arguments["also"] = {line.sku: count for line, count in more}
        say = f"{found} Shall I start a return of {_counted([(line.name, count) for line, count in lines])}?"
    else:
        say = f"{found} Shall I start a return for it?"
    proposal = _proposal("create_return", item, **arguments)
    return {"orders": [_order(o) for o in orders], "say": say, "proposal": proposal}


def shop_tools(
    shop: ShopBackend, verification: Verification | None = None, *, status_only: frozenset[str] = frozenset()
) -> list[Tool]:
    """The sales and refund tools, bound to one shop; orders are read and returned only for a caller
    identified or verified as `verification` says (callcenter.verification). To the agents in `status_only` (they
    take no returns) find_order says the order's status instead of proposing a return."""
    policy = verification or Verification()

    def _read_back(orders: list[Order], product: str | None, context: ToolContext, **how: Any) -> dict[str, Any]:
        going = _going_back(orders[0], product, context.session.events)
        return _said_back(orders, product, status=context.agent in status_only, going=going, **how)

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
            listed = listed_products(shop, query) or _added(context, query)
            found = [] if listed else shop.search(query, limit=3)
        except ShopUnavailable as error:
            return _system_down(context, error)
        if listed:
            return _basket(listed)
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

    def _added(context: ToolContext, query: str) -> list[tuple[Product, int]]:
        """The products on offer and one more the caller adds to them ("And the wireless mouse too, mind."), or []."""
        events = context.session.events
        said = next((e.text for e in reversed(events) if isinstance(e, UserText)), "")
        offered = _offered_lines(events, "place_order")
        if not offered or not ADDING.search(said) or yes_or_no(said) is False:
            return []
        more = named_product(shop, query)
        if more is None or more.sku in offered:
            return []
        products = [(shop.get_product(sku), quantity) for sku, quantity in offered.items()]
        have = [(product, quantity) for product, quantity in products if product is not None]
        return [*have, (more, count_in(said, more.name))] if len(have) == len(offered) else []

    def place_order(
        context: ToolContext,
        sku: str,
        quantity: int = 1,
        confirmed: bool = False,
        also: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        """Order a product for the caller. Call it first without confirmed to read the order back;
        call it again with confirmed=true only after the caller clearly said yes.

        Args:
            sku: the product code from search_products
            quantity: how many, at least 1
            confirmed: true only after the caller agreed to the read-back
            also: more products on the same order, product code to how many
        """
        try:
            if also:
                return _place_basket(context, {sku: quantity, **{k: v for k, v in also.items() if k != sku}}, confirmed)
            return _place_order(context, sku, quantity, confirmed)
        except ShopUnavailable as error:
            return _system_down(context, error)

    def _place_basket(context: ToolContext, wanted: dict[str, int], confirmed: bool) -> dict[str, Any]:
        lines: list[tuple[Product, int]] = []
        for sku, quantity in wanted.items():
            product = shop.get_product(sku)
            if product is None or quantity < 1:
                return {"error": f"no product {sku!r}" if product is None else "quantity must be at least 1"}
            lines.append((product, quantity))
        total = euros(sum(product.price_cents * quantity for product, quantity in lines))
        first, *more = lines
        if not confirmed:
            say = f"That is {_counted(lines)} for {total} in total. Shall I place the order?"
            arguments = {"sku": first[0].sku, "quantity": first[1], "also": {p.sku: q for p, q in more}}
            item = _listed((product.name for product, _ in lines), article="")
            return {"say": say, "needs_confirmation": True, "proposal": _proposal("place_order", item, **arguments)}
        key = f"{context.session_id}:" + ",".join(f"{sku}x{quantity}" for sku, quantity in sorted(wanted.items()))
        try:
            return _written(context, list(wanted.items()), key, total)
        except OneProductPerOrder:
            return _one_order_each(context, lines)

    def _written(context: ToolContext, items: list[tuple[str, int]], key: str, total: str) -> dict[str, Any]:
        """The order written (once for its key), as the caller hears it; a refusal of the shop's said."""
        try:
            order = shop.place_order(_caller(context), items, key)
        except (ShopUnavailable, OneProductPerOrder):
            raise
        except ShopError as error:
            return {"error": str(error), "say": f"I'm sorry, {error}"}
        say = f"Your order is placed. The order number is {_digits(order.order_number)}, and the total is {total}."
        return {"order_number": order.order_number, "total_cents": order.total_cents, "say": say}

    def _one_order_each(context: ToolContext, lines: list[tuple[Product, int]]) -> dict[str, Any]:
        # An order system that takes one product an order (an HTTP mapping): an order for each, each written once
        # (its own key, as place_order of that product alone), and the caller told there are several.
        placed: list[tuple[Product, Order]] = []
        for product, quantity in lines:
            key = f"{context.session_id}:{product.sku}:{quantity}"
            try:
                placed.append((product, shop.place_order(_caller(context), [(product.sku, quantity)], key)))
            except ShopError as error:
                if not placed:
                    raise
                if isinstance(error, ShopUnavailable):
                    down = _system_down(context, error)  # a colleague takes the rest
                    return {**down, "say": f"{_orders_said(placed)} {down['say']}"}
                return {"error": str(error), "say": f"{_orders_said(placed)} I'm sorry, {error}"}
        return {"order_numbers": [order.order_number for _, order in placed], "say": _orders_said(placed)}

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
        return _written(context, [(sku, quantity)], f"{context.session_id}:{sku}:{quantity}", total)

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
        if not number and len(state.verified) == 1:
            # The order this call proved, when the words name its things: "I buy two light bulb ... and one lamp"
            # after the postcode, from his wife's phone, found no order of that phone (blind8).
            proved = await asyncio.to_thread(_named, next(iter(state.verified)))
            if proved is not None and named_lines(proved.lines, product or ""):
                return _read_back([proved], product, context)
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
            if any(cannot_answer(answer) for answer in answers):
                # "I don't know his new postcode or his email, love": asked again, the 1.5B timed out (blind8).
                say = "I'm sorry, I can't discuss that order without the answer to the security question."
                return {"verification": "not given", "say": f"{say} Is there anything else I can help with?"}
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
        context: ToolContext,
        order_number: str,
        sku: str,
        quantity: int = 1,
        reason: str = "",
        confirmed: bool = False,
        also: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        """Start a return of an item from an order. Only with confirmed=true after the caller clearly said yes.

        Args:
            order_number: the order the item came from
            sku: the product code of the item
            quantity: how many items go back
            reason: why, in the caller's words
            confirmed: true only after the caller agreed
            also: more items of the same order going back, product code to how many
        """
        going = {sku: quantity, **{k: v for k, v in (also or {}).items() if k != sku}}
        try:
            return await _create_return(context, order_number, going, reason, confirmed)
        except ShopUnavailable as error:
            return _system_down(context, error)

    async def _create_return(
        context: ToolContext, order_number: str, going: dict[str, int], reason: str, confirmed: bool
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
        if len(going) > 1 and (unfit := await asyncio.to_thread(_unreturnable, number, going)):
            return {"error": unfit, "say": f"I'm sorry, {unfit}"}  # before the read-back too: no "1 item" read back
        if not confirmed:
            return await asyncio.to_thread(_return_read_back, number, going, reason)
        made: list[Return] = []  # the lines were checked above: all go back, or none
        try:
            for sku, quantity in going.items():
                key = f"{context.session_id}:{number}:{sku}"
                made.append(
                    await asyncio.to_thread(shop.create_return, number, sku, quantity, reason or "not given", key)
                )
        except ForAPerson as error:
            # The shop's system takes no returns by phone (django-oscar has no returns API): a colleague registers
            # it there; the channel transfers once this is said.
            if not any(isinstance(event, Escalated) for event in context.session.events):
                context.session.escalate("staff_only", "returns")
            return {"error": "returns are registered by a person", "say": f"I'm sorry, {error}"}
        except ShopUnavailable as error:
            if not made:
                raise
            return _partly_returned(context, made, error)
        except ShopError as error:
            if not made:
                return {"error": str(error), "say": f"I'm sorry, {error}"}
            return _partly_returned(context, made, error)
        return _returned(made)

    def _unreturnable(number: str, going: dict[str, int]) -> str:
        """Why the lines cannot all go back ("" if they can), said before any is written."""
        order = _named(number)
        lines = {line.sku: line for line in order.lines} if order is not None else {}
        for sku, quantity in going.items():
            line = lines.get(sku)
            if line is None:
                return f"order {_digits(number)} has no item {sku}."
            if not 0 < quantity <= line.returnable_quantity:
                return f"only {line.returnable_quantity} {line.name} of that order can be returned."
        return ""

    def _partly_returned(context: ToolContext, made: list[Return], error: Exception) -> dict[str, Any]:
        # A line written, the next refused by a system that changed between the check and the write: what was
        # registered is said, and a colleague takes the rest.
        if not any(isinstance(event, Escalated) for event in context.session.events):
            context.session.escalate("backend_unavailable", str(error)[:300])
        said = _returned(made)["say"]
        rest = "I'm sorry, I couldn't register the other items. I'll put you through to a colleague, please hold."
        return {"return_numbers": [m.return_number for m in made], "error": str(error), "say": f"{said} {rest}"}

    def _return_read_back(number: str, going: dict[str, int], reason: str) -> dict[str, Any]:
        # The items by name: "Shall I start the return of 1 item from order ...?" left a caller with three things in
        # the order asking which (blind7).
        products = [shop.get_product(sku) if isinstance(sku, str) and sku else None for sku in going]
        named = all(product is not None for product in products)
        items = [
            (product.name if product is not None else "item", q)
            for product, q in zip(products, going.values(), strict=True)
        ]
        say = f"Shall I start the return of {_counted(items)} from order {_digits(number)}?"
        first, *more = going.items()
        arguments: dict[str, Any] = {"order_number": number, "sku": first[0], "quantity": first[1], "reason": reason}
        if more:
            arguments["also"] = dict(more)
        item = _listed((name for name, _ in items), article="") if named else ""
        return {"say": say, "needs_confirmation": True, "proposal": _proposal("create_return", item, **arguments)}

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


def _returned(made: Sequence[Return]) -> dict[str, Any]:
    label = "You'll get a prepaid label by email, and the refund follows when the item arrives."
    if len(made) == 1:
        say = f"Your return is registered, number {_digits(made[0].return_number)}. {label}"
        return {"return_number": made[0].return_number, "say": say}
    each = _listed((f"the {m.product_name}, number {_digits(m.return_number)}" for m in made), article="")
    say = f"Your returns are registered: {each}. {label.replace('the item arrives', 'the items arrive')}"
    return {"return_numbers": [m.return_number for m in made], "say": say}


def _orders_said(placed: Sequence[tuple[Product, Order]]) -> str:
    if len(placed) == 1:
        product, order = placed[0]
        return f"Your order of the {product.name} is placed, number {_digits(order.order_number)}."
    each = _listed((f"number {_digits(o.order_number)} for the {p.name}" for p, o in placed), article="")
    return f"Your orders are placed, one for each: {each}. The total is {euros(sum(o.total_cents for _, o in placed))}."


def _basket(listed: Sequence[tuple[Product, int]]) -> dict[str, Any]:
    """Several products found for the caller's list, as the caller hears them, and one order of those in stock
    offered."""
    prices = _listed(f"{product.name} for {euros(product.price_cents)}" for product, _ in listed)
    short = [f"I'm afraid the {p.name} is out of stock." for p, q in listed if p.stock < max(1, q)]
    able = [(product, quantity) for product, quantity in listed if product.stock >= max(1, quantity)]
    products = [_product(product) for product, _ in listed]
    if len(able) < 2:
        say = " ".join([f"We have {prices}.", *short])
        return {"products": products, "say": say, **(_offer(*able[0]) if able else {})}
    first, *more = able
    ones = "one of each" if len(able) == 2 and all(q == 1 for _, q in able) else _counted(able)
    say = " ".join([f"We have {prices}.", *short, f"Shall I order {ones} for you?"])
    item = _listed((product.name for product, _ in able), article="")
    arguments = {"sku": first[0].sku, "quantity": first[1], "also": {p.sku: q for p, q in more}}
    return {"products": products, "say": say, "proposal": _proposal("place_order", item, **arguments)}


def _listed(things: Iterable[str], article: str = "the ") -> str:
    """ "the A", "the A and the B", "the A, the B and the C"."""
    said = [f"{article}{thing}" for thing in things]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def _counted(lines: Sequence[tuple[Product, int]] | Sequence[tuple[str, int]]) -> str:
    """ "1 Wireless mouse and 2 Desk lamp", as the read-backs say it."""
    return _listed((f"{q} {p.name if isinstance(p, Product) else p}" for p, q in lines), article="")


def _offered_lines(events: Sequence[Event], tool: str) -> dict[str, int]:
    """What the offer the caller's last words answer holds (its product codes and how many), if it is `tool`'s."""
    proposal = _answered_proposal(events)
    if proposal is None or proposal.get("tool") != tool:
        return {}
    arguments = proposal.get("arguments", {})
    sku, quantity, also = arguments.get("sku"), arguments.get("quantity", 1), arguments.get("also") or {}
    if not isinstance(sku, str) or not isinstance(quantity, int) or not isinstance(also, dict):
        return {}
    return {sku: quantity, **{k: v for k, v in also.items() if isinstance(k, str) and isinstance(v, int)}}


def _going_back(order: Order, product: str | None, events: Sequence[Event]) -> list[tuple[OrderLine, int]]:
    """The lines of `order` the caller's words send back, and how many of each, when more than one line: those named
    outside any part that keeps them, and, when the words add to the return of this order on offer ("and the toaster
    too"), its lines."""
    going = {line.sku: quantity for line, quantity in named_lines(order.lines, product or "")}
    said = next((e.text for e in reversed(events) if isinstance(e, UserText)), "")
    proposal = _answered_proposal(events)
    same_order = proposal is not None and proposal.get("arguments", {}).get("order_number") == order.order_number
    if same_order and ADDING.search(said) and yes_or_no(said) is not False:
        going = {**_offered_lines(events, "create_return"), **going}
    lines = [(line, going[line.sku]) for line in order.lines if line.sku in going]
    return lines if len(lines) > 1 else []


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
    """The product of the order on offer the caller's last words answer (a search's proposal, or place_order's
    read-back)."""
    return next(iter(_offered_lines(events, "place_order")), None)


def _answered_proposal(events: Sequence[Event]) -> dict[str, Any] | None:
    """The proposal of the last tool result before the caller's last words, if it made one."""
    last_said = max((i for i, e in enumerate(events) if isinstance(e, UserText)), default=-1)
    before = next((e for e in reversed(events[:last_said]) if isinstance(e, ToolCalled)), None)
    if before is None:
        return None
    try:
        proposal = json.loads(before.result).get("proposal")
    except (ValueError, AttributeError):
        return None
    return proposal if isinstance(proposal, dict) and isinstance(proposal.get("arguments"), dict) else None


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
    "them back",
    "it back",
    "give back",
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
DOUBTFUL = ("ordered", "delivered", "order number")
