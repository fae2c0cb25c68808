"""Stateless first stage, run in the executors: raw rows of the sources -> rows routed to groups.

Runs as `mapInArrow` (`route_arrow`). Offset commits, nearly every record of `__consumer_offsets`,
are routed and decoded a column at a time: each distinct key is read once, the values of the common
layouts with numpy (commit_columns). They do not leave one by one: a task's commits are gathered into
runs, one row per (group, partition) of kind "commits" (commit_runs), which carry the last commit,
the lag window's last slots and every commit packed, but no raw bytes; 1,000,000 commits of 10,000
groups leave as about 40,000 rows, and the shuffle and the model stage work per run. Every other
row (topic, partition, offset, timestamp, key, value) is routed one by one according to the kind of
its topic: any other `__consumer_offsets` record by the group in its key (the codec reads the key
only; the value is decoded once, next to the model, in the second stage), heartbeat events, broker log
lines and Admin API snapshots (describe / committed / log-end offsets) through the coordinator model's
parsers. Such a row keeps its raw bytes and gets the state bucket of its group. Whatever cannot be
routed becomes a dead-letter row (raw bytes, position, error) in DEAD_BUCKET, so it reaches the sink
without stopping anything; rows that carry no group evidence (a broker log line about something
else) are dropped. `decode_one` turns a raw row into evidence; both stages use it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from collectors.pipeline import heap_trim
from collectors.pipeline.admin_changes import is_resend
from collectors.pipeline.change_hints import moving_groups
from collectors.pipeline.rows import (
    CLOCK_TOPIC,
    DEAD_BUCKET,
    DEAD_LETTER_KEY,
    ENDS_BUCKET,
    RAW_SCHEMA,
    REFRESH_BUCKET,
    ROUTED_COLUMNS,
    arrow_schema,
    bucket_of,
)

_NO_COMMIT = (None, 0, 0, 0, 0, 0, 0, 0, False, 0, None, None, None)

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
    from collectors.codec.decoder import decode_record
    from coordinator_model import evidence as E

    if kind == "offsets":
        if key is None:
            raise ValueError("record without a key")
        ev = E.from_offsets_record(decode_record(key, value, partition, offset, ts))
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
    if "\\ud" in text or "\\uD" in text:  # rare: a character past the BMP escaped as a pair, or a lone one
        _refuse_lone_surrogates(obj)
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    if kind == "heartbeat":
        ev = E.from_heartbeat_json(obj)
        return [(ev.group, ev.ts, 4, ev)]
    if kind == "admin":
        if obj.get("clock") is True:
            return []  # the Admin poller's clock record: it only wakes the timers
        if "end_offsets" in obj:
            # The Admin poller's line of log-end offsets, [[topic, partition, offset], ...]: the
            # cluster's (group "") or, as a capture or an older poller has them, a group's
            return _end_offsets_line(obj, key)
        if "end_offset" in obj:
            ev = E.from_end_offset_json(obj)
            # Log-end offsets belong to a partition; the producer keyed them by the group they serve.
            group = obj.get("group") or (key.decode("utf-8") if key else None)
            return [(group, ev.ts, END_OFFSET_RANK, ev)] if group else []
        ev = E.from_describe_json(obj)
        return [(ev.group, ev.ts, 2, ev)]
    raise ValueError(f"no decoder for source kind {kind!r}")


def _refuse_lone_surrogates(obj: Any) -> None:
    """Refuse a JSON line whose strings hold a lone surrogate (an escape such as \\ud800 that no pair
    completes). Python's reader takes it, but no UTF-8 encoder writes it back: as a committed topic
    it failed the model stage's Redis reads and writes after the row's guard (the query failed, and
    again at each restart). orjson, which the fast routes read with, refuses such text outright."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string of the line holds a lone surrogate: not UTF-8 text") from None


def _end_offsets_line(obj: dict, key: bytes | None) -> list[tuple[str, int, int, Any]]:
    """The Admin poller's line of log-end offsets as one EndOffsets evidence, for its group, or for
    group "" when it is the cluster's (`"group": ""`, as the poller writes them: one line per topic,
    whatever number of groups read it), which only the live route takes (`_route_rows`)."""
    from coordinator_model.evidence import EvidenceError, from_end_offsets_json

    group = obj.get("group")
    if group is None:
        group = key.decode("utf-8") if key else None
    if group is None or not isinstance(group, str):
        raise EvidenceError("end offsets line needs a group and a list of [topic, partition, offset]")
    ev = from_end_offsets_json(obj)  # refuses a line without the list, with the same words
    return [(group, ev.ts, END_OFFSET_RANK, ev)] if ev is not None else []


