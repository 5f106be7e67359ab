"""`voiceswarm web [--listen HOST:PORT]`: the WebSocket endpoint /api/v1/session/{client_id} (callcenter.web);
`voiceswarm web --issue-token CALLER`: print a signed token for that caller (what the CRM's server would issue)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from typing import Any

from callcenter.commands import add_llm_option
from callcenter.config import Config, ConfigError, validate_web
from callcenter.web import serve
from callcenter.web_tokens import DEFAULT_TTL_S, TokenError, issue


def register(subparsers: Any) -> None:
    web = subparsers.add_parser("web", help="serve the WebSocket endpoint /api/v1/session/{client_id}")
    web.add_argument("--listen", help="HOST:PORT (default: web.listen, 127.0.0.1:8080)")
    add_llm_option(web)
    web.add_argument("--issue-token", metavar="CALLER", help="print a signed token for CALLER and exit")
    web.add_argument("--ttl", type=int, default=DEFAULT_TTL_S, help="the token's lifetime in seconds")
    web.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    if args.issue_token is not None:
        try:
            print(issue(config.web.signing_key, args.issue_token, args.ttl))
        except TokenError as error:
            print(f"voiceswarm: {error}", file=sys.stderr)
            return 2
        return 0
    listen = args.listen or config.web.listen
    try:  # --listen is checked as web.listen is: no open text channel beyond this machine
        validate_web(replace(config.web, listen=listen))
    except ConfigError as error:
        print(f"voiceswarm: {error}", file=sys.stderr)
        return 2
    host, _, port = listen.rpartition(":")
    return asyncio.run(serve(config, args.llm, host.strip("[]") or "127.0.0.1", int(port)))
