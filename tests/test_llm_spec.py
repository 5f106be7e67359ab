"""The words that name an LLM: one grammar for [llm] provider, --llm of chat/serve/web and eval --llm."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from callcenter.cli import main
from callcenter.config import Config, ConfigError, LLMConfig, load_config
from callcenter.llm_choice import choose_llm
from callcenter.llm_spec import LLMSpec, LLMSpecError, parse_llm, served


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("auto", LLMSpec("auto", "auto")),
        ("offline", LLMSpec("offline", "offline")),
        ("local", LLMSpec("local", "local")),
        ("local:0.5b", LLMSpec("local:0.5b", "local", "qwen2.5-coder-0.5b")),
        ("local:1.5b", LLMSpec("local:1.5b", "local", "qwen2.5-coder-1.5b")),
        ("local:qwen2.5-coder-0.5b", LLMSpec("local:qwen2.5-coder-0.5b", "local", "qwen2.5-coder-0.5b")),
        ("local:/models/my.gguf", LLMSpec("local:/models/my.gguf", "local", "/models/my.gguf")),
        ("ollama", LLMSpec("ollama", "ollama")),
        ("ollama:qwen3:4b", LLMSpec("ollama:qwen3:4b", "ollama", "qwen3:4b")),
        ("openai", LLMSpec("openai", "openai")),
        ("openai:gpt-4o-mini", LLMSpec("openai:gpt-4o-mini", "openai", "gpt-4o-mini")),
        ("openai:qwen@http://h:8000/v1", LLMSpec("openai:qwen@http://h:8000/v1", "openai", "qwen", "http://h:8000/v1")),
        ("scripted:rules.toml", LLMSpec("scripted:rules.toml", "scripted", file="rules.toml")),
    ],
)
def test_each_form_names_its_llm(text: str, spec: LLMSpec) -> None:
    assert parse_llm(text) == spec


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("gpt", "unknown LLM 'gpt'; use auto, offline, local"),
        ("", "unknown LLM ''"),
        ("Ollama:qwen3:4b", "unknown LLM 'Ollama:qwen3:4b'"),
        ("offline:x", "offline takes no model"),
        ("auto:qwen3:4b", "auto takes no model"),
        ("ollama:", "nothing after the colon"),
        ("local:", "nothing after the colon"),
        ("local:7b", "the local model is 0.5b, 1.5b"),
        ("openai:@http://h/v1", "use openai:MODEL@URL"),
        ("openai:qwen@h:8000", "starting with http:// or https://"),
        ("scripted", "scripted:FILE"),
    ],
)
def test_bad_words_say_what_is_expected(text: str, says: str) -> None:
    with pytest.raises(LLMSpecError, match=re.escape(says)):
        parse_llm(text)


def test_a_scripted_llm_is_the_testbeds_only() -> None:
    assert served(parse_llm("ollama:x")).kind == "ollama"
    with pytest.raises(LLMSpecError, match="answers only in the testbed"):
        served(parse_llm("scripted:rules.toml"))


def test_the_words_put_their_model_and_url_over_the_config() -> None:
    llm = LLMConfig(model="qwen3:4b", agent_models={"triage": "small"}, base_url="http://a/v1")
    assert llm.choosing(parse_llm("ollama")) == llm
    assert llm.choosing(parse_llm("ollama:big")) == LLMConfig(model="big", base_url="http://a/v1")
    assert llm.choosing(parse_llm("openai:m")).base_url == "http://a/v1"
    assert llm.choosing(parse_llm("openai:m@https://b/v1")).base_url == "https://b/v1"
    assert llm.choosing(parse_llm("local:0.5b")).local_model == "qwen2.5-coder-0.5b"
    assert llm.choosing(parse_llm("local")).local_model == llm.local_model


def test_the_config_takes_the_same_words(tmp_path: Path) -> None:
    path = tmp_path / "voiceswarm.toml"
    path.write_text('[llm]\nprovider = "ollama:llama3.2"\n')
    assert load_config(path, environ={}).llm.provider == "ollama:llama3.2"
    for text, says in [("local:7b", "llm.provider: LLM 'local:7b'"), ("scripted:r.toml", "only in the testbed")]:
        path.write_text(f'[llm]\nprovider = "{text}"\n')
        with pytest.raises(ConfigError, match=re.escape(says)):
            load_config(path, environ={})
    path.write_text('[llm]\nprovider = "local:missing.gguf"\n')
    with pytest.raises(ConfigError, match=re.escape("the file missing.gguf does not exist")):
        load_config(path, environ={})


async def test_a_model_in_the_words_serves_every_agent() -> None:
    config = Config(llm=LLMConfig(provider="ollama:big", agent_models={"triage": "small"}))
    chosen = await choose_llm(config, ("triage", "sales"))
    assert {p.name for p in chosen.per_agent.values() if p is not None} == {"ollama:big"}
    chosen = await choose_llm(config, ("triage",), "offline")
    assert chosen.per_agent == {"triage": None}


@pytest.mark.parametrize("command", ["chat", "serve", "web"])
def test_llm_options_refuse_bad_words_before_anything_starts(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--llm", "gpt"])
    assert exit_.value.code == 2
    assert "unknown LLM 'gpt'" in capsys.readouterr().err
