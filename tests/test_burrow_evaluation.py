"""Burrow's partition evaluation (coordinator_model/offsets/lag.py `evaluate_partition`) against its
plain reading, kept here: the model's version asks whether the log stood still only when a lag of at
most 1 is in play, which must never change a status."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_model.offsets.lag import CommitSample, PartitionWindow, evaluate_partition


def plain(samples: list[CommitSample], current_lag: int | None, now_ms: int) -> str:
    """calculatePartitionStatus as Burrow reads: every step taken, nothing skipped."""
    if not samples or current_lag is None:
        return "OK"
    ends = [s.end_offset for s in samples if s.end_offset is not None]
    idle = bool(ends) and min(ends) == max(ends)
    current = 0 if (current_lag <= 1 and idle) else current_lag
    if current == 0:
        return "OK"
    first, last = samples[0].ts, samples[-1].ts
    if len(samples) > 1 and now_ms - last > last - first:
        return "STOP"
    lags = [None if s.lag is None else 0 if (s.lag <= 1 and idle) else s.lag for s in samples]
    if len(samples) < 2 or any(v is None for v in lags):
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


small = st.integers(0, 4)
sample = st.builds(
    lambda ts, off, lag, end: CommitSample(ts, off, lag, end),
    st.integers(0, 50_000),
    small,
    st.none() | small,
    st.none() | small,
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(sample, max_size=6), st.none() | small, st.integers(0, 120_000))
def test_the_evaluation_is_burrows_plain_reading(samples, current_lag, now_ms) -> None:
    samples = sorted(samples, key=lambda s: s.ts)
    window = PartitionWindow(samples)
    assert evaluate_partition(window, current_lag, now_ms) == plain(samples, current_lag, now_ms)
