"""Real SIP peers for the tests: sipp and baresip on 127.0.0.1.

Every peer runs in its own process group with a bounded run time; the fixtures kill the groups that are
still alive at teardown and keep each peer's logs so that a failing assertion can show them.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import os
import random
import shutil
import signal
import socket
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

LOCAL = "127.0.0.1"
SIPP_SHARE = Path("/usr/share/sip-tester")  # g711a.pcap and dtmf_2833_*.pcap
SIPP_SCENARIOS = Path(__file__).parent.parent / "tests" / "sipp"
BARESIP_MODULES = Path("/usr/lib/baresip/modules")


def free_udp_port(count: int = 1) -> int:
    """A port P with P..P+count-1 free for UDP on 127.0.0.1 right now (even when count > 1)."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((LOCAL, 0))
            port = probe.getsockname()[1]
        if count > 1:
            port -= port % 2
        if port + count > 65535:
            continue
        sockets = []
        try:
            for offset in range(count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sockets.append(sock)
                sock.bind((LOCAL, port + offset))
            return port
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError("no free UDP port found on 127.0.0.1")


# Below the kernel's ephemeral range (32768-60999), so no outgoing TCP connection can take a listener's port
# between our check and the peer's bind.
_LISTEN_PORTS = range(21000, 32000, 2)


def free_sip_port() -> int:
    """A port P for a SIP peer's listener: free for UDP and TCP, and P+1 free for TCP (baresip listens
    on all three: UDP and TCP on P, TLS on P+1)."""
    for port in random.sample(_LISTEN_PORTS, 200):
        kinds = ((socket.SOCK_DGRAM, port), (socket.SOCK_STREAM, port), (socket.SOCK_STREAM, port + 1))
        try:
            for kind, number in kinds:
                with socket.socket(socket.AF_INET, kind) as probe:
                    probe.bind((LOCAL, number))
            return port
        except OSError:
            continue
    raise RuntimeError("no free SIP port found on 127.0.0.1")


@dataclass
class PeerRun:
    """One finished run of a peer: exit status, its files, and everything it logged."""

    name: str
    returncode: int | None
    workdir: Path
    stdout: str = ""
    stderr: str = ""
    logs: dict[str, str] = field(default_factory=dict)

    def report(self) -> str:
        parts = [f"--- {self.name} exit={self.returncode} in {self.workdir}", self.stdout[-3000:], self.stderr[-3000:]]
        parts += [f"--- {name}\n{text[-4000:]}" for name, text in self.logs.items()]
        return "\n".join(parts)


@dataclass
class SippRun(PeerRun):
    stats: dict[str, str] = field(default_factory=dict)

    @property
    def successful(self) -> int:
        return int(self.stats.get("SuccessfulCall(C)", "0"))

    @property
    def failed(self) -> int:
        return int(self.stats.get("FailedCall(C)", "0"))


class Peers:
    """Starts peers as asyncio subprocesses (each in a new session, so in its own process group)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self._processes: list[asyncio.subprocess.Process] = []
        self._count = 0

    def _workdir(self, name: str) -> Path:
        self._count += 1
        path = self.tmp_path / f"{name}-{self._count}"
        path.mkdir()
        return path

    async def _start(self, name: str, argv: list[str], cwd: Path) -> asyncio.subprocess.Process:
        if shutil.which(argv[0]) is None:
            pytest.skip(f"{argv[0]} is not installed (apt-get install sip-tester baresip-core)")
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        self._processes.append(process)
        (cwd / "command.txt").write_text(" ".join(argv) + "\n")
        return process

    async def _finish(self, process: asyncio.subprocess.Process, timeout: float) -> tuple[str, str]:
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            self._kill(process)
            stdout, stderr = await asyncio.wait_for(process.communicate(), 5)
        return stdout.decode(errors="replace"), stderr.decode(errors="replace")

    # ---- sipp ---------------------------------------------------------------------------------------

    def sipp_workdir(self, extra_pcaps: dict[str, bytes] | None = None) -> Path:
        """A directory with pcap/ holding sipp's captures (its scenarios play `pcap/<name>` relative to cwd)."""
        workdir = self._workdir("sipp")
        pcaps = workdir / "pcap"
        pcaps.mkdir()
        if SIPP_SHARE.is_dir():
            for source in SIPP_SHARE.glob("*.pcap"):
                (pcaps / source.name).symlink_to(source)
        for name, data in (extra_pcaps or {}).items():
            (pcaps / name).write_bytes(data)
        return workdir

    async def start_sipp(
        self,
        target: tuple[str, int] | None,
        scenario: str,
        *,
        calls: int = 1,
        rate: float | None = None,
        limit: int | None = None,
        timeout_s: float = 30.0,
        extra: tuple[str, ...] = (),
        workdir: Path | None = None,
        sip_port: int | None = None,
    ) -> tuple[asyncio.subprocess.Process, Path]:
        """`scenario` is a built-in name (uac, uac_pcap, uas) or a file name in tests/sipp/; a uas has no target."""
        workdir = workdir or self.sipp_workdir()
        builtin = scenario in ("uac", "uac_pcap", "uas")
        source = ["-sn", scenario] if builtin else ["-sf", str(SIPP_SCENARIOS / scenario)]
        remote = [f"{target[0]}:{target[1]}"] if target else []
        argv = [
            "sipp",
            *source,
            *remote,
            "-i",
            LOCAL,
            "-p",
            str(sip_port or free_udp_port()),
            "-mp",
            str(free_udp_port(4)),
            "-m",
            str(calls),
            "-nostdin",
            "-timeout",
            f"{int(timeout_s)}s",
            "-timeout_error",
            "-trace_stat",
            "-stf",
            "stats.csv",
            "-trace_err",
            "-error_file",
            "errors.log",
            "-trace_msg",
            "-message_file",
            "messages.log",
            "-trace_logs",
            "-log_file",
            "actions.log",
            *extra,
        ]
        if rate is not None:
            argv += ["-r", str(rate)]
        if limit is not None:
            argv += ["-l", str(limit)]
        return await self._start("sipp", argv, workdir), workdir

    async def wait_sipp(self, process: asyncio.subprocess.Process, workdir: Path, timeout_s: float = 40.0) -> SippRun:
        stdout, stderr = await self._finish(process, timeout_s)
        run = SippRun("sipp", process.returncode, workdir, stdout, stderr)
        for name in ("errors.log", "messages.log", "actions.log", "command.txt"):
            path = workdir / name
            if path.exists():
                run.logs[name] = path.read_text(errors="replace")
        stats = workdir / "stats.csv"
        if stats.exists():
            rows = list(csv.reader(stats.read_text().splitlines(), delimiter=";"))
            if len(rows) >= 2:
                run.stats = dict(zip(rows[0], rows[-1], strict=False))
        return run

    async def sipp(self, target: tuple[str, int] | None, scenario: str, **options) -> SippRun:
        timeout_s = options.get("timeout_s", 30.0)
        process, workdir = await self.start_sipp(target, scenario, **options)
        return await self.wait_sipp(process, workdir, timeout_s + 10)

    # ---- baresip ------------------------------------------------------------------------------------

    async def baresip_call(
        self,
        target_uri: str,
        wav: Path,
        *,
        seconds: int = 15,
        aor: str = f"sip:caller@{LOCAL}",
        calls: int = 1,
        mediaenc: str = "",
        cafile: Path | None = None,
    ) -> tuple[PeerRun, Path]:
        """baresip dials `target_uri` from `aor`, sends `wav` (8 kHz mono) as its microphone, records what it
        hears and sends (sndfile: dump-*-dec.wav / dump-*-enc.wav), and quits once `calls` calls have ended
        (more than one when it follows a REFER) or after `seconds` at most. `mediaenc`: its SRTP mode (srtp:
        RTP/AVP with a=crypto, best effort; srtp-mand: RTP/SAVP). `cafile`: the CAs it checks a TLS server by."""
        workdir = self._workdir("baresip")
        config_dir, recordings = workdir / "config", workdir / "recordings"
        config_dir.mkdir()
        recordings.mkdir()
        sip_port, rtp_port = free_sip_port(), free_udp_port(4)
        (config_dir / "config").write_text(
            "\n".join(
                [
                    "poll_method epoll",
                    f"sip_listen {LOCAL}:{sip_port}",
                    "call_local_timeout 30",
                    f"call_max_calls {calls}",
                    f"audio_source aufile,{wav}",
                    "audio_player aubridge,nowhere",
                    "audio_alert aubridge,nowhere",
                    "audio_buffer 20-160",
                    f"rtp_ports {rtp_port}-{rtp_port + 3}",
                    "rtcp_mux no",
                    "jitter_buffer_delay 5-10",
                    f"module_path {BARESIP_MODULES}",
                    "module g711.so",
                    "module aufile.so",
                    "module aubridge.so",
                    "module sndfile.so",
                    *(["module srtp.so"] if mediaenc else []),
                    *([f"sip_cafile {cafile}"] if cafile else []),
                    f"snd_path {recordings}",
                    "module_app account.so",
                    "module_app menu.so",
                    "",
                ]
            )
        )
        encryption = f";mediaenc={mediaenc}" if mediaenc else ""
        (config_dir / "accounts").write_text(f"<{aor}>;regint=0;audio_codecs=PCMU{encryption}\n")
        (config_dir / "contacts").write_text("")
        argv = ["baresip", "-f", str(config_dir), "-n", LOCAL, "-e", f"/dial {target_uri}", "-t", str(seconds)]
        process = await self._start("baresip", argv, workdir)
        assert process.stdout is not None
        lines: list[str] = []
        try:
            async with asyncio.timeout(seconds + 10):
                # baresip stays up until -t runs out; once the call is over its recordings are complete.
                while line := (await process.stdout.readline()).decode(errors="replace"):
                    lines.append(line)
                    calls -= " terminated " in line
                    if calls <= 0:
                        os.killpg(process.pid, signal.SIGTERM)
                        break
        except TimeoutError:
            pass
        stdout, stderr = await self._finish(process, 10)
        return PeerRun("baresip", process.returncode, workdir, "".join(lines) + stdout, stderr), recordings

    # ---- teardown -----------------------------------------------------------------------------------

    def _kill(self, process: asyncio.subprocess.Process) -> None:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    async def close(self) -> None:
        for process in self._processes:
            self._kill(process)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 5)


