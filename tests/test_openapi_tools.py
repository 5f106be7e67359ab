"""OpenAPI operations as tools, called against a small CRM API served by aiohttp on localhost."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from swarm.openapi import ToolHTTPError, read_openapi_file, tools_from_openapi
from swarm.tools import Tool, ToolContext
from tests.tool_fakes import NoSession

CRM_API: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "CRM", "version": "1"},
    "paths": {
        "/customers/{phone}": {
            "parameters": [
                {
                    "name": "phone",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string"},
                    "description": "Caller number in E.164",
                },
            ],
            "get": {
                "operationId": "getCustomer",
                "summary": "Look up a customer by phone number.",
                "description": "Returns name and tier.",
                "parameters": [{"$ref": "#/components/parameters/TraceId"}],
            },
        },
        "/orders": {
            "get": {
                "operationId": "list orders",  # not a valid function name: must be sanitised
                "summary": "List orders.",
                "parameters": [
                    {
                        "name": "status",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string", "enum": ["open", "shipped", "returned"]},
                    },
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 50}},
                    {"name": "express", "in": "query", "schema": {"type": "boolean"}},
                ],
            },
        },
        "/tickets": {
            "post": {
                "operationId": "createTicket",
                "summary": "Open a support ticket.",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewTicket"}}},
                },
            },
        },
        "/tickets/{id}": {
            "delete": {  # no operationId: named from method and path
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            },
        },
        "/upload": {
            "post": {
                "operationId": "upload",
                "requestBody": {"content": {"multipart/form-data": {"schema": {"type": "object"}}}},
            },
        },
    },
    "components": {
        "parameters": {
            "TraceId": {"name": "X-Trace-Id", "in": "header", "schema": {"type": "string"}},
        },
        "schemas": {
            "NewTicket": {
                "type": "object",
                "required": ["id", "phone", "category", "note"],
                "properties": {
                    "id": {"type": "integer", "readOnly": True},
                    "phone": {"type": "string"},
                    "category": {"$ref": "#/components/schemas/Category"},
                    "note": {"type": "string", "minLength": 3},
                    "order_id": {"type": "integer", "nullable": True},
                    "related": {"$ref": "#/components/schemas/Thread"},
                },
            },
            "Category": {"type": "string", "enum": ["refund", "delivery", "other"]},
            # Recursive: a thread of replies that are threads.
            "Thread": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "replies": {"type": "array", "items": {"$ref": "#/components/schemas/Thread"}},
                },
            },
        },
    },
}

CONTEXT = ToolContext(client_id="call-1", agent="triage", session=NoSession())


@pytest.fixture
async def crm() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """The CRM's base URL and the requests it received."""
    seen: list[dict[str, Any]] = []

    async def record(request: web.Request) -> None:
        body = await request.text()
        seen.append(
            {
                "method": request.method,
                "path": request.path,
                "raw_path": request.raw_path,
                "query": list(request.query.items()),
                "headers": dict(request.headers),
                "body": json.loads(body) if body else None,
            }
        )

    async def customer(request: web.Request) -> web.Response:
        await record(request)
        phone = request.match_info["phone"]
        if phone != "+441234567890":
            return web.json_response({"message": f"no customer {phone}"}, status=404)
        return web.json_response({"name": "Ada", "tier": "gold"})

    async def orders(request: web.Request) -> web.Response:
        await record(request)
        return web.json_response([{"id": 7, "status": request.query["status"]}])

    async def ticket(request: web.Request) -> web.Response:
        await record(request)
        return web.json_response({"id": 42}, status=201)

    async def delete_ticket(request: web.Request) -> web.Response:
        await record(request)
        return web.Response(status=204)

    app = web.Application()
    app.router.add_get("/api/customers/{phone}", customer)
    app.router.add_get("/api/orders", orders)
    app.router.add_post("/api/tickets", ticket)
    app.router.add_delete("/api/tickets/{id}", delete_ticket)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/api", seen
    finally:
        await runner.cleanup()


def by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}


