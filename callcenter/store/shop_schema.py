"""The shop's tables, numbered, for SQLite and PostgreSQL.

Both keep the same tables and columns, so every query but full-text search is written once. Times are
fixed-width UTC ISO text on both: it sorts in time order, which "newest first" relies on, and reads back the
same everywhere.
"""

from __future__ import annotations

from callcenter.store.migrations import Migration

COMPONENT = "shop"

_SQLITE_1 = """
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

# The keywords expression of SQLite's FTS table: "USB-C" is also "usbc", "HP-100" also "hp100".
_KEYWORDS = "replace(sku || ' ' || name, '-', '')"

_POSTGRESQL_1 = f"""
-- Trigram matching catches what the stemmer cannot ("hedphones"); trusted since PostgreSQL 13, so the
-- database's owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE TABLE IF NOT EXISTS products (
    sku         TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    price_cents INTEGER NOT NULL CHECK (price_cents >= 0),
    stock       INTEGER NOT NULL CHECK (stock >= 0),
    category    TEXT NOT NULL DEFAULT '',
    keywords    TEXT GENERATED ALWAYS AS ({_KEYWORDS}) STORED,
    -- The weights of SQLite's bm25 call, in PostgreSQL's four classes: name and keywords A, category B,
    -- description C. The English snowball stemmer plays the part of FTS5's porter.
    search      tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', name || ' ' || {_KEYWORDS}), 'A')
        || setweight(to_tsvector('english', category), 'B')
        || setweight(to_tsvector('english', description), 'C')) STORED,
    -- Order look-ups by product words match only the name, as SQLite's {{name keywords}} filter.
    name_search tsvector GENERATED ALWAYS AS (to_tsvector('english', name || ' ' || {_KEYWORDS})) STORED
);
CREATE INDEX IF NOT EXISTS products_search ON products USING gin (search);
CREATE INDEX IF NOT EXISTS products_keywords_trgm ON products USING gin (keywords gin_trgm_ops);
CREATE TABLE IF NOT EXISTS orders (
    id              BIGSERIAL PRIMARY KEY,
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
    order_id         BIGINT NOT NULL REFERENCES orders (id),
    sku              TEXT NOT NULL REFERENCES products (sku),
    quantity         INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL CHECK (unit_price_cents >= 0),
    -- The lines' order as said, as SQLite's rowid keeps it.
    line_id          BIGSERIAL,
    PRIMARY KEY (order_id, sku)
);
CREATE TABLE IF NOT EXISTS returns (
    id              BIGSERIAL PRIMARY KEY,
    return_number   TEXT NOT NULL UNIQUE,
    order_id        BIGINT NOT NULL REFERENCES orders (id),
    sku             TEXT NOT NULL REFERENCES products (sku),
    quantity        INTEGER NOT NULL CHECK (quantity > 0),
    reason          TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE
);
CREATE INDEX IF NOT EXISTS returns_by_order ON returns (order_id, sku);
"""

# Version 2 (issue 29): what a caller proves an order is theirs with, and phone_key holds the whole number in
# E.164 ("" for no customer) instead of its last nine digits. Rows of version 1 are re-keyed by the shop at
# start-up (Shop.__init__), in Python: the numbering plans are not SQL.
_ORDER_FACTORS = """
ALTER TABLE orders ADD COLUMN postcode TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN email TEXT NOT NULL DEFAULT '';
"""

MIGRATIONS = (Migration(1, _SQLITE_1, _POSTGRESQL_1), Migration(2, _ORDER_FACTORS, _ORDER_FACTORS))
SCHEMA_VERSION = len(MIGRATIONS)
