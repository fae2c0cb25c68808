"""Several Kafka clusters in one groupscope: the settings, the Redis prefixes and registry, the fleet
listed across clusters, and the CLI's --cluster (the live two-broker test is test_clusters_live.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.cli.main import cli
from collectors.config import ConfigError, load_settings
from collectors.storage.clusters import ClusterRegistry, cluster_prefix, list_groups_across
from collectors.storage.fleet_rows import SORT_KEYS
from collectors.storage.redis_store import RedisStore
from tests.test_redis_store import make_doc

NOW = 1_700_000_100_000


@pytest.fixture()
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("GROUPSCOPE_"):
            monkeypatch.delenv(k)


# ---- settings ----------------------------------------------------------------------------------------
@pytest.mark.usefixtures("_clean_env")
def test_single_cluster_settings_mean_the_cluster_default(monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_settings()
    assert s.cluster_names() == ["default"]
    monkeypatch.setenv("GROUPSCOPE_BOOTSTRAP_SERVERS", "k:9092")
    s = load_settings()
    assert s.cluster_names() == ["default"] and s.chosen_cluster() == "default"
    one = s.for_cluster()
    assert one.cluster == "default" and one.kafka_config() == {"bootstrap.servers": "k:9092"}


@pytest.mark.usefixtures("_clean_env")
def test_clusters_from_the_environment_and_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "gs.yaml"
    cfg.write_text(
        "heartbeat-topic: hb\n"
        "kafka:\n  security.protocol: SASL_SSL\n  sasl.password: top-secret\n"
        "clusters:\n"
        "  prod:\n    bootstrap-servers: p1:9092,p2:9092\n    kafka:\n      security.protocol: SSL\n"
        "  staging:\n    bootstrap_servers: s:9092\n    heartbeat-topic: hb.staging\n"
    )
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(cfg))
    monkeypatch.setenv("GROUPSCOPE_CLUSTERS__EU-1__BOOTSTRAP_SERVERS", "eu:9092")
    monkeypatch.setenv("GROUPSCOPE_CLUSTERS__EU-1__KAFKA__SASL.MECHANISM", "SCRAM-SHA-512")
    s = load_settings()
    assert sorted(s.cluster_names()) == ["eu-1", "prod", "staging"]
    prod = s.for_cluster("prod")
    # a cluster's client settings are its own: the top-level password never goes to prod's brokers
    assert prod.kafka_config() == {"security.protocol": "SSL", "bootstrap.servers": "p1:9092,p2:9092"}
    assert prod.heartbeat_topic == "hb"  # topics are inherited
    assert s.for_cluster("staging").heartbeat_topic == "hb.staging"
    assert s.for_cluster("eu-1").kafka_config() == {
        "sasl.mechanism": "SCRAM-SHA-512",
        "bootstrap.servers": "eu:9092",
    }
    # several clusters, none named: a single-cluster command must be told which
    with pytest.raises(ConfigError, match="not configured"):
        s.for_cluster()
    with pytest.raises(ConfigError, match="not configured"):
        s.for_cluster("nope")
    # the top-level bootstrap servers are the cluster `default`, beside the others
    monkeypatch.setenv("GROUPSCOPE_BOOTSTRAP_SERVERS", "d:9092")
    s = load_settings()
    assert s.cluster_names()[0] == "default" and len(s.cluster_names()) == 4
    assert s.for_cluster("default").kafka_config()["bootstrap.servers"] == "d:9092"


@pytest.mark.usefixtures("_clean_env")
def test_bad_cluster_settings_are_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "gs.yaml"
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(cfg))
    cfg.write_text("clusters:\n  Prod:Main:\n    bootstrap_servers: p:9092\n")
    with pytest.raises(ConfigError, match="cluster name"):
        load_settings()
    cfg.write_text("clusters:\n  prod:\n    kafka: {}\n")
    with pytest.raises(ConfigError, match="bootstrap_servers"):
        load_settings()
    cfg.write_text("clusters:\n  prod:\n    bootstrap_servers: p:9092\n    bootstrap: typo\n")
    with pytest.raises(ConfigError, match="bootstrap"):
        load_settings()


def test_prefixes_keep_the_default_layout_and_carry_the_cluster() -> None:
    assert cluster_prefix("default") == "gs"
    assert cluster_prefix("prod") == "gs@prod"
    with pytest.raises(ConfigError):
        cluster_prefix("a:b")
    import redis

    a = RedisStore(redis.Redis(), prefix=cluster_prefix("prod"))  # key names only: never connects
    assert a.group_key("g:1", "doc") == "gs@prod:group:{g:1}:doc"  # the group is still the hash tag


# ---- Redis --------------------------------------------------------------------------------------------
def _write(client, cluster: str, docs: list[dict]) -> RedisStore:
    store = RedisStore(client, prefix=cluster_prefix(cluster))
    store.write_groups(docs, NOW)
    return store


@pytest.mark.servers
def test_registry_lists_registered_configured_and_legacy_clusters(redis_client) -> None:
    reg = ClusterRegistry(redis_client)
    assert reg.clusters() == []
    _write(redis_client, "default", [make_doc("g")])  # data of the layout before clusters
    assert reg.names() == ["default"]
    reg.register("prod", "p:9092", now_ms=5)
    got = reg.clusters(["staging"])
    assert [c.name for c in got] == ["default", "prod", "staging"]
    assert got[1].bootstrap_servers == "p:9092" and got[1].registered_ms == 5 and got[1].prefix == "gs@prod"
    assert got[2].configured and not got[1].configured
    # a field that is no cluster name (written by hand) is left out, never hiding the others
    redis_client.hset("gs:clusters", "Bad:Name{x}", "not json")
    redis_client.hset("gs:clusters", "qa", "[1]")
    assert reg.names() == ["default", "prod", "qa"]


@pytest.mark.servers
def test_the_same_group_in_two_clusters_is_two_groups(redis_client) -> None:
    a = _write(redis_client, "default", [make_doc("orders", members=2)])
    b = _write(redis_client, "prod", [make_doc("orders", state="PreparingRebalance", members=5)])
    assert a.get_group("orders")["members"] != b.get_group("orders")["members"]
    assert a.fleet_counts()["by_state"] == {"Stable": 1}
    assert b.fleet_counts()["by_state"] == {"PreparingRebalance": 1}
    b.delete_group("orders")
    assert a.get_group("orders") is not None and b.get_group("orders") is None


_names = st.text(alphabet="ab:{}-é", min_size=1, max_size=4)
_group = st.builds(
    lambda n, s, m, lag: make_doc(n, state=s, members=m, lag=lag),
    _names,
    st.sampled_from(["Stable", "Empty", "PreparingRebalance"]),
    st.integers(0, 3),
    st.integers(0, 3),
)


@pytest.mark.servers
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    a=st.lists(_group, max_size=8, unique_by=lambda d: d["group"]),
    b=st.lists(_group, max_size=8, unique_by=lambda d: d["group"]),
    sort_by=st.sampled_from(SORT_KEYS),
    desc=st.booleans(),
    offset=st.integers(0, 10),
    limit=st.integers(0, 10),
)
def test_listing_across_clusters_pages_like_one_index(
    redis_client, a, b, sort_by, desc, offset, limit
) -> None:
    redis_client.flushdb()
    stores = {"default": _write(redis_client, "default", a), "prod": _write(redis_client, "prod", b)}
    total, page = list_groups_across(stores, sort_by, desc, offset=offset, limit=limit)
    # the whole union, one page at a time, in the order each cluster's own index gives
    _, every = list_groups_across(stores, sort_by, desc, offset=0, limit=100)
    assert total == len(a) + len(b) == len(every)
    assert page == every[offset : offset + limit]
    for cluster, store in stores.items():
        own = [r["name"] for r in every if r["cluster"] == cluster]
        assert own == [r["name"] for r in store.list_groups(sort_by, desc, limit=100)[1]]


# ---- CLI ----------------------------------------------------------------------------------------------
@pytest.mark.servers
@pytest.mark.usefixtures("_clean_env")
def test_cli_reads_every_cluster_or_one(redis_client, redis_server) -> None:
    _write(redis_client, "default", [make_doc("orders", members=2), make_doc("billing")])
    _write(redis_client, "prod", [make_doc("orders", state="PreparingRebalance", members=5)])
    ClusterRegistry(redis_client).register("prod", "p:9092")
    run = CliRunner().invoke
    r = run(cli, ["groups", "--redis", redis_server.url, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["total"] == 3 and set(out["clusters"]) == {"default", "prod"}
    assert sorted((g["cluster"], g["name"]) for g in out["groups"]) == [
        ("default", "billing"),
        ("default", "orders"),
        ("prod", "orders"),
    ]
    r = run(cli, ["groups", "--redis", redis_server.url, "--cluster", "prod"])
    assert r.exit_code == 0 and "prod" in r.stdout and "billing" not in r.stdout, r.output
    r = run(cli, ["group", "orders", "--redis", redis_server.url, "--cluster", "prod", "--json"])
    assert len(json.loads(r.stdout)["members"]) == 5
    # a name in two clusters: `default`, and stderr says where else it is
    r = run(cli, ["group", "orders", "--redis", redis_server.url, "--json"])
    assert len(json.loads(r.stdout)["members"]) == 2 and "also in prod" in r.stderr
    r = run(cli, ["group", "billing", "--redis", redis_server.url, "--cluster", "prod"])
    assert r.exit_code != 0 and "not in cluster prod" in r.output
    r = run(cli, ["groups", "--redis", redis_server.url, "--cluster", "nope"])
    assert r.exit_code != 0 and "no cluster 'nope'" in r.output


@pytest.mark.usefixtures("_clean_env")
def test_collect_needs_a_cluster_when_several_are_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSCOPE_CLUSTERS__A__BOOTSTRAP_SERVERS", "a:9092")
    monkeypatch.setenv("GROUPSCOPE_CLUSTERS__B__BOOTSTRAP_SERVERS", "b:9092")
    r = CliRunner().invoke(cli, ["collect"])
    assert r.exit_code == 2 and "--cluster NAME" in r.output and "a, b" in r.output
    r = CliRunner().invoke(cli, ["collect", "--cluster", "c"])
    assert r.exit_code == 2 and "not configured" in r.output
    r = CliRunner().invoke(cli, ["collect", "--all-clusters", "--cluster", "a"])
    assert r.exit_code == 2


def test_all_clusters_restarts_a_failed_query_and_leaves_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """--all-clusters' supervision: a cluster's pipeline that fails is started again after a back-off
    that doubles, while another cluster's keeps running; the stop event ends both."""
    import threading
    import time

    from collectors.cli import collect_all

    stop = threading.Event()
    calls = {"down": 0, "up": 0}

    def failing() -> None:
        calls["down"] += 1
        raise RuntimeError("pipeline failed: broker refused the login")

    def steady() -> None:
        calls["up"] += 1
        stop.wait()

    down = collect_all.ClusterQuery("down", failing, stop, backoff_s=0.05)
    up = collect_all.ClusterQuery("up", steady, stop)
    monkeypatch.setattr(collect_all, "MAX_BACKOFF_S", 0.4)
    down.start()
    up.start()
    deadline = time.monotonic() + 10
    while down.restarts < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert down.restarts >= 4 and down.backoff_s == 0.4  # doubled up to the cap
    assert "refused the login" in (down.last_error or "")
    assert calls["up"] == 1 and up.thread is not None and up.thread.is_alive()
    stop.set()
    for q in (down, up):
        assert q.thread is not None
        q.thread.join(5)
        assert not q.thread.is_alive()


