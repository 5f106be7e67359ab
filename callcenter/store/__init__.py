"""Storage behind a narrow interface chosen by URL: SQLite on one machine, PostgreSQL for several nodes."""

from callcenter.store.database import Database, DatabaseError, DatabaseUrl, open_database, parse_url
from callcenter.store.migrations import Migration, SchemaTooNew, migrate

__all__ = [
    "Database",
    "DatabaseError",
    "DatabaseUrl",
    "Migration",
    "SchemaTooNew",
    "migrate",
    "open_database",
    "parse_url",
]
