"""The HTTP shop against a small order API of our own (aiohttp, in the test's loop): the mapping's errors named at
load, bounded GET retries, writes sent once unless the API honours Idempotency-Key, timeouts, size limits, one host
only, auth headers, and what a caller hears when the system fails (issue 24)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from callcenter.app import open_app
from callcenter.config import Config, ConfigError, LLMConfig, load_config
from callcenter.http_shop import HttpShop, MappingError, load_mapping
from callcenter.store.domain import OutOfStock, ShopUnavailable

CALLER = "+49 30 901820 77"
TOKEN = "t0ken-for-the-order-api-1234"
PRODUCT = {"id": "LMP-7", "title": "Desk lamp", "description": "A lamp", "price": "34.50", "stock": 3}


@dataclass
class OrderApi:
    """The call centre's order system: what it was asked, and statuses it answers first (then the real answer)."""

    requests: list[web.Request] = field(default_factory=list)
    fail: dict[str, list[int]] = field(default_factory=dict)  # "GET /api/products" -> [503, 503]
    delay_s: float = 0.0
    product: dict[str, Any] = field(default_factory=lambda: dict(PRODUCT))
    orders: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Callable[[web.Request], web.StreamResponse]] = field(default_factory=dict)
    returned: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/api/products", self._products)
        app.router.add_get("/api/products/{pk}", self._product)
        app.router.add_get("/api/orders", self._orders)
        app.router.add_post("/api/orders", self._order)
        app.router.add_post("/api/returns", self._return)
        return app

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append(request)
        key = f"{request.method} {request.path}"
        if key in self.extra:
            return self.extra[key](request)
        if self.fail.get(key):
            return web.Response(status=self.fail[key].pop(0), text="busy")
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        response: web.StreamResponse = await handler(request)
        return response

    async def _products(self, request: web.Request) -> web.Response:
        return web.json_response([{"id": "LMP-7", "title": "Desk lamp"}])

    async def _orders(self, request: web.Request) -> web.Response:
        return web.json_response(self.orders)

    async def _product(self, request: web.Request) -> web.Response:
        if request.match_info["pk"] != self.product["id"]:
            return web.json_response({"detail": "not found"}, status=404)
        return web.json_response(self.product)

    async def _order(self, request: web.Request) -> web.Response:
        body = await request.json()
        number = str(55501 + len(self.orders))
        self.orders.append(
            {
                "number": number,
                "phone": body["phone"],
                "placed": "2026-12-01T10:00:00Z",
                "lines": [{"sku": body["sku"], "name": "Desk lamp", "quantity": body["quantity"], "total": "69.00"}],
            }
        )
        return web.json_response({"order": {"number": number}})

    async def _return(self, request: web.Request) -> web.Response:
        self.returned.append(await request.json())
        return web.json_response({"rma": str(7000 + len(self.returned))})

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r.method == method and r.path == path)


def _ok(properties: list[str], array: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {p: {} for p in properties}}
    if array:
        schema = {"type": "array", "items": schema}
    return {"200": {"description": "OK", "content": {"application/json": {"schema": schema}}}}


DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Orders", "version": "1"},
    "paths": {
        "/products": {"get": {"operationId": "listProducts", "responses": _ok(["id", "title"], array=True)}},
        "/products/{pk}": {
            "get": {
                "operationId": "getProduct",
                "parameters": [{"name": "pk", "in": "path", "required": True}],
                "responses": _ok(["id", "title", "description", "price", "stock"]),
            }
        },
        "/orders": {
            "get": {"operationId": "listOrders", "responses": _ok(["number", "phone", "placed", "lines"], True)},
            "post": {"operationId": "createOrder", "responses": _ok(["order"])},
        },
        "/returns": {"post": {"operationId": "createReturn", "responses": _ok(["rma"])}},
    },
}


