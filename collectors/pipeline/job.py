"""The collector job: sources -> decode (executors) -> coordinator model per group (stateful
operator, checkpointed) -> Redis (foreachBatch). `groupscope collect` runs it live against a cluster,
`groupscope replay` over a capture folder; both build the same query with `build_query`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from collectors.pipeline.broker_log_shipper import BROKER_LOG_TOPIC
from collectors.pipeline.change_hints import ChangeHints
from collectors.pipeline.known_commits import KnownCommits
from collectors.pipeline.model_state import OUTPUT_SCHEMA, STATE_SCHEMA, make_update
from collectors.pipeline.route import KINDS_OF_CAPTURE_FILES, route_arrow
from collectors.pipeline.rows import ROUTED_SCHEMA
from collectors.pipeline.sink import SinkConfig, with_retry, write_partition_fn
from collectors.pipeline.wake_hints import WakeHints
from collectors.storage.clusters import ClusterRegistry, cluster_prefix
from collectors.storage.redis_store import RedisStore

if TYPE_CHECKING:
    from collectors.config import Settings

log = logging.getLogger("groupscope.pipeline")

ADMIN_TOPIC = "groupscope.admin"


@dataclass
class PipelineConfig:
    redis_url: str
    checkpoint_dir: str
    mode: str = "live"  # "live" | "replay"
    # The Kafka cluster this pipeline watches; its data goes under its own Redis prefix
    # (collectors/storage/clusters.py). One pipeline, one Spark query and one checkpoint per cluster.
    cluster: str = "default"
    base_prefix: str = "gs"
    # live
    kafka: dict[str, str] = field(default_factory=dict)  # librdkafka settings incl. bootstrap.servers
    offsets_topic: str = "__consumer_offsets"
    heartbeat_topic: str = "groupscope.heartbeats"
    broker_log_topic: str | None = None
    broker_log_files: list[str] = field(default_factory=list)
    admin_topic: str = ADMIN_TOPIC
    admin_poll_interval_s: float = 5.0
    admin_hot_interval_s: float = 0.1  # groups in motion are described this often (admin_hot.py)
    admin_resend_s: float = 60.0  # an unchanged Admin answer is sent on again after this long
    admin_enabled: bool = True
    provisional_documents: bool = True  # the poller's first answers shown while Spark starts
    # At start, a cluster that does not answer: raise topic_check.ClusterUnreachable (a supervisor
    # tries again later) rather than run without its offsets topic until the next restart.
    wait_for_cluster: bool = False
    trigger_interval_s: float = 1.0
    available_now: bool = False  # read what is there now, then stop (a one-off catch-up)
    starting_offsets: str = "earliest"  # first start only; a checkpoint resumes where it stopped
    metadata_timeout_s: float = 10.0
    tick_ms: int = 5000  # how often an idle bucket is woken (see model_state: event-time watermark)
    # Timers run on event time: the latest clock/evidence time delivered minus this lateness, which
    # covers evidence producers still hold back (batching) when the clock record is processed.
    allowed_lateness_ms: int = 5000
    idle_batches: bool = False  # run empty micro-batches for timers at every trigger (higher latency)
    state_buckets: int = 256  # groups are kept in this many state keys; fixed per checkpoint
    reader_tasks: int | None = None  # Kafka read tasks per batch (default: Spark's parallelism)
    # replay
    capture_dir: str | None = None
    speed: float | None = None
    # both
    max_records_per_batch: int | None = 1_000_000
    retention_ms: int = 7 * 24 * 3600 * 1000
    trim_interval_s: float = 60.0
    redis_retry_s: float = 600.0
    # live: the share of one core the lag refresher may spend (lag_refresh.py); past it, a round of the
    # fleet's lagging groups takes longer than a minute rather than slowing the commits
    lag_refresh_cpu_share: float = 0.2
    commit_lane: bool = False  # live: commits to held partitions applied as they arrive (commit_lane.py)

    @property
    def live(self) -> bool:
        return self.mode == "live"

    @property
    def prefix(self) -> str:
        return cluster_prefix(self.cluster, self.base_prefix)

    @property
    def query_name(self) -> str:
        # unique among the queries of one Spark application, which may watch several clusters
        suffix = "" if self.cluster == "default" else f"-{self.cluster}"
        return f"groupscope-{self.mode}{suffix}"


def source_kinds(cfg: PipelineConfig, subscribed: list[str]) -> dict[str, str]:
    """Topic (or capture file) -> kind of evidence, for the routing stage (route.py)."""
    if not cfg.live:
        return dict(KINDS_OF_CAPTURE_FILES)
    kinds = {cfg.offsets_topic: "offsets", cfg.heartbeat_topic: "heartbeat", cfg.admin_topic: "admin"}
    kinds[cfg.broker_log_topic or BROKER_LOG_TOPIC] = "broker_log"
    return {t: k for t, k in kinds.items() if t in subscribed}


def register_sources(spark: Any) -> None:
    from collectors.pipeline.capture_source import CaptureDataSource
    from collectors.pipeline.kafka_source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(CaptureDataSource)


def raw_stream(spark: Any, cfg: PipelineConfig, topics: list[str]) -> Any:
    register_sources(spark)
    if cfg.live:
        r = spark.readStream.format("groupscope_kafka").option("subscribe", ",".join(topics))
        tasks = cfg.reader_tasks or spark.sparkContext.defaultParallelism
        r = r.option("readerTasks", str(max(1, int(tasks))))
        r = r.option("startingOffsets", cfg.starting_offsets)
        r = r.option("metadataTimeoutMs", str(int(cfg.metadata_timeout_s * 1000)))
        # a capped batch reads the offsets topic's backlog before anything else (kafka_source.plan_end)
        r = r.option("firstTopics", cfg.offsets_topic)
        # a batch that reads to the log ends carries a clock for the timers (kafka_source.clock_row)
        r = r.option("clockRows", "true" if not cfg.available_now else "false")
        for k, v in cfg.kafka.items():
            r = r.option(f"kafka.{k}", str(v))
    else:
        r = spark.readStream.format("groupscope_capture").option("path", cfg.capture_dir)
        if cfg.speed:
            r = r.option("speed", str(cfg.speed))
    if cfg.max_records_per_batch:
        r = r.option("maxRecordsPerBatch", str(cfg.max_records_per_batch))
    return r.load()


def sink_config(cfg: PipelineConfig) -> SinkConfig:
    return SinkConfig(cfg.redis_url, cfg.prefix, cfg.retention_ms, cfg.live, redis_retry_s=cfg.redis_retry_s)


class BatchSink:
    """foreachBatch: executors write their partitions, the driver then heartbeats and trims."""

    def __init__(self, cfg: PipelineConfig, store: RedisStore) -> None:
        self.cfg = cfg
        self.store = store
        self.sink_cfg = sink_config(cfg)
        self.batches = 0
        self.last_batch_id: int | None = None
        self._last_trim = 0.0

    def __call__(self, df: Any, batch_id: int) -> None:
        df.foreachPartition(write_partition_fn(self.sink_cfg))
        self.batches += 1
        self.last_batch_id = batch_id
        now = time.time()
        with contextlib.suppress(Exception):
            self.store.heartbeat_collector(int(now * 1000), batch_id=batch_id, mode=self.cfg.mode)
        if self.cfg.live and now - self._last_trim >= self.cfg.trim_interval_s:
            self._last_trim = now
            with_retry(lambda: self.store.trim(int(now * 1000)), "trim", 60)


def build_query(spark: Any, cfg: PipelineConfig, topics: list[str], store: RedisStore) -> Any:
    from pyspark.sql.streaming.state import GroupStateTimeout

    kinds = source_kinds(cfg, topics)
    buckets = cfg.state_buckets
    # With per-group timers Spark would run an empty micro-batch at every trigger, and a new commit
    # would wait for it: run batches only for data. The Admin poller's clock record (every
    # admin_poll_interval_s) brings the timers round when nothing else arrives.
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "true" if cfg.idle_batches else "false")
    raw = raw_stream(spark, cfg, topics)
    timers = cfg.live and not cfg.available_now
    wake = WakeHints(cfg.redis_url, cfg.prefix) if timers else None
    # live, the groups the offsets topic shows moving are left for the Admin poller (change_hints.py)
    changes = ChangeHints(cfg.redis_url, cfg.prefix) if timers and cfg.admin_enabled else None
    # live, log ends are the cluster's, one history per partition (storage/log_ends.py); a replay keeps
    # each group's own, as `groupscope model` does
    shared_ends = cfg.live
    # live, commits to partitions a group already holds are committed by the first stage itself
    known = KnownCommits(sink_config(cfg)) if shared_ends else None
    routed = raw.mapInArrow(
        lambda it: route_arrow(
            it, kinds, buckets, wake=wake, changes=changes, ends_apart=shared_ends, known=known
        ),
        ROUTED_SCHEMA,
    )
    timeout = GroupStateTimeout.ProcessingTimeTimeout if timers else GroupStateTimeout.NoTimeout
    modeled = routed.groupBy("bucket").applyInPandasWithState(
        make_update(
            timers,
            cfg.retention_ms,
            cfg.tick_ms,
            cfg.allowed_lateness_ms,
            wake=wake,
            sink=sink_config(cfg),
            shared_ends=shared_ends,
            # heartbeat events alone never make a group (docs/security.md): live, the offsets topic
            # and the Admin API are there to confirm every real one
            hide_unconfirmed=cfg.live,
        ),
        OUTPUT_SCHEMA,
        STATE_SCHEMA,
        "Update",
        timeout,
    )
    w = (
        modeled.writeStream.queryName(cfg.query_name)
        .outputMode("update")
        .option("checkpointLocation", cfg.checkpoint_dir)
        .foreachBatch(BatchSink(cfg, store))
    )
    if (cfg.live and not cfg.available_now) or cfg.speed:
        w = w.trigger(processingTime=f"{max(0.1, cfg.trigger_interval_s)} seconds")
    else:
        w = w.trigger(availableNow=True)
    return w.start()


def _lost_while_down(cfg: PipelineConfig, store: RedisStore) -> bool:
    """Whether this start resumes a checkpoint over a Redis that lost the collector's data (its data
    epoch is gone): the checkpoint's groups are then sent and written again (AdminPoller's refill,
    the model stage's epoch). A first start sets the epoch and refills nothing."""
    if store.data_epoch() is not None:
        return False
    store.new_data_epoch()
    commits = os.path.join(cfg.checkpoint_dir, "commits")
    return os.path.isdir(commits) and bool(os.listdir(commits))


