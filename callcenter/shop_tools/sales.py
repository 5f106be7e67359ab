"""The sales agent's tools: the catalogue searched for what the caller names (one product or a list of them), and
the order read back, then placed once on the caller's yes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from num2words import num2words

from callcenter.basket import (
    ADDING,
    count_in,
    kind,
    listed_products,
    may_mean,
    named_product,
    names,
    near_match,
    without_taken_back,
)
from callcenter.shop import Order, Product, ShopError
from callcenter.shop_backend import ShopBackend
from callcenter.shop_tools.phrases import SALES_PHRASES
from callcenter.shop_tools.results import (
    amount,
    caller_of,
    counted,
    digits,
    euros,
    joined,
    more_items,
    offered_lines,
    product_json,
    proposed,
    returned_products,
    system_down,
)
from callcenter.store.domain import OneProductPerOrder, ShopUnavailable
from callcenter.store.terms import query_terms
from swarm import Event, Tool, ToolContext, UserText, tool_from_function
from swarm.confirmations import holds_off, mentions_item, turns_away, yes_or_no
from swarm.numbers import COUNT_WORDS, SIZE, TENS_WORDS
from swarm.sentences import split_sentences

# Words that put another thing on the offer, not "and" of a question about it ("And the USB-C, it connects?").
_ADDS = re.compile(r"(?i)\b(?:add|as well|also|on the (?:same|one) order|one of each)\b")


def sales_tools(shop: ShopBackend) -> list[Tool]:
    """search_products and place_order, bound to one shop."""

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
        if (asked := _asked_about(context)) is not None:
            return _found([asked], quantity, described=True)
        try:
            # One thing named beside words that add it ("add a mouse as well") goes on the offer with what is on it.
            listed = _not_going_back(context, listed_products(shop, query))
            listed = (_added(context, query) or listed) if len(listed) <= 1 else listed
            found = [] if listed else [p for p in shop.search(without_taken_back(query), limit=3) if may_mean(query, p)]
            # What the words name by its kind first: "Do you have a smartwatch with the air?" (Whisper, for "with GPS")
            # offered the Air humidifier as the closest (the espeak-ng suite).
            said = query_terms(query).words
            found.sort(key=lambda product: not names(said, product.name))
        except ShopUnavailable as error:
            return system_down(context, error)
        asked = _asked_of(context, [product for product, _ in listed])
        if len(listed) == 1:
            # The one left of those named ("not the band, ..."), told about if the caller asks about it.
            return _found([listed[0][0]], listed[0][1], described=asked is not None)
        if listed:
            return _basket(listed, asked)
        offered = _still_offered(context, found) or _asked_of_offer(context, found)
        if offered is not None:
            return _found([offered], quantity, described=True)
        if not found:
            # An open question: to "Could you describe it another way?" callers said "Yes, please.", which the
            # 1.5B took for a yes to an order (place_order refused: a second completion, 5 s in all).
            return {"products": [], "say": "I'm sorry, I couldn't find that. What else could I look up for you?"}
        if len(found) >= 2 and (prices := _prices_asked(_last_said(context))) >= 2:
            # "How much is the camera, and how much the earphones? Tell me both, please." heard the webcam's price
            # alone, though the search had found both (blind26): one price for each question.
            return _basket([(product, 1) for product in found[:prices]])
        return _found(found, quantity, asked=query)

    def _not_going_back(context: ToolContext, listed: list[tuple[Product, int]]) -> list[tuple[Product, int]]:
        """The products listed but those the caller sends back in this call, when others are left: "I want to send back
        a toaster ... And then, after, I want to buy a kettle ... But the toaster first, ajde." was offered the kettle
        and the toaster, and the yes bought both (blind41 Longford, 4 of 4)."""
        going = returned_products(context.session.events)
        kept = [(product, count) for product, count in listed if product.sku not in going]
        return kept if kept else listed

    def _still_offered(context: ToolContext, found: list[Product]) -> Product | None:
        """The product on offer when the caller's words ask about it ("could I charge two phones off it? And what's
        the price of it?") and name none of those found by its kind: the 1.5B searched that sentence, found the
        charging pad and sold it instead of the power bank on offer (blind6). "A case for it" names a case. Found
        again or not found at all, it is told about when they ask: "Not yet ... it is real glass, yes?" (blind16)."""
        events = context.session.events
        said = _last_said(context)
        offered = _offered_sku(events)
        if offered is not None and not found and _questions(said) and yes_or_no(said) is True:
            # A yes with a question nothing else answers: "Go on then, I'll have the one. Does he do bagels an' all?"
            # was searched for bagels, and the toaster agreed to was dropped (blind19).
            return shop.get_product(offered)
        if offered is None or not _REFERS_BACK.search(said):
            return None
        if yes_or_no(said) is False and not holds_off(said):
            return None  # "No, not that one": what they turned down is not kept on offer; "not yet" turns down nothing
        if not found or offered == found[0].sku:
            # Told about only to a caller who holds off to ask about it; else offered as found, or not found.
            return shop.get_product(offered) if holds_off(said) and "?" in said else None
        spoken = set(re.findall(r"[a-z]+", said.lower()))
        if any(kind(p) in spoken or f"{kind(p)}s" in spoken for p in found):
            return None
        return shop.get_product(offered)

    def _asked_about(context: ToolContext) -> Product | None:
        """The product on offer when the caller holds it off to ask about it: "Ay, wait, wait, before you do it. The
        stand, it goes up and down, no? ... the USB-C, it connects?" of the monitor on offer was searched, and the
        laptop stand and a cable were offered and sold instead (blind22, 4 of 4). Its description answers. The offer
        may be named by its kind: "Hang about ... Do thik watch need one of they smartphones to work?" of the
        Smartwatch sold a Smartphone case (blind24)."""
        events = context.session.events
        said = _last_said(context)
        offered = _offered_sku(events)
        # Not words that add to it: "Ay, wait, before you do — add a mouse as well ... One of each, the stand and the
        # mouse, on the same order, vale?" was told the stand again (blind36 Folkestone, 4 of 4).
        if offered is None or not (holds_off(said) and "?" in said) or turns_away(said) or _ADDS.search(said):
            return None
        product = shop.get_product(offered)
        named = product is not None and mentions_item(said, {"item": product.name})
        return product if _REFERS_BACK.search(said) or named else None

    def _asked_of_offer(context: ToolContext, found: list[Product]) -> Product | None:
        """The one product on offer when the caller's question is about it, and no other is found: "Grand. Does it
        fit a six inch phone?" of the case went to the 1.5B (5-20 s)."""
        offered = offered_lines(context.session.events, "place_order")
        if len(offered) != 1 or (found and found[0].sku not in offered):
            return None
        product = shop.get_product(next(iter(offered)))
        if product is None or _asked_of(context, [product]) is None:
            return None
        return product

    def _asked_of(context: ToolContext, listed: list[Product]) -> Product | None:
        """The one of the products listed again for the order on offer that the caller's question is about (not its
        price): "So one case and one of the screen protector packs, please, both together on the one order. My phone
        is six inches, so the case will fit, no?" went to the 1.5B, which said the order was placed and placed nothing
        (blind38 Penzance). Its description answers, and the offer is made again."""
        said = _last_said(context)
        if not listed or _offered_sku(context.session.events) is None or turns_away(said) or yes_or_no(said) is False:
            return None
        named = {
            p.sku: p
            for q in _questions(said)
            for p in listed
            if mentions_item(q, {"item": p.name}) or (len(listed) == 1 and _REFERS_BACK.search(q))
        }
        return next(iter(named.values())) if len(named) == 1 else None

    def _added(context: ToolContext, query: str) -> list[tuple[Product, int]]:
        """The products on offer and one more the caller adds to them ("And the wireless mouse too, mind."), or []."""
        events = context.session.events
        said = _last_said(context)
        offered = offered_lines(events, "place_order")
        # A wait is no no: "Ay, wait, before you do, add a mouse as well" (blind36).
        if (
            not offered
            or not ADDING.search(said)
            or turns_away(said)
            or (yes_or_no(said) is False and not holds_off(said))
        ):
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
            more = _more(sku, also)
            if not more and not confirmed:
                more = _listed_beside(context, sku)
            if more:
                return _place_basket(context, {sku: quantity, **more}, confirmed)
            return _place_order(context, sku, quantity, confirmed)
        except ShopUnavailable as error:
            return system_down(context, error)

    def _listed_beside(context: ToolContext, sku: str) -> dict[str, int]:
        """The other products the caller's last words list beside this one, each with how many, for one read-back of
        them all: "Then two of the lamps, please ... And while I'm on the phone, one laptop stand ... Everything on
        the one order, please." was read back as two lamps, three times (blind40 Lampeter, 4 of 4)."""
        said = _last_said(context)
        listed = {product.sku: count for product, count in listed_products(shop, said)} if ADDING.search(said) else {}
        # Not what was on offer already: "Only the keyboard. Mouse no ..." to the two of them picks one (blind16).
        offered = offered_lines(context.session.events, "place_order")
        return {k: n for k, n in listed.items() if k != sku and k not in offered} if sku in listed else {}

    def _unknown_codes(arguments: dict[str, Any], context: ToolContext) -> list[str]:
        """place_order's product codes that are none, sent back to the model before anything runs. Asked "Can you
        tell me what is in it?" of an order number, the 1.5B ordered the number as a product, 4 times of 4 (blind9);
        it also put the product's own fields in `also` (dropped: _more_products). Words for a product stay (the search
        fallback below)."""
        sku = str(arguments.get("sku", ""))
        more = list(_more(sku, arguments.get("also")))
        try:
            errors = [f"{code!r} is not a product code" for code in more if shop.get_product(code) is None]
            if not re.search(r"[a-z]", sku, re.I) and shop.get_product(sku) is None:
                errors.insert(0, f"{sku!r} is not a product code; to read an order by its number, call find_order")
        except ShopUnavailable:
            return []  # place_order itself says the system is down
        if errors:
            errors.append("use only product codes that search_products returned in this call")
        return errors

    def _more(sku: str, also: Any) -> dict[str, int]:
        """more_items, without the words that are no code of this shop and hold no digit: the 1.5B wrote {"product":
        1} and {"name": 1, "sku": 1} beside the power bank it meant (blind27)."""
        items = more_items(sku, also)
        return {code: count for code, count in items.items() if re.search(r"\d", code) or shop.get_product(code)}

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
            say = f"That is {counted(lines)} for {total} in total. Shall I place the order?"
            arguments = {"sku": first[0].sku, "quantity": first[1], "also": {p.sku: q for p, q in more}}
            item = joined((product.name for product, _ in lines), article="")
            return {"say": say, "needs_confirmation": True, "proposal": proposed("place_order", item, **arguments)}
        key = f"{context.session_id}:" + ",".join(f"{sku}x{quantity}" for sku, quantity in sorted(wanted.items()))
        try:
            return _written(context, list(wanted.items()), key, total)
        except OneProductPerOrder:
            return _one_order_each(context, lines)

    def _written(context: ToolContext, items: list[tuple[str, int]], key: str, total: str) -> dict[str, Any]:
        """The order written (once for its key), as the caller hears it; a refusal of the shop's said."""
        try:
            order = shop.place_order(caller_of(context), items, key)
        except (ShopUnavailable, OneProductPerOrder):
            raise
        except ShopError as error:
            return {"error": str(error), "say": f"I'm sorry, {error}"}
        say = f"Your order is placed. The order number is {digits(order.order_number)}, and the total is {total}."
        return {"order_number": order.order_number, "total_cents": order.total_cents, "say": say}

    def _one_order_each(context: ToolContext, lines: list[tuple[Product, int]]) -> dict[str, Any]:
        # An order system that takes one product an order (an HTTP mapping): an order for each, each written once
        # (its own key, as place_order of that product alone), and the caller told there are several.
        placed: list[tuple[Product, Order]] = []
        for product, quantity in lines:
            key = f"{context.session_id}:{product.sku}:{quantity}"
            try:
                placed.append((product, shop.place_order(caller_of(context), [(product.sku, quantity)], key)))
            except ShopError as error:
                if not placed:
                    raise
                if isinstance(error, ShopUnavailable):
                    down = system_down(context, error)  # a colleague takes the rest
                    return {**down, "say": f"{_orders_said(placed)} {down['say']}"}
                return {"error": str(error), "say": f"{_orders_said(placed)} I'm sorry, {error}"}
        return {"order_numbers": [order.order_number for _, order in placed], "say": _orders_said(placed)}

    def _place_order(context: ToolContext, sku: str, quantity: int, confirmed: bool) -> dict[str, Any]:
        product = shop.get_product(sku)
        if product is None:
            # The 1.5B, never having searched, passed the caller's words as the code ("coffee machine"): what
            # the catalogue finds for them is offered, as search_products would, and nothing is written. Or a code
            # of its own ("PB-400" for "one of your power banks instead", blind27, 4 of 4): the caller's words.
            by_code, said = shop.search(sku, limit=3), without_taken_back(_last_said(context))
            found = by_code or [p for p in shop.search(said, limit=3) if may_mean(said, p)]
            if found:
                return _found(found, quantity, asked=sku if by_code else said)
            return {
                "error": f"no product {sku!r}",
                "say": "I'm sorry, I can't find that product. Which one would you like?",
            }
        if quantity < 1:
            return {"error": "quantity must be at least 1"}
        total = euros(product.price_cents * quantity)
        if not confirmed:
            say = f"That is {amount(quantity, product.name)} for {total} in total. Shall I place the order?"
            if _asks_a_variant(context, product):
                say = f"I'm afraid I can't note a size or a colour on the order. {say}"
            return {
                "say": say,
                "needs_confirmation": True,
                "proposal": proposed("place_order", product.name, sku=sku, quantity=quantity),
            }
        return _written(context, [(sku, quantity)], f"{context.session_id}:{sku}:{quantity}", total)

    return [
        tool_from_function(
            search_products, examples=SALES_PHRASES, says_result=True, changes_nothing=True, finds="products"
        ),
        tool_from_function(
            place_order,
            examples=("order it", "i'll take it", "buy it", "place the order"),
            says_result=True,
            validate=_unknown_codes,
        ),
    ]


