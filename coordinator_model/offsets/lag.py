"""Consumer lag: in offsets and in seconds, plus a Burrow-style evaluation per partition.

- Lag in offsets = log-end offset - committed offset, never negative.
- Lag in seconds = how long ago the log reached the committed offset (from the history of log-end
  offsets): a consumer sitting at offset c is as far behind as the moment the log's end passed c.
  A partition that is fully consumed has zero time lag, even when the topic is idle.
- Burrow (linkedin/Burrow core/internal/evaluator): over a sliding window of commits, a partition
  is OK unless its lag is non-zero now and: the commits stopped (STOP: time since the last commit is
  longer than the window spans), the offset went backwards (REWIND), the offset never moved (STALL),
  or the lag grew at every commit (WARN). A group is ERR when any partition is STOP, STALL or REWIND.
- A lag of 1 that does not move on an idle log is the commit marker of a transaction that the
  consumer cannot consume: the evaluator counts it as zero.
"""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from coordinator_model.document.types import LagDoc, MemberLag, PartitionLag

WINDOW = 10  # Burrow's `intervals`
MIN_DISTANCE_MS = 1000  # a commit closer than this to the previous one replaces it (Burrow min-distance)
HISTORY_POINTS = 2000  # log-end offset points kept per partition


def _longs() -> array:
    return array("q")


@dataclass(slots=True)
class EndOffsetHistory:
    """Times at which a partition's log-end offset took each new value (non-decreasing offsets).
    Kept in machine-int arrays: a group holds one per partition, for days."""

    ts: array = field(default_factory=_longs)
    offsets: array = field(default_factory=_longs)
    last_seen: int = 0  # time of the latest observation, even if the value did not change

    def __reduce__(self) -> tuple:
        return (EndOffsetHistory, (self.ts, self.offsets, self.last_seen))

    def add(self, ts: int, end_offset: int) -> None:
        self.last_seen = max(self.last_seen, ts)
        if self.offsets and end_offset <= self.offsets[-1]:
            if end_offset < self.offsets[-1] and ts >= self.ts[-1]:
                # the log was truncated/recreated: start the history again
                self.ts, self.offsets = array("q", [ts]), array("q", [end_offset])
            return
        if self.ts and ts < self.ts[-1]:
            ts = self.ts[-1]  # skewed sample: keep the series monotonic
        self.ts.append(ts)
        self.offsets.append(end_offset)
        if len(self.ts) > HISTORY_POINTS:
            del self.ts[: len(self.ts) - HISTORY_POINTS]
            del self.offsets[: len(self.offsets) - HISTORY_POINTS]

    def trim_before(self, cutoff: int) -> None:
        i = bisect.bisect_left(self.ts, cutoff)
        if i > 1:
            del self.ts[: i - 1]
            del self.offsets[: i - 1]

    @property
    def latest(self) -> int | None:
        return self.offsets[-1] if self.offsets else None

    def at(self, ts: int) -> int | None:
        """The log-end offset as of `ts` (None if nothing was known then)."""
        i = bisect.bisect_right(self.ts, ts)
        return self.offsets[i - 1] if i else None

    def reached(self, offset: int) -> int | None:
        """When did the log-end offset first reach `offset` (interpolated between samples)?"""
        i = bisect.bisect_left(self.offsets, offset)
        if i >= len(self.offsets):
            return None
        if i == 0:
            return self.ts[0]
        t0, o0, t1, o1 = self.ts[i - 1], self.offsets[i - 1], self.ts[i], self.offsets[i]
        # the log grew from o0 (seen at t0) to o1 (first seen at t1): it passed `offset` in between
        return t0 + (t1 - t0) * (offset - o0) // max(1, o1 - o0)


class CommitSample(NamedTuple):
    """One slot of a partition's lag window. A tuple: a group keeps up to WINDOW of them for each
    partition, and the pipeline builds them all again whenever it unpickles the group's engine (as
    slots dataclasses, building them was 6% of a busy group's micro-batch)."""

    ts: int
    offset: int
    lag: int | None  # None when the log-end offset was unknown at that time
    end_offset: int | None


@dataclass(slots=True)
class PartitionWindow:
    samples: list[CommitSample] = field(default_factory=list)
    slot_start: int = -(2**62)  # when the newest slot opened: commits within MIN_DISTANCE share it

    def __reduce__(self) -> tuple:
        return (PartitionWindow, (self.samples, self.slot_start))

    def add(self, sample: CommitSample) -> None:
        if self.samples and sample.ts - self.slot_start < MIN_DISTANCE_MS:
            self.samples[-1] = sample
        else:
            self.samples.append(sample)
            self.slot_start = sample.ts
        if len(self.samples) > WINDOW:
            del self.samples[0]


# The largest lag a partition has: a lag is stored as a long (storage/group_offsets.py), and a commit
# of any long is a real record (a client may commit offset -2**63 to its own group), whose lag to a
# log end past 0 was past a long and failed the model stage's write of the group's offsets.
LAG_MAX = 2**63 - 1


