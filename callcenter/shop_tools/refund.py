"""The refund agent's tools: the caller's order found (by its number and a security question, or by the phone it
was ordered from) and read back, and the return of its lines written once on the caller's yes."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from callcenter.basket import ADDING, count_back, kept_lines, named_lines, names
from callcenter.shop import Order, OrderLine, ShopError, spoken_digits
from callcenter.shop_backend import ShopBackend
from callcenter.shop_tools.phrases import RETURN_PHRASES, WHERE_PHRASES
from callcenter.shop_tools.results import (
    answered_proposal,
    caller_of,
    counted,
    digits,
    euros,
    joined,
    more_items,
    offered_lines,
    order_json,
    placed_orders,
    proposed,
    proposed_orders,
    system_down,
)
from callcenter.store.domain import ForAPerson, Return, ShopUnavailable
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
    unanswered,
)
from swarm import Escalated, Event, Tool, ToolContext, UserText, tool_from_function
from swarm.confirmations import cannot_answer, defers, yes_or_no
from swarm.numbers import MEASURE
from swarm.sentences import split_sentences

# Words of a return beside a question about where an order is: a return, not a status ("it never came, refund me").
_RETURNING = (
    *("return", "refund", "money back", "send back", "send it back", "send them back", "sent back", "take it back"),
    *("take them back", "give it back", "exchange", "replace", "swap"),
)
# "haven't had it", "still not had a tracking number", "didn't get it": an order not yet come.
# Not a detail the caller lacks: "I haven't got the order number" beside "I want to send the robot vacuum back" was told
# the order's status (blind40 King's Lynn, 4 of 4).
_NOT_HAD = re.compile(
    r" (?:haven't|have not|hasn't|has not|not|never|didn't|did not) (?:yet )?(?:had|got|get|come|came|arrived?) "
    r"(?!(?:(?:the|an?|my|any|that|its) )?(?:order )?(?:number|receipt|e-?mail|code|details|reference|paperwork)\b)"
)
# A thing named between "send / take / bring / post" and "back": "I want to send the robot vacuum back".
_SENT_BACK = re.compile(r" (?:send|take|bring|post)(?: [a-z']+){0,4} back ")
# A caller who asks why the security question is asked, and what they are told before it is asked again.
_WHY = re.compile(r"(?i)\bwhy\b|\bwhat for\b")
_REASON = "I can only discuss an order with the person who placed it, and that keeps it safe."
# An answer written in digits or as an e-mail, beside words that ask for time: "Hang on, it's M1 1AE."
_CODE_SAID = re.compile(r"(?i)\d|@|\bat\b.*\bdot\b")
ORDER_NUMBER_MAX_DIGITS = 10  # the shop's numbers are shorter; # ends a shorter one at once


def refund_tools(
    shop: ShopBackend,
    verification: Verification | None = None,
    *,
    status_only: frozenset[str] = frozenset(),
    operator: bool = True,
) -> list[Tool]:
    """find_order and create_return, bound to one shop; orders are read and returned only for a caller identified or
    verified as `verification` says (callcenter.verification). To the agents in `status_only` (they take no returns)
    find_order says the order's status instead of proposing a return. Without an `operator` (nobody to transfer to)
    a caller asking where an order is hears its status and no offer of a colleague."""
    policy = verification or Verification()

    def _read_back(orders: list[Order], product: str | None, context: ToolContext, **how: Any) -> dict[str, Any]:
        events = context.session.events
        if context.agent in status_only or _asks_where(events):
            where = context.agent not in status_only
            said = _said_back(orders, product, status=True, where=where, colleague=where and operator, **how)
        else:
            said = _said_back(orders, product, going=_going_back(orders[0], product, events), **how)
        # The model, and the router's steps, see that the words named none of the caller's orders.
        return {**said, "guessed": True} if how.get("guessed") else said

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
            return system_down(context, error)

    async def _find_order(
        context: ToolContext, order_number: str | None, product: str | None, verification: str | None
    ) -> dict[str, Any]:
        state = call_state(context.session.events)
        if state.exhausted(policy):
            return _to_a_person(context)
        caller = _identified(context)
        # Money is no order number: "roughly what she paid, within fifty pounds either way" to the question for it
        # was looked up as order 50 (blind18).
        number = spoken_digits(MEASURE.sub(" ", order_number)) if isinstance(order_number, str) else ""
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
        if answers and defers(answers[-1]) and not _CODE_SAID.search(answers[-1]):
            # "Hold on, one moment." (its "one" is no attempt): the question stays open, nothing counted.
            return {**_needs_verification(context, number, product), "say": "Of course, take your time."}
        if answers and not any(an_attempt(answer) for answer in answers):
            if any(cannot_answer(answer) for answer in answers) or unanswered(events):
                # "I don't know his new postcode or his email, love": asked again, the 1.5B timed out (blind8). Nor
                # is it asked a third time of a caller who insists ("Yes. The item, the price and where it went.").
                # The question holds: what they say next is its answer or another request (OfflineRouter._holds).
                say = "I'm sorry, I can't discuss that order without the answer to the security question."
                refused = _needs_verification(context, number, product)
                return {**refused, "verification": "not given", "say": f"{say} Is there anything else I can help with?"}
            # Words that cannot be the answer ("yes", "hold on") are no wrong answer: the question is asked again
            # (time given to a caller who asks for it; a reason to one who asks why), and nothing is counted.
            again = _needs_verification(context, number, product)
            if _WHY.search(answers[-1]):
                again["say"] = f"{_REASON} {again['say']}"
            return {**again, "unanswered": True}
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
        # Not an order placed in this call: it has not come yet, and a caller's words never send it back (blind38
        # Penzance: a phone case just bought was offered for return, for a cracked screen told of before buying it).
        placed = placed_orders(context.session.events)

        def earlier(found: list[Order]) -> list[Order]:
            return [order for order in found if order.order_number not in placed]

        orders = (
            _named_first(earlier(shop.find_orders(customer_phone=caller, product_text=product)), product)
            if caller
            else []
        )
        guessed = not orders and bool(product) and bool(caller)
        if guessed:
            # Product words none of their orders matches, often misheard ("handphone" for "headphones", seen
            # with a hard caller): their latest order with something left to send back, read back by its own
            # product, for them to say yes or no (not the headphones just returned, for "can I also return the mouse?").
            orders = [
                o
                for o in earlier(shop.find_orders(customer_phone=caller))
                if any(line.returnable_quantity for line in o.lines)
            ]
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
        return shop.customer_key(caller_of(context)) if policy.caller_id == "trusted" else ""

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
            "question": {"tool": "find_order", "arguments": asked, "answer": "verification", "holds": True},
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
        going = {sku: quantity, **more_items(sku, also)}
        try:
            return await _create_return(context, order_number, going, reason, confirmed)
        except ShopUnavailable as error:
            return system_down(context, error)

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
        done = _returned(made)
        following = await asyncio.to_thread(_next_named, context, number)
        return {**following, **done, "say": f"{done['say']} {following['say']}"} if following else done

    def _next_named(context: ToolContext, done: str) -> dict[str, Any] | None:
        """Another of the caller's own orders with a thing their words in this call send back, read back once a return
        is written: "two things to send back, which came on two separate orders ... a light bulb ... the screen
        protectors" had the protectors' return written, and the bulb was never asked about (blind22, 4 of 4)."""
        caller = _identified(context)
        if not caller:
            return None
        events = context.session.events
        # Not what they asked after: "I ordered some earbuds ... nothing come yet. Where's it to?" then the kettle sent
        # back offered the earbuds' return next (blind34).
        sentences = [s for e in events if isinstance(e, UserText) for s in split_sentences(e.text)]
        said = " ".join(s for s in sentences if not _where(s))
        asked = proposed_orders(events) | {done}
        # One of two orders of a thing picked out ("the first one"): the other is not sent back too (blind37 Drogheda).
        picked = _OLDER.search(said) or _NEWER.search(said)
        returned = {line.sku for line in written.lines} if picked and (written := _named(done)) is not None else set()
        for order in shop.find_orders(customer_phone=caller):
            if order.order_number in asked:
                continue
            kept = kept_lines(order.lines, said)
            named = [line for line, _ in named_lines(order.lines, said) if line.sku not in kept | returned]
            if any(line.returnable_quantity > 0 for line in named):
                found = _read_back([order], named[0].name, context)
                return {**found, "say": found["say"].replace("I found", "I also found", 1)}
        return None

    def _unreturnable(number: str, going: dict[str, int]) -> str:
        """Why the lines cannot all go back ("" if they can), said before any is written."""
        order = _named(number)
        lines = {line.sku: line for line in order.lines} if order is not None else {}
        for sku, quantity in going.items():
            line = lines.get(sku)
            if line is None:
                return f"order {digits(number)} has no item {sku}."
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
        say = f"Shall I start the return of {counted(items)} from order {digits(number)}?"
        first, *more = going.items()
        arguments: dict[str, Any] = {"order_number": number, "sku": first[0], "quantity": first[1], "reason": reason}
        if more:
            arguments["also"] = dict(more)
        item = joined((name for name, _ in items), article="") if named else ""
        return {"say": say, "needs_confirmation": True, "proposal": proposed("create_return", item, **arguments)}

    return [
        tool_from_function(
            find_order,
            examples=(*RETURN_PHRASES, *WHERE_PHRASES),
            says_result=True,
            changes_nothing=True,
            finds="orders",
        ),
        tool_from_function(create_return, examples=("return it", "start the return"), says_result=True),
    ]