@pytest.mark.servers
@pytest.mark.usefixtures("_clean_env")
def test_cli_on_a_redis_of_named_clusters_only(redis_client, redis_server) -> None:
    """No `default` is made up when nothing is configured and only named clusters have data: the
    single-cluster commands read the only one there is."""
    _write(redis_client, "prod", [make_doc("orders", members=4)])
    ClusterRegistry(redis_client).register("prod", "p:9092")
    run = CliRunner().invoke
    r = run(cli, ["groups", "--redis", redis_server.url, "--json"])
    assert list(json.loads(r.stdout)["clusters"]) == ["prod"], r.output
    r = run(cli, ["topics", "--redis", redis_server.url, "--json"])
    assert r.exit_code == 0 and [t["name"] for t in json.loads(r.stdout)["topics"]] == ["t"], r.output
    r = run(cli, ["group", "orders", "--redis", redis_server.url, "--json"])
    assert len(json.loads(r.stdout)["members"]) == 4


@pytest.mark.servers
def test_a_cluster_down_at_start_is_waited_for_under_all_clusters(redis_client, redis_server) -> None:
    """--all-clusters does not start a cluster's query while the cluster answers nothing (it would run
    without its offsets topic until restarted): check_topics says why in the cluster's source status
    and raises, and the query's supervisor tries again later."""
    from collectors.demo.servers.processes import free_port
    from collectors.pipeline.job import PipelineConfig
    from collectors.pipeline.topic_check import ClusterUnreachable, check_topics

    cfg = PipelineConfig(
        redis_url=redis_server.url,
        checkpoint_dir="unused",
        cluster="down",
        kafka={"bootstrap.servers": f"127.0.0.1:{free_port()}"},
        wait_for_cluster=True,
    )
    store = RedisStore(redis_client, prefix=cfg.prefix)
    with pytest.raises(ClusterUnreachable):
        check_topics(cfg, store, timeout_s=0.5)
    status = store.freshness()["sources"]["kafka"]
    assert status["ok"] is False and status["detail"]


