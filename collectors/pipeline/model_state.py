"""Second stage: the coordinator model per group, in Spark's stateful operator.

`applyInPandasWithState` keyed by a state bucket (a stable hash of the group id, `buckets` of them):
Spark's per-key cost (a pandas frame, a state-store read and write, the Python round trip) is paid
per bucket, not per group, which is what lets tens of thousands of groups through a micro-batch.
A bucket's state is the pickled GroupEngine of each of its groups, with when the group last got
evidence and a digest of its last document. Only the groups of the batch are unpickled and pickled
again; the others stay as bytes. So the model's state lives in Spark's checkpointed state store
(RocksDB) and survives restarts. The number of buckets is fixed for the life of a checkpoint.

A bucket's rows are sorted and sliced by group with numpy (`BatchRows`). Runs of commits the first
stage gathered (commit_runs) stay whole, one row each, through holding and ordering; a group's due
rows become steps (`_steps`): consecutive runs go through `GroupEngine.apply_commit_runs`, the
engine's bulk path (a run whose summary holds costs the same whatever its length, any other is
applied commit by commit: the same effect as applying each commit; property-tested), and the other
rows become evidence in their place. Only when another row of the group falls inside a run (between
its first and last commit) are the runs taken apart, so every commit is applied in its own place.
Here the remaining `__consumer_offsets` values are decoded (once), and a row that fails becomes a
dead letter. A dead letter for a model failure on a decoded commit names its position but has no
raw bytes (the first stage did not carry them on).

Each group also keeps when it must next be looked at without evidence of its own (`_wake_at`: its
next session timer, its first held row's release, the next tick while it has lag, else a minute
on); a clock record re-models only the groups due, and a bucket where none was due is not written
back.

Timers run on EVENT time, never on the wall clock of the batch. A member's session expiry is "no
heartbeat event for session.timeout.ms": judged against the wall clock it fires while the member's
later heartbeats are still in transit (a producer's batching, a slow first micro-batch, a backlog being
caught up), and a live member is expired spuriously. So in live mode each bucket keeps an event-time
watermark:

    watermark = min(wall clock, latest event time delivered) - allowed_lateness_ms

"Latest event time delivered" is the newest timestamp among the clock records (the Admin poller's, one
per poll, and the Kafka source's, one in each micro-batch that reads every partition to the log ends
it found at planning, stamped when it asked for them; `route_arrow` hands each clock record to every
bucket) and the bucket's evidence. Clock
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

Output: the documents that changed go to Redis from here, a bucket's at once, with the objects in
hand (`sink.write_model_docs`); the rows left are the dead letters (`kind` "dead"), the groups only
refreshed ("refresh") and the topics whose aggregate the sink recomputes once per partition
("topics"). Sent on as rows to the sink, as they were, a catch-up's documents (10,000 of 100
partitions, about 300 MB of JSON) crossed from Python to the JVM and back to another Python worker,
and were parsed there again: more than half of a catch-up's model and sink time. (Without a sink,
as in tests, a changed document is a row of `kind` "doc" with the JSON in `payload`.)

Live (`shared_ends`), the unit of work is the partition commit, not the group. A group is kept in
parts (storage/group_parts.py): its engine in Spark's state holds membership, generations and the
timeline but no offsets; its committed offsets (with their Burrow windows) are a Redis hash, a field
per partition; the log ends are the cluster's, one history per partition. A known group's runs of
commits to partitions it already holds take the commit path (`_commit_path`): the partitions'
fields are read, committed with the engine's own rule (OffsetStore.apply_runs) and written back,
and the engine is not unpickled. (Live, the first stage already commits most of them itself, before
the shuffle: known_commits.py; what it leaves comes here.) Any other row takes the engine path,
which is lent the group's offsets and log ends while it runs, writes back the partitions that
moved and the group's head (the document without offsets and lag) when it changed. A group's fleet
row, summaries, topic rows and lag point, which follow its lag, are brought up to date once a
minute from its parts by the collector's lag refresher (lag_refresh.py), outside Spark, not at
every commit: this stage only puts the group in the refresher's schedule (or takes it out) as its
commits and documents say.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from collectors.gc_pause import no_cyclic_gc
from collectors.pipeline import heap_trim
from collectors.pipeline.commit_runs import RUN_KIND, commit_runs_of_columns, unpack
from collectors.pipeline.lag_refresh import lag_phase, next_lag_due
from collectors.pipeline.log_ends_reader import LogEndsReader
from collectors.pipeline.route import Tick, commit_evidence, decode_one, position_of
from collectors.pipeline.rows import COMMIT_KIND, DEAD_BUCKET, ENDS_BUCKET, REFRESH_BUCKET, ROUTED_COLUMNS
from collectors.storage import json_text
from coordinator_model.document import GroupDocument

OUTPUT_SCHEMA = "group string, kind string, ts long, refreshed long, payload string"
STATE_SCHEMA = "groups binary"
OUTPUT_COLUMNS = ["group", "kind", "ts", "refreshed", "payload"]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _dumps(doc: Any) -> str:
    """A document as compact JSON with sorted keys (json_text: orjson, which writes it 10 times faster;
    the standard library's encoder was a fifth of a catch-up's model stage)."""
    return json_text.dumps_document(doc)


def _b64(b: bytes | None) -> str | None:
    return base64.b64encode(bytes(b)).decode() if b is not None else None


# A dead letter keeps this much of its record's key and value, and of its error: a record is not
# lost with its tail (its position says where it is in its topic), but one hostile record of
# megabytes, or a flood of them, must not fill Redis.
DEAD_LETTER_BYTES = 4096
DEAD_LETTER_ERROR_CHARS = 2000


def dead_letter_payload(
    topic: str, partition: int, offset: int, ts: int, error: str, key: Any, value: Any
) -> str:
    out: dict[str, Any] = {
        "source": topic,
        "position": position_of(topic, int(partition), int(offset)),
        "error": str(error)[:DEAD_LETTER_ERROR_CHARS],
        "ts": int(ts),
    }
    for name, raw in (("key", key), ("value", value)):
        data = bytes(raw) if raw is not None else None
        out[name] = _b64(data[:DEAD_LETTER_BYTES] if data is not None else None)
        if data is not None and len(data) > DEAD_LETTER_BYTES:
            out[f"{name}_bytes"] = len(data)  # its whole size; what is kept is its first DEAD_LETTER_BYTES
    return _dumps(out)


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
    wake: Any = None,
    sink: Any = None,
    shared_ends: bool = False,
    hide_unconfirmed: bool = False,
):
    """The applyInPandasWithState function for one pipeline configuration (see the module docstring
    for the event-time watermark that drives the timers in live mode). With `sink` (a
    sink.SinkConfig) the documents are written to Redis here, not sent on as rows (see "Output").
    With `shared_ends` (live, with a sink) the log ends are the cluster's, one history per partition
    in Redis (storage/log_ends.py): the first stage sends the Admin poller's end-offsets lines to
    ENDS_BUCKET, which merges them there, and an engine is lent the histories of its partitions
    while it runs, never keeping a copy. With `hide_unconfirmed` (a live collector, which reads the
    offsets topic and the Admin API), a group only heartbeat events name is modelled but not shown
    until the coordinator's own records or the Admin API speak for it (GroupEngine.confirmed)."""
    idle_after = int(idle_ms if idle_ms is not None else 2 * tick_ms)
    ends_of = LogEndsReader(sink) if shared_ends and sink is not None else None

    def update(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        # a bucket asks each topic's log-end version once, not once per group (LogEndsCache.once);
        # and its engines, offsets and documents (made without reference cycles: a model holds its
        # group by a weak proxy) are kept out of the cyclic collector's way (gc_pause.py), which
        # walked every object of the worker again and again during a catch-up's bucket
        with ends_of.once() if ends_of is not None else contextlib.nullcontext(), no_cyclic_gc():
            yield from _update(key, pdfs, state)

    def _update(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        out: dict[str, list[Any]] = {c: [] for c in OUTPUT_COLUMNS}

        def emit(group: str, kind: str, ts: int, refreshed: int, payload: str) -> None:
            for c, v in zip(OUTPUT_COLUMNS, (group, kind, ts, refreshed, payload), strict=True):
                out[c].append(v)

        now = _now_ms()
        batch = BatchRows.of(pdfs)

        if key[0] == DEAD_BUCKET:
            for i in range(batch.n):
                ts, partition, offset = batch.ts[i], batch.partition[i], batch.offset[i]
                topic, k, v, error = batch.topic[i], batch.key[i], batch.value[i], batch.error[i]
                emit("", "dead", ts, now, dead_letter_payload(topic, partition, offset, ts, error, k, v))
            if out["kind"]:
                yield _frame(out)
            return

        if key[0] == ENDS_BUCKET:
            # The Admin poller's end-offsets lines: merged into the cluster's histories, one per
            # partition, whatever group each line was polled for.
            for ts, partition, offset, topic, k, v, error in _merge_log_ends(sink, batch, now):
                emit("", "dead", ts, now, dead_letter_payload(topic, partition, offset, ts, error, k, v))
            if out["kind"]:
                yield _frame(out)
            return

        if key[0] == REFRESH_BUCKET:
            # The Admin poller's unchanged resends (route.py): their groups are only marked refreshed.
            for group in batch.slices:
                if group is not None:
                    emit(group, "refresh", 0, now, "")
            if out["kind"]:
                yield _frame(out)
            return

        groups, meta = _load_state(state)
        to_write: list[tuple[GroupDocument, int, int, str]] = []
        timed_out = state.hasTimedOut
        clock = batch.slices.pop(None, None)  # the Admin poller's clock (group null)
        watermark = 0
        if live:
            latest = int(meta.get("event", 0))
            if batch.n:
                latest = max(latest, max(batch.ts))  # the clock's and every row's event time
            latest = min(latest, now)  # a producer's clock ahead of ours never runs our timers early
            meta["event"] = latest
            if batch.n:
                meta["seen"] = now
            watermark = latest - allowed_lateness_ms if latest else 0
            idle = timed_out and not batch.n and now - int(meta.get("seen", 0)) >= idle_after
            if idle:
                watermark = max(watermark, now - allowed_lateness_ms)  # idle sources: the wall clock
        sweep = timed_out or clock is not None
        arrived_groups = batch.slices
        touched = set(arrived_groups)
        due: set[str] = set()
        if sweep:
            # Only the groups that have something due: a timer, rows held behind the watermark (see
            # `_wake_at`). Waking all of them at every clock record cost a whole re-modelling of an
            # idle fleet of 10,000 groups every 5 s.
            due_by = watermark if live else now
            due = {g for g, v in groups.items() if v.wake_at <= due_by}
            touched |= due
        changed = False  # whether any group's state moved: an untouched bucket is not written back
        parts = ends_of is not None  # live: offsets and log ends in Redis, not in the engines
        # the log ends an engine is lent: as far as its evidence goes (a one-off catch-up has no
        # watermark: all of them)
        ends_upto = watermark if live else 2**62
        offsets_out: list[tuple[str, dict]] = []  # (group, {partition: stored form, None: gone})
        lag_due: dict[str, int] = {}  # the lag refresher's schedule (0: the group's lag stands still)
        if parts:
            for group, slot in groups.items():
                if slot.lag_due:  # a checkpoint from when the schedule was in the slots: moved to Redis
                    lag_due[group], slot.lag_due = slot.lag_due, 0
                    changed = True
        rewrite: set[str] = set()
        fast: dict[str, tuple[Any, dict, set]] = {}
        if parts:
            # Redis lost what the collector wrote (the driver set a new data epoch): every group of the
            # bucket is written again from its engine (the Admin poller refills their offsets)
            epoch = _data_epoch(sink)
            if epoch is not None and meta.get("epoch") != epoch:
                if "epoch" in meta:
                    rewrite = {g for g, v in groups.items() if v.engine}
                    touched |= rewrite
                meta["epoch"] = epoch
                changed = True
            # A known group whose rows are only runs of commits to partitions it has committed to
            # before, with nothing due, takes the commit path: its partitions' fields are read,
            # committed and written back, and its engine is not touched.
            fast = _commit_path(sink, ends_of, batch, groups, arrived_groups, rewrite)
            for group, (_, fields, taken) in fast.items():
                span = arrived_groups[group]
                if len(taken) == _run_partitions(batch, span) and group not in due:
                    touched.discard(group)  # nothing else of it in the batch: no engine
                offsets_out.append((group, fields))
                # Its lag numbers are due at its next phase (lag_refresh.py). Its slot does not change:
                # a busy bucket whose groups only commit is not written back to Spark's state (its
                # last_input stays: the refresh stamp below is the one readers see, and stamps never
                # go back, RedisStore.write_many)
                lag_due[group] = lag_phase(group, watermark if watermark > 0 else now)
                if fields:
                    emit(group, "refresh", 0, now, "")  # its refresh stamp: the collector wrote it now
            # the engines' own offsets: read now, for every group the model runs, with what the commit
            # path just did to them (written at the end of the bucket, with the engines')
            full = _load_offsets(sink, [g for g in touched if g in groups and groups[g].engine])
            for group, (taken_store, _, taken) in fast.items():
                if group in full:
                    for tp in taken:
                        full[group].committed[tp] = taken_store.committed[tp]
                        full[group].windows[tp] = taken_store.windows[tp]
        for group in sorted(touched):
            slot = groups.get(group) or GroupSlot()
            blob, last_input, digest, held = slot.engine, slot.last_input, slot.digest, slot.held
            if group in rewrite:
                digest = ""  # written whatever it says
            span = arrived_groups.get(group)
            changed = True
            engine = pickle.loads(blob) if blob else new_engine(group, retention_ms)
            # Runs of commits stay whole (one row each) through holding and ordering: taken apart,
            # a catch-up's million commits were a million Python tuples and evidence objects.
            arrived = batch.row_tuples(span, runs_whole=True) if span is not None else []
            if parts and group in fast:  # the runs the commit path took are not the engine's
                taken = fast[group][2]
                arrived = [
                    r for r in arrived if r[4] != RUN_KIND or (r[9].topic, r[9].partition) not in taken
                ]
            if live:
                # Evidence is applied in event-time order up to the watermark; what is newer waits
                # here (a row stamped ahead of our clock waits until the watermark passes its arrival;
                # a run waits until the watermark passes its last commit).
                held = held + [(min(_last_ts(r), now), r) for r in arrived]
                rows = sorted((r for at, r in held if at <= watermark), key=_order)
                held = [(at, r) for at, r in held if at > watermark]
            else:
                rows = sorted(arrived, key=_order)
            steps, dead = _steps(group, rows)
            before: dict = {}
            moved: dict = {}
            if parts:
                # an engine saved before the parts keeps its own offsets, all of them written out now
                legacy = bool(engine.offsets.committed)
                if not legacy:
                    engine.offsets = full.get(group, engine.offsets)
                # what each partition held before the steps: a commit replaces a partition's
                # OffsetState (and its lag window with it), so an object still there is unchanged
                before = {} if legacy else dict(engine.offsets.committed)
                # the cache's own histories (take_log_ends copies one only to cut it at the watermark),
                # unless an end offset among the steps would add to them
                own = not _has_end_offsets(steps)
                engine.take_log_ends(
                    ends_of(engine.log_end_topics() | _step_topics(steps), copy=not own), ends_upto
                )
            for row, error in dead:
                ts, _, partition, offset, _, topic, k, v, _ = row[:9]
                emit(group, "dead", ts, now, dead_letter_payload(topic, partition, offset, ts, error, k, v))
            try:
                for what, items in steps:
                    if what == "runs":
                        engine.apply_commit_runs(items)
                    elif what == "evidence":
                        engine.apply_many(items)
                    else:  # the end of a replayed capture: run the timers to its last moment
                        engine.advance(max(t.ts for t in items))
            except Exception as e:  # a model failure: keep the group's last good state, report the rows
                ts, _, partition, offset, _, topic, k, v, _ = rows[0][:9]
                emit(
                    group,
                    "dead",
                    ts,
                    now,
                    dead_letter_payload(topic, partition, offset, ts, f"model: {_err(e)}", k, v),
                )
                engine = pickle.loads(blob) if blob else new_engine(group, retention_ms)
                if parts and not engine.offsets.committed:
                    # read again: the failed steps changed the store they were lent
                    engine.offsets = _load_offsets(sink, [group]).get(group, engine.offsets)
            if span is not None:
                last_input = now
            # Commits still held behind the watermark are shown at once (offsets and lag only): a
            # commit's lag must not wait for the lateness; the model applies them in order later.
            # (a share group's positions only once its engine has been saved with what its describe
            # says: alone, they would make a consumer group of it)
            early = _held_commits(group, held, positions=bool(blob or steps)) if live and held else []
            if not blob and not steps and not early:
                # every row of a group we have not seen yet is still held behind the watermark:
                # publish nothing until there is evidence, or an empty document would stand in Redis
                groups[group] = GroupSlot(
                    b"", int(last_input), digest, held, _wake_at(None, None, held, watermark)
                )
                continue
            if live and watermark > 0:
                engine.advance(watermark)
            kept = None
            if parts:
                # the members' topics may be new since the ends were lent: the document's lag needs them
                engine.take_log_ends(ends_of(engine.log_end_topics(), copy=not own), ends_upto)
                after = engine.offsets.committed
                moved = _fields(
                    engine.offsets,
                    [tp for tp, o in after.items() if before.get(tp) is not o]
                    + [tp for tp in before if tp not in after],
                )
                if moved:
                    offsets_out.append((group, moved))
                # saved without its offsets and log ends: they are in Redis, and were most of a
                # group's saved state
                kept, engine.offsets = engine.offsets, type(engine.offsets)()
            state_blob = pickle.dumps(engine, 5)
            if kept is not None:
                engine.offsets = kept
            # (in parts, a partition turning STOP is the lag refresher's to see: its lag_due below)
            timers = _timers_due(engine, stop=not parts)
            stop_at = engine.offsets.next_stop(engine.now) if parts else None
            if early:
                # The held commits are shown on the engine itself, now that its state is saved (the
                # engine is not used again: the next batch starts from state_blob). A copy made by
                # unpickling was a third of a busy fleet's micro-batch.
                if parts:
                    # Their lag is judged against the log ends as far as they go, not as far as the
                    # watermark: a share group's position and the log ends it was read with come
                    # from the same Admin poll, and the ends are merged at once (ENDS_BUCKET). Cut at
                    # the watermark, the newer position met ends a poll older and its lag read 0.
                    engine.take_log_ends(
                        ends_of(engine.log_end_topics() | {t for t, _ in _previewed(early)}, copy=not own),
                        max(ends_upto, max(ev.ts for ev in early)),
                    )
                engine.preview_commits(early)
                if parts:
                    # and in Redis, where readers find offsets (applied again in their turn, the
                    # append rule keeps them: the same log positions)
                    shown = _fields(engine.offsets, _previewed(early) & engine.offsets.committed.keys())
                    offsets_out.append((group, shown))
                    moved = {**moved, **shown}
            doc = engine.document()
            text = _dumps(_head_json(doc) if parts else doc.to_json())
            new_digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
            wake_time = _wake_at(timers, doc, held, max(watermark, now) if not live else watermark, tick_ms)
            if parts:
                lag_due[group] = next_lag_due(doc, watermark if watermark > 0 else now, stop_at)
            if hide_unconfirmed and not engine.confirmed:
                # named only by heartbeat events, which any writer of the probe's topic can forge
                # (docs/security.md): kept, so its history is whole once the coordinator's records or
                # the Admin API speak for it, and shown only then
                if not held and now - int(last_input or now) >= UNCONFIRMED_KEEP_MS:
                    # and forgotten when nothing has come for it in all that time: a real group is
                    # confirmed within an Admin poll, and a forger's made-up names must not pile up
                    # in the state store
                    groups.pop(group, None)
                    continue
                groups[group] = GroupSlot(state_blob, int(last_input), "", held, wake_time)
                continue
            groups[group] = GroupSlot(state_blob, int(last_input), new_digest, held, wake_time)
            if new_digest != digest or (parts and moved):
                if sink is not None:
                    to_write.append((doc, int(doc.as_of or 0), int(last_input or now), text))
                else:
                    emit(group, "doc", int(doc.as_of or 0), int(last_input or now), text)
        if offsets_out or lag_due:
            _write_offsets(sink, offsets_out, lag_due)
        if to_write:
            from collectors.pipeline.sink import write_model_docs

            for topic in sorted(write_model_docs(sink, to_write)):
                emit(topic, "topics", 0, now, "")
        if (
            changed
            or not state.exists
            or int(meta.get("event", 0)) - int(meta.get("saved", 0)) > SAVE_META_MS
        ):
            # A bucket where nothing was due is not written back (a clock record reaches all of them;
            # rewriting every bucket's state at each one was most of an idle micro-batch). Its
            # watermark inputs are saved now and then: after a restart from an older save the
            # watermark only starts lower, and the next records bring the event time again.
            meta["saved"] = int(meta.get("event", 0))
            state.update((pickle.dumps((groups, meta), 5),))
        if live:
            first = min((v.wake_at for v in groups.values()), default=2**62)
            _set_timeout(state, now, _timeout_ms(first, now, tick_ms, allowed_lateness_ms))
            # the first stage sends clock records only to buckets due by then (wake_hints.py)
            if wake is not None and first != meta.get("wake") and wake.write(key[0], first):
                meta["wake"] = first
        if out["kind"]:
            yield _frame(out)
        del batch, groups, to_write
        heap_trim.release()  # a catch-up's buckets leave the worker at its high-water mark otherwise

    return update


class BatchRows:
    """A bucket's rows of one micro-batch as columns, sorted by group and, within a group, by (ts,
    rank, partition, offset); `slices` maps each group (None: the clock rows) to its [start, end)."""

    COLUMNS = ROUTED_COLUMNS

    def __init__(self, pdf: Any) -> None:
        import numpy as np
        import pandas as pd

        self.n = len(pdf) if pdf is not None else 0
        self.slices: dict[str | None, tuple[int, int]] = {}
        self._pdf, self._order = pdf, None
        if not self.n:
            self._run_count = np.zeros(1, np.int64)
            return
        # the evidence order first, then a stable sort by group keeps it within each group
        order = np.lexsort(
            (
                pdf["offset"].to_numpy(),
                pdf["partition"].to_numpy(),
                pdf["rank"].to_numpy(),
                pdf["ts"].to_numpy(),
            )
        )
        codes, uniques = pd.factorize(pdf["group"].to_numpy()[order], use_na_sentinel=True)
        by_group = np.argsort(codes, kind="stable")
        order = order[by_group]
        codes = codes[by_group]
        self._pdf, self._order = pdf, order
        bounds = np.flatnonzero(np.diff(codes)) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        ends = np.concatenate((bounds, [self.n])).tolist()
        for s, e in zip(starts, ends, strict=True):
            code = int(codes[s])
            self.slices[None if code < 0 else uniques[code]] = (s, e)
        is_run = pdf["kind"].to_numpy()[order] == RUN_KIND
        self._run_count = np.concatenate(([0], np.cumsum(is_run)))

    def __getattr__(self, column: str) -> list[Any]:
        """A column as a list in the sorted order, made when first asked for (a batch of commits
        needs eight of the seventeen)."""
        if column not in self.COLUMNS:
            raise AttributeError(column)
        values = [] if not self.n else self._pdf[column].to_numpy()[self._order].tolist()
        setattr(self, column, values)
        return values

    @classmethod
    def of(cls, pdfs: Iterator[Any]) -> BatchRows:
        import pandas as pd

        frames = [pdf for pdf in pdfs if len(pdf)]
        if not frames:
            return cls(None)
        return cls(frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True))

    def all_runs(self, span: tuple[int, int]) -> bool:
        s, e = span
        return int(self._run_count[e] - self._run_count[s]) == e - s

    def commit_runs(self, span: tuple[int, int]) -> list[Any]:
        """The GroupEngine.CommitRun of each run row of a span."""
        s, e = span
        return commit_runs_of_columns(
            self.c_topic[s:e],
            self.c_partition[s:e],
            self.c_first_ts[s:e],
            self.offset[s:e],
            self.ts[s:e],
            self.c_last_log[s:e],
            self.c_mono[s:e],
            self.c_offset[s:e],
            self.c_commit_ts[s:e],
            self.c_epoch[s:e],
            self.c_expire[s:e],
            self.c_slots[s:e],
            self.c_slot_start[s:e],
            self.c_run[s:e],
            self.c_topic_id[s:e],
        )

    def row_tuples(self, span: tuple[int, int], runs_whole: bool = False) -> list[tuple]:
        """(ts, rank, partition, offset, kind, topic, key, value, error, commit fields) per row; a run
        of commits becomes a row per commit (kind "commit"), or with `runs_whole` one row of kind
        "commits" whose ts and offset are its first commit's and whose last field is its CommitRun."""
        s, e = span
        out: list[tuple] = []
        # each stretch of runs (the bulk of a catch-up; a group's commits come before the Admin
        # poller's lines about it) builds its CommitRuns in one pass: run by run, slicing the columns
        # for each, they were a tenth of a catch-up's model stage
        runs: dict[int, Any] = {}
        if runs_whole:
            for a, b in self._run_stretches(span):
                runs.update(zip(range(a, b), self.commit_runs((a, b)), strict=True))
        for i in range(s, e):
            if self.kind[i] == RUN_KIND:
                if runs_whole:
                    run = runs[i]
                    head = (run.first_ts, 0, self.partition[i], run.first_log, RUN_KIND, self.topic[i])
                    out.append((*head, None, None, None, run))
                else:
                    out.extend(_expand(self.topic[i], self.partition[i], self.run_fields(i)))
                continue
            out.append(
                (
                    self.ts[i],
                    self.rank[i],
                    self.partition[i],
                    self.offset[i],
                    self.kind[i],
                    self.topic[i],
                    self.key[i],
                    self.value[i],
                    self.error[i],
                    (
                        self.c_topic[i],
                        self.c_partition[i],
                        self.c_offset[i],
                        self.c_commit_ts[i],
                        self.c_epoch[i],
                        self.c_expire[i],
                        self.c_topic_id[i],
                    )
                    if self.kind[i] == COMMIT_KIND
                    else None,
                )
            )
        return out

    def _run_stretches(self, span: tuple[int, int]) -> list[tuple[int, int]]:
        """The [start, end) stretches of consecutive run rows within `span`."""
        s, e = span
        if self.all_runs(span):
            return [(s, e)]
        out: list[tuple[int, int]] = []
        start = None
        for i in range(s, e):
            if self.kind[i] == RUN_KIND:
                start = i if start is None else start
            elif start is not None:
                out.append((start, i))
                start = None
        if start is not None:
            out.append((start, e))
        return out

    def all_plain(self, span: tuple[int, int]) -> bool:
        """No run among the span's rows."""
        s, e = span
        return int(self._run_count[e] - self._run_count[s]) == 0

    def run_fields(self, i: int) -> tuple[str, int, bytes, str | None]:
        return (self.c_topic[i], self.c_partition[i], self.c_run[i], self.c_topic_id[i])


def _expand(topic: str, partition: int, fields: tuple[str, int, bytes, str | None]) -> list[tuple]:
    """A run's commits as rows of kind "commit" (the run read from `__consumer_offsets` `topic` /
    `partition`)."""
    ctopic, cpart, packed, tid = fields
    return [
        (
            ts,
            0,
            partition,
            log,
            COMMIT_KIND,
            topic,
            None,
            None,
            None,
            (ctopic, cpart, off, cts, epoch, exp, tid),
        )
        for ts, log, off, cts, exp, epoch in unpack(packed)
    ]


def _expand_run(row: tuple) -> list[tuple]:
    """A whole run's row (kind "commits", see BatchRows.row_tuples) taken apart into its commits."""
    run = row[9]
    return [
        (
            ts,
            0,
            row[2],
            log,
            COMMIT_KIND,
            row[5],
            None,
            None,
            None,
            (topic, part, off, cts, epoch, exp, run.topic_id),
        )
        for ts, topic, part, off, cts, epoch, exp, log in run.rows()
    ]


def _last_ts(row: tuple) -> int:
    """When a row's evidence ends: a whole run's last commit, any other row's own time."""
    return row[9].last_ts if row[4] == RUN_KIND else int(row[0])


def _order(row: tuple) -> tuple:
    return row[:4]  # (ts, rank, partition, offset): the evidence order


def _steps(group: str, rows: list[tuple]) -> tuple[list[tuple[str, list[Any]]], list[tuple[tuple, str]]]:
    """A group's due rows, in evidence order, as steps for the engine: ("runs", [CommitRun]) for
    consecutive whole runs (the engine's bulk path), ("evidence", [...]) and ("ticks", [...]); and
    the rows that fail to decode, with their error (dead letters). When another row falls inside a
    run (its time between the run's first and last commit), the runs are taken apart and every
    commit is evidence in its own place: the bulk path only holds for runs nothing else interleaves.
    """
    steps: list[tuple[str, list[Any]]] = []
    dead: list[tuple[tuple, str]] = []
    runs_end = None  # (ts, rank) the runs so far reach up to
    interleaved = False
    for row in rows:
        if row[4] == RUN_KIND:
            runs_end = max(runs_end or (0, 0), (row[9].last_ts, 0))
            continue
        if runs_end is not None and (int(row[0]), int(row[1])) <= runs_end:
            interleaved = True
            break
    if interleaved:
        expanded: list[tuple] = []
        for row in rows:
            expanded.extend(_expand_run(row) if row[4] == RUN_KIND else (row,))
        rows = sorted(expanded, key=_order)

    def add(what: str, item: Any) -> None:
        if steps and steps[-1][0] == what:
            steps[-1][1].append(item)
        else:
            steps.append((what, [item]))

    for row in rows:
        ts, _, partition, offset, kind, topic, k, v, _ = row[:9]
        if kind == RUN_KIND:
            add("runs", row[9])
            continue
        try:
            if kind == COMMIT_KIND:
                add("evidence", commit_evidence(group, ts, offset, row[9]))
                continue
            for g, _, _, ev in decode_one(kind, topic, partition, offset, ts, k, v):
                if g != group:
                    continue  # a line naming several groups: this group's share
                add("ticks" if isinstance(ev, Tick) else "evidence", ev)
        except Exception as e:  # bad bytes: a dead letter, the rest of the batch goes on
            dead.append((row, _err(e)))
    return steps, dead


# An idle group with nothing due is still looked at this often (its history trimmed to the retention;
# offset expiry has a wake time of its own). Every idle group of a fleet caught up together comes due
# together: at 60 s that was a whole re-modelling of 10,000 groups, a 16 s micro-batch, every minute.
IDLE_REFRESH_MS = 600_000


def _timers_due(engine: Any, stop: bool = True) -> int | None:
    """The engine's own next deadline: a session timer (heartbeat-only inference), its first
    committed offset to expire, and (`stop`) a lagging partition turning STOP."""
    due = [
        int(getattr(engine, "_next_due", 2**62)),
        engine.next_offset_expiry(),
        engine.offsets.next_stop(engine.now) if stop else None,
    ]
    return min((d for d in due if d is not None), default=None)


def _wake_at(
    timers: int | None, doc: GroupDocument | None, held: list[tuple[int, tuple]], at: int, tick_ms: int = 5000
) -> int:
    """When a group must next be looked at with no evidence of its own: its engine's next deadline
    (`_timers_due`: a session, an offset's expiry, a lagging partition turning STOP), the release of
    its first row held behind the watermark, else IDLE_REFRESH_MS on. Lag alone wakes nothing: its
    numbers move with the log ends and the clock, and the collector's lag refresher
    (storage/lag_refresh.py) brings them up to date without the group's engine; a group woken every
    tick while it lagged was 2,000 group rewrites a second for 10,000 lagging groups."""
    wake = at + IDLE_REFRESH_MS
    if held:
        wake = min(wake, min(t for t, _ in held))
    if timers is not None:
        wake = min(wake, timers)
    return wake


# How long a group that only heartbeat events name is kept with no new event of its own (it is
# looked at again IDLE_REFRESH_MS after its last one, and forgotten then).
UNCONFIRMED_KEEP_MS = IDLE_REFRESH_MS


# How long a bucket's watermark inputs may go unsaved when nothing else about it changes. Once a
# minute, the Admin poller's resends (a minute apart) made every bucket they reached write its whole
# state back.
SAVE_META_MS = 600_000


def _timeout_ms(first_wake: int, now: int, tick_ms: int, allowed_lateness_ms: int) -> int:
    """How long a bucket's processing-time timeout is set for: until its first group is due (its
    event-time wake plus the lateness the watermark trails by), at least a tick and at most
    IDLE_REFRESH_MS. Spark hands a timed-out bucket's whole state to Python at the next micro-batch:
    a timeout of one tick shipped every bucket's state, the whole fleet's engines, every 5 s."""
    return int(max(tick_ms, min(first_wake + allowed_lateness_ms - now, IDLE_REFRESH_MS)))


def _set_timeout(state: Any, now: int, duration_ms: int) -> None:
    """Set the bucket's timeout `duration_ms` on, or keep the one it has when that comes sooner and
    is still ahead. Spark rewrites a bucket's whole state whenever its timeout moves, and a timeout
    set anew at every call moved it at every micro-batch the bucket had a row in."""
    batch_ms = state.getCurrentProcessingTimeMs() if hasattr(state, "getCurrentProcessingTimeMs") else now
    old = int(getattr(state, "oldTimeoutTimestamp", -1) or -1)
    if not state.hasTimedOut and batch_ms < old <= batch_ms + duration_ms:
        duration_ms = old - batch_ms
    state.setTimeoutDuration(int(duration_ms))


def _head_json(doc: GroupDocument) -> dict:
    from collectors.storage.group_parts import head_json

    return head_json(doc)


def _fields(store: Any, tps: Any = None) -> dict:
    """Each committed partition's (or each of `tps`') stored form (storage/group_offsets.py), to
    tell what the model changed."""
    from collectors.storage.group_offsets import encode

    return {tp: encode(store, tp) for tp in (store.committed if tps is None else tps)}


# The data epoch a worker read last, and when (monotonic s), per sink: every bucket's call of a
# micro-batch asks, and at 256 buckets a GET each was a fifth of a busy batch's model stage; Redis
# losing its data is seen a second later.
_EPOCHS: dict[Any, tuple[str | None, float]] = {}
EPOCH_FRESH_S = 1.0


def _data_epoch(sink: Any) -> str | None:
    import time

    from collectors.pipeline.sink import model_store, with_retry

    hit = _EPOCHS.get(sink)
    if hit is not None and time.monotonic() - hit[1] < EPOCH_FRESH_S:
        return hit[0]
    store = model_store(sink)
    epoch = with_retry(store.data_epoch, "data epoch", sink.redis_retry_s)
    _EPOCHS[sink] = (epoch, time.monotonic())
    return epoch


def _load_offsets(sink: Any, groups: list[str]) -> dict[str, Any]:
    """The committed offsets of these groups, from Redis (an OffsetStore each)."""
    from collectors.pipeline.sink import model_store, with_retry

    if not groups:
        return {}
    store = model_store(sink)
    return with_retry(lambda: store.offsets.load(sorted(groups)), "offsets", sink.redis_retry_s)


def _write_offsets(sink: Any, changes: list[tuple[str, dict]], lag_due: dict[str, int] | None = None) -> None:
    """The partitions that moved, each group's in one hash (a partition no longer kept loses its
    field); before the documents, so a reader that sees a new head sees its offsets. With them, the
    groups' places in the lag refresher's schedule (`lag_due`: 0 takes a group out of it)."""
    from collectors.pipeline.sink import PIPELINE_COMMANDS, model_store, with_retry

    def attempt() -> None:
        store = model_store(sink)
        p = store.pipeline()
        for group, fields in changes:
            store.offsets.queue_fields(p, group, fields)
            if len(p) >= PIPELINE_COMMANDS:
                p.execute()
        if lag_due:
            store.lag_schedule.queue_sooner(p, {g: t for g, t in lag_due.items() if t})
            store.lag_schedule.queue_forget(p, [g for g, t in lag_due.items() if not t])
        p.execute()

    with_retry(attempt, "offsets", sink.redis_retry_s)


def _commit_path(
    sink: Any,
    ends_of: Any,
    batch: BatchRows,
    groups: dict[str, GroupSlot],
    arrived: dict[str | None, tuple[int, int]],
    skip: set[str],
) -> dict[str, tuple[Any, dict, set]]:
    """The commits the commit path takes, committed there: {group: (OffsetStore of the partitions it
    took, {partition: its stored form now} for those that moved, the partitions it took)}.

    It takes a known group's runs of commits (every run of a partition, or none) to a partition its
    offsets already hold, when the batch brings nothing else of the group; everything else is the
    engine's, in evidence order (a first commit to a partition teaches it topic ids and Empty groups;
    a tombstone or a commit with metadata, an Admin answer, membership, and commits that interleave
    with them, which its generations' inference reads). Rows of the group held behind the watermark
    from earlier batches do not keep its commits from this path (busy groups always have a commit
    held), so they are not held themselves: applied
    with OffsetStore.apply_runs, the engine's own rule, to the partitions' stored state. A run that
    state already holds (a micro-batch replayed after a failure) is skipped, and an older one a held
    row brings later is skipped by the append rule."""
    from collectors.pipeline.known_commits import commit_known
    from collectors.pipeline.sink import model_store, with_retry

    cands: dict[str, list[Any]] = {}
    for group, span in arrived.items():
        v = groups.get(group) if group is not None else None
        if v is None or not v.engine or group in skip or not batch.all_runs(span):
            continue  # other evidence of the group in the batch: all of it in order, by its engine
        cands[group] = batch.commit_runs(span)
    if not cands:
        return {}
    store = model_store(sink)
    done = with_retry(lambda: commit_known(store, ends_of.view, cands), "offsets", sink.redis_retry_s)
    return {g: (c.offsets, c.fields, c.taken) for g, c in done.items()}


def _run_partitions(batch: BatchRows, span: tuple[int, int]) -> int:
    """How many partitions a span's runs commit to."""
    s, e = span
    return len(set(zip(batch.c_topic[s:e], batch.c_partition[s:e], strict=True)))


def _has_end_offsets(steps: list[tuple[str, list[Any]]]) -> bool:
    """Whether a group's steps carry log-end offsets as evidence (live they go to ENDS_BUCKET, but an
    engine fed one adds it to the history it holds, which must then be its own copy)."""
    from coordinator_model.evidence import EndOffset, EndOffsets

    return any(
        isinstance(ev, EndOffset | EndOffsets) for what, items in steps if what == "evidence" for ev in items
    )


def _step_topics(steps: list[tuple[str, list[Any]]]) -> set[str]:
    """The committed topics among a group's steps (runs and commits), whose log ends their lag
    samples need."""
    topics: set[str] = set()
    for what, items in steps:
        if what == "runs":
            topics.update(run.topic for run in items)
        elif what == "evidence":
            topics.update(t for ev in items if isinstance(t := getattr(ev, "topic", None), str))
    return topics


def _merge_log_ends(sink: Any, batch: BatchRows, now: int = 0) -> list[tuple]:
    """Merge the end-offsets lines of ENDS_BUCKET into the cluster's histories, and put the groups
    reading a topic whose log end went up in the lag refresher's schedule (`_schedule_readers`); the
    rows that are not such a line, as (ts, partition, offset, topic, key, value, error) for the dead
    letters."""
    import orjson

    from collectors.pipeline.sink import model_store, with_retry
    from collectors.storage.log_ends import LogEnds
    from coordinator_model.evidence import from_end_offsets_json

    observations: dict[tuple[str, int], list[tuple[int, int]]] = {}
    bad: list[tuple] = []
    for i in range(batch.n):
        try:
            ev = from_end_offsets_json(orjson.loads(batch.value[i] or b""))
            if ev is None:
                continue
            for topic, partition, end in ev.rows:
                observations.setdefault((topic, int(partition)), []).append((int(ev.ts), int(end)))
        except Exception as e:  # a malformed line is set aside, the others are merged
            ts, part, off = batch.ts[i], batch.partition[i], batch.offset[i]
            bad.append((ts, part, off, batch.topic[i], batch.key[i], batch.value[i], _err(e)))
    if observations and sink is not None:
        moved: set[str] = set()
        with_retry(
            lambda: LogEnds(model_store(sink).r, sink.prefix).merge(observations, moved),
            "log ends",
            sink.redis_retry_s,
        )
        if moved:
            at = max(ts for points in observations.values() for ts, _ in points)
            _schedule_readers(sink, moved, min(at, now) if now else at)
    return bad


# When each topic's readers were last put in the lag schedule, per sink, by this worker (monotonic s):
# the log ends move every few seconds, the schedule needs a group once per refresh interval.
_READERS_SCHEDULED: dict[tuple[Any, str], float] = {}


def _schedule_readers(sink: Any, topics: set[str], at: int) -> None:
    """The groups with rows in these topics (storage/topics.py), each at its next phase of the lag
    refresh, or sooner if it is due sooner already. A group whose lag was zero leaves the schedule
    (nothing it holds moves its lag); when its consumers stop while producers write, no commit or
    document of its own comes, and its fleet row, lag alerts and lag history would stand at zero
    until its next idle look (IDLE_REFRESH_MS). The log ends going up is what moves its lag: its
    readers are scheduled then."""
    from collectors.pipeline.sink import model_store, with_retry

    clock = time.monotonic()
    due = [t for t in sorted(topics) if clock - _READERS_SCHEDULED.get((sink, t), -1e9) >= READERS_EVERY_S]
    if not due:
        return

    def attempt() -> list[list[Any]]:
        store = model_store(sink)
        with store.r.pipeline(transaction=False) as p:
            for t in due:
                p.hkeys(store.topics.tk(t, "groups"))
            found = p.execute()
        readers = {g.decode() if isinstance(g, bytes) else g for names in found for g in names}
        if readers:
            with store.r.pipeline(transaction=False) as p:
                store.lag_schedule.queue_sooner(p, {g: lag_phase(g, at) for g in readers})
                p.execute()
        return found

    found = with_retry(attempt, "lag schedule", sink.redis_retry_s)
    for t, names in zip(due, found, strict=True):
        if names:  # (a topic nobody's rows are in yet, as in a catch-up's first batch, is asked again)
            _READERS_SCHEDULED[(sink, t)] = clock


# How often a moving topic's readers are put in the schedule again: well within a refresh interval
# (a group that left the schedule since is back within it), far less often than the log ends move.
READERS_EVERY_S = 20.0


def _previewed(early: list[Any]) -> set[tuple[str, int]]:
    """The partitions `_held_commits`' evidence shows."""
    from coordinator_model.evidence import OffsetCommit

    tps: set[tuple[str, int]] = set()
    for ev in early:
        if isinstance(ev, OffsetCommit):
            tps.add((ev.topic, ev.partition))
        else:  # a share group's positions
            tps.update((t, p) for t, p, _ in ev.offsets)
    return tps


def _held_commits(group: str, held: list[tuple[int, tuple]], positions: bool = True) -> list[Any]:
    """The offset commits among a group's held rows, as evidence, and a share group's positions (the
    Admin poller's "committed" line of SHARE_START_OFFSETS: read in the same poll as the log ends,
    which are merged at once, it must show with them; not with `positions` false). A row that does
    not decode is left to the model's own pass, which makes it a dead letter."""
    from coordinator_model.evidence import SHARE_START_OFFSETS, CommittedSnapshot, OffsetCommit

    out = []
    for _, row in held:
        ts, _, partition, offset, kind, topic, k, v = row[:8]
        if kind == RUN_KIND:
            # a run's last commit is what its offsets and lag show (the preview keeps no history)
            run = row[9]
            last = (run.topic, run.partition, run.offset, run.commit_ts, run.epoch, run.expire, run.topic_id)
            out.append(commit_evidence(group, run.last_ts, run.last_log, last))
        elif kind == COMMIT_KIND:
            out.append(commit_evidence(group, ts, offset, row[9]))
        elif kind == "offsets":
            try:
                evs = decode_one(kind, topic, partition, offset, ts, k, v)
            except Exception:
                continue
            out.extend(ev for g, _, _, ev in evs if g == group and isinstance(ev, OffsetCommit))
        elif positions and kind == "admin" and v is not None and _SHARE_MARK in v:
            try:
                evs = decode_one(kind, topic, partition, offset, ts, k, v)
            except Exception:
                continue
            out.extend(
                ev
                for g, _, _, ev in evs
                if g == group and isinstance(ev, CommittedSnapshot) and ev.source == SHARE_START_OFFSETS
            )
    return out


# a share group's positions line names its source; every other held Admin line (describes) is not
# decoded again at each batch it waits
_SHARE_MARK = b'"share_start_offsets"'


def _frame(out: dict[str, list[Any]]) -> Any:
    """The output rows as a pandas frame, typed up front (pandas' own inference cost about as much
    as the rest of a bucket's work in a catch-up)."""
    import numpy as np
    import pandas as pd

    types = {"group": object, "kind": object, "ts": np.int64, "refreshed": np.int64, "payload": object}
    return pd.DataFrame({c: np.array(out[c], types[c]) for c in OUTPUT_COLUMNS}, copy=False)


@dataclass(slots=True)
class GroupSlot:
    """What a bucket keeps of one of its groups between micro-batches."""

    engine: bytes = b""  # the pickled GroupEngine (b"": every row of it still held)
    last_input: int = 0  # when it last got evidence (wall clock, ms)
    digest: str = ""  # of the document (live: the head) last written
    held: list[tuple[int, tuple]] = field(default_factory=list)  # rows behind the watermark: (release, row)
    wake_at: int = 0  # when it must next be looked at with no evidence of its own (`_wake_at`)
    # when its lag numbers were next due, in checkpoints from before the lag refresher's schedule moved
    # to Redis (storage/lag_schedule.py): moved there the first time the bucket runs, then 0
    lag_due: int = 0

    def __reduce__(self) -> tuple:
        return (GroupSlot, (self.engine, self.last_input, self.digest, self.held, self.wake_at, self.lag_due))

    @classmethod
    def of(cls, v: Any) -> GroupSlot:
        """A slot as any checkpoint saved it: this class, or the tuple of 3 to 6 of its fields that
        versions before it saved."""
        return v if isinstance(v, GroupSlot) else cls(*v)


def _load_state(state: Any) -> tuple[dict[str, GroupSlot], dict[str, Any]]:
    """(groups, meta) of a bucket: each group's GroupSlot; meta holds the watermark's inputs ("event":
    the latest event time delivered, "seen": when the bucket last got a record) and the data epoch it
    last saw. A checkpoint from before the watermark held the groups alone."""
    if not state.exists:
        return {}, {}
    obj = pickle.loads(state.get[0])
    groups, meta = (obj[0], obj[1]) if isinstance(obj, tuple) else (obj, {})
    return {g: GroupSlot.of(v) for g, v in groups.items()}, meta


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"
