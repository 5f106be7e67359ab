"""The `voiceswarm` command line: each command lives in its own module of callcenter.commands."""

from __future__ import annotations

import argparse
import importlib
import sys

from callcenter.config import ConfigError, load_config

# Each has register(subparsers), which adds a parser whose defaults hold run(args, config) -> exit status.
COMMAND_MODULES: tuple[str, ...] = (
    "callcenter.commands.chat",
    "callcenter.commands.configuration",
    "callcenter.commands.web",
    "callcenter.commands.serve",
    "callcenter.commands.call",
    "callcenter.commands.calls",
    "callcenter.commands.echo",
    "callcenter.commands.say",
    "callcenter.commands.transcribe",
    "callcenter.commands.eval",
    "callcenter.commands.shop",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="voiceswarm", description="A phone agent for call centres.")
    parser.add_argument("--config", help="a TOML config file (environment variables override it)")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(commands)
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as error:
        print(f"voiceswarm: {error}", file=sys.stderr)
        return 2
    status: int = args.run(args, config)
    return status


if __name__ == "__main__":
    sys.exit(main())
