"""Full-text search of the catalogue: FTS5 on SQLite, tsvector (and trigrams) on PostgreSQL.

Both take the same Terms and agree on what is found: every word first, then any word.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from callcenter.store.database import Connection
from callcenter.store.terms import MAX_QUERY_TERMS

PRODUCT_COLUMNS = "sku, name, description, price_cents, stock, category"
_P_COLUMNS = ", ".join(f"p.{column}" for column in PRODUCT_COLUMNS.split(", "))


def ranked(conn: Connection, terms: Sequence[str], every: bool, limit: int) -> list[Any]:
    """Rows (PRODUCT_COLUMNS) of the products matching every (or any) term, best first."""
    terms = terms[:MAX_QUERY_TERMS]
    if conn.dialect == "sqlite":
        rows = conn.all(
            f"SELECT {_P_COLUMNS} FROM products_fts f JOIN products p ON p.sku = f.sku WHERE products_fts MATCH ?"
            # weights: sku (unindexed), name, description, category, keywords
            " ORDER BY bm25(products_fts, 0.0, 10.0, 2.0, 4.0, 5.0), p.sku LIMIT ?",
            (_fts5(terms, every), limit),
        )
    else:
        query = _tsquery(terms, every)
        rows = conn.all(
            f"SELECT {PRODUCT_COLUMNS} FROM products, websearch_to_tsquery('english', ?) q WHERE search @@ q"
            " ORDER BY ts_rank(search, q) DESC, sku LIMIT ?",
            (query, limit),
        )
    return rows


def misheard(conn: Connection, terms: Sequence[str], limit: int) -> list[Any]:
    """Products whose name is close to a misheard word ("hedphones"); PostgreSQL's trigrams only."""
    if conn.dialect != "postgresql" or not terms:
        return []
    # `<%` is "the term is similar to a word of keywords" (pg_trgm.word_similarity_threshold, 0.6), served
    # by the trigram index; `%%` is how a literal % reaches psycopg.
    rows = conn.all(
        f"SELECT {PRODUCT_COLUMNS}, max(word_similarity(t, keywords)) AS score"
        " FROM products, unnest(?::text[]) t WHERE t <%% keywords"
        f" GROUP BY {PRODUCT_COLUMNS} ORDER BY score DESC, sku LIMIT ?",
        (list(terms[:MAX_QUERY_TERMS]), limit),
    )
    return rows


def name_match(conn: Connection, terms: Sequence[str], every: bool) -> tuple[str, list[object]]:
    """A condition on `l.sku` (an order line) that its product's name matches the terms."""
    terms = terms[:MAX_QUERY_TERMS]
    if conn.dialect == "sqlite":
        return (
            "l.sku IN (SELECT sku FROM products_fts WHERE products_fts MATCH ?)",
            [f"{{name keywords}} : ({_fts5(terms, every)})"],
        )
    return (
        "l.sku IN (SELECT sku FROM products WHERE name_search @@ websearch_to_tsquery('english', ?))",
        [_tsquery(terms, every)],
    )


def _fts5(terms: Sequence[str], every: bool) -> str:
    # Every term is [^\W_]+ and is quoted anyway, so no FTS5 operator, column filter or
    # quote from the caller's text can reach the query syntax.
    return (" AND " if every else " OR ").join(f'"{term}"' for term in terms)


def _tsquery(terms: Sequence[str], every: bool) -> str:
    # websearch_to_tsquery never raises on its input, and terms hold no quote or minus, its only syntax
    # besides "or".
    return (" " if every else " or ").join(terms)
