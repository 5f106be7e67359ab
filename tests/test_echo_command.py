"""`voiceswarm echo` as a PBX engineer runs it: a subprocess that real peers call (baresip, sipp)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from callcenter.commands import echo
from harness.peers import Peers, best_lag_correlation, chirp, free_udp_port, read_wav, write_wav

pytestmark = pytest.mark.timeout(90)


def echo_args(*argv: str) -> argparse.Namespace:
    """`voiceswarm echo ARGV` as its own parser reads it."""
    parser = argparse.ArgumentParser()
    echo.register(parser.add_subparsers())
    return parser.parse_args(["echo", *argv])


ROOT = Path(__file__).resolve().parent.parent


class EchoProcess:
    def __init__(self, process: asyncio.subprocess.Process, port: int) -> None:
        self.process, self.port = process, port
        self.lines: list[str] = []

    async def read_until(self, text: str, timeout: float = 10.0) -> str:
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                line = (await self.process.stdout.readline()).decode()
                if not line:
                    raise AssertionError(f"echo exited before printing {text!r}: {''.join(self.lines)}")
                self.lines.append(line)
                if text in line:
                    return line

    async def stop(self) -> tuple[int | None, str]:
        """SIGTERM, then everything it printed and its exit status."""
        self.process.send_signal(signal.SIGTERM)
        stdout, stderr = await asyncio.wait_for(self.process.communicate(), 15)
        self.lines.append(stdout.decode())
        return self.process.returncode, "".join(self.lines) + stderr.decode()


@pytest.fixture
async def echo_process():
    started: list[EchoProcess] = []

    async def start(*args: str) -> EchoProcess:
        port = free_udp_port()
        code = (
            "import callcenter.cli as c, sys; c.COMMAND_MODULES = ('callcenter.commands.echo',); "
            "sys.exit(c.main(sys.argv[1:]))"
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            code,
            "echo",
            "--listen",
            f"127.0.0.1:{port}",
            "--rtp-ports",
            "50000-50999",
            *args,
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=os.environ | {"PYTHONUNBUFFERED": "1"},
        )
        echo_run = EchoProcess(process, port)
        started.append(echo_run)
        await echo_run.read_until("listening on")
        return echo_run

    yield start
    for echo_run in started:
        if echo_run.process.returncode is None:
            os.killpg(echo_run.process.pid, signal.SIGKILL)
            await echo_run.process.wait()


@pytest.mark.skipif(shutil.which("baresip") is None, reason="apt-get install baresip-core")
async def test_echo_plays_the_callers_audio_back_after_half_a_second(
    echo_process, peers: Peers, tmp_path: Path
) -> None:
    server = await echo_process()
    signal_in = chirp(2.0, 300, 3400)
    silence = np.zeros(8000, np.int16)  # the echo of the end needs time to come back before baresip hangs up
    wav = write_wav(tmp_path / "caller.wav", np.concatenate([silence[:2400], signal_in, silence]))
    run, recordings = await peers.baresip_call(f"sip:echo@127.0.0.1:{server.port}", wav, seconds=15)
    sent, _ = read_wav(next(recordings.glob("dump-*-enc.wav")))
    heard, _ = read_wav(next(recordings.glob("dump-*-dec.wav")))
    _, lag_sent = best_lag_correlation(sent, signal_in)
    correlation, lag_heard = best_lag_correlation(heard, signal_in)
    assert correlation >= 0.95, run.report()
    delay = (lag_heard - lag_sent) / 8000
    assert 0.45 <= delay <= 0.75, f"the echo came back after {delay:.3f} s"
    status, output = await server.stop()
    assert status == 0, output
    assert "from caller" in output and "ended (remote_hangup)" in output and "echo: stopping" in output


@pytest.mark.skipif(shutil.which("baresip") is None, reason="apt-get install baresip-core")
async def test_echo_with_srtp_offer_answers_baresips_keys(echo_process, peers: Peers, tmp_path: Path) -> None:
    server = await echo_process("--srtp", "offer")
    signal_in = chirp(2.0, 300, 3400)
    wav = write_wav(
        tmp_path / "caller.wav", np.concatenate([np.zeros(2400, np.int16), signal_in, np.zeros(8000, np.int16)])
    )
    run, recordings = await peers.baresip_call(f"sip:echo@127.0.0.1:{server.port}", wav, seconds=15, mediaenc="srtp")
    heard, _ = read_wav(next(recordings.glob("dump-*-dec.wav")))
    correlation, _ = best_lag_correlation(heard, signal_in)
    assert correlation >= 0.95, run.report()
    status, output = await server.stop()
    assert status == 0, output
    assert "SRTP offer" in output and "(SRTP: AES_CM_128_HMAC_SHA1_80)" in output, output


async def test_echo_prints_each_dtmf_key_with_the_call_id(echo_process, peers: Peers) -> None:
    server = await echo_process("--delay", "0.2")
    run = await peers.sipp(("127.0.0.1", server.port), "dtmf.xml", timeout_s=30)
    assert run.returncode == 0 and run.successful == 1, run.report()
    status, output = await server.stop()
    assert status == 0, output
    keys = [line.split("dtmf ")[1].strip() for line in output.splitlines() if " dtmf " in line]
    assert keys == ["1", "5", "#"], output
    call_line = next(line for line in output.splitlines() if " dtmf " in line)
    assert call_line.startswith("call ") and "@127.0.0.1" in call_line


@pytest.mark.parametrize(
    "listen, rtp_ports, delay, message",
    [
        ("nohostport", "10000-20000", 0.5, "--listen must be HOST:PORT"),
        ("127.0.0.1:5060", "20000", 0.5, "--rtp-ports must be LOW-HIGH"),
        ("127.0.0.1:5060", "10000-20000", -1.0, "--delay must be between"),
        ("0.0.0.0:5060", "10000-20000", 0.5, "needs advertised_host"),
        ("pbx.example.com:5060", "10000-20000", 0.5, "must be an IP address"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(capsys, listen: str, rtp_ports: str, delay: float, message: str) -> None:
    args = echo_args("--listen", listen, "--rtp-ports", rtp_ports, "--delay", str(delay))
    assert echo.run(args) == 2
    assert message in capsys.readouterr().err


def test_a_port_in_use_exits_1(capsys) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        args = echo_args("--listen", f"127.0.0.1:{port}", "--rtp-ports", "50000-50999")
        assert echo.run(args) == 1
    assert "cannot listen on" in capsys.readouterr().err