def _owns(caller: str, order: Order) -> bool:
    """The identified caller is the order's customer: the whole number, never a part of it."""
    return bool(caller) and order.customer_key == caller


def _to_a_person(context: ToolContext) -> dict[str, Any]:
    # Too many wrong answers: a person takes over (the channel transfers once this is said), and the tools
    # answer nothing more about orders in this call.
    if not any(isinstance(event, Escalated) for event in context.session.events):
        context.session.escalate("verification_failed")
    return {"say": "I'm sorry, I can't confirm that order with you. I'll put you through to a colleague, please hold."}


def _said_back(
    orders: list[Order],
    product: str | None,
    *,
    guessed: bool = False,
    status: bool = False,
    where: bool = False,
    colleague: bool = False,
    going: Sequence[tuple[OrderLine, int]] = (),
) -> dict[str, Any]:
    """The order found, read back with the line (or `going`: the lines, and how many of each) the caller's words
    name, and the return proposed; or its `status`, and, to a caller asking `where` it is, a `colleague` offered
    when there is one to put them through to."""
    order = orders[0]
    lines = list(going) or [(_matching_line(order, product), 1)]
    # Some of a line is counted too: "a return of 1 Yoga mat" of two bought.
    several = len(lines) > 1 or lines[0][1] > 1 or lines[0][1] < lines[0][0].returnable_quantity
    when = order.created_at.strftime("%d %B").lstrip("0")
    # Asked where their parcel is, the caller named no product: their latest order is the one they mean.
    opening = "I couldn't find that product, but I found" if guessed and not where else "I found"
    found = f"{opening} your {'latest ' if guessed and where else ''}order {digits(order.order_number)} from {when}"
    # With several lines going back, only they are named: an order's other lines said beside them read as going too.
    found += "." if several else f" with the {lines[0][0].name}."
    if status:
        # An agent that takes no returns (an order-status agent of a swarm file): the order's status, no proposal.
        if not colleague:
            # Nobody to put them through to: the status is all, never a transfer promised that ends the call.
            say = f"{found} Its status is {order.status}. Is there anything else I can help with?"
            return {"orders": [order_json(o) for o in orders], "say": say}
        # The status is all the shop tells; a parcel late or lost is a colleague's to trace, and a yes puts them through.
        say = f"{found} Its status is {order.status}. Shall I put you through to a colleague who can look into it?"
        return {"orders": [order_json(o) for o in orders], "say": say, "proposal": proposed("transfer_to_operator")}
    (first, quantity), *more = lines
    item = joined((line.name for line, _ in lines), article="")
    arguments: dict[str, Any] = {"order_number": order.order_number, "sku": first.sku, "quantity": quantity}
    if more:
        arguments["also"] = {line.sku: count for line, count in more}
    if several:
        say = f"{found} Shall I start a return of {counted([(line.name, count) for line, count in lines])}?"
    else:
        say = f"{found} Shall I start a return for it?"
    proposal = proposed("create_return", item, **arguments)
    return {"orders": [order_json(o) for o in orders], "say": say, "proposal": proposal}


