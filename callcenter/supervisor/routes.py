"""The supervisor's page: its files, the live feed (a WebSocket), the two buttons, past calls and the node's health."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from callcenter.call_records import CallRecords
from callcenter.config import SupervisorConfig
from callcenter.shop_backend import ShopBackend
from callcenter.supervisor.auth import Proxies, guard, security_headers
from callcenter.supervisor.live import LiveCalls
from callcenter.supervisor.views import past_call, shown, summary

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class Sources:
    """What the page reads: the live calls, the call records, the shop, and the node's health."""

    live: LiveCalls
    records: CallRecords
    shop: ShopBackend
    health: Callable[[], dict[str, Any]]
    masked: bool = True
    region: str = "DE"  # privacy.phone_region

    def show(self, value: Any) -> Any:
        return shown(value, masked=self.masked, region=self.region)


SOURCES = web.AppKey("sources", Sources)


def supervisor_app(config: SupervisorConfig, sources: Sources) -> web.Application:
    proxies = Proxies(config.behind_tls, config.trusted_proxies)
    app = web.Application(middlewares=[guard(config.token, proxies=proxies)])
    app[SOURCES] = sources
    app.on_response_prepare.append(security_headers)
    app.on_shutdown.append(_close_feed)
    app.router.add_get("/", _index)
    app.router.add_static("/static", STATIC)
    app.router.add_get("/api/live", _live)
    # A SIP Call-ID may hold any of "/?%@": calls are named by ?id=, never by a path segment.
    app.router.add_post("/api/hand-over", _hand_over)
    app.router.add_post("/api/hang-up", _hang_up)
    app.router.add_get("/api/calls", _search)
    app.router.add_get("/api/call", _past_call)
    app.router.add_get("/api/recording", _recording)
    app.router.add_get("/api/health", _health)
    return app


async def _index(_: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


async def _live(request: web.Request) -> web.WebSocketResponse:
    sources = request.app[SOURCES]
    socket = web.WebSocketResponse(heartbeat=30)
    await socket.prepare(request)
    sender = asyncio.create_task(_send_feed(socket, sources))
    try:
        async for message in socket:  # the page sends nothing; reading is how its leaving is seen
            if message.type == WSMsgType.ERROR:
                break
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)
    return socket


async def _send_feed(socket: web.WebSocketResponse, sources: Sources) -> None:
    try:
        async with contextlib.aclosing(sources.live.watch()) as events:
            async for event in events:
                await socket.send_json(sources.show(event))
    finally:  # the node is stopping, the page fell too far behind, or an event failed: the page reconnects
        if not socket.closed:
            await socket.close()


async def _close_feed(app: web.Application) -> None:
    await app[SOURCES].live.close()


async def _hand_over(request: web.Request) -> web.Response:
    call_id = request.query.get("id", "")
    if not request.app[SOURCES].live.hand_over(call_id):
        return _error(409, "the call has ended, is already ending, or has no operator to go to (voice.operator)")
    return web.json_response({"call_id": call_id, "handing_over": True})


async def _hang_up(request: web.Request) -> web.Response:
    call_id = request.query.get("id", "")
    if not await request.app[SOURCES].live.hang_up(call_id):
        return _error(404, "no such live call")
    return web.json_response({"call_id": call_id, "hung_up": True})


async def _search(request: web.Request) -> web.Response:
    sources, query = request.app[SOURCES], request.query
    try:
        since, until = (float(query[key]) if query.get(key) else None for key in ("since", "until"))
        limit = int(query.get("limit", "50"))
        records = await asyncio.to_thread(
            sources.records.search, query.get("number", ""), since, until, query.get("disposition", ""), limit
        )
    except ValueError as error:
        return _error(
            400, f"{error}; search with number=, since= and until= (seconds since 1970), disposition=, limit="
        )
    return web.json_response(sources.show({"calls": [summary(record) for record in records]}))


async def _past_call(request: web.Request) -> web.Response:
    sources, call_id = request.app[SOURCES], request.query.get("id", "")

    def load() -> dict[str, Any] | None:
        record = sources.records.get(call_id)
        return past_call(record, sources.records.session_events(call_id), sources.shop) if record else None

    call = await asyncio.to_thread(load)
    return web.json_response(sources.show(call)) if call else _error(404, "no such call")


async def _recording(request: web.Request) -> web.StreamResponse:
    record = await asyncio.to_thread(request.app[SOURCES].records.get, request.query.get("id", ""))
    path = Path(record.recording) if record and record.recording else None
    if path is None or not path.is_file():
        return _error(404, "no recording of this call")
    return web.FileResponse(path)


async def _health(request: web.Request) -> web.Response:
    return web.json_response(request.app[SOURCES].health())


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)
