"""The cluster's log-end offsets, once per topic-partition (docs/redis-schema.md, "Log ends").

A partition's log end is the topic's, not a group's: ten thousand groups reading one topic all lag
behind the same end. The Admin poller's end-offsets lines name a group each (that is how they are
captured and replayed), but live they are merged here, one history per partition, and every group
that reads the partition takes its lag from it. Before, each group kept its own copy of every
partition's history in its engine, and each poll's line woke and rewrote every lagging group.

A history is kept as `EndOffsetHistory` keeps it (a point when the end moves, `last_seen` always),
packed as machine ints, and thinned past MAX_POINTS: the older half loses every other point, so the
recent minutes stay exact and lag in seconds of an old backlog is interpolated over coarser steps.

Readers in a Python worker keep the histories of the topics they read (`LogEndsCache`), checked
against the topic's version counter, which each merge increments: a model bucket asks Redis one
`MGET` of versions and reloads only the topics that moved since.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from coordinator_model.offsets.lag import EndOffsetHistory

MAX_POINTS = 128
_HEAD = struct.Struct("<q")

TP = tuple[str, int]


def pack(h: EndOffsetHistory) -> bytes:
    """A history as bytes: last_seen, then the times, then the offsets (little-endian int64)."""
    ts, offsets = array("q", h.ts), array("q", h.offsets)
    if struct.pack("=q", 1) != struct.pack("<q", 1):  # a big-endian machine writes little-endian
        ts.byteswap()
        offsets.byteswap()
    return _HEAD.pack(int(h.last_seen)) + ts.tobytes() + offsets.tobytes()


def unpack(raw: bytes) -> EndOffsetHistory:
    """The history `pack` wrote; ValueError for bytes of another shape."""
    if len(raw) < 8 or (len(raw) - 8) % 16:
        raise ValueError(f"a log-end history is 8 + 16n bytes, got {len(raw)}")
    (last_seen,) = _HEAD.unpack_from(raw)
    n = (len(raw) - 8) // 16
    ts, offsets = array("q"), array("q")
    ts.frombytes(raw[8 : 8 + 8 * n])
    offsets.frombytes(raw[8 + 8 * n :])
    if struct.pack("=q", 1) != struct.pack("<q", 1):
        ts.byteswap()
        offsets.byteswap()
    return EndOffsetHistory(ts, offsets, last_seen)


def thin(h: EndOffsetHistory, max_points: int = MAX_POINTS) -> None:
    """Keep at most `max_points`: every other point of the older half goes (the first point stays,
    so the history still says since when the end is known)."""
    while len(h.ts) > max_points:
        half = len(h.ts) // 2
        keep = [0, *range(2, half, 2), *range(half, len(h.ts))]
        h.ts = array("q", (h.ts[i] for i in keep))
        h.offsets = array("q", (h.offsets[i] for i in keep))


def merge(h: EndOffsetHistory, points: Iterable[tuple[int, int]], max_points: int = MAX_POINTS) -> None:
    """Observations (ts, end) added in time order, as the engine's `end_offset` adds them."""
    for ts, end in sorted(points):
        h.add(ts, end)
    thin(h, max_points)


class LogEnds:
    """The log-end histories of one cluster in Redis: `{prefix}:ends:{TOPIC}` hash, field = partition,
    value = `pack(history)`; `{prefix}:ends:version` hash, field = topic, value = merges so far."""

    def __init__(self, client: Any, prefix: str) -> None:
        self.r = client
        self.p = prefix

    def key(self, topic: str) -> str:
        return f"{self.p}:ends:{{{topic}}}"

    def version_key(self) -> str:
        return f"{self.p}:ends:version"

    def merge(self, observations: Mapping[TP, list[tuple[int, int]]], moved: set[str] | None = None) -> int:
        """Add each partition's observations to its history; returns the partitions written, and adds
        to `moved` the topics where a partition's log end went up (the lag of every group reading it
        may have moved). Merging the same observations again leaves the same histories (a replayed
        micro-batch)."""
        by_topic: dict[str, dict[int, list[tuple[int, int]]]] = {}
        for (topic, partition), points in observations.items():
            if points:
                by_topic.setdefault(topic, {})[int(partition)] = points
        if not by_topic:
            return 0
        topics = sorted(by_topic)
        with self.r.pipeline(transaction=False) as p:
            for t in topics:
                p.hmget(self.key(t), [str(x) for x in by_topic[t]])
            stored = p.execute()
        written = 0
        with self.r.pipeline(transaction=False) as p:
            for t, olds in zip(topics, stored, strict=True):
                out: dict[str, bytes] = {}
                for (partition, points), old in zip(by_topic[t].items(), olds, strict=True):
                    h = _history(old)
                    before = (len(h.ts), h.ts[-1] if h.ts else None, h.last_seen)
                    latest = h.latest
                    merge(h, points)
                    if (len(h.ts), h.ts[-1] if h.ts else None, h.last_seen) != before or old is None:
                        out[str(partition)] = pack(h)
                    if moved is not None and h.latest is not None and (latest is None or h.latest > latest):
                        moved.add(t)
                if out:
                    p.hset(self.key(t), mapping=out)
                    p.hincrby(self.version_key(), t, 1)
                    written += len(out)
            p.execute()
        return written

    def read(self, topics: Iterable[str]) -> dict[TP, EndOffsetHistory]:
        """Every partition history of these topics."""
        topics = sorted(set(topics))
        if not topics:
            return {}
        with self.r.pipeline(transaction=False) as p:
            for t in topics:
                p.hgetall(self.key(t))
            rows = p.execute()
        out: dict[TP, EndOffsetHistory] = {}
        for t, fields in zip(topics, rows, strict=True):
            for part, raw in fields.items():
                out[(t, int(part))] = _history(raw)
        return out

    def versions(self, topics: list[str]) -> list[int]:
        if not topics:
            return []
        return [int(v or 0) for v in self.r.hmget(self.version_key(), topics)]


