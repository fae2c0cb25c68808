"""The start-up check of a cluster's topics (before the streaming query starts): which source
topics can be read, with the internal topics created. When `__consumer_offsets` is not readable (no
permission on a managed cluster, a Kafka-protocol broker without one), it says so once, in the log
and in Redis (`gs:sources`), and the pipeline runs on the other sources; one not created yet is
subscribed to all the same.

The internal topics groupscope writes (the Admin poller's, the broker-log shipper's, and the probe's
heartbeat topic when it has the `groupscope.` prefix) are created when missing, with the broker's
default replication factor (`create_internal_topics`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from collectors.kafka_clients import (
    ErrorWatch,
    client_config,
    describe_auth_failure,
    describe_tls_failure,
    failure_log,
)
from collectors.pipeline.broker_log_shipper import BROKER_LOG_TOPIC

log = logging.getLogger("groupscope.admin")

# groupscope's own topics are named with this prefix (collectors/kafka_acls.py grants it; a user's
# topics are never created or written)
OWN_PREFIX = "groupscope."
ADMIN_PARTITIONS = 8  # the Admin poller's topic (keyed by group)
HEARTBEAT_PARTITIONS = 3  # the probe's heartbeat topic (keyed by group), as `groupscope demo` makes it
# Kafka before 2.4 (no CreateTopics v4) takes no "broker default" replication factor: at most this
FALLBACK_REPLICATION = 3


def _now_ms() -> int:
    return int(time.time() * 1000)


class ClusterUnreachable(RuntimeError):
    """The cluster answered no metadata request at start, and the pipeline is to wait for it
    (`PipelineConfig.wait_for_cluster`) rather than start without its offsets topic."""


def check_topics(cfg: Any, store: Any, timeout_s: float = 10.0) -> tuple[list[str], bool]:
    """(topics to subscribe, whether __consumer_offsets is readable). Creates the internal topics.
    A cluster that does not answer: its source status says so, then ClusterUnreachable when
    `cfg.wait_for_cluster`, else the topics it can subscribe to without knowing them."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    watch = ErrorWatch()
    admin = AdminClient(client_config(cfg.kafka, watch))
    now = _now_ms()
    internal = [cfg.admin_topic] if cfg.admin_enabled else []
    log_topic = cfg.broker_log_topic
    if cfg.broker_log_files and not log_topic:
        internal.append(BROKER_LOG_TOPIC)
        log_topic = BROKER_LOG_TOPIC
    md = None
    delay = 0.5
    for attempt in range(4):
        try:
            md = admin.list_topics(timeout=timeout_s)
            break
        except KafkaException as e:
            admin.poll(0)  # serve the client's error callback and log lines
            why = connect_failure(cfg.kafka, watch, e)
            failure_log.warning("%s (attempt %d)", why, attempt + 1, extra={"reason": why})
            if watch.auth_failed or watch.tls_failed:
                break  # credentials do not heal in seconds: the poller and the source retry later
            time.sleep(delay)
            delay *= 2
    if md is None:
        why = connect_failure(cfg.kafka, watch, None)
        store.set_source_status("kafka", False, why, now)
        if getattr(cfg, "wait_for_cluster", False):
            raise ClusterUnreachable(why)
        # Subscribe anyway: the source reads missing topics as empty and picks them up later.
        topics = [cfg.heartbeat_topic, *internal] + ([cfg.broker_log_topic] if cfg.broker_log_topic else [])
        return sorted(set(topics)), False
    store.set_source_status("kafka", True, f"{len(md.brokers)} broker(s)", now)
    # the probe's heartbeat topic, when it is one of groupscope's own (a topic of yours is yours)
    own_heartbeats = cfg.heartbeat_topic.startswith(OWN_PREFIX)
    partitions = {t: ADMIN_PARTITIONS if t == cfg.admin_topic else 1 for t in internal}
    if own_heartbeats:
        partitions[cfg.heartbeat_topic] = HEARTBEAT_PARTITIONS
    missing = {t: n for t, n in partitions.items() if t not in md.topics}
    present = set(md.topics)
    if missing:
        present |= set(missing) - create_internal_topics(admin, missing, len(md.brokers), timeout_s)
    # __consumer_offsets: readable only if it exists and its offsets can be listed.
    ok, detail = True, "readable"
    tm = md.topics.get(cfg.offsets_topic)
    if tm is None:
        # Kafka creates it at the first group request: a new cluster has none yet. Subscribe anyway
        # (the source reads a missing topic as empty and picks it up once it exists).
        ok, detail = True, f"topic {cfg.offsets_topic} not created yet (no group has used the cluster)"
    elif tm.error is not None:
        ok, detail = False, f"topic {cfg.offsets_topic}: {tm.error.str()}"
    else:
        try:
            p0 = min(tm.partitions)
            admin.list_offsets({TopicPartition(cfg.offsets_topic, p0): OffsetSpec.latest()})[
                TopicPartition(cfg.offsets_topic, p0)
            ].result(timeout_s)
        except Exception as e:
            ok, detail = False, f"cannot read {cfg.offsets_topic}: {e}"
        else:
            # Describe on a topic is enough to list its offsets; reading it takes Read, which
            # managed clusters and least-privilege ACLs withhold (docs/security.md)
            allowed = read_allowed(admin, cfg.offsets_topic, timeout_s)
            if allowed is False:
                ok, detail = False, f"not authorized to read {cfg.offsets_topic} (no Read ACL)"
    if not ok:
        log.warning(
            "%s; running on the other sources (heartbeats, broker log, Admin API)", detail
        )  # said once, at start
    store.set_source_status(cfg.offsets_topic, ok, detail, now)
    store.set_source_status(
        "heartbeats",
        cfg.heartbeat_topic in present,
        "topic present" if cfg.heartbeat_topic in present else f"topic {cfg.heartbeat_topic} not yet created",
        now,
    )
    if log_topic:
        store.set_source_status("broker_log", True, f"topic {log_topic}", now)
    topics = ([cfg.offsets_topic] if ok else []) + [cfg.heartbeat_topic, *internal]
    if cfg.broker_log_topic:
        topics.append(cfg.broker_log_topic)
    return sorted(set(topics)), ok


