"""The shop's products, orders and returns in SQLite.

Plain synchronous functions: the agents' tools call them from a worker thread.
"""

from __future__ import annotations

import csv
import io
import re
import secrets
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from importlib import resources
from pathlib import Path

__all__ = [
    "CatalogueError",
    "InvalidRequest",
    "NotReturnable",
    "Order",
    "OrderLine",
    "OutOfStock",
    "Product",
    "Return",
    "Shop",
    "ShopError",
    "UnknownProduct",
    "spoken_digits",
]

SCHEMA_VERSION = 1
# A phone number is compared on its trailing digits so that "+49 170 1234567",
# "0049 170 1234567" and "0170 1234567" are the same caller.
PHONE_KEY_DIGITS = 9
# Short enough to read out and to type on a keypad; widened only if the space fills up.
NUMBER_WIDTHS = (5, 6, 7, 8)
# Longer input is a transcription accident, not a product description.
MAX_QUERY_CHARS = 500
MAX_QUERY_TERMS = 32

_SCHEMA = """
CREATE TABLE IF NOT EXISTS products (
    sku         TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    price_cents INTEGER NOT NULL CHECK (price_cents >= 0),
    stock       INTEGER NOT NULL CHECK (stock >= 0),
    category    TEXT NOT NULL DEFAULT ''
);
-- Porter stemming makes "headphones" find "headphone" and "chargers" find "charger".
-- keywords holds the sku and name with hyphens removed, so "USB-C" is also "usbc".
-- The FTS table joins products by sku, not rowid: VACUUM may renumber the rowids of a
-- table whose primary key is not an INTEGER.
CREATE VIRTUAL TABLE IF NOT EXISTS products_fts USING fts5(
    sku UNINDEXED, name, description, category, keywords,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS products_fts_insert AFTER INSERT ON products BEGIN
    INSERT INTO products_fts (sku, name, description, category, keywords)
    VALUES (new.sku, new.name, new.description, new.category,
            replace(new.sku || ' ' || new.name, '-', ''));
END;
CREATE TRIGGER IF NOT EXISTS products_fts_delete AFTER DELETE ON products BEGIN
    DELETE FROM products_fts WHERE sku = old.sku;
END;
-- Stock changes on every order; only text changes need the index touched.
CREATE TRIGGER IF NOT EXISTS products_fts_update
AFTER UPDATE OF sku, name, description, category ON products BEGIN
    DELETE FROM products_fts WHERE sku = old.sku;
    INSERT INTO products_fts (sku, name, description, category, keywords)
    VALUES (new.sku, new.name, new.description, new.category,
            replace(new.sku || ' ' || new.name, '-', ''));
END;
CREATE TABLE IF NOT EXISTS orders (
    id              INTEGER PRIMARY KEY,
    order_number    TEXT NOT NULL UNIQUE,
    customer_phone  TEXT NOT NULL,
    phone_key       TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    status          TEXT NOT NULL,
    total_cents     INTEGER NOT NULL CHECK (total_cents >= 0),
    idempotency_key TEXT NOT NULL UNIQUE
);
CREATE INDEX IF NOT EXISTS orders_by_phone ON orders (phone_key, created_at);
CREATE TABLE IF NOT EXISTS order_lines (
    order_id         INTEGER NOT NULL REFERENCES orders (id),
    sku              TEXT NOT NULL REFERENCES products (sku),
    quantity         INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL CHECK (unit_price_cents >= 0),
    PRIMARY KEY (order_id, sku)
);
CREATE TABLE IF NOT EXISTS returns (
    id              INTEGER PRIMARY KEY,
    return_number   TEXT NOT NULL UNIQUE,
    order_id        INTEGER NOT NULL REFERENCES orders (id),
    sku             TEXT NOT NULL REFERENCES products (sku),
    quantity        INTEGER NOT NULL CHECK (quantity > 0),
    reason          TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE
);
CREATE INDEX IF NOT EXISTS returns_by_order ON returns (order_id, sku);
"""


# --- errors ---------------------------------------------------------------------------


class ShopError(Exception):
    """A request the shop cannot fulfil; the message can be told to the caller."""


class UnknownProduct(ShopError):
    def __init__(self, sku: str) -> None:
        super().__init__(f"We have no product with the code {sku}.")
        self.sku = sku


