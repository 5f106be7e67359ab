"""The shop: products with full-text search, orders and returns, on SQLite or PostgreSQL.

The parts live in callcenter.store (domain records, spoken numbers, search terms, the stores); this module
is the shop's public face, and the names other modules have always imported from here stay here.
"""

from __future__ import annotations

from callcenter.store.domain import (
    CatalogueError,
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
from callcenter.store.shop_schema import SCHEMA_VERSION
from callcenter.store.shop_store import NUMBER_WIDTHS, Shop
from callcenter.store.spoken import MAX_QUERY_CHARS, spoken_digits
from callcenter.store.terms import MAX_QUERY_TERMS

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "NUMBER_WIDTHS",
    "SCHEMA_VERSION",
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
