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
# The pipeline keeps two lag points a group a minute at most, the minute's peak and newest
# (RedisStore.write_lag_points, slot_ms): docs/redis-schema.md, "Per group".
LAG_POINT_MS = 60_000


@dataclass(frozen=True)
class SinkConfig:
    redis_url: str
    prefix: str = "gs"
    retention_ms: int = 7 * 24 * 3600 * 1000
    live: bool = True
    redis_retry_s: float = 600.0


def with_retry(fn: Callable[[], Any], what: str, max_s: float) -> Any:
    """Run fn, retrying Redis connection failures with exponential backoff for up to max_s seconds.
    A Redis at its `maxmemory` that refuses writes (noeviction) is an outage too: retried the same
    way, so the writes resume once someone makes room, rather than the collector exiting."""
    import redis
    from redis.exceptions import OutOfMemoryError

    delay, waited = 0.2, 0.0
    while True:
        try:
            return fn()
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError, OutOfMemoryError) as e:
            if waited >= max_s:
                raise
            why = "Redis is full (maxmemory)" if isinstance(e, OutOfMemoryError) else "Redis unavailable"
            log.warning("%s: %s (%s); retrying in %.1f s", what, why, e, delay)
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


class DocWriter:
    """Documents to Redis through pipelines of ~1000 commands: each with its fleet rows, indexes and
    summaries (`RedisStore.write_many`) and a point of its lag history. The topics the documents
    touched are left in `store.topics.touched` for whoever aggregates them (`TopicIndex.flush`)."""

    def __init__(self, store: RedisStore, heads_stored: bool = False) -> None:
        self.store = store
        self.heads_stored = heads_stored  # RedisStore.write_many: the documents' keys hold them already
        self.pending: list[tuple[GroupDocument, int, int, str]] = []
        self.written = 0

    def add(self, doc: GroupDocument, ts: int, refreshed: int, text: str) -> None:
        """`text` is the document as the model stage serialised it (model_state._dumps)."""
        self.pending.append((doc, int(ts or 0), int(refreshed), text))
        if len(self.pending) >= 200:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        store, pending = self.store, self.pending
        pipe = store.pipeline()
        store.write_many(
            [(doc, refreshed, ts or refreshed) for doc, ts, refreshed, _ in pending],
            pipe=pipe,
            texts=[text for *_, text in pending],
            heads_stored=self.heads_stored,
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
                    slot_ms=LAG_POINT_MS,
                )
            if len(pipe) >= PIPELINE_COMMANDS:
                pipe.execute()
        pipe.execute()
        self.written += len(pending)
        self.pending = []


# One Redis client per Python worker process and sink settings: the model stage writes its documents
# from every bucket it runs (see `model_writer`), and a connection per bucket was a connection per call.
_STORES: dict[SinkConfig, RedisStore] = {}


def model_store(cfg: SinkConfig) -> RedisStore:
    """This process's store (and client) for `cfg`."""
    store = _STORES.get(cfg)
    if store is None:
        store = RedisStore.from_url(cfg.redis_url, prefix=cfg.prefix, retention_ms=cfg.retention_ms)
        _STORES[cfg] = store
    return store


def model_writer(cfg: SinkConfig) -> DocWriter:
    """A DocWriter for the model stage's own writes, on this process's client for `cfg`."""
    store = model_store(cfg)
    store.topics.touched = set()  # a failed earlier attempt's topics are the retried batch's too
    return DocWriter(store)


def write_model_docs(cfg: SinkConfig, docs: list[tuple[GroupDocument, int, int, str]]) -> set[str]:
    """The model stage's documents of one bucket to Redis (retried like the sink's writes); returns the
    topics whose aggregate they touched, which the sink recomputes once per partition."""

    def attempt() -> set[str]:
        writer = model_writer(cfg)
        for item in docs:
            writer.add(*item)
        writer.flush()
        return set(writer.store.topics.touched)

    try:
        return with_retry(attempt, "model stage", cfg.redis_retry_s)
    except Exception:
        _STORES.pop(cfg, None)  # a client in a bad state is not kept for the task's retry
        raise


def write_rows(store: RedisStore, rows: Iterable[Any]) -> dict[str, int]:
    """Write model output rows (group, kind, ts, refreshed, payload) through pipelines of ~1000
    commands: documents ("doc"), dead letters ("dead"), refresh stamps ("refresh"), and the topics
    whose aggregate is due ("topics", the topic in `group`: the model stage wrote those documents)."""
    counts = {"docs": 0, "dead": 0, "max_ts": 0}
    docs = DocWriter(store)
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
        if r["kind"] == "topics":
            store.topics.touched.add(r["group"])
            continue
        if r["kind"] == "dead":
            entry = json.loads(r["payload"])
            raw = {"key": entry.get("key"), "value": entry.get("value")}
            # the whole record's sizes, where only a prefix is kept (model_state.dead_letter_payload):
            # dropped here, a reader could not tell a cut record from a small one (tests/faults)
            raw |= {k: entry[k] for k in ("key_bytes", "value_bytes") if k in entry}
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
        docs.add(doc, int(r["ts"] or 0), int(r["refreshed"]), r["payload"])
        counts["docs"] += 1
        counts["max_ts"] = max(counts["max_ts"], int(r["ts"] or 0))
    docs.flush()
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