def mapping_table(url: str) -> dict[str, Any]:
    return {
        "url": url,
        "openapi": "orders.json",
        "auth": "bearer",
        "secret_env": "ORDERS_TOKEN",
        "timeout_s": 2,
        "get_retries": 2,
        "products": {
            "list": "listProducts",
            "get": "getProduct",
            "sku": "id",
            "name": "title",
            "description": "description",
            "price": "price",
            "stock": "stock",
        },
        "orders": {
            "list": "listOrders",
            "number": "number",
            "phone": "phone",
            "placed": "placed",
            "lines": "lines",
            "line_sku": "sku",
            "line_name": "name",
            "line_quantity": "quantity",
            "line_total": "total",
        },
        "place_order": [
            {
                "operation": "createOrder",
                "body": {"sku": "{sku}", "quantity": "{quantity}", "phone": "{phone}", "title": "{product.title}"},
                "order_number": "order.number",
            }
        ],
    }


@pytest.fixture
def document_dir(tmp_path: Path) -> Path:
    (tmp_path / "orders.json").write_text(json.dumps(DOCUMENT))
    return tmp_path


@dataclass
class Running:
    api: OrderApi
    url: str
    port: int
    directory: Path

    def shop(self, **changes: Any) -> HttpShop:
        table = mapping_table(self.url)
        table.update(changes)
        return HttpShop(load_mapping(table, self.directory, {"ORDERS_TOKEN": TOKEN}))


@pytest.fixture
async def running(document_dir: Path) -> AsyncIterator[Running]:
    api = OrderApi()
    server = TestServer(api.app(), host="127.0.0.1")
    await server.start_server()
    try:
        yield Running(api, f"http://127.0.0.1:{server.port}/api", int(server.port or 0), document_dir)
    finally:
        await server.close()


# --- the mapping, at load -------------------------------------------------------------------------------------------


def _broken(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    table = mapping_table("http://127.0.0.1:9/api")
    change(table)
    return table


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda t: t["products"].update(list="listProductz"), "shop.http.products.list: the OpenAPI document has no operation 'listProductz'"),
        (lambda t: t["products"].update(price="cost"), "shop.http.products.price is 'cost', but getProduct's response has no field 'cost'"),
        (lambda t: t["orders"].pop("phone"), "shop.http.orders.phone is missing"),
        (lambda t: t["orders"].update(list="createOrder"), "shop.http.orders.list: createOrder is a POST"),
        (lambda t: t["place_order"][0].update(operation="getProduct"), "shop.http.place_order[0].operation: getProduct is a GET"),
        (lambda t: t["place_order"][0]["body"].update(who="{customer}"), "shop.http.place_order[0]: no value for the placeholder {customer}"),
        (lambda t: t["place_order"][0].pop("order_number"), "shop.http.place_order[0].order_number is missing"),
        (lambda t: t["place_order"][0].update(order_number="id"), "createOrder's response has no field 'id'"),
        (lambda t: t.pop("orders"), "[shop.http.orders] is missing"),
        (lambda t: t.update(secret_env="NOT_SET_ANYWHERE"), "shop.http.secret_env names NOT_SET_ANYWHERE, which is not set"),
        (lambda t: t.update(url="http://orders.example.com/api"), "http:// to orders.example.com, beyond this machine: use https://"),
        (lambda t: t.update(url="https://user:pw@orders.example.com/api"), "must not hold credentials"),
        (lambda t: t.update(openapi="missing.json"), "shop.http.openapi: cannot read"),
        (lambda t: t.update(colour="blue"), "unknown keys in [shop.http]: colour"),
    ],
)  # fmt: skip
def test_the_mappings_errors_are_named_at_load(
    document_dir: Path, change: Callable[[dict[str, Any]], None], named: str
) -> None:
    with pytest.raises(MappingError) as raised:
        load_mapping(_broken(change), document_dir, {"ORDERS_TOKEN": TOKEN})
    assert named in str(raised.value)