@pytest.fixture
async def peers(tmp_path: Path):
    runner = Peers(tmp_path)
    yield runner
    await runner.close()


# ---- audio helpers -----------------------------------------------------------------------------------------


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path), "rb") as reader:
        assert reader.getsampwidth() == 2, f"{path}: expected 16-bit samples"
        data = np.frombuffer(reader.readframes(reader.getnframes()), "<i2")
        channels = reader.getnchannels()
        return (data.reshape(-1, channels)[:, 0] if channels > 1 else data).copy(), reader.getframerate()


def write_wav(path: Path, pcm: np.ndarray, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(pcm.astype("<i2").tobytes())
    return path


def best_lag_correlation(received: np.ndarray, reference: np.ndarray) -> tuple[float, int]:
    """The Pearson correlation of `reference` with the stretch of `received` it lines up with best, and
    that lag in samples (FFT cross-correlation, so minutes of audio stay fast)."""
    x = received.astype(np.float64)
    ref = reference.astype(np.float64)
    if len(x) < len(ref):
        ref = ref[: len(x)]
    size = 1 << int(np.ceil(np.log2(len(x) + len(ref))))
    scores = np.fft.irfft(np.fft.rfft(x, size) * np.conj(np.fft.rfft(ref, size)), size)[: len(x) - len(ref) + 1]
    lag = int(np.argmax(scores))
    return float(np.corrcoef(x[lag : lag + len(ref)], ref)[0, 1]), lag


def chirp(seconds: float, f0: float = 300.0, f1: float = 3000.0, amplitude: int = 8000, rate: int = 8000) -> np.ndarray:
    """A linear sweep: no two stretches look alike, so the best lag is unambiguous."""
    t = np.arange(int(rate * seconds)) / rate
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * seconds))
    return (amplitude * np.sin(phase)).astype(np.int16)


