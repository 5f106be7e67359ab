"""The local LLM: its model file (joined from packages, checked), its config, its server process, `auto`.

The fast tests use small fake model packages made here; the `llm` tests run llama.cpp's server with the real
packaged models (the 0.5B one where only the plumbing counts).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from callcenter import local_model
from callcenter.agents import build_registry
from callcenter.config import Config, ConfigError, LLMConfig, load_config
from callcenter.llm_choice import choose_llm
from callcenter.local_model import (
    CHAT_TEMPLATE,
    PACKAGED,
    PackagedModel,
    gguf_metadata,
    local_model_file,
    local_server,
    missing_local_model,
)
from callcenter.shop import Shop
from harness.fake_ollama import FakeOllama
from speech.models import ModelError
from swarm.messages import CompletionRequest, Message
from swarm.providers.base import Completion, Delta, ProviderUnavailable, collect
from swarm.providers.local import LocalProvider, LocalServer, LocalServerError, ServerSpec, ahead_of_the_caller
from swarm.providers.ollama import OllamaProvider
from swarm.providers.openai_compat import OpenAIProvider
from swarm.registry import Agent, Registry, SessionConfig, SwarmSpec

needs_runtime = pytest.mark.skipif(
    missing_local_model("qwen2.5-coder-0.5b") is not None,
    reason="xllamacpp or the 0.5B model packages are not installed",
)

# Nothing listens on the discard port of the loopback interface.
NO_OLLAMA = "http://127.0.0.1:9"


# --- the model file ---------------------------------------------------------------------------------------------


def fake_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[bytes], *, expected: bytes | None = None
) -> PackagedModel:
    """Model packages `vsfake-partN` holding `parts`, registered as the packaged model "fake"."""
    for number, content in enumerate(parts, 1):
        data = tmp_path / "site" / f"vsfake_part{number}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"part{number:02d}.bin").write_bytes(content)
        monkeypatch.delitem(sys.modules, f"vsfake_part{number}", raising=False)  # imported by an earlier test
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = expected if expected is not None else b"".join(parts)
    model = PackagedModel("fake", "vsfake-part{}", len(parts), len(whole), hashlib.sha256(whole).hexdigest())
    monkeypatch.setitem(PACKAGED, "fake", model)
    return model


def test_parts_are_joined_once_into_the_cache_then_trusted_by_their_stamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_model(tmp_path, monkeypatch, [b"GGUF" + b"a" * 100, b"b" * 50, b"c"])
    first = local_model_file("fake", tmp_path / "cache")
    assert first.path.read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50 + b"c"
    assert first.chat_template == CHAT_TEMPLATE and CHAT_TEMPLATE.is_file()
    hashed: list[Path] = []

    def counting_sha256(*paths: Path) -> str:
        hashed.extend(paths)
        return ""

    monkeypatch.setattr(local_model, "sha256", counting_sha256)
    assert local_model_file("fake", tmp_path / "cache").path == first.path
    assert hashed == []  # the stamp spared a hash of the whole file


def test_a_changed_cached_file_is_joined_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_model(tmp_path, monkeypatch, [b"GGUF1234", b"5678"])
    path = local_model_file("fake", tmp_path / "cache").path
    path.write_bytes(b"GGUF1234XXXX")  # same size, other bytes, newer mtime: the stamp no longer matches
    assert local_model_file("fake", tmp_path / "cache").path.read_bytes() == b"GGUF12345678"


def test_parts_of_another_size_are_refused_before_joining(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_model(tmp_path, monkeypatch, [b"GGUF1234", b"56"], expected=b"GGUF12345678")
    with pytest.raises(ModelError) as error:
        local_model_file("fake", tmp_path / "cache")
    assert "add up to 10 bytes, not 12" in str(error.value)
    assert "pip install --force-reinstall vsfake-part1 vsfake-part2" in str(error.value)
    assert not (tmp_path / "cache").exists()


def test_parts_with_other_content_are_refused_by_their_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_model(tmp_path, monkeypatch, [b"GGUF1234", b"5679"], expected=b"GGUF12345678")
    with pytest.raises(
        ModelError,
        match="does not match its sha256; reinstall the model packages: pip install --force-reinstall vsfake-part1",
    ):
        local_model_file("fake", tmp_path / "cache")
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # no half-written or wrong model left behind


def test_a_missing_part_package_names_the_pip_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_model(tmp_path, monkeypatch, [b"GGUF", b"x"])
    monkeypatch.setitem(sys.modules, "vsfake_part2", None)
    with pytest.raises(ModelError, match="pip install vsfake-part2"):
        local_model_file("fake", tmp_path / "cache")


def test_a_gguf_path_is_served_with_its_own_template(tmp_path: Path) -> None:
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF" + bytes(10))
    assert local_model_file(str(model)) == local_model.ModelFile("mine", model, None)
    (tmp_path / "not.gguf").write_bytes(b"PK\x03\x04")
    with pytest.raises(ModelError, match="is not a GGUF file"):
        local_model_file(str(tmp_path / "not.gguf"))
    with pytest.raises(ModelError, match=r"neither qwen2\.5-coder-1\.5b nor qwen2\.5-coder-0\.5b"):
        local_model_file("qwen2.5-coder-7b")


def test_missing_local_model_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_model(tmp_path, monkeypatch, [b"GGUF", b"x"])
    if missing_local_model("fake") is None:  # the runtime is installed
        monkeypatch.setitem(sys.modules, "vsfake_part2", None)
        assert (
            missing_local_model("fake")
            == "the fake model packages are not installed (pip install vsfake-part1 vsfake-part2)"
        )
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    assert missing_local_model("fake") == "the llama.cpp runtime is not installed (pip install xllamacpp)"


def test_the_llm_locator_builds_on_the_model_files_not_on_speechs_locator() -> None:
    code = "import sys, callcenter.local_model; print(sorted(m for m in sys.modules if m.startswith('speech.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "['speech.errors', 'speech.model_files']"  # not speech.models (Whisper, Piper)


# --- config ---------------------------------------------------------------------------------------------------


def test_local_keys_default_to_the_packaged_1_5b_model() -> None:
    llm = load_config(environ={}).llm
    assert (llm.provider, llm.local_model, llm.local_ctx) == ("auto", "qwen2.5-coder-1.5b", 4096)
    assert llm.local_threads == max(1, len(os.sched_getaffinity(0)) // 2)  # 1 on 2 cores: see half_the_cores
    assert llm.local_batch_threads == len(os.sched_getaffinity(0))  # prompts are read on every core


def test_the_server_reads_prompts_with_its_batch_threads_and_writes_with_its_threads() -> None:
    argv = ServerSpec(Path("m.gguf"), threads=1, batch_threads=2).argv()
    assert argv[argv.index("--threads") + 1] == "1" and argv[argv.index("--batch-threads") + 1] == "2"
    argv = ServerSpec(Path("m.gguf"), threads=3).argv()
    assert argv[argv.index("--batch-threads") + 1] == "3"  # unset: as many as write


def test_local_keys_from_file_and_environment(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    file = tmp_path / "c.toml"
    file.write_text(f'[llm]\nprovider = "local"\nlocal_model = "{model}"\nlocal_threads = 1\nlocal_ctx = 8192\n')
    llm = load_config(file, environ={}).llm
    assert (llm.provider, llm.local_model, llm.local_threads, llm.local_ctx) == ("local", str(model), 1, 8192)
    assert (
        load_config(file, environ={"VOICESWARM_LOCAL_MODEL": "qwen2.5-coder-0.5b"}).llm.local_model
        == "qwen2.5-coder-0.5b"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            'local_model = "qwen2.5-coder-7b"',
            "llm.local_model is 'qwen2.5-coder-7b'; use qwen2.5-coder-1.5b or qwen2.5-coder-0.5b, or the path of a .gguf file",
        ),
        ('local_model = "/nowhere/model.gguf"', "llm.local_model: the file /nowhere/model.gguf does not exist"),
        ("local_threads = 0", "llm.local_threads is 0"),
        ("local_batch_threads = 0", "llm.local_batch_threads is 0"),
        ('local_threads = "two"', "llm.local_threads must be a int"),
        ("local_ctx = 100", "llm.local_ctx is 100; use 512 to 32768"),
        ("local_parallel_calls = 0", "llm.local_parallel_calls is 0; use 1 to 16"),
        ('provider = "llamacpp"', "llm.provider: unknown LLM 'llamacpp'; use auto, offline, local"),
    ],
)
def test_bad_local_keys_are_refused_at_load_time(tmp_path: Path, line: str, message: str) -> None:
    file = tmp_path / "c.toml"
    file.write_text(f"[llm]\n{line}\n")
    with pytest.raises(ConfigError) as error:
        load_config(file, environ={})
    assert message in str(error.value)


# --- provider = "auto" ----------------------------------------------------------------------------------------


async def test_auto_takes_ollama_when_it_answers_with_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "callcenter.llm_choice.missing_local_model", lambda spec: pytest.fail("the local model was looked at")
    )
    async with FakeOllama([], models=("qwen3:4b",)) as ollama:
        llm_choice = await choose_llm(Config(llm=LLMConfig(host=ollama.url)), ("triage",))
    triage = llm_choice.per_agent["triage"]
    assert triage is not None and triage.name == "ollama:qwen3:4b" and llm_choice.local == ()
    assert llm_choice.description.startswith(f"ollama at {ollama.url}")


async def test_auto_without_ollama_or_local_model_is_the_offline_router_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        "callcenter.llm_choice.missing_local_model",
        lambda spec: "the llama.cpp runtime is not installed (pip install xllamacpp)",
    )
    async with FakeOllama([], models=("llama3:8b",)) as ollama:
        llm_choice = await choose_llm(Config(llm=LLMConfig(host=ollama.url)), ("triage", "sales"))
    assert llm_choice.per_agent == {"triage": None, "sales": None}
    assert llm_choice.description == (
        f"offline router (model 'qwen3:4b' is not pulled on {ollama.url}: run `ollama pull qwen3:4b` "
        "(pulled: llama3:8b); the llama.cpp runtime is not installed (pip install xllamacpp))"
    )


@pytest.mark.models  # starts llama.cpp's server, which fails on the file
async def test_auto_with_a_local_model_that_fails_to_start_is_the_offline_router(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(100))
    if missing_local_model(str(broken)):
        pytest.skip("xllamacpp is not installed")
    llm_choice = await choose_llm(Config(llm=LLMConfig(host=NO_OLLAMA, local_model=str(broken))), ("triage",))
    assert llm_choice.per_agent == {"triage": None}
    assert llm_choice.description.startswith(
        f"offline router (no Ollama server answers at {NO_OLLAMA}; the local model failed: the local LLM server"
    )


@pytest.mark.parametrize(
    "kind,mode,expected",
    [
        ("openai", "auto", "native"),
        ("openai", "text", "text"),
        ("ollama", "auto", "native"),
        ("ollama", "constrained", "constrained"),
    ],
)
async def test_the_configured_tool_mode_reaches_the_provider(kind: str, mode: str, expected: str) -> None:
    llm_choice = await choose_llm(Config(llm=LLMConfig(provider=kind, tool_mode=mode)), ("triage",))
    triage = llm_choice.per_agent["triage"]
    assert isinstance(triage, OpenAIProvider | OllamaProvider) and triage.tool_mode == expected


@pytest.mark.llm
@needs_runtime
async def test_auto_without_ollama_starts_the_local_model() -> None:
    llm_choice = await choose_llm(
        Config(llm=LLMConfig(host=NO_OLLAMA, local_model="qwen2.5-coder-0.5b")), ("triage", "sales")
    )
    try:
        provider = llm_choice.per_agent["triage"]
        assert (
            isinstance(provider, LocalProvider)
            and llm_choice.per_agent["sales"] is provider
            and llm_choice.local == (provider,)
        )
        assert provider.server.alive() and provider.tool_mode == "constrained"  # the measured best (tool_modes.py)
        assert llm_choice.description.startswith("local model qwen2.5-coder-0.5b (llama.cpp on http://127.0.0.1:")
        assert llm_choice.description.endswith(f"because no Ollama server answers at {NO_OLLAMA}")
    finally:
        llm_choice.close()
    assert not provider.server.alive()


# --- the server process ---------------------------------------------------------------------------------------


@needs_runtime
@pytest.mark.models  # starts llama.cpp's server
def test_a_server_that_cannot_load_its_model_says_why(tmp_path: Path) -> None:
    model = tmp_path / "bad.gguf"
    model.write_bytes(b"not a model at all")
    server = LocalServer(ServerSpec(model), start_timeout=60)
    with pytest.raises(LocalServerError) as error:
        server.start()
    assert "did not start" in str(error.value) and "invalid magic" in str(error.value)
    assert not server.alive()


def request(
    *lines: str, system: str = "You are a helpful assistant. Answer in one short sentence."
) -> CompletionRequest:
    return CompletionRequest("triage", "test", (Message("system", system), *(Message("user", line) for line in lines)))


@pytest.mark.llm
async def test_the_local_server_streams_a_reply(local_05b: LocalServer) -> None:
    provider = LocalProvider(local_05b, owns_server=False)
    # Several words, so several deltas: "Say hello" was once answered by the one token "hello", and "Count from one
    # to five in words." (asked for one short sentence) by "one" once in 15 at temperature 0.2; this asks for a list.
    ask = request(
        "Write the numbers from one to five in words, separated by commas.", system="You are a helpful assistant."
    )
    items = [item async for item in provider.stream(ask)]
    await provider.aclose()
    assert isinstance(items[-1], Completion) and items[-1].text.strip()
    deltas = [item for item in items if isinstance(item, Delta)]
    assert len(deltas) >= 2 and "".join(d.text for d in deltas) == items[-1].text
    assert local_05b.alive()  # not stopped by a provider that does not own it


@pytest.mark.llm
async def test_a_server_killed_mid_reply_fails_the_turn_and_is_back_for_the_next(local_05b: LocalServer) -> None:
    provider = LocalProvider(local_05b, owns_server=False, timeout=60)
    await provider.start()
    pid, starts = local_05b.pid, local_05b.starts
    assert pid is not None
    with pytest.raises(ProviderUnavailable, match="died"):
        async for item in provider.stream(request("Count from one to one hundred in words.")):
            if isinstance(item, Delta):
                os.kill(pid, signal.SIGKILL)
    completion = await collect(provider, request("Say hello."))
    await provider.aclose()
    assert completion.text.strip()
    assert local_05b.starts == starts + 1 and local_05b.pid != pid


@pytest.mark.llm
async def test_turns_back_to_back_survive_the_server_closing_kept_alive_connections(local_05b: LocalServer) -> None:
    # Without a second try, about one request in four failed with "Server disconnected without sending a response".
    provider = LocalProvider(local_05b, owns_server=False, timeout=60)
    replies = [await collect(provider, request("Say hi.")) for _ in range(8)]
    await provider.aclose()
    assert all(reply.text.strip() for reply in replies)


LONG_SYSTEM = " ".join(f"Rule {n}: be polite to caller number {n} and speak clearly." for n in range(20))


def cached_tokens(server: LocalServer, messages: list[dict[str, str]]) -> tuple[int, int]:
    """(prompt tokens taken from the cache, prompt tokens computed) for one request, from llama.cpp's timings."""
    reply = httpx.post(server.base_url + "/chat/completions", json={"messages": messages, "max_tokens": 1}, timeout=120)
    timings = reply.json()["timings"]
    return timings["cache_n"], timings["prompt_n"]


