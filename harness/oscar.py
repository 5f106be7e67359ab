"""A throw-away django-oscar shop (django-oscar-api's REST API) on SQLite, for the HTTP shop's tests (issue 24).

`oscar_template` migrates and seeds one database a test session (~16-18 s: 156 migrations), `oscar_shop` copies it
for each test and starts `runserver --noreload` on 127.0.0.1 and a free port (ready in ~1 s), stopped afterwards.
The demo catalogue is loaded through oscar's ORM (harness/oscar_shop/seed.py); the call centre's staff user reads
the order list with a bearer token. Tests using them are tiered `peers` (tests/conftest.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "harness" / "oscar_shop"
CATALOGUE = ROOT / "callcenter" / "data" / "products.csv"
SETTINGS = "harness.oscar_shop.settings"
TOKEN_ENV = "OSCAR_SHOP_TOKEN"  # the variable harness/oscar_shop/voiceswarm.toml names in secret_env
READY_S = 20.0


@dataclass(frozen=True)
class OscarTemplate:
    database: Path
    token: str


@dataclass(frozen=True)
class OscarShop:
    url: str  # the API's base, http://127.0.0.1:PORT/api
    port: int
    token: str
    database: Path

    def get(self, path: str) -> Any:
        """What the shop's API answers the staff user (an order list, a product's availability)."""
        response = httpx.get(
            path if path.startswith("http") else self.url + path,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
            trust_env=False,
        )
        response.raise_for_status()
        return response.json()

    def config_file(self, directory: Path) -> Path:
        """harness/oscar_shop/voiceswarm.toml with this shop's port, beside a copy of its OpenAPI document."""
        text = (PROJECT / "voiceswarm.toml").read_text().replace("127.0.0.1:8000", f"127.0.0.1:{self.port}")
        (directory / "voiceswarm.toml").write_text(text)
        shutil.copy(PROJECT / "openapi.json", directory / "openapi.json")
        return directory / "voiceswarm.toml"


def _environment(database: Path, token: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "OSCAR_SHOP_DB": str(database),
        TOKEN_ENV: token,
        "PYTHONPATH": str(ROOT),
    }


def build_template(directory: Path) -> OscarTemplate:
    """Migrate a new SQLite database and fill it (countries, the demo catalogue, the staff user and its token)."""
    database = directory / "oscar-template.sqlite3"
    token = secrets.token_hex(20)
    env = _environment(database, token)
    for command in (
        [sys.executable, "-m", "django", "migrate", "--no-input", "-v", "0"],
        [sys.executable, "-m", "harness.oscar_shop.seed", str(CATALOGUE)],
    ):
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command[2:4])} failed: {done.stderr[-2000:]}")
    return OscarTemplate(database, token)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def oscar_template(tmp_path_factory: pytest.TempPathFactory) -> OscarTemplate:
    pytest.importorskip("oscar", reason="django-oscar is in the dev extra: pip install -e '.[dev]'")
    pytest.importorskip("oscarapi", reason="django-oscar-api is in the dev extra: pip install -e '.[dev]'")
    return build_template(tmp_path_factory.mktemp("oscar"))


@pytest.fixture
def oscar_shop(oscar_template: OscarTemplate, tmp_path: Path) -> Iterator[OscarShop]:
    database = tmp_path / "oscar.sqlite3"
    shutil.copy(oscar_template.database, database)
    port = _free_port()
    log = (tmp_path / "oscar.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "django", "runserver", "--noreload", "--skip-checks", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=_environment(database, oscar_template.token),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    shop = OscarShop(f"http://127.0.0.1:{port}/api", port, oscar_template.token, database)
    try:
        _wait_ready(shop, server, tmp_path / "oscar.log")
        yield shop
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _wait_ready(shop: OscarShop, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"oscar's runserver exited {server.returncode}: {log.read_text()[-2000:]}")
        try:
            shop.get("/products/")
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"oscar's runserver did not answer in {READY_S:.0f} s: {log.read_text()[-2000:]}")