def _returned(made: Sequence[Return]) -> dict[str, Any]:
    # The amount is said: "how much did I pay for the blender? ... do I get all of it back" beside a return went
    # unanswered (blind24, 4 of 4), and every caller sending something back wants to know it.
    refund = euros(sum(m.refund_cents for m in made))
    label = f"You'll get a prepaid label by email, and the refund of {refund} follows when the item arrives."
    if len(made) == 1:
        say = f"Your return is registered, number {digits(made[0].return_number)}. {label}"
        return {"return_number": made[0].return_number, "say": say}
    each = joined((f"the {m.product_name}, number {digits(m.return_number)}" for m in made), article="")
    say = f"Your returns are registered: {each}. {label.replace('the item arrives', 'the items arrive')}"
    return {"return_numbers": [m.return_number for m in made], "say": say}


def _asks_where(events: Sequence[Event]) -> bool:
    """Whether the caller's last words ask where an order is, and not for a return: "I ordered the extension lead last
    Tuesday and I still haven't had a tracking number." was offered a return of it (heard latency)."""
    return _where(_last_said(events))


def _where(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower().replace("\u2019", "'"))
    said = f" {' '.join(words)} "
    asked = any(f" {phrase}" in said for phrase in WHERE_PHRASES) or bool(_NOT_HAD.search(said))
    return asked and not (any(f" {phrase} " in said for phrase in _RETURNING) or _SENT_BACK.search(said))


