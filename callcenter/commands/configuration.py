"""`voiceswarm config [--check]`: print the effective configuration (file, then environment), and whether the
LLM server answers."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from typing import Any

from callcenter.config import Config

# (section, key) of the settings that are secrets: printed as whether they are set, never as they are.
SECRETS = (
    ("sip", "password"),
    ("supervisor", "token"),
    ("web", "token"),
    ("web", "signing_key"),
    ("voice", "metrics_token"),
)
MASKED = "********"


def register(subparsers: Any) -> None:
    check = subparsers.add_parser("config", help="print the effective configuration")
    check.add_argument("--check", action="store_true", help="also check that the LLM server answers")
    check.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    return asyncio.run(_config(config, args.check))


async def _config(config: Config, check: bool) -> int:
    print(json.dumps(printable_config(config), indent=2))
    if not check:
        return 0
    from callcenter.llm_choice import check_llm  # the LLM choice and its clients load only when asked to check

    problem = await check_llm(config)
    print(f"llm: {'OK' if problem is None else problem}")
    return 0 if problem is None else 1


def printable_config(config: Config) -> dict[str, Any]:
    """The effective configuration with its secrets masked: what `config` prints ends up in tickets and chats."""
    data = config.as_dict()
    for section, key in SECRETS:
        if data.get(section, {}).get(key):
            data[section][key] = MASKED
    if data.get("shop_http"):  # [shop.http]'s token or user:password, read from the environment
        data["shop_http"]["secret"] = MASKED
    # A database URL may carry its password: postgresql://user:secret@host/db
    data["database"] = re.sub(r"(//[^/:@]*:)[^/@]*@", rf"\g<1>{MASKED}@", data["database"])
    return data
