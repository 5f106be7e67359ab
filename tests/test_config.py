"""Configuration: a TOML file, environment variables on top, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from callcenter.config import Config, ConfigError, VoiceConfig, endpoint_config, load_config
from callcenter.conversation import VoiceSettings

FULL = """
[llm]
provider = "ollama"
host = "http://10.0.0.5:11434"
model = "qwen3:8b"
timeout = 7.5
fallback = "offline"

[llm.agents]
triage = "small-model"

[shop]
database = "/srv/voiceswarm/shop.db"

[session]
history_size = 40
max_retries = 1
placeholders = ["Pardon?"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "voiceswarm.toml"
    path.write_text(text)
    return path


def test_defaults_without_file_or_environment() -> None:
    assert load_config(None, {}) == Config()


def test_a_calls_settings_follow_the_voice_section(tmp_path: Path) -> None:
    # One place for each default: a call's settings with nothing configured are VoiceSettings' own defaults.
    assert VoiceSettings.from_config(VoiceConfig()) == VoiceSettings()
    voice = load_config(
        write(tmp_path, '[voice]\ngreeting = "Hi."\noperator = "sip:queue@pbx"\nmax_call_s = 60\n'), {}
    ).voice
    settings = VoiceSettings.from_config(voice)
    assert (settings.greeting, settings.operator, settings.max_call_s) == ("Hi.", "sip:queue@pbx", 60)


def test_file_sets_every_section(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL), {})
    assert config.llm.provider == "ollama"
    assert config.llm.host == "http://10.0.0.5:11434"
    assert config.llm.model == "qwen3:8b"
    assert config.llm.timeout == 7.5
    assert config.llm.fallback == "offline"
    assert config.llm.agent_models == {"triage": "small-model"}
    assert config.database == "/srv/voiceswarm/shop.db"
    assert config.session.history_size == 40
    assert config.session.max_retries == 1
    assert config.session.placeholders == ("Pardon?",)
    # Untouched keys keep their defaults.
    assert config.session.max_tool_calls == Config().session.max_tool_calls


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    environ = {
        "OLLAMA_HOST": "http://127.0.0.1:5555",
        "VOICESWARM_DB": str(tmp_path / "other.db"),
        "VOICESWARM_HISTORY_SIZE": "12",
    }
    config = load_config(write(tmp_path, FULL), environ)
    assert config.llm.host == "http://127.0.0.1:5555"
    assert config.database == str(tmp_path / "other.db")
    assert config.session.history_size == 12
    # What the environment does not mention still comes from the file.
    assert config.llm.model == "qwen3:8b" and config.llm.agent_models == {"triage": "small-model"}


def test_empty_environment_variable_is_ignored(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL), {"OLLAMA_HOST": "", "VOICESWARM_HISTORY_SIZE": ""})
    assert config.llm.host == "http://10.0.0.5:11434" and config.session.history_size == 40