def _last_said(events: Sequence[Event]) -> str:
    return next((e.text for e in reversed(events) if isinstance(e, UserText)), "")


def _going_back(order: Order, product: str | None, events: Sequence[Event]) -> list[tuple[OrderLine, int]]:
    """The lines of `order` the caller's words send back, and how many of each: those named outside any part that
    keeps them, and, when the words add a line to the return of this order
    on offer ("and the toaster too"), its lines; of one line, the count said of it ("send two of them back")."""
    said = _last_said(events)
    kept = kept_lines(order.lines, said)
    going = {line.sku: quantity for line, quantity in named_lines(order.lines, product or "") if line.sku not in kept}
    proposal = answered_proposal(events)
    same_order = proposal is not None and proposal.get("arguments", {}).get("order_number") == order.order_number
    offered = offered_lines(events, "create_return") if same_order else {}
    # Only words that add a line grow the return on offer: "I'm keeping the protectors and the speaker" has an "and".
    if set(going) - set(offered) and ADDING.search(said) and yes_or_no(said) is not False:
        going = {sku: count for sku, count in {**offered, **going}.items() if sku not in kept}
    lines = [(line, going[line.sku]) for line in order.lines if line.sku in going]
    if len(lines) > 1:
        return lines
    line = lines[0][0] if lines else _matching_line(order, product)
    count = lines[0][1] if lines and lines[0][1] > 1 else count_back(said, line)
    return [(line, count)] if lines or count > 1 else []


# Words that point at the older of two orders of the same thing, or at the newer one.
_OLDER = re.compile(r"(?i)\b(?:the|my) (?:first|older|earlier|old|original) (?:one|order)\b")
_NEWER = re.compile(r"(?i)\b(?:the|my) (?:second|newer|newest|latest|later|last|new|most recent) (?:one|order)\b")


def _named_first(orders: list[Order], product: str | None) -> list[Order]:
    """The orders with a line the words name (by its kind or two of its words) first, and those whose every line the
    words keep last, each kept newest first: "I bought a power bank ... calling from the same phone" matched the newer
    phone charger's order by "phone" (blind13); "... the robot hoover ... I want to send it back, refund. The keyboard
    I bought for my son, that one is fine, he keeps it." was read back the newer keyboard (blind14)."""
    said = query_terms(product or "").words
    sentences = [query_terms(sentence).words for sentence in split_sentences(product or "")]

    def rank(order: Order) -> tuple[bool, bool, int]:
        kept = kept_lines(order.lines, product or "")
        going = [line for line in order.lines if line.sku not in kept]
        named = any(names(said, line.name) for line in going)
        # Of several named, the one named last: "I ordered some earbuds ... nothing come yet. ... And the other thing:
        # the electric kettle I bought last week, I want to send it back." read back the earbuds (blind34).
        last = max((i for i, words in enumerate(sentences) for line in going if names(words, line.name)), default=-1)
        return not named, all(line.sku in kept for line in order.lines), -last

    ranked = sorted(orders, key=rank)
    if ranked and _OLDER.search(product or "") and not _NEWER.search(product or ""):
        # Of the orders that tie first, the oldest: "I'm after buying two of the wireless mice ... Mine, the first
        # one ... I want to send my one back, the first one." was read back the newer mouse (blind37 Drogheda).
        tied = [order for order in ranked if rank(order) == rank(ranked[0])]
        oldest = min(tied, key=lambda order: order.created_at)
        ranked = [oldest, *(order for order in ranked if order is not oldest)]
    return ranked


def _matching_line(order: Order, product: str | None) -> Any:
    words = set((product or "").lower().split())
    return max(order.lines, key=lambda line: len(words & set(line.name.lower().split())))
