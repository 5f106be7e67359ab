"""`voiceswarm calls [ID]`: recent call records, or one call in full; `--play` / `--export FILE` its recording."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from callcenter.call_records import CallRecord, CallRecords
from callcenter.config import Config
from callcenter.store import parse_url


def register(commands: argparse._SubParsersAction) -> None:
    calls = commands.add_parser("calls", help="list recent calls, or show one")
    calls.add_argument("call_id", nargs="?", help="a call id (or its first characters)")
    calls.add_argument("--limit", type=int, default=20)
    calls.add_argument("--json", action="store_true", help="print JSON")
    calls.add_argument("--play", action="store_true", help="play the call's recording (with sox's `play`)")
    calls.add_argument("--export", metavar="FILE", help="write the call's recording to FILE (.wav; .flac with sox)")
    calls.set_defaults(run=run)


def run(args: argparse.Namespace, config: Config) -> int:
    url = parse_url(config.voice.calls_database)
    if url.dialect == "sqlite" and not Path(url.target).exists():
        print(f"voiceswarm calls: no call records yet at {url}", file=sys.stderr)
        return 1
    records = CallRecords(config.voice.calls_database, phone_region=config.callers.phone_region)
    try:
        if args.call_id is None:
            found = records.recent(args.limit)
            for each in found:
                print(json.dumps(_summary(each)) if args.json else _line(each))
            return 0
        record = records.get(args.call_id) or next(
            (r for r in records.recent(1000) if r.call_id.startswith(args.call_id)), None
        )
        if record is None:
            print(f"voiceswarm calls: no call {args.call_id!r}", file=sys.stderr)
            return 1
        if args.play or args.export:
            return _recording(record, args.export)
        print(json.dumps(record.__dict__, indent=2, ensure_ascii=False) if args.json else _full(record))
        return 0
    finally:
        records.close()


def _recording(record: CallRecord, export: str | None) -> int:
    path = Path(record.recording) if record.recording else None
    if path is None or not path.is_file():
        why = record.recording_error or (f"{path} is not on this machine" if path else "none was made")
        print(f"voiceswarm calls: call {record.call_id} has no recording here: {why}", file=sys.stderr)
        return 1
    if export:
        return _export(path, Path(export))
    play = shutil.which("play")
    if play is not None and subprocess.run([play, "-q", str(path)], check=False).returncode == 0:
        return 0
    print(
        f"{path}\n(a stereo WAV, 8 kHz: the caller on the left, the agent on the right; "
        f"{'sox could not play it here' if play else 'no sox here (apt-get install sox)'}: "
        "open it in any audio player or a browser, or copy it with --export FILE)"
    )
    return 0 if play is None else 1


def _export(source: Path, target: Path) -> int:
    """A copy of the WAV, or a FLAC of it (half the size) made by sox; never over an existing file."""
    suffix = target.suffix.lower()
    if suffix not in (".wav", ".flac"):
        print(f"voiceswarm calls: --export {target}: write a .wav or a .flac file", file=sys.stderr)
        return 1
    if target.exists():
        print(f"voiceswarm calls: --export {target}: the file exists; remove it or name another", file=sys.stderr)
        return 1
    if suffix == ".wav":
        shutil.copyfile(source, target)
    else:
        sox = shutil.which("sox")
        if sox is None:
            print(
                "voiceswarm calls: a .flac needs sox (apt-get install sox); --export to a .wav works without",
                file=sys.stderr,
            )
            return 1
        done = subprocess.run([sox, str(source), "-b", "16", str(target)], capture_output=True, text=True, check=False)
        if done.returncode:
            print(f"voiceswarm calls: sox could not write {target}: {done.stderr.strip()}", file=sys.stderr)
            return 1
    print(f"voiceswarm calls: wrote {target}")
    return 0


def _summary(record: CallRecord) -> dict:
    return {
        "call_id": record.call_id,
        "caller": record.caller,
        "started_at": record.started_at,
        "seconds": round(record.ended_at - record.started_at, 1),
        "disposition": record.disposition,
        "agents": record.agents,
        "orders": record.orders,
        "returns": record.returns,
    }


def _line(record: CallRecord) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started_at))
    seconds = record.ended_at - record.started_at
    extra = " ".join(f"order {o}" for o in record.orders) + " ".join(f"return {r}" for r in record.returns)
    return f"{when}  {record.call_id[:20]:<20}  {record.caller:<16} {seconds:6.1f}s  {record.disposition:<11} {' > '.join(record.agents)}  {extra}"


def _full(record: CallRecord) -> str:
    lines = [_line(record), f"end reason: {record.end_reason or '-'}"]
    if record.recording or record.recording_error:
        length = f" ({record.recording_seconds:.1f} s)" if record.recording_seconds is not None else ""
        lines.append(
            f"recording: {record.recording or '-'}{length}{'  ' + record.recording_error if record.recording_error else ''}"
        )
    for entry in record.transcript:
        lines.append(f"  {entry['who']:>6}: {entry['text']}")
    for call in record.tool_calls:
        lines.append(f"  tool {call['agent']}.{call['name']} {json.dumps(call['arguments'], ensure_ascii=False)}")
    for index, turn in enumerate(record.turns, 1):
        parts = ", ".join(f"{k} {v:.2f}" for k, v in turn.items() if v is not None)
        lines.append(f"  turn {index}: {parts}")
    return "\n".join(lines)