def commit_evidence(group: str, ts: int, log_offset: int, c: tuple) -> Any:
    """The OffsetCommit evidence of one commit of a run (kind "commit"); c = (topic, partition,
    offset, commit timestamp, leader epoch, expire timestamp, topic id or None). Equal to what
    `decode_one` makes of the raw record (the first stage only decodes values with an empty metadata
    string)."""
    from coordinator_model.evidence import OffsetCommit

    topic, partition, offset, commit_ts, epoch, expire, *rest = c  # a checkpoint's held row: 6 fields
    topic_id = rest[0] if rest else None
    return OffsetCommit(
        ts,
        group,
        topic,
        int(partition),
        int(offset),
        commit_timestamp=int(commit_ts),
        leader_epoch=int(epoch),
        metadata="",
        expire_timestamp=int(expire),
        log_offset=int(log_offset),
        topic_id=topic_id,
    )


# bucket count -> key bytes -> (group, bucket), per executor process
_KEY_ROUTES: dict[int, dict[bytes, tuple[str, int]]] = {}


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
    if kind == "admin" and (hit := _admin_route(value)) is not None:
        return hit
    # One row per group: the model stage decodes the row again and takes that group's share of it (a
    # group's end-offsets line is a hundred pieces of evidence, and a row each carried the whole line
    # a hundred times: 1.5 GB for 10,000 groups).
    out: dict[str, tuple[str, int, int]] = {}
    for g, t, rank, _ in decode_one(kind, topic, partition, offset, ts, key, value):
        out.setdefault(g, (g, int(t), rank))
    return list(out.values())


def _admin_route(value: bytes | None) -> list[tuple[str, int, int]] | None:
    """(group, ts, rank) of an Admin poller line read from its "group" and "ts" alone, as `decode_one`
    would give them; None when the line is not of that plain shape (the full decoder then routes it,
    or sets it aside). The model stage decodes the line anyway: building a line's evidence here only
    to route it (a hundred EndOffsets for a group's end-offsets line) made the first stage of a live
    micro-batch take 0.24 ms a line, 5 s for the poller's resends of 10,000 groups of 100 partitions.
    A line whose evidence is malformed is then set aside by the model stage, as the same error."""
    import orjson

    try:
        obj = orjson.loads(value or b"")
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or obj.get("clock") is True:
        return None
    group, ts = obj.get("group"), obj.get("ts")
    if not isinstance(group, str) or type(ts) is not int or "end_offset" in obj:
        return None  # a single partition's end offset may be keyed by its group: the decoder's way
    if not -(2**63) <= ts < 2**63:
        return None  # no long (the routed row's ts): the decoder refuses it, the row is a dead letter
    if "end_offsets" in obj:
        ends = obj["end_offsets"]
        if not isinstance(ends, list):
            return None
        return [(group, ts, END_OFFSET_RANK)] if ends else []
    if not isinstance(obj.get("members"), list) and not ("denied" in obj or "committed" in obj):
        return None
    return [(group, ts, 2)]


# key bytes -> (group, topic, partition) of an OffsetCommit key the codec read (commit_keys leaves
# it keys of an unusual shape), or None for any other key; per executor process
_COMMIT_KEYS: dict[bytes, tuple[str, str, int] | None] = {}


def _commit_key(key: bytes) -> tuple[str, str, int] | None:
    cache = _COMMIT_KEYS
    hit = cache.get(key, False)
    if hit is not False:
        return hit
    from collectors.codec import records as r
    from collectors.codec.decoder import decode_key

    try:
        _, k = decode_key(key)
    except Exception:
        k = None  # the row-by-row path makes it a dead letter with the codec's error
    hit = None
    if isinstance(k, r.OffsetCommitKey):
        hit = (k.group, k.topic, k.partition)
    if len(cache) > 200_000:
        cache.clear()
    cache[key] = hit
    return hit


