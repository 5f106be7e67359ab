"""`voiceswarm config [--check]`: print the effective configuration (file, then environment), and whether the
LLM server answers."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from callcenter.config import Config


def register(subparsers: Any) -> None:
    check = subparsers.add_parser("config", help="print the effective configuration")
    check.add_argument("--check", action="store_true", help="also check that the LLM server answers")
    check.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    return asyncio.run(_config(config, args.check))


async def _config(config: Config, check: bool) -> int:
    print(json.dumps(config.as_dict(), indent=2))
    if not check:
        return 0
    from callcenter.llm_choice import check_llm  # the LLM choice and its clients load only when asked to check

    problem = await check_llm(config)
    print(f"llm: {'OK' if problem is None else problem}")
    return 0 if problem is None else 1
