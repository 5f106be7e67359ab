"""`voiceswarm web --listen HOST:PORT`: the WebSocket endpoint /api/v1/session/{client_id} (callcenter.web)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from callcenter.config import PROVIDERS, Config
from callcenter.web import serve


def register(subparsers: Any) -> None:
    web = subparsers.add_parser("web", help="serve the WebSocket endpoint /api/v1/session/{client_id}")
    web.add_argument("--listen", default="127.0.0.1:8080", help="HOST:PORT")
    web.add_argument("--llm", choices=PROVIDERS)
    web.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    host, _, port = args.listen.rpartition(":")
    return asyncio.run(serve(config, args.llm, host or "127.0.0.1", int(port)))