def pcap_rtp(packets: list[bytes], interval: float = 0.02, port: int = 6000) -> bytes:
    """A classic pcap (Ethernet/IPv4/UDP) of RTP payloads every `interval` seconds, as sipp's
    play_pcap_audio wants (it rewrites addresses and ports, and keeps the timing)."""
    import struct

    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for index, payload in enumerate(packets):
        udp = struct.pack("!HHHH", port, port, 8 + len(payload), 0) + payload
        ip = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(udp),
            index & 0xFFFF,
            0,
            64,
            17,
            0,
            socket.inet_aton(LOCAL),
            socket.inet_aton(LOCAL),
        )
        frame = b"\x00" * 12 + b"\x08\x00" + ip + udp
        stamp = index * interval
        out.append(struct.pack("<IIII", int(stamp), round((stamp % 1) * 1e6), len(frame), len(frame)) + frame)
    return b"".join(out)


def read_pcap_payloads(path: Path) -> list[bytes]:
    """The UDP payloads of a classic little-endian pcap (Ethernet/IPv4), e.g. sipp's g711a.pcap."""
    import struct

    data = path.read_bytes()
    assert struct.unpack_from("<I", data)[0] == 0xA1B2C3D4, f"{path}: not a little-endian pcap"
    payloads, offset = [], 24
    while offset + 16 <= len(data):
        length = struct.unpack_from("<I", data, offset + 8)[0]
        frame = data[offset + 16 : offset + 16 + length]
        offset += 16 + length
        ip = frame[14:]
        if frame[12:14] == b"\x08\x00" and ip[9] == 17:
            udp = ip[(ip[0] & 0x0F) * 4 :]
            payloads.append(udp[8 : struct.unpack_from("!H", udp, 4)[0]])
    return payloads


