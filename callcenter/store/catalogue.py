"""Catalogue files, CSV or JSON, read into products: the packaged demo one or the call centre's own.

Every row is checked before anything is written, and every bad row is reported (line, field, why), so an admin
fixes a file in one round instead of one error per run.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path
from typing import Any

from callcenter.store.domain import CatalogueError, Product, RowProblem

REQUIRED = ("sku", "name", "price_eur", "stock")
OPTIONAL = ("description", "category")
FORMATS = (".csv", ".json")
# Enough to fix a file from; a file with more bad rows than this has one mistake repeated.
MAX_PROBLEMS_SHOWN = 20
# Long enough for any real product, short enough that a voice agent can still read it out.
MAX_CHARS = {"sku": 40, "name": 200, "description": 2000, "category": 100}
# Stock beyond this is a typo (or a spreadsheet's scientific notation), and PostgreSQL's INTEGER ends at 2**31.
MAX_STOCK = 10_000_000
_SKU = re.compile(r"[A-Z0-9][A-Z0-9._/ -]*")


def load_catalogue(catalogue: str | Path | None) -> list[Product]:
    """The products of a catalogue file (None: the packaged demo catalogue).

    Raises CatalogueError naming the file and every bad row; nothing is returned from a file with one."""
    if catalogue is None:
        packaged = resources.files("callcenter").joinpath("data/products.csv")
        return parse_catalogue(packaged.read_text(encoding="utf-8-sig"), "callcenter/data/products.csv", ".csv")
    path = Path(catalogue)
    kind = path.suffix.lower()
    if kind not in FORMATS:
        raise CatalogueError(f"{path}: a catalogue is a .csv or a .json file, not {kind or 'a file without suffix'}")
    try:
        text = path.read_text(encoding="utf-8-sig")  # utf-8-sig: spreadsheets write a byte-order mark
    except UnicodeDecodeError as exc:
        raise CatalogueError(f"{path}: not UTF-8 text ({exc.reason}); save it as UTF-8") from exc
    except OSError as exc:
        raise CatalogueError(f"Cannot read the catalogue {path}: {exc.strerror}.") from exc
    return parse_catalogue(text, str(path), kind)


def parse_catalogue(text: str, source: str, kind: str) -> list[Product]:
    rows = _csv_rows(text, source) if kind == ".csv" else _json_rows(text, source)
    products: list[Product] = []
    problems: list[RowProblem] = []
    first_line: dict[str, int] = {}
    for line, row, line_of in rows:
        product, wrong = _product(row)
        problems.extend(RowProblem(line_of(name), name, why) for name, why in wrong)
        if product is None:
            continue
        if product.sku in first_line:
            why = f"{product.sku} is also on line {first_line[product.sku]}"
            problems.append(RowProblem(line_of("sku"), "sku", why))
            continue
        first_line[product.sku] = line
        products.append(product)
    if problems:
        raise CatalogueError(_report(source, problems), tuple(problems))
    if not products:
        raise CatalogueError(f"{source}: no products in it")
    return products


# A row: its first line, its fields by name, and where a field is (JSON objects span several lines).
Row = tuple[int, Mapping[str, Any], Any]


def _csv_rows(text: str, source: str) -> Iterator[Row]:
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or ()]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise CatalogueError(
            f"{source} line 1: the header lacks the column(s) {', '.join(missing)}; "
            f"it needs {', '.join(REQUIRED)} (and may have {', '.join(OPTIONAL)})",
            tuple(RowProblem(1, name, "missing column") for name in missing),
        )
    reader.fieldnames = header
    try:
        for row in reader:
            line = reader.line_num
            if None in row:  # DictReader's key for cells beyond the header
                row = {"": f"{len(header) + len(row[None])} cells, the header has {len(header)}"}
            elif any(value is None for value in row.values()):
                cells = sum(value is not None for value in row.values())
                row = {"": f"{cells} cells, the header has {len(header)}"}
            yield line, row, lambda _field, line=line: line
    except csv.Error as exc:  # an unclosed quote swallows the rest of the file
        raise CatalogueError(f"{source} line {reader.line_num}: {exc}") from exc


def _json_rows(text: str, source: str) -> Iterator[Row]:
    """The objects of a JSON array (or of {"products": [...]}), each with the line it starts on.

    json gives no positions, so the array is walked element by element with raw_decode, which does."""
    decoder = json.JSONDecoder(parse_float=Decimal)  # Decimal: 19.9 must stay 19.90, not 19.899999...
    try:
        whole = decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise CatalogueError(f"{source} line {exc.lineno}: not valid JSON: {exc.msg}") from exc
    if isinstance(whole, dict) and isinstance(whole.get("products"), list):
        found = re.search(r'"products"\s*:\s*\[', text)
        start = found.end() - 1 if found else -1
    elif isinstance(whole, list):
        start = text.index("[")
    else:
        raise CatalogueError(f'{source}: a JSON catalogue is an array of products, or {{"products": [...]}}')
    if start < 0:
        raise CatalogueError(f'{source}: cannot find the "products" array')
    position = start + 1
    while True:
        position = _skip_blank(text, position)
        if text[position] == "]":
            return
        value, end = decoder.raw_decode(text, position)
        yield _line(text, position), _json_object(value), _field_lines(text, position, end)
        position = _skip_blank(text, end)
        if text[position] == ",":
            position += 1


def _json_object(value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        return {"": f"a product is an object with {', '.join(REQUIRED)}, not {json.dumps(value, default=str)[:40]}"}
    return value


def _field_lines(text: str, start: int, end: int) -> Any:
    def line_of(name: str) -> int:
        found = re.compile(rf'"{re.escape(name)}"\s*:').search(text, start, end)
        return _line(text, found.start() if found else start)

    return line_of


def _skip_blank(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _product(row: Mapping[str, Any]) -> tuple[Product | None, list[tuple[str, str]]]:
    """The row's product, or the fields that are wrong and why."""
    if "" in row:
        return None, [("", str(row[""]))]
    wrong: list[tuple[str, str]] = []
    texts: dict[str, str] = {}
    for name in (*REQUIRED, *OPTIONAL):
        if name in ("price_eur", "stock"):
            continue
        value = row.get(name)
        if value is None or isinstance(value, (dict, list, bool)):
            if name in REQUIRED or value is not None:
                wrong.append((name, "missing" if value is None else f"must be text, not {json.dumps(value)[:40]}"))
            texts[name] = ""
            continue
        texts[name] = " ".join(str(value).split())  # a line break in a cell would break the spoken sentence
        if name in REQUIRED and not texts[name]:
            wrong.append((name, "empty"))
        elif len(texts[name]) > MAX_CHARS[name]:
            wrong.append((name, f"{len(texts[name])} characters, at most {MAX_CHARS[name]}"))
    sku = texts["sku"].upper()
    if sku and not any(field == "sku" for field, _ in wrong) and not _SKU.fullmatch(sku):
        wrong.append(("sku", f"{texts['sku']!r}: use letters, digits and - _ . / only"))
    price, why = _cents(row.get("price_eur"))
    if why:
        wrong.append(("price_eur", why))
    stock, why = _stock(row.get("stock"))
    if why:
        wrong.append(("stock", why))
    if wrong:
        return None, wrong
    product = Product(sku, texts["name"], texts["description"], price, stock, texts["category"])
    return product, []


