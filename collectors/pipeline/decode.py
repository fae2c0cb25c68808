"""Stateless first stage, run in the executors: raw rows of the sources -> (group, evidence) rows.

Each raw row (topic, partition, offset, timestamp, key, value) is decoded according to the kind of
its topic: `__consumer_offsets` records through the codec, heartbeat events, broker log lines and
Admin API snapshots (describe / committed / log-end offsets) through the coordinator model's parsers.
Evidence leaves this stage pickled in a binary column, keyed by group. Whatever fails to decode or
parse becomes a dead-letter row (raw bytes, position, error) under DEAD_LETTER_KEY, so it reaches the
sink without stopping anything. Rows that carry no group evidence (a broker log line about something
else, an offsets record of another group type) are dropped.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# A key no Kafka group id can be (group ids are UTF-8 text; this one starts with NUL).
DEAD_LETTER_KEY = "\x00dead-letters"

DECODED_SCHEMA = (
    "group string, ts long, rank int, topic string, partition int, offset long, "
    "ev binary, error string, raw_key binary, raw_value binary"
)
DECODED_COLUMNS = [c.split()[0] for c in DECODED_SCHEMA.split(", ")]

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


def decode_one(
    kind: str, topic: str, partition: int, offset: int, ts: int, key: bytes | None, value: bytes | None
) -> list[tuple[str, int, int, Any]]:
    """Evidence of one raw row: [(group, ts, rank, evidence)]. Raises on bad input."""
    from coordinator_model import evidence as E

    if kind == "offsets":
        from collectors.codec.decoder import decode_record

        if key is None:
            raise ValueError("record without a key")
        rec = decode_record(key, value, partition, offset, ts)
        ev = E.from_offsets_record(rec)
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
        if "end_offset" in obj:
            ev = E.from_end_offset_json(obj)
            # Log-end offsets belong to a partition; the producer keyed them by the group they serve.
            group = obj.get("group") or (key.decode("utf-8") if key else None)
            return [(group, ev.ts, END_OFFSET_RANK, ev)] if group else []
        ev = E.from_describe_json(obj)
        return [(ev.group, ev.ts, 2, ev)]
    raise ValueError(f"no decoder for source kind {kind!r}")


def decode_batches(batches: Iterator[Any], kinds: Mapping[str, str]) -> Iterator[Any]:
    """mapInPandas body: raw pandas frames in, DECODED_SCHEMA frames out."""
    import pandas as pd

    for pdf in batches:
        out: dict[str, list[Any]] = {c: [] for c in DECODED_COLUMNS}

        cols = [out[c] for c in DECODED_COLUMNS]

        def emit(*values: Any, cols: list[list[Any]] = cols) -> None:
            for col, v in zip(cols, values, strict=True):
                col.append(v)

        for topic, partition, offset, ts, key, value in zip(
            pdf["topic"],
            pdf["partition"],
            pdf["offset"],
            pdf["timestamp"],
            pdf["key"],
            pdf["value"],
            strict=True,
        ):
            partition, offset, ts = int(partition), int(offset), int(ts)
            key = bytes(key) if key is not None else None
            value = bytes(value) if value is not None else None
            kind = kinds.get(topic)
            try:
                if kind is None:
                    raise ValueError(f"topic {topic!r} is not a groupscope source")
                for group, ets, rank, ev in decode_one(kind, topic, partition, offset, ts, key, value):
                    emit(
                        group, int(ets), rank, topic, partition, offset, pickle.dumps(ev, 5), None, None, None
                    )
            except Exception as e:  # every failure, whatever its type, becomes a dead letter
                emit(
                    DEAD_LETTER_KEY,
                    ts,
                    9,
                    topic,
                    partition,
                    offset,
                    None,
                    f"{type(e).__name__}: {e}",
                    key,
                    value,
                )
        yield pd.DataFrame(out, columns=DECODED_COLUMNS)
