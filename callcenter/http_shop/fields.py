"""Where a value is in an API's JSON (field paths) and what a request's body is made of (templates): pure functions.

A field path is dotted names, "shipping_address.phone_number"; `->` follows a link: "price->incl_tax" reads the
URL in `price`, fetches it (the caller's `fetch`, which keeps to the configured host) and reads `incl_tax` in what
it answers. Hyperlinked APIs (django-oscar's) give a product's price and stock, an order's lines, only as links.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from callcenter.errors import CallCenterError

LINK = "->"
_PLACEHOLDER = re.compile(r"\{([a-z_]+(?:\.[A-Za-z0-9_]+)*)\}")


class FieldMissing(CallCenterError, LookupError):
    """The response has no value where the mapping says; the message names the path."""


def first_name(path: str) -> str:
    """The top-level field a path starts with ("" for the empty path: the body itself)."""
    return re.split(r"\.|->", path, maxsplit=1)[0]


def check_path(path: str) -> str | None:
    """Why `path` is not a field path, or None."""
    if not isinstance(path, str):
        return f"{path!r} is not text"
    for hop in path.split(LINK):
        if hop and not all(re.fullmatch(r"[A-Za-z0-9_-]+", name) for name in hop.split(".")):
            return f"{path!r} is not a field path (names joined by '.', links followed with '->')"
    return None


def value_at(body: Any, path: str, fetch: Callable[[str], Any]) -> Any:
    """The value at `path` in `body`; raises FieldMissing naming the path."""
    hops = path.split(LINK)
    current = body
    for index, hop in enumerate(hops):
        if index:
            if not isinstance(current, str):
                raise FieldMissing(f"{path}: the value before '->' is not a link")
            current = fetch(current)
        for name in hop.split(".") if hop else ():
            if isinstance(current, Mapping) and name in current:
                current = current[name]
            elif isinstance(current, list) and name.isdigit() and int(name) < len(current):
                current = current[int(name)]
            else:
                raise FieldMissing(f"{path}: no {name!r} in the response")
    return current


def placeholders(template: Any) -> set[str]:
    """Every {name} a template (a string, or JSON of them) uses."""
    if isinstance(template, str):
        return set(_PLACEHOLDER.findall(template))
    if isinstance(template, Mapping):
        return set().union(*(placeholders(v) for v in template.values())) if template else set()
    if isinstance(template, list):
        return set().union(*(placeholders(v) for v in template)) if template else set()
    return set()


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """The template with its placeholders filled. A string that is one placeholder whole keeps the value's type
    (a quantity stays a number in the JSON); inside other text the value is written as text."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), template)
    if isinstance(template, Mapping):
        return {key: fill(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, values) for value in template]
    return template


def flatten(prefix: str, body: Any, fetch: Callable[[str], Any], wanted: set[str]) -> dict[str, Any]:
    """The values of `prefix.<path>` placeholders in `wanted`, read from `body` (paths may follow links)."""
    found: dict[str, Any] = {}
    for name in wanted:
        head, _, rest = name.partition(".")
        if head == prefix and rest:
            found[name] = value_at(body, rest, fetch)
    return found
