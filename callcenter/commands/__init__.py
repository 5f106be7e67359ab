"""The `voiceswarm` commands, one module each: `register(subparsers)` adds its parser (see cli.COMMAND_MODULES)."""

from __future__ import annotations

import argparse

from callcenter.llm_spec import SERVED, LLMSpecError, parse_llm, served


def add_llm_option(parser: argparse.ArgumentParser) -> None:
    """`--llm` in callcenter.llm_spec's words, as [llm] provider takes them, checked before anything starts."""
    parser.add_argument("--llm", type=_served_llm, metavar="LLM", help=f"the LLM: {SERVED} (default: [llm] provider)")


def _served_llm(text: str) -> str:
    try:
        return served(parse_llm(text)).text
    except LLMSpecError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
