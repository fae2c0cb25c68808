"""The embedded broker's storage is formatted whatever its random cluster id looks like."""

from __future__ import annotations

from pathlib import Path

from collectors.demo.servers.kafka import KafkaBroker
from collectors.demo.servers.kafka.broker import java_binary
from collectors.demo.servers.kafka.jars import classpath
from collectors.demo.servers.processes import free_port


def test_a_cluster_id_that_begins_with_a_dash_is_formatted(tmp_path: Path) -> None:
    """One id in 64 (URL-safe base64) begins with "-": passed as `-t ID`, kafka-storage took it for
    an option and the broker did not start (a whole test session's setup failed on it once)."""
    broker = KafkaBroker(cluster_id="-" + "x" * 21, workdir=tmp_path)
    broker.port, broker.controller_port = free_port(broker.host), free_port(broker.host)
    props = tmp_path / "server.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in broker.properties().items()))
    log_opt, _ = broker._log_config()
    broker._format(java_binary(), classpath(broker.version), log_opt, props)
    meta = (broker.data_dir / "meta.properties").read_text()
    assert "cluster.id=-xxxxxxxxxxxxxxxxxxxxx" in meta
