"""Test harness: real servers, started once per pytest run on free loopback ports, stopped at the end.

- `redis_server`: a redis-server with no persistence (tests get a clean DB through `redis_client`).
- `kafka_broker`: a real Apache Kafka broker (KRaft, jars from Maven Central) with a PLAINTEXT listener,
  a SASL_PLAINTEXT listener (SCRAM users, SASL_USERS) and an SSL listener (a CA made for the run); its
  group coordinator's log is in `kafka_broker.coordinator_log`. Kafka's StandardAuthorizer enforces
  ACLs: PLAINTEXT and SSL clients (the tests' own setup) and `admin` are super users; the SASL users
  `groupscope`, `gs-admin-only` and `gs-one-denied` hold exactly the ACLs ACL_GRANTS gives them.
- `spark`: a SparkSession in local[2] with the RocksDB state store.
- `prometheus_server`, `alertmanager_server`: Debian's prometheus and prometheus-alertmanager
  (collectors/demo/servers/prometheus.py), each with a temporary data directory; a test gives
  Prometheus its own scrape targets and rules with `prometheus_server.configure(text)`.
None of them is mocked. Fixture data (real Kafka 4.0 captures) lives in tests/fixtures/.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# the secret scan over every output of the run (tests/secret_scan.py): its hooks, found here by name
from secret_scan import pytest_runtest_logreport, pytest_sessionfinish  # noqa: F401

from collectors.demo.servers.kafka import KafkaBroker
from collectors.demo.servers.kafka.tls import make_test_tls
from collectors.demo.servers.processes import RedisServer
from collectors.demo.servers.prometheus import AlertmanagerServer, PrometheusServer
from collectors.kafka_acls import Acl, bindings, needed

FIXTURES = Path(__file__).parent / "fixtures"
CAPTURES = FIXTURES / "real-kafka-4.0"
ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"


def capture_dirs() -> list[Path]:
    return sorted(p for p in CAPTURES.iterdir() if p.is_dir() and (p / "offsets.jsonl").exists())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `at_end` run after all others (the golden test reads what every test wrote)."""
    items.sort(key=lambda item: item.get_closest_marker("at_end") is not None)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def prometheus_server() -> Iterator[PrometheusServer]:
    server = PrometheusServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def alertmanager_server() -> Iterator[AlertmanagerServer]:
    server = AlertmanagerServer().start()
    yield server
    server.stop()


@pytest.fixture()
def redis_client(redis_server: RedisServer):
    import redis

    from collectors.pipeline import model_state

    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    model_state._EPOCHS.clear()  # a worker's data epoch read a moment ago: from the Redis just emptied
    yield client
    client.close()


SASL_USERS = {
    "admin": "admin-secret",
    "groupscope": "groupscope-secret",
    "gs-admin-only": "admin-only-secret",
    "gs-one-denied": "one-denied-secret",
}
DENIED_GROUP = "sec-acl-denied-group"  # the one group gs-one-denied may not describe
HIDDEN_TOPIC = "sec-acl-hidden-topic"  # the one topic gs-one-denied may not describe


def acl_grants() -> dict[str, list[Acl]]:
    """Each SASL user's ACLs: `groupscope` what docs/security.md asks for; `gs-admin-only` all but Read
    on __consumer_offsets (a managed cluster's monitoring user); `gs-one-denied` all, and a DENY of
    Describe on DENIED_GROUP and on HIDDEN_TOPIC."""
    return {
        "groupscope": needed(),
        "gs-admin-only": needed(read_offsets=False),
        "gs-one-denied": [
            *needed(),
            Acl("test: one group hidden", "GROUP", DENIED_GROUP, "LITERAL", "DESCRIBE", "DENY"),
            Acl("test: one topic hidden", "TOPIC", HIDDEN_TOPIC, "LITERAL", "DESCRIBE", "DENY"),
        ],
    }


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    tls = make_test_tls(tmp_path_factory.mktemp("kafka-tls"))
    broker = KafkaBroker(sasl_users=dict(SASL_USERS), tls=tls, authorizer=True).start()
    try:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # a super user
        grants = [b for user, acls in acl_grants().items() for b in bindings(f"User:{user}", acls)]
        for f in admin.create_acls(grants, request_timeout=30).values():
            f.result(30)
    except BaseException:
        broker.stop()
        raise
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