def _history(raw: bytes | None) -> EndOffsetHistory:
    if raw is None:
        return EndOffsetHistory()
    try:
        return unpack(bytes(raw))
    except ValueError:  # a value of another shape (a key someone else wrote): start the history again
        return EndOffsetHistory()


class LogEndsCache:
    """A worker's copy of the histories of the topics it read, reloaded per topic when its version
    moved. Histories handed out are copies: an engine adds to its own and must not change the cache."""

    def __init__(self, ends: LogEnds) -> None:
        self.ends = ends
        self._topics: dict[str, tuple[int, dict[int, EndOffsetHistory]]] = {}
        self._asked: set[str] | None = None  # within `once()`: the topics whose version was asked

    @contextmanager
    def once(self) -> Iterator[None]:
        """Within it, each topic's version is asked of Redis once. A catch-up's bucket asked it twice
        per group (the ends lent to the engine, then its members' topics): 20,000 round trips for
        10,000 groups, a tenth of the model stage. Ends merged meanwhile are as if merged just after
        the bucket ran, an order Spark's tasks already allow."""
        outer, self._asked = self._asked, set() if self._asked is None else self._asked
        try:
            yield
        finally:
            self._asked = outer

    def histories(self, topics: Iterable[str], copy: bool = True) -> dict[TP, EndOffsetHistory]:
        """Every partition history of these topics: copies, or (`copy` False, for a reader that only
        reads them, like a lag refresh) the cache's own."""
        wanted = sorted(set(topics))
        if not wanted:
            return {}
        self._refresh(wanted)
        out: dict[TP, EndOffsetHistory] = {}
        for t in wanted:
            for p, h in self._topics.get(t, (0, {}))[1].items():
                out[(t, p)] = (
                    EndOffsetHistory(array("q", h.ts), array("q", h.offsets), h.last_seen) if copy else h
                )
        return out

    def view(self, tps: Iterable[TP]) -> dict[TP, EndOffsetHistory]:
        """The cached histories of these partitions themselves, not copies, for a reader that only
        reads them (the commit path, whose commits look up the log end at their time): copying a
        topic's 100 histories per group was most of a commit's cost."""
        wanted = sorted(set(tps))
        self._refresh(sorted({t for t, _ in wanted}))
        out: dict[TP, EndOffsetHistory] = {}
        for t, p in wanted:
            h = self._topics.get(t, (0, {}))[1].get(p)
            if h is not None:
                out[(t, p)] = h
        return out

    def _refresh(self, wanted: list[str]) -> None:
        """Reload the topics whose version in Redis moved since this cache read them."""
        if self._asked is not None:
            wanted = [t for t in wanted if t not in self._asked]
        if not wanted:
            return
        versions = self.ends.versions(wanted)
        stale = [t for t, v in zip(wanted, versions, strict=True) if self._topics.get(t, (-1,))[0] != v]
        if stale:
            fresh = self.ends.read(stale)
            for t, v in zip(wanted, versions, strict=True):
                if t in stale:
                    self._topics[t] = (v, {p: h for (tt, p), h in fresh.items() if tt == t})
        if self._asked is not None:
            # only once answered: a read that failed (and is retried) asks again
            self._asked.update(wanted)
