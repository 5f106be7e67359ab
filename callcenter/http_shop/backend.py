"""HttpShop: the agents' shop (callcenter.shop_backend.ShopBackend) served by the call centre's own order system over
HTTP, as [shop.http] maps it. The tools, their prompts, read-backs, confirmations and say lines are the built-in
store's; only where the data lives changes.

What an order system may lack, and what is done then:
- no search by the caller's words (products.query empty): the product list is read and matched here by name;
- no order lookup by phone: the order list is read and filtered here by the whole number in E.164;
- no returns (no [[shop.http.create_return]]): create_return raises ForAPerson, and the refund agent hands the
  caller to a colleague, who registers the return in the shop's own back office.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import httpx
from rapidfuzz import fuzz

from callcenter.http_shop.client import NOT_UNDERSTOOD, NotFound, Refused, ShopClient
from callcenter.http_shop.fields import FieldMissing, fill, flatten, placeholders, value_at
from callcenter.http_shop.mapping import HttpShopConfig, Operation, Orders, Products, Step
from callcenter.store.domain import (
    ForAPerson,
    InvalidRequest,
    OneProductPerOrder,
    Order,
    OrderLine,
    OutOfStock,
    Product,
    Return,
    ShopError,
    ShopUnavailable,
    UnknownProduct,
)
from callcenter.store.phones import customer_key
from callcenter.store.spoken import spoken_digits, words
from callcenter.store.terms import query_terms

RETURNS_BY_A_PERSON = (
    "returns are registered by a colleague in our order system. I'll put you through to one, please hold."
)
# Idempotency keys (and their orders) kept per process; a call repeats its key within minutes.
REMEMBERED_KEYS = 10_000
# A caller's misheard product name still finds it ("handphones"), as in the built-in store's search.
_FUZZY_FLOOR = 75


class HttpShop:
    def __init__(
        self, config: HttpShopConfig, *, phone_region: str = "DE", transport: httpx.BaseTransport | None = None
    ) -> None:
        assert config.products is not None and config.orders is not None  # load_mapping requires both
        self.config = config
        self.phone_region = phone_region
        self._products: Products = config.products
        self._orders: Orders = config.orders
        self._client = ShopClient(config, transport)
        # Written orders by idempotency key: the same key again answers the first order and writes nothing, also
        # when the API ignores Idempotency-Key. One lock per key: two threads with one key write once.
        # Bounded: a key is repeated within its call (minutes), not after thousands of later orders.
        self._written: OrderedDict[str, Order] = OrderedDict()
        self._returned: OrderedDict[str, Return] = OrderedDict()
        self._keys: OrderedDict[str, threading.Lock] = OrderedDict()
        self._guard = threading.Lock()

    def close(self) -> None:
        self._client.close()

    def customer_key(self, phone: str) -> str:
        return customer_key(phone, self.phone_region)

    # -- products --

    def products(self) -> list[Product]:
        fetch = _Links(self._client)
        return [self._product(item, fetch) for item in self._listed(None, fetch)]

    def search(self, text: str, limit: int = 3) -> list[Product]:
        if not isinstance(text, str) or not query_terms(text).named():
            return []
        limit = max(1, min(int(limit), 50))
        fetch = _Links(self._client)
        listed = self._listed(text if self._products.query else None, fetch)
        if not self._products.query:
            listed = _best_by_name(listed, text, self._products.name, fetch)
        return [self._product(item, fetch) for item in listed[:limit]]

    def get_product(self, sku: str) -> Product | None:
        record = self._product_record(sku)
        return None if record is None else self._product(record, _Links(self._client))

    def _listed(self, text: str | None, fetch: _Links) -> list[Any]:
        params = {self._products.query: text} if text is not None else None
        return _items(fetch.get(self._client.url(self._products.list.path), params), self._products.items)

    def _product_record(self, sku: str) -> Any | None:
        code = str(sku).strip()
        if not any(c.isalnum() for c in code) or not all(c.isalnum() or c in "-_." for c in code):
            return None  # a code the model made up with a slash, a space or only dots names no product, and no path
        path = _path(self._products.get, {self._products.get.path_parameters[0]: code})
        try:
            return self._client.get(self._client.url(path))
        except NotFound:
            return None

    def _product(self, record: Any, fetch: _Links) -> Product:
        """A Product of a list item or a product's record: what the list item lacks is read from the product's."""
        mapping = self._products

        def read(path: str, body: Any) -> Any:
            try:
                return value_at(body, path, fetch)
            except FieldMissing:
                sku = value_at(record, mapping.sku, fetch)
                full = fetch.get(self._client.url(_path(mapping.get, {mapping.get.path_parameters[0]: str(sku)})))
                return value_at(full, path, fetch)

        try:
            return Product(
                sku=str(read(mapping.sku, record)),
                name=str(read(mapping.name, record)),
                description=str(read(mapping.description, record)) if mapping.description else "",
                price_cents=_cents(read(mapping.price, record), mapping.price_unit),
                stock=_whole(read(mapping.stock, record)),
                category="",
            )
        except FieldMissing as error:
            raise ShopUnavailable(NOT_UNDERSTOOD, f"a product without a mapped field: {error}") from None

    # -- orders --

    def place_order(
        self,
        customer_phone: str,
        items: Sequence[tuple[str, int]],
        idempotency_key: str,
        *,
        postcode: str = "",
        email: str = "",
    ) -> Order:
        if not isinstance(idempotency_key, str) or not idempotency_key.strip():
            raise InvalidRequest("An idempotency key is needed so that a retry cannot sell twice.")
        if len(items) != 1:
            # The tools order one product a call of place_order; a basket of several is the API's own business.
            raise OneProductPerOrder("An order over the order system holds one product.")
        sku, quantity = items[0]
        if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity < 1:
            raise InvalidRequest(f"The quantity must be a whole number of at least one, not {quantity!r}.")
        with self._lock(idempotency_key):
            if idempotency_key in self._written:
                return self._written[idempotency_key]
            record = self._product_record(sku)
            if record is None:
                raise UnknownProduct(str(sku))
            fetch = _Links(self._client)
            product = self._product(record, fetch)
            if product.stock < quantity:
                raise OutOfStock(product, quantity)
            values = {
                **self._common(customer_phone, postcode, email, idempotency_key),
                "sku": product.sku,
                "quantity": quantity,
            }
            wanted = placeholders([[s.parameters, s.headers, s.body] for s in self.config.place_order])
            values.update(flatten("product", record, fetch, wanted))
            number = self._run(self.config.place_order, values, idempotency_key, fetch)
            order = Order(
                order_number=number,
                customer_phone=customer_phone.strip(),
                created_at=datetime.now(UTC),
                status="placed",
                total_cents=product.price_cents * quantity,
                lines=(OrderLine(product.sku, product.name, quantity, product.price_cents),),
                customer_key=self.customer_key(customer_phone),
                postcode=postcode,
                email=email,
            )
            _remember(self._written, idempotency_key, order)
            return order

    def find_orders(
        self,
        order_number: str | None = None,
        customer_phone: str | None = None,
        product_text: str | None = None,
        limit: int = 5,
    ) -> list[Order]:
        number = spoken_digits(order_number) if isinstance(order_number, str) else None
        key = self.customer_key(customer_phone) if isinstance(customer_phone, str) else None
        if (order_number is not None and not number) or (customer_phone is not None and not key):
            return []
        if number is None and key is None:
            return []  # the product words alone would list other customers' orders
        mapping = self._orders
        fetch = _Links(self._client)
        found: list[tuple[datetime, Any]] = []
        # An API that filters by phone is asked to; its answer is still filtered here by the whole number.
        params = {mapping.phone_query: key} if mapping.phone_query and key else None
        try:
            for item in _items(fetch.get(self._client.url(mapping.list.path), params), mapping.items):
                if number is not None and spoken_digits(str(value_at(item, mapping.number, fetch))) != number:
                    continue
                # The whole number in E.164, never trailing digits: the store's rule (callcenter.store.phones).
                if key is not None and self.customer_key(str(value_at(item, mapping.phone, fetch))) != key:
                    continue
                found.append((_moment(value_at(item, mapping.placed, fetch)), item))
            found.sort(key=lambda pair: pair[0], reverse=True)
            orders = [self._order(item, placed, fetch) for placed, item in found]
        except FieldMissing as error:
            raise ShopUnavailable(NOT_UNDERSTOOD, f"an order without a mapped field: {error}") from None
        limit = max(1, min(int(limit), 50))
        if product_text and (terms := set(query_terms(product_text).any())):
            matching = [o for o in orders if any(terms & set(words(line.name)) for line in o.lines)]
            return matching[:limit]
        return orders[:limit]

    def _order(self, item: Any, placed: datetime, fetch: _Links) -> Order:
        mapping = self._orders

        def optional(path: str) -> str:
            return "" if not path else str(value_at(item, path, fetch) or "")

        lines = []
        for line in _items(value_at(item, mapping.lines, fetch), ""):
            quantity = _whole(value_at(line, mapping.line_quantity, fetch))
            line_cents = _cents(value_at(line, mapping.line_total, fetch), self._products.price_unit)
            lines.append(
                OrderLine(
                    str(value_at(line, mapping.line_sku, fetch)),
                    str(value_at(line, mapping.line_name, fetch)),
                    quantity,
                    line_cents // max(1, quantity),
                )
            )
        total = optional(mapping.total)
        phone = str(value_at(item, mapping.phone, fetch))
        return Order(
            order_number=spoken_digits(str(value_at(item, mapping.number, fetch))),
            customer_phone=phone,
            created_at=placed,
            status=optional(mapping.status) or "placed",
            total_cents=_cents(total, self._products.price_unit) if total else sum(ln.total_cents for ln in lines),
            lines=tuple(lines),
            customer_key=self.customer_key(phone),
            postcode=optional(mapping.postcode),
            email=optional(mapping.email),
        )

    # -- returns --

    def create_return(self, order_number: str, sku: str, quantity: int, reason: str, idempotency_key: str) -> Return:
        if not self.config.create_return:
            raise ForAPerson(RETURNS_BY_A_PERSON)
        with self._lock(idempotency_key):
            if idempotency_key in self._returned:
                return self._returned[idempotency_key]
            orders = self.find_orders(order_number=order_number, limit=1)
            line = next((ln for o in orders for ln in o.lines if ln.sku == str(sku).strip()), None)
            if not orders or line is None:
                raise ShopError(f"Order {' '.join(spoken_digits(order_number))} has no such item.")
            values = {
                **self._common(orders[0].customer_phone, orders[0].postcode, orders[0].email, idempotency_key),
                "order_number": orders[0].order_number,
                "sku": line.sku,
                "quantity": quantity,
                "reason": reason,
            }
            number = self._run(self.config.create_return, values, idempotency_key, _Links(self._client))
            made = Return(
                number, orders[0].order_number, line.sku, line.name, quantity, reason, datetime.now(UTC),
                quantity * line.unit_price_cents,
            )  # fmt: skip
            _remember(self._returned, idempotency_key, made)
            return made

    def find_return(self, return_number: str) -> Return | None:
        return next((r for r in self._returned.values() if r.return_number == return_number), None)

    # -- the writes --

    def _common(self, phone: str, postcode: str, email: str, idempotency_key: str) -> dict[str, Any]:
        return {
            "phone": self.customer_key(phone),
            "phone_as_given": phone.strip(),
            "postcode": postcode,
            "email": email,
            "idempotency_key": idempotency_key,
            # Letters and digits only, new for every attempt: a session or basket of its own (oscar-api cuts a
            # "-hex" tail off its Session-Id, so two keys differing there would share one basket).
            "request_id": "r" + hashlib.sha256(f"{idempotency_key}:{secrets.token_hex(8)}".encode()).hexdigest()[:32],
            "host": self._client.host,
            "url": self.config.url,
        }

    def _run(self, steps: Sequence[Step], values: dict[str, Any], idempotency_key: str, fetch: _Links) -> str:
        previous: Any = None
        for index, step in enumerate(steps):
            if previous is not None:
                wanted = placeholders([step.parameters, step.headers, step.body])
                values = {**values, **flatten("previous", previous, fetch, wanted)}
            path_values = {k: v for k, v in step.parameters.items() if k in step.operation.path_parameters}
            query = {k: fill(v, values) for k, v in step.parameters.items() if k not in path_values}
            try:
                previous = self._client.write(
                    step.operation.method,
                    self._client.url(_path(step.operation, {k: str(fill(v, values)) for k, v in path_values.items()})),
                    idempotency_key=f"{idempotency_key}:{index}" if index else idempotency_key,
                    body=fill(step.body, values) if step.body is not None else None,
                    params=query or None,
                    headers={k: str(fill(v, values)) for k, v in step.headers.items()},
                    credentials=step.credentials,
                )
            except Refused as error:
                raise Refused("our order system did not accept the order.", error.detail, error.status) from None
            except FieldMissing as error:
                raise ShopUnavailable(NOT_UNDERSTOOD, str(error)) from None
        try:
            return spoken_digits(str(value_at(previous, steps[-1].result, fetch))) or _no_number(steps[-1])
        except FieldMissing as error:
            raise ShopUnavailable(NOT_UNDERSTOOD, f"the last answer has no number: {error}") from None

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            lock = self._keys.setdefault(key, threading.Lock())
            self._keys.move_to_end(key)
            while len(self._keys) > REMEMBERED_KEYS:
                self._keys.popitem(last=False)
            return lock


def _remember(ledger: OrderedDict[str, Any], key: str, value: Any) -> None:
    ledger[key] = value
    while len(ledger) > REMEMBERED_KEYS:
        ledger.popitem(last=False)


class _Links:
    """GETs of one lookup, each URL fetched once (a product's price and stock behind one detail record)."""

    def __init__(self, client: ShopClient) -> None:
        self._client = client
        self._seen: dict[str, Any] = {}

    def get(self, url: str, params: dict[str, Any] | None = None) -> Any:
        if params:
            return self._client.get(url, params)
        if url not in self._seen:
            self._seen[url] = self._client.get(url)
        return self._seen[url]

    def __call__(self, url: str) -> Any:
        return self.get(url)


def _no_number(step: Step) -> str:
    raise ShopUnavailable(NOT_UNDERSTOOD, f"{step.operation.operation_id} answered no number in {step.result!r}")


def _path(operation: Operation, values: dict[str, str]) -> str:
    path = operation.path
    for name, value in values.items():
        path = path.replace("{" + name + "}", httpx.URL("/" + value).raw_path.decode()[1:] if value else "")
    return path


def _items(body: Any, path: str) -> list[Any]:
    found = value_at(body, path, _no_fetch) if path else body
    if not isinstance(found, list):
        raise ShopUnavailable(NOT_UNDERSTOOD, f"expected a list at {path or 'the body'}, got {type(found).__name__}")
    return found


def _no_fetch(url: str) -> Any:
    raise FieldMissing(f"{url}: the list must be in the response itself")


def _best_by_name(items: list[Any], text: str, name_path: str, fetch: Callable[[str], Any]) -> list[Any]:
    """The listed products whose names best match the caller's words, best first; misheard names by similarity."""
    terms = query_terms(text)
    scored: list[tuple[float, int, Any]] = []
    for position, item in enumerate(items):
        name = str(value_at(item, name_path, fetch))
        said = set(words(name))
        hits = sum(1 for word in terms.words if word in said or _stem(word) in {_stem(w) for w in said})
        extra = sum(1 for word in terms.extra if word in said)
        similar = fuzz.token_set_ratio(" ".join(terms.words), name.lower()) if terms.words else 0
        if hits or extra or similar >= _FUZZY_FLOOR:
            scored.append((hits * 100 + extra * 10 + similar / 100, -position, item))
    scored.sort(key=lambda entry: (entry[0], entry[1]), reverse=True)
    return [item for _, _, item in scored]


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    # "chargers" finds "charger", "headphones" finds "headphone"
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _cents(value: Any, unit: str) -> int:
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ShopUnavailable(NOT_UNDERSTOOD, f"a price that is not a number: {value!r}") from None
    return int(amount if unit == "cents" else (amount * 100).to_integral_value())


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str) or not str(value).lstrip("-").isdigit():
        raise ShopUnavailable(NOT_UNDERSTOOD, f"a quantity that is not a whole number: {value!r}")
    return int(value)


def _moment(value: Any) -> datetime:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ShopUnavailable(NOT_UNDERSTOOD, f"a date that is not ISO 8601: {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
