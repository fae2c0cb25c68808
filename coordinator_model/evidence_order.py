"""The order evidence is applied in: by time; at the same millisecond the broker's log first, then
records, client events, log ends and Admin API snapshots last, so that a group "as of ts" equals the
snapshot taken at ts; records of one partition by their log offset."""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from coordinator_model.evidence import Evidence

_PRIORITY = {"offsets": 1, "broker_log": 0, "heartbeats": 2, "end_offsets": 3, "describe": 4}


def sort_key(ev: Evidence) -> tuple[int, int, int]:
    return (ev.ts, _PRIORITY.get(ev.source, 5), getattr(ev, "log_offset", 0))


def sort_evidence(evs: Iterable[Evidence]) -> list[Evidence]:
    return sorted(evs, key=sort_key)


def merge_sorted(*streams: Iterable[Evidence]) -> Iterable[Evidence]:
    """Merge already time-ordered evidence streams."""
    return heapq.merge(*streams, key=sort_key)