class OutOfStock(ShopError):
    def __init__(self, product: Product, requested: int) -> None:
        if product.stock == 0:
            message = f"The {product.name} is out of stock."
        else:
            verb = "is" if product.stock == 1 else "are"
            message = (
                f"Only {product.stock} of the {product.name} {verb} left in stock, "
                f"not {requested}."
            )
        super().__init__(message)
        self.sku = product.sku
        self.requested = requested
        self.available = product.stock


class NotReturnable(ShopError):
    """The order, the item or the quantity cannot be returned."""


class InvalidRequest(ShopError):
    """Arguments no order or return can be made of (no items, a quantity below one...)."""


class CatalogueError(ShopError):
    """The catalogue CSV cannot be loaded; the message names the file and the line."""


# --- records --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Product:
    sku: str
    name: str
    description: str
    price_cents: int
    stock: int
    category: str


@dataclass(frozen=True, slots=True)
class OrderLine:
    sku: str
    name: str
    quantity: int
    unit_price_cents: int
    returned_quantity: int = 0

    @property
    def total_cents(self) -> int:
        return self.quantity * self.unit_price_cents

    @property
    def returnable_quantity(self) -> int:
        return self.quantity - self.returned_quantity


@dataclass(frozen=True, slots=True)
class Order:
    order_number: str  # digits only, read out one by one
    customer_phone: str
    created_at: datetime  # aware, UTC
    status: str  # "placed", "delivered" (demo history) or "returned" (every item came back)
    total_cents: int
    lines: tuple[OrderLine, ...]


@dataclass(frozen=True, slots=True)
class Return:
    return_number: str
    order_number: str
    sku: str
    product_name: str
    quantity: int
    reason: str
    created_at: datetime
    refund_cents: int


# --- spoken text ----------------------------------------------------------------------

