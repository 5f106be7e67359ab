"""`voiceswarm call SIP-URI --say "..."`: the built-in test caller, for trying a deployment by ear."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from callcenter.config import Config
from callcenter.testbed.dialer import TestCaller
from callcenter.voice import SpeechModels
from telephony import CallFailed


def register(commands: argparse._SubParsersAction) -> None:
    call = commands.add_parser("call", help="place a test call that speaks each --say line and prints what it hears")
    call.add_argument("uri", help="whom to call, e.g. sip:shop@127.0.0.1:5060")
    call.add_argument("--say", action="append", default=[], help="a sentence to speak (repeatable, in order)")
    call.add_argument("--dtmf", default="", help="keys to press after the last sentence")
    call.add_argument("--caller-id", default="+442079460321")
    call.add_argument("--local", default="127.0.0.1", help="our address for SIP and RTP")
    call.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    if not args.uri.startswith(("sip:", "sips:")):
        print(f"voiceswarm call: {args.uri!r} is not a SIP URI (sip:user@host:port)", file=sys.stderr)
        return 2
    return asyncio.run(_call(args, config))


async def _call(args: argparse.Namespace, config: Config) -> int:
    speech = await asyncio.to_thread(SpeechModels.load, config.voice)
    start = time.monotonic()

    def show(who: str, text: str) -> None:
        print(f"{time.monotonic() - start:6.1f}s {who:>6}: {text}", flush=True)

    try:
        caller = TestCaller(speech, caller_id=args.caller_id, host=args.local, on_line=show)
        await caller.call(args.uri, args.say, dtmf=args.dtmf)
    except CallFailed as failure:
        print(f"voiceswarm call: the call failed: {failure}", file=sys.stderr)
        return 1
    finally:
        speech.close()
    return 0
