"""/metrics and /health (issue 25): Prometheus brings voice.metrics_token as a bearer token; /health also answers
a check from this machine without it. Served on a real socket at 127.0.0.1, read with a real HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from callcenter.config import ConfigError, load_config
from callcenter.metrics import VoiceMetrics
from callcenter.metrics_page import metrics_app
from callcenter.node import AdmissionLimits, NodeState

pytestmark = pytest.mark.timeout(30)
TOKEN = "Zq3-vN8xKp2_wR7tYh5m-metrics"


@asynccontextmanager
async def page(token: str) -> AsyncIterator[str]:
    """The page on 127.0.0.1 at a free port; yields its base URL."""
    node = NodeState(AdmissionLimits(), lambda: 0, lambda: (), lambda: False)
    runner = web.AppRunner(metrics_app(VoiceMetrics(), node, token), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        host, port = runner.addresses[0][:2]
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


async def status(client: aiohttp.ClientSession, url: str, **headers: str) -> int:
    async with client.get(url, headers=headers, allow_redirects=False) as response:
        await response.read()
        return response.status


async def test_metrics_need_the_bearer_token() -> None:
    async with page(TOKEN) as base, aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        async with client.get(f"{base}/metrics") as refused:
            assert refused.status == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
            assert "voiceswarm_" not in await refused.text()
        assert await status(client, f"{base}/metrics", Authorization="Bearer wrong-token-of-some-length") == 401
        assert await status(client, f"{base}/metrics", Authorization=f"Bearer {TOKEN}x") == 401
        async with client.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}) as scraped:
            assert scraped.status == 200 and "voiceswarm_active_calls" in await scraped.text()


async def test_health_answers_this_machine_without_the_token_but_not_another_name() -> None:
    async with page(TOKEN) as base, aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        async with client.get(f"{base}/health") as health:  # a check on this machine (Docker, systemd, a local LB)
            assert health.status == 200 and (await health.json())["state"] == "serving"
        # A name that is not this machine's (a DNS-rebound page, a proxy forwarding from elsewhere) needs the token.
        assert await status(client, f"{base}/health", Host="evil.example") == 401
        assert await status(client, f"{base}/health", Host="evil.example", Authorization=f"Bearer {TOKEN}") == 200


async def test_repeated_wrong_tokens_are_slowed() -> None:
    async with page(TOKEN) as base, aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        statuses = [
            await status(client, f"{base}/metrics", Authorization=f"Bearer guess-number-{n:04d}") for n in range(6)
        ]
        assert statuses == [401] * 5 + [429]
        assert await status(client, f"{base}/metrics", Authorization=f"Bearer {TOKEN}") == 429


async def test_without_a_token_only_loopback_names_are_answered() -> None:
    async with page("") as base, aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        assert await status(client, f"{base}/metrics") == 200
        assert await status(client, f"{base}/metrics", Host="localhost:9460") == 200
        assert await status(client, f"{base}/metrics", Host="evil.example") == 403
        assert await status(client, f"{base}/health", Host="evil.example") == 403


@pytest.mark.parametrize("listen", ["0.0.0.0:9460", "[::]:9460", "10.0.0.21:9460", "metrics.example:9460"])
def test_a_metrics_listen_beyond_loopback_needs_a_token(tmp_path: Path, listen: str) -> None:
    path = tmp_path / "voiceswarm.toml"
    path.write_text(f'[voice]\nmetrics_listen = "{listen}"\n')
    with pytest.raises(ConfigError, match=r"voice\.metrics_token"):
        load_config(path, {})
    config = load_config(path, {"VOICESWARM_METRICS_TOKEN": TOKEN})
    assert config.voice.metrics_token == TOKEN


def test_a_weak_metrics_token_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"voice\.metrics_token is too short"):
        load_config(None, {"VOICESWARM_METRICS_TOKEN": "metrics"})
    assert load_config(None, {}).voice.metrics_listen == "127.0.0.1:9460"  # the default needs none