def _orders_said(placed: Sequence[tuple[Product, Order]]) -> str:
    if len(placed) == 1:
        product, order = placed[0]
        return f"Your order of the {product.name} is placed, number {digits(order.order_number)}."
    each = joined((f"number {digits(o.order_number)} for the {p.name}" for p, o in placed), article="")
    return f"Your orders are placed, one for each: {each}. The total is {euros(sum(o.total_cents for _, o in placed))}."


def _basket(listed: Sequence[tuple[Product, int]], asked: Product | None = None) -> dict[str, Any]:
    """Several products found for the caller's list, as the caller hears them (the one `asked` about, with what it is),
    and one order of those in stock offered."""
    prices = joined(f"{product.name} for {euros(product.price_cents)}" for product, _ in listed)
    if asked is not None and asked.description:
        prices += f". The {asked.name}: {asked.description.rstrip('.')}"
    short = [f"I'm afraid the {p.name} is out of stock." for p, q in listed if p.stock < max(1, q)]
    able = [(product, quantity) for product, quantity in listed if product.stock >= max(1, quantity)]
    products = [product_json(product) for product, _ in listed]
    if len(able) < 2:
        say = " ".join([f"We have {prices}.", *short])
        return {"products": products, "say": say, **(_offer(*able[0]) if able else {})}
    first, *more = able
    ones = "one of each" if len(able) == 2 and all(q == 1 for _, q in able) else counted(able)
    say = " ".join([f"We have {prices}.", *short, f"Shall I order {ones} for you?"])
    item = joined((product.name for product, _ in able), article="")
    arguments = {"sku": first[0].sku, "quantity": first[1], "also": {p.sku: q for p, q in more}}
    told = {"described": True} if asked is not None and asked.description else {}
    return {"products": products, "say": say, **told, "proposal": proposed("place_order", item, **arguments)}


