"""Who may see the supervisor's page: whoever holds the token, and only from the page's own origin.

The token arrives as `Authorization: Bearer`, as basic auth's password (a phone's browser asks for it), as
`?token=` (a link; the page then keeps it in a cookie and drops it from the address bar), or in that cookie,
which the browser also sends with the WebSocket and the recording (neither can carry a header).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from callcenter.config import is_loopback

COOKIE = "voiceswarm_supervisor"
REALM = 'Basic realm="VoiceSwarm supervisor", charset="UTF-8"'
# What the page may load: only its own files; no inline script or style, no frames, no other hosts.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def presented(request: web.Request) -> list[str]:
    """Every token the request offers, wherever it carries one."""
    tokens = [request.query.get("token", ""), request.cookies.get(COOKIE, "")]
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        tokens.append(value.strip())
    elif scheme.lower() == "basic":
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):  # not basic auth after all: no token
            tokens.append(base64.b64decode(value.strip(), validate=True).decode().partition(":")[2])
    return [token for token in tokens if token]


def holds(request: web.Request, token: str) -> bool:
    # compare_digest on every candidate (a list, not a short-circuit): the time taken tells nothing of the token.
    expected = token.encode()
    return any([hmac.compare_digest(candidate.encode(), expected) for candidate in presented(request)])


def same_origin(request: web.Request) -> bool:
    """A browser says where a page came from; a POST or WebSocket from another site's page is refused."""
    origin = request.headers.get("Origin")
    return origin is None or urlsplit(origin).netloc == request.host


def guard(token: str) -> Middleware:
    """The middleware: 401 without the token (nothing else is looked at), 403 from a foreign origin."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if token and not holds(request, token):
            raise web.HTTPUnauthorized(
                text="401: this page needs the supervisor token (supervisor.token)", headers={"WWW-Authenticate": REALM}
            )
        if not token and not is_loopback(urlsplit(f"//{request.host}").hostname or ""):
            # Open without a token only as 127.0.0.1 or localhost: another site's name resolved to this
            # machine (DNS rebinding) would otherwise be the page's own origin in the browser.
            raise web.HTTPForbidden(
                text="403: without supervisor.token the page answers only as 127.0.0.1 or localhost"
            )
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        if (request.method != "GET" or upgrade) and not same_origin(request):
            raise web.HTTPForbidden(text="403: not from the supervisor's page")
        if token and "token" in request.query and request.path == "/":
            # Keep the token in a cookie and take it out of the address bar (and of the browser's history).
            response = web.HTTPFound("/")
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", secure=request.secure, path="/")
            raise response
        return await handler(request)

    return middleware


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """On every response, the 401s and errors too."""
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
