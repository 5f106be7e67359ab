"""Several VoiceSwarm nodes behind Kamailio's dispatcher on 127.0.0.1, for tests and benchmarks.

Kamailio runs docs/kamailio-dispatcher.cfg itself, with only its addresses, its list file and its ping interval
replaced (and the ctl module added, so `kamcmd dispatcher.list` can say which nodes it considers up): the file
the docs give operators is the file that is tested.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from callcenter.config import Config, LLMConfig, SipConfig, VoiceConfig
from callcenter.server import VoiceServer
from callcenter.voice import SpeechModels
from harness.kamailio import MODULES, START_TIMEOUT_S, _ready, kamcmd, launch, stop
from harness.peers import LOCAL, free_udp_port

DOCS_CONFIG = Path(__file__).parent.parent / "docs" / "kamailio-dispatcher.cfg"


def dispatcher_config(port: int, list_file: Path, ctl_socket: Path, ping_interval_s: int) -> str:
    text = DOCS_CONFIG.read_text()
    replacements = {
        r"listen=udp:\S+": f'listen=udp:{LOCAL}:{port}\nmpath="{MODULES}/"\nchildren=2\nlog_stderror=yes\n'
        f'auto_aliases=no\nalias="{LOCAL}:{port}"\nloadmodule "ctl.so"\n'
        f'modparam("ctl", "binrpc", "unix:{ctl_socket}")',
        r'"/etc/kamailio/dispatcher.list"': f'"{list_file}"',
        r'"ds_ping_interval", \d+': f'"ds_ping_interval", {ping_interval_s}',
    }
    for pattern, replacement in replacements.items():
        text, found = re.subn(pattern, replacement.replace("\\", "\\\\"), text)  # the replacement as it is
        assert found == 1, f"{DOCS_CONFIG} no longer has {pattern!r}"
    return text


@dataclass
class Dispatcher:
    port: int
    workdir: Path
    process: asyncio.subprocess.Process
    ctl_socket: Path

    @property
    def log(self) -> str:
        return (self.workdir / "kamailio.log").read_text(errors="replace")

    async def states(self) -> dict[str, str]:
        """Each node's URI and its dispatcher flags: "AP" active, "TP" trying (a probe failed), "IP" inactive,
        "DX" disabled."""
        text = await kamcmd(self.ctl_socket, "dispatcher.list")
        return dict(re.findall(r"URI:\s*(\S+)\s+FLAGS:\s*(\S+)", text))

    async def until_state(self, node: tuple[str, int], active: bool, timeout_s: float) -> float:
        """Seconds until the dispatcher holds `node` active (or inactive: no new call is sent to it);
        raises TimeoutError."""
        uri, started = f"sip:{node[0]}:{node[1]}", time.monotonic()
        async with asyncio.timeout(timeout_s):
            while True:
                flags = (await self.states()).get(uri, "")
                if flags[:1] == "A" if active else flags[:1] in ("I", "D"):
                    return time.monotonic() - started
                await asyncio.sleep(0.05)


@asynccontextmanager
async def dispatcher(
    workdir: Path, nodes: list[tuple[str, int]], *, ping_interval_s: int = 1
) -> AsyncIterator[Dispatcher]:
    """Kamailio with the docs' dispatcher config in front of `nodes`; killed (with its children) afterwards."""
    workdir.mkdir(parents=True, exist_ok=True)
    port, ctl_socket, list_file = free_udp_port(), workdir / "ctl.sock", workdir / "dispatcher.list"
    list_file.write_text("".join(f"1 sip:{host}:{node_port}\n" for host, node_port in nodes))
    cfg = workdir / "kamailio.cfg"
    cfg.write_text(dispatcher_config(port, list_file, ctl_socket, ping_interval_s))
    process = await launch(cfg, workdir)
    try:
        if not await _ready(port, process, START_TIMEOUT_S):
            raise RuntimeError(
                f"Kamailio did not answer OPTIONS on {LOCAL}:{port} (exit {process.returncode}):\n"
                + (workdir / "kamailio.log").read_text(errors="replace")[-4000:]
            )
        yield Dispatcher(port, workdir, process, ctl_socket)
    finally:
        await stop(process)


def node_config(database_url: str, *, deadline_s: float = 5.0, metrics_listen: str = "") -> Config:
    """A `serve` node with the offline router whose shop and call records are at `database_url`."""
    return Config(
        llm=LLMConfig(provider="offline"),
        database=database_url,
        sip=SipConfig(listen=f"{LOCAL}:0", no_media_timeout_s=30.0),
        voice=VoiceConfig(
            whisper_model="tiny.en",
            calls_database=database_url,
            metrics_listen=metrics_listen,
            shutdown_deadline_s=deadline_s,
        ),
    )


@asynccontextmanager
async def node(database_url: str, speech: SpeechModels, **options: object) -> AsyncIterator[VoiceServer]:
    async with VoiceServer(node_config(database_url, **options), speech=speech) as server:  # type: ignore[arg-type]
        yield server


@dataclass
class NodeProcess:
    process: asyncio.subprocess.Process
    address: tuple[str, int]


@asynccontextmanager
async def node_process(
    database_url: str, workdir: Path, *, llm: str = 'provider = "offline"', start_timeout_s: float = 120.0
) -> AsyncIterator[NodeProcess]:
    """`voiceswarm serve` in a process of its own (the same config as node(); `llm`: the [llm] table's lines),
    for tests that SIGKILL a node and benchmarks whose nodes must not share one event loop; its log is
    workdir/node.log. Killed afterwards if still running."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "voiceswarm.toml"
    config.write_text(
        f'[llm]\n{llm}\n\n[shop]\ndatabase = "{database_url}"\n\n'
        f'[sip]\nlisten = "{LOCAL}:0"\nno_media_timeout_s = 30.0\n\n'
        f'[voice]\nwhisper_model = "tiny.en"\ncalls_database = "{database_url}"\nmetrics_listen = ""\n'
    )
    with open(workdir / "node.log", "wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "callcenter.cli",
            "--config",
            str(config),
            "serve",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            start_new_session=True,
        )
    try:
        async with asyncio.timeout(start_timeout_s):
            assert process.stdout is not None
            while not (line := (await process.stdout.readline()).decode()).startswith("voiceswarm: answering"):
                if not line:
                    raise RuntimeError(
                        f"the node exited ({await process.wait()}):\n"
                        + (workdir / "node.log").read_text(errors="replace")[-4000:]
                    )
        host, port = re.search(r"on (\S+):(\d+) ", line).groups()  # type: ignore[union-attr]
        yield NodeProcess(process, (host, int(port)))
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
