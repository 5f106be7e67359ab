"""The page Prometheus and the load balancer read: /metrics and /health, on voice.metrics_listen.

Who may read it: whoever brings voice.metrics_token (Prometheus sends it as `Authorization: Bearer`, from its
scrape config's `authorization: credentials`), compared in constant time, with repeated wrong tokens slowed as
on the supervisor's page. /health also answers a check from this machine without it (a peer on loopback that
names the host as 127.0.0.1, ::1 or localhost: Docker's HEALTHCHECK, systemd, a load balancer on the node),
since it carries only the node's state. Without a token (allowed only on a loopback listen) the page answers
only requests that name this machine so: another site's name resolved to 127.0.0.1 (DNS rebinding) is refused.
"""

from __future__ import annotations

from aiohttp import hdrs, web
from aiohttp.typedefs import Middleware
from prometheus_client.exposition import choose_encoder

from callcenter.config import is_loopback
from callcenter.metrics import VoiceMetrics
from callcenter.node import STATES, NodeState
from callcenter.supervisor.auth import Failures, Handler, by_loopback_name, holds, presented, refuse_if_slowed

CHALLENGE = 'Bearer realm="VoiceSwarm metrics"'


def metrics_app(
    metrics: VoiceMetrics, node: NodeState, token: str, failures: Failures | None = None
) -> web.Application:
    """The page; `token`: voice.metrics_token ("" only on a loopback listen, which the config checks)."""

    async def metrics_page(request: web.Request) -> web.Response:
        state = node.state
        for name in STATES:
            metrics.node_state.labels(name).set(1 if name == state else 0)
        metrics.admission_refusals.set(node.refusals)
        # The text format, or OpenMetrics when the scraper asks for it.
        encode, content_type = choose_encoder(request.headers.get(hdrs.ACCEPT, ""))
        return web.Response(body=encode(metrics.registry), headers={hdrs.CONTENT_TYPE: content_type})

    async def health_page(_: web.Request) -> web.Response:
        # 503 unless serving, so an HTTP health check takes the node out as the SIP dispatcher does.
        health = node.health()
        return web.json_response(health, status=200 if health["state"] == "serving" else 503)

    page = web.Application(middlewares=[metrics_guard(token, failures if failures is not None else Failures())])
    page.router.add_get("/metrics", metrics_page)
    page.router.add_get("/health", health_page)
    return page


def metrics_guard(token: str, failures: Failures) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not token:
            if not by_loopback_name(request):
                raise web.HTTPForbidden(
                    text="403: without voice.metrics_token this page answers only 127.0.0.1 or localhost"
                )
            return await handler(request)
        if request.path == "/health" and is_loopback(request.remote or "") and by_loopback_name(request):
            return await handler(request)
        refuse_if_slowed(failures, request)
        if not holds(request, token, cookie=None):
            if presented(request, cookie=None):  # only a wrong token counts, not a scraper not yet configured
                failures.record(request.remote)
            raise web.HTTPUnauthorized(
                text="401: this page needs voice.metrics_token as a bearer token",
                headers={"WWW-Authenticate": CHALLENGE},
            )
        return await handler(request)

    return middleware
