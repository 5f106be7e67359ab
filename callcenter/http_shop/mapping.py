"""[shop.http]: the call centre's order system as the agents' shop: its URL, OpenAPI document, auth, limits, and the
mapping of the shop's jobs to its operations and fields. Read and checked at config load: an operation the document
lacks, a field its schema lacks, a placeholder no job fills, a secret not in the environment are named there.

    [shop.http]
    url = "https://orders.example.com/api"   # the only host contacted
    openapi = "orders-openapi.json"
    auth = "bearer"                          # or "basic" (the variable holds user:password), "none"
    secret_env = "ORDERS_API_TOKEN"
    [shop.http.products]
    list = "listProducts"                    # operationIds
    get = "getProduct"
    sku = "id"
    name = "title"
    price = "price->incl_tax"                # "->" follows a link on the same host
    stock = "availability->num_available"
    [shop.http.orders]
    list = "listOrders"
    ...
    [[shop.http.place_order]]                # one or more requests, in order
    operation = "checkout"
    body = { product = "{product.url}", quantity = "{quantity}", phone = "{phone}" }
    order_number = "number"                  # on the last request: where the new order's number is
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from callcenter.errors import CallCenterError
from callcenter.http_shop.fields import check_path, first_name, placeholders

AUTH_MODES = ("bearer", "basic", "none")
_METHODS = ("get", "put", "post", "delete", "patch")
# What every write's templates may use; a place_order step also {sku}, {quantity}, {product.*} (the product as the
# API answers `products.get`), a return's {order_number}, {sku}, {quantity}, {reason}; any later step {previous.*}.
_COMMON = {"phone", "phone_as_given", "postcode", "email", "idempotency_key", "request_id", "host", "url"}
_ORDER_VARS = _COMMON | {"sku", "quantity"}
_RETURN_VARS = _COMMON | {"order_number", "sku", "quantity", "reason"}


class MappingError(CallCenterError, ValueError):
    """The [shop.http] settings cannot be used; the message names the key and why."""


@dataclass(frozen=True)
class Operation:
    """One operation of the OpenAPI document."""

    operation_id: str
    method: str  # upper case
    path: str  # the template, "/products/{pk}/"
    path_parameters: tuple[str, ...]
    response_fields: tuple[str, ...] | None  # the 2xx JSON body's top-level properties (of its items for an array)


@dataclass(frozen=True)
class Products:
    list: Operation
    get: Operation
    query: str  # the list's query parameter for the caller's words; "": every product listed, matched here by name
    items: str  # where the list is in the list's body ("": the body is the list)
    sku: str
    name: str
    price: str
    stock: str
    description: str
    price_unit: str  # "euros" (a decimal, "24.90") or "cents"


@dataclass(frozen=True)
class Orders:
    list: Operation
    items: str
    number: str
    phone: str
    placed: str
    status: str
    total: str
    postcode: str
    email: str
    lines: str
    line_sku: str
    line_name: str
    line_quantity: str
    line_total: str  # the line's price for all its items
    phone_query: str = ""  # the list's query parameter for the caller's number (E.164), if it filters by phone


@dataclass(frozen=True)
class Step:
    """One request of a write: the operation, its path and query values, headers and JSON body (templates)."""

    operation: Operation
    parameters: dict[str, Any]
    headers: dict[str, str]
    body: Any
    credentials: bool  # false: sent without the auth header (oscar-api's per-caller basket is an anonymous session's)
    result: str  # on the last step: the field with the new order's (return's) number


@dataclass(frozen=True)
class HttpShopConfig:
    url: str
    openapi: str
    auth: str
    secret_env: str
    secret: str = field(repr=False, default="")
    timeout_s: float = 5.0
    get_retries: int = 2
    max_response_bytes: int = 1_000_000
    # true only when the API honours Idempotency-Key (a repeat answers the first result): then a write that timed
    # out is sent again; otherwise never, and the caller hears that the order could not be confirmed.
    idempotent_writes: bool = False
    products: Products | None = None
    orders: Orders | None = None
    place_order: tuple[Step, ...] = ()
    create_return: tuple[Step, ...] = ()  # empty: the API takes no returns; a person does (ForAPerson)


_TOP_KEYS = {
    "url",
    "openapi",
    "auth",
    "secret_env",
    "timeout_s",
    "get_retries",
    "max_response_bytes",
    "idempotent_writes",
    "products",
    "orders",
    "place_order",
    "create_return",
}
_PRODUCT_FIELDS = ("sku", "name", "price", "stock")
_ORDER_FIELDS = ("number", "phone", "placed", "lines", "line_sku", "line_name", "line_quantity", "line_total")


def load_mapping(table: Mapping[str, Any], base: Path, environ: Mapping[str, str] | None = None) -> HttpShopConfig:
    """[shop.http] read and checked against its OpenAPI document (a relative path is read from `base`)."""
    _unknown(table, _TOP_KEYS, "shop.http")
    url = _text(table, "url", "shop.http", required=True)
    _check_url(url)
    openapi = _text(table, "openapi", "shop.http", required=True)
    document = _document(base / openapi if not Path(openapi).is_absolute() else Path(openapi))
    operations = _operations(document)
    auth = _text(table, "auth", "shop.http") or "bearer"
    if auth not in AUTH_MODES:
        raise MappingError(f"shop.http.auth is {auth!r}; use one of {', '.join(AUTH_MODES)}")
    secret_env = _text(table, "secret_env", "shop.http")
    secret = ""
    if auth != "none":
        if not secret_env:
            raise MappingError(
                f'shop.http.auth is "{auth}": name the variable holding the secret in shop.http.secret_env'
            )
        secret = (environ if environ is not None else os.environ).get(secret_env, "")
        if not secret:
            raise MappingError(f"shop.http.secret_env names {secret_env}, which is not set in the environment")
        if auth == "basic" and ":" not in secret:
            raise MappingError(f'{secret_env} must hold user:password for shop.http.auth = "basic"')
    timeout = _number(table, "timeout_s", 5.0, 0.1, 60.0)
    retries = int(_number(table, "get_retries", 2, 0, 5))
    size = int(_number(table, "max_response_bytes", 1_000_000, 1_000, 50_000_000))
    idempotent = table.get("idempotent_writes", False)
    if not isinstance(idempotent, bool):
        raise MappingError(f"shop.http.idempotent_writes must be true or false, not {idempotent!r}")
    products = _products(_table(table, "products", required=True), operations)
    orders = _orders(_table(table, "orders", required=True), operations)
    place = _steps(table.get("place_order"), "shop.http.place_order", operations, _ORDER_VARS, "order_number")
    if not place:
        raise MappingError(
            "shop.http.place_order is missing: the requests that place an order ([[shop.http.place_order]])"
        )
    returns = _steps(table.get("create_return"), "shop.http.create_return", operations, _RETURN_VARS, "return_number")
    return HttpShopConfig(
        url.rstrip("/"), openapi, auth, secret_env, secret, timeout, retries, size, idempotent, products, orders,
        place, returns,
    )  # fmt: skip


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise MappingError(f"shop.http.url is {url!r}; write the API's base URL, https://host/path")
    if parts.username or parts.password:
        raise MappingError("shop.http.url must not hold credentials: use shop.http.auth and secret_env")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        # Orders and callers' numbers cross the network: in the clear only on this machine.
        raise MappingError(f"shop.http.url is http:// to {parts.hostname}, beyond this machine: use https://")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _document(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise MappingError(f"shop.http.openapi: cannot read {path} as JSON: {error}") from None
    if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith("3."):
        raise MappingError(f"shop.http.openapi: {path} is not an OpenAPI 3 document (no openapi: 3.x)")
    return document


def _operations(document: dict[str, Any]) -> dict[str, Operation]:
    found: dict[str, Operation] = {}
    for path, item in (document.get("paths") or {}).items():
        for method in _METHODS:
            operation = item.get(method) if isinstance(item, dict) else None
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            parameters = [*item.get("parameters", []), *operation.get("parameters", [])]
            in_path = tuple(p["name"] for p in parameters if isinstance(p, dict) and p.get("in") == "path")
            found[operation["operationId"]] = Operation(
                operation["operationId"], method.upper(), path, in_path, _response_fields(operation, document)
            )
    return found


def _response_fields(operation: dict[str, Any], document: dict[str, Any]) -> tuple[str, ...] | None:
    """The top-level properties of the 2xx JSON body (of its items when it is a list), when the document says."""
    for status, response in (operation.get("responses") or {}).items():
        if not str(status).startswith("2"):
            continue
        schema = _deref((_deref(response, document).get("content") or {}).get("application/json", {}), document)
        schema = _deref(schema.get("schema", {}), document)
        if schema.get("type") == "array":
            schema = _deref(schema.get("items", {}), document)
        properties = schema.get("properties")
        return tuple(properties) if isinstance(properties, dict) else None
    return None


def _deref(node: Any, document: dict[str, Any]) -> dict[str, Any]:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        target: Any = document
        for part in node["$ref"][2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node = target
    return node if isinstance(node, dict) else {}


def _operation(operations: dict[str, Operation], name: Any, key: str, *, read: bool) -> Operation:
    if not isinstance(name, str) or not name:
        raise MappingError(f"{key} is missing: name the operationId that does this")
    found = operations.get(name)
    if found is None:
        raise MappingError(f"{key}: the OpenAPI document has no operation {name!r}")
    if read and found.method != "GET":
        raise MappingError(f"{key}: {name} is a {found.method}; reading the shop must not change it (use a GET)")
    if not read and found.method == "GET":
        raise MappingError(f"{key}: {name} is a GET; a write is a POST, PUT or PATCH")
    return found


def _field(table: Mapping[str, Any], name: str, key: str, operation: Operation, *, required: bool) -> str:
    path = table.get(name, "")
    if required and not path:
        raise MappingError(f"{key}.{name} is missing: name the response field that holds it")
    problem = check_path(path) if path else None
    if problem:
        raise MappingError(f"{key}.{name}: {problem}")
    known = operation.response_fields
    if path and known is not None and first_name(path) and first_name(path) not in known:
        raise MappingError(
            f"{key}.{name} is {path!r}, but {operation.operation_id}'s response has no field {first_name(path)!r} "
            f"(it has {', '.join(sorted(known))})"
        )
    return str(path)


def _products(table: Mapping[str, Any], operations: dict[str, Operation]) -> Products:
    key = "shop.http.products"
    _unknown(table, {"list", "get", "query", "items", "description", "price_unit", *_PRODUCT_FIELDS}, key)
    listing = _operation(operations, table.get("list"), f"{key}.list", read=True)
    get = _operation(operations, table.get("get"), f"{key}.get", read=True)
    if len(get.path_parameters) != 1:
        raise MappingError(f"{key}.get: {get.operation_id} must take the product's code as its one path parameter")
    unit = table.get("price_unit", "euros")
    if unit not in ("euros", "cents"):
        raise MappingError(f"{key}.price_unit is {unit!r}; use euros (a decimal) or cents")
    fields = {name: _field(table, name, key, get, required=True) for name in _PRODUCT_FIELDS}
    return Products(
        listing, get, _text(table, "query", key), _items(table, key), **fields,
        description=_field(table, "description", key, get, required=False), price_unit=unit,
    )  # fmt: skip


def _orders(table: Mapping[str, Any], operations: dict[str, Operation]) -> Orders:
    key = "shop.http.orders"
    optional = ("status", "total", "postcode", "email")
    _unknown(table, {"list", "items", "phone_query", *_ORDER_FIELDS, *optional}, key)
    listing = _operation(operations, table.get("list"), f"{key}.list", read=True)
    top = {
        name: _field(table, name, key, listing, required=True) for name in _ORDER_FIELDS if not name.startswith("line_")
    }
    # A line's fields are in the lines' own responses, which the document may describe elsewhere.
    lines = {name: _checked_path(table, name, key) for name in _ORDER_FIELDS if name.startswith("line_")}
    rest = {name: _field(table, name, key, listing, required=False) for name in optional}
    return Orders(listing, _items(table, key), **top, **lines, **rest, phone_query=_text(table, "phone_query", key))


def _checked_path(table: Mapping[str, Any], name: str, key: str) -> str:
    path = table.get(name, "")
    if not path:
        raise MappingError(f"{key}.{name} is missing: name the response field that holds it")
    problem = check_path(path)
    if problem:
        raise MappingError(f"{key}.{name}: {problem}")
    return str(path)


def _steps(raw: Any, key: str, operations: dict[str, Operation], variables: set[str], result: str) -> tuple[Step, ...]:
    if raw is None:
        return ()
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        raise MappingError(f"{key} must be a table or an array of tables ([[{key}]])")
    steps: list[Step] = []
    for index, step in enumerate(raw):
        where = f"{key}[{index}]"
        last = index == len(raw) - 1
        _unknown(step, {"operation", "parameters", "headers", "body", "credentials", result}, where)
        operation = _operation(operations, step.get("operation"), f"{where}.operation", read=False)
        parameters = step.get("parameters", {})
        headers = step.get("headers", {})
        if not isinstance(parameters, dict) or not isinstance(headers, dict):
            raise MappingError(f"{where}: parameters and headers are tables of names and values")
        missing = [p for p in operation.path_parameters if p not in parameters]
        if missing:
            raise MappingError(
                f"{where}: {operation.operation_id} needs the path parameter {missing[0]!r} in parameters"
            )
        allowed = variables | ({"previous"} if index else set())
        for name in sorted(placeholders([parameters, headers, step.get("body")])):
            head = name.split(".")[0]
            if name not in allowed and not (
                head in ("product", "previous") and "." in name and head in allowed | {"product"}
            ):
                raise MappingError(
                    f"{where}: no value for the placeholder {{{name}}}; use {', '.join(sorted(allowed))}"
                )
            if head == "product" and key.endswith("create_return"):
                raise MappingError(f"{where}: {{{name}}}: a return's requests know no product record; use {{sku}}")
        number = step.get(result, "")
        if last and not number:
            raise MappingError(f"{where}.{result} is missing: name the field of the last response with the new number")
        if not last and number:
            raise MappingError(f"{where}.{result}: only the last request's response holds the new number")
        if number:
            _field(step, result, where, operation, required=True)
        credentials = step.get("credentials", True)
        if not isinstance(credentials, bool):
            raise MappingError(f"{where}.credentials must be true or false")
        steps.append(
            Step(
                operation,
                dict(parameters),
                {str(k): str(v) for k, v in headers.items()},
                step.get("body"),
                credentials,
                number,
            )
        )
    return tuple(steps)


def _items(table: Mapping[str, Any], key: str) -> str:
    path = table.get("items", "")
    problem = check_path(path) if path else None
    if problem or "->" in str(path):
        raise MappingError(f"{key}.items: {problem or 'the list must be in the response itself'}")
    return str(path)


def _unknown(table: Mapping[str, Any], known: set[str], key: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise MappingError(f"unknown keys in [{key}]: {', '.join(unknown)}; allowed: {', '.join(sorted(known))}")


def _table(table: Mapping[str, Any], name: str, *, required: bool) -> Mapping[str, Any]:
    value = table.get(name)
    if value is None and required:
        raise MappingError(f"[shop.http.{name}] is missing: map the shop's {name} to the API's operations and fields")
    if not isinstance(value, dict):
        raise MappingError(f"[shop.http.{name}] must be a table of keys")
    return value


def _text(table: Mapping[str, Any], name: str, key: str, *, required: bool = False) -> str:
    value = table.get(name, "")
    if not isinstance(value, str):
        raise MappingError(f"{key}.{name} must be text, not {value!r}")
    if required and not value:
        raise MappingError(f"{key}.{name} is missing")
    return value


def _number(table: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = table.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise MappingError(f"shop.http.{name} is {value!r}; use {low:g} to {high:g}")
    return float(value)
