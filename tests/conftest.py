"""Shared fixtures: the real local LLM (llama.cpp's server with a packaged Qwen2.5 model), one per test session.

    @pytest.mark.llm
    async def test_something(local_05b: LocalServer) -> None:
        provider = LocalProvider(local_05b, owns_server=False)
        ...

`local_05b` (Qwen2.5-Coder-0.5B: loads in ~1 s, for plumbing) and `local_15b` (1.5B: for behaviour) start
their server on first use and stop it at the end of the session; a test that kills the server gets it back
from the next `LocalProvider` turn (or `server.start()`). They skip when the runtime or the model packages
are not installed, so mark their tests `llm` (selected in CI; `-m "not llm"` leaves them out).
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from callcenter.local_model import local_server, missing_local_model
from swarm.providers.local import LocalServer


def _server(model: str) -> Iterator[LocalServer]:
    missing = missing_local_model(model)
    if missing:
        pytest.skip(missing)
    server = local_server(model, threads=2, ctx=4096)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def local_05b() -> Iterator[LocalServer]:
    yield from _server("qwen2.5-coder-0.5b")


@pytest.fixture(scope="session")
def local_15b() -> Iterator[LocalServer]:
    yield from _server("qwen2.5-coder-1.5b")


# The throw-away PostgreSQL cluster (session) and `database_url`: each storage test on SQLite and PostgreSQL.
from tests.postgres import database_url, postgres  # noqa: E402, F401