def _stock_line(product: Product, quantity: int) -> str:
    if product.stock <= 0:
        return "I'm afraid it's out of stock at the moment."
    if product.stock < quantity:
        return f"I'm afraid we have only {num2words(product.stock)} in stock."
    # Several are offered by name ("Shall I order 9 Smart light bulbs for you?"): "nine" alone, after "one in every
    # room ... in each of the three vans", left the caller unsure what nine counted (blind30).
    counted = num2words(quantity) if quantity == 1 else amount(quantity, product.name)
    return f"It's in stock. Shall I order {counted} for you?"


def _found(found: list[Product], quantity: int, *, described: bool = False, asked: str = "") -> dict[str, Any]:
    """What a search found, as the caller hears it: the best match (`described`: and what it is), its stock, and
    the offer to order it; a match only near what was `asked` for is said to be the closest."""
    best, quantity = found[0], max(1, quantity)
    what = f" {best.description.rstrip('.')}." if described and best.description else ""
    have = "The closest I have to that is" if near_match(asked, best) else "We have"
    say = f"{have} the {best.name} for {euros(best.price_cents)}.{what} " + _stock_line(best, quantity)
    # "described": the offer told about, for the session to say to a caller who asked about it (swarm.session).
    told = {"described": True} if what else {}
    return {"products": [product_json(p) for p in found], "say": say, **told, **_offer(best, quantity)}


