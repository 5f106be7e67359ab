"""`voiceswarm chat`: talk to the agents in the terminal, one caller line at a time (or --json events).

The call rules are the phone's (callcenter.call.rules, driven by callcenter.call.text as the WebSocket channel drives
them): after each turn the hand-over or the goodbye, the keypad a tool asked for, 0 for a person. A line
`/keys DIGITS` types keys on the phone's keypad. A hand-over or a goodbye ends the chat; a person takes over at the
terminal, so a hand-over always goes through.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from callcenter.app import open_app
from callcenter.call import CallInText, VoiceSettings
from callcenter.commands import add_llm_option
from callcenter.config import Config
from callcenter.event_json import turn_events
from swarm import Session

KEYS_COMMAND = "/keys"
KEYS = frozenset("0123456789*#")
# A person takes over at the terminal (whoever reads "transfer"): a hand-over always goes through.
TERMINAL_OPERATOR = "the terminal"


def register(subparsers: Any) -> None:
    chat = subparsers.add_parser(
        "chat", help="talk to the agents in the terminal", epilog=f"A line '{KEYS_COMMAND} 0' types keys (0: a person)."
    )
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
        said: list[tuple[str, str]] = []  # (agent, line) of this turn, printed after its events
        settings = replace(VoiceSettings.from_config(config.voice), operator=TERMINAL_OPERATOR)
        call = CallInText(
            session, settings, time.monotonic(), said=lambda line: said.append((session.get_agent_name(), line))
        )
        for line in _caller_lines():
            keys = _keys(line)
            if keys is not None and not (keys and set(keys) <= KEYS):
                _print_event(_error(f"keys are 0-9, * and #: {KEYS_COMMAND} 0", as_json), as_json)
                continue
            seen, said[:] = len(session.events), []
            if keys is not None:
                await call.keys(keys, time.monotonic())
            else:
                await call.say(line, time.monotonic())
            for item in turn_events(session.events[seen:]):
                _print_event(item if as_json else _human(item), as_json)
            if not as_json:
                for agent, text in said:
                    print(f"[{agent}] {text}", flush=True)
            if call.ended_by is not None:
                _print_event(_ending(session, call.ended_by, as_json), as_json)
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


def _keys(line: str) -> str | None:
    """The keys of a `/keys DIGITS` line (None: the caller's words)."""
    command, _, keys = line.partition(" ")
    return "".join(keys.split()) if command == KEYS_COMMAND else None


def _ending(session: Session, ended_by: str, as_json: bool) -> dict[str, Any] | str:
    """How the chat ended: a transfer (the caller reaches a person) or the end of the call."""
    if escalation := session.escalated():
        if as_json:
            return {"event": "transfer", "reason": escalation.text}
        return f"(transfer to a person: {escalation.text})"
    ending = session.ended()
    reason = ending.text if ending else ended_by
    return {"event": "end", "reason": reason} if as_json else f"(the call ended: {reason})"


def _error(error: str, as_json: bool) -> dict[str, Any] | str:
    return {"event": "error", "error": error} if as_json else f"({error})"


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
