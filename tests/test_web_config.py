"""[web]: the text channel's settings, and the secrets every door asks for (issue 25)."""

from __future__ import annotations

from pathlib import Path

import pytest

from callcenter.config import ConfigError, load_config

TOKEN = "Zq3-vN8xKp2_wR7tYh5m"
KEY = "k9Jx2Lm4Np6Qr8St0Uv3Wy5Za7Bc9De1Fg"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "voiceswarm.toml"
    path.write_text(text)
    return path


def test_the_text_channel_listens_on_loopback_by_default() -> None:
    config = load_config(None, {})
    assert config.web.listen == "127.0.0.1:8080" and not config.web.token and not config.web.signing_key


@pytest.mark.parametrize("listen", ["0.0.0.0:8080", "[::]:8080", "10.1.2.3:8080", "chat.example.com:8080"])
def test_no_open_text_channel_beyond_loopback(listen: str) -> None:
    with pytest.raises(ConfigError, match=r"web\.token"):
        load_config(None, {"VOICESWARM_WEB_LISTEN": listen})
    assert load_config(None, {"VOICESWARM_WEB_LISTEN": listen, "VOICESWARM_WEB_TOKEN": TOKEN}).web.token == TOKEN
    assert load_config(None, {"VOICESWARM_WEB_LISTEN": listen, "VOICESWARM_WEB_SIGNING_KEY": KEY}).web.signing_key


PLAIN = [" " * 16, "a" * 40, "abababababababababab", "short-1234", "has a space in it ok"]


@pytest.mark.parametrize("secret", PLAIN)
def test_plain_or_blank_web_tokens_are_refused(secret: str) -> None:
    with pytest.raises(ConfigError, match=r"web\.token is too short or too plain"):
        load_config(None, {"VOICESWARM_WEB_LISTEN": "0.0.0.0:8080", "VOICESWARM_WEB_TOKEN": secret})


def test_a_signing_key_needs_32_characters() -> None:
    with pytest.raises(ConfigError, match=r"web\.signing_key is too short"):
        load_config(None, {"VOICESWARM_WEB_SIGNING_KEY": TOKEN})


@pytest.mark.parametrize("secret", PLAIN)
def test_plain_or_blank_supervisor_tokens_are_refused(tmp_path: Path, secret: str) -> None:
    text = f'[supervisor]\nlisten = "0.0.0.0:9461"\ntoken = "{secret}"\n'
    with pytest.raises(ConfigError, match=r"supervisor\.token is too short or too plain"):
        load_config(write(tmp_path, text), {})


def test_web_limits_and_origins_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"web\.max_sockets"):
        load_config(write(tmp_path, "[web]\nmax_sockets = 0\n"), {})
    with pytest.raises(ConfigError, match=r"web\.allowed_origins"):
        load_config(write(tmp_path, '[web]\nallowed_origins = ["https://shop.example/path"]\n'), {})
    config = load_config(write(tmp_path, '[web]\nallowed_origins = ["https://shop.example"]\n'), {})
    assert config.web.allowed_origins == ("https://shop.example",)
