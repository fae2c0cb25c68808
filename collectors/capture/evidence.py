"""Read a capture folder (the files of a real-Kafka capture, or what the collector saved) into evidence.

`offsets.jsonl` lines are decoded with the codec, `broker.log` keeps only group-coordinator lines,
`describe.jsonl`, `end_offsets.jsonl` and `heartbeats.jsonl` are JSON lines. A line that cannot be
understood is counted and reported in `Capture.errors` (file, line number, message); it never stops
the rest of the folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collectors.capture.files import BROKER_LOG, OFFSETS_FILE, capture_files, folder_lines
from collectors.capture.offsets_lines import b64_field
from coordinator_model.evidence import (
    Evidence,
    EvidenceError,
    from_describe_json,
    from_end_offset_json,
    from_heartbeat_json,
    from_offsets_record,
    parse_broker_log_line,
)


@dataclass
class Capture:
    folder: Path
    evidence: list[Evidence] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, int, str]] = field(default_factory=list)
    skipped: int = 0  # lines that record a failed observation (an "error" instead of a value)


def _b64(value: Any) -> bytes | None:
    try:
        return b64_field(value)
    except TypeError as exc:
        raise EvidenceError(str(exc)) from exc
    except ValueError as exc:
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


_JSON_LINES: dict[str, Callable[[Any], Evidence]] = {
    OFFSETS_FILE: offsets_line_to_evidence,
    "describe.jsonl": from_describe_json,
    "end_offsets.jsonl": from_end_offset_json,
    "heartbeats.jsonl": from_heartbeat_json,
}


def _json_line(name: str, text: str, cap: Capture) -> Evidence | None:
    """The evidence of one JSON line, None for a refused observation; EvidenceError when unreadable."""
    try:
        obj = json.loads(text)
        if isinstance(obj, dict) and obj.get("error") and obj.get("end_offset", 0) is None:
            # the collector asked and the broker refused (e.g. NOT_LEADER): no observation
            cap.skipped += 1
            return None
        return _JSON_LINES[name](obj)
    except EvidenceError:
        raise
    except (TypeError, ValueError) as exc:  # not JSON, or not the object its file holds
        raise EvidenceError(str(exc)) from exc


def read_capture(folder: str | Path, without: tuple[str, ...] = ()) -> Capture:
    """Every evidence of a capture folder (unsorted; the engine sorts)."""
    folder = Path(folder)
    cap = Capture(folder, files=capture_files(folder, without))
    for name, number, raw in folder_lines(folder, without):
        text = raw.decode("utf-8", errors="replace")
        if not text.strip():  # blank as text too (only U+00A0, say): never evidence nor an error
            continue
        try:
            if name == BROKER_LOG:
                ev = parse_broker_log_line(text)  # None: not a group-coordinator line
            else:
                ev = _json_line(name, text, cap)
        except EvidenceError as exc:
            cap.errors.append((name, number, str(exc)[:200]))
            continue
        if ev is not None:
            cap.evidence.append(ev)
    return cap
