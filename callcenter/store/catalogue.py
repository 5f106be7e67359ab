"""The catalogue CSV a fresh shop is filled from: the packaged one or the call centre's own."""

from __future__ import annotations

import csv
import io
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from importlib import resources
from pathlib import Path

from callcenter.store.domain import CatalogueError, Product


def load_catalogue(catalogue_csv: str | Path | None) -> list[Product]:
    """Raises CatalogueError naming the file and the line."""
    return _parse_catalogue(*_catalogue_text(catalogue_csv))


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
