"""`voiceswarm echo --listen HOST:PORT`: answer every call and play the caller's audio back after a delay,
printing each DTMF key: the first thing a PBX engineer dials to test the audio path."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

import numpy as np

from telephony import SAMPLE_RATE, SRTP_MODES, EndpointConfig, SipCall, SipEndpoint, TlsConfig, TransportName


def register(subparsers: Any) -> None:
    echo = subparsers.add_parser("echo", help="answer every SIP call and echo the caller's audio back")
    echo.add_argument("--listen", required=True, metavar="HOST:PORT", help="SIP UDP address to listen on")
    echo.add_argument("--listen-tcp", metavar="HOST:PORT", help="also SIP over TCP on this address")
    echo.add_argument("--listen-tls", metavar="HOST:PORT", help="also SIP over TLS on this address (needs --tls-cert)")
    echo.add_argument("--tls-cert", metavar="PEM", help="our TLS certificate (with intermediates)")
    echo.add_argument("--tls-key", metavar="PEM", help="its unencrypted private key")
    echo.add_argument("--tls-ca", metavar="PEM", help="CAs to check servers we connect to (default: the system's)")
    echo.add_argument("--advertise", metavar="HOST", help="address for Contact and SDP (needed with 0.0.0.0)")
    echo.add_argument(
        "--rtp-ports", default="10000-20000", metavar="LOW-HIGH", help="RTP port range (default: %(default)s)"
    )
    echo.add_argument(
        "--delay", type=float, default=0.5, help="seconds before the audio comes back (default: %(default)s)"
    )
    echo.add_argument(
        "--srtp",
        choices=SRTP_MODES,
        default="off",
        help="SRTP with SDES keys: offer (when the caller offers keys) or require (default: %(default)s)",
    )
    echo.set_defaults(run=lambda args, config: run(args))


def run(args: argparse.Namespace) -> int:
    try:
        config = _endpoint_config(args)
    except ValueError as error:
        print(f"voiceswarm echo: {error}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(config, args.delay))
    except OSError as error:
        print(f"voiceswarm echo: cannot listen on {args.listen}: {error.strerror or error}", file=sys.stderr)
        return 1


def _endpoint_config(args: argparse.Namespace) -> EndpointConfig:
    host, port = _host_port(args.listen, "--listen")
    low, dash, high = args.rtp_ports.partition("-")
    if not dash or not low.isdigit() or not high.isdigit() or int(low) > int(high):
        raise ValueError(f"--rtp-ports must be LOW-HIGH, got {args.rtp_ports!r}")
    if not 0 <= args.delay <= 10:
        raise ValueError(f"--delay must be between 0 and 10 seconds, got {args.delay}")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ValueError("TLS needs both --tls-cert and --tls-key")
    tls = TlsConfig(args.tls_cert, args.tls_key, args.tls_ca) if args.tls_cert else None
    return EndpointConfig(
        listen_host=host,
        listen_port=port,
        advertised_host=args.advertise,
        rtp_port_range=(int(low), int(high)),
        user_agent="VoiceSwarm echo",
        srtp=args.srtp,
        listen_tcp=_host_port(args.listen_tcp, "--listen-tcp") if args.listen_tcp else None,
        listen_tls=_host_port(args.listen_tls, "--listen-tls") if args.listen_tls else None,
        tls=tls,
    )


def _host_port(text: str, option: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not host:
        raise ValueError(f"{option} must be HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


async def serve(config: EndpointConfig, delay: float) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    endpoint = SipEndpoint(config, lambda call: echo_call(call, delay))
    try:
        await endpoint.start()
        streams: tuple[tuple[TransportName, object], ...] = (("TCP", config.listen_tcp), ("TLS", config.listen_tls))
        transports: list[TransportName] = ["UDP", *(name for name, listen in streams if listen)]
        listening = ", ".join("{}:{} (SIP/{})".format(*endpoint.address(name), name) for name in transports)
        print(f"echo: listening on {listening}, SRTP {config.srtp}; Ctrl-C to stop", flush=True)
        await stop.wait()
        print("echo: stopping", flush=True)
    finally:
        await endpoint.stop(deadline_s=1.0)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    return 0


async def echo_call(call: SipCall, delay: float) -> None:
    print(f"call {call.call_id}: from {call.caller} to {call.called} (SRTP: {call.srtp_suite or 'off'})", flush=True)
    keys = asyncio.create_task(_print_keys(call))
    # The delay is a head start of silence in the playback queue: both sides tick every 20 ms after it.
    call.play(np.zeros(round(delay * SAMPLE_RATE), np.int16))
    try:
        async for frame in call.audio_in:
            call.play(frame)
    finally:
        keys.cancel()
        await asyncio.gather(keys, return_exceptions=True)
    print(f"call {call.call_id}: ended ({call.end_reason})", flush=True)


async def _print_keys(call: SipCall) -> None:
    async for key in call.dtmf_in:
        print(f"call {call.call_id}: dtmf {key}", flush=True)
