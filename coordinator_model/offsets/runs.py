"""Offset commits gathered into runs: one partition's commits of one batch, summarised where they
were read, so that a catch-up's millions of commits cost the model one step per partition."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(slots=True)
class CommitRun:
    """One partition's offset commits of one batch, in evidence order, as a catch-up delivers them:
    summarised where they were read, so that applying them costs the same for 1 commit or 10,000.
    Every commit has an empty metadata string and none is a tombstone."""

    topic: str
    partition: int
    first_ts: int
    first_log: int
    last_ts: int
    last_log: int
    monotone: bool  # log offsets never go down along the run, and none is negative
    # the last commit's fields
    offset: int
    commit_ts: int
    epoch: int
    expire: int
    # the lag window's last WINDOW slots, (ts, offset) each, and the start of the last slot, as
    # sampling makes them when the run's first commit opens a slot (see lag.PartitionWindow.add)
    slots: list[tuple[int, int]]
    slot_start: int
    # every commit, as apply_commits rows (ts, topic, partition, offset, commit timestamp, leader
    # epoch, expire timestamp, log offset), in order: for when the summary does not hold
    rows: Callable[[], list[tuple]]
    topic_id: str | None = None  # the topic's id, when version 4 values carried it (Kafka 4.1+)


def merged_rows(runs: Iterable[CommitRun]) -> list[tuple]:
    """The commits of several runs as apply_commits rows, in evidence order (time, log offset)."""
    return sorted((row for run in runs for row in run.rows()), key=lambda r: (r[0], r[7]))
