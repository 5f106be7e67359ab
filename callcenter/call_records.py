"""Call detail records, one row per call, and each call's session events, on SQLite or PostgreSQL.

A record is written once, when the call ends, by a writer thread of its own: `save` only queues it, so the
event loop that paces every call's RTP never waits for a disk or a database server (a synchronous SQLite
write took 6 ms median, 23 ms worst there). With PostgreSQL the records of every node are in one place, and
so are the session events: a caller who calls back can be found from any node (`calls_from`; no agent reads it yet).
Calls are found by the caller's whole number in E.164, as the shop finds customers (callcenter.store.phones): never
by its last digits, which other countries' numbers share (issue 29).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from callcenter.store import Database, Migration, migrate, open_database
from callcenter.store.database import Connection
from callcenter.store.phones import customer_key
from callcenter.verification import MASKED_ANSWER, VERIFYING_TOOLS, attempts
from swarm import AgentChanged, Event, ToolCalled, event_from_dict

log = logging.getLogger(__name__)

DISPOSITIONS = ("completed", "transferred", "abandoned", "failed")
# A writer that cannot keep up is a broken database, not a busy one: close() waits this long for it.
CLOSE_TIMEOUT_S = 30.0

_CALLS_1 = """
CREATE TABLE IF NOT EXISTS calls (
    call_id TEXT PRIMARY KEY,
    caller TEXT NOT NULL,
    called TEXT NOT NULL,
    started_at {real} NOT NULL,
    answered_at {real},
    ended_at {real} NOT NULL,
    disposition TEXT NOT NULL CHECK (disposition IN ('completed', 'transferred', 'abandoned', 'failed')),
    end_reason TEXT,
    agents TEXT NOT NULL,       -- JSON list, in the order visited
    tool_calls TEXT NOT NULL,   -- JSON list of {{agent, name, arguments, result}}
    orders TEXT NOT NULL,       -- JSON list of order numbers created
    returns TEXT NOT NULL,      -- JSON list of return numbers created
    turns TEXT NOT NULL,        -- JSON list of per-turn latencies
    transcript TEXT NOT NULL,   -- JSON list of {{at, who, text}}
    recording TEXT              -- path of the WAV recording, if recording is on
);
CREATE INDEX IF NOT EXISTS calls_started ON calls (started_at);
"""
# The caller's phone key and the session's events, one row each. The key was the number's last nine digits; it is
# the whole number in E.164 now (callcenter.store.phones), old rows re-keyed on opening (_rekey_calls).
_CALLS_2 = """
ALTER TABLE calls ADD COLUMN caller_key TEXT;
ALTER TABLE calls ADD COLUMN node TEXT;
CREATE INDEX calls_by_caller ON calls (caller_key, started_at);
CREATE TABLE session_events (
    call_id TEXT NOT NULL REFERENCES calls (call_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,        -- JSON of swarm.events.Event.to_dict()
    PRIMARY KEY (call_id, seq)
);
"""
# The recording's length, and why there is none (or no longer one: "deleted by retention ...").
_CALLS_3 = """
ALTER TABLE calls ADD COLUMN recording_seconds {real};
ALTER TABLE calls ADD COLUMN recording_error TEXT;
"""
# The caller's answers to the security question and their outcomes (issue 29), masked: a JSON list of
# {turn, tool, order_number, outcome, answer}.
_CALLS_4 = """
ALTER TABLE calls ADD COLUMN verifications TEXT NOT NULL DEFAULT '[]';
"""
MIGRATIONS = (
    Migration(1, _CALLS_1.format(real="REAL"), _CALLS_1.format(real="DOUBLE PRECISION")),
    Migration(2, _CALLS_2, _CALLS_2),
    Migration(3, _CALLS_3.format(real="REAL"), _CALLS_3.format(real="DOUBLE PRECISION")),
    Migration(4, _CALLS_4, _CALLS_4),
)
COMPONENT = "calls"


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
    recording: str | None = None  # the WAV's absolute path (callcenter/recordings.py)
    recording_seconds: float | None = None
    recording_error: str | None = None  # why there is no recording, or why it stops short
    node: str | None = None  # which VoiceSwarm node served the call
    # The answers to the security question and their outcomes (callcenter.verification.attempts): never the answer.
    verifications: list[dict[str, Any]] = field(default_factory=list)
    # The session's events (Event.to_dict()), kept in session_events rather than in the calls row.
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def add_session_events(self, default_agent: str, events: list[Event]) -> None:
        """Agents visited, tool calls, the orders and returns the tools created and the verifications, from the
        session's events. The caller's answer to the security question is masked in the tool calls: a record that
        held the factor would hand it to whoever reads the records."""
        self.events = [event.to_dict() for event in events]
        self.agents = [default_agent] + [e.agent for e in events if isinstance(e, AgentChanged)]
        self.verifications = attempts(events)
        for event in events:
            if not isinstance(event, ToolCalled):
                continue
            arguments = event.arguments
            if event.name in VERIFYING_TOOLS and arguments.get("verification"):
                arguments = {**arguments, "verification": MASKED_ANSWER}
            self.tool_calls.append(
                {"agent": event.agent, "name": event.name, "arguments": arguments, "result": event.result}
            )
            result = _json(event.result)
            if isinstance(result, dict) and "order_number" in result and event.name == "place_order":
                self.orders.append(str(result["order_number"]))
            if isinstance(result, dict) and "return_number" in result:
                self.returns.append(str(result["return_number"]))


_JSON_COLUMNS = ("agents", "tool_calls", "orders", "returns", "turns", "transcript", "verifications")
_NOT_COLUMNS = ("events",)


class CallRecords:
    """The call records at a URL or plain path (a plain path is a SQLite file); `node` names this node's rows.
    With `redaction` (e.g. callcenter.redact.redact), what the caller and the agents said is stored through it:
    the transcript, the tool calls' arguments and results, the session events' texts. Callers' numbers in a
    national form ("030 555555") are read in `phone_region` (callers.phone_region, as the shop reads them)."""

    def __init__(
        self,
        path: str | Path,
        *,
        node: str | None = None,
        database: Database | None = None,
        redaction: Callable[[str], str] | None = None,
        phone_region: str = "DE",
    ) -> None:
        self._db = database or open_database(path, pool_size=2)
        self.node = node
        self.redaction = redaction
        self.phone_region = phone_region
        try:
            migrate(self._db, COMPONENT, MIGRATIONS, then=lambda conn: _rekey_calls(conn, phone_region))
        except BaseException:
            self._db.close()
            raise
        self._queue: queue.Queue[CallRecord | None] = queue.Queue()
        self._writer = threading.Thread(target=self._write_queued, name="call-records", daemon=True)
        self._writer.start()

    @property
    def database(self) -> Database:
        return self._db

    def save(self, record: CallRecord) -> None:
        """Queue the record for the writer thread; returns at once. Raises ValueError for a bad disposition."""
        if record.disposition not in DISPOSITIONS:
            raise ValueError(f"disposition {record.disposition!r} is not one of {DISPOSITIONS}")
        if record.node is None:
            record.node = self.node
        self._queue.put(record)

    def flush(self) -> None:
        """Wait until every queued record is written (or has failed, which is logged)."""
        self._queue.join()

    def write(self, record: CallRecord) -> None:
        """Write the record and its session events now, in one transaction (what the writer thread does)."""
        caller_key = customer_key(record.caller, self.phone_region) or None
        if self.redaction is not None:
            record = redacted(record, self.redaction)
        row = {k: v for k, v in asdict(record).items() if k not in _NOT_COLUMNS}
        for column in _JSON_COLUMNS:
            row[column] = json.dumps(row[column], ensure_ascii=False)
        row["caller_key"] = caller_key
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"{name} = excluded.{name}" for name in row if name != "call_id")

        def insert(conn: Connection) -> None:
            conn.execute(
                f"INSERT INTO calls ({names}) VALUES ({marks}) ON CONFLICT (call_id) DO UPDATE SET {updates}",
                list(row.values()),
            )
            conn.execute("DELETE FROM session_events WHERE call_id = ?", (record.call_id,))
            if record.events:
                conn.executemany(
                    "INSERT INTO session_events (call_id, seq, event) VALUES (?, ?, ?)",
                    [
                        (record.call_id, seq, json.dumps(event, ensure_ascii=False))
                        for seq, event in enumerate(record.events)
                    ],
                )

        self._db.write(insert)

    def recent(self, limit: int = 20) -> list[CallRecord]:
        self.flush()  # read your own writes
        rows = self._db.read(lambda conn: conn.all("SELECT * FROM calls ORDER BY started_at DESC LIMIT ?", (limit,)))
        return [_record(row) for row in rows]

    def get(self, call_id: str) -> CallRecord | None:
        self.flush()
        row = self._db.read(lambda conn: conn.one("SELECT * FROM calls WHERE call_id = ?", (call_id,)))
        return _record(row) if row else None

    def calls_from(self, caller: str, limit: int = 5) -> list[CallRecord]:
        """The caller's earlier calls on any node, newest first, however the number was written: the whole number,
        never a number of another country that ends in the same digits."""
        key = customer_key(caller, self.phone_region)
        if not key:
            return []
        self.flush()
        rows = self._db.read(
            lambda conn: conn.all(
                "SELECT * FROM calls WHERE caller_key = ? ORDER BY started_at DESC LIMIT ?", (key, limit)
            )
        )
        return [_record(row) for row in rows]

    def search(
        self,
        number: str = "",
        since: float | None = None,
        until: float | None = None,
        disposition: str = "",
        limit: int = 50,
    ) -> list[CallRecord]:
        """Calls newest first: by the caller's whole number (any spelling: E.164, 00, or national in the region),
        started in [since, until), with a disposition. Raises ValueError for an unknown disposition or a number
        that is no whole phone number (its last digits alone would find other countries' callers too)."""
        if disposition and disposition not in DISPOSITIONS:
            raise ValueError(f"disposition {disposition!r} is not one of {', '.join(DISPOSITIONS)}")
        where: list[str] = []
        params: list[object] = []
        key = customer_key(number, self.phone_region)
        if number.strip() and not key:
            raise ValueError(
                f"number {number!r} is not a whole phone number; give it with its country code (+44 20 7946 0321)"
                f" or as dialled in {self.phone_region}"
            )
        if key:
            where.append("caller_key = ?")
            params.append(key)
        for clause, value in (
            ("started_at >= ?", since),
            ("started_at < ?", until),
            ("disposition = ?", disposition or None),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        params.append(max(1, min(int(limit), 200)))
        matching = f"WHERE {' AND '.join(where)}" if where else ""
        self.flush()
        rows = self._db.read(
            lambda conn: conn.all(f"SELECT * FROM calls {matching} ORDER BY started_at DESC LIMIT ?", params)
        )
        return [_record(row) for row in rows]

    def session_events(self, call_id: str) -> list[Event]:
        """What happened in the call's session, in order: enough to replay it."""
        self.flush()
        rows = self._db.read(
            lambda conn: conn.all("SELECT event FROM session_events WHERE call_id = ? ORDER BY seq", (call_id,))
        )
        return [event_from_dict(json.loads(row["event"])) for row in rows]

    def recordings_deleted(self, paths: list[str], reason: str) -> int:
        """Say in the records of these recordings why they are gone (retention); returns how many records."""
        self.flush()

        def update(conn: Connection) -> int:
            changed = 0
            for start in range(0, len(paths), 500):  # well under SQLite's limit of bound parameters
                batch = paths[start : start + 500]
                marks = ", ".join("?" * len(batch))
                cursor = conn.execute(
                    f"UPDATE calls SET recording_error = ? WHERE recording IN ({marks})", [reason, *batch]
                )
                changed += max(cursor.rowcount, 0)
            return changed

        return self._db.write(update)

    def close(self) -> None:
        self._queue.put(None)
        self._writer.join(CLOSE_TIMEOUT_S)
        if self._writer.is_alive():
            log.error("event=call_records_unwritten pending=%d", self._queue.qsize())
        self._db.close()

    def _write_queued(self) -> None:
        while True:
            record = self._queue.get()
            try:
                if record is None:
                    return
                self.write(record)
            except Exception:
                # One broken record must not stop the records of every later call.
                log.exception("event=call_record_failed call=%s", record.call_id if record else "")
            finally:
                self._queue.task_done()


def _rekey_calls(conn: Connection, region: str) -> None:
    # Rows written before whole-number keys hold the number's last nine digits; a whole-number key starts with "+"
    # (or is NULL), so only old rows are selected, once. A range rather than LIKE '+%' (whose % psycopg reads as a
    # placeholder) or substr: the index on caller_key finds them, and opening stays cheap on a long call log.
    rows = conn.all("SELECT call_id, caller FROM calls WHERE caller_key < '+' OR caller_key >= ','")
    conn.executemany(
        "UPDATE calls SET caller_key = ? WHERE call_id = ?",
        [(customer_key(row["caller"], region) or None, row["call_id"]) for row in rows],
    )


def redacted(record: CallRecord, redact: Callable[[str], str]) -> CallRecord:
    """A copy with the spoken and typed texts through `redact`. The caller's number stays: it is what a call
    record is found by, as in any PBX's call log."""

    def tool_call(call: dict[str, Any]) -> dict[str, Any]:
        return {
            **call,
            "arguments": redact_values(call.get("arguments"), redact),
            "result": _redact_result(call.get("result"), redact),
        }

    def event(data: dict[str, Any]) -> dict[str, Any]:
        data = {**data, **{key: redact(data[key]) for key in ("text", "detail") if isinstance(data.get(key), str)}}
        if "arguments" in data:
            data["arguments"] = redact_values(data["arguments"], redact)
        if "result" in data:
            data["result"] = _redact_result(data["result"], redact)
        return data

    return replace(
        record,
        transcript=[
            {**line, "text": redact(line["text"])} if isinstance(line.get("text"), str) else line
            for line in record.transcript
        ],
        tool_calls=[tool_call(call) for call in record.tool_calls],
        events=[event(e) for e in record.events],
    )


def redact_values(value: Any, redact: Callable[[str], str]) -> Any:
    """Every string in a JSON-like value through `redact`; numbers and keys as they were."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_values(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_values(item, redact) for item in value]
    return value


def _redact_result(result: Any, redact: Callable[[str], str]) -> Any:
    # A tool's result is JSON text: its strings are redacted, so that it stays JSON.
    parsed = _json(result) if isinstance(result, str) else None
    if parsed is None:
        return redact_values(result, redact)
    return json.dumps(redact_values(parsed, redact), ensure_ascii=False)


def _record(row: Any) -> CallRecord:
    values = dict(row)
    values.pop("caller_key", None)
    for column in _JSON_COLUMNS:
        values[column] = json.loads(values[column])
    return CallRecord(**values)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
