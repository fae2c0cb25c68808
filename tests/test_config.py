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


# ---- unknown keys and variables: an error naming the nearest setting ------------------------------


def _error(monkeypatch: pytest.MonkeyPatch, path: Path | None = None) -> str:
    if path is not None:
        monkeypatch.setenv("GROUPSCOPE_CONFIG", str(path))
    with pytest.raises(ConfigError) as e:
        load_settings()
    msg = str(e.value)
    assert "\n" not in msg, msg  # one line
    return msg


@pytest.mark.parametrize(
    ("text", "key", "near"),
    [
        ("redis_ur: redis://x:1/0\n", "redis_ur", "redis_url"),
        ("bootstrap-server: k:9092\n", "bootstrap-server", "bootstrap_servers"),
        ("retention: 60\n", "retention", "retention_s"),
        ("dashbord_port: 8051\n", "dashbord_port", "dashboard_port"),
    ],
)
def test_a_misspelt_key_in_the_file_names_the_nearest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, key: str, near: str
) -> None:
    cfg = tmp_path / "gs.yaml"
    cfg.write_text("heartbeat_topic: hb\n" + text)
    msg = _error(monkeypatch, cfg)
    assert f"unknown setting {key!r}" in msg and f"did you mean {near!r}" in msg and str(cfg) in msg


def test_a_misspelt_key_in_a_cluster_section_names_the_nearest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "gs.yaml"
    cfg.write_text("clusters:\n  prod:\n    bootstrap_servers: p:9092\n    ofsets_topic: x\n")
    msg = _error(monkeypatch, cfg)
    assert "clusters.prod: unknown setting 'ofsets_topic'; did you mean 'offsets_topic'?" in msg
    # librdkafka's own keys under `kafka:` are passed through unchecked, and `alerts:` is the rules'
    cfg.write_text(
        "clusters:\n  prod:\n    bootstrap-servers: p:9092\n    kafka: {sasl.mechanism: PLAIN}\n"
        "kafka:\n  security.protocol: SSL\nalerts:\n  rules: {lag: false}\n"
    )
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(cfg))
    s = load_settings()
    assert s.clusters["prod"].kafka == {"sasl.mechanism": "PLAIN"} and s.kafka == {"security.protocol": "SSL"}


@pytest.mark.parametrize(
    ("var", "near"),
    [
        ("GROUPSCOPE_REDIS_ULR", "GROUPSCOPE_REDIS_URL"),
        ("GROUPSCOPE_BOOTSTRAP_SERVER", "GROUPSCOPE_BOOTSTRAP_SERVERS"),
        ("groupscope_dashbord_port", "GROUPSCOPE_DASHBOARD_PORT"),
        ("GROUPSCOPE_SPARK_CONFIG", "GROUPSCOPE_SPARK_CONF"),
        ("GROUPSCOPE_CLUSTERS__PROD__BOOTSTRAP_SERVER", "GROUPSCOPE_CLUSTERS__PROD__BOOTSTRAP_SERVERS"),
        ("GROUPSCOPE_REDIS_URL__HOST", "GROUPSCOPE_REDIS_URL"),
    ],
)
def test_an_unknown_environment_variable_names_the_nearest(
    monkeypatch: pytest.MonkeyPatch, var: str, near: str
) -> None:
    monkeypatch.setenv(var, "x")
    msg = _error(monkeypatch)
    assert var in msg and f"did you mean {near}?" in msg


def test_variables_read_elsewhere_and_nested_settings_are_let_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collectors.config_sources import OTHER_ENV

    for var in OTHER_ENV:
        if var != "GROUPSCOPE_CONFIG":
            monkeypatch.setenv(var, "x")
    monkeypatch.setenv("GROUPSCOPE_KAFKA__SASL.MECHANISM", "PLAIN")
    monkeypatch.setenv("GROUPSCOPE_CLUSTERS__PROD__BOOTSTRAP_SERVERS", "p:9092")
    monkeypatch.setenv("GROUPSCOPE_CLUSTERS__PROD__KAFKA__SECURITY.PROTOCOL", "SSL")
    monkeypatch.setenv("groupscope_retention_s", "60")
    s = load_settings()
    assert s.kafka == {"sasl.mechanism": "PLAIN"} and s.retention_s == 60
    assert s.clusters["prod"].kafka == {"security.protocol": "SSL"}


def test_the_cli_says_it_and_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from collectors.cli.main import cli

    monkeypatch.setenv("GROUPSCOPE_REDIS_ULR", "redis://x:1/0")
    r = CliRunner().invoke(cli, ["groups"])
    assert r.exit_code == 2 and "did you mean GROUPSCOPE_REDIS_URL?" in r.output, r.output
