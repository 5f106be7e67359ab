"""The WebSocket text channel, as in agent-swarm-kit's example: /api/v1/session/{client_id}.

The client sends {"data": "caller text"} (or plain text); the server answers each event of the turn
as JSON ({"event": "agent_change"|"tool_call"|"reply", ...}) and ends the turn with {"event": "done", "agent",
"escalation", "ending"}: "escalation" (the caller must reach a person) and "ending" (the agent ended the call;
the server then closes the socket) are null or say why, as "reason" or "reason: detail" (swarm.events).
"""

from __future__ import annotations

import asyncio
import json
import logging

from aiohttp import WSMsgType, web

from callcenter.app import App, open_app
from callcenter.config import Config
from callcenter.turn_events import turn_events

log = logging.getLogger(__name__)
APP_KEY = web.AppKey("voiceswarm", App)


def make_web_app(app: App) -> web.Application:
    web_app = web.Application()
    web_app[APP_KEY] = app
    web_app.router.add_get("/api/v1/session/{client_id}", _session)
    return web_app


async def _session(request: web.Request) -> web.WebSocketResponse:
    app = request.app[APP_KEY]
    client_id = request.match_info["client_id"]
    socket = web.WebSocketResponse(heartbeat=30)
    await socket.prepare(request)
    session = app.session(client_id, request.query.get("caller", ""))
    log.info("websocket session opened client=%s", client_id)
    try:
        async for message in socket:
            if message.type != WSMsgType.TEXT:
                continue
            text = _caller_text(message.data)
            if not text:
                await socket.send_json({"event": "error", "error": 'send {"data": "what the caller said"}'})
                continue
            seen = len(session.events)
            await session.complete(text)
            for item in turn_events(session.events[seen:]):
                await socket.send_json(item)
            escalation, ending = session.escalated(), session.ended()
            await socket.send_json(
                {
                    "event": "done",
                    "agent": session.get_agent_name(),
                    "escalation": escalation.text if escalation else None,
                    "ending": ending.text if ending else None,
                }
            )
            if ending:  # the agent said goodbye: the call is over, as on the phone
                await socket.close(message=b"the call has ended")
                break
    finally:
        session.dispose()
        log.info("websocket session closed client=%s", client_id)
    return socket


def _caller_text(data: str) -> str:
    try:
        parsed = json.loads(data)
    except ValueError:
        return data.strip()
    if not isinstance(parsed, dict):
        return data.strip()
    text = parsed.get("data")
    return text.strip() if isinstance(text, str) else ""


async def serve(config: Config, provider: str | None, host: str, port: int) -> int:
    app = await open_app(config, provider)
    runner = web.AppRunner(make_web_app(app))
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    print(
        f"voiceswarm: WebSocket endpoint ws://{host}:{port}/api/v1/session/{{client_id}} (LLM: {app.llm})",
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        app.close()
    return 0