def _cents(value: object) -> tuple[int, str]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0, "missing"
    if isinstance(value, bool) or not isinstance(value, (str, int, Decimal)):
        return 0, f"{json.dumps(value, default=str)[:40]} is not a price"
    text = str(value).strip()
    if re.fullmatch(r"\d+,\d{1,2}", text):
        return 0, f"{text!r}: write the decimal point as a dot (like 19.90)"
    try:
        # Decimal, not float: 0.1 + 0.2 euros must be exactly 30 cents.
        euros = Decimal(text)
    except InvalidOperation:
        return 0, f"{text!r} is not a price in euros (like 19.90)"
    if not euros.is_finite() or euros < 0:
        return 0, f"{text!r}: a price is zero or more euros"
    cents = euros * 100
    if cents != cents.to_integral_value():
        return 0, f"{text!r}: a price has at most two decimals"
    if cents > 2**31 - 1:
        return 0, f"{text!r}: more than any product costs"
    return int(cents), ""


def _stock(value: object) -> tuple[int, str]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0, "missing"
    text = str(value).strip()
    if isinstance(value, bool) or not re.fullmatch(r"-?\d+", text):
        return 0, f"{text[:40]!r} is not a whole number of items"
    stock = int(text)
    if stock < 0:
        return 0, f"{stock}: stock is zero or more"
    if stock > MAX_STOCK:
        return 0, f"{stock}: more than {MAX_STOCK}, a typo?"
    return stock, ""


def _report(source: str, problems: list[RowProblem]) -> str:
    lines = [f"{source}: {len(problems)} problem(s), nothing imported:"]
    lines += [f"  {source} {problem}" for problem in problems[:MAX_PROBLEMS_SHOWN]]
    if len(problems) > MAX_PROBLEMS_SHOWN:
        lines.append(f"  ... and {len(problems) - MAX_PROBLEMS_SHOWN} more")
    return "\n".join(lines)