def _offer(product: Product, quantity: int) -> dict[str, Any]:
    if product.stock < quantity or product.stock <= 0:
        return {}
    return {"proposal": proposed("place_order", product.name, sku=product.sku, quantity=quantity)}


# The colours a caller may ask a product in.
_COLOURS = re.compile(
    r"\b(?:black|white|blue|red|green|grey|gray|pink|silver|gold|yellow|orange|purple|brown|navy|beige|cream)\b"
)
# A question for a price, each one: "How much is the camera, and how much the earphones?" asks two.
_PRICE_QUESTION = re.compile(
    r"(?i)\bhow much\b|\bwhat (?:does|do|would|will)\b[^?.]{1,60}?\bcost\b|\bprice (?:of|for)\b|\bwhat price\b"
)
# A question its description does not answer: its price (said already), its delivery, a return, a payment.
_NOT_OF_IT = re.compile(
    rf"{_PRICE_QUESTION.pattern}|\b(?:deliver\w*|arrive|ship\w*|post|send|return\w*|refund\w*|warranty|guarantee"
    r"|pay\w*|card|when|discount|tomorrow|weekend|next day|in time|(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b",
    re.I,
)
# Words that point back at what is on offer: "off it", "the price of it", "that one".
_REFERS_BACK = re.compile(r"(?i)\b(?:it|its|that one|this one)\b")