@pytest.mark.llm
async def test_prefill_puts_the_prompt_in_the_cache_and_again_after_a_restart(local_05b: LocalServer) -> None:
    provider = LocalProvider(local_05b, owns_server=False, timeout=120)
    system = LONG_SYSTEM + f" Session {time.time_ns()}."  # a prompt no earlier test has cached
    cold_cache, cold_computed = cached_tokens(local_05b, [{"role": "system", "content": "Other. " + system}])
    await provider.prefill(request(system=system))
    first_turn = [{"role": "system", "content": system}, {"role": "user", "content": "I want to buy a charger."}]
    cache, computed = cached_tokens(local_05b, first_turn)
    assert cold_computed > 300 and cold_cache < 10  # only "<|im_start|>system" is shared
    assert cache > 300 and computed < 30  # only the caller's words and the turn's framing are computed
    assert local_05b.pid is not None
    os.kill(local_05b.pid, signal.SIGKILL)
    local_05b.exited(5)
    await collect(provider, request("Hello.", system="Something else."))  # restarts the server and prefills again
    await provider.warmed()
    cache, computed = cached_tokens(local_05b, first_turn)
    await provider.aclose()
    assert cache > 300 and computed < 30


@pytest.mark.llm
def test_the_packaged_models_declare_no_licence(local_05b: LocalServer, local_15b: LocalServer) -> None:
    # What the README says about them; Qwen publishes both under Apache-2.0, their GGUF headers say nothing.
    names = {server.spec.name: gguf_metadata(server.spec.model) for server in (local_05b, local_15b)}
    assert names["qwen2.5-coder-1.5b"]["general.name"] == "Qwen2.5 Coder 1.5B Instruct GGUF"
    assert names["qwen2.5-coder-0.5b"]["general.name"] == "Qwen2.5 Coder 0.5B Instruct AWQ"
    assert all("general.license" not in metadata for metadata in names.values())


