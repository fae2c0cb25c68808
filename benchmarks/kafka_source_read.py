"""Spark's own Kafka connector (spark-sql-kafka-0-10) against groupscope's Kafka source
(collectors/pipeline/kafka_source.py) reading the same backlog of `__consumer_offsets`.

    .venv/bin/python benchmarks/kafka_source_read.py --connector-python /tmp/spark42/bin/python

Each run is a fresh process with `local[2]`: a streaming read with trigger(availableNow) from the
earliest offsets, a mapInArrow stage that counts the rows and the key and value bytes (so every
record reaches Python, as the pipeline's first stage needs it), into a memory sink. The figures:
SparkSession start, query start to finish, the process tree's CPU during the query and its peak RSS,
rows read against the sum of log-end minus log-start offsets.

The connector's version must equal PySpark's, and Maven Central serves 4.2.0 (not 4.3.0, this
project's PySpark): `--connector-python` is the interpreter of a virtualenv with pyspark==4.2.0
(make one with `python3.11 -m venv /tmp/spark42 && /tmp/spark42/bin/python -m pip install
pyspark==4.2.0 confluent-kafka pyarrow pandas -e .`), and `--connector-jars` a folder with
spark-sql-kafka-0-10_2.13-4.2.0.jar, spark-token-provider-kafka-0-10_2.13-4.2.0.jar,
kafka-clients-3.9.2.jar and commons-pool2-2.13.1.jar (`mvn dependency:copy` of each).

Two facts this needs. The connector reads nothing of an internal topic through its default offset
reader (ConsumerStrategy.retrieveAllPartitions drops `isInternal` topics, silently: 0 rows, no
error); `spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true` (the consumer-based reader) reads
it. And `assign`, not `subscribe`: with the consumer-based reader `subscribe` joins a consumer group,
which writes records to `__consumer_offsets` itself.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TOPIC = "__consumer_offsets"
JARS = Path.home() / ".cache" / "groupscope" / "spark-kafka-4.2.0"


class Meter(threading.Thread):
    """This process's tree (driver, JVM, Python workers): peak RSS, and CPU counting the processes
    that exited since (their last sample), with benchmarks/pipeline*.py's own readers of /proc."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0.0
        self.ticks: dict[tuple[int, int], int] = {}
        self._done = threading.Event()

    def sample(self) -> None:
        from benchmarks.pipeline import tree_rss_mb
        from benchmarks.pipeline_live import tree_ticks

        self.ticks.update(tree_ticks(os.getpid()))
        self.peak = max(self.peak, tree_rss_mb(os.getpid()))

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(0.25)

    def cpu(self) -> float:
        from benchmarks.pipeline_live import CLK_TCK

        self.sample()
        return sum(self.ticks.values()) / CLK_TCK

    def stop(self) -> None:
        self._done.set()
        self.join(5)


