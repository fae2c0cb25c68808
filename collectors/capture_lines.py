"""Capture lines: one `__consumer_offsets` record per JSON line, as in
tests/fixtures/real-kafka-4.0/*/offsets.jsonl:

    {"topic": "__consumer_offsets", "partition": 25, "offset": 1, "timestamp": 1795241073518,
     "timestamp_type": 1, "key": "<base64>", "value": "<base64>" | null}

`value` null is a tombstone. Reading is streamed, one line at a time.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


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
    topic: str = "__consumer_offsets"
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
        key_bytes = binascii.a2b_base64(key, strict_mode=True)
        value_bytes = None if value is None else binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise CaptureLineError(f"bad base64: {exc}", p, o) from None
    timestamp = obj.get("timestamp", -1)
    timestamp_type = obj.get("timestamp_type", 1)
    return CaptureLine(
        p,
        o,
        timestamp if type(timestamp) is int else -1,
        key_bytes,
        value_bytes,
        obj.get("topic", "__consumer_offsets"),
        timestamp_type if type(timestamp_type) is int else 1,
    )


def iter_capture_lines(lines: Iterable[bytes | str]) -> Iterator[CaptureLine | CaptureLineError]:
    """Each non-blank line parsed, errors yielded in place (so nothing stops the stream)."""
    for line in lines:
        if not line.strip():
            continue
        try:
            yield parse_capture_line(line)
        except CaptureLineError as exc:
            yield exc
