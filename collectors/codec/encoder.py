"""Encode records back to `__consumer_offsets` bytes: the exact inverse of the decoder (tests,
the demo and the benchmarks produce records with it). Same schema table, generated writers."""

from __future__ import annotations

import struct

from collectors.codec import records as r
from collectors.codec import schema
from collectors.codec.compiler import COMPILER
from collectors.codec.errors import EncodeError

_H = struct.Struct(">h")

_KEY_WRITERS = {rt: COMPILER.writer(key.struct, rt, False) for rt, (key, _) in schema.RECORDS.items()}
_VALUE_WRITERS = {rt: COMPILER.message_writers(value) for rt, (_, value) in schema.RECORDS.items()}
_SUBSCRIPTION = COMPILER.message_writers(schema.CONSUMER_PROTOCOL_SUBSCRIPTION)
_ASSIGNMENT = COMPILER.message_writers(schema.CONSUMER_PROTOCOL_ASSIGNMENT)
_STICKY = COMPILER.message_writers(schema.STICKY_ASSIGNOR_USER_DATA)

# The version each value class is written in unless told otherwise (what Kafka 4.0 writes).
DEFAULT_VALUE_VERSION = {
    r.OFFSET_COMMIT: 3,
    r.OFFSET_COMMIT_LEGACY: 3,
    r.GROUP_METADATA: 3,
}


def encode_key(key: r.RecordKey, record_type: int | None = None) -> bytes:
    """Key bytes. `record_type` defaults from the class (OffsetCommitKey: 1; pass 0 for legacy)."""
    if type(key) is r.UnknownKey:
        return key.key_bytes
    if record_type is None:
        record_type = schema.KEY_CLASSES[type(key)]
    writer = _KEY_WRITERS.get(record_type)
    if writer is None or schema.RECORDS[record_type][0].struct.cls is not type(key):
        raise EncodeError(f"{type(key).__name__} is not the key of record type {record_type}")
    out = bytearray(_H.pack(record_type))
    writer(key, out)
    return bytes(out)


def encode_value(record_type: int, value: r.RecordValue | None, version: int | None = None) -> bytes | None:
    """Value bytes (None for a tombstone), in `version` (default: what Kafka 4.0 writes)."""
    if value is None:
        return None
    if type(value) is r.UnknownValue:
        return value.value_bytes
    if version is None:
        version = DEFAULT_VALUE_VERSION.get(record_type, 0)
    writers = _VALUE_WRITERS.get(record_type)
    if writers is None or version not in writers:
        raise EncodeError(f"no version {version} of the value of record type {record_type}")
    if schema.RECORDS[record_type][1].struct.cls is not type(value):
        raise EncodeError(f"{type(value).__name__} is not the value of record type {record_type}")
    out = bytearray(_H.pack(version))
    writers[version](value, out)
    return bytes(out)


def encode_record(rec: r.OffsetsRecord) -> tuple[bytes, bytes | None]:
    """(key bytes, value bytes or None) of a record, in its record type and value version."""
    return (
        encode_key(rec.key, rec.record_type),
        encode_value(rec.record_type, rec.value, rec.value_version),
    )


def _encode_versioned(payload: object, writers: dict) -> bytes:
    version = payload.version  # type: ignore[attr-defined]
    out = bytearray(_H.pack(version))
    writers[min(max(version, 0), 3)](payload, out)
    return bytes(out)


def encode_subscription(sub: r.ConsumerProtocolSubscription) -> bytes:
    """ConsumerProtocolSubscription bytes (int16 version + fields), for MemberMetadata.subscription."""
    return _encode_versioned(sub, _SUBSCRIPTION)


def encode_assignment(asg: r.ConsumerProtocolAssignment) -> bytes:
    """ConsumerProtocolAssignment bytes (int16 version + fields), for MemberMetadata.assignment."""
    return _encode_versioned(asg, _ASSIGNMENT)


def encode_sticky_user_data(data: r.StickyAssignorUserData) -> bytes:
    """StickyAssignor userData (no version prefix; v1 adds the generation; -1: Java
    CooperativeStickyAssignor's bare int32 generation)."""
    if data.version == -1:
        return struct.pack(">i", data.generation)
    out = bytearray()
    _STICKY[data.version](data, out)
    return bytes(out)
