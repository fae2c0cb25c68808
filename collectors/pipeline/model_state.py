"""Second stage: the coordinator model per group, in Spark's stateful operator.

`applyInPandasWithState` keyed by a state bucket (a stable hash of the group id, `buckets` of them):
Spark's per-key cost (a pandas frame, a state-store read and write, the Python round trip) is paid
per bucket, not per group, which is what lets tens of thousands of groups through a micro-batch.
A bucket's state is the pickled GroupEngine of each of its groups, with when the group last got
evidence and a digest of its last document. Only the groups of the batch are unpickled and pickled
again; the others stay as bytes. So the model's state lives in Spark's checkpointed state store
(RocksDB) and survives restarts. The number of buckets is fixed for the life of a checkpoint.

Here the `__consumer_offsets` values are decoded (once) and every row becomes evidence; a row that
fails becomes a dead letter.

Timers run on EVENT time, never on the wall clock of the batch. A member's session expiry is "no
heartbeat event for session.timeout.ms": judged against the wall clock it fires while the member's
later heartbeats are still in transit (a producer's batching, a slow first micro-batch, a backlog being
caught up), and a live member is expired spuriously. So in live mode each bucket keeps an event-time
watermark:

    watermark = min(wall clock, latest event time delivered) - allowed_lateness_ms

"Latest event time delivered" is the newest timestamp among the Admin poller's clock records (one per
poll; `decode_batches` hands each clock record to every bucket) and the bucket's evidence. Clock
records and evidence travel the same micro-batches, so when the clock of time T has been processed, the
evidence up to T (less what a producer still held back, which the lateness covers; default 5 s) has
been too. Evidence itself is applied in event-time order up to the watermark: a row newer than the
watermark is held in the bucket's state until the watermark passes it, so evidence from different
sources that crosses in transit (a describe polled after a join the probe has not flushed yet) reaches
the model in the order it happened, as `groupscope model` sees a capture. Documents are thus about
the lateness behind real time. Every engine of the bucket is advanced to the watermark whenever a
clock record arrives, so a member that stopped heartbeating still expires (and lag in seconds grows)
with no new evidence of its own. Only when the sources are idle, i.e. the bucket got no record at
all (not even a clock) for `idle_ms` and Spark's processing-time timeout wakes it (without the Admin
poller, with idle micro-batches), does the wall clock minus the same lateness stand in for event time.

On replay the clock is the evidence itself, and the capture's last rows are ticks that run it to the
capture's end, exactly as `groupscope model` does (the live watermark is not used).

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


DEFAULT_LATENESS_MS = 5000


def make_update(
    live: bool,
    retention_ms: int,
    tick_ms: int,
    allowed_lateness_ms: int = DEFAULT_LATENESS_MS,
    idle_ms: int | None = None,
):
    """The applyInPandasWithState function for one pipeline configuration (see the module docstring
    for the event-time watermark that drives the timers in live mode)."""
    idle_after = int(idle_ms if idle_ms is not None else 2 * tick_ms)

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

        groups, meta = _load_state(state)
        timed_out = state.hasTimedOut
        clock_rows = by_group.pop(None, [])  # the Admin poller's clock (group null)
        watermark = 0
        if live:
            times = [int(r[0]) for rows in by_group.values() for r in rows] + [int(r[0]) for r in clock_rows]
            latest = max([int(meta.get("event", 0)), *times])
            latest = min(latest, now)  # a producer's clock ahead of ours never runs our timers early
            meta["event"] = latest
            if clock_rows or by_group:
                meta["seen"] = now
            watermark = latest - allowed_lateness_ms if latest else 0
            if timed_out and not by_group and not clock_rows and now - int(meta.get("seen", 0)) >= idle_after:
                watermark = max(watermark, now - allowed_lateness_ms)  # idle sources: the wall clock
        sweep = timed_out or bool(clock_rows)
        touched = sorted(set(groups) | set(by_group)) if sweep else sorted(by_group)
        for group in touched:
            blob, last_input, digest, *rest = groups.get(group, (b"", 0, ""))
            held: list[tuple[int, tuple]] = rest[0] if rest else []
            engine = pickle.loads(blob) if blob else new_engine(group, retention_ms)
            arrived = by_group.get(group, ())
            if live:
                # Evidence is applied in event-time order up to the watermark; what is newer waits here
                # (a row stamped ahead of our clock waits until the watermark passes its arrival).
                held = held + [(min(int(r[0]), now), r) for r in arrived]
                rows = sorted((r for at, r in held if at <= watermark), key=lambda r: r[:4])
                held = [(at, r) for at, r in held if at > watermark]
            else:
                rows = sorted(arrived, key=lambda r: r[:4])
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
            if arrived:
                last_input = now
            if not blob and not evidence and not ticks:
                # every row of a group we have not seen yet is still held behind the watermark:
                # publish nothing until there is evidence, or an empty document would stand in Redis
                groups[group] = (b"", int(last_input), digest, held)
                continue
            if live and watermark > 0:
                engine.advance(watermark)
            doc = engine.document()
            text = _dumps(doc)
            new_digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
            groups[group] = (pickle.dumps(engine, 5), int(last_input), new_digest, held)
            if new_digest != digest:
                emit(group, "doc", int(doc.get("as_of") or 0), int(last_input or now), text)
        state.update((pickle.dumps((groups, meta), 5),))
        if live:
            state.setTimeoutDuration(tick_ms)
        if out["kind"]:
            yield pd.DataFrame(out, columns=OUTPUT_COLUMNS)

    return update


def _load_state(state: Any) -> tuple[dict[str, tuple], dict[str, int]]:
    """(groups, meta) of a bucket. groups: group -> (pickled engine, last input time, document digest,
    held rows [(release time, row)], absent in older checkpoints); meta holds the watermark's inputs
    ("event": the latest event time delivered, "seen": when the bucket last got a record). A checkpoint
    from before the watermark held the groups alone."""
    if not state.exists:
        return {}, {}
    obj = pickle.loads(state.get[0])
    if isinstance(obj, tuple):
        return obj[0], obj[1]
    return obj, {}


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"
