"""Live, the first stage commits what it can itself: runs of offset commits (commit_runs) to a
partition a group already holds in Redis are applied to that partition's field there and leave the
pipeline, before the shuffle to the model stage.

On a real cluster almost every record of `__consumer_offsets` is such a commit: a consumer commits
every few seconds to the partitions it owns. Sent on to the model stage, each cost a shuffle row, an
Arrow hand-over and a pandas frame per state bucket, and made the bucket's call read and write the
partition there anyway (model_state's commit path). Here a task's runs are committed in one round
trip to Redis per step, with the engine's own rule (OffsetStore.apply_runs), and only the rest go on.

Why that is the engine's result: a plain commit to a partition the group holds changes only that
partition's offset and lag window (GroupEngine._on_offset_commit: a known partition teaches no topic
id, and a group with a stored partition has a state, so `_only_commits` does nothing). What a commit
must be ordered with goes on to the engine whole: every run of a group that has any other record of
the offsets topic in this task (a tombstone, group metadata, a commit of another layout), and a run
to a partition the group does not hold yet. Admin answers are ordered by time in the engine: a
snapshot older than a partition's stored commit does not replace it (OffsetStore.snapshot).

A run Redis already holds (the task run again after a failure) is skipped by its log offset, as in
the model stage. Without a sink (replay, tests of the stages) nothing is taken.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("groupscope.known_commits")

TP = tuple[str, int]


@dataclass
class Committed:
    """What committing a group's runs did: its partitions that were taken (those its offsets already
    held), the stored form of each that moved, and of each taken partition as it stands now."""

    fields: dict[TP, bytes | None]
    taken: set[TP]
    now: dict[TP, bytes]  # every taken partition's stored form after the runs
    read: dict[TP, bytes]  # each partition of `fields` as it was read (what the write compares with)

    @property
    def offsets(self) -> Any:
        """An OffsetStore of the taken partitions as they stand now (decoded when asked: the first
        stage never asks)."""
        from collectors.storage.group_offsets import stored

        return stored(self.now)


def commit_known(store: Any, ends_view: Any, cands: dict[str, list[Any]]) -> dict[str, Committed]:
    """Commit each group's runs (CommitRun) to the partitions its stored offsets already hold, with
    the engine's own rule; a partition it does not hold is the engine's (a first commit teaches it
    topic ids, and an Empty state to a group known only by its commits). A run the stored state
    already holds (by log offset: a batch or task run again) is skipped. Reads Redis (the partitions'
    fields; `ends_view`, the log ends at each commit's time, only read), writes nothing: the caller
    writes `fields`. Groups none of whose partitions are held are left out.

    A partition's one run is applied to its stored bytes (group_offsets.commit_run_packed); several
    runs, or a run the summary does not hold for, go the whole way: decoded, OffsetStore.apply_runs,
    encoded."""
    from collectors.storage.group_offsets import WHOLE_PATH, commit_run_packed, encode, stored

    wanted = {g: sorted({(r.topic, r.partition) for r in runs}) for g, runs in cands.items()}
    raw = store.offsets.load_fields(wanted)
    ends = ends_view({tp for tps in wanted.values() for tp in tps})
    out: dict[str, Committed] = {}
    for group, runs in cands.items():
        held = raw[group]
        if not held:
            continue
        by_tp: dict[TP, list[Any]] = {}
        for r in runs:
            tp = (r.topic, r.partition)
            if tp in held:
                by_tp.setdefault(tp, []).append(r)
        now = dict(held)
        fields: dict[TP, bytes | None] = {}
        whole: dict[TP, list[Any]] = {}
        for tp, tp_runs in by_tp.items():
            made = commit_run_packed(held[tp], tp_runs[0], ends.get(tp)) if len(tp_runs) == 1 else WHOLE_PATH
            if made is WHOLE_PATH:
                whole[tp] = tp_runs
            elif made is not None:
                fields[tp] = now[tp] = made
        taken = set(by_tp)
        if whole:
            offsets = stored({tp: held[tp] for tp in whole})
            taken -= whole.keys() - offsets.committed.keys()  # a malformed field: the engine's
            todo = [
                r
                for tp, tp_runs in whole.items()
                if tp in offsets.committed
                for r in tp_runs
                if r.last_log > offsets.committed[tp].log_offset
            ]
            if todo:
                offsets.ends = {tp: ends[tp] for tp in whole if tp in ends}
                offsets.apply_runs(sorted(todo, key=lambda r: (r.first_ts, r.first_log)))
                for r in todo:
                    tp = (r.topic, r.partition)
                    fields[tp] = encode(offsets, tp)
                    if fields[tp] is not None:
                        now[tp] = fields[tp]
        if taken:
            out[group] = Committed(
                fields, taken, {tp: now[tp] for tp in taken}, {tp: held[tp] for tp in fields}
            )
    return out


class KnownCommits:
    """Picklable (Spark ships it to the executors with the first stage's function): settings only, the
    Redis client and log-ends cache are the worker's own."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink  # sink.SinkConfig

    def take(self, batch: Any, exclude: Iterable[str] = ()) -> Any:
        """Commit the runs of `batch` (run rows, ROUTED_SCHEMA) that are known groups' known
        partitions; the rows left for the model stage."""
        import redis

        from collectors.gc_pause import no_cyclic_gc
        from collectors.pipeline.sink import with_retry

        if batch is None or not batch.num_rows:
            return batch
        try:
            with no_cyclic_gc():  # thousands of runs, fields and dicts: no cycles (gc_pause.py)
                return with_retry(
                    lambda: self._take(batch, set(exclude)), "known commits", self.sink.redis_retry_s
                )
        except redis.RedisError:
            raise  # Redis away past the retries: the task fails and Spark runs it again
        except Exception as e:
            # anything else (a stored field of another shape, a bug): every run goes on to the model
            # stage, which commits them group by group and sets aside what it cannot; a failed task
            # here would be run again on the same records, and fail again
            log.warning("first stage's commit path: %s; its runs go to the model stage", e, exc_info=True)
            return batch

    def _take(self, batch: Any, exclude: set[str]) -> Any:
        import numpy as np
        import pyarrow as pa

        from collectors.pipeline.commit_runs import commit_runs_of_columns
        from collectors.pipeline.sink import model_store

        store = model_store(self.sink)
        groups = batch.column("group").to_pylist()
        by_group: dict[str, list[int]] = {}
        for i, g in enumerate(groups):
            if g not in exclude:
                by_group.setdefault(g, []).append(i)
        names = list(by_group)
        if not names:
            return batch
        held = store.offsets.held(names)
        if not held:
            return batch  # a catch-up's first sight of every group: all of it the engines'
        rows = sorted(i for g in held for i in by_group[g])
        col = {c: batch.column(c).take(pa.array(rows)).to_pylist() for c in _RUN_COLUMNS}
        runs = commit_runs_of_columns(*(col[c] for c in _RUN_COLUMNS))
        run_of = dict(zip(rows, runs, strict=True))
        done = self._commit(store, {g: [run_of[i] for i in by_group[g]] for g in held})
        taken_rows = [
            i
            for g, c in done.items()
            for i in by_group[g]
            if (run_of[i].topic, run_of[i].partition) in c.taken
        ]
        if not taken_rows:
            return batch
        keep = np.ones(batch.num_rows, bool)
        keep[taken_rows] = False
        return batch.filter(pa.array(keep))

    def _commit(self, store: Any, cands: dict[str, list[Any]]) -> dict[str, Committed]:
        """Commit the runs and write the partitions that moved, each only if it still holds what was
        read: the commit lane (commit_lane.py) writes the same fields beside the first stage. A group
        another writer changed meanwhile is read and committed again (its runs that writer already
        applied are skipped by their log offsets); one still changed after three tries is left out,
        and its runs go on to the model stage."""
        from collectors.pipeline.lag_refresh import lag_phase
        from collectors.pipeline.log_ends_reader import LogEndsReader
        from collectors.storage.group_offsets import moved_of

        ends_view = LogEndsReader(self.sink).view
        done: dict[str, Committed] = {}
        written: list[str] = []
        for _ in range(3):
            tried = commit_known(store, ends_view, cands)
            writes = {g: c for g, c in tried.items() if c.fields}
            moved: set[str] = set()
            if writes:
                with store.r.pipeline(transaction=False) as p:
                    for g, c in writes.items():
                        store.offsets.queue_swaps(p, g, {tp: (c.read[tp], v) for tp, v in c.fields.items()})
                    answers = p.execute()
                moved = {g for g, a in zip(writes, answers, strict=True) if moved_of(a)}
                written += [g for g in writes if g not in moved]
            done.update((g, c) for g, c in tried.items() if g not in moved)
            cands = {g: cands[g] for g in moved}
            if not cands:
                break
        if written:
            now = int(time.time() * 1000)
            # their lag numbers at each group's next phase (lag_refresh.py)
            with store.r.pipeline(transaction=False) as p:
                store.lag_schedule.queue_sooner(p, {g: lag_phase(g, now) for g in written})
                p.execute()
            store.touch_refreshed({g: now for g in written})
        return done


# commit_runs_of_columns' arguments, in its order
_RUN_COLUMNS = (
    "c_topic",
    "c_partition",
    "c_first_ts",
    "offset",  # the run's first log offset (CommitRunGatherer._batch)
    "ts",  # its last commit's time
    "c_last_log",
    "c_mono",
    "c_offset",
    "c_commit_ts",
    "c_epoch",
    "c_expire",
    "c_slots",
    "c_slot_start",
    "c_run",
    "c_topic_id",
)
