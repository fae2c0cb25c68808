"""Stateless first stage, run in the executors: raw rows of the sources -> rows routed to groups.

Each raw row (topic, partition, offset, timestamp, key, value) is routed according to the kind of its
topic: a `__consumer_offsets` record by the group in its key (the codec reads the key only; the value
is decoded once, next to the model, in the second stage), heartbeat events, broker log lines and Admin
API snapshots (describe / committed / log-end offsets) through the coordinator model's parsers. Each
row keeps its raw bytes and gets the state bucket of its group. Whatever cannot be routed becomes a
dead-letter row (raw bytes, position, error) in DEAD_BUCKET, so it reaches the sink without stopping
anything; rows that carry no group evidence (a broker log line about something else) are dropped.
`decode_one` turns a raw row into evidence; both stages use it.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# A key no Kafka group id can be (group ids are UTF-8 text; this one starts with NUL).
DEAD_LETTER_KEY = "\x00dead-letters"

DEAD_BUCKET = -1
ROUTED_SCHEMA = (
    "bucket int, group string, ts long, rank int, kind string, topic string, partition int, offset long, "
    "key binary, value binary, error string"
)
ROUTED_COLUMNS = [c.split()[0] for c in ROUTED_SCHEMA.split(", ")]

# Kinds of source, and their rank among evidence with the same timestamp.
KIND_RANK = {"offsets": 0, "broker_log": 1, "admin": 2, "heartbeat": 4}
END_OFFSET_RANK = 3


TICK_TOPIC = "groupscope.clock"
KINDS_OF_CAPTURE_FILES = {
    "__consumer_offsets": "offsets",
    "offsets.jsonl": "offsets",
    "broker.log": "broker_log",
    "describe.jsonl": "admin",
    "end_offsets.jsonl": "admin",
    "heartbeats.jsonl": "heartbeat",
    TICK_TOPIC: "tick",
}


@dataclass(frozen=True, slots=True)
class Tick:
    """Not evidence: "the clock reached ts" for one group (the end of a replayed capture)."""

    ts: int
    group: str


def group_of_key(key: bytes) -> str | None:
    from collectors.codec.decoder import decode_key

    _, k = decode_key(key)
    g = getattr(k, "group", None)
    return g if isinstance(g, str) else None


def position_of(topic: str, partition: int, offset: int) -> str:
    return f"{topic}/{partition}@{offset}"


_KEYS: dict[bytes, tuple[int, Any]] = {}


def _decode_offsets(key: bytes, value: bytes | None, partition: int, offset: int, ts: int) -> Any:
    """codec.decode_record, with each distinct key read once per process (a partition's commits all
    share one key). Keys are never mutated downstream."""
    from collectors.codec import records as r
    from collectors.codec.decoder import decode_key, decode_value
    from collectors.codec.errors import DecodeError

    try:
        hit = _KEYS.get(key)
        if hit is None:
            hit = decode_key(key)
            if len(_KEYS) > 200_000:
                _KEYS.clear()
            _KEYS[key] = hit
        record_type, key_obj = hit
        if value is None:
            return r.OffsetsRecord(partition, offset, ts, record_type, key_obj, None, None)
        version, value_obj = decode_value(record_type, value)
    except DecodeError as exc:
        raise exc.with_record(partition=partition, offset=offset) from None
    return r.OffsetsRecord(partition, offset, ts, record_type, key_obj, version, value_obj)


def decode_one(
    kind: str, topic: str, partition: int, offset: int, ts: int, key: bytes | None, value: bytes | None
) -> list[tuple[str, int, int, Any]]:
    """Evidence of one raw row: [(group, ts, rank, evidence)]. Raises on bad input."""
    from coordinator_model import evidence as E

    if kind == "offsets":
        if key is None:
            raise ValueError("record without a key")
        ev = E.from_offsets_record(_decode_offsets(key, value, partition, offset, ts))
        return [(ev.group, ev.ts, 0, ev)] if ev is not None and ev.group is not None else []
    if kind == "tick":
        group = (key or b"").decode("utf-8")
        return [(group, int(value or b"0"), 9, Tick(int(value or b"0"), group))] if group else []
    text = (value or b"").decode("utf-8")
    if kind == "broker_log":
        ev = E.parse_broker_log_line(text)
        if ev is None:
            return []
        # A line may name several groups (groups deleted): each gets it.
        return [(g, ev.ts, 1, ev) for g in (ev.groups or (ev.group,)) if g]
    obj = json.loads(text)
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    if kind == "heartbeat":
        ev = E.from_heartbeat_json(obj)
        return [(ev.group, ev.ts, 4, ev)]
    if kind == "admin":
        if obj.get("clock") is True:
            return []  # the Admin poller's clock record: it only wakes the timers
        if "end_offset" in obj:
            ev = E.from_end_offset_json(obj)
            # Log-end offsets belong to a partition; the producer keyed them by the group they serve.
            group = obj.get("group") or (key.decode("utf-8") if key else None)
            return [(group, ev.ts, END_OFFSET_RANK, ev)] if group else []
        ev = E.from_describe_json(obj)
        return [(ev.group, ev.ts, 2, ev)]
    raise ValueError(f"no decoder for source kind {kind!r}")


# bucket count -> key bytes -> (group, bucket), per executor process
_KEY_ROUTES: dict[int, dict[bytes, tuple[str, int]]] = {}


def bucket_of(group: str, buckets: int) -> int:
    """The state bucket of a group: stable across processes and restarts (not Python's hash)."""
    return zlib.crc32(group.encode("utf-8")) % buckets


def route_one(
    kind: str, topic: str, partition: int, offset: int, ts: int, key: bytes | None, value: bytes | None
) -> list[tuple[str, int, int]]:
    """(group, ts, rank) of each group a raw row is evidence for. `__consumer_offsets` records are only
    keyed here (the group is in the key); their values are decoded once, next to the model."""
    if kind == "offsets":
        if key is None:
            raise ValueError("record without a key")
        from collectors.codec.decoder import decode_key

        _, k = decode_key(key)
        group = getattr(k, "group", None)
        return [(group, ts, 0)] if isinstance(group, str) else []
    return [(g, int(t), rank) for g, t, rank, _ in decode_one(kind, topic, partition, offset, ts, key, value)]


def decode_batches(batches: Iterator[Any], kinds: Mapping[str, str], buckets: int = 256) -> Iterator[Any]:
    """mapInPandas body: raw frames in, ROUTED_SCHEMA frames out (one row per group a record is
    evidence for, with its state bucket; a row that cannot be routed goes to the dead-letter bucket)."""
    import pandas as pd

    for pdf in batches:
        out: dict[str, list[Any]] = {c: [] for c in ROUTED_COLUMNS}
        cols = [out[c] for c in ROUTED_COLUMNS]

        def emit(*values: Any, cols: list[list[Any]] = cols) -> None:
            for col, v in zip(cols, values, strict=True):
                col.append(v)

        routes = _KEY_ROUTES.setdefault(buckets, {})
        (c_bucket, c_group, c_ts, c_rank, c_kind, c_topic, c_part, c_off, c_key, c_value, c_error) = cols
        for topic, partition, offset, ts, key, value in zip(
            pdf["topic"].tolist(),
            pdf["partition"].tolist(),
            pdf["offset"].tolist(),
            pdf["timestamp"].tolist(),
            pdf["key"].tolist(),
            pdf["value"].tolist(),
            strict=True,
        ):
            kind = kinds.get(topic)
            if kind == "admin" and value is not None and b'"clock"' in value:
                clock_ts = _clock_ts(value)
                if clock_ts is not None:
                    # The Admin poller's clock record: every bucket gets it (group null), so each bucket's
                    # event-time watermark moves on even when none of its groups had evidence.
                    for b in range(buckets):
                        emit(b, None, clock_ts, 9, kind, topic, partition, offset, key, value, None)
                    continue
            if kind == "offsets" and key is not None:
                # Fast path: a commit key repeats for every commit of a partition; read each key once.
                hit = routes.get(key)
                if hit is not None:
                    c_bucket.append(hit[1])
                    c_group.append(hit[0])
                    c_ts.append(ts)
                    c_rank.append(0)
                    c_kind.append(kind)
                    c_topic.append(topic)
                    c_part.append(partition)
                    c_off.append(offset)
                    c_key.append(key)
                    c_value.append(value)
                    c_error.append(None)
                    continue
            try:
                if kind is None:
                    raise ValueError(f"topic {topic!r} is not a groupscope source")
                for group, ets, rank in route_one(kind, topic, partition, offset, ts, key, value):
                    bucket = bucket_of(group, buckets)
                    if kind == "offsets":
                        if len(routes) > 200_000:
                            routes.clear()
                        routes[key] = (group, bucket)
                    emit(bucket, group, ets, rank, kind, topic, partition, offset, key, value, None)
            except Exception as e:  # every failure, whatever its type, becomes a dead letter
                emit(DEAD_BUCKET, DEAD_LETTER_KEY, ts, 9, kind, topic, partition, offset, key, value, _err(e))
        if out["group"]:  # an empty object frame does not convert to the schema's binary columns
            yield pd.DataFrame(out, columns=ROUTED_COLUMNS)


def _clock_ts(value: bytes) -> int | None:
    """The time of an Admin poller clock record (`{"ts": T, "clock": true}`), else None."""
    try:
        obj = json.loads(value)
    except ValueError:
        return None
    if isinstance(obj, dict) and obj.get("clock") is True and isinstance(obj.get("ts"), int):
        return int(obj["ts"])
    return None


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"
