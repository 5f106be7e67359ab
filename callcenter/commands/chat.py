"""`voiceswarm chat`: talk to the agents in the terminal, one caller line at a time (or --json events)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from typing import Any

from callcenter.app import open_app
from callcenter.commands import add_llm_option
from callcenter.config import Config
from callcenter.turn_events import turn_events


def register(subparsers: Any) -> None:
    chat = subparsers.add_parser("chat", help="talk to the agents in the terminal")
    add_llm_option(chat)
    chat.add_argument("--json", action="store_true", help="print one JSON object per event")
    chat.add_argument("--caller", default="+4915100000000", help="the caller's phone number")
    chat.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    return asyncio.run(_chat(config, args.llm, args.json, args.caller))


async def _chat(config: Config, provider: str | None, as_json: bool, caller: str) -> int:
    app = await open_app(config, provider)
    try:
        _print_event({"event": "llm", "llm": app.llm} if as_json else f"(LLM: {app.llm})", as_json)
        session = app.session(f"chat-{uuid.uuid4().hex[:8]}", caller)
        for line in _caller_lines():
            seen = len(session.events)
            reply = await session.complete(line)
            for item in turn_events(session.events[seen:]):
                _print_event(item if as_json else _human(item), as_json)
            if not as_json:
                print(f"[{session.get_agent_name()}] {reply}", flush=True)
            if escalation := session.escalated():
                _print_event(
                    {"event": "transfer", "reason": escalation.text}
                    if as_json
                    else f"(transfer to a person: {escalation.text})",
                    as_json,
                )
                break
            if ending := session.ended():
                _print_event(
                    {"event": "end", "reason": ending.text} if as_json else f"(the call ended: {ending.text})", as_json
                )
                break
    finally:
        app.close()
    return 0


def _caller_lines() -> Iterator[str]:
    interactive = sys.stdin.isatty()
    while True:
        try:
            line = input("you> ") if interactive else sys.stdin.readline()
        except EOFError:
            return
        if not interactive and not line:
            return
        if line.strip():
            yield line.strip()


def _human(item: dict[str, Any]) -> str | None:
    if item["event"] == "agent_change":
        return f"  (handed over: {item['from']} -> {item['to']})"
    if item["event"] == "tool_call":
        return f"  (tool {item['name']} {json.dumps(item['arguments'], ensure_ascii=False)})"
    return None


def _print_event(item: dict[str, Any] | str | None, as_json: bool) -> None:
    if item is None:
        return
    print(json.dumps(item, ensure_ascii=False) if as_json else item, flush=True)
