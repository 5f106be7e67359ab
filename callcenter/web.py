"""The WebSocket text channel, as in agent-swarm-kit's example: /api/v1/session/{client_id}.

The client sends {"data": "caller text"} (or plain text); the server answers each event of the turn
as JSON ({"event": "agent_change"|"tool_call"|"reply", ...}) and ends the turn with {"event": "done", "agent",
"escalation", "ending"}: "escalation" (the caller must reach a person) and "ending" (the agent ended the call;
the server then closes the socket) are null or say why, as "reason" or "reason: detail" (swarm.events).
What it cannot take (a binary frame, a message too long, too many messages) gets {"event": "error", "error"}.
Keys come as {"keys": "0"} (the phone's keypad: 0 for a person, the digits a tool asked for).

The call rules are the phone's (callcenter.call.rules, driven by callcenter.call.text): after each turn the hand-over
or the goodbye, the keypad a tool asked for, 0 for a person. A hand-over or a goodbye ends the session: its lines are
sent, then "done", then the socket closes; a person takes over in the client, which reads "escalation". A client
that asks for a call (?call=1) gets the rest of them too: the greeting when the socket opens, re-prompts of a silent
caller and the goodbye after them, the call's time limit (each sent as a turn's events and its "done").

Who may come in ([web] in the config): a signed per-customer token (callcenter/web_tokens.py) opens a session
for the caller it names, the shared `web.token` one with no caller (the agent asks, as on an anonymous call);
with neither configured, only clients on this machine, by a loopback name. The caller's number never comes from
the client unsigned. A browser's page from another origin is refused (cross-site WebSocket hijacking), as on the
supervisor's page, whose checks these are (callcenter/supervisor/auth.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import WSMsgType, web

from callcenter.app import App, open_app
from callcenter.call.settings import VoiceSettings
from callcenter.call.text import CallInText
from callcenter.config import Config, WebConfig
from callcenter.event_json import turn_events
from callcenter.log_safety import printable
from callcenter.supervisor.auth import (
    Failures,
    by_loopback_name,
    holds,
    presented,
    refuse_if_slowed,
    same_origin,
)
from callcenter.web_tokens import PREFIX, caller_of

log = logging.getLogger(__name__)
APP_KEY = web.AppKey("voiceswarm", App)
# A frame larger than this is not read at all: aiohttp closes the socket with 1009 (message too big). Below it,
# a message longer than web.max_message_chars is answered with an error frame and the socket stays open.
MAX_FRAME_BYTES = 64 * 1024
RATE_WINDOW_S = 60.0
CLOCK_S = 0.25  # how often a call's clock is read (re-prompts, the time limit), as on the phone
KEYS = frozenset("0123456789*#")
# A person takes over in the client (the shop's site reads "escalation" in "done"): a hand-over always goes through.
CLIENT_OPERATOR = "the client"


@dataclass
class Door:
    """The text channel's settings and what it counts: open sockets, wrong tokens per address."""

    config: WebConfig
    settings: VoiceSettings  # what a call says and how long it waits (the call rules')
    failures: Failures = field(default_factory=Failures)
    open_sockets: int = 0


DOOR_KEY = web.AppKey("door", Door)


def make_web_app(app: App, config: WebConfig | None = None, settings: VoiceSettings | None = None) -> web.Application:
    """`settings`: the call rules' lines and clocks; by default the phone's ([voice]), with the client as the
    person who takes over."""
    if settings is None:
        settings = replace(VoiceSettings.from_config(app.config.voice), operator=CLIENT_OPERATOR)
    web_app = web.Application()
    web_app[APP_KEY] = app
    web_app[DOOR_KEY] = Door(config if config is not None else app.config.web, settings)
    web_app.router.add_get("/api/v1/session/{client_id}", _session)
    return web_app


def admitted_caller(request: web.Request, door: Door) -> str:
    """The caller the session is for ("" for none), or an HTTP error saying why it is refused."""
    config = door.config
    if not same_origin(request, config.allowed_origins):
        raise web.HTTPForbidden(text="403: this page's origin may not open the text channel (web.allowed_origins)")
    if "caller" in request.query:
        raise web.HTTPBadRequest(
            text="400: the caller's number comes only inside a signed token (web.signing_key), never as ?caller="
        )
    if not (config.token or config.signing_key):
        if not by_loopback_name(request):
            raise web.HTTPForbidden(
                text="403: without web.token the text channel answers only as 127.0.0.1 or localhost"
            )
        return ""
    refuse_if_slowed(door.failures, request)
    for candidate in presented(request, cookie=None):
        if candidate.startswith(PREFIX):
            caller = caller_of(config.signing_key, candidate)
            if caller is not None:
                return caller
    if config.token and holds(request, config.token, cookie=None):
        return ""
    if presented(request, cookie=None):
        door.failures.record(request.remote)
    raise web.HTTPUnauthorized(
        text="401: the text channel needs a token: a signed caller token (?token= or Authorization: Bearer) or web.token"
    )


