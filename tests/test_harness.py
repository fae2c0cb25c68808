"""The harness talks to each real server: Redis, the Kafka-protocol broker and Spark."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

pytestmark = pytest.mark.servers


def test_redis_round_trip(redis_client) -> None:
    redis_client.set("groupscope:test", "ok")
    assert redis_client.get("groupscope:test") == b"ok"
    assert redis_client.config_get("save")["save"] == ""  # no persistence in tests


def test_broker_produce_consume(kafka_broker) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"harness-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for i in range(10):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(10))


def test_spark_runs_a_job(spark) -> None:
    df = spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count()
    assert sum(r["count"] for r in df.collect()) == 1000
    provider = spark.conf.get("spark.sql.streaming.stateStore.providerClass")
    assert provider.endswith("RocksDBStateStoreProvider")


def test_cli_lists_every_subcommand() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "collectors.cli.main", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for name in (
        "decode",
        "model",
        "assign",
        "whatif",
        "collect",
        "replay",
        "groups",
        "group",
        "alerts",
        "worker",
        "dashboard",
        "demo",
    ):
        assert name in out


def test_python_workers_allocate_arrow_buffers_from_the_system_and_give_freed_heap_back(spark) -> None:
    """build_spark gives the workers Arrow's system allocator, so what a worker frees is glibc's to
    hand back (heap_trim), not kept by a jemalloc pool of its own."""

    def probe(batches):
        import os

        import pyarrow as pa

        from collectors.pipeline import heap_trim

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict(
            {
                "env": [os.environ.get("ARROW_DEFAULT_MEMORY_POOL")],
                "pool": [pa.default_memory_pool().backend_name],
                "trimmed": [heap_trim.release(force=True)],
            }
        )

    rows = spark.range(1).mapInArrow(probe, "env string, pool string, trimmed boolean").collect()
    assert rows and {(r.env, r.pool, r.trimmed) for r in rows} == {("system", "system", True)}


def test_heap_trim_runs_at_most_every_interval() -> None:
    from collectors.pipeline import heap_trim

    assert heap_trim.release(force=True) is True
    assert heap_trim.release() is False  # within MIN_INTERVAL_S of the last
    assert heap_trim.release(force=True) is True
