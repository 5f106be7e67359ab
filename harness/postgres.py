"""A throw-away PostgreSQL cluster for tests and benchmarks: initdb in a temp directory, on 127.0.0.1.

PostgreSQL refuses to run as root, and CI runs as root: the cluster then belongs to the `postgres` user
(which Debian's package creates) and its directory is handed to that user. Every test gets its own schema,
which costs milliseconds where a database would cost a second.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

USER = "voiceswarm"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def server_binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise PostgresUnavailable("no /usr/lib/postgresql/*/bin/initdb: apt-get install postgresql")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Cluster:
    directory: Path
    port: int
    _schemas: Iterator[int] = field(default_factory=itertools.count)

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{USER}"

    def schema_url(self, schema: str) -> str:
        """The URL of the cluster's database with `schema` first on the search path (pg_trgm stays in public)."""
        return f"{self.url}?options=-csearch_path%3D{schema}%2Cpublic"

    def new_schema(self) -> str:
        """A fresh, empty schema: a database of its own for one test."""
        name = f"t{next(self._schemas)}"
        self.sql(f"DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}")
        return self.schema_url(name)

    def sql(self, statement: str, database: str = USER) -> list[Any]:
        import psycopg

        with psycopg.connect(f"postgresql://{USER}@127.0.0.1:{self.port}/{database}", autocommit=True) as conn:
            cursor = conn.execute(statement)
            return cursor.fetchall() if cursor.description else []


def _run_as(owner: pwd.struct_passwd | None) -> dict[str, Any]:
    return {} if owner is None else {"user": owner.pw_uid, "group": owner.pw_gid}


@contextmanager
def cluster(*, durable: bool = False) -> Iterator[Cluster]:
    """Start a cluster and yield it; stopped and deleted afterwards. `durable`: fsync on, as in production
    (benchmarks); tests run without it, which only matters when the machine loses power."""
    binaries = server_binaries()
    owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
    # Not under pytest's tmp_path: that is root's 0700 directory, which the postgres user cannot enter.
    directory = Path(tempfile.mkdtemp(prefix="voiceswarm-pg-"))
    data, log = directory / "data", directory / "server.log"
    if owner is not None:
        os.chown(directory, owner.pw_uid, owner.pw_gid)
    port = _free_port()
    settings = [
        f"-p {port}",
        "-c listen_addresses=127.0.0.1",
        f"-c unix_socket_directories={directory}",
        "-c max_connections=100",
        "-c shared_buffers=32MB",
    ]
    if not durable:
        settings += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
    run = _run_as(owner)
    try:
        subprocess.run(
            [
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            timeout=120,
            **run,
        )
        subprocess.run(
            [
                str(binaries / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "-o",
                " ".join(settings),
                "start",
            ],
            check=True,
            capture_output=True,
            timeout=90,
            **run,
        )
        server = Cluster(directory, port)
        server.sql(f"CREATE DATABASE {USER}", database="postgres")
        server.sql("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        yield server
    except subprocess.CalledProcessError as error:
        detail = log.read_text() if log.exists() else ""
        raise RuntimeError(f"PostgreSQL did not start: {error.stderr.decode(errors='replace')}{detail}") from error
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
                **run,
            )
        shutil.rmtree(directory, ignore_errors=True)


# --- pytest fixtures (tests/conftest.py enables them as a plugin) ---------------------------------------


@pytest.fixture(scope="session")
def postgres() -> Iterator[Cluster]:
    """One cluster for the whole test session; skipped where PostgreSQL is not installed, except in CI."""
    try:
        server_binaries()
    except PostgresUnavailable as missing:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(missing))
    with cluster() as server:
        yield server


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.peers)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind: a SQLite file, or a new schema of the PostgreSQL cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    server: Cluster = request.getfixturevalue("postgres")
    return server.new_schema()


def count_rows(url: str, table: str) -> int:
    """Rows in `table`, through a connection of its own: only what was committed."""
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url) as conn:
            row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    else:
        import sqlite3

        from callcenter.store import parse_url

        with sqlite3.connect(parse_url(url).target) as conn:
            row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])
