"""Shared fixtures: the real local LLM (llama.cpp's server with a packaged Qwen2.5 model), one per test session.

    @pytest.mark.llm
    async def test_something(local_05b: LocalServer) -> None:
        provider = LocalProvider(local_05b, owns_server=False)
        ...

`local_05b` (Qwen2.5-Coder-0.5B: loads in ~1 s, for plumbing) and `local_15b` (1.5B: for behaviour) start
their server on first use and stop it at the end of the session; a test that kills the server gets it back
from the next `LocalProvider` turn (or `server.start()`). They skip when the runtime or the model packages
are not installed, so mark their tests `llm` (selected in CI; `-m "not llm"` leaves them out).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from callcenter.local_model import local_server, missing_local_model
from swarm.providers.local import LocalServer

# Fixtures every test module may use without importing them (an import would shadow the fixture by name):
# real peers and our own endpoint and SIP peer (peers), TLS certificates (certs), Kamailio (kamailio), the
# throw-away PostgreSQL cluster and `database_url` for each storage test on SQLite and PostgreSQL (postgres),
# the VAD model and phone-path voices (speech_fixtures), a fake OpenAI-compatible server (fake_openai), and the
# testbed's `agent_under_test`, as a call centre's own tests get it from the plugin.
pytest_plugins = [
    "harness.peers",
    "harness.certs",
    "harness.kamailio",
    "harness.postgres",
    "harness.oscar",
    "tests.speech_fixtures",
    "tests.fake_openai",
    "callcenter.testbed.pytest_plugin",
]


def _server(model: str) -> Iterator[LocalServer]:
    missing = missing_local_model(model)
    if missing:
        pytest.skip(missing)
    server = local_server(model, threads=2, ctx=4096)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def local_05b() -> Iterator[LocalServer]:
    yield from _server("qwen2.5-coder-0.5b")


@pytest.fixture(scope="session")
def local_15b() -> Iterator[LocalServer]:
    yield from _server("qwen2.5-coder-1.5b")


# --- tiers: `make test-fast` runs what is marked none of peers, models, slow (pyproject.toml's markers) ----------
# A test is marked by the fixtures it uses, else by its module (a module may be in several tiers); a few
# seconds-long tests inside fast modules carry their own @pytest.mark.slow or @pytest.mark.peers.
# sipp/baresip, PostgreSQL, Kamailio, django-oscar
PEER_FIXTURES = {"peers", "postgres", "start_kamailio", "oscar_shop"}
# The local LLM here; Silero VAD, Whisper and Piper, Piper's voice (tests/speech_fixtures.py). A module of fakes is
# fast by default, and a test in it that loads a model is tiered by the fixture, not the module by hand.
MODEL_FIXTURES = {"local_05b", "local_15b", "model", "speech", "piper"}
MODULE_TIERS = {
    # real SIP peers (sipp, baresip, Kamailio) or PostgreSQL, started by the test
    "test_dispatcher": ("peers", "models"),
    "test_drain": ("peers", "models"),  # our own dialer calls the voice server
    "test_echo_command": ("peers",),
    "test_kamailio": ("peers",),
    "test_oscar_call": ("peers", "models"),  # our own dialer calls the voice server selling through oscar
    "test_recordings_e2e": ("peers", "models"),  # our own dialer calls the voice server
    "test_sip_baresip": ("peers",),
    "test_sip_message_sipp": ("peers",),
    "test_sip_sipp": ("peers",),
    "test_sip_tcp_tls": ("peers",),
    "test_srtp_interop": ("peers",),
    "test_voice_e2e": ("peers", "models"),
    # Whisper, Piper, Silero VAD, Smart Turn or the local LLM. Not test_conversation or test_local_llm: their
    # fakes are the fast tier's, and a test of theirs that runs a model says so (a mark, a fixture above).
    "test_endpointer": ("models",),
    "test_language": ("models",),
    "test_models": ("models",),
    "test_synthesizer": ("models",),
    "test_transcriber": ("models",),
    "test_triage_classifier": ("models",),  # all-MiniLM-L6-v2: a second to load and embed its examples
    "test_turn": ("models",),
    "test_turn_echo": ("models",),
    # seconds each: real timers and pacing (SIP retransmissions, 20 ms audio), subprocesses, hypothesis runs
    "test_audiosocket": ("slow",),
    "test_cli": ("slow",),
    "test_rfc4475": ("slow",),
    "test_sip_endpoint": ("slow",),
    "test_sip_fuzz": ("slow",),
    "test_sip_registration": ("slow",),
    "test_sip_robustness": ("slow",),
    "test_sip_stream_transport": ("slow",),
    "test_sip_uas_rules": ("slow",),
}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out a module that `-m` deselects whole, rather than import it (the models' runtimes, hypothesis)
    and throw its tests away: a few seconds of `make test-fast`."""
    tiers = MODULE_TIERS.get(collection_path.stem)
    expression = config.getoption("markexpr", "")
    return True if tiers and expression and deselects_whole(expression, tiers) else None


def deselects_whole(expression: str, tiers: tuple[str, ...]) -> bool:
    """Whether `-m expression` selects no test of a module in these tiers, whatever other marks its tests have."""
    try:
        from _pytest.mark.expression import Expression  # pytest's own -m parser
    except ImportError:
        return False
    compiled = Expression.compile(expression)
    others = sorted(set(re.findall(r"[A-Za-z_][\w.]*", expression)) - {"and", "or", "not"} - set(tiers))
    for present in itertools.product((False, True), repeat=len(others)):
        marks = set(tiers) | {name for name, on in zip(others, present, strict=True) if on}

        def marked(name: str, /, **kwargs: str | int | bool | None) -> bool:  # pytest's ExpressionMatcher
            return name in marks  # noqa: B023 (called in this iteration only)

        if compiled.evaluate(marked):
            return False
    return True


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        module = getattr(item, "module", None)
        tiers = set(MODULE_TIERS.get(module.__name__.rpartition(".")[2], ())) if module is not None else set()
        if fixtures & PEER_FIXTURES:
            tiers.add("peers")
        if fixtures & MODEL_FIXTURES or item.get_closest_marker("llm"):
            tiers.add("models")  # the llm marker stays for `-m llm`; a real LLM is a model too
        for tier in sorted(tiers):
            item.add_marker(getattr(pytest.mark, tier))
