"""Offset commits gathered into runs in the first stage: one row per (group, partition) per task.

A catch-up is millions of offset commits, and most of what they cost downstream is per row: Spark's
shuffle and sort of every row to its state bucket, the Arrow hand-over to the model's worker, a
Python tuple per commit there. But a commit only replaces the last one of its partition, and the lag
window keeps the last value of each of its last WINDOW slots, so a run of one partition's commits
comes down to the last commit and at most WINDOW (ts, offset) samples. `CommitRunGatherer` collects
the commits the first stage decoded (commit_columns) for a whole task and summarises each run with
numpy: 1,000,000 commits of 10,000 groups become about 40,000 rows.

What a summary means can depend on the group's state, which only the model stage has: whether every
commit of the run is kept (an older commit record never replaces a newer one, by log offset) and
where the lag window's slots fall (a commit opens a slot when it is MIN_DISTANCE_MS after the start of
the last one). So a summary is made under the assumptions that hold in a catch-up, "log offsets
never go down" (`c_mono`) and "the run's first commit opens a slot" (`c_slots`, `c_slot_start`),
and each run also carries all of its commits, packed (`c_run`, RUN_DTYPE), for the model stage to
apply one by one when an assumption does not hold (GroupEngine.apply_commit_runs decides).
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

import numpy as np

from collectors.pipeline.rows import ROUTED_COLUMNS, bucket_of
from coordinator_model.offsets import CommitRun
from coordinator_model.offsets.lag import MIN_DISTANCE_MS, WINDOW

RUN_KIND = "commits"
# One commit of a run, packed; little-endian whatever the machine, so any executor can read it.
RUN_DTYPE = np.dtype(
    [
        ("ts", "<i8"),
        ("log", "<i8"),
        ("offset", "<i8"),
        ("commit_ts", "<i8"),
        ("expire", "<i8"),
        ("epoch", "<i4"),
    ]
)
SLOT_DTYPE = np.dtype([("ts", "<i8"), ("offset", "<i8")])
FLUSH_ROWS = 1_000_000  # commits held per task before their runs are written out (about 60 MB)

_FIELDS = ("ts", "log", "offset", "commit_ts", "expire", "epoch")


# the columns that name a run: group, committed topic and partition, source topic and partition
# (ids into the gatherer's name tables)
RUN_KEYS = ("group", "topic", "partition", "src_topic", "src_part")


class CommitRunGatherer:
    """Collects one task's decoded commits and writes them out as run rows (ROUTED_SCHEMA).

    A run is named by numbers (RUN_KEYS), not by Python objects: a catch-up has as many runs as the
    fleet has committed partitions, and a tuple and a dict lookup each were a sixth of the first
    stage's time. Group and topic names are interned once per distinct name."""

    def __init__(self, schema: Any, flush_rows: int = FLUSH_ROWS, buckets: int = 256) -> None:
        self.schema = schema
        self.flush_rows = flush_rows
        self.buckets = buckets
        self._groups = _Names()
        self._topics = _Names()  # committed and source topics
        self._parts: list[dict[str, np.ndarray]] = []
        self.pending = 0
        # committed topic -> its id, from the version 4 values that carry one (an id is per topic, so
        # a run carries its topic's id rather than one per commit)
        self.topic_ids: dict[str, str] = {}

    def group_ids(self, names: list[str]) -> np.ndarray:
        """The gatherer's ids of these group names (interned on first sight)."""
        return self._groups.ids(names)

    def topic_ids_of(self, names: list[str]) -> np.ndarray:
        """The gatherer's ids of these topic names (committed or source topics)."""
        return self._topics.ids(names)

    def topic_name(self, tid: int) -> str:
        return self._topics.names[tid]

    def add(self, **cols: np.ndarray) -> None:
        """Commits in any order: the RUN_KEYS (ids from group_ids/topic_ids_of, partitions) and the
        RUN_DTYPE fields (ts, log, offset, commit_ts, expire, epoch), one array each."""
        part = {k: np.asarray(cols[k], np.int64) for k in RUN_KEYS}
        part.update({f: np.asarray(cols[f]) for f in _FIELDS})
        self._parts.append(part)
        self.pending += len(part["ts"])

    def full(self) -> bool:
        return self.pending >= self.flush_rows

    def flush(self) -> Any | None:
        """The runs gathered so far as one record batch (None if there are none)."""
        if not self.pending:
            return None
        parts, self._parts, self.pending = self._parts, [], 0
        cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        runs = summarise(cols, RUN_KEYS)
        return self._batch(runs)

    def _batch(self, runs: dict[str, Any]) -> Any:
        import pyarrow as pa

        key = runs["keys"]
        k = len(key["group"])
        groups = pa.array(self._groups.names, pa.string())
        topics = pa.array(self._topics.names, pa.string())
        ids = [self.topic_ids.get(t) for t in self._topics.names]
        buckets = np.array([bucket_of(g, self.buckets) for g in self._groups.names], np.int32)
        values = {
            "bucket": pa.array(buckets[key["group"]], pa.int32()),
            "group": groups.take(pa.array(key["group"])),
            "ts": pa.array(runs["last_ts"], pa.int64()),
            "rank": pa.array(np.zeros(k, np.int32)),
            "kind": pa.repeat(pa.scalar(RUN_KIND), k),
            "topic": topics.take(pa.array(key["src_topic"])),
            "partition": pa.array(key["src_part"].astype(np.int32), pa.int32()),
            "offset": pa.array(runs["first_log"], pa.int64()),
            "key": pa.nulls(k, pa.binary()),
            "value": pa.nulls(k, pa.binary()),
            "error": pa.nulls(k, pa.string()),
            "c_topic": topics.take(pa.array(key["topic"])),
            "c_partition": pa.array(key["partition"].astype(np.int32), pa.int32()),
            "c_offset": pa.array(runs["offset"], pa.int64()),
            "c_commit_ts": pa.array(runs["commit_ts"], pa.int64()),
            "c_epoch": pa.array(runs["epoch"].astype(np.int32), pa.int32()),
            "c_expire": pa.array(runs["expire"], pa.int64()),
            "c_first_ts": pa.array(runs["first_ts"], pa.int64()),
            "c_last_log": pa.array(runs["last_log"], pa.int64()),
            "c_mono": pa.array(runs["mono"], pa.bool_()),
            "c_slot_start": pa.array(runs["slot_start"], pa.int64()),
            "c_slots": _binary(runs["slots"], runs["slot_bounds"] * SLOT_DTYPE.itemsize),
            "c_run": _binary(runs["packed"], runs["run_bounds"] * RUN_DTYPE.itemsize),
            "c_topic_id": pa.array(ids, pa.string()).take(pa.array(key["topic"])),
        }
        self._reset_names_if_large()
        return pa.RecordBatch.from_arrays([values[c] for c in ROUTED_COLUMNS], schema=self.schema)

    def _reset_names_if_large(self) -> None:
        if len(self._groups.names) > 500_000:  # a task over a huge fleet: ids are only needed per flush
            self._groups = _Names()
            self._topics = _Names()


