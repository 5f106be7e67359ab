"""N simultaneous calls from sipp into our SipEndpoint, audio both ways, on 127.0.0.1.

sipp (a scenario written here) places N calls at once, each offering PCMA and streaming a 20 ms-packet tone
from a pcap for --seconds; our endpoint runs alone in a child process (so its CPU is its own) and echoes
every frame it hears back into the call, so every call carries RTP both ways.

Reported per N (median of --runs runs): CPU of the endpoint process over the steady state (all calls up;
utime+stime from /proc, % of one core), and of sipp for comparison; RTP packets sent and received per call
by our side; packets lost from sipp to us (sequence gaps seen by our jitter buffer, plus packets that never
arrived: the pcap's count minus those received); our send-interval p50/p99/max over every packet of every
call (RtpStats.send_intervals; the target "p99 under 5 ms" is read as a p99 at most 5 ms over the 20 ms);
slots skipped because the loop was over 60 ms late; INVITE -> 200 OK as sipp timed it (1 ms resolution;
p50/max over the calls); and, beside it, the p99 interval of a bare asyncio 20 ms timer running in its own
process during the same window: the scheduling floor this machine allows under that load.

With --srtp each N also runs with SRTP (our endpoint on `srtp = "offer"`): sipp cannot do SRTP, so its offer
carries a fixed a=crypto key and its pcap holds packets protected with that key beforehand; our side checks and
decrypts every packet sipp sends and encrypts every packet of its echo, as in a real SRTP call ("srtp rej" counts
packets that failed the check: it must be 0, or the row measured dropping, not decrypting).

--transports udp,tcp,tls runs each N over each SIP transport (the media is RTP over UDP in all three). sipp
speaks TCP with -t t1; Debian's sipp has no TLS, so for tls it speaks TCP to a relay in this driver process that
carries each of its connections over TLS to our endpoint (the relay's CPU is not the endpoint's).

Not measured: loss from us to sipp (sipp 3.6 never reads its media socket; on loopback a datagram can only
be lost in a receiver's socket buffer).

Usage: .venv/bin/python benchmarks/telephony_load.py [--calls 1,10,50,100] [--runs 3] [--seconds 20] [--srtp]
       [--transports udp,tcp,tls]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import csv
import json
import os
import shutil
import socket
import ssl
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.certs import CertFiles, make_certs  # noqa: E402
from harness.peers import free_sip_port, pcap_rtp  # noqa: E402
from telephony.codec import PCMA  # noqa: E402
from telephony.rtp import IntervalHistogram  # noqa: E402
from telephony.rtp_packet import RtpPacket  # noqa: E402
from telephony.srtp import SrtpKeys, SrtpStreams  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
OUR_RTP_PORTS = (30000, 39999)
SIPP_MEDIA_PORTS = (20000, 29999)  # apart from ours: sipp advertises per-call ports it never binds
SRTP_SUITE = "AES_CM_128_HMAC_SHA1_80"
SIPP_SRTP_KEY = bytes(range(1, 31))  # sipp's "key": fixed, so that its pcap can be protected beforehand
RTPMAP_LINE = "      a=rtpmap:8 PCMA/8000\n"
SCENARIO = """<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="telephony_load">
  <send retrans="500">
    <![CDATA[

      INVITE sip:load@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:sipp@[local_ip]:[local_port]>;tag=[pid]load[call_number]
      To: <sip:load@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=sipp 1 1 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[local_ip_type] [local_ip]
      t=0 0
      m=audio [auto_media_port] RTP/AVP 8
      a=rtpmap:8 PCMA/8000

    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="200" rtd="true" rrs="true"/>
  <send>
    <![CDATA[

      ACK [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:sipp@[local_ip]:[local_port]>;tag=[pid]load[call_number]
      To: <sip:load@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>
  <nop><action><exec play_pcap_audio="pcap/load.pcap"/></action></nop>
  <pause milliseconds="PAUSE_MS"/>
  <send retrans="500">
    <![CDATA[

      BYE [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:sipp@[local_ip]:[local_port]>;tag=[pid]load[call_number]
      To: <sip:load@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 2 BYE
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>
  <recv response="200"/>
</scenario>
"""


# ---- the endpoint, in its own process -------------------------------------------------------------------------


async def serve(srtp: str, transport: str, cert: str, key: str) -> None:
    """Answer every call with an echo; print "answered N" per call; on stdin EOF print the calls' stats as JSON."""
    from telephony.endpoint import EndpointConfig, SipEndpoint
    from telephony.sip.tls import TlsConfig

    finished: list[dict] = []
    answered = 0

    async def echo(call) -> None:
        nonlocal answered
        answered += 1
        print(f"answered {answered}", flush=True)
        async for frame in call.audio_in:
            call.play(frame)
        await call.closed.wait()
        stats = call._rtp.stats  # the benchmark reads the call's RtpStats; the Call API does not expose them
        histogram = stats.send_intervals
        finished.append(
            {
                "sent": stats.packets_sent,
                "received": stats.packets_received,
                "lost": stats.lost,
                "skipped": stats.send_skipped,
                "max_ms": histogram.max_ms,
                "srtp_rejected": stats.srtp_rejected,
                "srtp": call.srtp_suite,
                "bins": {i: c for i, c in enumerate(histogram.counts) if c},
            }
        )

    config = EndpointConfig(
        listen_host="127.0.0.1",
        listen_port=0,
        rtp_port_range=OUR_RTP_PORTS,
        max_calls=1000,
        invite_rate=1000.0,
        invite_burst=1000,
        no_media_timeout_s=10.0,
        srtp=srtp,
        listen_tcp=("127.0.0.1", 0) if transport == "tcp" else None,
        listen_tls=("127.0.0.1", 0) if transport == "tls" else None,
        tls=TlsConfig(cert, key) if transport == "tls" else None,
    )
    endpoint = SipEndpoint(config, echo)
    await endpoint.start()
    print(f"ready {endpoint.address(transport.upper())[1]}", flush=True)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    await endpoint.stop(2.0)
    print(json.dumps({"calls": finished}), flush=True)


async def bare_timer(seconds: float) -> None:
    """The same absolute 20 ms clock with no RTP: prints p50/p99/max of its intervals as JSON."""
    loop = asyncio.get_running_loop()
    intervals, slot, last = IntervalHistogram(), loop.time(), None
    for _ in range(int(seconds / 0.020)):
        now = loop.time()
        if last is not None:
            intervals.add((now - last) * 1000)
        last, slot = now, slot + 0.020
        await asyncio.sleep(max(0.0, slot - loop.time()))
    print(json.dumps(intervals.percentile(99)), flush=True)


# ---- the driver -----------------------------------------------------------------------------------------------


@dataclass
class Run:
    cpu: float  # % of one core, our endpoint, steady state
    sipp_cpu: float
    sent: float  # per call
    received: float
    lost: float  # per call, sipp -> us
    p50: float
    p99: float
    max_ms: float
    skipped: int
    invite_p50: float
    invite_max: float
    bare_p99: float
    failed: int  # calls sipp did not complete
    srtp_rejected: float  # per call
    plain_calls: int  # reported calls that ran on plain RTP


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


async def python(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=True,
    )


async def tls_relay(port: int, certs: CertFiles) -> asyncio.Server:
    """TCP in, TLS out to our endpoint on `port`: one TLS connection for each connection sipp makes."""
    context = ssl.create_default_context(cafile=str(certs.ca))

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tls_reader, tls_writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1"
        )
        await asyncio.gather(pipe(reader, tls_writer), pipe(tls_reader, writer))

    return await asyncio.start_server(relay, "127.0.0.1", free_sip_port())


async def one_run(
    calls: int, seconds: float, workdir: Path, packets: int, srtp: bool, transport: str, certs: CertFiles
) -> Run:
    child = await python("--serve", "offer" if srtp else "off", transport, str(certs.cert), str(certs.key))
    assert child.stdout is not None and child.stdin is not None
    relay: asyncio.Server | None = None
    try:
        line = (await asyncio.wait_for(child.stdout.readline(), 10)).decode()
        port = int(line.split()[1])
        if transport == "tls":
            relay = await tls_relay(port, certs)
            port = relay.sockets[0].getsockname()[1]
        rate = min(calls, 100)
        sipp = await asyncio.create_subprocess_exec(
            "sipp",
            "-sf",
            "load_srtp.xml" if srtp else "load.xml",
            f"127.0.0.1:{port}",
            "-t",
            "u1" if transport == "udp" else "t1",
            "-i",
            "127.0.0.1",
            "-p",
            str(free_sip_port()),
            "-mp",
            str(free_port_in(SIPP_MEDIA_PORTS)),
            "-m",
            str(calls),
            "-l",
            str(calls),
            "-r",
            str(rate),
            "-rp",
            "1000",
            "-nostdin",
            "-timeout",
            f"{int(seconds) + 40}s",
            "-trace_stat",
            "-stf",
            "stats.csv",
            "-trace_rtt",
            "-rtt_freq",
            "1",
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(15):  # until every call is up
                while not (await child.stdout.readline()).decode().startswith(f"answered {calls}"):
                    pass
            await asyncio.sleep(0.5)
            window = seconds - 3.0
            ours, theirs, wall = cpu_seconds(child.pid), cpu_seconds(sipp.pid), time.perf_counter()
            timer = await python("--bare-timer", str(window))
            await asyncio.sleep(window)
            elapsed = time.perf_counter() - wall
            cpu = 100 * (cpu_seconds(child.pid) - ours) / elapsed
            sipp_cpu = 100 * (cpu_seconds(sipp.pid) - theirs) / elapsed
            bare = json.loads((await asyncio.wait_for(timer.communicate(), 10))[0])
            await asyncio.wait_for(sipp.wait(), seconds + 40)
        finally:
            if sipp.returncode is None:
                sipp.kill()
                await sipp.wait()
        child.stdin.close()
        output = (await asyncio.wait_for(child.communicate(), 30))[0].decode()
    finally:
        if relay is not None:
            relay.close()
        if child.returncode is None:
            child.kill()
            await child.wait()
    report = json.loads(output.strip().splitlines()[-1])["calls"]
    intervals = IntervalHistogram()
    for call in report:
        for index, count in call["bins"].items():
            intervals.counts[int(index)] += count
        intervals.count += sum(call["bins"].values())
        intervals.max_ms = max(intervals.max_ms, call["max_ms"])
    rtts = [
        float(row[1])
        for path in workdir.glob("load*_rtt.csv")
        for row in csv.reader(path.read_text().splitlines()[1:], delimiter=";")
        if len(row) > 1
    ]
    for path in workdir.glob("load*_rtt.csv"):
        path.unlink()
    stats_rows = list(csv.reader((workdir / "stats.csv").read_text().splitlines(), delimiter=";"))
    sipp_stats = dict(zip(stats_rows[0], stats_rows[-1], strict=False))
    (workdir / "stats.csv").unlink()
    n = max(1, len(report))
    return Run(
        cpu,
        sipp_cpu,
        sum(c["sent"] for c in report) / n,
        sum(c["received"] for c in report) / n,
        sum(c["lost"] + max(0, packets - c["received"]) for c in report) / n,
        intervals.percentile(50),
        intervals.percentile(99),
        intervals.max_ms,
        sum(c["skipped"] for c in report),
        statistics.median(rtts) if rtts else float("nan"),
        max(rtts) if rtts else float("nan"),
        bare,
        calls - int(sipp_stats.get("SuccessfulCall(C)", "0")),
        sum(c["srtp_rejected"] for c in report) / n,
        sum(c["srtp"] is None for c in report),
    )


def free_port_in(ports: tuple[int, int]) -> int:
    """An even port P with P..P+3 free, low in the range (sipp counts its per-call media ports up from it)."""
    for port in range(ports[0], ports[1] - 1000, 100):
        try:
            for offset in range(4):
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                    probe.bind(("127.0.0.1", port + offset))
            return port
        except OSError:
            continue
    raise RuntimeError(f"no free UDP ports in {ports}")


def prepare(workdir: Path, seconds: float) -> int:
    """The tone sipp streams (PCMA, 20 ms packets), plain and SRTP-protected, and the scenarios for both;
    returns the packet count."""
    t = np.arange(int(8000 * seconds)) / 8000
    tone = (6000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    packets = [
        RtpPacket(8, i, i * 160, 0x5EED, PCMA.encode(tone[i * 160 : (i + 1) * 160]), i == 0).to_bytes()
        for i in range(len(tone) // 160)
    ]
    sipp_side = SrtpStreams(SrtpKeys(SRTP_SUITE, SIPP_SRTP_KEY, bytes(30)))  # what sipp would receive: unused
    (workdir / "pcap").mkdir()
    (workdir / "pcap" / "load.pcap").write_bytes(pcap_rtp(packets))
    (workdir / "pcap" / "load_srtp.pcap").write_bytes(pcap_rtp([sipp_side.protect(p) for p in packets]))
    scenario = SCENARIO.replace("PAUSE_MS", str(int(seconds * 1000) + 500))
    (workdir / "load.xml").write_text(scenario)
    crypto = f"      a=crypto:1 {SRTP_SUITE} inline:{base64.b64encode(SIPP_SRTP_KEY).decode()}\n"
    (workdir / "load_srtp.xml").write_text(
        scenario.replace(RTPMAP_LINE, RTPMAP_LINE + crypto).replace("pcap/load.pcap", "pcap/load_srtp.pcap")
    )
    return len(packets)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="1,10,50,100")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--srtp", action="store_true", help="also run each N with SRTP both ways")
    parser.add_argument("--transports", default="udp", help="SIP over udp, tcp and/or tls, comma-separated")
    args = parser.parse_args()
    transports = args.transports.split(",")
    if set(transports) - {"udp", "tcp", "tls"}:
        sys.exit(f"--transports: use udp, tcp and/or tls, not {args.transports!r}")
    if shutil.which("sipp") is None:
        sys.exit("sipp is not installed: apt-get install sip-tester")
    print(
        f"{args.runs} run(s) of {args.seconds:.0f} s of audio per N, medians; PCMA 20 ms both ways (sipp's tone in, "
        f"our echo out); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} before the first run\n"
    )
    header = (
        "calls",
        "SIP",
        "SRTP",
        "CPU % core",
        "CPU %/call",
        "sipp CPU %",
        "sent/call",
        "recv/call",
        "lost/call",
        "send p50 ms",
        "p99 ms",
        "max ms",
        "skipped",
        "bare timer p99 ms",
        "INVITE->200 p50 ms",
        "max ms",
        "failed",
        "srtp rej",
        "load avg",
    )
    print(" | ".join(header))
    print(" | ".join("-" * len(h) for h in header))
    with tempfile.TemporaryDirectory(prefix="telephony-load-") as temp:
        workdir = Path(temp)
        packets = prepare(workdir, args.seconds)
        certs = make_certs(workdir / "certs")
        for calls, transport, srtp in (
            (int(n), transport, srtp)
            for n in args.calls.split(",")
            for transport in transports
            for srtp in (False, True)[: 1 + args.srtp]
        ):
            load = os.getloadavg()[0]
            runs = [
                await one_run(calls, args.seconds, workdir, packets, srtp, transport, certs) for _ in range(args.runs)
            ]
            if srtp and any(run.plain_calls for run in runs):
                print(f"warning: {max(run.plain_calls for run in runs)} calls of a run ran on plain RTP", flush=True)

            def median(name: str) -> float:
                return statistics.median(getattr(run, name) for run in runs)  # noqa: B023 (only called in this iteration)

            cpu = median("cpu")
            print(
                " | ".join(
                    [
                        f"{calls:5d}",
                        f"{transport:3s}",
                        f"{'on' if srtp else 'off':4}",
                        f"{cpu:10.1f}",
                        f"{cpu / calls:10.2f}",
                        f"{median('sipp_cpu'):10.1f}",
                        f"{median('sent'):9.0f}",
                        f"{median('received'):9.0f}",
                        f"{median('lost'):9.1f}",
                        f"{median('p50'):11.1f}",
                        f"{median('p99'):6.1f}",
                        f"{median('max_ms'):6.1f}",
                        f"{median('skipped'):7.0f}",
                        f"{median('bare_p99'):17.1f}",
                        f"{median('invite_p50'):18.0f}",
                        f"{median('invite_max'):6.0f}",
                        f"{median('failed'):6.0f}",
                        f"{median('srtp_rejected'):8.1f}",
                        f"{load:8.1f}",
                    ]
                ),
                flush=True,
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(serve(*sys.argv[2:6]))
    elif sys.argv[1:2] == ["--bare-timer"]:
        asyncio.run(bare_timer(float(sys.argv[2])))
    else:
        asyncio.run(main())
