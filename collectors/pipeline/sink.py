"""Third stage: the Redis sink, through foreachBatch + foreachPartition.

Each executor partition opens its own Redis client and writes through a non-transactional pipeline,
executed every ~1000 commands. Every write is idempotent (see collectors/storage/redis_store.py), so
when Spark replays a micro-batch after a failure or a restart, Redis ends up exactly as if it ran once.
Redis unreachable: the partition retries with exponential backoff (up to `redis_retry_s`), then fails
the batch, which Spark retries from the checkpoint; nothing is skipped.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from collectors.storage.redis_store import RedisStore, lag_totals
from collectors.storage.summaries import loads

log = logging.getLogger("groupscope.sink")

PIPELINE_COMMANDS = 1000


@dataclass(frozen=True)
class SinkConfig:
    redis_url: str
    prefix: str = "gs"
    retention_ms: int = 7 * 24 * 3600 * 1000
    live: bool = True
    redis_retry_s: float = 600.0


def with_retry(fn: Callable[[], Any], what: str, max_s: float) -> Any:
    """Run fn, retrying Redis connection failures with exponential backoff for up to max_s seconds."""
    import redis

    delay, waited = 0.2, 0.0
    while True:
        try:
            return fn()
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError) as e:
            if waited >= max_s:
                raise
            log.warning("%s: Redis unavailable (%s); retrying in %.1f s", what, e, delay)
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, 10.0)


def lag_point(doc: dict) -> tuple[int, float, dict[str, Any], dict[str, Any]]:
    """Group totals and per-partition / per-member lag of a document's `lag` section."""
    lag = doc.get("lag")
    total, secs = lag_totals(lag)
    parts: dict[str, Any] = {}
    members: dict[str, Any] = {}
    if isinstance(lag, dict):
        plist = lag.get("partitions") or []
        if isinstance(plist, dict):
            plist = list(plist.values())
        for p in plist:
            if isinstance(p, dict) and "topic" in p:
                # The keys the dashboard's lag-over-time chart reads (dashboard/pages/group.py lag_series).
                parts[f"{p['topic']}:{p.get('partition')}"] = {
                    "lag": p.get("lag", p.get("lag_offsets")),
                    "lag_seconds": p.get("lag_seconds"),
                    "committed": p.get("committed", p.get("committed_offset")),
                }
        mlist = lag.get("members") or []
        if isinstance(mlist, dict):
            mlist = [{"member_id": k, **(v if isinstance(v, dict) else {"lag": v})} for k, v in mlist.items()]
        for m in mlist:
            if isinstance(m, dict) and m.get("member_id") is not None:
                members[str(m["member_id"])] = {
                    "lag": m.get("lag", m.get("lag_offsets")),
                    "lag_seconds": m.get("lag_seconds", m.get("max_lag_seconds")),
                }
    return total, secs, parts, members


# 19 digits or more may not fit 64 bits, which orjson would read as a float (the model stage writes
# such a document with the standard library: see model_state._dumps)
_LONG_NUMBER = re.compile(r"\d{19}")


def read_document(text: str) -> dict:
    """A document the model stage wrote, read by orjson (a catch-up's 10,000 documents of 100
    partitions: 3.8 s of the sink's CPU with the standard library, 1 s with orjson); what orjson cannot
    read exactly (Infinity, NaN, a number past 64 bits) is read by the standard library."""
    return json.loads(text) if _LONG_NUMBER.search(text) else loads(text)


def write_rows(store: RedisStore, rows: Iterable[Any]) -> dict[str, int]:
    """Write model output rows (group, kind, ts, refreshed, payload) through pipelines of ~1000 commands."""
    counts = {"docs": 0, "dead": 0, "max_ts": 0}
    pending: list[tuple[dict, int, int, str]] = []

    def flush_docs() -> None:
        if not pending:
            return
        pipe = store.pipeline()
        store.write_many(
            [(doc, refreshed, ts or refreshed) for doc, ts, refreshed, _ in pending],
            pipe=pipe,
            texts=[text for *_, text in pending],  # the model stage's text is what _dumps(doc) makes
        )
        for doc, ts, _refreshed, _ in pending:
            if ts and doc.get("lag") is not None:
                total, secs, parts, members = lag_point(doc)
                store.write_lag_points(
                    doc["group"],
                    ts,
                    total=total,
                    lag_seconds=secs,
                    partitions=parts,
                    members=members,
                    pipe=pipe,
                )
            if len(pipe) >= PIPELINE_COMMANDS:
                pipe.execute()
        pipe.execute()
        pending.clear()

    dead_pipe = None
    touched: dict[str, int] = {}
    for r in rows:
        if r["kind"] == "refresh":  # an unchanged group seen again: its refresh stamp only
            touched[r["group"]] = int(r["refreshed"])
            continue
        if r["kind"] == "dead":
            entry = json.loads(r["payload"])
            if dead_pipe is None:
                dead_pipe = store.pipeline()
            store.add_dead_letter(
                {"key": entry.get("key"), "value": entry.get("value")},
                entry["position"],
                entry["error"],
                entry["ts"],
                source=entry["source"],
                pipe=dead_pipe,
            )
            counts["dead"] += 1
            continue
        doc = read_document(r["payload"])
        pending.append((doc, int(r["ts"] or 0), int(r["refreshed"]), r["payload"]))
        counts["docs"] += 1
        counts["max_ts"] = max(counts["max_ts"], int(r["ts"] or 0))
        if len(pending) >= 200:
            flush_docs()
    flush_docs()
    # each topic's aggregate once for all this partition's documents (docs/redis-schema.md, Topics)
    counts["topics"] = store.topics.flush()
    if touched:
        store.touch_refreshed(touched)
        counts["refreshed"] = len(touched)
    if dead_pipe is not None:
        dead_pipe.execute()
    return counts


def write_partition_fn(cfg: SinkConfig) -> Callable[[Iterable[Any]], None]:
    def write_partition(rows: Iterable[Any]) -> None:
        rows = list(rows)
        if not rows:
            return

        def attempt() -> None:
            store = RedisStore.from_url(cfg.redis_url, prefix=cfg.prefix, retention_ms=cfg.retention_ms)
            try:
                write_rows(store, rows)
            finally:
                store.r.close()

        with_retry(attempt, "sink", cfg.redis_retry_s)

    return write_partition