def create_internal_topics(
    admin: Any, partitions: dict[str, int], brokers: int, timeout_s: float
) -> set[str]:
    """Create groupscope's own topics (name -> partition count) with the broker's replication factor
    (`default.replication.factor`: replication factor -1, Kafka 2.4+, KIP-464): a managed service
    refuses 1, and a cluster whose `min.insync.replicas` is 2 or more accepts no write to a topic of
    one replica. A broker that refuses -1 (older than 2.4) is asked again with min(3, brokers), and
    the log says so. A topic that exists already (another collector made it first) is no error; any
    other refusal (no Create ACL, a policy) is logged, and the source reads the topic once it exists
    (pre-create it: docs/security.md). The topics not created, and not there."""
    from confluent_kafka.admin import NewTopic

    def create(names: list[str], replicas: int) -> dict[str, Exception]:
        futs = admin.create_topics(
            [NewTopic(t, partitions[t], replicas) for t in names], request_timeout=timeout_s
        )
        failed: dict[str, Exception] = {}
        for t, f in futs.items():
            try:
                f.result(timeout_s)
            except Exception as e:
                if _error_name(e) != "TOPIC_ALREADY_EXISTS":
                    failed[t] = e
        return failed

    failed = create(sorted(partitions), -1)
    refused = [t for t, e in failed.items() if _error_name(e) in _NO_DEFAULT_REPLICATION]
    if refused:
        replicas = max(1, min(FALLBACK_REPLICATION, brokers))
        log.warning(
            "the broker refused to create %s with its default replication factor (%s): created with "
            "replication factor %d instead (min(%d, %d brokers)); Kafka 2.4+ takes the broker's default",
            ", ".join(refused),
            failed[refused[0]],
            replicas,
            FALLBACK_REPLICATION,
            brokers,
        )
        for t in refused:
            del failed[t]
        failed.update(create(refused, replicas))
    for t, e in failed.items():  # not allowed, or a policy: the source reads it once it exists
        log.warning("could not create topic %s: %s", t, e)
    return set(failed)