def count_rows(batches: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    n = size = 0
    for rb in batches:
        n += rb.num_rows
        for col in ("key", "value"):
            size += pc.sum(pc.binary_length(rb.column(col))).as_py() or 0
    yield pa.RecordBatch.from_pydict({"n": [n], "bytes": [size]})


def child(mode: str, bootstrap: str, jars: str) -> None:
    """One measured run, printed as a JSON line."""
    from confluent_kafka import Consumer, TopicPartition

    meter = Meter()
    meter.start()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "isolation.level": "read_committed"})
    parts = sorted(c.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions)
    marks = [c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10) for p in parts]
    c.close()
    from collectors.spark_session import build_spark

    conf = {"spark.sql.shuffle.partitions": "2"}
    if mode == "connector":
        conf["spark.jars"] = jars
        conf["spark.sql.streaming.kafka.useDeprecatedOffsetFetching"] = "true"
    t0 = time.monotonic()
    spark = build_spark("local[2]", f"read-{mode}", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    session_s = time.monotonic() - t0
    if mode == "connector":
        r = spark.readStream.format("kafka").option("assign", json.dumps({TOPIC: parts}))
        # librdkafka's reader waits 50 ms for a fetch (kafka_source.read_partition); the Java
        # consumer's default 500 ms, once a partition's task, doubled the connector's time here
        r = r.option("kafka.fetch.max.wait.ms", "50").option("kafka.isolation.level", "read_committed")
    else:
        from collectors.pipeline.job import register_sources

        register_sources(spark)
        r = spark.readStream.format("groupscope_kafka").option("subscribe", TOPIC)
        r = r.option("readerTasks", str(spark.sparkContext.defaultParallelism))
    r = r.option("kafka.bootstrap.servers", bootstrap).option("startingOffsets", "earliest")
    df = r.load().select("topic", "partition", "offset", "key", "value")
    cpu0, t1 = meter.cpu(), time.monotonic()
    q = (
        df.mapInArrow(count_rows, "n long, bytes long")
        .writeStream.format("memory")
        .queryName("counted")
        .option("checkpointLocation", tempfile.mkdtemp(prefix=f"read-{mode}-"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    query_s, cpu = time.monotonic() - t1, meter.cpu() - cpu0
    rows, size = spark.sql("select coalesce(sum(n), 0), coalesce(sum(bytes), 0) from counted").collect()[0]
    meter.stop()
    print(
        json.dumps(
            {
                "mode": mode,
                "rows": rows,
                "bytes": size,
                "span": sum(hi - lo for lo, hi in marks),
                "session_s": session_s,
                "query_s": query_s,
                "query_cpu_s": cpu,
                "peak_mb": meter.peak,
            }
        ),
        flush=True,
    )
    spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connector-python", required=False, help="a pyspark==4.2.0 virtualenv's python")
    ap.add_argument("--connector-jars", default=str(JARS))
    ap.add_argument("--groups", type=int, default=3000, help="x 100 partitions: the backlog's commits")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", choices=["connector", "python"])
    ap.add_argument("--bootstrap-servers")
    args = ap.parse_args()
    jars = ",".join(str(p) for p in sorted(Path(args.connector_jars).glob("*.jar")))
    if args.child:
        child(args.child, args.bootstrap_servers, jars)
        return
    if not args.connector_python or not jars:
        ap.error("--connector-python (pyspark 4.2.0) and the connector's jars are needed: see the docstring")
    from benchmarks.pipeline import produce_backlog
    from collectors.demo.servers.kafka import KafkaBroker

    broker = KafkaBroker().start()
    try:
        produce_backlog(broker.bootstrap_servers, args.groups * 100, args.groups)
        results: dict[str, list[dict]] = {"connector": [], "python": []}
        for _ in range(args.runs):  # interleaved: the machine's noise falls on both
            for mode, python in (("connector", args.connector_python), ("python", sys.executable)):
                out = subprocess.run(
                    [python, __file__, "--child", mode, "--bootstrap-servers", broker.bootstrap_servers],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=Path(__file__).resolve().parent.parent,
                )
                results[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"\n{args.groups * 100:,} commits in {TOPIC}; median (min-max) of {args.runs} runs, local[2]\n")
        print("| source | session (s) | query (s) | query CPU (s) | peak RSS (MB) | rows / span |")
        print("|---|---:|---:|---:|---:|---:|")
        for mode, name in (("connector", "spark-sql-kafka 4.2.0"), ("python", "groupscope_kafka")):
            rs = results[mode]

            def cell(k: str, rs: list[dict] = rs) -> str:
                v = [r[k] for r in rs]
                return f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})"

            rows = f"{rs[0]['rows']:,} / {rs[0]['span']:,}"
            print(
                f"| {name} | {cell('session_s')} | {cell('query_s')} | {cell('query_cpu_s')} | "
                f"{statistics.median(r['peak_mb'] for r in rs):,.0f} | {rows} |"
            )
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
