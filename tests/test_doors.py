"""What the doors share (issue 25): signed caller tokens, and slowing an address that guesses tokens."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from callcenter.supervisor.auth import Failures, guard
from callcenter.web_tokens import MAX_TTL_S, TokenError, caller_of, issue

KEY = "k9Jx2Lm4Np6Qr8St0Uv3Wy5Za7Bc9De1Fg"
TOKEN = "s3cret-supervisor-token"


def test_a_token_names_its_caller_until_it_expires() -> None:
    token = issue(KEY, "+4930123456", 60, now=1000.0)
    assert caller_of(KEY, token, now=1030.0) == "+4930123456"
    assert caller_of(KEY, token, now=1060.0) is None
    assert caller_of(KEY + "x", token, now=1030.0) is None
    assert caller_of("", token, now=1030.0) is None
    assert caller_of(KEY, token[:-2], now=1030.0) is None


def test_tokens_are_refused_to_be_issued_without_a_key_a_caller_or_a_sane_lifetime() -> None:
    for key, caller, ttl in (("", "+49301", 60), (KEY, "  ", 60), (KEY, "+49301", 0), (KEY, "+49301", MAX_TTL_S + 1)):
        try:
            issue(key, caller, ttl)
        except TokenError:
            continue
        raise AssertionError(f"issued for {key!r}, {caller!r}, {ttl}")


def test_failures_block_after_the_limit_and_forget_after_the_window() -> None:
    now = [0.0]
    failures = Failures(limit=3, window_s=10.0, clock=lambda: now[0])
    for _ in range(2):
        failures.record("10.0.0.1")
    assert failures.wait("10.0.0.1") == 0.0
    failures.record("10.0.0.1")
    assert failures.wait("10.0.0.1") == 10.0 and failures.wait("10.0.0.2") == 0.0
    now[0] = 10.5
    assert failures.wait("10.0.0.1") == 0.0


async def test_the_supervisor_page_slows_repeated_wrong_tokens() -> None:
    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(middlewares=[guard(TOKEN, Failures(limit=3))])
    app.router.add_get("/", ok)
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/")).status == 401  # no token at all: a browser's first visit, not counted
        statuses = [(await client.get("/", headers={"Authorization": f"Bearer wrong-{n}"})).status for n in range(4)]
        assert statuses == [401, 401, 401, 429]
        right = await client.get("/", headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status == 429 and int(right.headers["Retry-After"]) > 0
