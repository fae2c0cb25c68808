"""Read a capture folder (the files of a real-Kafka capture, or what the collector saved) into evidence.

Files, all optional: `offsets.jsonl` (raw `__consumer_offsets` records, key/value base64, decoded with
the codec), `broker.log` (server.log lines; only group-coordinator lines are kept), `heartbeats.jsonl`,
`describe.jsonl` and `end_offsets.jsonl`. A line that cannot be understood is counted and reported in
`Capture.errors` (file, line number, message); it never stops the rest of the folder.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator_model.evidence import (
    Evidence,
    EvidenceError,
    from_describe_json,
    from_end_offset_json,
    from_heartbeat_json,
    from_offsets_record,
    parse_broker_log_line,
)

CAPTURE_FILES = ("offsets.jsonl", "broker.log", "describe.jsonl", "end_offsets.jsonl", "heartbeats.jsonl")


@dataclass
class Capture:
    folder: Path
    evidence: list[Evidence] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, int, str]] = field(default_factory=list)
    skipped: int = 0  # lines that record a failed observation (an "error" instead of a value)


def _b64(value: Any) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise EvidenceError(f"expected base64 text, got {type(value).__name__}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EvidenceError(f"bad base64: {exc}") from exc


def offsets_line_to_evidence(obj: dict) -> Evidence:
    """One offsets.jsonl object (`partition`, `offset`, `timestamp`, `key`/`value` base64) -> evidence."""
    from collectors.codec.decoder import decode_record
    from collectors.codec.errors import DecodeError

    if not isinstance(obj, dict) or "key" not in obj:
        raise EvidenceError("offsets line must be an object with 'key' and 'value'")
    key = _b64(obj["key"])
    if key is None:
        raise EvidenceError("offsets line without a key")
    try:
        rec = decode_record(
            key,
            _b64(obj.get("value")),
            int(obj.get("partition", -1)),
            int(obj.get("offset", -1)),
            int(obj.get("timestamp", -1)),
        )
    except DecodeError as exc:
        raise EvidenceError(str(exc)) from exc
    return from_offsets_record(rec)


def _json_lines(path: Path, convert: Callable[[Any], Evidence], cap: Capture) -> Iterator[Evidence]:
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if isinstance(obj, dict) and obj.get("error") and obj.get("end_offset", 0) is None:
                    # the collector asked and the broker refused (e.g. NOT_LEADER): no observation
                    cap.skipped += 1
                    continue
                yield convert(obj)
            except (json.JSONDecodeError, EvidenceError, TypeError, ValueError) as exc:
                cap.errors.append((path.name, n, str(exc)[:200]))


def read_capture(folder: str | Path, without: tuple[str, ...] = ()) -> Capture:
    """Every evidence of a capture folder (unsorted; the engine sorts)."""
    folder = Path(folder)
    cap = Capture(folder)
    readers: dict[str, Callable[[Any], Evidence]] = {
        "offsets.jsonl": offsets_line_to_evidence,
        "describe.jsonl": from_describe_json,
        "end_offsets.jsonl": from_end_offset_json,
        "heartbeats.jsonl": from_heartbeat_json,
    }
    for name in CAPTURE_FILES:
        path = folder / name
        if name in without or not path.is_file():
            continue
        cap.files.append(name)
        if name == "broker.log":
            with path.open(encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    try:
                        ev = parse_broker_log_line(line)
                    except EvidenceError as exc:
                        cap.errors.append((name, n, str(exc)[:200]))
                        continue
                    if ev is not None:
                        cap.evidence.append(ev)
        else:
            cap.evidence.extend(_json_lines(path, readers[name], cap))
    return cap
