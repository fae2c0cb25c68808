"""An embedded Apache Kafka broker (KRaft) from Maven Central's jars, for tests, the demo and benchmarks."""

from collectors.demo.servers.kafka.broker import KafkaBroker, TlsFiles
from collectors.demo.servers.kafka.jars import JarsError, ensure_jars, kafka_version

__all__ = ["JarsError", "KafkaBroker", "TlsFiles", "ensure_jars", "kafka_version"]
