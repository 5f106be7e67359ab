"""The supervisor's cookie behind a proxy that ends TLS (issue 25), on a real aiohttp server: Secure when
supervisor.behind_tls says so or a trusted proxy says X-Forwarded-Proto: https, never on a client's own word;
wrong tokens counted per client behind a trusted proxy, per peer otherwise."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from callcenter.app import App, open_app
from callcenter.call_records import CallRecords
from callcenter.config import Config, ConfigError, LLMConfig, SupervisorConfig, load_config
from callcenter.supervisor import LiveCalls, Sources, supervisor_app
from callcenter.supervisor.auth import COOKIE

pytestmark = pytest.mark.timeout(30)

TOKEN = "s3cret-supervisor-token"


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    app = await open_app(Config(llm=replace(LLMConfig(), provider="offline"), database=str(tmp_path / "shop.db")))
    yield app
    app.close()


@pytest.fixture
def page(app: App, tmp_path: Path) -> Callable[..., object]:
    @asynccontextmanager
    async def opened(**settings: object) -> AsyncIterator[TestClient]:
        records = CallRecords(tmp_path / "calls.db")
        live = LiveCalls()
        sources = Sources(live, records, app.shop, lambda: {"state": "serving"})
        config = replace(SupervisorConfig(token=TOKEN), **settings)  # type: ignore[arg-type]
        try:
            async with TestClient(TestServer(supervisor_app(config, sources))) as client:
                yield client
        finally:
            await live.close()
            records.close()

    return opened


async def cookie_is_secure(client: TestClient, **headers: str) -> bool:
    """Open the page by its ?token= link, as a browser does, and say whether the cookie it leaves is Secure."""
    response = await client.get(f"/?token={TOKEN}", headers=headers, allow_redirects=False)
    assert response.status == 302, await response.text()
    cookie = response.cookies[COOKIE]
    assert cookie.value == TOKEN and cookie["httponly"] and cookie["samesite"] == "Strict"
    return bool(cookie["secure"])


async def test_a_plain_http_request_gets_no_secure_cookie_and_a_client_cannot_ask_for_one(page) -> None:
    async with page() as client:
        assert not await cookie_is_secure(client)
        # Anyone can write X-Forwarded-Proto: from a peer that is no trusted proxy it means nothing.
        assert not await cookie_is_secure(client, **{"X-Forwarded-Proto": "https"})
    async with page(trusted_proxies=("10.0.0.0/8",)) as client:  # the test client is 127.0.0.1: not that proxy
        assert not await cookie_is_secure(client, **{"X-Forwarded-Proto": "https"})


async def test_behind_tls_the_cookie_is_always_secure(page) -> None:
    async with page(behind_tls=True) as client:
        assert await cookie_is_secure(client)
        assert await cookie_is_secure(client, **{"X-Forwarded-Proto": "http"})  # the setting is the admin's word


@pytest.mark.parametrize(
    ("proto", "secure"),
    [("https", True), ("HTTPS", True), ("http", False), ("", False), ("https, http", False), ("http, https", True)],
)
async def test_a_trusted_proxys_forwarded_proto_decides(page, proto: str, secure: bool) -> None:
    # The value the trusted proxy itself wrote is the last: earlier ones came from its own caller.
    async with page(trusted_proxies=("127.0.0.1",)) as client:
        headers = {"X-Forwarded-Proto": proto} if proto else {}
        assert await cookie_is_secure(client, **headers) is secure


async def test_wrong_tokens_are_counted_per_client_behind_a_trusted_proxy_only(page) -> None:
    wrong = {"Authorization": "Bearer wrong-token-wrong-token"}
    right = {"Authorization": f"Bearer {TOKEN}"}
    async with page(trusted_proxies=("127.0.0.0/8",)) as client:
        for _ in range(5):
            response = await client.get("/api/health", headers={**wrong, "X-Forwarded-For": "203.0.113.7"})
            assert response.status == 401
        guesser = await client.get("/api/health", headers={**right, "X-Forwarded-For": "203.0.113.7"})
        assert guesser.status == 429 and int(guesser.headers["Retry-After"]) > 0
        # One guesser behind the proxy does not lock out the supervisors behind it.
        other = await client.get("/api/health", headers={**right, "X-Forwarded-For": "198.51.100.1, 203.0.113.8"})
        assert other.status == 200
    async with page() as client:  # no trusted proxy: a guesser cannot escape the count by forging the header
        for n in range(5):
            response = await client.get("/api/health", headers={**wrong, "X-Forwarded-For": f"203.0.113.{n}"})
            assert response.status == 401
        response = await client.get("/api/health", headers={**right, "X-Forwarded-For": "203.0.113.99"})
        assert response.status == 429


def test_the_settings_load_and_a_proxy_that_is_no_address_is_named(tmp_path: Path) -> None:
    path = tmp_path / "voiceswarm.toml"
    env = {"VOICESWARM_SUPERVISOR_TOKEN": TOKEN}
    path.write_text(
        '[supervisor]\nlisten = "0.0.0.0:9461"\nbehind_tls = true\ntrusted_proxies = ["10.0.0.5", "fd00::/8"]\n'
    )
    supervisor = load_config(path, env).supervisor
    assert supervisor.behind_tls and supervisor.trusted_proxies == ("10.0.0.5", "fd00::/8")
    assert Config().supervisor.behind_tls is False and Config().supervisor.trusted_proxies == ()
    path.write_text('[supervisor]\nlisten = "0.0.0.0:9461"\ntrusted_proxies = ["proxy.example"]\n')
    with pytest.raises(ConfigError, match=r"supervisor\.trusted_proxies: 'proxy\.example'"):
        load_config(path, env)
