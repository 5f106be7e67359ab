"""Kamailio 5.6 as the PBX of the extension-mode tests: a registrar with digest auth (no database: the
passwords are written into the generated config) and a record-routing proxy to the registered extensions.

`kamailio -f FILE -DD -E` stays in the foreground (in its own process group) and logs to a file; start-up is
bounded (an OPTIONS probe must be answered); teardown kills the group. The location table is read through
the ctl module with `kamcmd`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.peers import LOCAL, free_udp_port

MODULES = Path("/usr/lib/x86_64-linux-gnu/kamailio/modules")
START_TIMEOUT_S = 10.0


def config(
    port: int,
    ctl_socket: Path,
    passwords: dict[str, str],
    *,
    algorithm: str = "MD5",
    challenge: str = "www",
    max_expires: int = 0,
    relookup: bool = True,
) -> str:
    """The whole kamailio.cfg. `challenge="proxy"` answers REGISTER with 407 Proxy-Authenticate instead of 401;
    `max_expires` > 0 caps the expiry granted to a binding. `relookup=False` routes in-dialog requests the way
    operators do (by their Route, else a 404), so a UAS that drops Record-Route loses the ACK and the BYE."""
    if not re.fullmatch(r"[A-Za-z0-9-]+", algorithm) or challenge not in ("www", "proxy"):
        raise ValueError(f"bad algorithm {algorithm!r} or challenge {challenge!r}")
    # $au is the digest username; an unknown one gets a random password nobody knows.
    lookups = "\n".join(
        f'    if ($au == "{user}") {{ $var(password) = "{password}"; }}' for user, password in passwords.items()
    )
    authenticate = "pv_www_authenticate" if challenge == "www" else "pv_proxy_authenticate"
    # sipp's built-in scenarios ignore Record-Route and send ACK and BYE to us: find the extension again
    relookup_route = '    if (uri == myself && lookup("location")) { t_relay(); exit; }'
    return f"""#!KAMAILIO
debug=2
log_stderror=yes
children=2
listen=udp:{LOCAL}:{port}
auto_aliases=no
alias="{LOCAL}:{port}"
mpath="{MODULES}/"

loadmodule "tm.so"
loadmodule "sl.so"
loadmodule "rr.so"
loadmodule "pv.so"
loadmodule "maxfwd.so"
loadmodule "usrloc.so"
loadmodule "registrar.so"
loadmodule "textops.so"
loadmodule "siputils.so"
loadmodule "xlog.so"
loadmodule "auth.so"
loadmodule "ctl.so"

modparam("auth", "algorithm", "{algorithm}")
modparam("usrloc", "db_mode", 0)
modparam("registrar", "min_expires", 1)
modparam("registrar", "max_expires", {max_expires})
modparam("ctl", "binrpc", "unix:{ctl_socket}")

request_route {{
    if (!mf_process_maxfwd_header("10")) {{ sl_send_reply("483", "Too Many Hops"); exit; }}
    if (is_method("OPTIONS") && $rU == $null) {{ sl_send_reply("200", "Kamailio ready"); exit; }}
    if (has_totag()) {{ route(WITHINDLG); exit; }}
    if (is_method("CANCEL")) {{ if (t_check_trans()) {{ t_relay(); }} exit; }}
    if (is_method("REGISTER")) {{ route(REGISTRAR); exit; }}
    record_route();
    if (!lookup("location")) {{
        xlog("L_INFO", "event=kamailio_not_found method=$rm ruri=$ru\\n");
        sl_send_reply("404", "Not Found");
        exit;
    }}
    xlog("L_INFO", "event=kamailio_relay method=$rm from=$fu to=$ru\\n");
    t_relay();
}}

route[WITHINDLG] {{
    if (loose_route()) {{ xlog("L_INFO", "event=kamailio_loose_route method=$rm ruri=$ru\\n"); t_relay(); exit; }}
    if (is_method("ACK") && t_check_trans()) {{ t_relay(); exit; }}
{relookup_route if relookup else ""}
    xlog("L_INFO", "event=kamailio_in_dialog_refused method=$rm ruri=$ru\\n");
    sl_send_reply("404", "Not Here");
}}