def _questions(said: str) -> list[str]:
    """The questions in the words that a product's description may answer: not a price said back ("Fifty-nine? Pues,
    that is fair ... I'll have one." was told what the speaker is, and offered nine: blind39 Pwllheli)."""
    return [
        q
        for q in split_sentences(said)
        if q.rstrip().endswith("?") and not _NOT_OF_IT.search(q) and not _number_only(q)
    ]


def _number_only(sentence: str) -> bool:
    words = re.findall(r"[a-z]+|\d+", sentence.lower())
    return all(w.isdigit() or w in COUNT_WORDS or w in TENS_WORDS or w in _MONEY_WORDS for w in words)


_MONEY_WORDS = frozenset({"euro", "euros", "pound", "pounds", "quid", "and", "cents", "pence", "point", "hundred"})


def _prices_asked(said: str) -> int:
    """How many prices the words ask for: a question each, or "both" beside one."""
    asked = len(_PRICE_QUESTION.findall(said))
    return 2 if asked == 1 and re.search(r"(?i)\bboth\b", said) else asked


def _last_said(context: ToolContext) -> str:
    return next((e.text for e in reversed(context.session.events) if isinstance(e, UserText)), "")


def _asks_a_variant(context: ToolContext, product: Product) -> bool:
    """The caller's last words ask for a size or a colour the product's name does not have ("One pair I take. Size
    forty-four, black." of the Running shoes, blind14): an order holds a product and a count, so the read-back says
    that neither is noted, before the caller agrees to it."""
    said = _last_said(context)
    colours = set(_COLOURS.findall(said.lower())) - set(product.name.lower().split())
    return bool(SIZE.search(said) or colours)


def _offered_sku(events: Sequence[Event]) -> str | None:
    """The product of the order on offer the caller's last words answer (a search's proposal, or place_order's
    read-back)."""
    return next(iter(offered_lines(events, "place_order")), None)