async def _session(request: web.Request) -> web.WebSocketResponse:
    app, door = request.app[APP_KEY], request.app[DOOR_KEY]
    client_id = request.match_info["client_id"]
    caller = admitted_caller(request, door)
    if door.open_sockets >= door.config.max_sockets:
        raise web.HTTPServiceUnavailable(text="503: too many text sessions open (web.max_sockets)")
    socket = web.WebSocketResponse(heartbeat=30, max_msg_size=MAX_FRAME_BYTES)
    door.open_sockets += 1
    try:
        await socket.prepare(request)
        session = app.session(client_id, caller)
        call = CallInText(session, door.settings, time.monotonic())
        await _converse(socket, call, door.config, client_id, as_call=request.query.get("call") == "1")
    finally:
        door.open_sockets -= 1
    return socket


async def _converse(
    socket: web.WebSocketResponse, call: CallInText, config: WebConfig, client_id: str, *, as_call: bool
) -> None:
    log.info("websocket session opened client=%s", printable(client_id))
    recent: deque[float] = deque(maxlen=config.messages_per_minute)
    turn = asyncio.Lock()  # one turn at a time: the caller's, or one the call's clock starts
    clock = asyncio.create_task(_clock(socket, call, turn)) if as_call else None
    try:
        if as_call:
            async with turn:
                seen = len(call.session.events)
                call.start(time.monotonic())
                await _send_turn(socket, call, seen)
        async for message in socket:
            if message.type == WSMsgType.BINARY:
                await _error(socket, 'binary frames are not taken: send text, {"data": "what the caller said"}')
                continue
            if message.type != WSMsgType.TEXT:
                continue
            if len(message.data) > config.max_message_chars:
                await _error(socket, f"message too long: at most {config.max_message_chars} characters")
                continue
            now = time.monotonic()
            if len(recent) == recent.maxlen and now - recent[0] < RATE_WINDOW_S:
                await _error(socket, f"too many messages: at most {config.messages_per_minute} a minute")
                continue
            recent.append(now)
            text, keys = _caller_text(message.data), _caller_keys(message.data)
            if not text and keys is None:
                await _error(socket, 'send {"data": "what the caller said"} (or {"keys": "0"})')
                continue
            if keys == "" or (keys and not set(keys) <= KEYS):
                await _error(socket, 'keys are 0-9, * and #: {"keys": "0"}')
                continue
            async with turn:
                if call.ended_by is not None:
                    break  # the call's clock ended it meanwhile
                seen = len(call.session.events)
                if keys is not None:
                    await call.keys(keys, time.monotonic())
                else:
                    await call.say(text, time.monotonic())
                await _send_turn(socket, call, seen)
            if call.ended_by is not None:
                break
    finally:
        if clock is not None:
            clock.cancel()
            await asyncio.gather(clock, return_exceptions=True)  # a socket the client closed under it
        call.session.dispose()
        log.info("websocket session closed client=%s", printable(client_id))


async def _clock(socket: web.WebSocketResponse, call: CallInText, turn: asyncio.Lock) -> None:
    """The call rules' clock: re-prompts of a silent caller, the goodbye after them, the call's time limit. A turn
    under way is no silence."""
    while not call.rules.clock_stopped and call.ended_by is None and not socket.closed:
        await asyncio.sleep(CLOCK_S)
        if turn.locked():
            call.rules.activity(time.monotonic())
            continue
        async with turn:
            seen = len(call.session.events)
            call.tick(time.monotonic())
            if len(call.session.events) > seen or call.ended_by is not None:
                await _send_turn(socket, call, seen)


async def _send_turn(socket: web.WebSocketResponse, call: CallInText, seen: int) -> None:
    """The turn's events since `seen`, then "done"; a call that ended closes the socket."""
    session = call.session
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
    if call.ended_by is not None:  # a goodbye or a hand-over: the call is over, as on the phone
        await socket.close(message=b"the call has ended")


async def _error(socket: web.WebSocketResponse, error: str) -> None:
    await socket.send_json({"event": "error", "error": error})


def _caller_text(data: str) -> str:
    parsed = _parsed(data)
    if not isinstance(parsed, dict):
        return data.strip()
    text = parsed.get("data")
    return text.strip() if isinstance(text, str) else ""


def _caller_keys(data: str) -> str | None:
    """The keys of {"keys": "..."} (None: not a keys message)."""
    parsed = _parsed(data)
    if not isinstance(parsed, dict) or "data" in parsed or "keys" not in parsed:
        return None
    keys = parsed["keys"]
    return keys.strip() if isinstance(keys, str) else ""


def _parsed(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


async def serve(config: Config, provider: str | None, host: str, port: int) -> int:
    app = await open_app(config, provider)
    runner = web.AppRunner(make_web_app(app, replace(config.web, listen=f"{host}:{port}")))
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