def test_config_load_names_the_mapping_error_and_reads_the_document_beside_the_file(document_dir: Path) -> None:
    text = f"""
[shop.http]
url = "http://127.0.0.1:9/api"
openapi = "orders.json"
secret_env = "ORDERS_TOKEN"
[shop.http.products]
list = "listProducts"
get = "getProduct"
sku = "id"
name = "title"
price = "price"
stock = "stock"
[shop.http.orders]
{chr(10).join(f'{k} = "{v}"' for k, v in mapping_table("")["orders"].items())}
[[shop.http.place_order]]
operation = "createOrder"
order_number = "order.number"
"""
    (document_dir / "voiceswarm.toml").write_text(text)
    loaded = load_config(document_dir / "voiceswarm.toml", {"ORDERS_TOKEN": TOKEN})
    assert loaded.shop_http is not None and loaded.shop_http.place_order[0].operation.path == "/orders"
    (document_dir / "voiceswarm.toml").write_text(text.replace('list = "listOrders"', 'list = "ordersList"'))
    with pytest.raises(ConfigError, match=r"shop.http.orders.list: the OpenAPI document has no operation 'ordersList'"):
        load_config(document_dir / "voiceswarm.toml", {"ORDERS_TOKEN": TOKEN})


# --- the client's rules ---------------------------------------------------------------------------------------------


async def test_a_get_is_retried_a_bounded_number_of_times(running: Running) -> None:
    running.api.fail["GET /api/products"] = [503, 502]
    shop = running.shop()
    found = await asyncio.to_thread(shop.search, "desk lamp")
    assert [p.name for p in found] == ["Desk lamp"] and found[0].price_cents == 3450 and found[0].stock == 3
    assert running.api.count("GET", "/api/products") == 3
    running.api.fail["GET /api/products"] = [503] * 10
    with pytest.raises(ShopUnavailable) as raised:
        await asyncio.to_thread(shop.search, "desk lamp")
    assert running.api.count("GET", "/api/products") == 3 + 3  # one try and get_retries = 2 more
    assert str(raised.value) == "our order system is not answering at the moment."
    shop.close()


async def test_a_write_is_sent_once_unless_the_api_honours_idempotency_keys(running: Running) -> None:
    running.api.fail["POST /api/orders"] = [503, 503]
    once = running.shop()
    with pytest.raises(ShopUnavailable):
        await asyncio.to_thread(once.place_order, CALLER, [("LMP-7", 1)], "call-1:LMP-7:1")
    assert running.api.count("POST", "/api/orders") == 1 and running.api.orders == []
    posted = [r for r in running.api.requests if r.method == "POST"]
    assert posted[0].headers["Idempotency-Key"] == "call-1:LMP-7:1"
    once.close()

    running.api.fail["POST /api/orders"] = [503, 504]
    again = running.shop(idempotent_writes=True)
    order = await asyncio.to_thread(again.place_order, CALLER, [("LMP-7", 2)], "call-2:LMP-7:2")
    posted = [r for r in running.api.requests if r.method == "POST"][1:]
    assert len(posted) == 3 and {r.headers["Idempotency-Key"] for r in posted} == {"call-2:LMP-7:2"}
    assert order.order_number == "55501" and order.total_cents == 6900
    # The same key again: the first order, nothing sent.
    assert await asyncio.to_thread(again.place_order, CALLER, [("LMP-7", 2)], "call-2:LMP-7:2") == order
    assert running.api.count("POST", "/api/orders") == 4
    again.close()


async def test_a_slow_api_is_a_timeout_not_a_wait(running: Running) -> None:
    running.api.delay_s = 3.0
    shop = running.shop(timeout_s=0.3, get_retries=0)
    started = time.monotonic()
    with pytest.raises(ShopUnavailable) as raised:
        await asyncio.to_thread(shop.get_product, "LMP-7")
    assert time.monotonic() - started < 1.5 and "Timeout" in raised.value.detail
    shop.close()


