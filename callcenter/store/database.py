"""One database, SQLite or PostgreSQL, chosen by a URL; the stores write their SQL once against it.

The stores speak a small common SQL (`?` placeholders, RETURNING, rows read by column name) and hand
whole transactions to `Database.write`, which retries those PostgreSQL aborted because another node won a
race (a unique key, a serialization failure, a deadlock): the retry then sees the winner's row.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

from callcenter.errors import CallCenterError

log = logging.getLogger(__name__)

T = TypeVar("T")
Dialect = Literal["sqlite", "postgresql"]
# A lost race is retried this often; more than a handful of losses in a row is no race but a bug.
WRITE_ATTEMPTS = 8


class DatabaseError(CallCenterError):
    """The database cannot be opened or used; the message names the URL and what to change."""


@dataclass(frozen=True)
class DatabaseUrl:
    dialect: Dialect
    target: str  # a file path or ":memory:" for SQLite, a libpq connection URI for PostgreSQL

    def __str__(self) -> str:
        if self.dialect == "sqlite":
            return self.target
        # Never log a password.
        parts = urlsplit(self.target)
        host = parts.hostname or "localhost"
        return f"postgresql://{parts.username + '@' if parts.username else ''}{host}{':' + str(parts.port) if parts.port else ''}{parts.path}"


def parse_url(text: str | Path) -> DatabaseUrl:
    """`sqlite:///var/shop.db` (relative, as SQLAlchemy writes it), `sqlite:////abs/shop.db`,
    `sqlite://` or `:memory:` (in memory), `postgresql://user@host/db` or `postgres://...`; a plain path
    is a SQLite file, so configurations written before URLs keep working."""
    text = str(text)
    scheme, sep, rest = text.partition("://")
    if not sep:
        return DatabaseUrl("sqlite", text)
    scheme = scheme.lower()
    if scheme == "sqlite":
        path = unquote(rest.removeprefix("/"))
        return DatabaseUrl("sqlite", path or ":memory:")
    if scheme in ("postgresql", "postgres") or scheme.startswith("postgresql+"):
        return DatabaseUrl("postgresql", "postgresql://" + rest)
    raise DatabaseError(f"database URL {text!r}: use sqlite:///PATH, postgresql://USER@HOST/NAME or a file path")


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Connection:
    """A connection inside one transaction, with the placeholder style of its dialect hidden."""

    def __init__(self, raw: Any, dialect: Dialect) -> None:
        self.raw, self.dialect = raw, dialect

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor:
        if self.dialect == "postgresql":
            sql = sql.replace("?", "%s")
        return self.raw.execute(sql, tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        if self.dialect == "postgresql":
            with self.raw.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)
        else:
            self.raw.executemany(sql, rows)

    def one(self, sql: str, params: Sequence[object] = ()) -> Any:
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        return self.execute(sql, params).fetchall()

    def lock_key(self, key: str) -> None:
        """Hold `key` until the transaction ends, so two nodes retrying one request run one after the other.

        Without it, the second of two orders with one idempotency key would wait for the first one's stock
        row, then find no stock left and say "out of stock" instead of returning the first order. SQLite's
        write transaction already is one at a time."""
        if self.dialect == "postgresql":
            self.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))

    def script(self, sql: str) -> None:
        """Several statements (a migration) in this transaction."""
        if self.dialect == "postgresql":
            self.raw.execute(sql)  # no parameters: psycopg sends it as one simple query
            return
        for statement in _split_sqlite(sql):
            self.raw.execute(statement)


class Database(Protocol):
    url: DatabaseUrl

    @property
    def dialect(self) -> Dialect: ...
    def write(self, work: Callable[[Connection], T]) -> T: ...
    def read(self, work: Callable[[Connection], T]) -> T: ...
    def close(self) -> None: ...


def open_database(url: str | Path, *, pool_size: int = 8, busy_timeout_s: float = 10.0) -> Database:
    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        return SqliteDatabase(parsed, busy_timeout_s=busy_timeout_s)
    return PostgresDatabase(parsed, pool_size=pool_size)


class SqliteDatabase:
    """One SQLite connection shared by the threads of one process.

    A single connection (guarded by a lock) is what makes ":memory:" usable at all; several processes on
    one file are kept apart by SQLite's own locking and BEGIN IMMEDIATE.
    """

    dialect: Dialect = "sqlite"

    def __init__(self, url: DatabaseUrl, *, busy_timeout_s: float = 10.0) -> None:
        self.url = url
        if url.target != ":memory:":
            Path(url.target).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                url.target, timeout=busy_timeout_s, check_same_thread=False, isolation_level=None
            )  # transactions are begun explicitly, never implicitly
        except sqlite3.Error as error:
            raise DatabaseError(f"cannot open the SQLite database {url}: {error}") from error
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA foreign_keys = ON")
        if url.target != ":memory:":
            # Readers (order look-ups) then never wait for a writer (an order).
            try:
                _switch_to_wal(self._conn, url, busy_timeout_s)
            except DatabaseError:
                self._conn.close()
                raise
            # In WAL mode NORMAL loses no committed data on an application crash.
            self._conn.execute("PRAGMA synchronous = NORMAL")

    def write(self, work: Callable[[Connection], T]) -> T:
        # IMMEDIATE takes the write lock up front: two processes that both read the stock and then both
        # decrement it would otherwise oversell. So no race is ever lost, and nothing is retried.
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(Connection(self._conn, "sqlite"))
                self._conn.execute("COMMIT")
                return result
            except BaseException:
                # SQLite may already have rolled back by itself (disk full, I/O error).
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def read(self, work: Callable[[Connection], T]) -> T:
        with self._lock:
            return work(Connection(self._conn, "sqlite"))

    @property
    def raw_connection(self) -> sqlite3.Connection:
        """For tests that check the pragmas of the very connection in use."""
        return self._conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _switch_to_wal(conn: sqlite3.Connection, url: DatabaseUrl, busy_timeout_s: float) -> None:
    """Set WAL mode, waiting for other nodes that open the same new file at the same moment.

    The switch needs the file to itself, and SQLite does not call its busy handler for it: a node that
    starts beside another gets "database is locked" at once. So wait here, as long as any other lock.
    """
    deadline = time.monotonic() + busy_timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise DatabaseError(f"cannot set WAL mode on the SQLite database {url}: {error}") from error
            time.sleep(0.01)


class PostgresDatabase:
    """A pool of psycopg connections: each transaction borrows one, so the calls of a node never queue on
    one connection, and the nodes are kept apart by PostgreSQL's row locks and unique keys."""

    dialect: Dialect = "postgresql"

    def __init__(self, url: DatabaseUrl, *, pool_size: int = 8, connect_timeout_s: float = 10.0) -> None:
        import psycopg
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        self.url = url
        self._errors = psycopg.errors
        self._pool = ConnectionPool(
            url.target,
            min_size=1,
            max_size=pool_size,
            open=False,
            name="voiceswarm",
            kwargs={"autocommit": True, "row_factory": dict_row},
            timeout=connect_timeout_s,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout_s)
        except Exception as error:  # psycopg_pool.PoolTimeout says only "timeout": name what was tried
            self._pool.close()
            raise DatabaseError(
                f"cannot connect to PostgreSQL at {url} within {connect_timeout_s:g} s: {error}"
            ) from error

    def write(self, work: Callable[[Connection], T]) -> T:
        errors = self._errors
        lost = (errors.UniqueViolation, errors.SerializationFailure, errors.DeadlockDetected)
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                return self._transaction(work)
            except lost as error:
                if attempt == WRITE_ATTEMPTS:
                    raise
                log.info("event=db_write_retry attempt=%d error=%s", attempt, type(error).__name__)
                time.sleep(0.002 * attempt)  # let the winner commit
        raise AssertionError("unreachable")

    def read(self, work: Callable[[Connection], T]) -> T:
        # One transaction, so an order and its lines come from one snapshot.
        return self._transaction(work)

    def _transaction(self, work: Callable[[Connection], T]) -> T:
        with self._pool.connection() as conn, conn.transaction():
            return work(Connection(conn, "postgresql"))

    def close(self) -> None:
        self._pool.close()


def _split_sqlite(script: str) -> list[str]:
    # executescript() would COMMIT the open transaction; triggers contain ";" so split on the statement
    # ends sqlite3 itself recognises.
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return [s for s in statements if s]
