"""The real `voiceswarm` console script, run as a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from callcenter.call import VoiceSettings
from harness.fake_ollama import FakeOllama

TIMEOUT = 30.0


def voiceswarm() -> str:
    beside = Path(sys.executable).parent / "voiceswarm"
    found = str(beside) if beside.exists() else shutil.which("voiceswarm")
    assert found, "the voiceswarm console script is not installed"
    return found


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def environment(tmp_path: Path, ollama_host: str | None = None, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VOICESWARM_", "OLLAMA_", "OPENAI_")) and "proxy" not in k.lower()
    }
    env["VOICESWARM_DB"] = str(tmp_path / "var" / "shop.db")
    env["OLLAMA_HOST"] = ollama_host or f"http://127.0.0.1:{closed_port()}"
    return {**env, **extra}


def run(
    tmp_path: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [voiceswarm(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
        env=env or environment(tmp_path),
    )


def chat(tmp_path: Path, *lines: str) -> list[dict[str, Any]]:
    done = run(tmp_path, "chat", "--llm", "offline", "--json", stdin="".join(f"{line}\n" for line in lines))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def rows(db: Path, table: str) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(f"SELECT * FROM {table}").fetchall()


def test_chat_json_prints_one_event_per_line(tmp_path: Path) -> None:
    events = chat(tmp_path, "I'd like to buy a new phone charger.")
    assert events[0]["event"] == "llm" and events[0]["llm"].startswith("offline router")
    assert {"event": "agent_change", "from": "triage", "to": "sales"} in events
    search = [e for e in events if e["event"] == "tool_call" and e["name"] == "search_products"]
    assert len(search) == 1 and "charger" in search[0]["arguments"]["query"]
    assert search[0]["agent"] == "sales"
    replies = [e for e in events if e["event"] == "reply"]
    assert replies and "charger" in replies[-1]["text"].lower()
    assert {e["event"] for e in events} <= {"llm", "agent_change", "tool_call", "reply"}


def test_chat_buy_path_places_an_order(tmp_path: Path) -> None:
    events = chat(tmp_path, "I'd like to buy a new phone charger.", "yes")
    placed = [e for e in events if e["event"] == "tool_call" and e["name"] == "place_order"]
    assert len(placed) == 1 and placed[0]["arguments"]["confirmed"] is True
    order_number = json.loads(placed[0]["result"])["order_number"]
    db = tmp_path / "var" / "shop.db"
    orders = rows(db, "orders")
    assert [o["order_number"] for o in orders] == [order_number]
    assert [line["sku"] for line in rows(db, "order_lines")] == ["CH-110"]


def test_chat_person_request_ends_with_transfer(tmp_path: Path) -> None:
    events = chat(tmp_path, "Can I speak to a person please?", "I'd like to buy a new phone charger.")
    assert events[-1]["event"] == "transfer" and events[-1]["reason"]
    # The chat stops at the transfer: the second line is never handled.
    assert not any(e["event"] == "tool_call" and e["name"] == "search_products" for e in events)
    assert [e["name"] for e in events if e["event"] == "tool_call"] == ["transfer_to_operator"]


def test_chat_goodbye_ends_the_chat(tmp_path: Path) -> None:
    events = chat(tmp_path, "No thanks, that's all. Goodbye!", "I'd like to buy a new phone charger.")
    assert events[-1] == {"event": "end", "reason": "goodbye"}
    # The agent ended the call: the second line is never handled.
    assert [e["name"] for e in events if e["event"] == "tool_call"] == ["end_call"]


def test_chat_without_input_prints_only_the_llm(tmp_path: Path) -> None:
    assert [e["event"] for e in chat(tmp_path)] == ["llm"]


def test_chat_keys_follow_the_phones_call_rules(tmp_path: Path) -> None:
    # 0 is a person, as on the phone (callcenter.call.rules): the hand-over line, the transfer, no model turn.
    events = chat(tmp_path, "/keys 0", "I'd like to buy a new phone charger.")
    assert events[1:] == [
        {"event": "reply", "agent": "triage", "text": VoiceSettings.handover},
        {"event": "transfer", "reason": "caller_pressed_0"},
    ]


def test_chat_typed_digits_run_the_tool_that_asked_for_them(tmp_path: Path) -> None:
    events = chat(tmp_path, "Where is my order?", "/keys 1x", "/keys 10042#")
    assert {"event": "error", "error": "keys are 0-9, * and #: /keys 0"} in events
    found = [e["arguments"] for e in events if e["event"] == "tool_call" and e["name"] == "find_order"]
    assert len(found) == 2 and "order_number" not in found[0] and found[1]["order_number"] == "10042"


def test_config_prints_effective_config_with_environment(tmp_path: Path) -> None:
    host = "http://127.0.0.1:5999"
    done = run(
        tmp_path, "config", env=environment(tmp_path, host, VOICESWARM_HISTORY_SIZE="9", VOICESWARM_MODEL="tiny:1b")
    )
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    assert config["llm"]["host"] == host and config["llm"]["model"] == "tiny:1b"
    assert config["database"] == str(tmp_path / "var" / "shop.db")
    assert config["session"]["history_size"] == 9


def test_config_file_then_environment(tmp_path: Path) -> None:
    path = tmp_path / "vs.toml"
    path.write_text('[llm]\nmodel = "qwen3:8b"\n[llm.agents]\ntriage = "small-model"\n[session]\nhistory_size = 30\n')
    done = run(tmp_path, "--config", str(path), "config", env=environment(tmp_path, VOICESWARM_HISTORY_SIZE="11"))
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    assert config["llm"]["model"] == "qwen3:8b" and config["llm"]["agent_models"] == {"triage": "small-model"}
    assert config["session"]["history_size"] == 11


def test_config_check_with_no_server_exits_1_naming_the_host(tmp_path: Path) -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    done = run(tmp_path, "config", "--check", env=environment(tmp_path, host, VOICESWARM_LLM="ollama"))
    assert done.returncode == 1
    assert f"llm: no Ollama server answers at {host}" in done.stdout


def test_config_check_with_auto_and_no_ollama_is_ok_when_the_local_model_is_installed(tmp_path: Path) -> None:
    from callcenter.local_model import missing_local_model

    done = run(tmp_path, "config", "--check", env=environment(tmp_path))
    missing = missing_local_model("qwen2.5-coder-1.5b")
    assert done.returncode == (1 if missing else 0), done.stdout + done.stderr
    assert ("llm: OK" in done.stdout) == (missing is None)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[llm]\nmodle = "qwen3:4b"\n', "modle"),
        ('[pbx]\nhost = "x"\n', "pbx"),
        ("[llm\nmodel = 1\n", "bad.toml"),
        ('[llm]\nprovider = "gpt"\n', "llm.provider"),
    ],
)
def test_bad_config_file_exits_2_with_a_message(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    done = run(tmp_path, "--config", str(path), "config")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("voiceswarm: ") and named in done.stderr and "Traceback" not in done.stderr


def test_bad_environment_variable_exits_2(tmp_path: Path) -> None:
    done = run(tmp_path, "config", env=environment(tmp_path, VOICESWARM_HISTORY_SIZE="lots"))
    assert done.returncode == 2 and "VOICESWARM_HISTORY_SIZE" in done.stderr


async def run_async(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        voiceswarm(),
        *args,
        cwd=tmp_path,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(TIMEOUT):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, out.decode() + err.decode()


async def test_config_check_against_fake_ollama_with_the_model_exits_0(tmp_path: Path) -> None:
    async with FakeOllama([], models=("qwen3:4b",)) as server:
        code, output = await run_async(tmp_path, environment(tmp_path, server.url), "config", "--check")
    assert code == 0, output
    assert "llm: OK" in output


async def test_config_check_names_a_missing_agent_model(tmp_path: Path) -> None:
    path = tmp_path / "vs.toml"
    path.write_text('[llm.agents]\ntriage = "small-model"\n')
    async with FakeOllama([], models=("qwen3:4b",)) as server:
        code, output = await run_async(
            tmp_path, environment(tmp_path, server.url), "--config", str(path), "config", "--check"
        )
    assert code == 1
    assert "ollama pull small-model" in output