@pytest.mark.servers
def test_a_read_task_tells_a_cluster_that_went_away(kafka_broker) -> None:
    """A read task tells a cluster that answers from one that does not (tests/test_clusters_live.py
    kills a broker under a running query)."""
    from confluent_kafka import Consumer

    from collectors.demo.servers.processes import free_port
    from collectors.pipeline.kafka_source import cluster_answers

    up = Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers, "group.id": "gs-test-unused"})
    down = Consumer({"bootstrap.servers": f"127.0.0.1:{free_port()}", "group.id": "gs-test-unused"})
    try:
        assert cluster_answers(up, "__consumer_offsets")
        assert not cluster_answers(down, "__consumer_offsets", timeout_s=1.0)
    finally:
        up.close()
        down.close()


def test_a_read_task_gives_up_its_slot_when_its_cluster_answers_nothing() -> None:
    """A read task whose cluster answers nothing fails with ClusterGone (whose message the driver
    knows: job.run_pipeline waits for the cluster and starts the query again) after `gone_after_s`,
    long before its stall timeout: waiting, it would hold an executor slot other clusters' queries
    need."""
    import time

    from collectors.demo.servers.processes import free_port
    from collectors.pipeline.kafka_source import (
        CLUSTER_GONE,
        ClusterGone,
        KafkaInputPartition,
        read_partition,
    )

    part = KafkaInputPartition((("__consumer_offsets", 0, 0, 10),))
    t0 = time.monotonic()
    with pytest.raises(ClusterGone, match=CLUSTER_GONE):
        list(
            read_partition(
                {"bootstrap.servers": f"127.0.0.1:{free_port()}"},
                part,
                poll_timeout_s=0.2,
                stall_timeout_s=120.0,
                gone_after_s=1.0,
            )
        )
    assert time.monotonic() - t0 < 30


