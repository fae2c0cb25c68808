"""Second stage: the coordinator model per group, in Spark's stateful operator.

`applyInPandasWithState` keyed by a state bucket (a stable hash of the group id, `buckets` of them):
Spark's per-key cost (a pandas frame, a state-store read and write, the Python round trip) is paid
per bucket, not per group, which is what lets tens of thousands of groups through a micro-batch.
A bucket's state is the pickled GroupEngine of each of its groups, with when the group last got
evidence and a digest of its last document. Only the groups of the batch are unpickled and pickled
again; the others stay as bytes. So the model's state lives in Spark's checkpointed state store
(RocksDB) and survives restarts. The number of buckets is fixed for the life of a checkpoint.

Here the `__consumer_offsets` values are decoded (once) and every row becomes evidence; a row that
fails becomes a dead letter. In live mode a processing-time timeout wakes each bucket every
`tick_ms`: its engines are advanced to the wall clock, so a member that stopped heartbeating expires
(and lag in seconds grows) without new input. On replay the clock is the evidence itself, and the
capture's last rows are ticks that run it to the capture's end, exactly as `groupscope model` does.

Output rows: one per group whose document changed (`kind` "doc", `payload` the JSON document) and
one per dead letter (`kind` "dead").
"""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
import time
from collections.abc import Iterator
from typing import Any

from collectors.pipeline.decode import DEAD_BUCKET, Tick, decode_one, position_of

OUTPUT_SCHEMA = "group string, kind string, ts long, refreshed long, payload string"
STATE_SCHEMA = "groups binary"
OUTPUT_COLUMNS = ["group", "kind", "ts", "refreshed", "payload"]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _dumps(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, default=str)


def _b64(b: bytes | None) -> str | None:
    return base64.b64encode(bytes(b)).decode() if b is not None else None


def dead_letter_payload(
    topic: str, partition: int, offset: int, ts: int, error: str, key: Any, value: Any
) -> str:
    return _dumps(
        {
            "source": topic,
            "position": position_of(topic, int(partition), int(offset)),
            "error": error,
            "ts": int(ts),
            "key": _b64(key),
            "value": _b64(value),
        }
    )


def new_engine(group: str, retention_ms: int) -> Any:
    from coordinator_model.engine import GroupEngine

    return GroupEngine(group, retention_ms=retention_ms)


def make_update(live: bool, retention_ms: int, tick_ms: int):
    """The applyInPandasWithState function for one pipeline configuration."""

    def update(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        import pandas as pd

        out: dict[str, list[Any]] = {c: [] for c in OUTPUT_COLUMNS}

        def emit(group: str, kind: str, ts: int, refreshed: int, payload: str) -> None:
            for c, v in zip(OUTPUT_COLUMNS, (group, kind, ts, refreshed, payload), strict=True):
                out[c].append(v)

        now = _now_ms()
        # rows of this batch, by group: (ts, rank, partition, offset, kind, topic, key, value, error)
        by_group: dict[str, list[tuple]] = {}
        for pdf in pdfs:
            if not len(pdf):
                continue
            for row in zip(
                pdf["group"].tolist(),
                pdf["ts"].tolist(),
                pdf["rank"].tolist(),
                pdf["partition"].tolist(),
                pdf["offset"].tolist(),
                pdf["kind"].tolist(),
                pdf["topic"].tolist(),
                pdf["key"].tolist(),
                pdf["value"].tolist(),
                pdf["error"].tolist(),
                strict=True,
            ):
                by_group.setdefault(row[0], []).append(row[1:])

        if key[0] == DEAD_BUCKET:
            for rows in by_group.values():
                for ts, _, partition, offset, _, topic, k, v, error in rows:
                    emit("", "dead", ts, now, dead_letter_payload(topic, partition, offset, ts, error, k, v))
            if out["kind"]:
                yield pd.DataFrame(out, columns=OUTPUT_COLUMNS)
            return

        groups: dict[str, tuple[bytes, int, str]] = pickle.loads(state.get[0]) if state.exists else {}
        timed_out = state.hasTimedOut
        touched = sorted(groups) if timed_out else sorted(by_group)
        for group in touched:
            blob, last_input, digest = groups.get(group, (b"", 0, ""))
            engine = pickle.loads(blob) if blob else new_engine(group, retention_ms)
            rows = sorted(by_group.get(group, ()), key=lambda r: r[:4])
            evidence, ticks = [], []
            for ts, _, partition, offset, kind, topic, k, v, _ in rows:
                try:
                    for g, _, _, ev in decode_one(kind, topic, partition, offset, ts, k, v):
                        if g != group:
                            continue  # a line naming several groups: this group's share
                        (ticks if isinstance(ev, Tick) else evidence).append(ev)
                except Exception as e:  # bad bytes: a dead letter, the rest of the batch goes on
                    emit(
                        group,
                        "dead",
                        ts,
                        now,
                        dead_letter_payload(topic, partition, offset, ts, _err(e), k, v),
                    )
            try:
                if evidence:
                    engine.apply_many(evidence)
                if ticks:  # the end of a replayed capture: run the timers to its last moment
                    engine.advance(max(t.ts for t in ticks))
            except Exception as e:  # a model failure: keep the group's last good state, report the rows
                ts, _, partition, offset, _, topic, k, v, _ = rows[0]
                emit(
                    group,
                    "dead",
                    ts,
                    now,
                    dead_letter_payload(topic, partition, offset, ts, f"model: {_err(e)}", k, v),
                )
                engine = pickle.loads(blob) if blob else new_engine(group, retention_ms)
            if rows:
                last_input = now
            if live:
                engine.advance(now)
            doc = engine.document()
            text = _dumps(doc)
            new_digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
            groups[group] = (pickle.dumps(engine, 5), int(last_input), new_digest)
            if new_digest != digest:
                emit(group, "doc", int(doc.get("as_of") or 0), int(last_input or now), text)
        state.update((pickle.dumps(groups, 5),))
        if live:
            state.setTimeoutDuration(tick_ms)
        if out["kind"]:
            yield pd.DataFrame(out, columns=OUTPUT_COLUMNS)

    return update


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"
