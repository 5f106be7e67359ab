"""`voiceswarm config` prints the configuration without its secrets (issue 25)."""

from __future__ import annotations

import pytest

from callcenter.cli import main

SECRETS = {
    "VOICESWARM_SIP_PASSWORD": "sip-Pa55word-xyz",
    "VOICESWARM_SUPERVISOR_TOKEN": "Zq3-vN8xKp2_wR7tYh5m-sup",
    "VOICESWARM_WEB_TOKEN": "Zq3-vN8xKp2_wR7tYh5m-web",
    "VOICESWARM_WEB_SIGNING_KEY": "k9Jx2Lm4Np6Qr8St0Uv3Wy5Za7Bc9De1Fg",
    "VOICESWARM_METRICS_TOKEN": "Zq3-vN8xKp2_wR7tYh5m-met",
    "VOICESWARM_DB": "postgresql://shop:db-s3cret@db.example/shop",
}


def test_config_prints_no_secret(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for variable, value in SECRETS.items():
        monkeypatch.setenv(variable, value)
    assert main(["config"]) == 0
    printed = capsys.readouterr().out
    for secret in (*list(SECRETS.values())[:5], "db-s3cret"):
        assert secret not in printed
    assert "postgresql://shop:********@db.example/shop" in printed
    assert '"token": "********"' in printed and '"metrics_token": "********"' in printed