def lag_offsets(committed: int | None, end_offset: int | None) -> int | None:
    if committed is None or end_offset is None:
        return None
    return min(max(0, end_offset - committed), LAG_MAX)


def lag_seconds(committed: int | None, history: EndOffsetHistory | None, now_ms: int) -> float | None:
    if committed is None or history is None or history.latest is None:
        return None
    if committed >= history.latest:
        return 0.0
    reached = history.reached(committed + 1)  # the first message the consumer has not consumed
    if reached is None:
        return 0.0
    return max(0.0, (now_ms - reached) / 1000.0)


def _effective_lag(s: CommitSample, idle: bool) -> int | None:
    if s.lag is None:
        return None
    return 0 if (s.lag <= 1 and idle) else s.lag


def _idle(samples: list[CommitSample]) -> bool:
    """The log end did not move over the window's commits."""
    ends = [s.end_offset for s in samples if s.end_offset is not None]
    return bool(ends) and min(ends) == max(ends)


def evaluate_partition(window: PartitionWindow, current_lag: int | None, now_ms: int) -> str:
    """Burrow's calculatePartitionStatus over the window of commits (OK/WARN/STOP/STALL/REWIND)."""
    samples = window.samples
    if not samples or current_lag is None:
        return "OK"
    n = len(samples)
    first, last = samples[0].ts, samples[-1].ts
    stop = n > 1 and now_ms - last > last - first
    if current_lag > 1:
        # the current lag counts whatever the log did: the cheap answers (STOP, one sample) come
        # before any walk of the window (a lagging fleet's refresh evaluates every partition of
        # every group, and most of a quiet one's partitions are STOP)
        if stop:
            return "STOP"
        if n < 2:
            return "OK"
    # whether the log stood still over the window matters only for a lag of at most 1 (a transaction
    # marker): asked only then
    low = current_lag <= 1 or any(s.lag is not None and s.lag <= 1 for s in samples)
    idle = low and _idle(samples)
    current = 0 if (current_lag <= 1 and idle) else current_lag
    if current == 0:
        return "OK"
    if stop:
        return "STOP"
    lags = [_effective_lag(s, idle) for s in samples] if low else [s.lag for s in samples]
    if n < 2 or any(v is None for v in lags):
        return "OK"
    if all(v > 0 for v in lags):
        offsets = [s.offset for s in samples]
        if any(b < a for a, b in itertools.pairwise(offsets)):
            return "REWIND"
        if offsets[0] == offsets[-1]:
            return "STALL"
        if all(b > a for a, b in itertools.pairwise(lags)):
            return "WARN"
    return "OK"


def group_status(partition_statuses: list[str]) -> str:
    """Burrow's group status: ERR if any partition stopped, stalled or rewound; WARN if any lags."""
    if any(s in ("STOP", "STALL", "REWIND") for s in partition_statuses):
        return "ERR"
    if "WARN" in partition_statuses:
        return "WARN"
    return "OK"


def moved_on(lag: LagDoc, ends: Mapping[tuple[str, int], EndOffsetHistory], now_ms: int) -> LagDoc:
    """A group's lag (as its document has it) brought up to `now_ms` with the log ends known now,
    committed offsets and Burrow statuses as they were: what the group's engine would compute with
    no new evidence of its own but the log ends (a status moves with time alone only when a partition
    turns STOP: OffsetStore.next_stop says when). The numbers follow `OffsetStore.lag`: lag in
    offsets from the newest end, in seconds from when the log passed the committed offset."""
    parts = []
    for p in lag.partitions:
        h = ends.get((p.topic, p.partition))
        end = h.latest if h is not None else p.end_offset
        lo = lag_offsets(p.committed, end) if h is not None else p.lag
        ls = lag_seconds(p.committed, h, now_ms) if h is not None else p.lag_seconds
        parts.append(
            PartitionLag(p.topic, p.partition, p.committed, p.has_commit, end, lo, ls, p.status, p.member_id)
        )
    return lag_doc(parts, lag.status)


def lag_doc(parts: list[PartitionLag], status: str | None) -> LagDoc:
    """A group's lag from its partitions' rows: per member, the sum over the partitions it owns and
    the worst of their lags in seconds; the group's total and worst (None when no partition's lag is
    known)."""
    per_member: dict[str, MemberLag] = {}
    for p in parts:
        if p.member_id is not None:
            pm = per_member.get(p.member_id)
            if pm is None:
                pm = per_member[p.member_id] = MemberLag(p.member_id)
            pm.lag += p.lag or 0
            pm.lag_seconds = max(pm.lag_seconds, p.lag_seconds or 0.0)
    known = [p.lag for p in parts if p.lag is not None]
    secs = [p.lag_seconds for p in parts if p.lag_seconds is not None]
    return LagDoc(
        total=sum(known) if known else None,
        max_seconds=max(secs) if secs else None,
        status=status,
        partitions=parts,
        members=sorted(per_member.values(), key=lambda r: r.member_id),
    )
