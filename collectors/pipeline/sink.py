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

from collectors.storage.redis_store import RedisStore
from collectors.storage.summaries import loads
from coordinator_model.document import DocumentError, GroupDocument

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


def lag_point(doc: GroupDocument) -> tuple[int, float, dict[str, Any], dict[str, Any]]:
    """Group totals and per-partition / per-member lag of a document's `lag` section."""
    total, secs = doc.lag.totals()
    # The keys the dashboard's lag-over-time chart reads (dashboard/pages/group.py lag_series).
    parts = {
        f"{p.topic}:{p.partition}": {"lag": p.lag, "lag_seconds": p.lag_seconds, "committed": p.committed}
        for p in doc.lag.partitions
    }
    members = {m.member_id: {"lag": m.lag, "lag_seconds": m.lag_seconds} for m in doc.lag.members}
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
    pending: list[tuple[GroupDocument, int, int, str]] = []

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
            if ts:
                total, secs, parts, members = lag_point(doc)
                store.write_lag_points(
                    doc.group,
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

    def set_aside(raw: Any, position: str, error: str, ts: int, source: str) -> None:
        nonlocal dead_pipe
        if dead_pipe is None:
            dead_pipe = store.pipeline()
        store.add_dead_letter(raw, position, error, ts, source=source, pipe=dead_pipe)
        counts["dead"] += 1

    touched: dict[str, int] = {}
    for r in rows:
        if r["kind"] == "refresh":  # an unchanged group seen again: its refresh stamp only
            touched[r["group"]] = int(r["refreshed"])
            continue
        if r["kind"] == "dead":
            entry = json.loads(r["payload"])
            raw = {"key": entry.get("key"), "value": entry.get("value")}
            set_aside(raw, entry["position"], entry["error"], entry["ts"], entry["source"])
            continue
        try:
            doc = GroupDocument.from_json(read_document(r["payload"]))
        except (ValueError, DocumentError) as e:  # the model stage's own output: a bug, kept to look at
            log.error("group %s: the model's document is unreadable (%s); set aside", r["group"], e)
            set_aside(
                {"document": r["payload"]},
                f"model/{r['group']}@{r['ts']}",
                str(e),
                int(r["ts"] or 0),
                "model",
            )
            continue
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
