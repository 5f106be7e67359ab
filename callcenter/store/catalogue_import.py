"""Writing a checked catalogue into the shop's products, in the caller's one transaction.

Products are matched by sku: new ones are added, known ones get the file's name, description, price, stock and
category (past orders keep the price they were sold at: order_lines has its own). With `replace`, products the
file no longer lists are removed, unless an order or a return names them: those stay, and the import is refused,
because the file would then not be the whole catalogue the admin thinks it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from callcenter.store.database import Connection
from callcenter.store.domain import CatalogueError, Product


@dataclass(frozen=True, slots=True)
class ImportResult:
    added: int
    updated: int
    unchanged: int
    removed: int

    def __str__(self) -> str:
        return f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, {self.removed} removed"


_COLUMNS = ("name", "description", "price_cents", "stock", "category")


def import_products(conn: Connection, products: Sequence[Product], *, replace: bool = False) -> ImportResult:
    """Upsert `products` (already checked: callcenter.store.catalogue); raises CatalogueError and then the
    caller's transaction rolls back whatever was written."""
    existing = {
        row["sku"]: tuple(row[column] for column in _COLUMNS)
        for row in conn.all("SELECT sku, name, description, price_cents, stock, category FROM products")
    }
    new = [p for p in products if p.sku not in existing]
    changed = [p for p in products if p.sku in existing and existing[p.sku] != _values(p)]
    conn.executemany(
        "INSERT INTO products (sku, name, description, price_cents, stock, category) VALUES (?, ?, ?, ?, ?, ?)",
        [(p.sku, *_values(p)) for p in new],
    )
    # Only changed rows are updated: an unchanged product keeps its search index row untouched.
    conn.executemany(
        "UPDATE products SET name = ?, description = ?, price_cents = ?, stock = ?, category = ? WHERE sku = ?",
        [(*_values(p), p.sku) for p in changed],
    )
    removed = 0
    if replace:
        listed = {p.sku for p in products}
        gone = sorted(set(existing) - listed)
        sold = _sold(conn, gone)
        if sold:
            shown = ", ".join(sold[:10]) + (f" and {len(sold) - 10} more" if len(sold) > 10 else "")
            raise CatalogueError(
                f"--replace would remove products that orders or returns name: {shown}; keep them in the file "
                "(with stock 0 if they are no longer sold), or import into a new database. Nothing was imported."
            )
        conn.executemany("DELETE FROM products WHERE sku = ?", [(sku,) for sku in gone])
        removed = len(gone)
    return ImportResult(len(new), len(changed), len(products) - len(new) - len(changed), removed)


def _values(product: Product) -> tuple[str, str, int, int, str]:
    return product.name, product.description, product.price_cents, product.stock, product.category


def _sold(conn: Connection, skus: Sequence[str]) -> list[str]:
    if not skus:
        return []
    named = {row["sku"] for row in conn.all("SELECT DISTINCT sku FROM order_lines")}
    named |= {row["sku"] for row in conn.all("SELECT DISTINCT sku FROM returns")}
    return [sku for sku in skus if sku in named]
