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
