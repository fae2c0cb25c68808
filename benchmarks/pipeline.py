"""Pipeline benchmark: catch-up of a `__consumer_offsets` backlog from a broker to Redis, next to a
plain single-process confluent-kafka read of the same backlog; and, live, the time from a commit to
its lag in Redis.

    .venv/bin/python benchmarks/pipeline.py                      # 1,000,000 records, 10,000 groups
    .venv/bin/python benchmarks/pipeline.py --records 200000 --groups 2000
    .venv/bin/python benchmarks/pipeline.py --bootstrap-servers host:9092 --redis redis://...

Without --bootstrap-servers / --redis it starts its own Apache Kafka broker (collectors/embedded_kafka)
and redis-server. Kafka refuses a produce to `__consumer_offsets`, so the backlog is made of real
commits: AlterConsumerGroupOffsets requests, one group and up to 100 partitions each, many in flight,
written by the broker's own group coordinator (the groups have no members, as Burrow's benchmarks'
do not need any). Figures go to stdout; the run takes a few minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.config import Settings
from collectors.embedded_kafka import KafkaBroker
from collectors.local_servers import RedisServer

TOPIC = "__consumer_offsets"
STATE_STORES = {
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
}


# ---- memory -----------------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(p.name))
    return out


def tree_rss_mb(root: int) -> float:
    """RSS of a process and all its descendants (driver, JVM, Python workers), in MB."""
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        todo.extend(_children(pid))
    return total / 1024


class PeakMemory(threading.Thread):
    def __init__(self, root: int, every_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.root, self.every_s, self.peak = root, every_s, 0.0
        self._stop_evt = threading.Event()

    def run(self) -> None:
        while not self._stop_evt.is_set():
            self.peak = max(self.peak, tree_rss_mb(self.root))
            self._stop_evt.wait(self.every_s)

    def stop(self) -> float:
        self._stop_evt.set()
        self.join(5)
        return self.peak


# ---- backlog -----------------------------------------------------------------------------------------
def produce_backlog(bootstrap: str, records: int, groups: int, in_flight: int = 200) -> float:
    """`records` OffsetCommit records in all, `groups` groups: each AlterConsumerGroupOffsets request
    commits one group's offsets on up to 100 partitions of its topic (ten 100-partition topics)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"bench-topic-{i}" for i in range(10)]
    missing = [t for t in topics if t not in admin.list_topics(timeout=10).topics]
    for f in admin.create_topics([NewTopic(t, 100, 1) for t in missing]).values() if missing else []:
        f.result(60)
    per_group = max(1, -(-records // groups))
    t0 = time.monotonic()
    pending: list = []
    n = 0
    for round_ in range(-(-per_group // 100)):
        for i in range(groups):
            width = min(100, per_group - round_ * 100, records - n)
            if width <= 0:
                break
            g = f"bench-group-{i:05d}"
            tps = [TopicPartition(topics[i % 10], p, 10 * (round_ + 1) + p) for p in range(width)]
            req = ConsumerGroupTopicPartitions(g, tps)
            pending.append(admin.alter_consumer_group_offsets([req], request_timeout=60)[g])
            n += width
            if len(pending) >= in_flight:
                pending.pop(0).result(120)
    for f in pending:
        f.result(120)
    return time.monotonic() - t0


def plain_read(bootstrap: str) -> tuple[int, float]:
    """The baseline: one process, one confluent-kafka Consumer, every partition from the start."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-plain",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    parts = sorted(c.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions)
    highs = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in parts}
    todo = {p for p, h in highs.items() if h > 0}
    c.assign([TopicPartition(TOPIC, p, 0) for p in todo])
    n = 0
    t0 = time.monotonic()
    while todo:
        for m in c.consume(10000, timeout=1.0):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    todo.discard(m.partition())
                continue
            n += 1
            if m.offset() >= highs[m.partition()] - 1:
                todo.discard(m.partition())
    dt = time.monotonic() - t0
    c.close()
    return n, dt


def pipeline_catch_up(
    bootstrap: str,
    redis_url: str,
    master: str,
    shuffle_partitions: int,
    state_store: str,
    spark: Any = None,
    max_batch: int | None = None,
) -> dict:
    from collectors.pipeline.job import PipelineConfig, build_query
    from collectors.redis_store import RedisStore
    from collectors.spark_session import build_spark

    store = RedisStore.from_url(redis_url)
    store.r.flushdb()
    mem = PeakMemory(os.getpid())
    mem.start()
    t_start = time.monotonic()
    if spark is None:
        spark = build_spark(
            master,
            "groupscope-bench",
            **{
                "spark.ui.showConsoleProgress": "false",
                "spark.sql.shuffle.partitions": str(shuffle_partitions),
                "spark.sql.streaming.stateStore.providerClass": STATE_STORES[state_store],
            },
        )
    t_spark = time.monotonic()
    cfg = PipelineConfig(
        redis_url=redis_url,
        checkpoint_dir=tempfile.mkdtemp(prefix="gs-bench-"),
        kafka={"bootstrap.servers": bootstrap},
        admin_enabled=False,
        max_records_per_batch=max_batch,
        available_now=True,  # read the backlog as it is now, then stop
    )
    q = build_query(spark, cfg, [TOPIC], store)
    q.awaitTermination()
    t_end = time.monotonic()
    peak = mem.stop()
    total_rows = sum(int(p.get("numInputRows", 0)) for p in q.recentProgress)
    in_redis = store.list_groups(limit=0)[0]
    first_batch = min(
        (p for p in q.recentProgress if p.get("numInputRows")), key=lambda p: p["batchId"], default={}
    )
    return {
        "spark": spark,
        "rows": total_rows,
        "groups_in_redis": in_redis,
        "spark_start_s": t_spark - t_start,
        "query_s": t_end - t_spark,
        "end_to_end_s": t_end - t_start,
        "peak_mb": peak,
        "batches": len(q.recentProgress),
        "first_batch_ms": (first_batch.get("durationMs") or {}).get("triggerExecution"),
    }


def live_latency(spark, bootstrap: str, redis_url: str, samples: int) -> list[float]:
    """Commit (AlterConsumerGroupOffsets) -> the group's document in Redis shows the committed offset."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    from collectors.pipeline.job import PipelineConfig, build_query
    from collectors.redis_store import RedisStore

    store = RedisStore.from_url(redis_url)
    cfg = PipelineConfig(
        redis_url=redis_url,
        checkpoint_dir=tempfile.mkdtemp(prefix="gs-bench-live-"),
        kafka={"bootstrap.servers": bootstrap},
        admin_enabled=False,
        trigger_interval_s=0.2,
        tick_ms=60_000,
        max_records_per_batch=None,
        starting_offsets="latest",  # live from the end of the backlog: only new commits matter here
    )
    q = build_query(spark, cfg, [TOPIC], store)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    group = "bench-live-group"
    lat: list[float] = []
    try:
        # warm-up: the first batches after start (backlog, JVM) are not what live latency is about
        deadline = time.monotonic() + 900
        while q.isActive and time.monotonic() < deadline:
            prog = q.lastProgress
            if prog and prog.get("numInputRows", 1) == 0:
                break
            time.sleep(1)
        for i in range(samples):
            offset = 1000 + i
            t0 = time.monotonic()
            req = ConsumerGroupTopicPartitions(group, [TopicPartition("bench-topic-0", 0, offset)])
            admin.alter_consumer_group_offsets([req])[group].result(10)
            while time.monotonic() - t0 < 30:
                doc = store.get_group(group)
                if doc and any(o["offset"] == offset for o in doc["offsets"]):
                    lat.append(time.monotonic() - t0)
                    break
                time.sleep(0.01)
            time.sleep(0.3)
    finally:
        q.stop()
    return lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--bootstrap-servers", default=None)
    ap.add_argument("--redis", default=None)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--latency-samples", type=int, default=30)
    ap.add_argument("--state-store", choices=sorted(STATE_STORES), default="rocksdb")
    ap.add_argument(
        "--max-records-per-batch",
        type=int,
        default=Settings().max_records_per_batch,
        help="micro-batch size of the catch-up (default: groupscope's own default); 0: the whole backlog",
    )
    ap.add_argument("--shuffle-partitions", type=int, default=8, help="state partitions (as groupscope)")
    args = ap.parse_args()

    broker = redis = None
    try:
        bootstrap = args.bootstrap_servers
        if not bootstrap:
            broker = KafkaBroker().start()
            bootstrap = broker.bootstrap_servers
        redis_url = args.redis
        if not redis_url:
            redis = RedisServer().start()
            redis_url = redis.url
        print(f"backlog: {args.records:,} OffsetCommit records, {args.groups:,} groups, 50 partitions")
        dt = produce_backlog(bootstrap, args.records, args.groups)
        print(f"  committed in {dt:.1f} s ({args.records / dt:,.0f} records/s, AlterConsumerGroupOffsets)")

        n, dt_plain = plain_read(bootstrap)
        plain_rate = n / dt_plain
        print(
            f"plain confluent-kafka read (1 process): {n:,} records in {dt_plain:.1f} s "
            f"= {plain_rate:,.0f} records/s"
        )

        catch_up = functools.partial(
            pipeline_catch_up,
            bootstrap,
            redis_url,
            args.master,
            args.shuffle_partitions,
            args.state_store,
            max_batch=args.max_records_per_batch or None,
        )
        res = catch_up()
        rate_q = res["rows"] / res["query_s"]
        rate_e2e = res["rows"] / res["end_to_end_s"]
        print(
            f"pipeline catch-up, broker -> Redis ({args.master}, "
            f"{args.shuffle_partitions} state partitions, {args.state_store} state store, "
            f"batches of {args.max_records_per_batch or 'all'} records): "
            f"{res['rows']:,} records, "
            f"{res['groups_in_redis']:,} groups in Redis, {res['batches']} batches"
        )
        print(f"  query (Kafka read, decode, model, Redis): {res['query_s']:.1f} s = {rate_q:,.0f} records/s")
        print(
            f"  end to end incl. Spark start ({res['spark_start_s']:.1f} s): {res['end_to_end_s']:.1f} s "
            f"= {rate_e2e:,.0f} records/s"
        )
        print(f"  peak memory (driver + JVM + Python workers): {res['peak_mb']:,.0f} MB")
        print(
            f"  ratio pipeline / plain read: {rate_q / plain_rate:.2f} (query), "
            f"{rate_e2e / plain_rate:.2f} (end to end)"
        )

        # The same catch-up again in the same Spark session (fresh checkpoint, Redis emptied): the
        # first query also pays for the JVM's warm-up and the first Python workers; a long catch-up
        # (tens of millions of records, many micro-batches) runs at about this rate.
        warm = catch_up(spark=res["spark"])
        rate_w = warm["rows"] / warm["query_s"]
        print(
            f"  again in the warm session: {warm['rows']:,} records in {warm['query_s']:.1f} s "
            f"= {rate_w:,.0f} records/s, ratio {rate_w / plain_rate:.2f}"
        )

        lat = live_latency(res["spark"], bootstrap, redis_url, args.latency_samples)
        if lat:
            lat.sort()
            p95 = lat[min(len(lat) - 1, round(0.95 * len(lat)) - 1)]
            print(
                f"live: commit -> lag in Redis over {len(lat)} commits: "
                f"median {statistics.median(lat):.2f} s, p95 {p95:.2f} s, max {lat[-1]:.2f} s"
            )
        else:
            print("live: no commit reached Redis within 30 s")
        res["spark"].stop()
    finally:
        if broker:
            broker.stop()
        if redis:
            redis.stop()


if __name__ == "__main__":
    main()
