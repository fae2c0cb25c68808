"""A Kafka source for Structured Streaming, written as a Python streaming data source over
confluent-kafka (the JVM `spark-sql-kafka` connector cannot be installed everywhere).

    spark.dataSource.register(KafkaDataSource)
    df = (spark.readStream.format("groupscope_kafka")
          .option("subscribe", "__consumer_offsets,groupscope.heartbeats")
          .option("kafka.bootstrap.servers", "host:9092")
          .option("kafka.security.protocol", "SASL_SSL")      # any librdkafka setting, prefixed kafka.
          .option("startingOffsets", "earliest")              # or latest, or {"topic": {"0": 42}}
          .option("maxRecordsPerBatch", 200000)               # read limit (ReadMaxRows)
          .option("firstTopics", "__consumer_offsets")        # read under the limit before the rest
          .load())

Offsets have the connector's shape, `{"topic": {"partition": next offset}}`. Columns: topic, partition,
offset, timestamp (ms), key (binary), value (binary, null for a tombstone).

Where things run: offsets are planned in the driver's data-source process (one AdminClient, created
lazily), records are read in executor tasks (one Consumer per task, created in the task, never
pickled). A topic that does not exist yet (or cannot be described) is read as having no partitions
until it appears, so a missing heartbeat topic does not stop the query.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from collectors.pipeline.rows import CLOCK_TOPIC, RAW_SCHEMA

log = logging.getLogger("groupscope.kafka_source")

FORMAT = "groupscope_kafka"

Offsets = dict[str, dict[str, int]]


def kafka_conf_from_options(options: Any) -> dict[str, str]:
    """librdkafka settings from `kafka.<name>` options, passed through untouched (SASL, SSL, ...)."""
    conf: dict[str, str] = {}
    for k in options:
        if str(k).lower().startswith("kafka."):
            conf[str(k)[6:]] = str(options.get(k))
    return conf


@dataclass(frozen=True)
class KafkaInputPartition(InputPartition):
    """One read task: records [start, end) of one or more topic partitions, read by one Consumer.
    (Every task costs a Python worker and a broker connection, so small ranges are packed together.)"""

    ranges: tuple[tuple[str, int, int, int], ...]  # (topic, partition, start, end)
    # When the batch reads every partition up to the log end found at this time (ms), the task
    # that carries it adds a clock row of that time after its records (see read_partition).
    clock_ms: int | None = None

    @property
    def records(self) -> int:
        return sum(e - s for _, _, s, e in self.ranges)


def pack_ranges(
    ranges: list[tuple[str, int, int, int]], tasks: int, split_rows: int
) -> list[KafkaInputPartition]:
    """Split ranges longer than `split_rows`, then pack them into read tasks of about equal size
    (largest first into the lightest task): `tasks` of them, or a multiple of `tasks` when that many
    would each hold more than `split_rows`."""
    pieces: list[tuple[str, int, int, int]] = []
    for t, p, lo, hi in ranges:
        while hi > lo:
            step = min(hi, lo + split_rows)
            pieces.append((t, p, lo, step))
            lo = step
    if not pieces:
        return []
    n = max(1, min(tasks, len(pieces)))
    need = -(-sum(e - s for _, _, s, e in pieces) // split_rows)  # no task above split_rows
    if need > n:
        # whole waves of `tasks`: 5 tasks on 2 cores would leave one core idle for the last one
        n = min(len(pieces), -(-need // tasks) * tasks)
    bins: list[list[tuple[str, int, int, int]]] = [[] for _ in range(n)]
    loads = [0] * n
    for piece in sorted(pieces, key=lambda x: x[3] - x[2], reverse=True):
        i = loads.index(min(loads))
        bins[i].append(piece)
        loads[i] += piece[3] - piece[2]
    return [KafkaInputPartition(tuple(sorted(b))) for b in bins if b]


class Watermarks:
    """Low and high watermarks of the subscribed topics through one AdminClient (driver side)."""

    def __init__(self, conf: dict[str, str], timeout_s: float = 10.0, retries: int = 3) -> None:
        self.conf = conf
        self.timeout_s = timeout_s
        self.retries = retries
        self._admin: Any = None

    def admin(self) -> Any:
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            from collectors.kafka_clients import client_config

            self._admin = AdminClient(client_config(self.conf))
        self._admin.poll(0)  # serve its log lines and error callbacks (they queue until polled)
        return self._admin

    def isolation(self) -> Any:
        """The isolation level the read tasks' consumers read at (librdkafka's default:
        read_committed), which the planned ends must follow: planned at the high watermark, a batch
        went past the records of a transaction still open (offsets committed in a transaction, say
        by Kafka Streams with exactly-once), which its consumers stop short of at the last stable
        offset, and the checkpoint moved on without them for good."""
        from confluent_kafka import IsolationLevel

        uncommitted = str(self.conf.get("isolation.level", "")).lower() == "read_uncommitted"
        return IsolationLevel.READ_UNCOMMITTED if uncommitted else IsolationLevel.READ_COMMITTED

    def partitions(self, topics: list[str]) -> dict[str, list[int]]:
        md = self.admin().list_topics(timeout=self.timeout_s)
        out: dict[str, list[int]] = {}
        for t in topics:
            tm = md.topics.get(t)
            if tm is None or tm.error is not None:
                continue  # missing or not authorized: read as empty until it appears
            out[t] = sorted(tm.partitions)
        return out

    def offsets(self, topics: list[str], which: str) -> Offsets:
        """`which` is "earliest" or "latest". Retries with backoff; raises after the last try."""
        from confluent_kafka import KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        delay = 0.5
        for attempt in range(self.retries):
            try:
                parts = self.partitions(topics)
                spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()
                req = {TopicPartition(t, p): spec for t, ps in parts.items() for p in ps}
                out: Offsets = {t: {} for t in parts}
                if req:
                    futs = self.admin().list_offsets(
                        req, isolation_level=self.isolation(), request_timeout=self.timeout_s
                    )
                    for tp, fut in futs.items():
                        out[tp.topic][str(tp.partition)] = int(fut.result().offset)
                return out
            except KafkaException as e:
                if attempt == self.retries - 1:
                    raise
                log.warning("kafka offsets (%s) failed, retrying in %.1fs: %s", which, delay, e)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        """Each topic's id (TopicDescription.topic_id, as text) in one DescribeTopics request. A topic
        that cannot be described (missing, not authorized) is left out, and so is one whose id the
        broker does not know (all zeros: brokers before topic ids). Raises when the request fails."""
        from confluent_kafka import TopicCollection

        futs = self.admin().describe_topics(TopicCollection(list(topics)), request_timeout=self.timeout_s)
        out: dict[str, str] = {}
        for t, fut in futs.items():
            try:
                tid = str(fut.result().topic_id or "")
            except Exception:  # this topic only: missing or not authorized
                continue
            if tid.strip("A=") and tid != "None":  # "AAAAAAAAAAAAAAAAAAAAAA" is the zero (unknown) id
                out[t] = tid
        return out

    def close(self) -> None:
        self._admin = None


def plan_end(
    start: Offsets,
    latest: Offsets,
    max_rows: int | None,
    first_topics: tuple[str, ...] = (),
    recreated: frozenset[str] | set[str] = frozenset(),
    warned: set[tuple[str, str, int, int]] | None = None,
) -> Offsets:
    """The end offsets of the next batch: everything up to `latest`, or at most `max_rows` records
    spread over the partitions that have new data (fairly: each gets an equal share, unused shares
    go to the others), so one busy partition cannot starve the rest. `first_topics` are given the
    budget before the other topics: a catch-up reads the backlog of `__consumer_offsets` before the
    Admin poller's first answers about every group (in the same batch, they cut the tail of the
    commits off into the next one, and the whole fleet was modelled twice before it was complete).
    The other topics then get what is left, and at least a tenth of `max_rows` more.

    A partition whose log end is below its start offset was recreated (its topic deleted and created
    again) or truncated (unclean leader election): it is read again from its log start, and so is
    every partition of a topic in `recreated` (its topic id changed since the last planning; see
    KafkaStreamReader._recreated_topics). Such a partition's end is planned below its start: that is how
    `partitions` and `count_between` know the batch reads it from 0 (see `range_start`), also when the
    batch is run again from Spark's offset log after a restart. So a recreated topic whose log end
    is at or past the old start is read up to one below that start in this batch, and on from there
    in the next. Each reset is logged once as a WARNING (`warned` remembers them across calls)."""
    end: Offsets = {t: dict(ps) for t, ps in start.items()}
    pending: list[tuple[str, str, int, int]] = []  # topic, partition, from, available
    for t, ps in latest.items():
        for p, hi in ps.items():
            lo = start.get(t, {}).get(p)
            if lo is None:
                # A partition first seen now (new topic or partition): its records start at 0 or at
                # the log start; reading from 0 is clamped by the consumer to the earliest offset.
                lo = 0
                end.setdefault(t, {})[p] = 0
            elif lo > 0 and hi >= 0 and (hi < lo or t in recreated):  # (a negative end is unknown)
                upto = hi if hi < lo else lo - 1  # the end stays below the start (see above)
                _warn_reset(t, p, lo, hi, t in recreated, warned)
                end[t][p] = 0
                if upto > 0:
                    pending.append((t, p, 0, upto))
                continue
            if hi > lo:
                pending.append((t, p, lo, hi - lo))
            else:
                end.setdefault(t, {})[p] = max(lo, end.get(t, {}).get(p, lo))
    if max_rows is None:
        for t, p, lo, n in pending:
            end[t][p] = lo + n
        return end
    first = [x for x in pending if x[0] in first_topics]
    rest = [x for x in pending if x[0] not in first_topics]
    budget = max(1, int(max_rows))
    left = budget - _take(first, budget, end)
    if first:
        # The other topics always get a tenth of the budget on top, so a catch-up of a backlog as big
        # as the budget reads the Admin poller's first answers with it, and models every group once,
        # not twice (the second pass of 10,000 groups of 100 partitions took a minute); and a long
        # catch-up never holds them back.
        left = max(left, int(max_rows) // 10)
    _take(rest, left, end)
    return end


def _warn_reset(
    t: str, p: str, lo: int, hi: int, recreated: bool, warned: set[tuple[str, str, int, int]] | None
) -> None:
    if warned is not None:
        if (t, p, lo, hi) in warned:
            return
        warned.add((t, p, lo, hi))
    why = "its topic id changed" if recreated else "recreated or truncated"
    msg = "kafka %s [%s]: log end %d, batch start offset %d (%s): read again from its log start"
    log.warning(msg, t, p, hi, lo, why)


def _take(tier: list[tuple[str, str, int, int]], budget: int, end: Offsets) -> int:
    """Fair shares of `budget` for the (topic, partition, from, available) of `tier`, set in `end`;
    how many records they took."""
    take = _fair_shares([(t, p, n) for t, p, _, n in tier], budget)
    for t, p, lo, _ in tier:
        end[t][p] = lo + take[(t, p)]
    return sum(take.values())


def _fair_shares(available: list[tuple[str, str, int]], budget: int) -> dict[tuple[str, str], int]:
    """How many records each (topic, partition) gets of `budget`: equal shares, what one cannot use
    going to the others."""
    take = {(t, p): 0 for t, p, _ in available}
    left = list(available)
    while budget > 0 and left:
        share = max(1, budget // len(left))
        nxt = []
        for t, p, n in left:
            if budget <= 0:
                break
            got = min(share, n - take[(t, p)], budget)
            take[(t, p)] += got
            budget -= got
            if take[(t, p)] < n:
                nxt.append((t, p, n))
        left = nxt
    return take


def reaches(end: Offsets, latest: Offsets) -> bool:
    """Whether `end` reads every partition of `latest` to its end."""
    return all(end.get(t, {}).get(p, -1) >= hi for t, ps in latest.items() for p, hi in ps.items())


def range_start(start: Offsets, t: str, p: str, hi: int) -> int:
    """Where a batch from `start` to the end offset `hi` reads partition (t, p) from: its start offset,
    or 0 (clamped to the log start by the consumer) when the end is below the start: plan_end reset
    the partition (recreated or truncated), and the offsets alone say so."""
    lo = int(start.get(t, {}).get(p, 0))
    return 0 if hi < lo else lo


def count_between(start: Offsets, end: Offsets) -> int:
    """How many records a batch from `start` to `end` reads (at most: compaction leaves gaps); never
    negative. A partition whose end is below its start is read from 0 (see range_start)."""
    return sum(max(0, hi - range_start(start, t, p, hi)) for t, ps in end.items() for p, hi in ps.items())


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, schema: Any, options: Any) -> None:
        topics = options.get("subscribe") or ""
        self.topics = [t.strip() for t in str(topics).split(",") if t.strip()]
        if not self.topics:
            raise ValueError("groupscope_kafka: option 'subscribe' (comma-separated topics) is required")
        self.conf = kafka_conf_from_options(options)
        if "bootstrap.servers" not in self.conf:
            raise ValueError("groupscope_kafka: option 'kafka.bootstrap.servers' is required")
        self.starting = str(options.get("startingOffsets") or "earliest")
        mr = options.get("maxRecordsPerBatch") or options.get("maxOffsetsPerTrigger")
        self.max_rows = int(mr) if mr else None
        self.first_topics = tuple(t for t in str(options.get("firstTopics") or "").split(",") if t)
        self.split_rows = int(options.get("maxRecordsPerPartition") or 250_000)
        self.reader_tasks = int(options.get("readerTasks") or 4)
        self.poll_timeout_s = float(options.get("pollTimeoutMs") or 1000) / 1000
        self.stall_timeout_s = float(options.get("readStallTimeoutMs") or 120_000) / 1000
        self.gone_after_s = float(options.get("clusterGoneAfterMs") or 10_000) / 1000
        self.metadata_timeout_s = float(options.get("metadataTimeoutMs") or 10_000) / 1000
        self.clock_rows = str(options.get("clockRows") or "false").lower() == "true"
        self._planned: tuple[Offsets, int] | None = None  # (end, when its latest offsets were asked)
        self._target: Offsets | None = None
        self._latest: Offsets | None = None
        self._wm: Watermarks | None = None
        # The topic ids seen at the plannings of this process: a topic whose id changes was recreated
        # (see _recreated_topics). Across a restart they are not known (Spark's checkpoint holds the
        # offsets only, in the connector's shape): a topic recreated while the query was down is
        # found only when its log end is below the checkpoint's offset (plan_end).
        self._topic_ids: dict[str, str] = {}
        self._warned: set[tuple[str, str, int, int]] = set()  # the resets logged (plan_end)

    # Never send the driver's AdminClient to executors.
    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["_wm"] = None
        return d

    @property
    def wm(self) -> Watermarks:
        if self._wm is None:
            self._wm = Watermarks(self.conf, timeout_s=self.metadata_timeout_s)
        return self._wm

    # ---- driver side -------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        if self.starting in ("earliest", "latest"):
            try:
                return self.wm.offsets(self.topics, self.starting)
            except Exception as e:  # broker unreachable at start: begin empty, pick partitions up later
                log.warning("cannot read initial offsets (%s); starting from the beginning when reachable", e)
                return {t: {} for t in self.topics}
        given = json.loads(self.starting)
        return {t: {str(p): int(o) for p, o in given.get(t, {}).items()} for t in self.topics}

    def getDefaultReadLimit(self) -> Any:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.wm.offsets(self.topics, "latest")

    def latestOffset(self, start: dict, limit: Any) -> dict:
        asked_ms = int(time.time() * 1000)  # before the request: what it finds was written by then
        if self._target is not None:
            latest = self._target
        else:
            try:
                latest = self.wm.offsets(self.topics, "latest")
            except Exception as e:  # broker unreachable: no new data this time; the next trigger retries
                log.warning("kafka unreachable, no new offsets this trigger: %s", e)
                self._wm = None
                return start
        self._latest = latest
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        recreated = self._recreated_topics()
        end = plan_end(start, latest, max_rows, self.first_topics, recreated, self._warned)
        complete = self._target is None and reaches(end, latest)
        self._planned = (end, asked_ms) if complete else None
        return end

    def _recreated_topics(self) -> frozenset[str]:
        """The subscribed topics whose topic id changed since an earlier planning of this reader: they
        were deleted and created again, and are read from 0 (plan_end), even when the new topic is
        already past the old offsets. One DescribeTopics request per planning; when it fails, no
        topic is taken as recreated and plan_end finds what it can from the offsets alone."""
        try:
            ids = self.wm.topic_ids(self.topics)
        except Exception as e:  # an old broker, no Describe permission, a timeout: offsets alone
            log.debug("cannot describe topic ids (%s); recreated topics found by their offsets only", e)
            return frozenset()
        changed = frozenset(t for t, i in ids.items() if self._topic_ids.get(t, i) != i)
        for t in sorted(changed):
            log.warning("kafka topic %s was recreated (topic id %s, now %s)", t, self._topic_ids[t], ids[t])
        # A topic not described this time (deleted, not yet created again) keeps the id last seen,
        # so that its recreation is found when it is back.
        self._topic_ids.update(ids)
        return changed

    def reportLatestOffset(self) -> dict | None:
        # What the broker had at the last planning: the progress bar's "available".
        return self._latest

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        # Only partitions with new data; packed into about `readerTasks` tasks, large ranges split.
        # A partition whose end is below its start was reset by plan_end (recreated or truncated):
        # it is read from 0 (range_start), which the consumer clamps to the log start.
        ranges = [
            (t, int(p), lo, int(hi))
            for t, ps in end.items()
            for p, hi in ps.items()
            if int(hi) > (lo := range_start(start, t, p, int(hi)))
        ]
        parts = list(pack_ranges(ranges, self.reader_tasks, self.split_rows))
        if self.clock_rows and parts and self._planned is not None and self._planned[0] == end:
            # The batch reads everything the topics held when their log ends were asked: that time
            # is a clock for the model stage's event-time watermark, as the Admin poller's clock
            # records are. Without it a catch-up's last seconds of commits waited behind the
            # watermark for the poller's next clock, and half a fleet was modelled twice.
            parts[0] = dataclasses.replace(parts[0], clock_ms=self._planned[1])
        return parts

    def commit(self, end: dict) -> None:
        pass  # offsets live in Spark's checkpoint; nothing is committed to Kafka

    def stop(self) -> None:
        if self._wm is not None:
            self._wm.close()

    # ---- executor side -----------------------------------------------------------------------------
    def read(self, partition: KafkaInputPartition) -> Iterator[Any]:  # type: ignore[override]
        yield from read_partition(
            self.conf,
            partition,
            self.poll_timeout_s,
            self.stall_timeout_s,
            batch_rows=10_000,
            gone_after_s=self.gone_after_s,
        )


# In the message of a read task that gave up on a cluster that answers nothing: the driver
# (job.run_pipeline) waits for the cluster and starts the query again from its checkpoint.
CLUSTER_GONE = "groupscope: the cluster answers nothing"


class ClusterGone(RuntimeError):
    """The cluster stopped answering under a planned batch."""


def cluster_answers(client: Any, topic: str, timeout_s: float = 5.0) -> bool:
    """Whether the cluster answers a metadata request for `topic` (any librdkafka client)."""
    from confluent_kafka import KafkaException

    try:
        client.list_topics(topic, timeout=timeout_s)
    except KafkaException:
        return False
    return True


def read_partition(
    conf: dict[str, str],
    part: KafkaInputPartition,
    poll_timeout_s: float = 1.0,
    stall_timeout_s: float = 120.0,
    batch_rows: int = 10_000,
    gone_after_s: float = 10.0,
) -> Iterator[Any]:
    """The records of a task's ranges as Arrow record batches, through one Consumer. Each range was
    planned from its partition's watermarks, so it ends at `end`, at partition EOF (compaction and
    transaction markers leave gaps), or with an error when nothing arrives for `stall_timeout_s` from
    a cluster that still answers. When nothing arrives for `gone_after_s` and the cluster answers
    nothing, the task fails with ClusterGone (CLUSTER_GONE): a task waiting for its cluster would hold
    an executor slot, and on a small machine the slots of every other cluster's query with it (a
    local master has as many slots as cores). The driver waits for the cluster instead and starts
    the query again; the batch's records are read then."""
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    from collectors.kafka_clients import client_config
    from collectors.pipeline.rows import arrow_schema

    c = Consumer(
        {
            **client_config(conf),
            "group.id": f"groupscope-reader-{uuid.uuid4()}",  # never used for commits
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 50,
        }
    )
    cols: dict[str, list[Any]] = {
        k: [] for k in ("topic", "partition", "offset", "timestamp", "key", "value")
    }
    schema = arrow_schema(RAW_SCHEMA)

    def flush() -> Any:
        batch = pa.RecordBatch.from_pydict(cols, schema=schema)
        for v in cols.values():
            v.clear()
        return batch

    # Two ranges of one partition (a split) are read one after the other: the first is assigned now.
    todo: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for t, p, lo, hi in part.ranges:
        todo.setdefault((t, p), []).append((lo, hi))
    for v in todo.values():
        v.sort()
    current: dict[tuple[str, int], tuple[int, int]] = {}

    # A range may start before its partition's log start (0 for a partition first seen, or one that
    # plan_end reset after its topic was recreated or its log truncated): the fetch answers
    # OFFSET_OUT_OF_RANGE and auto.offset.reset=earliest moves the consumer to the log start without
    # an error (librdkafka surfaces one only with auto.offset.reset=error); the records then start
    # at or above `lo`, and a range whose records are all gone ends at partition EOF or at its first
    # offset >= `hi`.
    def assign_next(tp: tuple[str, int]) -> None:
        lo, hi = todo[tp].pop(0)
        current[tp] = (lo, hi)
        c.incremental_assign([TopicPartition(tp[0], tp[1], lo)])

    def finish(tp: tuple[str, int]) -> None:
        del current[tp]
        c.incremental_unassign([TopicPartition(tp[0], tp[1])])
        if todo[tp]:
            assign_next(tp)

    try:
        for tp in todo:
            assign_next(tp)
        last_progress = time.monotonic()
        checked = 0.0  # how long the task had been idle when it last asked whether the cluster answers
        while current:
            want = sum(hi - lo for lo, hi in current.values())
            msgs = c.consume(max(1, min(10_000, want)), timeout=poll_timeout_s)
            if not msgs:
                idle = time.monotonic() - last_progress
                if idle > min(gone_after_s, stall_timeout_s) and idle - checked > gone_after_s / 2:
                    checked = idle
                    if not cluster_answers(c, next(iter(current))[0]):
                        raise ClusterGone(f"{CLUSTER_GONE} (nothing for {idle:.0f} s from {sorted(current)})")
                if idle > stall_timeout_s:
                    raise TimeoutError(f"no records from {sorted(current)} for {stall_timeout_s:.0f} s")
                continue
            checked = 0.0
            last_progress = time.monotonic()
            for m in msgs:
                tp = (m.topic(), m.partition())
                if tp not in current:
                    continue  # a late message of a range already finished
                lo, hi = current[tp]
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        finish(tp)
                        continue
                    if err.retriable():
                        continue
                    raise KafkaException(err)
                off = m.offset()
                if off < lo:
                    continue  # fetched again after a re-assignment of the same partition
                if off >= hi:
                    finish(tp)
                    continue
                cols["topic"].append(tp[0])
                cols["partition"].append(tp[1])
                cols["offset"].append(off)
                cols["timestamp"].append(m.timestamp()[1])
                cols["key"].append(m.key())
                cols["value"].append(m.value())
                if off + 1 >= hi:
                    finish(tp)
                else:
                    current[tp] = (off + 1, hi)
            if len(cols["offset"]) >= batch_rows:
                yield flush()
        if cols["offset"]:
            yield flush()
        if part.clock_ms is not None:
            yield pa.RecordBatch.from_pydict(clock_row(part.clock_ms), schema=schema)
    finally:
        c.close()


def clock_row(ts: int) -> dict[str, list[Any]]:
    """The raw columns of one clock row (routed to the state buckets as an Admin clock record is)."""
    value = json.dumps({"ts": int(ts), "clock": True}).encode()
    row = {"topic": CLOCK_TOPIC, "partition": 0, "offset": -1, "timestamp": ts, "key": None, "value": value}
    return {k: [v] for k, v in row.items()}


class KafkaDataSource(DataSource):
    """`spark.readStream.format("groupscope_kafka")`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RAW_SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return KafkaStreamReader(schema, self.options)
