"""The `voiceswarm` command line."""
from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
import uuid
from collections.abc import Iterator
from typing import Any

from callcenter.app import open_app
from callcenter.config import PROVIDERS, Config, ConfigError, load_config
from callcenter.turn_events import turn_events
from callcenter.web import serve

# Commands that live in their own module: each has register(subparsers), which adds a parser whose
# defaults hold run(args, config) -> exit status.
COMMAND_MODULES: tuple[str, ...] = (
    "callcenter.commands.serve",
    "callcenter.commands.call",
    "callcenter.commands.calls",
    "callcenter.commands.echo",
    "callcenter.commands.say",
    "callcenter.commands.transcribe",
    "callcenter.commands.eval",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="voiceswarm", description="A phone agent for call centres.")
    parser.add_argument("--config", help="a TOML config file (environment variables override it)")
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser("chat", help="talk to the agents in the terminal")
    chat.add_argument("--llm", choices=PROVIDERS, help="the brain (default: from config)")
    chat.add_argument("--json", action="store_true", help="print one JSON object per event")
    chat.add_argument("--caller", default="+4915100000000", help="the caller's phone number")
    check = commands.add_parser("config", help="print the effective configuration")
    check.add_argument("--check", action="store_true", help="also check that the LLM server answers")
    web = commands.add_parser("web", help="serve the WebSocket endpoint /api/v1/session/{client_id}")
    web.add_argument("--listen", default="127.0.0.1:8080", help="HOST:PORT")
    web.add_argument("--llm", choices=PROVIDERS)
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(commands)
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as error:
        print(f"voiceswarm: {error}", file=sys.stderr)
        return 2
    if hasattr(args, "run"):
        return args.run(args, config)
    if args.command == "chat":
        return asyncio.run(_chat(config, args.llm, args.json, args.caller))
    if args.command == "config":
        return asyncio.run(_config(config, args.check))
    host, _, port = args.listen.rpartition(":")
    return asyncio.run(serve(config, args.llm, host or "127.0.0.1", int(port)))


async def _chat(config: Config, provider: str | None, as_json: bool, caller: str) -> int:
    app = await open_app(config, provider)
    try:
        _print_event({"event": "brain", "brain": app.brain} if as_json else f"(brain: {app.brain})", as_json)
        session = app.session(f"chat-{uuid.uuid4().hex[:8]}", caller)
        for line in _caller_lines():
            seen = len(session.events)
            reply = await session.complete(line)
            for item in turn_events(session.events[seen:]):
                _print_event(item if as_json else _human(item), as_json)
            if not as_json:
                print(f"[{session.get_agent_name()}] {reply}", flush=True)
            if session.escalation:
                _print_event({"event": "transfer", "reason": session.escalation} if as_json else f"(transfer to a person: {session.escalation})", as_json)
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


async def _config(config: Config, check: bool) -> int:
    print(json.dumps(config.as_dict(), indent=2))
    if not check:
        return 0
    from callcenter.brains import check_llm

    problem = await check_llm(config)
    print(f"llm: {'OK' if problem is None else problem}")
    return 0 if problem is None else 1


if __name__ == "__main__":
    sys.exit(main())
