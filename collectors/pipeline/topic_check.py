"""The start-up check of a cluster's topics (before the streaming query starts): which source
topics can be read, with the internal topics created. When `__consumer_offsets` is not readable (no
permission on a managed cluster, a Kafka-protocol broker without one), it says so once, in the log
and in Redis (`gs:sources`), and the pipeline runs on the other sources; one not created yet is
subscribed to all the same.
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
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

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
    missing = [t for t in internal if t not in md.topics]
    if missing:
        futs = admin.create_topics([NewTopic(t, 8 if t == cfg.admin_topic else 1, 1) for t in missing])
        for t, f in futs.items():
            try:
                f.result(timeout_s)
            except Exception as e:  # exists already (race) or not allowed: the source copes
                log.info("create topic %s: %s", t, e)
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
        cfg.heartbeat_topic in md.topics,
        "topic present"
        if cfg.heartbeat_topic in md.topics
        else f"topic {cfg.heartbeat_topic} not yet created",
        now,
    )
    if log_topic:
        store.set_source_status("broker_log", True, f"topic {log_topic}", now)
    topics = ([cfg.offsets_topic] if ok else []) + [cfg.heartbeat_topic, *internal]
    if cfg.broker_log_topic:
        topics.append(cfg.broker_log_topic)
    return sorted(set(topics)), ok


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
