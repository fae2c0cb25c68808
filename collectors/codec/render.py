"""JSON rendering of decoded records, in the shape of Kafka's `kafka-dump-log.sh --offsets-decoder`
(field names, nesting and values), reusable by the pipeline's dead-letter and debug views.

    {"partition": P, "offset": O, "timestamp": T,
     "key": {"type": "1", "data": {...}},
     "value": {"version": "3", "data": {...}} | null}

Like Kafka: type and version are strings; bytes are standard base64; topic ids are Kafka's Uuid
strings; only the fields of the record's version are printed, tagged fields only when they are not
their default (as Kafka's generated JSON converters do); a classic member's subscription/assignment
is printed decoded when the group's protocolType is "consumer" and the bytes parse, as base64
otherwise. Record types without a schema print their raw bytes as {"unknown": true, "bytes": base64},
where Kafka prints "Unknown record type N ... skipping". Unlike Kafka, which drops them, tagged fields
the table does not know are printed in the struct that holds them as
"_unknownTaggedFields": [{"tag": N, "data": "<hex>"}].
"""

from __future__ import annotations

from typing import Any

from collectors.codec import records as r
from collectors.codec import schema
from collectors.codec.compiler import COMPILER, b64

_KEY_RENDERERS = {rt: COMPILER.renderer(key.struct, rt, False) for rt, (key, _) in schema.RECORDS.items()}
_VALUE_RENDERERS = {rt: COMPILER.message_renderers(value) for rt, (_, value) in schema.RECORDS.items()}
_SUBSCRIPTION = COMPILER.message_renderers(schema.CONSUMER_PROTOCOL_SUBSCRIPTION)
_ASSIGNMENT = COMPILER.message_renderers(schema.CONSUMER_PROTOCOL_ASSIGNMENT)


def _render_decoded(payload: Any) -> dict[str, Any]:
    """A decoded consumer-protocol payload, printed in the version it was read in."""
    version = min(max(payload.version, 0), 3)
    if type(payload) is r.ConsumerProtocolSubscription:
        return _SUBSCRIPTION[version](payload)
    return _ASSIGNMENT[version](payload)


COMPILER.ns["_render_decoded"] = _render_decoded


def key_to_json(record_type: int, key: r.RecordKey) -> dict[str, Any]:
    if type(key) is r.UnknownKey:
        return {"type": str(record_type), "data": {"unknown": True, "bytes": b64(key.key_bytes)}}
    return {"type": str(record_type), "data": _KEY_RENDERERS[record_type](key)}


def value_to_json(record_type: int, version: int, value: r.RecordValue) -> dict[str, Any]:
    if type(value) is r.UnknownValue:
        return {"version": str(version), "data": {"unknown": True, "bytes": b64(value.value_bytes)}}
    return {"version": str(version), "data": _VALUE_RENDERERS[record_type][version](value)}


def record_to_json(rec: r.OffsetsRecord) -> dict[str, Any]:
    """The record as kafka-dump-log prints it, plus partition/offset/timestamp."""
    return {
        "partition": rec.partition,
        "offset": rec.offset,
        "timestamp": rec.timestamp,
        "key": key_to_json(rec.record_type, rec.key),
        "value": None if rec.value is None else value_to_json(rec.record_type, rec.value_version, rec.value),  # type: ignore[arg-type]
    }
