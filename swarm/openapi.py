"""An HTTP API described by OpenAPI 3.0/3.1 as tools: how a call centre's CRM plugs into the swarm."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx

from swarm.errors import SwarmError
from swarm.tools import Tool, ToolContext

SAFE_METHODS = frozenset({"GET", "HEAD"})  # RFC 9110 9.2.1: they change nothing on the server

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_LOCATIONS = ("path", "query", "header")


class ToolHTTPError(SwarmError):
    """The API behind a tool could not be reached or did not answer in time."""


def read_openapi_file(path: str | Path) -> dict[str, Any]:
    """Load an OpenAPI document saved as JSON (convert YAML documents first)."""
    document: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return document


def tools_from_openapi(
    document: dict[str, Any],
    base_url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 5.0,
    client: httpx.AsyncClient | None = None,
    include: Iterable[str] | None = None,
) -> list[Tool]:
    """One Tool per operation of the document, calling the API at ``base_url``.

    ``headers`` go with every request (e.g. Authorization). ``include`` keeps only the named
    operations (operationId or tool name). Operations whose request body is not JSON are left out.
    """
    wanted = set(include) if include is not None else None
    known: set[str] = set()
    tools: dict[str, Tool] = {}
    for path, item in document.get("paths", {}).items():
        shared = _resolve(item.get("parameters", []), document)
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            name = _tool_name(operation.get("operationId") or f"{method}_{path}")
            aliases = {name, operation.get("operationId", name)}
            known |= aliases
            if wanted is not None and not wanted & aliases:
                continue
            if name in tools:
                raise ValueError(f"two operations give the tool name {name!r}; set distinct operationIds")
            inputs = _resolve({k: operation[k] for k in ("parameters", "requestBody") if k in operation}, document)
            built = _parameters(name, [*shared, *inputs.get("parameters", [])], inputs.get("requestBody"))
            if built is None:
                continue
            schema, where = built
            text = "\n\n".join(s for s in (operation.get("summary"), operation.get("description")) if s)
            call = _Endpoint(method.upper(), path, where, base_url.rstrip("/"), dict(headers or {}), timeout, client)
            tools[name] = Tool(
                name=name,
                description=text or f"{method.upper()} {path}",
                parameters=schema,
                call=call,
                changes_nothing=method.upper() in SAFE_METHODS,
            )
    if wanted is not None and wanted - known:
        raise ValueError(f"no operation named {sorted(wanted - known)} in the OpenAPI document")
    return list(tools.values())


def _tool_name(raw: str) -> str:
    # Function-calling APIs accept only [a-zA-Z0-9_-]{1,64}.
    return re.sub(r"_+", "_", re.sub(r"[^a-zA-Z0-9_-]", "_", raw)).strip("_")[:64]


def _parameters(
    name: str, parameters: list[dict[str, Any]], body: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The tool's JSON schema, and where each argument goes; None when the body is not JSON."""
    # Later (operation-level) parameters override path-level ones with the same name and location.
    unique = {(p["name"], p["in"]): p for p in parameters}
    properties: dict[str, Any] = {}
    required: list[str] = []
    where: dict[str, str] = {}
    for (pname, location), param in unique.items():
        if location not in _LOCATIONS:
            continue  # cookies: nothing a model should set
        if pname in properties:
            raise ValueError(f"operation {name!r} has two inputs called {pname!r}")
        schema = dict(param.get("schema", {}))
        if "description" in param:
            schema.setdefault("description", param["description"])
        properties[pname] = schema
        where[pname] = location
        if location == "path" or param.get("required"):
            required.append(pname)
    if body is not None:
        body_schema = _json_body(body)
        if body_schema is None:
            return None
        if "body" in properties:
            raise ValueError(f"operation {name!r} has a parameter called 'body' as well as a request body")
        properties["body"] = body_schema
        where["body"] = "body"
        if body.get("required"):
            required.append("body")
    # A misspelt optional parameter would be dropped silently; additionalProperties makes it an error.
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}, where


def _json_body(body: dict[str, Any]) -> dict[str, Any] | None:
    for media_type, entry in body.get("content", {}).items():
        if media_type == "application/json" or media_type.endswith("+json"):
            schema = dict(entry.get("schema", {}))
            if "description" in body:
                schema.setdefault("description", body["description"])
            return schema
    return None


@dataclass(frozen=True)
class _Endpoint:
    """One operation's HTTP request, filled from a tool call's arguments."""

    method: str
    path: str
    where: dict[str, str]
    base_url: str
    headers: dict[str, str]
    timeout: float
    client: httpx.AsyncClient | None

    async def __call__(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        path = self.path
        request: dict[str, Any] = {"params": {}, "headers": dict(self.headers), "timeout": self.timeout}
        for pname, value in arguments.items():
            location = self.where.get(pname)
            if location == "path":
                path = path.replace("{" + pname + "}", quote(_text(value), safe=""))
            elif location == "query":
                request["params"][pname] = value
            elif location == "header":
                request["headers"][pname] = _text(value)
            elif location == "body":
                request["json"] = value
        url = self.base_url + path
        try:
            response = await self._send(url, request)
        except httpx.RequestError as exc:
            reason = str(exc) or type(exc).__name__
            raise ToolHTTPError(f"{self.method} {url} failed: {reason}; is the API running?") from exc
        if response.is_error:
            # The model reads this and can tell the caller, e.g. that no such customer exists.
            return {"error": response.status_code, "detail": _content(response)}
        if not response.content:
            return {"status": response.status_code}
        return _content(response)

    async def _send(self, url: str, request: dict[str, Any]) -> httpx.Response:
        if self.client is not None:
            return await self.client.request(self.method, url, **request)
        # A client per call: no pool to close later, and no tie to the event loop of the first call.
        async with httpx.AsyncClient() as client:
            return await client.request(self.method, url, **request)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _content(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _resolve(node: Any, document: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """A copy of ``node`` with local $refs inlined, as plain JSON Schema for a request."""
    if isinstance(node, list):
        return [_resolve(n, document, seen) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return {}  # a recursive type: left open rather than expanded forever
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return _resolve({**_pointer(document, ref), **siblings}, document, (*seen, ref))
    out = {k: _resolve(v, document, seen) for k, v in node.items()}
    return _request_schema(out)


def _pointer(document: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $refs are supported, not {ref!r}")
    target: Any = document
    for part in ref[2:].split("/"):
        key = unquote(part).replace("~1", "/").replace("~0", "~")
        try:
            target = target[int(key)] if isinstance(target, list) else target[key]
        except (KeyError, IndexError, ValueError):
            raise ValueError(f"$ref {ref!r} points to nothing in the OpenAPI document") from None
    return target


def _request_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Turn OpenAPI 3.0 schema dialect into JSON Schema, and drop what a client must not send."""
    # Only a literal true: a dict here is a property that happens to be called "nullable".
    if schema.get("nullable") is True:
        del schema["nullable"]
        if isinstance(schema.get("type"), str):
            schema["type"] = [schema["type"], "null"]
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        # 3.0 writes these as flags on minimum/maximum
        if isinstance(schema.get(exclusive), bool) and schema.pop(exclusive) and bound in schema:
            schema[exclusive] = schema.pop(bound)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        read_only = {k for k, v in properties.items() if isinstance(v, dict) and v.get("readOnly") is True}
        if read_only:
            schema["properties"] = {k: v for k, v in properties.items() if k not in read_only}
            if isinstance(schema.get("required"), list):
                schema["required"] = [r for r in schema["required"] if r not in read_only]
    return schema
