"""Configuration: defaults, YAML file, environment and flags, in that order of precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.config import DEFAULT_REDIS_URL, ConfigError, load_settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for k in list(os.environ):
        if k.startswith("GROUPSCOPE_"):
            monkeypatch.delenv(k)


def test_defaults() -> None:
    s = load_settings()
    assert s.redis_url == DEFAULT_REDIS_URL
    assert s.spark_master == "local[*]"
    assert s.heartbeat_topic == "groupscope.heartbeats"
    assert s.retention_s == 7 * 24 * 3600
    assert s.admin_poll_interval_s == 5.0
    assert s.bootstrap_servers is None


def test_yaml_then_env_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "gs.yaml"
    cfg.write_text(
        "bootstrap-servers: k1:9092\nredis_url: redis://file:1/0\nkafka:\n  security.protocol: SASL_SSL\n"
    )
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(cfg))
    s = load_settings()
    assert s.bootstrap_servers == "k1:9092" and s.redis_url == "redis://file:1/0"
    monkeypatch.setenv("GROUPSCOPE_REDIS_URL", "rediss://:secret@env:6380/1")
    monkeypatch.setenv("GROUPSCOPE_KAFKA__SASL.MECHANISM", "SCRAM-SHA-512")
    s = load_settings()
    assert s.redis_url == "rediss://:secret@env:6380/1"
    # librdkafka settings from the file and the environment are merged and passed through
    assert s.kafka_config(**{"group.id": "x"}) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "bootstrap.servers": "k1:9092",
        "group.id": "x",
    }
    assert load_settings(redis_url="redis://flag:2/0").redis_url == "redis://flag:2/0"
    assert load_settings(redis_url=None).redis_url == "rediss://:secret@env:6380/1"


def test_bad_values_give_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSCOPE_DASHBOARD_PORT", "99999")
    with pytest.raises(ConfigError, match="dashboard_port"):
        load_settings()
    monkeypatch.delenv("GROUPSCOPE_DASHBOARD_PORT")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(bad))
    with pytest.raises(ConfigError, match="mapping"):
        load_settings()
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings()


def test_spark_settings_from_the_environment_override_groupscope_s_defaults() -> None:
    from collectors.spark_session import user_conf

    env = {"GROUPSCOPE_SPARK_CONF": " spark.sql.shuffle.partitions=16 , spark.executor.memory=4g,"}
    assert user_conf(env) == {"spark.sql.shuffle.partitions": "16", "spark.executor.memory": "4g"}
    assert user_conf({}) == {}
    with pytest.raises(ValueError, match="not key=value"):
        user_conf({"GROUPSCOPE_SPARK_CONF": "spark.sql.shuffle.partitions"})


def test_a_new_checkpoint_gets_a_state_partition_a_core_on_one_machine(monkeypatch):
    """Each micro-batch loads and commits every state partition's store: on one machine one a core
    (at least 2, at most 32); on a cluster 8 unless set."""
    from collectors.spark_session import state_partitions

    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert state_partitions("local[*]") == "6"
    assert state_partitions("local[3]") == "3"
    assert state_partitions("local[1]") == "2"
    assert state_partitions("local") == "2"
    assert state_partitions("local[128]") == "32"
    assert state_partitions("spark://master:7077") == "8"
    assert state_partitions("k8s://https://api:6443") == "8"
