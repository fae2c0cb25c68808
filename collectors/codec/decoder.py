"""Decode `__consumer_offsets` records (key bytes, value bytes or None) into `records` dataclasses,
exactly as Kafka 4.3.1's GroupCoordinatorRecordSerde reads them (offset commits, classic groups,
KIP-848 consumer groups, share groups, streams groups).

- Key: int16 record type, then the key fields. Value: int16 version, then the fields of that
  version. Value None is a tombstone. Bytes after the last field are ignored, as Kafka does.
- Record types without a schema here (9 and 18, which Kafka 4.3.1 does not define, 24 and up)
  decode to UnknownKey / UnknownValue with the raw bytes: never an error.
- Tagged fields the table does not know are kept, with their bytes, in `unknown_tagged_fields`.
- Classic members of a group whose protocolType is "consumer" get their subscription and
  assignment decoded on first access (ConsumerProtocolSubscription / ConsumerProtocolAssignment,
  versions 0-3, and the StickyAssignor userData); bytes that do not parse stay undecoded (the
  `*_decoded` attribute is None) and the record still decodes, like kafka-dump-log keeps the bytes.
- Anything else that is wrong (truncated, negative length of a non-nullable field, unknown value
  version) raises DecodeError naming the record, the part (key/value) and the byte offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from collectors.codec import records as r
from collectors.codec import schema
from collectors.codec.compiler import COMPILER
from collectors.codec.errors import DecodeError

_H = struct.Struct(">h")
_I = struct.Struct(">i")

CONSUMER_PROTOCOL_TYPE = "consumer"
STICKY_PROTOCOLS = frozenset({"sticky", "cooperative-sticky"})

# record type -> key reader; record type -> {version: value reader}
_KEY_READERS = {rt: COMPILER.reader(key.struct, rt, False) for rt, (key, _value) in schema.RECORDS.items()}
_VALUE_READERS = {rt: COMPILER.message_readers(value) for rt, (_key, value) in schema.RECORDS.items()}
_VALUE_NAMES = {rt: value.name for rt, (_key, value) in schema.RECORDS.items()}
_SUBSCRIPTION_READERS = COMPILER.message_readers(schema.CONSUMER_PROTOCOL_SUBSCRIPTION)
_ASSIGNMENT_READERS = COMPILER.message_readers(schema.CONSUMER_PROTOCOL_ASSIGNMENT)
_STICKY_READERS = COMPILER.message_readers(schema.STICKY_ASSIGNOR_USER_DATA)
_MAX_CP_VERSION = 3


def _as_bytes(data: Any) -> bytes:
    if type(data) is bytes:
        return data
    if data is None:
        raise DecodeError(None, "no bytes (null)")
    return bytes(data)


def decode_key(key: bytes) -> tuple[int, r.RecordKey]:
    """(record type, key object). Raises DecodeError (part "key")."""
    if key is None:
        raise DecodeError(None, "record has no key", part="key")
    key = _as_bytes(key)
    if len(key) < 2:
        raise DecodeError(0, f"key of {len(key)} bytes has no int16 record type", part="key")
    (record_type,) = _H.unpack_from(key)
    reader = _KEY_READERS.get(record_type)
    if reader is None:
        return record_type, r.UnknownKey(record_type, key)
    try:
        return record_type, reader(key, 2)[0]
    except DecodeError as exc:
        raise exc.with_record(part="key") from None


def decode_value(record_type: int, value: bytes) -> tuple[int, r.RecordValue]:
    """(version, value object) of a non-null value. Raises DecodeError (part "value")."""
    value = _as_bytes(value)
    if len(value) < 2:
        if record_type not in _VALUE_READERS:
            return -1, r.UnknownValue(-1, value)
        raise DecodeError(0, f"value of {len(value)} bytes has no int16 version", part="value")
    (version,) = _H.unpack_from(value)
    readers = _VALUE_READERS.get(record_type)
    if readers is None:
        return version, r.UnknownValue(version, value)
    reader = readers.get(version)
    if reader is None:
        raise DecodeError(
            0,
            f"unknown version {version} of {_VALUE_NAMES[record_type]} (record type {record_type})",
            part="value",
        )
    try:
        obj = reader(value, 2)[0]
    except DecodeError as exc:
        raise exc.with_record(part="value") from None
    if record_type == r.GROUP_METADATA and obj.protocol_type == CONSUMER_PROTOCOL_TYPE:
        decode_members(obj)
    return version, obj


def decode_record(
    key: bytes, value: bytes | None, partition: int = -1, offset: int = -1, timestamp: int = -1
) -> r.OffsetsRecord:
    """One record of `__consumer_offsets`. Raises DecodeError naming partition/offset.

    The hot path of the pipeline: decode_key/decode_value inlined for the known record types."""
    if type(key) is not bytes:
        if key is None:
            raise DecodeError(None, "record has no key", part="key", partition=partition, offset=offset)
        key = bytes(key)
    reader = _KEY_READERS.get(_H.unpack_from(key)[0]) if len(key) >= 2 else None
    if reader is None:  # short key or unknown record type: the careful path
        try:
            record_type, key_obj = decode_key(key)
            if value is None:
                return r.OffsetsRecord(partition, offset, timestamp, record_type, key_obj, None, None)
            version, value_obj = decode_value(record_type, value)
        except DecodeError as exc:
            raise exc.with_record(partition=partition, offset=offset) from None
        return r.OffsetsRecord(partition, offset, timestamp, record_type, key_obj, version, value_obj)
    record_type = (key[0] << 8) | key[1]
    try:
        key_obj = reader(key, 2)[0]
    except DecodeError as exc:
        raise exc.with_record(part="key", partition=partition, offset=offset) from None
    if value is None:
        return r.OffsetsRecord(partition, offset, timestamp, record_type, key_obj, None, None)
    if type(value) is not bytes:
        value = bytes(value)
    value_reader = _VALUE_READERS[record_type].get(_H.unpack_from(value)[0]) if len(value) >= 2 else None
    if value_reader is None:
        try:
            version, value_obj = decode_value(record_type, value)
        except DecodeError as exc:
            raise exc.with_record(partition=partition, offset=offset) from None
        return r.OffsetsRecord(partition, offset, timestamp, record_type, key_obj, version, value_obj)
    try:
        value_obj = value_reader(value, 2)[0]
    except DecodeError as exc:
        raise exc.with_record(part="value", partition=partition, offset=offset) from None
    if record_type == 2 and value_obj.protocol_type == CONSUMER_PROTOCOL_TYPE:
        decode_members(value_obj)
    return r.OffsetsRecord(
        partition, offset, timestamp, record_type, key_obj, (value[0] << 8) | value[1], value_obj
    )


# ----------------------------------------------------------------------------------------------
# Consumer protocol payloads.
def decode_members(value: r.GroupMetadataValue) -> None:
    """Mark each member's payloads as consumer protocol (StickyAssignor userData too when the
    group's protocol is sticky); they are decoded on first access of `subscription_decoded` /
    `assignment_decoded`, None when not parseable."""
    reader = _STICKY_PAYLOADS if value.protocol in STICKY_PROTOCOLS else _CONSUMER_PAYLOADS
    for member in value.members:
        member.payload_reader = reader


@dataclass(frozen=True, slots=True)
class ConsumerPayloads:
    """Reads a classic member's consumer-protocol payloads (`sticky`: with StickyAssignor userData)
    for records.MemberMetadata, which holds one instead of importing this module."""

    sticky: bool

    def subscription(self, data: bytes | None) -> r.ConsumerProtocolSubscription | None:
        return decode_subscription(data, self.sticky)

    def assignment(self, data: bytes | None) -> r.ConsumerProtocolAssignment | None:
        return decode_assignment(data, self.sticky)


_CONSUMER_PAYLOADS = ConsumerPayloads(False)
_STICKY_PAYLOADS = ConsumerPayloads(True)


def _read_versioned(data: bytes, readers: dict[int, Any]) -> Any:
    """Kafka reads the int16 version then the fields (newer than 3: unsupported; negative: read
    like version 0, as the generated Java reader does). Trailing bytes are ignored."""
    if len(data) < 2:
        return None
    (version,) = _H.unpack_from(data)
    if version > _MAX_CP_VERSION:
        return None
    try:
        if version >= 0:
            return readers[version](data, 2)[0]
        obj = readers[0](data, 2)[0]
    except DecodeError:
        return None
    obj.version = version
    return obj


def decode_subscription(data: bytes | None, sticky: bool = False) -> r.ConsumerProtocolSubscription | None:
    if data is None:
        return None
    sub = _read_versioned(data, _SUBSCRIPTION_READERS)
    if sub is not None and sticky and sub.user_data:
        sub.user_data_decoded = decode_sticky_user_data(sub.user_data)
    return sub


def decode_assignment(data: bytes | None, sticky: bool = False) -> r.ConsumerProtocolAssignment | None:
    if data is None:
        return None
    asg = _read_versioned(data, _ASSIGNMENT_READERS)
    if asg is not None and sticky and asg.user_data:
        asg.user_data_decoded = decode_sticky_user_data(asg.user_data)
    return asg


def decode_sticky_user_data(data: bytes) -> r.StickyAssignorUserData | None:
    """StickyAssignor userData: v1 (previous assignment + generation) if all bytes read as v1, else
    v0 (previous assignment only). Java's CooperativeStickyAssignor writes only an int32 generation:
    4 bytes that are no valid v0/v1 read as version -1 with that generation. None otherwise."""
    data = _as_bytes(data)
    for version in (1, 0):
        try:
            obj, end = _STICKY_READERS[version](data, 0)
        except DecodeError:
            continue
        if end == len(data):
            return obj
    if len(data) == 4:
        return r.StickyAssignorUserData(-1, [], _I.unpack(data)[0])
    return None
