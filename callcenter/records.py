"""Call detail records: one row per call in SQLite, written once when the call ends."""
from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from swarm.events import AgentChanged, Event, ToolCalled

DISPOSITIONS = ("completed", "transferred", "abandoned", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    call_id TEXT PRIMARY KEY,
    caller TEXT NOT NULL,
    called TEXT NOT NULL,
    started_at REAL NOT NULL,
    answered_at REAL,
    ended_at REAL NOT NULL,
    disposition TEXT NOT NULL CHECK (disposition IN ('completed', 'transferred', 'abandoned', 'failed')),
    end_reason TEXT,
    agents TEXT NOT NULL,       -- JSON list, in the order visited
    tool_calls TEXT NOT NULL,   -- JSON list of {agent, name, arguments, result}
    orders TEXT NOT NULL,       -- JSON list of order numbers created
    returns TEXT NOT NULL,      -- JSON list of return numbers created
    turns TEXT NOT NULL,        -- JSON list of per-turn latencies
    transcript TEXT NOT NULL,   -- JSON list of {at, who, text}
    recording TEXT              -- path of the WAV recording, if recording is on
);
CREATE INDEX IF NOT EXISTS calls_started ON calls (started_at);
"""


@dataclass
class CallRecord:
    call_id: str
    caller: str
    called: str
    started_at: float
    ended_at: float
    disposition: str
    answered_at: float | None = None
    end_reason: str | None = None
    agents: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    orders: list[str] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    recording: str | None = None

    def add_session_events(self, default_agent: str, events: list[Event]) -> None:
        """Agents visited, tool calls, and the orders and returns the tools created, from the session's events."""
        self.agents = [default_agent] + [e.agent for e in events if isinstance(e, AgentChanged)]
        for event in events:
            if not isinstance(event, ToolCalled):
                continue
            self.tool_calls.append({"agent": event.agent, "name": event.name, "arguments": event.arguments, "result": event.result})
            result = _json(event.result)
            if isinstance(result, dict) and "order_number" in result and event.name == "place_order":
                self.orders.append(str(result["order_number"]))
            if isinstance(result, dict) and "return_number" in result:
                self.returns.append(str(result["return_number"]))


_JSON_COLUMNS = ("agents", "tool_calls", "orders", "returns", "turns", "transcript")


class CallRecords:
    def __init__(self, path: str | Path) -> None:
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock:
            self._conn.executescript(_SCHEMA)

    def save(self, record: CallRecord) -> None:
        if record.disposition not in DISPOSITIONS:
            raise ValueError(f"disposition {record.disposition!r} is not one of {DISPOSITIONS}")
        row = asdict(record)
        for column in _JSON_COLUMNS:
            row[column] = json.dumps(row[column], ensure_ascii=False)
        names = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        with self._lock:
            self._conn.execute(f"INSERT OR REPLACE INTO calls ({names}) VALUES ({marks})", row)

    def recent(self, limit: int = 20) -> list[CallRecord]:
        with self._lock:
            rows = self._conn.execute("SELECT * FROM calls ORDER BY started_at DESC LIMIT ?", (limit,)).fetchall()
        return [_record(row) for row in rows]

    def get(self, call_id: str) -> CallRecord | None:
        with self._lock:
            row = self._conn.execute("SELECT * FROM calls WHERE call_id = ?", (call_id,)).fetchone()
        return _record(row) if row else None

    def close(self) -> None:
        self._conn.close()


def _record(row: sqlite3.Row) -> CallRecord:
    values = dict(row)
    for column in _JSON_COLUMNS:
        values[column] = json.loads(values[column])
    return CallRecord(**values)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