def route_arrow(
    batches: Iterator[Any],
    kinds: Mapping[str, str],
    buckets: int = 256,
    flush_rows: int | None = None,
    wake: Any = None,
    changes: Any = None,
    ends_apart: bool = False,
    known: Any = None,
    trim: bool = True,
) -> Iterator[Any]:
    """mapInArrow body: raw record batches in, ROUTED_SCHEMA batches out. With `known`
    (known_commits.KnownCommits, live), runs of commits to partitions their group already holds are
    committed in Redis here and do not go on. With `changes`
    (change_hints.ChangeHints), the groups whose records just showed them moving are left for the
    Admin poller to describe fast. With `ends_apart` (live), the Admin poller's end-offsets lines go
    to ENDS_BUCKET for the cluster's log-end histories, not to their group's model: one row per time
    and route call, each partition's observation once (`_route_rows`).

    Offset commits with the common value layouts are routed and decoded a column at a time (see
    commit_columns) and leave, at the end of the task (or every `flush_rows` commits), as runs of kind
    "commits" without their raw bytes (see commit_runs); every other row takes the row-by-row path
    (`_route_rows`) at once and keeps its raw bytes for the model's decoder."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from collectors.pipeline.commit_columns import decode_commit_values
    from collectors.pipeline.commit_runs import FLUSH_ROWS, CommitRunGatherer

    schema = arrow_schema()
    runs = CommitRunGatherer(schema, flush_rows or FLUSH_ROWS, buckets)
    offsets_topics = [t for t, k in kinds.items() if k == "offsets"]
    moving: dict[str, int] = {}
    ordered: set[str] = set()  # groups with other offsets-topic records in the task: runs to the engine

    def flushed() -> Any:
        out = runs.flush()
        return known.take(out, ordered) if known is not None else out

    for batch in batches:
        n = batch.num_rows
        if not n:
            continue
        topic, key, value = batch.column("topic"), batch.column("key"), batch.column("value")
        cand = np.asarray(pc.is_in(topic, pa.array(offsets_topics, pa.string())).fill_null(False))
        cand &= np.asarray(key.is_valid()) & np.asarray(value.is_valid())
        for c in ("timestamp", "offset", "partition"):  # never null from Kafka; a capture row may be
            cand &= np.asarray(batch.column(c).is_valid())
        fast = np.zeros(n, bool)
        rows = np.flatnonzero(cand)
        if len(rows):
            enc = pc.dictionary_encode(key.take(pa.array(rows)))
            keys = _commit_keys(enc.dictionary, runs)
            idx = np.asarray(enc.indices)
            sel = keys.ok[idx]
            rows, idx = rows[sel], idx[sel]
            if len(rows):
                cols = decode_commit_values(value.take(pa.array(rows)))
                good = cols.ok
                rows, idx = rows[good], idx[good]
                fast[rows] = True
                if len(rows):
                    _gather(runs, rows, idx, keys, batch, cols, good)
                    if runs.full():
                        yield from _slices(flushed())
        slow = np.flatnonzero(~fast)
        if len(slow):
            rest = batch if len(slow) == n else batch.take(pa.array(slow))
            out = _route_rows(rest.to_pydict(), kinds, buckets, wake, ends_apart)
            if known is not None:
                ordered.update(
                    g for g, k in zip(out["group"], out["kind"], strict=True) if k == "offsets" and g
                )
            if changes is not None:
                for g, t in moving_groups(out, int(time.time() * 1000)).items():
                    moving[g] = max(moving.get(g, 0), t)
            if out["group"]:
                yield pa.RecordBatch.from_pydict(out, schema=schema)
    if changes is not None:
        changes.note(moving)
    yield from _slices(flushed())
    if trim:  # a Spark worker's; never the driver's (the commit lane: heap_trim.py)
        heap_trim.release()  # a catch-up task's columns are gone: the idle worker need not keep their pages


@dataclass
class _RunKeys:
    """The distinct keys of a batch that are OffsetCommit keys, as the gatherer's ids."""

    ok: Any  # bool per distinct key
    group: Any  # int64 gatherer group id per distinct key
    topic: Any  # int64 gatherer topic id
    partition: Any  # int32


def _commit_keys(dictionary: Any, runs: Any) -> _RunKeys:
    """Decode a batch's distinct keys: a column at a time (commit_keys), and through the codec those
    of another shape (which may still be OffsetCommit keys, say with trailing bytes)."""
    import numpy as np

    from collectors.pipeline.commit_keys import decode_commit_keys

    ck = decode_commit_keys(dictionary)
    group = runs.group_ids(ck.groups)[ck.group_code] if ck.groups else np.zeros(len(ck.ok), np.int64)
    topic = runs.topic_ids_of(ck.topics)[ck.topic_code] if ck.topics else np.zeros(len(ck.ok), np.int64)
    ok, partition = ck.ok.copy(), ck.partition.astype(np.int32)
    other = np.flatnonzero(~ok)
    if len(other):
        for i, k in zip(other.tolist(), dictionary.take(other).to_pylist(), strict=True):
            hit = _commit_key(k)
            if hit is not None:
                ok[i] = True
                group[i] = runs.group_ids([hit[0]])[0]
                topic[i] = runs.topic_ids_of([hit[1]])[0]
                partition[i] = hit[2]
    return _RunKeys(ok, group, topic, partition)


