"""The config refuses to open a door to everyone (issue 25): an AudioSocket listener beyond loopback without
sip.allowed_sources, and a caller ID believed ("trusted") from a SIP door anyone can reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from callcenter.config import ConfigError, load_config


def load(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> None:
    path = tmp_path / "voiceswarm.toml"
    path.write_text(text)
    load_config(path, environ or {})


@pytest.mark.parametrize("listen", ["0.0.0.0:9092", "[::]:9092", "10.0.0.20:9092", "voiceswarm.example:9092"])
def test_audiosocket_beyond_loopback_needs_allowed_sources(tmp_path: Path, listen: str) -> None:
    with pytest.raises(ConfigError, match=r"sip\.audiosocket_listen is .* list Asterisk's network in sip\.allowed"):
        load(tmp_path, f'[sip]\naudiosocket_listen = "{listen}"\n')
    load(tmp_path, f'[sip]\naudiosocket_listen = "{listen}"\nallowed_sources = ["10.0.0.10/32"]\n')


@pytest.mark.parametrize("listen", ["127.0.0.1:9092", "[::1]:9092", "localhost:9092"])
def test_audiosocket_on_loopback_needs_nothing(tmp_path: Path, listen: str) -> None:
    load(tmp_path, f'[sip]\naudiosocket_listen = "{listen}"\n')