_UNITS = {
    w: i
    for i, w in enumerate("zero one two three four five six seven eight nine".split())
}
_TEENS = {
    w: 10 + i
    for i, w in enumerate(
        "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {
    w: 20 + 10 * i
    for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_MULTIPLIERS = {"hundred": 100, "thousand": 1000}
_REPEATS = {"double": 2, "triple": 3}

# Words a caller wraps around what they want; they would otherwise rank every
# description that happens to contain "a" or "with".
_STOP_WORDS = frozenset(
    """
    a about also am an and any are as at be bought but buy by can could did do does dont
    for from get got had has have hello hey hi i id ill im in is it its ive just kind like
    looking look me my need new of on or order ordered please purchase purchased some
    something sort that the them there these thing this those to uh um want wanna was we
    what which with would you your yes no so not buying
    """.split()
)

_APOSTROPHES = re.compile(r"['\u2019\u2018`]")
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> list[str]:
    # Apostrophes are dropped, not split on, so "I'd" is one stop word and not "i" + "d".
    text = unicodedata.normalize("NFKC", text[:MAX_QUERY_CHARS]).casefold()
    return _WORD.findall(_APOSTROPHES.sub("", text))


@dataclass(slots=True)
class _NumberRun:
    """Number words being added up, e.g. "one hundred and twenty three"."""

    total: int = 0
    current: int = 0
    last: str | None = None  # kind of the previous number word
    words: int = 0

    def value(self) -> int:
        return self.total + self.current


def _number_tokens(words: Sequence[str]) -> list[tuple[str, int]]:
    """Replace runs of number words by digits.

    Returns (token, how many words it came from). "forty two" -> ("42", 2),
    "one two three" -> ("1", 1), ("2", 1), ("3", 1): a unit after a unit starts a new number.
    """
    out: list[tuple[str, int]] = []
    run = _NumberRun()

    def flush() -> None:
        nonlocal run
        if run.last is not None:
            out.append((str(run.value()), run.words))
        run = _NumberRun()

    for index, word in enumerate(words):
        additive = run.last in ("hundred", "thousand")
        if word in _UNITS:
            if not (additive or run.last == "tens"):
                flush()
            run.current += _UNITS[word]
            run.last = "unit"
        elif word in _TEENS or word in _TENS:
            if not additive:
                flush()
            run.current += _TEENS.get(word) or _TENS[word]
            run.last = "teen" if word in _TEENS else "tens"
        elif word in _MULTIPLIERS:
            if word == "hundred":
                run.current = (run.current or 1) * 100
            else:
                run.total = (run.value() or 1) * 1000
                run.current = 0
            run.last = word
        elif word == "and" and additive and index + 1 < len(words) and (
            words[index + 1] in _UNITS or words[index + 1] in _TEENS or words[index + 1] in _TENS
        ):
            pass  # "one hundred and twenty": the "and" belongs to the number
        else:
            flush()
            out.append((word, 1))
            continue
        run.words += 1
    flush()
    return out


def spoken_digits(text: str) -> str:
    """All the digits said or written in ``text``, in order.

    "one two three four five", "12 345", "twelve three forty five" and "double one
    oh five" give "12345", "12345", "12345" and "1105".
    """
    words = [("zero" if w in ("oh", "o") else w) for w in _words(text)]
    expanded: list[str] = []
    repeat = 1
    for word in words:
        if word in _REPEATS:
            repeat = _REPEATS[word]
            continue
        expanded.extend([word] * repeat)
        repeat = 1
    return "".join(token for token, _ in _number_tokens(expanded) if token.isdigit())


def _phone_key(phone: str) -> str:
    return spoken_digits(phone)[-PHONE_KEY_DIGITS:]


@dataclass(frozen=True, slots=True)
class _Terms:
    words: tuple[str, ...]  # what the caller asked for, stop words and numbers removed
    extra: tuple[str, ...]  # numbers, joined spellings ("usb c" -> "usbc")

    def any(self) -> tuple[str, ...]:
        return self.words + self.extra


def _query_terms(text: str) -> _Terms:
    raw = _words(text)
    tokens = _number_tokens(raw)
    words: list[str] = []
    extra: list[str] = []
    position = 0
    for token, width in tokens:
        if token.isdigit():
            # Numbers rank but are never required: "two wireless headphones" is a quantity.
            extra.append(token)
            if width == 1 and raw[position] != token:
                # The catalogue says "Two slice toaster" as well as "27 inch".
                extra.append(raw[position])
        elif len(token) > 1 and token not in _STOP_WORDS:
            words.append(token)
        position += width
    plain = [token for token, _ in tokens]
    extra.extend(_spelled_out(plain))
    extra.extend(_joined_pairs(plain))
    return _Terms(tuple(_unique(words)), tuple(_unique(extra)))


def _spelled_out(tokens: Sequence[str]) -> Iterator[str]:
    # "u s b c" -> "usbc"
    run: list[str] = []
    for token in [*tokens, ""]:
        if len(token) == 1 and token.isalpha():
            run.append(token)
            continue
        if len(run) > 1:
            yield "".join(run)
        run = []


def _joined_pairs(tokens: Sequence[str]) -> Iterator[str]:
    # "usb c" -> "usbc", "hp 100" -> "hp100", "smart phone" -> "smartphone"
    def useful(token: str) -> bool:
        return len(token) == 1 or token not in _STOP_WORDS

    for first, second in zip(tokens, tokens[1:]):
        if useful(first) and useful(second):
            yield first + second


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _match_expression(terms: Sequence[str], operator: str) -> str:
    # Every term is [^\W_]+ and is quoted anyway, so no FTS5 operator, column filter or
    # quote from the caller's text can reach the query syntax.
    return f" {operator} ".join(f'"{term}"' for term in terms[:MAX_QUERY_TERMS])


# --- the shop -------------------------------------------------------------------------


class Shop:
    """One SQLite connection shared by the threads of one process.

    A single connection (guarded by a lock) is what makes ":memory:" usable at all;
    several processes on one file are kept apart by SQLite's own locking and
    BEGIN IMMEDIATE.
    """

    def __init__(
        self,
        path: str | Path,
        catalogue_csv: str | Path | None = None,
        *,
        busy_timeout_s: float = 10.0,
    ) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path,
            timeout=busy_timeout_s,
            isolation_level=None,  # transactions are begun explicitly, never implicitly
            check_same_thread=False,
        )
        try:
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                # Readers (order look-ups) then never wait for a writer (an order).
                self._conn.execute("PRAGMA journal_mode = WAL")
                # In WAL mode NORMAL loses no committed data on an application crash.
                self._conn.execute("PRAGMA synchronous = NORMAL")
            self._create(catalogue_csv)
        except BaseException:
            self._conn.close()
            raise

    @classmethod
    def open(cls, path: str | Path, catalogue_csv: str | Path | None = None) -> Shop:
        return cls(path, catalogue_csv)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Shop:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- plumbing --

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front: two processes that both read the
        # stock and then both decrement it would otherwise oversell.
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                # SQLite may already have rolled back by itself (disk full, I/O error).
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._conn

    def _create(self, catalogue_csv: str | Path | None) -> None:
        with self._transaction() as conn:
            for statement in _split_sql(_SCHEMA):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            # Only a fresh database gets the catalogue: reopening must not duplicate it
            # nor undo the stock changes of past orders.
            if conn.execute("SELECT 1 FROM products LIMIT 1").fetchone() is None:
                text, source = _catalogue_text(catalogue_csv)
                conn.executemany(
                    "INSERT INTO products (sku, name, description, price_cents, stock, category)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [_product_row(p) for p in _parse_catalogue(text, source)],
                )

    # -- products --

    def products(self) -> list[Product]:
        """The whole catalogue, by sku."""
        with self._reading() as conn:
            rows = conn.execute("SELECT sku, name, description, price_cents, stock, category FROM products ORDER BY sku").fetchall()
        return [Product(*row) for row in rows]

    def search(self, text: str, limit: int = 3) -> list[Product]:
        """Products best matching what the caller said, best first; [] if nothing does."""
        if not isinstance(text, str):
            return []
        terms = _query_terms(text)
        if not terms.any():
            return []
        limit = max(1, min(int(limit), 50))
        with self._reading() as conn:
            # Products matching every word the caller said come first; then the rest,
            # so "a phone charger with a long cable" still offers something.
            found: list[Product] = []
            if terms.words:
                found = self._ranked(conn, _match_expression(terms.words, "AND"), limit)
            if len(found) < limit:
                seen = {p.sku for p in found}
                more = self._ranked(conn, _match_expression(terms.any(), "OR"), limit + len(found))
                found.extend(p for p in more if p.sku not in seen)
        return found[:limit]

    @staticmethod
    def _ranked(conn: sqlite3.Connection, expression: str, limit: int) -> list[Product]:
        rows = conn.execute(
            "SELECT p.* FROM products_fts f JOIN products p ON p.sku = f.sku"
            " WHERE products_fts MATCH ?"
            # weights: sku (unindexed), name, description, category, keywords
            " ORDER BY bm25(products_fts, 0.0, 10.0, 2.0, 4.0, 5.0), p.sku LIMIT ?",
            (expression, limit),
        ).fetchall()
        return [_product(row) for row in rows]

    def get_product(self, sku: str) -> Product | None:
        with self._reading() as conn:
            return _find_product(conn, sku)

    # -- orders --

    def place_order(
        self, customer_phone: str, items: Sequence[tuple[str, int]], idempotency_key: str
    ) -> Order:
        """Sell ``items`` to the caller in one transaction.

        Raises UnknownProduct, OutOfStock or InvalidRequest and then changes nothing.
        The same idempotency_key again returns the first order, whatever the items.
        """
        _require_key(idempotency_key)
        wanted = _checked_items(items)
        with self._transaction() as conn:
            existing = _order_id_by_key(conn, idempotency_key)
            if existing is not None:
                return _load_order(conn, existing)
            lines = _resolve(conn, wanted)
            for product, quantity in lines:
                _take_stock(conn, product, quantity)
            order_id = _insert_order(
                conn, customer_phone, lines, idempotency_key, _now(), status="placed"
            )
            return _load_order(conn, order_id)

    def seed_demo_order(
        self,
        phone: str,
        items: Sequence[tuple[str, int]],
        days_ago: float,
        *,
        status: str = "delivered",
        idempotency_key: str | None = None,
    ) -> Order:
        """Record a past purchase for the demo, in one transaction.

        Stock is not touched: the goods left the warehouse ``days_ago``. The default key
        is made of the arguments, so running the demo again does not pile up orders.
        """
        wanted = _checked_items(items)
        key = idempotency_key or "demo:{}:{}:{}".format(
            _phone_key(phone), ",".join(f"{sku}x{quantity}" for sku, quantity in wanted), days_ago
        )
        with self._transaction() as conn:
            existing = _order_id_by_key(conn, key)
            if existing is not None:
                return _load_order(conn, existing)
            lines = _resolve(conn, wanted)
            created = _now() - timedelta(days=days_ago)
            order_id = _insert_order(conn, phone, lines, key, created, status=status)
            return _load_order(conn, order_id)

    def find_orders(
        self,
        order_number: str | None = None,
        customer_phone: str | None = None,
        product_text: str | None = None,
        limit: int = 5,
    ) -> list[Order]:
        """Orders by number and/or caller's phone, newest first.

        One of order_number or customer_phone is needed: the product words alone would
        list other customers' orders. product_text keeps orders with a matching line.
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
            key = _phone_key(customer_phone)
            if not key:
                return []
            where.append("o.phone_key = ?")
            params.append(key)
        if not where:
            return []
        limit = max(1, min(int(limit), 50))
        with self._reading() as conn:
            ids = self._order_ids(conn, where, params, product_text, limit)
            return [_load_order(conn, order_id) for order_id in ids]

    @staticmethod
    def _order_ids(
        conn: sqlite3.Connection,
        where: list[str],
        params: list[object],
        product_text: str | None,
        limit: int,
    ) -> list[int]:
        def query(expression: str | None) -> list[int]:
            sql = f"SELECT o.id FROM orders o WHERE {' AND '.join(where)}"
            args = list(params)
            if expression is not None:
                sql += (
                    " AND EXISTS (SELECT 1 FROM order_lines l WHERE l.order_id = o.id AND l.sku IN"
                    " (SELECT sku FROM products_fts WHERE products_fts MATCH ?))"
                )
                args.append(f"{{name keywords}} : ({expression})")
            sql += " ORDER BY o.created_at DESC, o.id DESC LIMIT ?"
            return [row[0] for row in conn.execute(sql, [*args, limit]).fetchall()]

        terms = _query_terms(product_text) if isinstance(product_text, str) else None
        if terms is None or not terms.any():
            return query(None)  # nothing but filler words: no filter
        # "wireless headphones" should not also bring up the wireless mouse, but
        # "the shoes that were too small" should still find the running shoes.
        if terms.words:
            found = query(_match_expression(terms.words, "AND"))
            if found:
                return found
        return query(_match_expression(terms.any(), "OR"))

    # -- returns --

    def create_return(
        self, order_number: str, sku: str, quantity: int, reason: str, idempotency_key: str
    ) -> Return:
        """Take back ``quantity`` of ``sku`` from an order and restock it, in one transaction.

        Raises NotReturnable (no such order, not in it, more than is left to return) or
        InvalidRequest. The same idempotency_key again returns the first return.
        """
        _require_key(idempotency_key)
        _require_quantity(quantity)
        with self._transaction() as conn:
            existing = conn.execute(
                "SELECT id FROM returns WHERE idempotency_key = ?", (idempotency_key,)
            ).fetchone()
            if existing is not None:
                return _load_return(conn, existing[0])
            order_id, line = _returnable_line(conn, order_number, sku, quantity)
            conn.execute(
                "UPDATE products SET stock = stock + ? WHERE sku = ?", (quantity, line.sku)
            )
            return_id = conn.execute(
                "INSERT INTO returns (return_number, order_id, sku, quantity, reason, created_at,"
                " idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    _new_number(conn, "returns", "return_number"),
                    order_id,
                    line.sku,
                    quantity,
                    str(reason).strip(),
                    _timestamp(_now()),
                    idempotency_key,
                ),
            ).lastrowid
            _mark_if_fully_returned(conn, order_id)
            return _load_return(conn, return_id)


# --- helpers (all run inside the caller's lock or transaction) -------------------------


def _split_sql(script: str) -> list[str]:
    # executescript() would COMMIT the open transaction; triggers contain ";" so split on
    # the statement ends sqlite3 itself recognises.
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return [s for s in statements if s]


def _catalogue_text(catalogue_csv: str | Path | None) -> tuple[str, str]:
    if catalogue_csv is not None:
        path = Path(catalogue_csv)
        try:
            return path.read_text(encoding="utf-8-sig"), str(path)
        except OSError as exc:
            raise CatalogueError(f"Cannot read the catalogue {path}: {exc.strerror}.") from exc
    packaged = resources.files("callcenter").joinpath("data/products.csv")
    return packaged.read_text(encoding="utf-8-sig"), "callcenter/data/products.csv"


def _parse_catalogue(text: str, source: str) -> list[Product]:
    reader = csv.DictReader(io.StringIO(text))
    required = {"sku", "name", "description", "price_eur", "stock", "category"}
    missing = required - set(reader.fieldnames or ())
    if missing:
        columns = ", ".join(sorted(missing))
        raise CatalogueError(f"{source}: the header lacks the column(s) {columns}.")
    products: dict[str, Product] = {}
    for row in reader:
        try:
            product = _catalogue_product(row)
            if product.sku in products:
                raise ValueError(f"the sku {product.sku} appears twice")
        except (ValueError, InvalidOperation, AttributeError) as exc:
            raise CatalogueError(f"{source} line {reader.line_num}: {exc}") from exc
        products[product.sku] = product
    return list(products.values())


def _catalogue_product(row: dict[str, str]) -> Product:
    product = Product(
        sku=row["sku"].strip().upper(),
        name=row["name"].strip(),
        description=row["description"].strip(),
        price_cents=_cents(row["price_eur"]),
        stock=int(row["stock"]),
        category=row["category"].strip(),
    )
    if not product.sku or not product.name:
        raise ValueError("the sku and the name must not be empty")
    if product.price_cents < 0 or product.stock < 0:
        raise ValueError("the price and the stock must not be negative")
    return product


def _cents(euros: str) -> int:
    # Decimal, not float: 0.1 + 0.2 euros must be exactly 30 cents.
    return int((Decimal(euros.strip()) * 100).to_integral_value(rounding=ROUND_HALF_UP))


def _product_row(product: Product) -> tuple[object, ...]:
    return (
        product.sku,
        product.name,
        product.description,
        product.price_cents,
        product.stock,
        product.category,
    )


def _product(row: sqlite3.Row) -> Product:
    return Product(
        sku=row["sku"],
        name=row["name"],
        description=row["description"],
        price_cents=row["price_cents"],
        stock=row["stock"],
        category=row["category"],
    )


def _find_product(conn: sqlite3.Connection, sku: str) -> Product | None:
    if not isinstance(sku, str):
        return None
    row = conn.execute("SELECT * FROM products WHERE sku = ?", (sku.strip().upper(),)).fetchone()
    if row is None:
        # A model or a caller may say "hp 100" or "HP100" for HP-100.
        compact = "".join(_words(sku)).upper()
        row = conn.execute(
            "SELECT * FROM products WHERE upper(replace(replace(sku, '-', ''), ' ', '')) = ?",
            (compact,),
        ).fetchone()
    return _product(row) if row is not None else None


def _known_product(conn: sqlite3.Connection, sku: str) -> Product:
    product = _find_product(conn, sku)
    if product is None:
        raise UnknownProduct(sku)
    return product


def _resolve(
    conn: sqlite3.Connection, wanted: Sequence[tuple[str, int]]
) -> list[tuple[Product, int]]:
    # "two chargers ... and another charger" is one line of three, and so are
    # "HP100" and "hp-100".
    merged: dict[str, tuple[Product, int]] = {}
    for sku, quantity in wanted:
        product = _known_product(conn, sku)
        _, before = merged.get(product.sku, (product, 0))
        merged[product.sku] = (product, before + quantity)
    return list(merged.values())


def _take_stock(conn: sqlite3.Connection, product: Product, quantity: int) -> None:
    # The stock is read and decremented inside one write transaction, and the WHERE
    # guard is the last word: a request can never oversell.
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
        raise InvalidRequest(
            f"The quantity must be a whole number of at least one, not {quantity!r}."
        )


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


def _order_id_by_key(conn: sqlite3.Connection, idempotency_key: str) -> int | None:
    row = conn.execute(
        "SELECT id FROM orders WHERE idempotency_key = ?", (idempotency_key,)
    ).fetchone()
    return None if row is None else row[0]


def _insert_order(
    conn: sqlite3.Connection,
    phone: str,
    lines: Sequence[tuple[Product, int]],
    idempotency_key: str,
    created: datetime,
    *,
    status: str,
) -> int:
    total = sum(product.price_cents * quantity for product, quantity in lines)
    order_id = conn.execute(
        "INSERT INTO orders (order_number, customer_phone, phone_key, created_at, status,"
        " total_cents, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            _new_number(conn, "orders", "order_number"),
            phone.strip(),
            _phone_key(phone),
            _timestamp(created),
            status,
            total,
            idempotency_key,
        ),
    ).lastrowid
    conn.executemany(
        "INSERT INTO order_lines (order_id, sku, quantity, unit_price_cents) VALUES (?, ?, ?, ?)",
        [(order_id, p.sku, quantity, p.price_cents) for p, quantity in lines],
    )
    return order_id


def _new_number(conn: sqlite3.Connection, table: str, column: str) -> str:
    # Random rather than sequential: a caller cannot guess a neighbour's order number.
    # Uniqueness is checked inside the write transaction, so no other writer can race us.
    for width in NUMBER_WIDTHS:
        low = 10 ** (width - 1)  # no leading zero to be lost when spoken
        for _ in range(20):
            candidate = str(low + secrets.randbelow(9 * low))
            taken = conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (candidate,))
            if taken.fetchone() is None:
                return candidate
    raise ShopError(f"No free {column.replace('_', ' ')} is left; widen NUMBER_WIDTHS.")


def _load_order(conn: sqlite3.Connection, order_id: int) -> Order:
    row = conn.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone()
    lines = conn.execute(
        "SELECT l.sku, p.name, l.quantity, l.unit_price_cents,"
        " (SELECT coalesce(sum(r.quantity), 0) FROM returns r"
        "   WHERE r.order_id = l.order_id AND r.sku = l.sku) AS returned"
        " FROM order_lines l JOIN products p ON p.sku = l.sku"
        " WHERE l.order_id = ? ORDER BY l.rowid",
        (order_id,),
    ).fetchall()
    return Order(
        order_number=row["order_number"],
        customer_phone=row["customer_phone"],
        created_at=datetime.fromisoformat(row["created_at"]),
        status=row["status"],
        total_cents=row["total_cents"],
        lines=tuple(OrderLine(r[0], r[1], r[2], r[3], r[4]) for r in lines),
    )


def _returnable_line(
    conn: sqlite3.Connection, order_number: str, sku: str, quantity: int
) -> tuple[int, OrderLine]:
    number = spoken_digits(order_number) if isinstance(order_number, str) else ""
    row = conn.execute("SELECT id FROM orders WHERE order_number = ?", (number,)).fetchone()
    if row is None:
        said = f"the number {' '.join(number)}" if number else "that number"
        raise NotReturnable(f"I can't find an order with {said}.")
    order = _load_order(conn, row[0])
    product = _find_product(conn, sku)
    line = next((ln for ln in order.lines if product is not None and ln.sku == product.sku), None)
    if line is None:
        raise NotReturnable(f"Order {order.order_number} does not contain the product {sku}.")
    if quantity > line.returnable_quantity:
        if line.returnable_quantity == 0:
            raise NotReturnable(
                f"The {line.name} from order {order.order_number} has already been returned."
            )
        raise NotReturnable(
            f"Only {line.returnable_quantity} of the {line.name} from order "
            f"{order.order_number} can still be returned, not {quantity}."
        )
    return row[0], line


def _mark_if_fully_returned(conn: sqlite3.Connection, order_id: int) -> None:
    order = _load_order(conn, order_id)
    if all(line.returnable_quantity == 0 for line in order.lines):
        conn.execute("UPDATE orders SET status = 'returned' WHERE id = ?", (order_id,))


def _load_return(conn: sqlite3.Connection, return_id: int) -> Return:
    row = conn.execute(
        "SELECT r.*, o.order_number, p.name, l.unit_price_cents FROM returns r"
        " JOIN orders o ON o.id = r.order_id"
        " JOIN products p ON p.sku = r.sku"
        " JOIN order_lines l ON l.order_id = r.order_id AND l.sku = r.sku"
        " WHERE r.id = ?",
        (return_id,),
    ).fetchone()
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
    return datetime.now(timezone.utc)


def _timestamp(moment: datetime) -> str:
    # Fixed-width UTC text sorts in time order, which "newest first" relies on.
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")
