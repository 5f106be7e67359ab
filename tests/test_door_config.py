"""The config refuses to open a door to everyone (issue 25): an AudioSocket listener beyond loopback without
sip.allowed_sources, and a caller ID believed ("trusted") from a SIP door anyone can reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from callcenter.cli import main
from callcenter.config import ENVIRONMENT, ConfigError, load_config
from callcenter.demo import demo_config


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


CLAIMED = 'callers.caller_id = "claimed"'


@pytest.mark.parametrize(
    "sip",
    [
        'listen = "10.0.0.20:5060"',
        'listen = "0.0.0.0:5060"\nadvertised = "10.0.0.20"',
        'listen = "[::]:5060"\nadvertised = "2001:db8::20"',
        'listen_tcp = "10.0.0.20:5060"',
    ],
)
def test_a_trusted_caller_id_behind_an_open_sip_door_is_refused(tmp_path: Path, sip: str) -> None:
    with pytest.raises(ConfigError, match=r'allowed_sources empty and callers\.caller_id = "trusted"') as refused:
        load(tmp_path, f"[sip]\n{sip}\n")
    assert "List your trunk or PBX in sip.allowed_sources" in str(refused.value) and CLAIMED in str(refused.value)
    load(tmp_path, f'[sip]\n{sip}\nallowed_sources = ["10.0.0.10/32"]\n')  # the trunk vouches for From
    load(tmp_path, f'[sip]\n{sip}\n\n[callers]\ncaller_id = "claimed"\n')  # From is only the caller's word


def test_the_environment_opening_the_door_is_refused_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"sip\.listen is '10\.0\.0\.20:5060'"):
        load(tmp_path, "", {"VOICESWARM_SIP_LISTEN": "10.0.0.20:5060"})


def test_loopback_sip_with_a_trusted_caller_id_loads(tmp_path: Path) -> None:
    load(tmp_path, '[sip]\nlisten = "127.0.0.1:5060"\nlisten_tcp = "[::1]:5060"\n\n[callers]\ncaller_id = "trusted"\n')


def test_serve_listen_opening_the_door_is_refused(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    served: list[str | None] = []

    async def serve_forever(config: object, listen: str | None, provider: str | None) -> int:
        served.append(listen)
        return 0

    monkeypatch.setattr("callcenter.commands.serve.serve_forever", serve_forever)
    for variable in ("VOICESWARM_SIP_LISTEN", "VOICESWARM_SIP_ADVERTISED"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["serve", "--listen", "10.0.0.20:5060"]) == 2 and served == []
    assert CLAIMED in capsys.readouterr().err
    assert main(["serve", "--listen", "127.0.0.1:5070"]) == 0 and served == ["127.0.0.1:5070"]


def test_the_demo_config_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ENVIRONMENT:
        monkeypatch.delenv(variable, raising=False)
    config = demo_config(tmp_path)
    assert config.sip.listen == "127.0.0.1:0" and config.callers.caller_id == "trusted"