async def test_a_response_over_the_size_limit_is_not_read(running: Running) -> None:
    running.api.product["description"] = "x" * 5000
    shop = running.shop(max_response_bytes=2000)
    with pytest.raises(ShopUnavailable) as raised:
        await asyncio.to_thread(shop.get_product, "LMP-7")
    assert "over the limit of 2000" in raised.value.detail or "more than 2000 bytes" in raised.value.detail
    shop.close()


async def test_only_the_configured_host_is_contacted(running: Running) -> None:
    """A link to another host in an answer, or a redirect there, is refused: the other server hears nothing."""
    elsewhere = OrderApi()
    other = TestServer(elsewhere.app(), host="127.0.0.1")
    await other.start_server()
    try:
        running.api.product["price"] = f"http://127.0.0.1:{other.port}/api/products/LMP-7"
        shop = running.shop(products={**mapping_table("")["products"], "price": "price->price"})
        with pytest.raises(ShopUnavailable) as raised:
            await asyncio.to_thread(shop.get_product, "LMP-7")
        assert "another host" in raised.value.detail
        location = f"http://127.0.0.1:{other.port}/api/orders"
        running.api.extra["GET /api/orders"] = lambda r: web.Response(status=302, headers={"Location": location})
        with pytest.raises(ShopUnavailable) as redirected:
            await asyncio.to_thread(shop.find_orders, customer_phone=CALLER)
        assert "redirect" in redirected.value.detail
        shop.close()
    finally:
        await other.close()
    assert elsewhere.requests == []


async def test_auth_headers(running: Running, document_dir: Path) -> None:
    bearer = running.shop()
    await asyncio.to_thread(bearer.get_product, "LMP-7")
    assert running.api.requests[-1].headers["Authorization"] == f"Bearer {TOKEN}"
    anonymous = running.shop(place_order=[{**mapping_table("")["place_order"][0], "credentials": False}])
    await asyncio.to_thread(anonymous.place_order, CALLER, [("LMP-7", 1)], "k-anon")
    assert "Authorization" not in running.api.requests[-1].headers
    table = {**mapping_table(running.url), "auth": "basic"}
    basic = HttpShop(load_mapping(table, document_dir, {"ORDERS_TOKEN": "callcenter:s3cret"}))
    await asyncio.to_thread(basic.get_product, "LMP-7")
    assert (
        running.api.requests[-1].headers["Authorization"] == "Basic " + base64.b64encode(b"callcenter:s3cret").decode()
    )
    for shop in (bearer, anonymous, basic):
        shop.close()


async def test_orders_are_found_by_the_whole_number_and_stock_is_checked_first(running: Running) -> None:
    shop = running.shop()
    mine = await asyncio.to_thread(shop.place_order, CALLER, [("LMP-7", 1)], "k1")
    await asyncio.to_thread(shop.place_order, "+49 30 901820 7", [("LMP-7", 1)], "k2")  # a prefix of the caller's
    found = await asyncio.to_thread(shop.find_orders, customer_phone="030 90182077")
    assert [o.order_number for o in found] == [mine.order_number] and found[0].lines[0].unit_price_cents == 6900
    with pytest.raises(OutOfStock, match="Only 3 of the Desk lamp are left in stock, not 4"):
        await asyncio.to_thread(shop.place_order, CALLER, [("LMP-7", 4)], "k3")
    assert running.api.count("POST", "/api/orders") == 2
    shop.close()


# --- what the caller hears ------------------------------------------------------------------------------------------


