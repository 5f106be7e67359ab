"""Numbered migrations, run at start-up by every node; a database newer than the code is refused.

Each store (the shop, the call records) is a component with its own numbered list, so both can share one
database. Versions live in `schema_versions`; the migrations of one start-up run in one transaction, and on
PostgreSQL under an advisory lock, so two nodes starting at once do not both create the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from callcenter.store.database import Connection, Database, DatabaseError

# Any constant will do, as long as it is the same on every node.
_ADVISORY_LOCK = 0x766F_6963  # "voic"


class SchemaTooNew(DatabaseError):
    """The database was migrated by a newer VoiceSwarm: this one would misread it."""


@dataclass(frozen=True)
class Migration:
    version: int
    sqlite: str
    postgresql: str

    def script(self, dialect: str) -> str:
        return self.sqlite if dialect == "sqlite" else self.postgresql


def migrate(
    database: Database,
    component: str,
    migrations: Sequence[Migration],
    then: Callable[[Connection], None] | None = None,
) -> int:
    """Bring `component` up to the last of `migrations`, then run `then` in the same transaction
    (seeding a fresh catalogue must not race another node either); returns the version."""
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(migrations) + 1)):
        raise ValueError(f"{component}: migrations must be numbered 1, 2, 3...; got {versions}")
    latest = len(migrations)

    def run(conn: Connection) -> int:
        if conn.dialect == "postgresql":
            conn.execute("SELECT pg_advisory_xact_lock(?)", (_ADVISORY_LOCK,))
        conn.script(
            "CREATE TABLE IF NOT EXISTS schema_versions ( component TEXT PRIMARY KEY, version INTEGER NOT NULL);"
        )
        row = conn.one("SELECT version FROM schema_versions WHERE component = ?", (component,))
        current = 0 if row is None else int(row["version"])
        if current > latest:
            raise SchemaTooNew(
                f"the {component} database {database.url} is at schema version {current}, but this "
                f"VoiceSwarm knows only up to {latest}: upgrade VoiceSwarm on this node"
            )
        for migration in migrations[current:]:
            conn.script(migration.script(conn.dialect))
        if row is None:
            conn.execute("INSERT INTO schema_versions (component, version) VALUES (?, ?)", (component, latest))
        elif current != latest:
            conn.execute("UPDATE schema_versions SET version = ? WHERE component = ?", (latest, component))
        if then is not None:
            then(conn)
        return latest

    return database.write(run)