# ---- progress ----------------------------------------------------------------------------------------
class Progress:
    """A progress bar on stderr while a backlog is caught up (records read / records available)."""

    def __init__(self, enabled: bool = True, stream: Any = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self._last_line = 0.0
        self.done_records = 0
        self._shown = False

    def update(self, done: int, total: int | None) -> None:
        self.done_records = done
        if not self.enabled:
            return
        now = time.monotonic()
        if not self.tty and now - self._last_line < 5:
            return
        self._last_line = now
        rate = done / max(1e-3, now - self.t0)
        if total:
            frac = min(1.0, done / total)
            bar = "#" * int(frac * 30)
            msg = f"catching up [{bar:<30}] {done:,}/{total:,} records {frac:4.0%} {rate:,.0f} rec/s"
        else:
            msg = f"{done:,} records {rate:,.0f} rec/s"
        self.stream.write(("\r" + msg) if self.tty else (msg + "\n"))
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self.enabled and self._shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _records_behind(progress: dict | None) -> tuple[int, int | None]:
    """(records processed so far in the last batch's end offset, records available) from a query's
    progress, for Kafka-shaped offsets {"topic": {"p": n}} (capture: {"capture": {"0": n}})."""
    import json

    if not progress:
        return 0, None
    done, total = 0, 0
    have_total = False
    for src in progress.get("sources", []):
        end = src.get("endOffset")
        latest = src.get("latestOffset")
        end = json.loads(end) if isinstance(end, str) else end
        latest = json.loads(latest) if isinstance(latest, str) else latest
        if isinstance(end, dict):
            done += sum(int(v) for ps in end.values() if isinstance(ps, dict) for v in ps.values())
        if isinstance(latest, dict):
            have_total = True
            total += sum(int(v) for ps in latest.values() if isinstance(ps, dict) for v in ps.values())
    return done, (total if have_total else None)


# ---- running -----------------------------------------------------------------------------------------
@dataclass
class RunResult:
    batches: int
    topics: list[str]
    seconds: float
    offsets_readable: bool | None = None


def failure_text(exc: BaseException | None, depth: int = 0) -> str:
    """Everything a query's failure says: its message and stack trace and those of its causes. (A
    StreamingQueryException's own text leaves out the Python error of a task or of foreachBatch,
    which only its causes carry.)"""
    if exc is None or depth > 8:
        return ""
    parts = [str(exc)]
    for name in ("_desc", "_stackTrace"):
        with contextlib.suppress(Exception):
            parts.append(str(getattr(exc, name, "") or ""))
    # and the JVM's own chain of the failure: a task's error raised under foreachBatch reaches the
    # driver as a ForeachBatchUserFuncException whose Python side may carry none of it
    java = getattr(exc, "_origin", None)
    for _ in range(10):
        if java is None:
            break
        try:
            parts.append(str(java.toString()))
            java = java.getCause()
        except Exception:
            break
    cause = getattr(exc, "_cause", None) or exc.__cause__
    return "\n".join([*parts, failure_text(cause, depth + 1)])


def _watch(
    query: Any,
    cfg: PipelineConfig,
    store: RedisStore,
    bar: Progress,
    stop: threading.Event,
    t0: float,
    duration_s: float | None,
    capture_total: int | None,
    progress_log: str | None,
    lane: Any = None,
) -> bool:
    """Follow a running query (progress, the collector's heartbeat) until it ends (False) or is to
    stop: `stop` set, `duration_s` passed, a paced replay finished (True). The commit lane starts at
    the end of the first batch that read the offsets topic to its log end."""
    logged = None
    while query.isActive:
        if stop.is_set():
            return True
        if duration_s is not None and time.monotonic() - t0 > duration_s:
            return True
        prog = query.lastProgress
        if lane is not None and prog:
            lane.start_at(caught_up_end(prog, cfg.offsets_topic))
        if progress_log and prog and prog.get("batchId") != logged:
            logged = prog.get("batchId")
            _log_progress(progress_log, prog)
        done, total = _records_behind(prog)
        if capture_total is not None:
            total = capture_total
            if cfg.speed and done >= capture_total and prog and prog.get("numInputRows", 1) == 0:
                return True  # paced replay finished
        if total:
            bar.update(done, total)
        with contextlib.suppress(Exception):
            store.heartbeat_collector(
                int(time.time() * 1000), batch_id=(prog or {}).get("batchId"), mode=cfg.mode
            )
        try:
            query.awaitTermination(1.0)
        except Exception:  # it died while waited on: the caller reads why from query.exception()
            return False
    return False


class QueryRestarts:
    """A live query that failed for any other reason than its cluster going away (a Python worker
    that did not connect back in time on a loaded machine, an executor lost, a bug met on one batch)
    is started again from its checkpoint after a back-off, doubling from 1 s to a minute and starting
    afresh once a query ran ten minutes, rather than ending the collector: the Admin poller, the lag
    refresher and the provisional documents go on meanwhile, and the sources' status says so
    (`gs:sources`, "pipeline"). A failure that comes back at every start keeps failing there, in
    plain sight, at most once a minute."""

    MIN_S = 1.0
    MAX_S = 60.0
    HEALTHY_S = 600.0

    def __init__(self) -> None:
        self.count = 0
        self.backoff_s = self.MIN_S
        self.why = ""

    def wait(self, exc: BaseException, ran_s: float, store: RedisStore, stop: threading.Event) -> bool:
        """Say the failure and wait the back-off; False when the collector is to stop meanwhile."""
        if ran_s > self.HEALTHY_S:
            self.backoff_s = self.MIN_S
        self.count += 1
        self.why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        log.error(
            "the query failed (%s); starting it again from its checkpoint in %.0f s", self.why, self.backoff_s
        )
        log.debug("the query's failure: %s", failure_text(exc))
        self._say(store, False, f"query failed: {self.why}; starting again in {self.backoff_s:.0f} s")
        if stop.wait(self.backoff_s):
            return False
        self.backoff_s = min(self.MAX_S, self.backoff_s * 2)
        return True

    def started(self, store: RedisStore) -> None:
        """The query started again."""
        if self.count:
            self._say(store, True, f"running; started again {self.count} times, last after: {self.why}")

    @staticmethod
    def _say(store: RedisStore, ok: bool, detail: str) -> None:
        with contextlib.suppress(Exception):
            store.set_source_status("pipeline", ok, detail[:600], int(time.time() * 1000))


def run_pipeline(
    cfg: PipelineConfig,
    spark: Any = None,
    *,
    master: str = "local[*]",
    duration_s: float | None = None,
    progress: bool = True,
    stop_event: threading.Event | None = None,
    on_started: Any = None,
) -> RunResult:
    """Run the pipeline until the replay is done, `duration_s` passes, or `stop_event` is set."""
    from collectors.pipeline.admin_process import AdminProcess
    from collectors.pipeline.broker_log_shipper import BrokerLogShipper
    from collectors.pipeline.commit_lane import CommitLane
    from collectors.pipeline.kafka_source import CLUSTER_GONE
    from collectors.pipeline.lag_refresh import LagRefresher
    from collectors.pipeline.topic_check import answers_now, check_topics, wait_until_answers

    t0 = time.monotonic()
    store = RedisStore.from_url(cfg.redis_url, prefix=cfg.prefix, retention_ms=cfg.retention_ms)
    ClusterRegistry(store.r, cfg.base_prefix).register(cfg.cluster, cfg.kafka.get("bootstrap.servers"))
    if n := store.backfill_topics():
        log.info("topic index: added %d groups written before it existed", n)
    topics: list[str] = []
    offsets_ok: bool | None = None
    threads: list[Any] = []
    lane = None
    if cfg.live:
        topics, offsets_ok = check_topics(cfg, store)
        if cfg.admin_enabled:
            refill = _lost_while_down(cfg, store)
            if cfg.provisional_documents:
                store.forget_pipeline_writes()
            # the poller (and the provisional documents it feeds) in a process of its own, started
            # again if librdkafka aborts it (admin_process.py)
            threads.append(
                AdminProcess(
                    cfg,
                    store,
                    offsets_readable=bool(offsets_ok),
                    refill=refill,
                    provisional=cfg.provisional_documents,
                )
            )
        if cfg.broker_log_files and not cfg.broker_log_topic:
            threads.append(BrokerLogShipper(cfg))
        if not cfg.available_now:
            # lagging groups' fleet rows, summaries and lag history follow the log ends (lag_refresh.py)
            threads.append(
                LagRefresher(
                    cfg.redis_url,
                    cfg.prefix,
                    cfg.retention_ms,
                    lateness_ms=cfg.allowed_lateness_ms,
                    cpu_share=cfg.lag_refresh_cpu_share,
                )
            )
            if offsets_ok and cfg.commit_lane:
                # commits to partitions groups hold, in Redis as they arrive (commit_lane.py)
                lane = CommitLane(cfg.kafka, cfg.offsets_topic, sink_config(cfg), cfg.state_buckets)
                threads.append(lane)
    own_spark = spark is None
    # The poller starts before Spark does (some 20 s on a small machine): its first answers about
    # every group are then in the topic when the first micro-batch is planned, and a catch-up models
    # each group once with its commits and its describe, not a second time a minute later.
    for t in threads:
        t.start()
    try:
        if own_spark:
            # Python workers must run the interpreter that has groupscope and its dependencies (a venv
            # is not on Spark's PATH); on a cluster, set PYSPARK_PYTHON to the workers' own interpreter.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            from collectors.spark_session import build_spark

            spark = build_spark(master, cfg.query_name, **{"spark.ui.showConsoleProgress": "false"})
        query = build_query(spark, cfg, topics, store)
    except BaseException:
        for t in threads:
            t.stop()
        for t in threads:
            t.join(15)
        raise
    if on_started:
        on_started(query)
    bar = Progress(progress)
    capture_total = None
    if not cfg.live:
        from collectors.pipeline.capture_source import capture_size

        capture_total = capture_size(str(cfg.capture_dir))
    progress_log = os.environ.get("GROUPSCOPE_PROGRESS_LOG")  # one JSON line per micro-batch
    stop = stop_event if stop_event is not None else threading.Event()
    restarts = QueryRestarts()
    try:
        while True:
            started = time.monotonic()
            stopped = _watch(query, cfg, store, bar, stop, t0, duration_s, capture_total, progress_log, lane)
            exc = None if stopped else query.exception()
            if exc is None:
                break
            if not cfg.live or cfg.available_now:
                raise RuntimeError(f"pipeline failed: {exc}")
            if CLUSTER_GONE in failure_text(exc) or not answers_now(cfg):
                # A read task gave up on a cluster that answers nothing (kafka_source.ClusterGone)
                # rather than hold an executor slot, or the query died some other way while the
                # cluster answers nothing: wait for the cluster here.
                log.warning("cluster %s answers nothing: its query waits for it", cfg.cluster)
                if not wait_until_answers(cfg, store, stop):
                    break
                log.info("cluster %s answers again: its query starts again from its checkpoint", cfg.cluster)
            elif not restarts.wait(exc, time.monotonic() - started, store, stop):
                break
            # from its checkpoint, which reads the unfinished batch again (Redis writes are idempotent)
            query = build_query(spark, cfg, topics, store)
            restarts.started(store)
            if on_started:
                on_started(query)
    finally:
        for t in threads:
            t.stop()
        with contextlib.suppress(Exception):
            query.stop()
        bar.close()
        if own_spark:
            spark.stop()
        deadline = time.monotonic() + 15  # the poller's last describe and flush may take that long
        for t in threads:
            t.join(max(0.1, deadline - time.monotonic()))
            if t.is_alive():
                log.warning("%s did not stop within 15 s; leaving it", t.name)
    return RunResult(
        batches=int((query.lastProgress or {}).get("batchId", -1)) + 1,
        topics=topics,
        seconds=time.monotonic() - t0,
        offsets_readable=offsets_ok,
    )


def caught_up_end(prog: dict, topic: str) -> dict | None:
    """A batch's end offsets when it read `topic` to the log end its planning saw (else None)."""
    from collectors.pipeline.commit_lane import offsets_json

    for s in prog.get("sources") or ():
        end, latest = offsets_json(s.get("endOffset")), offsets_json(s.get("latestOffset"))
        if end is None or not isinstance(end.get(topic), dict):
            continue
        ahead = (latest or {}).get(topic)
        if isinstance(ahead, dict) and any(int(o) > int(end[topic].get(p, -1)) for p, o in ahead.items()):
            return None  # a capped catch-up batch: the lane would read the rest beside Spark
        return end
    return None


def _log_progress(path: str, prog: dict) -> None:
    """A micro-batch's figures (where its time went, rows in, state size) as one line of `path`."""
    ops = prog.get("stateOperators") or [{}]
    line = {
        "query": prog.get("name"),  # one line per cluster's query in the same file (--all-clusters)
        "batch": prog.get("batchId"),
        "at": prog.get("timestamp"),
        "rows": prog.get("numInputRows"),
        "ms": prog.get("durationMs"),
        "state_rows": ops[0].get("numRowsTotal"),
        "state_updated": ops[0].get("numRowsUpdated"),
        "state_bytes": ops[0].get("memoryUsedBytes"),
        "state_metrics": ops[0].get("customMetrics"),
    }
    with contextlib.suppress(OSError), open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


def live_config(s: Settings, checkpoint_dir: str | None = None) -> PipelineConfig:
    """The live pipeline of the cluster `s` is set to (Settings.for_cluster)."""
    name = s.chosen_cluster()
    return PipelineConfig(
        redis_url=s.redis_url,
        checkpoint_dir=checkpoint_dir or default_checkpoint(s.checkpoint_dir, "collect", name),
        mode="live",
        cluster=name,
        kafka=s.kafka_config(),
        offsets_topic=s.offsets_topic,
        heartbeat_topic=s.heartbeat_topic,
        broker_log_topic=s.broker_log_topic,
        broker_log_files=list(s.broker_log_files),
        admin_poll_interval_s=s.admin_poll_interval_s,
        admin_hot_interval_s=s.admin_hot_interval_s,
        admin_resend_s=s.admin_resend_s,
        provisional_documents=s.provisional_documents,
        trigger_interval_s=s.trigger_interval_s,
        max_records_per_batch=s.max_records_per_batch,
        retention_ms=s.retention_s * 1000,
        allowed_lateness_ms=s.allowed_lateness_ms,
        lag_refresh_cpu_share=s.lag_refresh_cpu_share,
        commit_lane=s.commit_lane,
    )


def temp_checkpoint() -> str:
    return tempfile.mkdtemp(prefix="groupscope-checkpoint-")


def default_checkpoint(base: str, name: str, cluster: str = "default") -> str:
    """`base/name`, or `base/name@CLUSTER` for a cluster other than `default` (whose checkpoint kept
    its place when clusters came, so an existing collector resumes where it stopped)."""
    if cluster != "default":
        name = f"{name}@{cluster}"
    path = os.path.join(os.path.expanduser(base), name)
    os.makedirs(path, exist_ok=True)
    return path