route[REGISTRAR] {{
    $var(password) = "{secrets.token_hex(16)}";
{lookups}
    if (!{authenticate}("$td", "$var(password)", "0")) {{
        xlog("L_INFO", "event=kamailio_challenge user=$au to=$tu\\n");
        {challenge}_challenge("$td", "1");
        exit;
    }}
    if ($au != $tU) {{ sl_send_reply("403", "Auth User Is Not The To User"); exit; }}
    xlog("L_INFO", "event=kamailio_authenticated user=$au authorization=$hdr(Authorization) proxy_authorization=$hdr(Proxy-Authorization)\n");
    consume_credentials();
    if (!save("location")) {{ sl_reply_error(); }}
}}
"""


@dataclass
class Kamailio:
    port: int
    workdir: Path
    process: asyncio.subprocess.Process
    ctl_socket: Path

    @property
    def uri(self) -> str:
        return f"sip:{LOCAL}:{self.port}"

    @property
    def log(self) -> str:
        return (self.workdir / "kamailio.log").read_text(errors="replace")

    async def contacts(self, user: str) -> list[str]:
        """The Contacts bound to `user` in Kamailio's location table (kamcmd ul.lookup)."""
        text = await kamcmd(self.ctl_socket, "ul.lookup", "location", f"s:{user}")
        contacts = re.findall(r"Address:\s*(\S+)", text)
        if not contacts and "AOR not found" not in text:
            raise AssertionError(f"kamcmd ul.lookup {user} answered neither contacts nor 'not found': {text!r}")
        return contacts


async def kamcmd(ctl_socket: Path, *command: str) -> str:
    """What `kamcmd` prints for one RPC command on Kamailio's ctl socket (bounded to 5 s)."""
    process = await asyncio.create_subprocess_exec(
        "kamcmd",
        "-s",
        f"unix:{ctl_socket}",
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), 5)
    except TimeoutError:
        os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        raise
    return output.decode(errors="replace")


async def launch(cfg: Path, workdir: Path) -> asyncio.subprocess.Process:
    """Kamailio in the foreground with `cfg`, logging to workdir/kamailio.log, in its own process group."""
    with open(workdir / "kamailio.log", "wb") as log:
        return await asyncio.create_subprocess_exec(
            "kamailio", "-f", str(cfg), "-DD", "-E", "-m", "32", "-M", "8", "-Y", str(workdir),
            stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip


async def stop(process: asyncio.subprocess.Process) -> None:
    """TERM, then KILL the whole group: no child of Kamailio outlives the test."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 5)


async def _ready(port: int, process: asyncio.subprocess.Process, timeout_s: float) -> bool:
    """True once Kamailio answers an OPTIONS on its port; False if it exits or stays silent."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((LOCAL, 0))
        probe.setblocking(False)
        local = probe.getsockname()[1]
        options = (
            f"OPTIONS sip:{LOCAL}:{port} SIP/2.0\r\nVia: SIP/2.0/UDP {LOCAL}:{local};branch=z9hG4bK{{}}\r\n"
            f"From: <sip:probe@{LOCAL}>;tag=p\r\nTo: <sip:{LOCAL}:{port}>\r\nCall-ID: probe-{port}\r\n"
            "CSeq: {} OPTIONS\r\nMax-Forwards: 5\r\nContent-Length: 0\r\n\r\n"
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        attempt = 0
        while loop.time() < deadline and process.returncode is None:
            attempt += 1
            probe.sendto(options.format(secrets.token_hex(6), attempt).encode(), (LOCAL, port))
            try:
                data = await asyncio.wait_for(loop.sock_recv(probe, 4096), 0.2)
            except TimeoutError:
                continue
            except OSError:  # ICMP port unreachable: not listening yet
                await asyncio.sleep(0.1)
                continue
            if data.startswith(b"SIP/2.0 200"):
                return True
    return False


@pytest.fixture
async def start_kamailio(tmp_path: Path):
    """start_kamailio(passwords, algorithm="MD5", challenge="www", max_expires=0) -> a running Kamailio on
    127.0.0.1:<free port>; killed (with its children) at teardown."""
    if shutil.which("kamailio") is None or not MODULES.is_dir():
        pytest.skip("apt-get install kamailio")
    processes: list[asyncio.subprocess.Process] = []

    async def start(passwords: dict[str, str], **options) -> Kamailio:
        workdir = tmp_path / f"kamailio-{len(processes) + 1}"
        workdir.mkdir()
        port = free_udp_port()
        ctl_socket = workdir / "ctl.sock"
        cfg = workdir / "kamailio.cfg"
        cfg.write_text(config(port, ctl_socket, passwords, **options))
        process = await launch(cfg, workdir)
        processes.append(process)
        if not await _ready(port, process, START_TIMEOUT_S):
            log_text = (workdir / "kamailio.log").read_text(errors="replace")
            pytest.fail(
                f"Kamailio did not answer OPTIONS on {LOCAL}:{port} within {START_TIMEOUT_S:g} s "
                f"(exit {process.returncode}):\n{log_text[-4000:]}"
            )
        return Kamailio(port, workdir, process, ctl_socket)

    yield start
    for process in processes:
        await stop(process)