async def test_a_failing_order_system_is_an_apology_and_a_person(running: Running, tmp_path: Path) -> None:
    running.api.fail["GET /api/products"] = [500] * 10
    mapping = load_mapping(mapping_table(running.url), running.directory, {"ORDERS_TOKEN": TOKEN})
    config = replace(Config(llm=LLMConfig(provider="offline"), database=str(tmp_path / "shop.db")), shop_http=mapping)
    app = await open_app(config)
    try:
        session = app.session("down-1", CALLER)
        reply = await session.complete("I'd like to buy a desk lamp.")
    finally:
        app.close()
    assert reply == (
        "I'm sorry, our order system is not answering at the moment. I'll put you through to a colleague, please hold."
    )
    escalation = session.escalated()
    assert escalation is not None and escalation.reason == "backend_unavailable" and "500 busy" in escalation.detail
    assert "{" not in reply and running.api.count("GET", "/api/products") == 1  # a 500 is not a busy gateway


async def test_a_searching_api_is_asked_and_a_filtering_one_given_the_number(running: Running) -> None:
    products = {**mapping_table("")["products"], "query": "q"}
    orders = {**mapping_table("")["orders"], "phone_query": "phone"}
    shop = running.shop(products=products, orders=orders)
    await asyncio.to_thread(shop.search, "a desk lamp please")
    listed = [r for r in running.api.requests if r.path == "/api/products"]
    assert len(listed) == 1 and listed[0].query["q"] == "a desk lamp please"
    await asyncio.to_thread(shop.find_orders, customer_phone="030 90182077")
    assert running.api.requests[-1].query["phone"] == "+493090182077"
    # A code of dots would walk up the API's paths: no request at all.
    before = len(running.api.requests)
    assert await asyncio.to_thread(shop.get_product, "..") is None and len(running.api.requests) == before
    assert await asyncio.to_thread(shop.get_product, "NOPE-1") is None  # a 404
    shop.close()


async def test_a_mapped_return_is_written_once(running: Running) -> None:
    step = {
        "operation": "createReturn",
        "body": {"order": "{order_number}", "sku": "{sku}", "quantity": "{quantity}", "why": "{reason}"},
        "return_number": "rma",
    }
    shop = running.shop(create_return=[step])
    order = await asyncio.to_thread(shop.place_order, CALLER, [("LMP-7", 2)], "buy")
    made = await asyncio.to_thread(shop.create_return, order.order_number, "LMP-7", 1, "too bright", "ret-1")
    again = await asyncio.to_thread(shop.create_return, order.order_number, "LMP-7", 1, "too bright", "ret-1")
    assert made == again and made.return_number == "7001" and made.refund_cents == 3450
    assert running.api.returned == [{"order": "55501", "sku": "LMP-7", "quantity": 1, "why": "too bright"}]
    shop.close()


async def test_a_refused_order_is_an_apology_and_the_record_keeps_the_answer(running: Running, tmp_path: Path) -> None:
    """The system refuses the write (a 406, as oscar answers a basket it cannot fill): the caller hears no JSON, a
    person takes over, and the tool's recorded result holds what the system said."""
    from swarm.events import ToolCalled

    running.api.extra["POST /api/orders"] = lambda r: web.json_response({"reason": "not enough stock"}, status=406)
    mapping = load_mapping(mapping_table(running.url), running.directory, {"ORDERS_TOKEN": TOKEN})
    config = replace(Config(llm=LLMConfig(provider="offline"), database=str(tmp_path / "shop.db")), shop_http=mapping)
    app = await open_app(config)
    try:
        session = app.session("refused-1", CALLER)
        offer = await session.complete("I'd like to buy a desk lamp.")
        reply = await session.complete("yes")
    finally:
        app.close()
    assert offer.startswith("We have the Desk lamp for 34.50 euros.")
    assert reply == (
        "I'm sorry, our order system did not accept the order. I'll put you through to a colleague, please hold."
    )
    [placed] = [
        e for e in session.events if isinstance(e, ToolCalled) and e.name == "place_order" and "error" in e.result
    ]
    assert "406" in placed.result and "not enough stock" in placed.result
    assert running.api.count("POST", "/api/orders") == 1 and session.escalated() is not None