class _Names:
    """Names interned as ids 0, 1, 2, ... in order of first sight."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._ids: dict[str, int] = {}

    def ids(self, names: list[str]) -> np.ndarray:
        out = np.empty(len(names), np.int64)
        for i, name in enumerate(names):
            nid = self._ids.get(name)
            if nid is None:
                nid = self._ids[name] = len(self.names)
                self.names.append(name)
            out[i] = nid
        return out


def _binary(data: np.ndarray, bounds: np.ndarray) -> Any:
    """A pyarrow binary array over one buffer: row i is data's bytes [bounds[i], bounds[i + 1])."""
    import pyarrow as pa

    if bounds[-1] >= 2**31:  # FLUSH_ROWS keeps a batch's runs far below this
        raise ValueError(f"{bounds[-1]} bytes of runs in one batch: lower FLUSH_ROWS")
    offsets = pa.py_buffer(bounds.astype(np.int32).tobytes())
    return pa.Array.from_buffers(pa.binary(), len(bounds) - 1, [None, offsets, pa.py_buffer(data.tobytes())])


def summarise(cols: dict[str, np.ndarray], keys: tuple[str, ...] = RUN_KEYS) -> dict[str, Any]:
    """Runs of commits (cols: the columns `keys` that name a run and the RUN_DTYPE fields, any
    order) -> per run: its key columns ("keys"), the first and last commit, whether log offsets never
    go down, the lag window's last slots assuming the first commit opens one, and every commit packed
    in evidence order (time, then log offset)."""
    order = np.lexsort((cols["log"], cols["ts"], *_run_sort_keys([cols[k] for k in keys])))
    key_cols = {k: cols[k][order] for k in keys}
    ts = cols["ts"][order].astype(np.int64)
    log = cols["log"][order].astype(np.int64)
    n = len(ts)
    first = np.zeros(n, bool)
    first[:1] = True
    for col in key_cols.values():
        first[1:] |= col[1:] != col[:-1]
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], n)  # exclusive
    last = ends - 1

    down = np.zeros(n, np.int64)
    down[1:] = (log[1:] < log[:-1]) & ~first[1:]
    mono = (np.add.reduceat(down, starts) == 0) & (log[starts] >= 0)

    opener = _openers(ts, first)
    slot_no = np.cumsum(opener) - 1  # global slot number of each commit
    run_of = np.cumsum(first) - 1
    slots_in_run = slot_no[last] - slot_no[starts] + 1
    is_end = np.zeros(n, bool)
    is_end[-1] = True
    is_end[:-1] = opener[1:]
    keep_from = slot_no[starts] + np.maximum(slots_in_run - WINDOW, 0)  # first slot kept, per run
    kept = np.flatnonzero(is_end & (slot_no >= keep_from[run_of]))
    slots = np.empty(len(kept), SLOT_DTYPE)
    slots["ts"] = ts[kept]
    slots["offset"] = cols["offset"][order][kept]
    kept_per_run = np.minimum(slots_in_run, WINDOW)
    positions = np.where(opener, np.arange(n), -1)
    slot_start = ts[np.maximum.reduceat(positions, starts)]

    packed = np.empty(n, RUN_DTYPE)
    for f in _FIELDS:
        packed[f] = cols[f][order]
    return {
        "keys": {k: col[starts] for k, col in key_cols.items()},
        "first_ts": ts[starts],
        "last_ts": ts[last],
        "first_log": log[starts],
        "last_log": log[last],
        "mono": mono,
        "offset": packed["offset"][last],
        "commit_ts": packed["commit_ts"][last],
        "epoch": packed["epoch"][last],
        "expire": packed["expire"][last],
        "slot_start": slot_start,
        "slots": slots,
        "slot_bounds": np.concatenate(([0], np.cumsum(kept_per_run))),
        "packed": packed,
        "run_bounds": np.append(starts, n),
    }


