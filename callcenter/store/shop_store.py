"""The shop's products, orders and returns in SQLite or PostgreSQL.

Plain synchronous functions: the agents' tools call them from a worker thread, never on the event loop.
Every write is one transaction (Database.write), guarded so that concurrent callers on any number of nodes
can neither oversell nor place one order twice: the stock is decremented with a `stock >= n` guard that the
database re-checks under the row lock, and idempotency keys are unique.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from callcenter.store import shop_schema
from callcenter.store.catalogue import load_catalogue
from callcenter.store.catalogue_import import ImportResult, import_products
from callcenter.store.database import Connection, Database, open_database
from callcenter.store.domain import (
    InvalidRequest,
    NotReturnable,
    Order,
    OrderLine,
    OutOfStock,
    Product,
    Return,
    ShopError,
    UnknownProduct,
)
from callcenter.store.migrations import migrate
from callcenter.store.phones import customer_key
from callcenter.store.shop_search import PRODUCT_COLUMNS, misheard, name_match, ranked
from callcenter.store.spoken import spoken_digits, words
from callcenter.store.terms import query_terms

# Short enough to read out and to type on a keypad; widened only if the space fills up.
NUMBER_WIDTHS = (5, 6, 7, 8)
# The order in which an order's lines were said: SQLite's rowid, PostgreSQL's serial.
_LINE_ORDER = {"sqlite": "l.rowid", "postgresql": "l.line_id"}
# Where national phone numbers ("030 555555") are read when no region is given; see callcenter.store.phones.
DEFAULT_PHONE_REGION = "DE"
# What the demo's past orders were delivered to: a caller from another phone proves an order with it.
DEMO_POSTCODE = "10115"


class Shop:
    """The shop on the database a URL or a plain path names (a plain path is a SQLite file).

    A new database (no products yet) is filled from `catalogue_csv` (a .csv or .json file), else from the
    packaged demo catalogue; `seed_catalogue=False` leaves it empty (`voiceswarm shop import` fills it).
    `phone_region` is the country whose national numbers are read as its own: customers are found by the
    whole number in E.164, never by trailing digits.
    """

    def __init__(
        self,
        path: str | Path,
        catalogue_csv: str | Path | None = None,
        *,
        busy_timeout_s: float = 10.0,
        database: Database | None = None,
        phone_region: str = DEFAULT_PHONE_REGION,
        seed_catalogue: bool = True,
    ) -> None:
        self.path = str(path)
        self.phone_region = phone_region
        self._db = database or open_database(path, busy_timeout_s=busy_timeout_s)
        try:
            self.schema_version = migrate(
                self._db,
                shop_schema.COMPONENT,
                shop_schema.MIGRATIONS,
                then=lambda conn: _prepare(conn, catalogue_csv, seed_catalogue, phone_region),
            )
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def open(cls, path: str | Path, catalogue_csv: str | Path | None = None) -> Shop:
        return cls(path, catalogue_csv)

    @property
    def database(self) -> Database:
        return self._db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Shop:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- products --

    def products(self) -> list[Product]:
        """The whole catalogue, by sku."""
        rows = self._db.read(lambda conn: conn.all(f"SELECT {PRODUCT_COLUMNS} FROM products ORDER BY sku"))
        return [_product(row) for row in rows]

    def search(self, text: str, limit: int = 3) -> list[Product]:
        """Products best matching what the caller said, best first; [] if nothing does."""
        if not isinstance(text, str):
            return []
        terms = query_terms(text)
        if not terms.named():
            return []
        limit = max(1, min(int(limit), 50))

        def find(conn: Connection) -> list[Product]:
            # Products matching every word the caller said come first; then the rest,
            # so "a phone charger with a long cable" still offers something.
            found: list[Product] = []
            if terms.words:
                found = [_product(row) for row in ranked(conn, terms.words, True, limit)]
            if len(found) < limit:
                seen = {p.sku for p in found}
                more = ranked(conn, terms.named(), False, limit + len(found))
                found.extend(p for p in map(_product, more) if p.sku not in seen)
            if not found:
                found = [_product(row) for row in misheard(conn, terms.words, limit)]
            return found[:limit]

        return self._db.read(find)

    def get_product(self, sku: str) -> Product | None:
        return self._db.read(lambda conn: _find_product(conn, sku))

    def import_catalogue(self, catalogue: str | Path, *, replace: bool = False) -> ImportResult:
        """Add and update the products of a .csv or .json file, all or none (one transaction); `replace` also
        removes the products the file does not list. Raises CatalogueError naming every bad row."""
        products = load_catalogue(catalogue)  # every row checked before the first is written
        return self._db.write(lambda conn: import_products(conn, products, replace=replace))

    # -- orders --

    def customer_key(self, phone: str) -> str:
        """The customer a phone number names: the number in E.164, or "" (withheld, malformed, unallocated)."""
        return customer_key(phone, self.phone_region)

    def place_order(
        self,
        customer_phone: str,
        items: Sequence[tuple[str, int]],
        idempotency_key: str,
        *,
        postcode: str = "",
        email: str = "",
    ) -> Order:
        """Sell ``items`` to the caller in one transaction; `postcode` and `email` are the delivery's, what a
        caller from another phone proves the order with.

        Raises UnknownProduct, OutOfStock or InvalidRequest and then changes nothing.
        The same idempotency_key again returns the first order, whatever the items.
        """
        _require_key(idempotency_key)
        wanted = _checked_items(items)

        def sell(conn: Connection) -> Order:
            conn.lock_key(idempotency_key)
            existing = _order_id_by_key(conn, idempotency_key)
            if existing is not None:
                return _load_order(conn, existing)
            lines = _resolve(conn, wanted)
            # By sku: two orders of the same products then lock their rows in the same order and cannot
            # deadlock each other on PostgreSQL.
            for product, quantity in sorted(lines, key=lambda line: line[0].sku):
                _take_stock(conn, product, quantity)
            contact = _Contact(customer_phone, self.customer_key(customer_phone), postcode, email)
            order_id = _insert_order(conn, contact, lines, idempotency_key, _now(), status="placed")
            return _load_order(conn, order_id)

        return self._db.write(sell)

    def seed_demo_order(
        self,
        phone: str,
        items: Sequence[tuple[str, int]],
        days_ago: float,
        *,
        status: str = "delivered",
        idempotency_key: str | None = None,
        postcode: str = DEMO_POSTCODE,
        email: str = "",
    ) -> Order:
        """Record a past purchase for the demo, in one transaction, delivered to `postcode`.

        Stock is not touched: the goods left the warehouse ``days_ago``. The default key
        is made of the arguments, so running the demo again does not pile up orders.
        """
        wanted = _checked_items(items)
        contact = _Contact(phone, self.customer_key(phone), postcode, email)
        key = idempotency_key or "demo:{}:{}:{}".format(
            contact.key or phone.strip(), ",".join(f"{sku}x{quantity}" for sku, quantity in wanted), days_ago
        )

        def seed(conn: Connection) -> Order:
            conn.lock_key(key)
            existing = _order_id_by_key(conn, key)
            if existing is not None:
                return _load_order(conn, existing)
            lines = _resolve(conn, wanted)
            created = _now() - timedelta(days=days_ago)
            return _load_order(conn, _insert_order(conn, contact, lines, key, created, status=status))

        return self._db.write(seed)

    def find_orders(
        self,
        order_number: str | None = None,
        customer_phone: str | None = None,
        product_text: str | None = None,
        limit: int = 5,
    ) -> list[Order]:
        """Orders by number and/or caller's phone, newest first.

        One of order_number or customer_phone is needed: the product words alone would
        list other customers' orders. The phone matches only as a whole number (E.164), and a
        withheld or invalid one matches nothing. product_text keeps orders with a matching line.
        """
        where: list[str] = []
        params: list[object] = []
        if order_number is not None:
            number = spoken_digits(order_number)
            if not number:
                return []
            where.append("o.order_number = ?")
            params.append(number)
        if customer_phone is not None:
            key = self.customer_key(customer_phone)
            if not key:
                return []
            where.append("o.phone_key = ?")
            params.append(key)
        if not where:
            return []
        limit = max(1, min(int(limit), 50))

        def find(conn: Connection) -> list[Order]:
            ids = _order_ids(conn, where, params, product_text, limit)
            return [_load_order(conn, order_id) for order_id in ids]

        return self._db.read(find)

    # -- returns --

    def create_return(self, order_number: str, sku: str, quantity: int, reason: str, idempotency_key: str) -> Return:
        """Take back ``quantity`` of ``sku`` from an order and restock it, in one transaction.

        Raises NotReturnable (no such order, not in it, more than is left to return) or
        InvalidRequest. The same idempotency_key again returns the first return.
        """
        _require_key(idempotency_key)
        _require_quantity(quantity)

        def take_back(conn: Connection) -> Return:
            conn.lock_key(idempotency_key)
            existing = conn.one("SELECT id FROM returns WHERE idempotency_key = ?", (idempotency_key,))
            if existing is not None:
                return _load_return(conn, existing["id"])
            order_id, line = _returnable_line(conn, order_number, sku, quantity)
            conn.execute("UPDATE products SET stock = stock + ? WHERE sku = ?", (quantity, line.sku))
            row = conn.one(
                "INSERT INTO returns (return_number, order_id, sku, quantity, reason, created_at,"
                " idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    _new_number(conn, "returns", "return_number"),
                    order_id,
                    line.sku,
                    quantity,
                    str(reason).strip(),
                    _timestamp(_now()),
                    idempotency_key,
                ),
            )
            _mark_if_fully_returned(conn, order_id)
            return _load_return(conn, row["id"])

        return self._db.write(take_back)

    def find_return(self, return_number: str) -> Return | None:
        def find(conn: Connection) -> Return | None:
            row = conn.one("SELECT id FROM returns WHERE return_number = ?", (return_number,))
            return _load_return(conn, row["id"]) if row else None

        return self._db.read(find)


# --- helpers (all run inside one read or write transaction) ---------------------------


def _prepare(conn: Connection, catalogue_csv: str | Path | None, seed: bool, region: str) -> None:
    if seed:
        _seed_catalogue(conn, catalogue_csv)
    _rekey_orders(conn, region)


def _rekey_orders(conn: Connection, region: str) -> None:
    # Rows written before schema version 2 hold the number's last nine digits; a key of version 2 starts with
    # "+" or is empty, so only old rows are selected, once (a start-up scan, not a per-call cost).
    # substr, not LIKE '+%': a literal % would be a placeholder to psycopg.
    rows = conn.all("SELECT id, customer_phone FROM orders WHERE phone_key <> '' AND substr(phone_key, 1, 1) <> '+'")
    conn.executemany(
        "UPDATE orders SET phone_key = ? WHERE id = ?",
        [(customer_key(row["customer_phone"], region), row["id"]) for row in rows],
    )


def _seed_catalogue(conn: Connection, catalogue_csv: str | Path | None) -> None:
    # Only a fresh database gets the catalogue: reopening must not duplicate it
    # nor undo the stock changes of past orders.
    if conn.one("SELECT 1 AS found FROM products LIMIT 1") is None:
        conn.executemany(
            "INSERT INTO products (sku, name, description, price_cents, stock, category) VALUES (?, ?, ?, ?, ?, ?)",
            [(p.sku, p.name, p.description, p.price_cents, p.stock, p.category) for p in load_catalogue(catalogue_csv)],
        )


def _order_ids(
    conn: Connection, where: list[str], params: list[object], product_text: str | None, limit: int
) -> list[int]:
    def query(match: tuple[str, list[object]] | None) -> list[int]:
        sql = f"SELECT o.id FROM orders o WHERE {' AND '.join(where)}"
        args = list(params)
        if match is not None:
            condition, extra = match
            sql += f" AND EXISTS (SELECT 1 FROM order_lines l WHERE l.order_id = o.id AND {condition})"
            args.extend(extra)
        sql += " ORDER BY o.created_at DESC, o.id DESC LIMIT ?"
        return [row["id"] for row in conn.all(sql, [*args, limit])]

    terms = query_terms(product_text) if isinstance(product_text, str) else None
    if terms is None or not terms.any():
        return query(None)  # nothing but filler words: no filter
    # "wireless headphones" should not also bring up the wireless mouse, but
    # "the shoes that were too small" should still find the running shoes.
    if terms.words:
        found = query(name_match(conn, terms.words, True))
        if found:
            return found
    return query(name_match(conn, terms.any(), False))


def _product(row: Any) -> Product:
    return Product(
        sku=row["sku"],
        name=row["name"],
        description=row["description"],
        price_cents=row["price_cents"],
        stock=row["stock"],
        category=row["category"],
    )


def _find_product(conn: Connection, sku: str) -> Product | None:
    if not isinstance(sku, str):
        return None
    row = conn.one(f"SELECT {PRODUCT_COLUMNS} FROM products WHERE sku = ?", (sku.strip().upper(),))
    if row is None:
        # A model or a caller may say "hp 100" or "HP100" for HP-100.
        compact = "".join(words(sku)).upper()
        row = conn.one(
            f"SELECT {PRODUCT_COLUMNS} FROM products WHERE upper(replace(replace(sku, '-', ''), ' ', '')) = ?",
            (compact,),
        )
    return _product(row) if row is not None else None


def _known_product(conn: Connection, sku: str) -> Product:
    product = _find_product(conn, sku)
    if product is None:
        raise UnknownProduct(sku)
    return product


def _resolve(conn: Connection, wanted: Sequence[tuple[str, int]]) -> list[tuple[Product, int]]:
    # "two chargers ... and another charger" is one line of three, and so are
    # "HP100" and "hp-100".
    merged: dict[str, tuple[Product, int]] = {}
    for sku, quantity in wanted:
        product = _known_product(conn, sku)
        _, before = merged.get(product.sku, (product, 0))
        merged[product.sku] = (product, before + quantity)
    return list(merged.values())


def _take_stock(conn: Connection, product: Product, quantity: int) -> None:
    # The WHERE guard is the last word: SQLite runs it inside its one write transaction, PostgreSQL
    # re-checks it on the newest row once a concurrent seller has committed. A request can never oversell.
    updated = conn.execute(
        "UPDATE products SET stock = stock - ? WHERE sku = ? AND stock >= ?",
        (quantity, product.sku, quantity),
    ).rowcount
    if updated != 1:
        raise OutOfStock(_known_product(conn, product.sku), quantity)  # now with the real stock


def _require_key(idempotency_key: str) -> None:
    if not isinstance(idempotency_key, str) or not idempotency_key.strip():
        raise InvalidRequest("An idempotency key is needed so that a retry cannot sell twice.")


def _require_quantity(quantity: int) -> None:
    if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity < 1:
        raise InvalidRequest(f"The quantity must be a whole number of at least one, not {quantity!r}.")


def _checked_items(items: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    checked: list[tuple[str, int]] = []
    for item in items:
        try:
            sku, quantity = item
        except (TypeError, ValueError):
            message = f"An item is a product code and a quantity, not {item!r}."
            raise InvalidRequest(message) from None
        _require_quantity(quantity)
        checked.append((str(sku).strip().upper(), quantity))
    if not checked:
        raise InvalidRequest("An order needs at least one item.")
    return checked


def _order_id_by_key(conn: Connection, idempotency_key: str) -> int | None:
    row = conn.one("SELECT id FROM orders WHERE idempotency_key = ?", (idempotency_key,))
    return None if row is None else row["id"]


@dataclass(frozen=True, slots=True)
class _Contact:
    """Who an order is for: the number as given, its customer key, and what verifies a caller for it."""

    phone: str
    key: str
    postcode: str
    email: str


def _insert_order(
    conn: Connection,
    contact: _Contact,
    lines: Sequence[tuple[Product, int]],
    idempotency_key: str,
    created: datetime,
    *,
    status: str,
) -> int:
    total = sum(product.price_cents * quantity for product, quantity in lines)
    row = conn.one(
        "INSERT INTO orders (order_number, customer_phone, phone_key, created_at, status,"
        " total_cents, idempotency_key, postcode, email) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            _new_number(conn, "orders", "order_number"),
            contact.phone.strip(),
            contact.key,
            _timestamp(created),
            status,
            total,
            idempotency_key,
            contact.postcode.strip(),
            contact.email.strip(),
        ),
    )
    order_id: int = row["id"]
    conn.executemany(
        "INSERT INTO order_lines (order_id, sku, quantity, unit_price_cents) VALUES (?, ?, ?, ?)",
        [(order_id, p.sku, quantity, p.price_cents) for p, quantity in lines],
    )
    return order_id


def _new_number(conn: Connection, table: str, column: str) -> str:
    # Random rather than sequential: a caller cannot guess a neighbour's order number.
    # Checked inside the write transaction; on PostgreSQL a node that drew the same number at the same
    # moment loses on the unique key, and Database.write tries again.
    for width in NUMBER_WIDTHS:
        low = 10 ** (width - 1)  # no leading zero to be lost when spoken
        for _ in range(20):
            candidate = str(low + secrets.randbelow(9 * low))
            if conn.one(f"SELECT 1 AS taken FROM {table} WHERE {column} = ?", (candidate,)) is None:
                return candidate
    raise ShopError(f"No free {column.replace('_', ' ')} is left; widen NUMBER_WIDTHS.")


def _load_order(conn: Connection, order_id: int) -> Order:
    row = conn.one("SELECT * FROM orders WHERE id = ?", (order_id,))
    lines = conn.all(
        "SELECT l.sku, p.name, l.quantity, l.unit_price_cents,"
        " (SELECT coalesce(sum(r.quantity), 0) FROM returns r"
        "   WHERE r.order_id = l.order_id AND r.sku = l.sku) AS returned"
        " FROM order_lines l JOIN products p ON p.sku = l.sku"
        f" WHERE l.order_id = ? ORDER BY {_LINE_ORDER[conn.dialect]}",
        (order_id,),
    )
    return Order(
        order_number=row["order_number"],
        customer_phone=row["customer_phone"],
        created_at=datetime.fromisoformat(row["created_at"]),
        customer_key=row["phone_key"],
        postcode=row["postcode"],
        email=row["email"],
        status=row["status"],
        total_cents=row["total_cents"],
        lines=tuple(
            OrderLine(r["sku"], r["name"], r["quantity"], r["unit_price_cents"], int(r["returned"])) for r in lines
        ),
    )


def _returnable_line(conn: Connection, order_number: str, sku: str, quantity: int) -> tuple[int, OrderLine]:
    number = spoken_digits(order_number) if isinstance(order_number, str) else ""
    # On PostgreSQL the order's row is locked, so two returns of its last item on two nodes are one
    # after the other and the second sees the first; SQLite's write transaction already is.
    lock = " FOR UPDATE" if conn.dialect == "postgresql" else ""
    row = conn.one(f"SELECT id FROM orders WHERE order_number = ?{lock}", (number,))
    if row is None:
        said = f"the number {' '.join(number)}" if number else "that number"
        raise NotReturnable(f"I can't find an order with {said}.")
    order = _load_order(conn, row["id"])
    product = _find_product(conn, sku)
    line = next((ln for ln in order.lines if product is not None and ln.sku == product.sku), None)
    if line is None:
        raise NotReturnable(f"Order {order.order_number} does not contain the product {sku}.")
    if quantity > line.returnable_quantity:
        if line.returnable_quantity == 0:
            raise NotReturnable(f"The {line.name} from order {order.order_number} has already been returned.")
        raise NotReturnable(
            f"Only {line.returnable_quantity} of the {line.name} from order "
            f"{order.order_number} can still be returned, not {quantity}."
        )
    return row["id"], line


def _mark_if_fully_returned(conn: Connection, order_id: int) -> None:
    order = _load_order(conn, order_id)
    if all(line.returnable_quantity == 0 for line in order.lines):
        conn.execute("UPDATE orders SET status = 'returned' WHERE id = ?", (order_id,))


def _load_return(conn: Connection, return_id: int) -> Return:
    row = conn.one(
        "SELECT r.return_number, r.sku, r.quantity, r.reason, r.created_at, o.order_number, p.name,"
        " l.unit_price_cents FROM returns r"
        " JOIN orders o ON o.id = r.order_id"
        " JOIN products p ON p.sku = r.sku"
        " JOIN order_lines l ON l.order_id = r.order_id AND l.sku = r.sku"
        " WHERE r.id = ?",
        (return_id,),
    )
    return Return(
        return_number=row["return_number"],
        order_number=row["order_number"],
        sku=row["sku"],
        product_name=row["name"],
        quantity=row["quantity"],
        reason=row["reason"],
        created_at=datetime.fromisoformat(row["created_at"]),
        refund_cents=row["quantity"] * row["unit_price_cents"],
    )


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(moment: datetime) -> str:
    # Fixed-width UTC text sorts in time order, which "newest first" relies on.
    return moment.astimezone(UTC).isoformat(timespec="microseconds")
