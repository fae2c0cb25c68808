"""The lines of `offsets.jsonl`: one `__consumer_offsets` record per JSON line, as in
tests/fixtures/real-kafka-4.0/*/offsets.jsonl:

    {"topic": "__consumer_offsets", "partition": 25, "offset": 1, "timestamp": 1795241073518,
     "timestamp_type": 1, "key": "<base64>", "value": "<base64>" | null}

`value` null is a tombstone. `key` and `value` are strict base64 (`b64_field`) for every reader.
Readers differ in what else they forgive, each as it always has:
- `parse_capture_line` (`groupscope decode`): partition and offset must be integers, the rest may
  be missing;
- `record_fields` (the replay source): any number-like partition, offset and timestamp, all three
  needed; a null key is kept;
- `collectors.capture.evidence.offsets_line_to_evidence` (`groupscope model`): from a parsed object.
Reading is streamed, one line at a time.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import overload

from collectors.capture.files import numbered_lines

OFFSETS_TOPIC = "__consumer_offsets"


@overload
def b64_field(value: str) -> bytes: ...
@overload
def b64_field(value: object) -> bytes | None: ...
def b64_field(value: object) -> bytes | None:
    """A `key` or `value` field: None (a tombstone's value) stays None, text is strict base64.
    Raises TypeError when it is neither, binascii.Error (a ValueError) when it is not base64."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"expected base64 text, got {type(value).__name__}")
    return binascii.a2b_base64(value, strict_mode=True)


class CaptureLineError(ValueError):
    """A line that is not a capture record. `partition`/`offset` are set when the line had them."""

    def __init__(self, message: str, partition: int | None = None, offset: int | None = None) -> None:
        super().__init__(message)
        self.partition = partition
        self.offset = offset


@dataclass(slots=True)
class CaptureLine:
    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None
    topic: str = OFFSETS_TOPIC
    timestamp_type: int = 1


def parse_capture_line(line: bytes | str) -> CaptureLine:
    """One capture line; raises CaptureLineError when it is not JSON or misses a field."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CaptureLineError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise CaptureLineError(f"not a JSON object: {type(obj).__name__}")
    partition = obj.get("partition")
    offset = obj.get("offset")
    p = partition if type(partition) is int else None
    o = offset if type(offset) is int else None
    if p is None or o is None:
        raise CaptureLineError("missing or non-integer partition/offset", p, o)
    key = obj.get("key")
    value = obj.get("value")
    if not isinstance(key, str):
        raise CaptureLineError("missing key (base64 string expected)", p, o)
    if value is not None and not isinstance(value, str):
        raise CaptureLineError("value must be a base64 string or null", p, o)
    try:
        key_bytes = b64_field(key)
        value_bytes = b64_field(value)
    except ValueError as exc:
        raise CaptureLineError(f"bad base64: {exc}", p, o) from None
    timestamp = obj.get("timestamp", -1)
    timestamp_type = obj.get("timestamp_type", 1)
    return CaptureLine(
        p,
        o,
        timestamp if type(timestamp) is int else -1,
        key_bytes,
        value_bytes,
        obj.get("topic", OFFSETS_TOPIC),
        timestamp_type if type(timestamp_type) is int else 1,
    )


def iter_capture_lines(
    lines: Iterable[bytes | str],
) -> Iterator[tuple[int, CaptureLine | CaptureLineError]]:
    """(line number, record) for each non-blank line, errors given in place (nothing stops the stream)."""
    for number, line in numbered_lines(lines):
        try:
            yield number, parse_capture_line(line)
        except CaptureLineError as exc:
            yield number, exc


def record_fields(line: bytes) -> tuple[int, int, int, bytes | None, bytes | None] | None:
    """(partition, offset, timestamp, key, value) of a line, as the replay source reads it; None when
    the line cannot be read so (the source then passes the raw line on, to become a dead letter)."""
    try:
        o = json.loads(line)
        return (
            int(o["partition"]),
            int(o["offset"]),
            int(o["timestamp"]),
            b64_field(o.get("key")),
            b64_field(o.get("value")),
        )
    except (ValueError, KeyError, TypeError):
        return None