def test_a_failure_s_text_reaches_into_its_causes() -> None:
    """A StreamingQueryException's own message leaves out the Python error of the task under it;
    the driver finds ClusterGone's message in the causes (job.failure_text)."""
    from collectors.pipeline.job import failure_text
    from collectors.pipeline.kafka_source import CLUSTER_GONE, ClusterGone

    class Captured(Exception):  # the shape of pyspark's CapturedException
        def __init__(self, desc: str, cause: BaseException | None) -> None:
            super().__init__()
            self._desc, self._stackTrace, self._cause = desc, "\tat org.apache.spark...", cause

        def __str__(self) -> str:
            return ""

    inner = Captured(f"Traceback ...\nClusterGone: {CLUSTER_GONE} (nothing for 10 s)", None)
    outer = Captured("[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred", inner)
    assert CLUSTER_GONE in failure_text(outer)
    assert CLUSTER_GONE not in failure_text(Captured("another failure", None))
    try:
        try:
            raise ClusterGone(CLUSTER_GONE)
        except ClusterGone as e:
            raise RuntimeError("wrapped") from e
    except RuntimeError as e:
        assert CLUSTER_GONE in failure_text(e)


def test_a_query_that_dies_while_waited_on_is_handed_back_not_raised() -> None:
    """awaitTermination raises the query's failure when the query dies during the wait (the usual
    moment): the watch hands the query back so that run_pipeline reads its failure and, for a cluster
    gone, waits for it and starts the query again (the broker-death live tests hit this by chance)."""
    import threading

    from collectors.pipeline.job import PipelineConfig, Progress, _watch

    class Dying:
        isActive = True
        lastProgress = None

        def awaitTermination(self, timeout: float) -> None:
            self.isActive = False
            raise RuntimeError("StreamingQueryException: ClusterGone")

    class Store:
        def heartbeat_collector(self, *a: object, **k: object) -> None: ...

    cfg = PipelineConfig(redis_url="redis://unused", checkpoint_dir="/tmp")
    stopped = _watch(Dying(), cfg, Store(), Progress(False), threading.Event(), 0.0, None, None, None)
    assert stopped is False
