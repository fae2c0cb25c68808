"""Test harness: real servers, started once per pytest run on free loopback ports, stopped at the end.

- `redis_server`: a redis-server with no persistence (tests get a clean DB through `redis_client`).
- `kafka_broker`: Tansu, a Kafka-protocol broker with in-memory storage.
- `spark`: a SparkSession in local[2] with the RocksDB state store.
None of them is mocked. Fixture data (real Kafka 4.0 captures) lives in tests/fixtures/.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors.local_servers import RedisServer, TansuBroker

FIXTURES = Path(__file__).parent / "fixtures"
CAPTURES = FIXTURES / "real-kafka-4.0"
ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"


def capture_dirs() -> list[Path]:
    return sorted(p for p in CAPTURES.iterdir() if p.is_dir() and (p / "offsets.jsonl").exists())


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture()
def redis_client(redis_server: RedisServer):
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[TansuBroker]:
    broker = TansuBroker().start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    from collectors.spark_session import build_spark

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = build_spark(
        "local[2]",
        "groupscope-tests",
        **{"spark.sql.warehouse.dir": str(warehouse), "spark.sql.shuffle.partitions": "2"},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
