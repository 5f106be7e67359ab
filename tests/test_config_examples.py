"""The configuration examples in the README and docs/ load as written (with the secrets they say to set in the
environment): a door that the config now refuses open must be closed in the examples too (issue 25)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from callcenter.config import load_config

ROOT = Path(__file__).resolve().parent.parent
# What the examples say to put in the environment rather than in the file.
ENVIRONMENT = {"VOICESWARM_METRICS_TOKEN": "Zq3-vN8xKp2_wR7tYh5m-metrics"}
# The examples that are whole configurations (the others are fragments naming files of the reader's own).
EXAMPLES = [("README.md", "[sip]"), ("docs/asterisk.md", "[sip]"), ("docs/several-nodes.md", "[shop]")]


def blocks(document: str, opening: str) -> list[str]:
    text = (ROOT / document).read_text()
    return [block for block in re.findall(r"```toml\n(.*?)```", text, re.S) if block.startswith(opening)]


@pytest.mark.parametrize(("document", "opening"), EXAMPLES)
def test_the_examples_load(tmp_path: Path, document: str, opening: str) -> None:
    found = blocks(document, opening)
    assert found, f"no TOML example starting {opening!r} in {document}"
    for number, block in enumerate(found):
        path = tmp_path / f"example-{number}.toml"
        path.write_text(block)
        load_config(path, ENVIRONMENT)