def _run_sort_keys(key_cols: list[np.ndarray]) -> list[np.ndarray]:
    """Sort keys for np.lexsort (least significant first) that order commits by their run's key
    columns: one int64 packing them all when their values fit in 63 bits (a 7-key lexsort was most
    of summarise's time), else the columns themselves."""
    if not len(key_cols[0]) or any(int(c.min()) < 0 for c in key_cols):
        return list(reversed(key_cols))
    widths = [max(int(c.max()), 1).bit_length() for c in key_cols]
    if sum(widths) > 63:
        return list(reversed(key_cols))
    packed = np.zeros(len(key_cols[0]), np.int64)
    for col, width in zip(key_cols, widths, strict=True):
        packed = (packed << width) | col.astype(np.int64)
    return [packed]


def _openers(ts: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Which commits open a lag slot when each run's first commit does (PartitionWindow.add: a commit
    opens a slot when it is MIN_DISTANCE_MS or more after the start of the last slot). A commit that
    far after the one before it always opens one; between those, the slots are found by bisection,
    so the Python work is per slot of the stretches where commits come closer than that."""
    n = len(ts)
    opener = first.copy()
    opener[1:] |= (ts[1:] - ts[:-1]) >= MIN_DISTANCE_MS
    seg_starts = np.flatnonzero(opener)
    seg_ends = np.append(seg_starts[1:], n)
    long = np.flatnonzero(ts[seg_ends - 1] - ts[seg_starts] >= MIN_DISTANCE_MS)
    if len(long):
        tl = ts.tolist()
        found = []
        for s, e in zip(seg_starts[long].tolist(), seg_ends[long].tolist(), strict=True):
            o = s
            while True:
                o = bisect_left(tl, tl[o] + MIN_DISTANCE_MS, o + 1, e)
                if o >= e:
                    break
                found.append(o)
        opener[found] = True
    return opener


def commit_runs_of_columns(
    c_topic: list[str],
    c_partition: list[int],
    first_ts: list[int],
    first_log: list[int],
    last_ts: list[int],
    last_log: list[int],
    mono: list[bool],
    offset: list[int],
    commit_ts: list[int],
    epoch: list[int],
    expire: list[int],
    slots: list[bytes],
    slot_start: list[int],
    packed: list[bytes],
    topic_id: list[str | None],
) -> list[CommitRun]:
    """The model's CommitRun of each run row, from the rows' columns as Python lists: the lag slots
    of all of them are read from one buffer (a numpy call per run was a twentieth of a catch-up's
    model stage)."""
    counts = [len(b) // SLOT_DTYPE.itemsize for b in slots]
    flat = np.frombuffer(b"".join(slots), SLOT_DTYPE).tolist()
    out: list[CommitRun] = []
    at = 0
    for i, topic in enumerate(c_topic):
        partition = c_partition[i]
        out.append(
            CommitRun(
                topic,
                partition,
                first_ts[i],
                first_log[i],
                last_ts[i],
                last_log[i],
                bool(mono[i]),
                offset[i],
                commit_ts[i],
                epoch[i],
                expire[i],
                flat[at : at + counts[i]],
                slot_start[i],
                _rows_of(topic, partition, packed[i]),
                topic_id[i] or None,
            )
        )
        at += counts[i]
    return out


def _rows_of(topic: str, partition: int, packed: bytes) -> Callable[[], list[tuple]]:
    # a partial of a module function, not a closure: a run held behind the watermark is pickled
    # with its bucket's state
    return functools.partial(_unpacked_rows, topic, partition, bytes(packed))


def _unpacked_rows(topic: str, partition: int, packed: bytes) -> list[tuple]:
    return [
        (ts, topic, partition, off, cts, epoch, expire, log)
        for ts, log, off, cts, expire, epoch in unpack(packed)
    ]


def unpack(packed: bytes) -> list[tuple[int, int, int, int, int, int]]:
    """A run's commits: (ts, log offset, offset, commit timestamp, expire timestamp, leader epoch)."""
    return np.frombuffer(packed, RUN_DTYPE).tolist()