def test_names_and_descriptions() -> None:
    tools = by_name(tools_from_openapi(CRM_API, "http://crm.invalid"))
    # The multipart upload cannot be called with JSON, so it is left out.
    assert sorted(tools) == ["createTicket", "delete_tickets_id", "getCustomer", "list_orders"]
    assert tools["getCustomer"].description == "Look up a customer by phone number.\n\nReturns name and tier."
    assert tools["list_orders"].description == "List orders."
    assert tools["delete_tickets_id"].description == "DELETE /tickets/{id}"
    # GETs read only, so a turn that made only them can be taken back (Session.retract); the rest cannot.
    assert {name for name, tool in tools.items() if tool.changes_nothing} == {"getCustomer", "list_orders"}


def test_long_and_odd_names_are_sanitised() -> None:
    doc = {"paths": {"/x": {"get": {"operationId": "é" + "a" * 100}}}}
    (tool,) = tools_from_openapi(doc, "http://crm.invalid")
    assert tool.name == "a" * 64


def test_schemas_merge_parameters_and_body() -> None:
    tools = by_name(tools_from_openapi(CRM_API, "http://crm.invalid"))
    customer = tools["getCustomer"].parameters
    assert customer["properties"] == {
        "phone": {"type": "string", "description": "Caller number in E.164"},
        "X-Trace-Id": {"type": "string"},
    }
    assert customer["required"] == ["phone"]
    assert customer["additionalProperties"] is False

    orders = tools["list_orders"].parameters
    assert orders["required"] == ["status"]
    assert orders["properties"]["limit"] == {"type": "integer", "minimum": 1, "maximum": 50}

    ticket = tools["createTicket"].parameters
    assert ticket["required"] == ["body"]
    body = ticket["properties"]["body"]
    assert "$ref" not in json.dumps(body)
    assert body["properties"]["category"] == {"type": "string", "enum": ["refund", "delivery", "other"]}
    # readOnly fields are the server's to set: neither offered nor required.
    assert "id" not in body["properties"]
    assert body["required"] == ["phone", "category", "note"]
    assert body["properties"]["order_id"] == {"type": ["integer", "null"]}
    # The recursive type is expanded once, then left open.
    related = body["properties"]["related"]
    assert related["properties"]["replies"] == {"type": "array", "items": {}}
    # The document itself is untouched.
    assert "$ref" in CRM_API["paths"]["/tickets"]["post"]["requestBody"]["content"]["application/json"]["schema"]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("getCustomer", {}, "'phone' is a required property"),
        ("getCustomer", {"phone": 441234}, "at 'phone': 441234 is not of type 'string'"),
        ("getCustomer", {"phone": "+44", "phone_number": "+44"}, "'phone_number' was unexpected"),
        ("list_orders", {"status": "lost"}, "at 'status': 'lost' is not one of"),
        ("list_orders", {"status": "open", "limit": 500}, "at 'limit': 500 is greater than the maximum of 50"),
        ("createTicket", {}, "'body' is a required property"),
        ("createTicket", {"body": {"phone": "+44", "category": "refund"}}, "'note' is a required property"),
        ("createTicket", {"body": {"phone": "+44", "category": "x", "note": "broken"}}, "at 'body/category'"),
        ("createTicket", {"body": {"phone": "+44", "category": "refund", "note": "ok"}}, "at 'body/note'"),
    ],
)
def test_bad_arguments_are_named(tool: str, arguments: dict[str, Any], expected: str) -> None:
    errors = by_name(tools_from_openapi(CRM_API, "http://crm.invalid"))[tool].errors(arguments, CONTEXT)
    assert any(expected in e for e in errors), errors


def test_good_arguments_pass() -> None:
    tools = by_name(tools_from_openapi(CRM_API, "http://crm.invalid"))
    body = {"phone": "+44", "category": "refund", "note": "arrived broken", "order_id": None}
    assert tools["createTicket"].errors({"body": body}, CONTEXT) == []
    assert tools["list_orders"].errors({"status": "open", "limit": 5, "express": True}, CONTEXT) == []


def test_include_keeps_named_operations_and_rejects_unknown_names() -> None:
    tools = tools_from_openapi(CRM_API, "http://crm.invalid", include=["getCustomer", "list orders"])
    assert sorted(t.name for t in tools) == ["getCustomer", "list_orders"]
    with pytest.raises(ValueError, match="getCustomr"):
        tools_from_openapi(CRM_API, "http://crm.invalid", include=["getCustomr"])