@pytest.mark.llm
def test_the_1_5b_model_is_shown_tool_calls_with_single_braces(local_15b: LocalServer) -> None:
    embedded = gguf_metadata(local_15b.spec.model)["tokenizer.chat_template"]
    assert '{{\\"name\\": <function-name>' in str(embedded)  # the bug this template file exists for
    tool = {
        "type": "function",
        "function": {
            "name": "navigate_to_sales",
            "description": "Hand over to sales.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    reply = httpx.post(
        local_15b.url + "/apply-template",
        json={
            "messages": [{"role": "system", "content": "Triage."}, {"role": "user", "content": "I want to buy."}],
            "tools": [tool],
        },
        timeout=60,
    )
    prompt = reply.json()["prompt"]
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' in prompt
    assert "{{" not in prompt and '"navigate_to_sales"' in prompt


@pytest.mark.llm
def test_a_reply_that_never_stops_is_cut_by_the_server(local_05b: LocalServer) -> None:
    server = LocalServer(replace(local_05b.spec, max_tokens=8))
    server.start()
    try:
        reply = httpx.post(
            server.base_url + "/chat/completions",
            timeout=120,
            # Greedy, on a list it cannot end early: sampled, the 0.5B once stopped by itself under 8 tokens.
            json={
                "messages": [{"role": "user", "content": "List the numbers from 1 to 100, separated by commas."}],
                "temperature": 0,
            },
        ).json()
    finally:
        server.stop()
    assert reply["choices"][0]["finish_reason"] == "length" and reply["timings"]["predicted_n"] <= 8, reply


class KilledMidReply:
    """The local provider, with its server killed as the first words of the reply arrive."""

    def __init__(self, provider: LocalProvider) -> None:
        self.provider, self.name = provider, provider.name

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        async for item in self.provider.stream(request):
            pid = self.provider.server.pid
            if isinstance(item, Delta) and self.provider.server.alive() and pid is not None:
                os.kill(pid, signal.SIGKILL)
            yield item


@pytest.mark.llm
async def test_a_server_dying_mid_call_gets_the_apology_and_transfer_and_the_next_call_a_reply(
    local_05b: LocalServer,
) -> None:
    provider = LocalProvider(local_05b, owns_server=False, timeout=60)
    await provider.start()
    starts = local_05b.starts
    registry = Registry()
    registry.add_provider("dying", KilledMidReply(provider))
    registry.add_provider("local", provider)
    for name, provider_name in (("doomed", "dying"), ("helper", "local")):
        registry.add_agent(
            Agent(name, "You are a shop assistant on the phone. Answer in one short sentence.", provider_name)
        )
        registry.add_swarm(SwarmSpec(name, (name,), name))
    call = registry.session("call-1", "doomed")
    said = await call.complete("Count from one to fifty in words, please.")
    next_call = registry.session("call-2", "helper")
    reply = await next_call.complete("Hello, are you open today?")
    await provider.aclose()
    # The caller hears what any LLM failure gives: the apology, and the voice layer transfers on the escalation.
    assert (
        said == SessionConfig().apology and (escalation := call.escalated()) and escalation.reason == "provider_error"
    )
    assert local_05b.starts == starts + 1 and reply.strip() and reply != SessionConfig().apology


@pytest.mark.llm
async def test_the_history_after_triages_question_is_read_into_the_cache(local_05b: LocalServer, caplog) -> None:
    # Triage's question ends the turn with its say line; warming that history (the agent's line last) under
    # triage's tools-only grammar was refused by llama.cpp as an assistant reply to continue (HTTP 400).
    provider = LocalProvider(local_05b, owns_server=False, timeout=60, tool_mode="constrained")
    registry = build_registry(Shop(":memory:"), {"triage": provider})
    caplog.set_level(logging.DEBUG, logger="swarm.providers.local")
    session = registry.session("warm", "shop")
    said = [sentence async for sentence in session.stream("Hello? Yes, hi.")]
    request = session.completion_request(registry.agents["triage"])
    await provider.warm(request)
    session.dispose()
    await provider.aclose()
    assert request.messages[-1].role == "assistant" and said, said  # the shape that was refused
    # The session's own warm read (after the question) and this one: each accepted, none refused.
    prefills = [r.getMessage().split()[0] for r in caplog.records if "local_llm_prefill" in r.getMessage()]
    assert prefills and set(prefills) == {"event=local_llm_prefilled"}, prefills


@pytest.mark.llm
async def test_a_warm_read_is_skipped_while_the_server_works_on_a_turn(local_05b: LocalServer, caplog) -> None:
    # A read beside a turn halves the speed of both, and a cancelled one goes on on the server: in the eval
    # such reads, piled up from one call into the next, pushed a turn onto a cold slot and past the timeout.
    provider = LocalProvider(local_05b, owns_server=False, timeout=60)
    caplog.set_level(logging.DEBUG, logger="swarm.providers.local")
    turn = provider.stream(request("Count from one to thirty in words, please."))
    assert isinstance(await anext(turn), Delta)  # the server is writing the turn's reply
    started = time.monotonic()
    await provider.warm(request("Say hello to Anna.", "And to Bob."))
    skipped_after = time.monotonic() - started
    assert isinstance([item async for item in turn][-1], Completion)
    await provider.warm(request("Say hello to Anna.", "And to Bob."))  # the server is idle now: read
    await provider.aclose()
    logged = [r.getMessage().split()[0] for r in caplog.records if "local_llm_" in r.getMessage()]
    assert skipped_after < 0.5, skipped_after
    assert [e for e in logged if e in ("event=local_llm_warm_skipped", "event=local_llm_prefilled")] == [
        "event=local_llm_warm_skipped",
        "event=local_llm_prefilled",
    ], logged


@pytest.mark.llm
async def test_another_calls_turn_stops_a_warm_read_and_the_same_calls_does_not(local_05b: LocalServer, caplog) -> None:
    provider = LocalProvider(local_05b, owns_server=False, timeout=60)
    caplog.set_level(logging.DEBUG, logger="swarm.providers.local")
    history = "The caller asked about kettles, toasters, lamps and cables, and their delivery. " * 40

    def long_read(client: str) -> CompletionRequest:
        return CompletionRequest("triage", client, (Message("system", f"{client}: {history}"), Message("user", "")))

    outcomes = []
    for turn_client in ("other-call", "same-call"):
        read = asyncio.ensure_future(provider.warm(long_read("same-call")))
        await asyncio.sleep(0.5)  # the server is reading it
        turn = provider.stream(replace(request("Say hello."), client_id=turn_client))
        await anext(turn)
        outcomes.append(read.done())
        assert isinstance([item async for item in turn][-1], Completion)
        await read  # never raises: a stopped read only cost time
    await provider.aclose()
    logged = [r.getMessage().split()[0] for r in caplog.records if "local_llm_warm" in r.getMessage()]
    # Stopped when the other call's turn began (done before its first word); the same call's read went on.
    assert outcomes[0] and logged.count("event=local_llm_warm_stopped") == 1, (outcomes, logged)


@pytest.mark.llm
async def test_each_agents_turns_and_reads_go_to_its_own_slot(local_05b: LocalServer, caplog) -> None:
    # Left to choose, the server gave a turn that came 10 ms after its agent's read (the slot not yet free)
    # another agent's slot, and the turn read its whole prompt cold.
    provider = LocalProvider(local_05b, owns_server=False, timeout=60, slots={"triage": 1, "sales": 0})
    caplog.set_level(logging.DEBUG, logger="swarm.providers.local")
    await provider.warm(request("Say hello."))  # triage's
    for agent in ("triage", "sales", "refund"):
        assert isinstance(await collect(provider, replace(request("Say hello."), agent=agent)), Completion)
    await provider.aclose()
    chosen = [r.getMessage().split("selected slot by ")[1] for r in caplog.records if "selected slot" in r.getMessage()]
    pinned = [c for c in chosen if c.startswith("id ")]
    # A request the client sent twice (a kept-alive connection the server had closed) is chosen twice: one run in 4.
    runs = [c for i, c in enumerate(pinned) if i == 0 or c != pinned[i - 1]]
    assert runs == ["id (1)", "id (0)"] and pinned.count("id (1)") >= 2, chosen
    assert len(chosen) > len(pinned), chosen  # refund's: the server's pick


def test_each_call_keeps_a_lane_and_a_new_call_takes_the_one_used_least_recently() -> None:
    provider = LocalProvider(LocalServer(ServerSpec(Path("m.gguf"))), slots={"triage": 0, "sales": 1}, lanes=2)

    def slot(agent: str, call: str) -> int:
        return provider._slot(CompletionRequest(agent, call, ()))["id_slot"]

    assert [slot("triage", "a"), slot("triage", "b"), slot("sales", "a"), slot("sales", "b")] == [0, 2, 1, 3]
    slot("triage", "b")  # b goes on; a has hung up
    assert slot("triage", "c") == 0  # lane 0 was used least recently
    assert slot("sales", "b") == 3 and slot("sales", "c") == 1  # each call still on its own


@pytest.mark.llm
async def test_two_calls_with_one_agent_are_decoded_together(local_05b: LocalServer, caplog) -> None:
    # One slot per agent made the second caller's reply wait for the whole of the first's.
    provider = LocalProvider(local_05b, owns_server=False, timeout=60, slots={"sales": 0}, lanes=2)
    caplog.set_level(logging.DEBUG, logger="swarm.providers.local")
    counting = replace(request("Count from one to twenty in words, please."), agent="sales")
    first = provider.stream(replace(counting, client_id="call-1"))
    assert isinstance(await anext(first), Delta)  # the first call's reply is being written
    second = await collect(provider, replace(counting, client_id="call-2"))
    first_done = [item async for item in first][-1]
    await provider.aclose()
    chosen = [r.getMessage().split("selected slot by ")[1] for r in caplog.records if "selected slot" in r.getMessage()]
    assert isinstance(second, Completion) and isinstance(first_done, Completion)
    assert sorted(set(chosen)) == ["id (0)", "id (1)"], chosen  # (a request sent again is chosen again)


@pytest.mark.llm
async def test_a_prompt_prefilled_once_serves_every_lane() -> None:
    # A request pinned to an empty slot reads its whole prompt (llama.cpp skips its RAM cache there): the first
    # lane's slot is read, the others' are copies of it.
    if missing := missing_local_model("qwen2.5-coder-0.5b"):
        pytest.skip(missing)
    server = local_server("qwen2.5-coder-0.5b", threads=2, ctx=2048, parallel=2)
    provider = LocalProvider(server, timeout=60, slots={"sales": 0}, lanes=2)
    prompt = "You sell kettles, toasters and lamps, and you answer in one short sentence. " * 30
    asked = CompletionRequest("sales", "prefill", (Message("system", prompt), Message("user", "Hello.")))
    try:
        await provider.prefill(asked)
        first = await collect(provider, replace(asked, client_id="call-1"))
        second = await collect(provider, replace(asked, client_id="call-2"))
    finally:
        await provider.aclose()
    assert isinstance(first, Completion) and isinstance(second, Completion)
    assert first.timings and second.timings, (first.timings, second.timings)
    assert second.timings["cache_n"] > 400 and second.timings["prompt_n"] < 10, second.timings


def test_a_warm_read_ends_where_the_callers_words_go() -> None:
    spoken = CompletionRequest("triage", "t", (Message("system", "S"), Message("assistant", "Buy or return?")))
    assert ahead_of_the_caller(spoken).messages[-1] == Message("user", "")
    asked = CompletionRequest("triage", "t", (Message("system", "S"), Message("user", "Hi")))
    assert ahead_of_the_caller(asked) is asked


def test_prompts_are_read_in_small_chunks_so_a_cancelled_read_frees_the_server_soon() -> None:
    from swarm.providers import llama_server

    params = llama_server.params_of(llama_server.parse(ServerSpec(Path("m.gguf")).argv()[3:]))
    assert (params.n_batch, params.n_ubatch) == (64, 64)  # llama.cpp's own default is 2,048
    params = llama_server.params_of(llama_server.parse(ServerSpec(Path("m.gguf"), batch=256).argv()[3:]))
    assert params.n_batch == 256


def test_speculation_reaches_llama_cpp_as_its_server_would_take_it() -> None:
    from swarm.providers import llama_server

    def params(spec: ServerSpec) -> Any:
        return llama_server.params_of(llama_server.parse(spec.argv()[3:]))

    plain = params(ServerSpec(Path("m.gguf")))
    assert [t.name for t in plain.speculative.types] == ["COMMON_SPECULATIVE_TYPE_NONE"]
    ngram = params(ServerSpec(Path("m.gguf"), spec_type="ngram-map-k", spec_n=4, spec_m=16))
    assert [t.name for t in ngram.speculative.types] == ["COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K"]
    assert (ngram.speculative.ngram_map_k.size_n, ngram.speculative.ngram_map_k.size_m) == (4, 16)
    draft = params(ServerSpec(Path("m.gguf"), threads=1, batch_threads=2, draft_model=Path("d.gguf"), draft_max=4))
    assert [t.name for t in draft.speculative.types] == ["COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE"]
    assert (draft.speculative.draft.mparams.path, draft.speculative.draft.n_max) == ("d.gguf", 4)
    assert (draft.speculative.draft.cpuparams.n_threads, draft.speculative.draft.cpuparams_batch.n_threads) == (1, 2)
