"""A streaming source over a capture folder (the layout of tests/fixtures/real-kafka-4.0/<scenario>/),
so `groupscope replay` runs exactly the live pipeline, only fed from files.

Every evidence line of the folder (offsets.jsonl, broker.log, describe.jsonl, end_offsets.jsonl,
heartbeats.jsonl; those present) becomes one row in the Kafka source's schema, merged into one
sequence in the order `groupscope model` applies evidence (the engine's sort key, then file and line);
the offset of the source is the index in that sequence, so any split into micro-batches applies the
evidence in that same order. The last rows are one end-of-capture tick per group, which advances
every group's clock to the last moment of the capture, as `groupscope model` does.

`__consumer_offsets` records keep their real partition and offset; other lines carry their file
name as topic and their line number as offset (a dead letter then says "broker.log/0@88").
Log-end offsets belong to a topic partition, not a group, so each one is sent once per group that
commits to or is assigned the topic (key = group name), as the Admin poller does live.

`speed`: replay at N x the capture's own pace (evidence time), else as fast as possible.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from collectors.capture.files import CAPTURE_FILES, OFFSETS_FILE, folder_lines
from collectors.capture.offsets_lines import OFFSETS_TOPIC, record_fields
from collectors.pipeline.rows import RAW_SCHEMA

FORMAT = "groupscope_capture"
KEY = "capture"

Row = tuple[str, int, int, int, bytes | None, bytes | None]


_CACHE: dict[tuple[str, float], list[tuple[int, Row]]] = {}


def _raw_rows(p: Path) -> Iterator[tuple[int, int, Row]]:
    """(file index, line number, row) for every non-blank line, in read_capture's file order."""
    for name, lineno, raw in folder_lines(p):
        line = raw.rstrip(b"\r\n")
        fields = record_fields(line) if name == OFFSETS_FILE else None
        # a line that is not a record is kept raw: it becomes a dead letter downstream
        row: Row = (name, 0, lineno, 0, None, line) if fields is None else (OFFSETS_TOPIC, *fields)
        yield CAPTURE_FILES.index(name), lineno, row


def load_capture(path: str) -> list[tuple[int, Row]]:
    """(timestamp, row) for every line of the capture, in the order `groupscope model` applies the
    evidence, log-end offsets fanned out to their groups, and one end-of-capture tick per group.
    Cached per process, so executors read the folder once, not once per partition."""
    from collectors.pipeline.route import KINDS_OF_CAPTURE_FILES, TICK_TOPIC, decode_one
    from coordinator_model.evidence import EndOffset, from_end_offset_json
    from coordinator_model.evidence_order import sort_key
    from coordinator_model.rebuild import topics_of

    p = Path(path)
    stamp = max((os.stat(p / f).st_mtime for f in CAPTURE_FILES if (p / f).exists()), default=0.0)
    ck = (str(p.resolve()), stamp)
    if ck in _CACHE:
        return _CACHE[ck]
    items: list[tuple[tuple, int, int, Row, Any]] = []
    topic_groups: dict[str, set[str]] = {}
    groups: set[str] = set()
    last_ts = 0
    for fi, lineno, row in _raw_rows(p):
        topic, part, off, ts, key, value = row
        try:
            if topic == "end_offsets.jsonl":  # no group yet: fanned out below
                e = from_end_offset_json(json.loads(value or b""))
                evs = [("", e.ts, 3, e)]
            else:
                evs = decode_one(KINDS_OF_CAPTURE_FILES[topic], topic, part, off, ts, key, value)
        except Exception:
            evs = []
        if not evs:
            # Unparseable or not about a group: keep it in place (it may be a dead letter).
            items.append(((last_ts, 9, 0), fi, lineno, row, None))
            continue
        ev = evs[0][3]
        last_ts = max(last_ts, ev.ts)
        items.append((sort_key(ev), fi, lineno, (*row[:3], ev.ts, *row[4:]), ev))
        if isinstance(ev, EndOffset):
            continue
        for g, _, _, e in evs:
            groups.add(g)
            for t in topics_of(e):
                topic_groups.setdefault(t, set()).add(g)
    items.sort(key=lambda x: (x[0], x[1], x[2]))
    out: list[tuple[int, Row]] = []
    for sk, _, _, row, ev in items:
        if isinstance(ev, EndOffset):
            # Log-end offsets go to every group that commits to or is assigned the topic.
            for g in sorted(topic_groups.get(ev.topic, ())):
                out.append((sk[0], (row[0], row[1], row[2], row[3], g.encode(), row[5])))
        else:
            out.append((sk[0], row))
    # The clock ends where the evidence ends, for every group, as `groupscope model` runs it.
    end = max((ts for ts, _ in out), default=0)
    for i, g in enumerate(sorted(groups)):
        out.append((end, (TICK_TOPIC, 0, i, end, g.encode(), str(end).encode())))
    _CACHE.clear()
    _CACHE[ck] = out
    return out


@dataclass(frozen=True)
class CaptureInputPartition(InputPartition):
    path: str
    start: int
    end: int


class CaptureStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Any) -> None:
        path = options.get("path")
        if not path or not Path(str(path)).is_dir():
            raise ValueError(f"groupscope_capture: 'path' must be a capture folder, got {path!r}")
        self.path = str(path)
        sp = options.get("speed")
        self.speed = float(sp) if sp else None
        mr = options.get("maxRecordsPerBatch")
        self.max_rows = int(mr) if mr else None
        self.split_rows = int(options.get("maxRecordsPerPartition") or 50_000)
        self._t0: tuple[float, int] | None = None  # (wall clock, evidence time) when replay began

    def _rows(self) -> list[tuple[int, Row]]:
        return load_capture(self.path)

    def initialOffset(self) -> dict:
        return {KEY: {"0": 0}}

    def getDefaultReadLimit(self) -> Any:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        pass  # a capture folder does not grow: its end is the target

    def _available(self, start: int) -> int:
        rows = self._rows()
        if self.speed is None or not rows:
            return len(rows)
        # Release evidence up to the capture time that `speed` x the elapsed wall time reaches.
        if self._t0 is None:
            self._t0 = (time.monotonic(), rows[min(start, len(rows) - 1)][0])
        wall0, ev0 = self._t0
        horizon = ev0 + (time.monotonic() - wall0) * 1000 * self.speed
        lo, hi = start, len(rows)
        while lo < hi:  # first row beyond the horizon
            mid = (lo + hi) // 2
            if rows[mid][0] <= horizon:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def latestOffset(self, start: dict, limit: Any) -> dict:
        s = int(start[KEY]["0"])
        end = self._available(s)
        if isinstance(limit, ReadMaxRows):
            end = min(end, s + max(1, limit.max_rows))
        return {KEY: {"0": max(s, end)}}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        s, e = int(start[KEY]["0"]), int(end[KEY]["0"])
        return [
            CaptureInputPartition(self.path, a, min(e, a + self.split_rows))
            for a in range(s, e, self.split_rows)
        ]

    def commit(self, end: dict) -> None:
        pass

    def read(self, partition: CaptureInputPartition) -> Iterator[Row]:  # type: ignore[override]
        rows = load_capture(partition.path)
        for _, row in rows[partition.start : partition.end]:
            yield row


class CaptureDataSource(DataSource):
    """`spark.readStream.format("groupscope_capture").option("path", DIR)`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RAW_SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return CaptureStreamReader(self.options)


def capture_size(path: str) -> int:
    return len(load_capture(path))
