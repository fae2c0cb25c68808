"""The commit lane: offset commits to partitions a group already holds, applied in Redis as they
arrive, beside the micro-batches.

Why: a commit read by Spark waits for its micro-batch to be planned, read, routed and finished. On a
busy 2-core machine a batch takes 1.5-2.5 s at the median and now and then 5-7 s, so a commit showed
after 3 s at the median and 6-8 s at the 95th percentile, however cheap the commit itself was. Almost
every record of `__consumer_offsets` on a real cluster is such a commit (a consumer commits the
partitions it owns every few seconds), and what it changes is one partition's field
(known_commits.py): that needs no model, no shuffle and no state store.

The lane is one confluent-kafka consumer in the collector's driver that follows the offsets topic
from the end of the first batch that read it to its log end (no part in a catch-up), and passes what
it reads through the first stage's own code (route.route_arrow with known_commits.KnownCommits): the
same decoding, the same runs, the same rule. What it does not take (a partition not held yet, a
group with membership records or a tombstone among the records read together) it drops: Spark reads
every record anyway, and the model stage handles those as before. The lane and the first stage write
the same fields; each write is a compare-and-set (group_offsets.queue_swaps), and a run already
applied is skipped by its log offset, so a commit is applied once whichever reads it first. The lane
keeps no state: when it fails it starts again from where it stood, and a collector that starts again
starts it again from the query's position.

It is off by default (setting `commit_lane`): it reads every commit a second time beside Spark.
Idle or quiet, a commit shows 3-4 times sooner at the same CPU; on a machine short of CPU with a
fleet committing thousands of times a second, the micro-batches lost the CPU it took and commits
showed later (benchmarks/RESULTS.md). Hence also its step aside above MAX_RATE and its jump past a
backlog of MAX_BEHIND.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

from collectors.pipeline.loop import Loop

log = logging.getLogger("groupscope.commit_lane")

READ_ROWS = 10_000  # records handed to the first stage's code at once
POLL_S = 0.2
FETCH_WAIT_MS = 100  # an idle fetch waits this long in the broker: a quiet cluster costs 10 requests a second
# a lane further behind than this many records (seconds of a busy cluster's commits) skips to the log
# ends; it looks every LOOK_EVERY_S
MAX_BEHIND = 50_000
LOOK_EVERY_S = 5.0
# above this many records a second on the offsets topic the lane steps aside (_step_aside_if_busy)
MAX_RATE = 2_000
SAY_EVERY_S = 30.0  # how often the lane logs what it read and how far behind it is
RETRY_S = (1.0, 30.0)  # a failed lane starts again after this long, doubling up to the second


class CommitLane(Loop):
    """Follows the offsets topic once `start_at` gives it the query's position."""

    def __init__(self, kafka: dict[str, str], offsets_topic: str, sink: Any, buckets: int) -> None:
        super().__init__(name="commit-lane")
        self.kafka = dict(kafka)
        self.topic = offsets_topic
        self.sink = sink  # sink.SinkConfig
        self.buckets = buckets
        self._start = threading.Event()
        self._positions: dict[int, int] = {}  # partition -> next offset to read
        self.records = 0  # read since the start (read by tests)
        self.behind = 0  # records between its positions and the log ends, at the last look
        self.skipped = 0  # records it left to the micro-batches, being too far behind
        self.aside = False  # the offsets topic is too busy for the lane to be worth its CPU

    def start_at(self, end_offset: Any) -> None:
        """The query's end offsets after a finished batch (its progress's `endOffset`, this source's
        shape: {topic: {partition: offset}}); the first call starts the lane there, later ones are
        ignored (the lane runs ahead of the query from then on)."""
        if self._start.is_set() or not isinstance(end_offset, dict):
            return
        ends = end_offset.get(self.topic)
        if not isinstance(ends, dict) or not ends:
            return
        self._positions = {int(p): int(o) for p, o in ends.items()}
        self._start.set()

    def stop(self) -> None:
        super().stop()
        self._start.set()

    def run(self) -> None:
        self._start.wait()
        delay = RETRY_S[0]
        while not self._stop_evt.is_set():
            try:
                self._follow()
            except Exception as e:  # the micro-batches cover every record: only latency is lost
                log.warning("commit lane: %s; starting again in %.0f s from where it stood", e, delay)
                if self._stop_evt.wait(delay):
                    return
                delay = min(delay * 2, RETRY_S[1])

    def _follow(self) -> None:
        import pyarrow as pa
        from confluent_kafka import Consumer, TopicPartition

        from collectors.kafka_clients import client_config
        from collectors.pipeline.known_commits import KnownCommits
        from collectors.pipeline.route import route_arrow
        from collectors.pipeline.rows import RAW_SCHEMA, arrow_schema

        c = Consumer(
            {
                **client_config(self.kafka),
                "group.id": f"groupscope-lane-{uuid.uuid4()}",  # never used for commits
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": FETCH_WAIT_MS,
            }
        )
        schema = arrow_schema(RAW_SCHEMA)
        kinds = {self.topic: "offsets"}
        known = KnownCommits(self.sink)
        said, said_records = time.monotonic(), self.records
        looked, looked_records = time.monotonic(), self.records
        try:
            c.assign([TopicPartition(self.topic, p, o) for p, o in sorted(self._positions.items())])
            log.info("commit lane: following %s from the query's position", self.topic)
            while not self._stop_evt.is_set():
                if time.monotonic() - said >= SAY_EVERY_S:
                    self.behind = self._behind(c)
                    log.info(
                        "commit lane: %d records in %.0f s, %d behind the log ends",
                        self.records - said_records,
                        time.monotonic() - said,
                        self.behind,
                    )
                    said, said_records = time.monotonic(), self.records
                if time.monotonic() - looked >= LOOK_EVERY_S:
                    self._step_aside_if_busy((self.records - looked_records) / (time.monotonic() - looked))
                    looked, looked_records = time.monotonic(), self.records
                    self._jump_if_far_behind(c)
                msgs = c.consume(READ_ROWS, timeout=POLL_S)
                if self.aside:  # only where it stands: the micro-batches carry these
                    read = [m for m in msgs if m.error() is None]
                    self._advance([m.partition() for m in read], [m.offset() for m in read])
                    continue
                cols: dict[str, list[Any]] = {
                    k: [] for k in ("topic", "partition", "offset", "timestamp", "key", "value")
                }
                for m in msgs:
                    if m.error() is not None:
                        continue  # retriable fetch errors; librdkafka goes on by itself
                    cols["topic"].append(self.topic)
                    cols["partition"].append(m.partition())
                    cols["offset"].append(m.offset())
                    cols["timestamp"].append(m.timestamp()[1])
                    cols["key"].append(m.key())
                    cols["value"].append(m.value())
                if not cols["offset"]:
                    continue
                batch = pa.RecordBatch.from_pydict(cols, schema=schema)
                # what the first stage's code leaves is the model stage's: Spark reads it too
                for _ in route_arrow(iter([batch]), kinds, self.buckets, known=known, trim=False):
                    pass
                self._advance(cols["partition"], cols["offset"])
        finally:
            c.close()

    def _step_aside_if_busy(self, rate: float) -> None:
        """Above MAX_RATE records a second the lane reads on but applies nothing: the micro-batches
        carry the commits. A cluster that busy keeps them coming in full batches, and the lane's
        second reading of every commit then took from Spark the CPU it needed for the same records
        (on 2 cores, 13,000 commits a second showed 2-3 times later with the lane than without)."""
        aside = rate > MAX_RATE
        if aside != self.aside:
            log.info(
                "commit lane: %.0f records a second; %s",
                rate,
                "stepping aside, the micro-batches carry the commits" if aside else "applying commits again",
            )
        self.aside = aside

    def _highs(self, c: Any) -> dict[int, int]:
        """Each partition's log end as the lane's fetches last saw it (those it knows)."""
        from confluent_kafka import TopicPartition

        out: dict[int, int] = {}
        for p in self._positions:
            try:
                _, high = c.get_watermark_offsets(TopicPartition(self.topic, p), cached=True)
            except Exception:
                continue
            if high >= 0:
                out[p] = high
        return out

    def _advance(self, partitions: list[int], offsets: list[int]) -> None:
        """The records read (each partition's position past its last one), counted."""
        for p, o in zip(partitions, offsets, strict=True):
            if o >= self._positions.get(p, -1):
                self._positions[p] = o + 1
        self.records += len(offsets)

    def _behind(self, c: Any, highs: dict[int, int] | None = None) -> int:
        """Records between the lane's positions and the log ends its fetches last saw."""
        highs = self._highs(c) if highs is None else highs
        return sum(max(0, h - self._positions[p]) for p, h in highs.items())

    def _jump_if_far_behind(self, c: Any) -> None:
        """A lane more than MAX_BEHIND records behind (a machine short of CPU, a long Redis outage)
        goes on from the log ends: what it skips the micro-batches apply anyway, and catching up on
        it would only spend, beside Spark, the CPU Spark needs for the same records."""
        from confluent_kafka import TopicPartition

        highs = self._highs(c)
        behind = self._behind(c, highs)
        if behind <= MAX_BEHIND:
            return
        for p, h in highs.items():
            if h > self._positions[p]:
                c.seek(TopicPartition(self.topic, p, h))
                self._positions[p] = h
        self.skipped += behind
        log.info(
            "commit lane: %d records behind the log ends; goes on from there (Spark applies them)", behind
        )


def offsets_json(value: Any) -> dict | None:
    """A query progress's source offsets (its `endOffset` or `latestOffset`, a dict or its JSON text)
    in this source's shape, {topic: {partition: offset}}; None when it is neither."""
    import json

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None
