"""A group's committed offsets and what is known of each partition's log end, with Kafka's rules for
them written once: which commit record a partition keeps (OffsetMetadataManager's append rule), when
an offset expires (removeExpiredOffsets), and the lag that follows (offsets/lag.py).

The store knows nothing of the group's state: the group model decides which offsets can expire
(that depends on the group's state and protocol) and hands the store the base time; the store
applies the rule. Both kinds of group (classic and KIP-848) keep their offsets here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from coordinator_model.document.types import LagDoc, OffsetDoc, PartitionLag
from coordinator_model.offsets import lag as lagmod
from coordinator_model.offsets.runs import CommitRun, merged_rows

TP = tuple[str, int]


@dataclass(slots=True)
class OffsetState:
    offset: int
    commit_timestamp: int
    ts: int
    log_offset: int = -1
    metadata: str = ""
    leader_epoch: int = -1
    expire_timestamp: int = -1

    def __reduce__(self) -> tuple:
        # A group keeps one per partition and the pipeline pickles the engine at every batch that
        # touches it: a plain tuple pickles 3 times faster than a slots dataclass's default state.
        return (
            OffsetState,
            (
                self.offset,
                self.commit_timestamp,
                self.ts,
                self.log_offset,
                self.metadata,
                self.leader_epoch,
                self.expire_timestamp,
            ),
        )


def _unpack_store(committed: list[tuple], ends: list[tuple], windows: list[tuple]) -> OffsetStore:
    """An OffsetStore from the rows `OffsetStore.__reduce__` made."""
    history, window, sample, new = (
        lagmod.EndOffsetHistory,
        lagmod.PartitionWindow,
        lagmod.CommitSample,
        tuple.__new__,
    )
    return OffsetStore(
        {tp: OffsetState(*fields) for tp, fields in committed},
        {tp: history(ts, offsets, last_seen) for tp, ts, offsets, last_seen in ends},
        {tp: window([new(sample, x) for x in samples], start) for tp, start, samples in windows},
    )


def replaces(kept: OffsetState | None, log_offset: int) -> bool:
    """Kafka's GroupMetadata.onOffsetCommitAppend: a commit record replaces the partition's kept
    offset unless the kept one was written later in the log (an older record never replaces a newer
    one; a commit with no log position, an Admin API answer, always does)."""
    return kept is None or log_offset < 0 or kept.log_offset <= log_offset


class OffsetStore:
    """Committed offsets (`committed`), log-end histories (`ends`) and lag windows (`windows`) per
    partition of one group."""

    __slots__ = ("committed", "ends", "windows")

    def __init__(
        self,
        committed: dict[TP, OffsetState] | None = None,
        ends: dict[TP, lagmod.EndOffsetHistory] | None = None,
        windows: dict[TP, lagmod.PartitionWindow] | None = None,
    ) -> None:
        self.committed: dict[TP, OffsetState] = committed if committed is not None else {}
        self.ends: dict[TP, lagmod.EndOffsetHistory] = ends if ends is not None else {}
        self.windows: dict[TP, lagmod.PartitionWindow] = windows if windows is not None else {}

    def __reduce__(self) -> tuple:
        # The pipeline pickles a group's engine at every micro-batch that touches it, and the store
        # is nearly all of it: a few objects per partition, each of which pickle asked for its state
        # one by one (a Python call each: a quarter of a busy group's micro-batch). As plain rows,
        # built in one pass here, pickling the store takes a third to a half of the time. An engine
        # pickled before this form (OffsetStore(committed, ends, windows)) still loads.
        committed = [
            (
                tp,
                (
                    o.offset,
                    o.commit_timestamp,
                    o.ts,
                    o.log_offset,
                    o.metadata,
                    o.leader_epoch,
                    o.expire_timestamp,
                ),
            )
            for tp, o in self.committed.items()
        ]
        ends = [(tp, h.ts, h.offsets, h.last_seen) for tp, h in self.ends.items()]
        windows = [(tp, w.slot_start, list(map(tuple, w.samples))) for tp, w in self.windows.items()]
        return (_unpack_store, (committed, ends, windows))

    # ---- commits ------------------------------------------------------------------------------
    def commit(self, tp: TP, state: OffsetState) -> bool:
        """Keep one (non-tombstone) commit as `tp`'s offset and sample its lag; False when the append
        rule keeps the offset already there."""
        if not replaces(self.committed.get(tp), state.log_offset):
            return False
        self.committed[tp] = state
        self._sample(tp, state.ts)
        return True

    def tombstone(self, tp: TP, log_offset: int) -> None:
        """An offset deletion record: it removes the offset unless a later record wrote it again."""
        cur = self.committed.get(tp)
        if cur is None or cur.log_offset <= log_offset:
            self.committed.pop(tp, None)

    def commit_rows(self, tp: TP, seq: list[tuple]) -> int | None:
        """One partition's commits (GroupEngine.apply_commits rows, in evidence order), with exactly
        the effect of `commit` on each; the time of the first one kept, or None."""
        cur = self.committed.get(tp)
        cur_log = cur.log_offset if cur is not None else None
        kept = []
        for row in seq:
            if cur_log is not None and row[7] >= 0 and cur_log > row[7]:
                continue  # the append rule, as `replaces` (inlined: a catch-up meets millions)
            cur_log = row[7]
            kept.append(row)
        if not kept:
            return None
        ts, _, _, off, cts, epoch, expire, log_off = kept[-1]
        self.committed[tp] = OffsetState(off, cts if cts >= 0 else ts, ts, log_off, "", epoch, expire)
        self._sample_many(tp, [(r[0], r[3]) for r in kept])
        return kept[0][0]

    def commit_run(self, tp: TP, run: CommitRun) -> int | None:
        """One run: from its summary when every commit of it is kept and its first commit opens a
        lag slot (then neither depends on what the store holds), else commit by commit."""
        cur = self.committed.get(tp)
        w = self.windows.get(tp)
        if (
            run.monotone
            and (cur is None or cur.log_offset <= run.first_log)
            and (w is None or not w.samples or run.first_ts - w.slot_start >= lagmod.MIN_DISTANCE_MS)
        ):
            cts = run.commit_ts if run.commit_ts >= 0 else run.last_ts
            self.committed[tp] = OffsetState(
                run.offset, cts, run.last_ts, run.last_log, "", run.epoch, run.expire
            )
            self._set_window(tp, run.slots, run.slot_start)
            return run.first_ts
        return self.commit_rows(tp, run.rows())

    def apply_runs(self, runs: list[CommitRun]) -> list[int | None]:
        """Runs of commits (sorted by first commit), with exactly the effect of committing each of
        their commits in evidence order; per partition, the time of the first commit kept, or None.
        The live pipeline applies a known group's runs here alone, without its engine."""
        by_tp: dict[TP, list[CommitRun]] = {}
        for run in runs:  # in order of each partition's first commit, as apply_commits meets them
            by_tp.setdefault((run.topic, run.partition), []).append(run)
        firsts: list[int | None] = []
        for tp, tp_runs in by_tp.items():
            chained = all((a.last_ts, a.last_log) < (b.first_ts, b.first_log) for a, b in pairwise(tp_runs))
            if not chained:  # runs of one partition that interleave in evidence order: merge them
                firsts.append(self.commit_rows(tp, merged_rows(tp_runs)))
                continue
            first = None
            for run in tp_runs:
                t = self.commit_run(tp, run)
                first = t if first is None else first
            firsts.append(first)
        return firsts

    def snapshot(self, ts: int, offsets: Iterable[tuple[str, int, int]], drop_unseen: bool) -> None:
        """Committed offsets as an Admin API answer (OffsetFetch) gave them at `ts`; `drop_unseen`:
        the answer is the only word on offsets, so a partition it no longer lists has none."""
        seen = set()
        for topic, partition, offset in offsets:
            tp = (topic, partition)
            seen.add(tp)
            cur = self.committed.get(tp)
            if cur is not None and cur.ts > ts:
                continue
            if cur is None or cur.offset != offset:
                # a snapshot repeats the committed offset every poll: only a changed offset is a
                # commit for the Burrow window (a consumer that stopped must not look STALLed)
                self.committed[tp] = OffsetState(offset, ts, ts, cur.log_offset if cur else -1)
                self._sample(tp, ts)
        if drop_unseen:
            for tp in [tp for tp in self.committed if tp not in seen]:
                del self.committed[tp]

    def forget(self) -> None:
        """The group was deleted: its offsets went with it (log ends are the topics' own)."""
        self.committed.clear()

    # ---- log ends ------------------------------------------------------------------------------
    def end_offset(self, tp: TP, ts: int, end: int) -> tuple[bool, str | None]:
        """A partition's log-end offset at `ts`: (whether the partition is new to the store, a note
        when the offset committed there is beyond that end)."""
        h = self.ends.get(tp)
        new = h is None
        if h is None:
            h = self.ends[tp] = lagmod.EndOffsetHistory()
        h.add(ts, end)
        cur = self.committed.get(tp)
        if cur is not None and cur.ts <= ts and cur.offset > end:
            # a consumer cannot commit past the log's end: this answer is behind (a broker whose
            # ListOffsets counts batches, not records) or the log was truncated; lag is a lower bound
            return new, (
                f"log-end offset {end} of {tp[0]}-{tp[1]} is below its committed "
                f"offset {cur.offset}: lag there is a lower bound"
            )
        return new, None

    def partition_count(self, topic: str) -> int | None:
        """How many partitions `topic` has, as far as the log ends seen show (None: none seen)."""
        parts = [p for t, p in self.ends if t == topic]
        return 1 + max(parts) if parts else None

    def last_commit(self, tps: Iterable[TP], since: int | None = None) -> tuple[int, int | None] | None:
        """When any of `tps` was last committed, and the usual interval between commits there (the
        median gap in their lag windows; None below two gaps): (last, cadence), None with no commit.
        `since`: only commits from then on count (those of the partitions' present owner, not of
        the member that held them before)."""
        last = None
        gaps: list[int] = []
        for tp in tps:
            o = self.committed.get(tp)
            if o is None or (since is not None and o.ts < since):
                continue
            last = o.ts if last is None else max(last, o.ts)
            w = self.windows.get(tp)
            if w is not None:
                samples = [x for x in w.samples if since is None or x.ts >= since]
                gaps.extend(b.ts - a.ts for a, b in pairwise(samples))
        if last is None:
            return None
        gaps.sort()
        return last, (gaps[len(gaps) // 2] if len(gaps) >= 2 else None)

    # ---- expiry --------------------------------------------------------------------------------
    def expiries(
        self, retention_ms: int, base: int | None, only: Callable[[TP], bool] | None = None
    ) -> list[tuple[TP, int]]:
        """removeExpiredOffsets' times: each offset (of those `only` admits) expires at its own expire
        timestamp (v1 commits), else `retention_ms` after `base` (when the group became Empty), else
        after its commit."""
        out = []
        for tp, o in self.committed.items():
            if only is not None and not only(tp):
                continue
            e = o.expire_timestamp
            if e is not None and e > 0:
                out.append((tp, e))
            else:
                out.append((tp, (o.commit_timestamp if base is None else base) + retention_ms))
        return out

    def first_expiry(
        self, retention_ms: int, base: int | None, only: Callable[[TP], bool] | None = None
    ) -> int | None:
        """The earliest of `expiries`' times (None: no offset), without listing them: a group is
        looked at for expiry at every batch that reaches it, and almost never has one due."""
        first = None
        for tp, o in self.committed.items():
            if only is not None and not only(tp):
                continue
            e = o.expire_timestamp
            at = (
                e
                if e is not None and e > 0
                else (o.commit_timestamp if base is None else base) + retention_ms
            )
            if first is None or at < first:
                first = at
        return first

    def expire(self, now: int, expiries: Iterable[tuple[TP, int]]) -> None:
        for tp, at in expiries:
            if now >= at:
                del self.committed[tp]
                self.windows.pop(tp, None)

    def trim(self, cutoff: int) -> None:
        for h in self.ends.values():
            h.trim_before(cutoff)

    # ---- lag -----------------------------------------------------------------------------------
    def next_stop(self, now: int) -> int | None:
        """The first moment after `now` at which a lagging partition turns STOP with no new evidence
        (Burrow: its commits stopped for longer than its window spans): the only way a partition's
        status moves with time alone, so what a group with lag must be looked at again for."""
        due = None
        for tp, w in self.windows.items():
            if len(w.samples) < 2:
                continue
            first, last = w.samples[0].ts, w.samples[-1].ts
            at = last + (last - first) + 1
            if at <= now:
                continue
            o, h = self.committed.get(tp), self.ends.get(tp)
            if o is None or h is None or not lagmod.lag_offsets(o.offset, h.latest):
                continue
            due = at if due is None else min(due, at)
        return due

    def _sample(self, tp: TP, ts: int) -> None:
        cur = self.committed.get(tp)
        if cur is None:
            return
        h = self.ends.get(tp)
        end = h.at(ts) if h is not None else None
        w = self.windows.get(tp)
        if w is None:
            w = self.windows[tp] = lagmod.PartitionWindow()
        w.add(lagmod.CommitSample(ts, cur.offset, lagmod.lag_offsets(cur.offset, end), end))

    def _sample_many(self, tp: TP, commits: list[tuple[int, int]]) -> None:
        """`_sample` after each of `commits` [(ts, offset)] in turn; the samples a later commit of the
        same slot replaces, or that fall out of the window, are never built."""
        w = self.windows.get(tp)
        slots: list[Any] = list(w.samples) if w is not None else []
        start = w.slot_start if w is not None else 0
        for ts, off in commits:
            if slots and ts - start < lagmod.MIN_DISTANCE_MS:
                slots[-1] = (ts, off)
            else:
                slots.append((ts, off))
                start = ts
        self._set_window(tp, slots, start, replace=True)

    def _set_window(self, tp: TP, slots: list[Any], start: int, replace: bool = False) -> None:
        """Append the new slots' (ts, offset) to a partition's lag window (or, `replace`, make `slots`,
        which begin with the window's own samples, the window), keeping the last WINDOW."""
        w = self.windows.get(tp)
        if w is None:
            w = self.windows[tp] = lagmod.PartitionWindow()
        if not replace:
            slots = [*w.samples, *slots[-lagmod.WINDOW :]]
        h = self.ends.get(tp)
        samples = []
        for s in slots[-lagmod.WINDOW :]:
            if type(s) is tuple:  # a new slot (ts, offset); a CommitSample is a tuple too
                end = h.at(s[0]) if h is not None else None
                s = lagmod.CommitSample(s[0], s[1], lagmod.lag_offsets(s[1], end), end)
            samples.append(s)
        w.samples = samples
        w.slot_start = start

    def lag(self, now: int, owner: dict[TP, str]) -> LagDoc:
        """The group's lag as its document carries it: per partition (committed or owned by a member
        in `owner`), per member, and the group's total, worst time lag and Burrow status."""
        parts = []
        statuses = []
        for tp in sorted(set(self.committed) | set(owner)):
            o = self.committed.get(tp)
            h = self.ends.get(tp)
            end = h.latest if h is not None else None
            committed = o.offset if o is not None else None
            lo = lagmod.lag_offsets(committed, end)
            # a partition without a commit or a log end has no lag to weigh (nor a lag in seconds)
            if o is None:
                ls, status = None, "NO_COMMIT"
            elif lo is None:
                ls, status = None, "UNKNOWN"
            else:
                ls = lagmod.lag_seconds(committed, h, now)
                w = self.windows.get(tp)
                status = lagmod.evaluate_partition(w, lo, now) if w is not None else "OK"
                statuses.append(status)
            parts.append(
                PartitionLag(tp[0], tp[1], committed, o is not None, end, lo, ls, status, owner.get(tp))
            )
        return lagmod.lag_doc(parts, lagmod.group_status(statuses))

    def rows(self) -> list[OffsetDoc]:
        """The committed offsets as the group's document lists them."""
        return [
            OffsetDoc(tp[0], tp[1], o.offset, o.commit_timestamp, o.metadata, o.leader_epoch)
            for tp, o in sorted(self.committed.items())
        ]