async def test_calls_reach_the_api(crm: tuple[str, list[dict[str, Any]]]) -> None:
    base_url, seen = crm
    tools = by_name(tools_from_openapi(CRM_API, base_url, headers={"Authorization": "Bearer t0ken"}))

    found = await tools["getCustomer"].call({"phone": "+441234567890", "X-Trace-Id": "call-1"}, CONTEXT)
    assert found == {"name": "Ada", "tier": "gold"}
    assert seen[-1]["method"] == "GET"
    assert seen[-1]["raw_path"] == "/api/customers/%2B441234567890"  # '+' encoded, not read as a space
    assert seen[-1]["headers"]["Authorization"] == "Bearer t0ken"
    assert seen[-1]["headers"]["X-Trace-Id"] == "call-1"

    listed = await tools["list_orders"].call({"status": "open", "limit": 5, "express": False}, CONTEXT)
    assert listed == [{"id": 7, "status": "open"}]
    assert seen[-1]["path"] == "/api/orders"
    assert sorted(seen[-1]["query"]) == [("express", "false"), ("limit", "5"), ("status", "open")]

    body = {"phone": "+441234567890", "category": "refund", "note": "kettle arrived broken"}
    created = await tools["createTicket"].call({"body": body}, CONTEXT)
    assert created == {"id": 42}
    assert (seen[-1]["method"], seen[-1]["path"], seen[-1]["body"]) == ("POST", "/api/tickets", body)

    deleted = await tools["delete_tickets_id"].call({"id": 42}, CONTEXT)
    assert deleted == {"status": 204}
    assert (seen[-1]["method"], seen[-1]["path"]) == ("DELETE", "/api/tickets/42")


async def test_path_parameters_cannot_escape_the_path(crm: tuple[str, list[dict[str, Any]]]) -> None:
    base_url, seen = crm
    tools = by_name(tools_from_openapi(CRM_API, base_url))
    result = await tools["getCustomer"].call({"phone": "../orders?status=open"}, CONTEXT)
    assert result["error"] == 404
    assert seen[-1]["raw_path"] == "/api/customers/..%2Forders%3Fstatus%3Dopen"


async def test_http_error_is_returned_for_the_model(crm: tuple[str, list[dict[str, Any]]]) -> None:
    base_url, _ = crm
    tools = by_name(tools_from_openapi(CRM_API, base_url))
    result = await tools["getCustomer"].call({"phone": "+440000000000"}, CONTEXT)
    assert result == {"error": 404, "detail": {"message": "no customer +440000000000"}}


async def test_shared_client_is_used(crm: tuple[str, list[dict[str, Any]]]) -> None:
    base_url, seen = crm
    async with httpx.AsyncClient(headers={"User-Agent": "voiceswarm-test"}) as client:
        tools = by_name(tools_from_openapi(CRM_API, base_url, client=client))
        await tools["list_orders"].call({"status": "shipped"}, CONTEXT)
    assert seen[-1]["headers"]["User-Agent"] == "voiceswarm-test"
    assert seen[-1]["query"] == [("status", "shipped")]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_closed_port_raises_tool_http_error() -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/api"
    tools = by_name(tools_from_openapi(CRM_API, base_url, timeout=2.0))
    started = time.monotonic()
    with pytest.raises(ToolHTTPError, match=f"GET {base_url}/orders"):
        await tools["list_orders"].call({"status": "open"}, CONTEXT)
    assert time.monotonic() - started < 2.0


async def test_slow_api_raises_tool_http_error_after_the_timeout() -> None:
    stalled: list[asyncio.StreamWriter] = []

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stalled.append(writer)  # accepts the connection, never answers

    server = await asyncio.start_server(stall, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        tools = by_name(tools_from_openapi(CRM_API, f"http://127.0.0.1:{port}", timeout=0.3))
        started = time.monotonic()
        with pytest.raises(ToolHTTPError, match="ReadTimeout"):
            await tools["list_orders"].call({"status": "open"}, CONTEXT)
        assert time.monotonic() - started < 2.0
    finally:
        server.close()
        for writer in stalled:
            writer.close()
            await writer.wait_closed()


def test_read_openapi_file(tmp_path: Any) -> None:
    path = tmp_path / "crm.json"
    path.write_text(json.dumps(CRM_API))
    assert read_openapi_file(path) == CRM_API