@pytest.mark.parametrize(
    ("text", "environ", "named"),
    [
        ('[llm]\nprovider = "gpt"\n', {}, "llm.provider"),
        ("[session]\nhistory_size = 1\n", {}, "session.history_size"),
        ("", {"VOICESWARM_HISTORY_SIZE": "1"}, "session.history_size"),
        ("", {"VOICESWARM_HISTORY_SIZE": "twenty"}, "VOICESWARM_HISTORY_SIZE"),
        ("", {"VOICESWARM_LLM": "gpt"}, "llm.provider"),
        ('[llm]\nfallback = "retry"\n', {}, "llm.fallback"),
        ("[llm]\ntimeout = 0\n", {}, "llm.timeout"),
        ('[llm]\nmodle = "qwen3:4b"\n', {}, "modle"),
        ("[session]\nhistory = 10\n", {}, "history"),
        ('[pbx]\nhost = "10.0.0.1"\n', {}, "pbx"),
        ('database = "shop.db"\n', {}, "database"),
        ("[voice]\nend_silence_ms = 50\n", {}, "voice.end_silence_ms"),
        ("[voice]\nwhisper_window_s = 3\n", {}, "voice.whisper_window_s"),
        ("[voice]\nearly_transcript_ms = 100\n", {}, "voice.early_transcript_ms"),
        ("[voice]\nturn_hold_threshold = 0.99\n", {}, "voice.turn_hold_threshold"),
        ('[voice]\nturn_model = ""\nend_silence_ms = 2500\n', {}, "turn_silence_ms < end_silence_ms <= turn_max"),
        ("[voice]\nend_silence_ms = 400\nearly_transcript_ms = 400\n", {}, "voice.early_transcript_ms"),
        ("[voice]\nend_silence_ms = 400\nfinished_silence_ms = 450\n", {}, "voice.finished_silence_ms"),
        ("[voice]\nfinished_silence_ms = 50\n", {}, "voice.finished_silence_ms"),
        ('[voice]\nrecording = "yes"\n', {}, "voice.recording is 'yes'; use one of off, on, announce"),
        ("[voice]\nrecording = true\n", {}, "voice.recording must be a str"),
        ("[voice]\nrecording_days = -1\n", {}, "voice.recording_days"),
        ('[voice]\nrecording_days = "90"\n', {}, "voice.recording_days must be a int"),
        ('[voice]\nrecording = "on"\nrecording_dir = " "\n', {}, "voice.recording_dir"),
        ('[voice]\nrecording = "announce"\nrecording_notice = ""\n', {}, "voice.recording_notice"),
        ('[voice]\noverload = "queue"\n', {}, "voice.overload is 'queue'; use 'refuse' or 'transfer'"),
        ('[voice]\noverload = "transfer"\n', {}, "voice.operator is empty"),
        ('[privacy]\nphone_region = "Germany"\n', {}, "privacy.phone_region is 'Germany'"),
        ("[privacy]\nredact_transcripts = 1\n", {}, "privacy.redact_transcripts must be a bool"),
        ('[sip]\nlisten = "0.0.0.0:5060"\n', {}, "needs sip.advertised"),
        ('[sip]\nlisten = "pbx.example.com:5060"\n', {}, "sip.listen must be an IP address"),
        ('[sip]\nlisten = "10.0.0.2:5060"\nadvertised = "0.0.0.0"\n', {}, "sip.advertised must be a reachable"),
        ('[sip]\nallowed_sources = ["10.0.0.300/8"]\n', {}, "sip.allowed_sources"),
        ('[sip]\nsrtp = "sometimes"\n', {}, "sip.srtp must be one of off, offer, require"),
        ('[sip]\nregistrar = "http://pbx"\nusername = "a"\npassword = "b"\n', {}, "registration.registrar"),
    ],
)
def test_invalid_values_name_the_key(tmp_path: Path, text: str, environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_config(write(tmp_path, text), environ)


def test_unreadable_file_names_the_file(tmp_path: Path) -> None:
    broken = write(tmp_path, "[llm\nhost = 1\n")
    with pytest.raises(ConfigError, match=r"voiceswarm\.toml"):
        load_config(broken, {})
    with pytest.raises(ConfigError, match=r"missing\.toml"):
        load_config(tmp_path / "missing.toml", {})


def test_unknown_shop_key_is_an_error(tmp_path: Path) -> None:
    # A typo keeps the default database: the admin's shop data would silently not be used.
    with pytest.raises(ConfigError, match="databse"):
        load_config(write(tmp_path, '[shop]\ndatabse = "/srv/shop.db"\n'), {})


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[session]\nhistory_size = "many"\n', "history_size"),
        ('[llm]\ntimeout = "fast"\n', "timeout"),
        ('shop = "shop.db"\n', "shop"),
    ],
    ids=["history_size-string", "timeout-string", "shop-not-a-table"],
)
def test_wrong_type_in_file_is_a_config_error(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_config(write(tmp_path, text), {})


def test_sip_srtp_reaches_the_endpoint(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[sip]\nsrtp = "require"\n'), {})
    assert endpoint_config(config.sip).srtp == "require"
    assert endpoint_config(Config().sip).srtp == "off"