# Rows per record batch handed back to Spark: a task's runs leave as one batch of up to FLUSH_ROWS
# rows, hundreds of MB, which Spark's JVM reads into one Arrow buffer from its direct memory (as
# large as the heap, 1 GB by default): a whole catch-up in one batch ran out of it.
OUT_BATCH_ROWS = 32_768


def _slices(batch: Any) -> Iterator[Any]:
    if batch is None:
        return
    for start in range(0, batch.num_rows, OUT_BATCH_ROWS):
        yield batch.slice(start, OUT_BATCH_ROWS)


def _gather(runs: Any, rows: Any, idx: Any, keys: _RunKeys, batch: Any, cols: Any, good: Any) -> None:
    """Hand a batch's decoded commits to the task's run gatherer: rows (positions in the batch), idx
    (their key's index into keys), cols/good (the decoded values of those rows)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    take = pa.array(rows)
    src = pc.dictionary_encode(batch.column("topic").take(take))
    src_topic = runs.topic_ids_of(src.dictionary.to_pylist())[np.asarray(src.indices)]
    codes = cols.topic_id_code[good]
    if cols.topic_ids and (codes >= 0).any():
        # an id names one topic: one commit per distinct id says which
        found, first = np.unique(codes, return_index=True)
        for code, j in zip(found.tolist(), first.tolist(), strict=True):
            if code >= 0:
                runs.topic_ids[runs.topic_name(int(keys.topic[idx[j]]))] = cols.topic_ids[code]
    runs.add(
        group=keys.group[idx],
        topic=keys.topic[idx],
        partition=keys.partition[idx],
        src_topic=src_topic,
        src_part=np.asarray(batch.column("partition").take(take)),
        ts=np.asarray(batch.column("timestamp").take(take)),
        log=np.asarray(batch.column("offset").take(take)),
        offset=cols.offset[good],
        commit_ts=cols.commit_timestamp[good],
        expire=cols.expire_timestamp[good],
        epoch=cols.leader_epoch[good],
    )


def _route_rows(
    raw: dict[str, list[Any]],
    kinds: Mapping[str, str],
    buckets: int,
    wake: Any = None,
    ends_apart: bool = False,
) -> dict[str, list[Any]]:
    """The row-by-row path: one output row per group a record is evidence for, with its state bucket;
    a row that cannot be routed goes to the dead-letter bucket."""
    out: dict[str, list[Any]] = {c: [] for c in ROUTED_COLUMNS}
    cols = [out[c] for c in ROUTED_COLUMNS]

    def emit(*values: Any, cols: list[list[Any]] = cols) -> None:
        for col, v in zip(cols, values + _NO_COMMIT, strict=True):
            col.append(v)

    routes = _KEY_ROUTES.setdefault(buckets, {})
    # ends_apart: time -> ({(topic, partition): log end}, the position of the first line of that time)
    ends_seen: dict[int, tuple[dict[tuple[str, int], int], tuple[str, int, int]]] = {}
    if ends_apart:
        import orjson

        from coordinator_model.evidence import from_end_offsets_json
    i64_min, i64_max, i32_min, i32_max = -(2**63), 2**63 - 1, -(2**31), 2**31 - 1  # long, int columns
    for topic, partition, offset, ts, key, value in zip(
        raw["topic"], raw["partition"], raw["offset"], raw["timestamp"], raw["key"], raw["value"], strict=True
    ):
        kind = "admin" if topic == CLOCK_TOPIC else kinds.get(topic)
        if kind == "admin" and value is not None and b'"clock"' in value:
            clock_ts = _clock_ts(value)
            if clock_ts is not None and not i64_min <= clock_ts <= i64_max:
                # emitted as is, it would fail the whole batch's Arrow conversion, outside any guard
                err = "ValueError: the clock record's ts does not fit a long"
                emit(DEAD_BUCKET, DEAD_LETTER_KEY, ts, 9, kind, topic, partition, offset, key, value, err)
                continue
            if clock_ts is not None:
                # The Admin poller's clock record: every bucket gets it (group null), so each bucket's
                # event-time watermark moves on even when none of its groups had evidence; with wake
                # hints (wake_hints.py), only the buckets with something due by then.
                for b in wake.due(buckets, clock_ts) if wake is not None else range(buckets):
                    emit(b, None, clock_ts, 9, kind, topic, partition, offset, key, value, None)
                continue
        if kind == "offsets" and key is not None:
            # A commit key repeats for every commit of a partition; read each key once.
            hit = routes.get(key)
            if hit is not None:
                emit(hit[1], hit[0], ts, 0, kind, topic, partition, offset, key, value, None)
                continue
        try:
            if kind is None:
                raise ValueError(f"topic {topic!r} is not a groupscope source")
            resend = kind == "admin" and is_resend(value)
            # Every value bound for a typed column is checked here, inside the guard, before any of
            # the row's routes is emitted: Python's ints are unbounded and a str may hold a lone
            # surrogate, and either, reaching RecordBatch.from_pydict, failed the whole batch (and
            # the query, again at each restart). So a row is routed whole, or is one dead letter.
            if partition is not None and not i32_min <= partition <= i32_max:
                raise ValueError(f"partition {partition} does not fit an int")
            hits = []
            for group, ets, rank in route_one(kind, topic, partition, offset, ts, key, value):
                if ets is not None and (type(ets) is not int or not i64_min <= ets <= i64_max):
                    raise ValueError(f"timestamp {ets!r} of group {group!r} does not fit a long"[:300])
                if type(rank) is not int or not i32_min <= rank <= i32_max:
                    raise ValueError(f"rank {rank!r} does not fit an int")
                # bucket_of also refuses a group that is no str or does not encode to UTF-8
                hits.append((group, ets, rank, bucket_of(group, buckets)))
            if not ends_apart and any(h[0] == "" for h in hits):
                raise ValueError("the cluster's log-end offsets (a line without a group) are read only live")
            if ends_apart and hits and hits[0][2] == END_OFFSET_RANK:
                # a partition's, not a group's: gathered once per partition and time for the whole
                # call (every group's line of a poll repeats the same log ends); a resend too (merging
                # is idempotent, and it refills a Redis that lost its data with the ends that did not
                # move). A line the model stage would refuse is refused here, as a dead letter.
                ev = from_end_offsets_json(orjson.loads(value or b""))
                if ev is not None:
                    seen = ends_seen.setdefault(int(ev.ts), ({}, (topic, partition, offset)))[0]
                    for t, p, end in ev.rows:
                        seen[(t, p)] = end
                continue
            for group, ets, rank, bucket in hits:
                if resend:  # an unchanged answer sent again: a refresh stamp, not evidence
                    emit(REFRESH_BUCKET, group, ets, rank, kind, topic, partition, offset, None, None, None)
                    continue
                if kind == "offsets":
                    if len(routes) > 200_000:
                        routes.clear()
                    routes[key] = (group, bucket)
                emit(bucket, group, ets, rank, kind, topic, partition, offset, key, value, None)
        except Exception as e:  # every failure, whatever its type, becomes a dead letter
            # its message as text Arrow takes (a JSON string decoded may hold a lone surrogate)
            err = _err(e).encode("utf-8", "backslashreplace").decode("utf-8")
            emit(DEAD_BUCKET, DEAD_LETTER_KEY, ts, 9, kind, topic, partition, offset, key, value, err)
    for at, (seen, (topic, partition, offset)) in sorted(ends_seen.items()):
        rows = [[t, p, end] for (t, p), end in seen.items()]
        line = orjson.dumps({"group": "", "ts": at, "end_offsets": rows})
        emit(ENDS_BUCKET, "", at, END_OFFSET_RANK, "admin", topic, partition, offset, None, line, None)
    return out


RAW_COLUMNS = ["topic", "partition", "offset", "timestamp", "key", "value"]


def decode_batches(
    batches: Iterator[Any],
    kinds: Mapping[str, str],
    buckets: int = 256,
    flush_rows: int | None = None,
    ends_apart: bool = False,
    known: Any = None,
) -> Iterator[Any]:
    """`route_arrow` for pandas frames of the raw columns (tests and tools), ROUTED_SCHEMA frames out."""
    import pyarrow as pa

    raw_schema = arrow_schema(RAW_SCHEMA)

    def to_arrow(pdf: Any) -> Any:
        return pa.RecordBatch.from_pandas(pdf[RAW_COLUMNS], schema=raw_schema, preserve_index=False)

    arrow = (to_arrow(pdf) for pdf in batches)
    for out in route_arrow(arrow, kinds, buckets, flush_rows, ends_apart=ends_apart, known=known):
        yield out.to_pandas()


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