# What a broker (or librdkafka for it) answers a replication factor of -1 it does not take: librdkafka
# refuses it before a broker without CreateTopics v4; a broker may answer that the request is invalid.
_NO_DEFAULT_REPLICATION = frozenset(
    {"_UNSUPPORTED_FEATURE", "UNSUPPORTED_VERSION", "INVALID_REPLICATION_FACTOR", "INVALID_REQUEST"}
)


def _error_name(exc: BaseException) -> str:
    """The KafkaError name of an admin future's exception ("" for any other exception)."""
    from confluent_kafka import KafkaError

    err = exc.args[0] if exc.args else None
    return err.name() if isinstance(err, KafkaError) else ""


def read_allowed(admin: Any, topic: str, timeout_s: float) -> bool | None:
    """Whether this principal may Read `topic` (DescribeTopics' authorized operations); None when
    the broker does not say (too old, or the answer failed): the source finds out by reading."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AclOperation

    try:
        desc = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic]
        ops = desc.result(timeout_s).authorized_operations
    except Exception as e:
        log.debug("describe topic %s: %s", topic, e)
        return None
    if ops is None:
        return None
    return AclOperation.READ in ops or AclOperation.ALL in ops


def connect_failure(conf: Any, watch: ErrorWatch, exc: Exception | None) -> str:
    """Why the cluster cannot be used, in one sentence without secrets: a failed login or TLS
    handshake said as such, anything else as unreachable."""
    if watch.auth_failed:
        return describe_auth_failure(conf, watch.last.str() if watch.last is not None else "")
    if watch.tls_failed:
        return describe_tls_failure(conf, watch.last.str() if watch.last is not None else "")
    detail = f": {exc}" if exc is not None else ""
    return f"broker unreachable at {conf.get('bootstrap.servers', '?')}{detail}; retrying"


def answers_now(cfg: Any, timeout_s: float = 5.0) -> bool:
    """Whether the cluster answers a metadata request now."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient(client_config(cfg.kafka)).list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return True


def wait_until_answers(cfg: Any, store: Any, stop: Any, every_s: float = 2.0) -> bool:
    """Block until the cluster answers a metadata request (True), or `stop` (a threading.Event) is set
    (False). Meanwhile its `kafka` source status says why the collector waits, and its heartbeat
    that it is alive."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    watch = ErrorWatch()
    admin = AdminClient(client_config(cfg.kafka, watch))
    while not stop.is_set():
        try:
            md = admin.list_topics(timeout=5.0)
        except KafkaException as e:
            admin.poll(0)
            why = connect_failure(cfg.kafka, watch, e)
            store.set_source_status("kafka", False, f"{why}; the collector waits for it", _now_ms())
            store.heartbeat_collector(_now_ms(), mode=getattr(cfg, "mode", None), waiting="cluster")
            stop.wait(every_s)
            continue
        store.set_source_status("kafka", True, f"{len(md.brokers)} broker(s)", _now_ms())
        return True
    return False


def bootstrap_unreachable(conf: Any, timeout_s: float = 2.0) -> str | None:
    """None when a TCP connection to one of the bootstrap servers opens (not a Kafka request: no
    librdkafka client is involved), else why none does."""
    import socket

    from collectors.kafka_protocol.connection import ConfigError, parse_servers

    try:
        servers = parse_servers(conf.get("bootstrap.servers", ""))
    except (ConfigError, ValueError):
        servers = []
    tried = []
    for host, port in servers:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return None
        except OSError as e:
            tried.append(f"{host}:{port}: {e}")
    return "no bootstrap server accepts a connection (" + "; ".join(tried or ["none configured"]) + ")"
