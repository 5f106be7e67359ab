"""Who may see the supervisor's page: whoever holds the token, and only from the page's own origin.

The text channel (callcenter/web.py) asks the same questions with the same functions: which tokens a request
offers, whether one is the token, whether a browser sent it from an allowed origin, whether a request without a
token came by a loopback name, and whether its address has guessed wrong too often.

The token arrives as `Authorization: Bearer`, as basic auth's password (a phone's browser asks for it), as
`?token=` (a link; the page then keeps it in a cookie and drops it from the address bar), or in that cookie,
which the browser also sends with the WebSocket and the recording (neither can carry a header).

The cookie is Secure when the request came over HTTPS: to this server, or, as seen by a proxy that ends TLS,
when supervisor.behind_tls says so or a trusted proxy (supervisor.trusted_proxies) says X-Forwarded-Proto: https.
A client's own X-Forwarded-* headers are never believed: anyone can send them.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import ipaddress
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from functools import cached_property
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


def presented(request: web.Request, cookie: str | None = COOKIE) -> list[str]:
    """Every token the request offers, wherever it carries one (`cookie`: the cookie's name, None for none)."""
    tokens = [request.query.get("token", ""), request.cookies.get(cookie, "") if cookie else ""]
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        tokens.append(value.strip())
    elif scheme.lower() == "basic":
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):  # not basic auth after all: no token
            tokens.append(base64.b64decode(value.strip(), validate=True).decode().partition(":")[2])
    return [token for token in tokens if token]


def holds(request: web.Request, token: str, cookie: str | None = COOKIE) -> bool:
    # compare_digest on every candidate (a list, not a short-circuit): the time taken tells nothing of the token.
    expected = token.encode()
    return any([hmac.compare_digest(candidate.encode(), expected) for candidate in presented(request, cookie)])


def same_origin(request: web.Request, also: Collection[str] = ()) -> bool:
    """A browser says where a page came from; a POST or WebSocket from another site's page is refused.

    `also`: other origins allowed ("https://shop.example"). No Origin at all is a client that is not a browser,
    which no other site's page can drive."""
    origin = request.headers.get("Origin")
    return origin is None or urlsplit(origin).netloc == request.host or origin in also


def by_loopback_name(request: web.Request) -> bool:
    """Whether the request names this machine as 127.0.0.1, ::1 or localhost.

    A door open without a token must answer only to these: another site's name resolved to this machine
    (DNS rebinding) would otherwise be that site's own origin in the browser, and pass the Origin check."""
    return is_loopback(urlsplit(f"//{request.host}").hostname or "")


@dataclass(frozen=True)
class Proxies:
    """How requests reach the page: over TLS ended by a proxy (`behind_tls`), and which proxies' forwarded
    headers are believed (`trusted`: addresses or networks, as supervisor.trusted_proxies)."""

    behind_tls: bool = False
    trusted: tuple[str, ...] = ()

    @cached_property
    def _networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return tuple(ipaddress.ip_network(n, strict=False) for n in self.trusted)

    def trusts(self, request: web.Request) -> bool:
        """Whether the request came straight from a trusted proxy."""
        try:
            address = ipaddress.ip_address(request.remote or "")
        except ValueError:
            return False
        return any(address in network for network in self._networks)

    def secure(self, request: web.Request) -> bool:
        """Whether the browser's request travelled over HTTPS (so a Secure cookie comes back with the next)."""
        if request.secure or self.behind_tls:
            return True
        # The value the nearest proxy wrote is the last one: earlier ones came from whoever called it.
        forwarded = request.headers.get("X-Forwarded-Proto", "").rpartition(",")[2].strip().lower()
        return forwarded == "https" and self.trusts(request)

    def client(self, request: web.Request) -> str | None:
        """The address wrong tokens are counted for: the client behind a trusted proxy (the last address the proxy
        added to X-Forwarded-For), else the peer itself. Behind a proxy every client shares the proxy's address,
        and one guesser would lock out everyone."""
        if self.trusts(request):
            forwarded = request.headers.get("X-Forwarded-For", "").rpartition(",")[2].strip()
            with contextlib.suppress(ValueError):
                return str(ipaddress.ip_address(forwarded))
        return request.remote


# Addresses remembered at most: a flood from many addresses costs bounded memory (the oldest are forgotten).
MAX_ADDRESSES = 10_000


@dataclass
class Failures:
    """Wrong tokens per client address: after `limit` within `window_s`, the address is refused unheard.

    Guessing a 16-character random token is hopeless anyway; this keeps a weak one (or a leaked prefix) from
    being tried at line rate, and keeps the attempts out of the log's noise."""

    limit: int = 5
    window_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _seen: dict[str, deque[float]] = field(default_factory=dict)

    def wait(self, address: str | None) -> float:
        """Seconds until `address` may try again; 0 if it may now."""
        times = self._seen.get(address or "")
        if times is None:
            return 0.0
        now = self.clock()
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            del self._seen[address or ""]
            return 0.0
        return times[0] + self.window_s - now if len(times) >= self.limit else 0.0

    def record(self, address: str | None) -> None:
        times = self._seen.setdefault(address or "", deque(maxlen=self.limit))
        times.append(self.clock())
        while len(self._seen) > MAX_ADDRESSES:
            del self._seen[next(iter(self._seen))]


def refuse_if_slowed(failures: Failures, request: web.Request, address: str | None = None) -> None:
    """429 for an address (default: the request's peer) that has presented too many wrong tokens lately."""
    wait = failures.wait(address if address is not None else request.remote)
    if wait > 0:
        raise web.HTTPTooManyRequests(
            text="429: too many wrong tokens from this address; try again later",
            headers={"Retry-After": str(max(1, round(wait)))},
        )


def guard(token: str, failures: Failures | None = None, proxies: Proxies = Proxies()) -> Middleware:
    """The middleware: 401 without the token (nothing else is looked at), 403 from a foreign origin, 429 after
    repeated wrong tokens from one address."""
    failures = failures if failures is not None else Failures()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if token:
            refuse_if_slowed(failures, request, proxies.client(request))
        if token and not holds(request, token):
            if presented(request):  # a browser's first visit offers none: only a wrong token counts
                failures.record(proxies.client(request))
            raise web.HTTPUnauthorized(
                text="401: this page needs the supervisor token (supervisor.token)", headers={"WWW-Authenticate": REALM}
            )
        if not token and not by_loopback_name(request):
            raise web.HTTPForbidden(
                text="403: without supervisor.token the page answers only as 127.0.0.1 or localhost"
            )
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        if (request.method != "GET" or upgrade) and not same_origin(request):
            raise web.HTTPForbidden(text="403: not from the supervisor's page")
        if token and "token" in request.query and request.path == "/":
            # Keep the token in a cookie and take it out of the address bar (and of the browser's history).
            response = web.HTTPFound("/")
            secure = proxies.secure(request)
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", secure=secure, path="/")
            raise response
        return await handler(request)

    return middleware


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """On every response, the 401s and errors too."""
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
