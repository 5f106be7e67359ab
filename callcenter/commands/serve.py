"""`voiceswarm serve`: answer calls from the PBX over SIP, until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from callcenter.commands import add_llm_option
from callcenter.config import Config, ConfigError, check_caller_id_door
from callcenter.log_safety import configure as configure_logging
from callcenter.server import VoiceServer


def register(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser("serve", help="answer phone calls over SIP")
    serve.add_argument("--listen", help="SIP HOST:PORT (default: sip.listen from config)")
    add_llm_option(serve)
    serve.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    if args.listen:  # the config was checked with sip.listen: the door it opens instead is checked the same way
        try:
            check_caller_id_door(config, args.listen)
        except ConfigError as error:
            print(f"voiceswarm: {error}", file=sys.stderr)
            return 2
    return asyncio.run(serve_forever(config, args.listen, args.llm))


async def serve_forever(config: Config, listen: str | None, provider: str | None) -> int:
    configure_logging(logging.INFO)  # escaped: a SIP header cannot write a log line of its own
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with VoiceServer(config, listen, provider) as server:
        print(
            f"voiceswarm: answering SIP calls on {server.address[0]}:{server.address[1]} (LLM: {server.app.llm})",
            flush=True,
        )
        if server.supervisor_address:
            print("voiceswarm: the supervisor's page on http://{}:{}/".format(*server.supervisor_address), flush=True)
        await stop.wait()
        await server.drain()  # leaving the block waits for the live calls, up to the deadline
    return 0