# ---- our endpoint ------------------------------------------------------------------------------------------


@pytest.fixture
async def start_endpoint():
    """start_endpoint(on_call=None, **EndpointConfig overrides) -> a started SipEndpoint on 127.0.0.1:<free>,
    stopped at teardown."""
    from telephony.endpoint import EndpointConfig, SipEndpoint

    started: list[SipEndpoint] = []

    async def until_closed(call) -> None:
        await call.closed.wait()

    async def start(on_call=None, **overrides) -> SipEndpoint:
        options: dict[str, Any] = {"listen_host": LOCAL, "listen_port": 0, "rtp_port_range": (40000, 49999)} | overrides
        endpoint = SipEndpoint(EndpointConfig(**options), on_call or until_closed)
        await endpoint.start()
        started.append(endpoint)
        return endpoint

    yield start
    for endpoint in started:
        await endpoint.stop(0.2)


class SipPeer(asyncio.DatagramProtocol):
    """A scripted SIP peer on a plain UDP socket: sends hand-written messages, parses what comes back."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.transport: asyncio.DatagramTransport | None = None
        self.received: list = []

    @classmethod
    async def open(cls) -> SipPeer:
        loop = asyncio.get_running_loop()
        _, peer = await loop.create_datagram_endpoint(cls, local_addr=(LOCAL, 0))
        return peer

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        from telephony.sip.message import parse_message

        message = parse_message(data)
        self.received.append(message)
        self.inbox.put_nowait(message)

    @property
    def port(self) -> int:
        assert self.transport is not None
        return self.transport.get_extra_info("sockname")[1]

    def send(self, data: bytes | str, port: int) -> None:
        assert self.transport is not None
        if isinstance(data, str):
            data = data.replace("\r\n", "\n").replace("\n", "\r\n").encode()
        self.transport.sendto(data, (LOCAL, port))

    async def expect(self, predicate, timeout: float = 3.0):
        """The next message matching predicate(message) (others are skipped but kept in .received)."""
        async with asyncio.timeout(timeout):
            while True:
                message = await self.inbox.get()
                if predicate(message):
                    return message

    async def response(self, status: int, method: str = "INVITE", timeout: float = 3.0):
        from telephony.sip.message import Response

        return await self.expect(
            lambda m: (
                isinstance(m, Response)
                and m.status == status
                and (m.headers.get("CSeq") or "").split()[-1:] == [method]
            ),
            timeout,
        )

    async def request(self, method: str, timeout: float = 3.0):
        from telephony.sip.message import Request

        return await self.expect(lambda m: isinstance(m, Request) and m.method == method, timeout)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


@pytest.fixture
async def sip_peer():
    opened: list[SipPeer] = []

    async def open_peer() -> SipPeer:
        peer = await SipPeer.open()
        opened.append(peer)
        return peer

    yield open_peer
    for peer in opened:
        peer.close()


def sdp_offer(port: int, formats: str = "0 101", direction: str = "sendrecv", host: str = LOCAL) -> str:
    return (
        f"v=0\r\no=peer 1 1 IN IP4 {host}\r\ns=-\r\nc=IN IP4 {host}\r\nt=0 0\r\n"
        f"m=audio {port} RTP/AVP {formats}\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n"
        f"a={direction}\r\n"
    )


def sip_request(
    method: str,
    peer_port: int,
    endpoint_port: int,
    *,
    call_id: str,
    branch: str,
    from_tag: str = "peer1",
    cseq: int = 1,
    to_tag: str | None = None,
    body: str = "",
    extra: str = "",
    content_type: str = "application/sdp",
) -> str:
    """A request from the scripted peer at 127.0.0.1:peer_port to our endpoint."""
    to = f"<sip:agent@{LOCAL}:{endpoint_port}>" + (f";tag={to_tag}" if to_tag else "")
    lines = [
        f"{method} sip:agent@{LOCAL}:{endpoint_port} SIP/2.0",
        f"Via: SIP/2.0/UDP {LOCAL}:{peer_port};branch=z9hG4bK{branch};rport",
        f'From: "Peer" <sip:+15550001@{LOCAL}:{peer_port}>;tag={from_tag}',
        f"To: {to}",
        f"Call-ID: {call_id}",
        f"CSeq: {cseq} {method}",
        f"Contact: <sip:peer@{LOCAL}:{peer_port}>",
        "Max-Forwards: 70",
        *[line for line in extra.split("\n") if line],
    ]
    if body:
        lines.append(f"Content-Type: {content_type}")
    lines.append(f"Content-Length: {len(body.encode())}")
    return "\r\n".join(lines) + "\r\n\r\n" + body
