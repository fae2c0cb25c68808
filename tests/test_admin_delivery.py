"""What the collector writes, on the harness's real broker: its topics are created with the broker's
default replication factor (and a broker that refuses that is asked again with an explicit one); an
Admin poller line larger than a record may be is cut into lines the model reads as the one line, or
(a describe) dropped, counted and logged, and the poll goes on; a record the broker refuses is
counted by reason, shown in the "admin" source status, and its line sent again until it gets
through."""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from collectors.pipeline.admin_poller import AdminPoller
from collectors.pipeline.admin_writer import RECORD_OVERHEAD
from collectors.pipeline.job import PipelineConfig
from collectors.pipeline.route import decode_one
from collectors.pipeline.topic_check import check_topics, create_internal_topics

PARTITIONS = 400  # a group on this many partitions has lines of some 14 KB
LIMIT = 4096  # the record size the cutting test allows


def wait_until(cond: Any, timeout: float, what: Any, every: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f} s waiting for {what() if callable(what) else what}"
            )
        time.sleep(every)


@pytest.fixture(scope="module")
def big_groups(kafka_broker) -> Iterator[tuple[str, str, str, str, dict[int, int]]]:
    """(bootstrap, topic of PARTITIONS partitions, a group with committed offsets on each of them
    and no member, a group whose one live member owns them all, the topic's log-end offsets)."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bs = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    topic = f"delivery-big-{suffix}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bs})
    for p in range(0, PARTITIONS, 7):  # log ends that are not all 0
        for _ in range(1 + p % 3):
            producer.produce(topic, value=b"x", partition=p)
    assert producer.flush(30) == 0
    ends = {p: (1 + p % 3 if p % 7 == 0 else 0) for p in range(PARTITIONS)}
    committed = f"delivery-committed-{suffix}"
    req = ConsumerGroupTopicPartitions(
        committed, [TopicPartition(topic, p, ends[p]) for p in range(PARTITIONS)]
    )
    admin.alter_consumer_group_offsets([req])[committed].result(30)
    owner = f"delivery-owner-{suffix}"
    member = Consumer({"bootstrap.servers": bs, "group.id": owner, "enable.auto.commit": False})
    member.subscribe([topic])
    wait_until(
        lambda: member.poll(0.2) is None and len(member.assignment()) == PARTITIONS, 60, "the assignment"
    )
    yield bs, topic, committed, owner, ends
    member.close()


def _admin_topic(bs: str, name: str, **config: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(name, 1, -1, config=dict(config))])[name].result(30)
    return name


def _records(bs: str, topic: str) -> list[tuple[bytes, bytes]]:
    """Every record of the one-partition `topic` (key, value)."""
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": bs, "group.id": "unused", "enable.partition.eof": True})
    reader.assign([TopicPartition(topic, 0, 0)])
    out, deadline = [], time.monotonic() + 30
    while time.monotonic() < deadline:
        m = reader.poll(1.0)
        if m is None:
            continue
        if m.error():
            break  # the partition's end
        out.append((m.key() or b"", m.value() or b""))
    reader.close()
    return out


def _evidence(records: list[tuple[bytes, bytes]], group: str) -> list[Any]:
    """The model's evidence of `group`'s records, as the pipeline's first stage reads them."""
    out = []
    for key, value in records:
        if key == group.encode():
            out += [ev for _, _, _, ev in decode_one("admin", "t", 0, 0, 0, key, value)]
    return out


def _topic_ends(records: list[tuple[bytes, bytes]], topic: str) -> list[Any]:
    """The cluster's log-end offsets lines of `topic` (key b"": one line per topic, cut in parts
    when large), as the model's evidence."""
    out = []
    for key, value in records:
        if key == b"":
            for _, _, _, ev in decode_one("admin", "t", 0, 0, 0, key, value):
                if {t for t, _, _ in getattr(ev, "rows", ())} == {topic}:
                    out.append(ev)
    return out


def _cfg(bs: str, admin_topic: str, **kw: Any) -> PipelineConfig:
    return PipelineConfig(
        redis_url="", checkpoint_dir="/tmp", kafka={"bootstrap.servers": bs}, admin_topic=admin_topic, **kw
    )


@pytest.mark.servers
def test_internal_topics_are_created_with_the_brokers_default_replication_factor(
    kafka_broker, redis_client, monkeypatch
) -> None:
    """What CreateTopics was asked (librdkafka's request, seen on the way out) and what the broker
    made of it: replication factor -1, which the broker resolves to its default.replication.factor."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    from collectors.storage.redis_store import RedisStore

    bs = kafka_broker.bootstrap_servers
    asked: list[tuple[str, int, int]] = []
    real = AdminClient.create_topics

    def spy(self: Any, new_topics: list[Any], **kw: Any) -> Any:
        asked.extend((t.topic, t.num_partitions, t.replication_factor) for t in new_topics)
        return real(self, new_topics, **kw)

    monkeypatch.setattr(AdminClient, "create_topics", spy)
    suffix = time.time_ns()
    admin = AdminClient({"bootstrap.servers": bs})
    md = admin.list_topics(timeout=10)
    log_topic_new = "groupscope.broker-log" not in md.topics
    cfg = PipelineConfig(
        redis_url="",
        checkpoint_dir="",
        kafka={"bootstrap.servers": bs},
        admin_topic=f"groupscope.admin-rf-{suffix}",
        heartbeat_topic=f"groupscope.heartbeats-rf-{suffix}",
        broker_log_files=["/nonexistent/server.log"],
    )
    store = RedisStore(redis_client)
    topics, _ = check_topics(cfg, store, timeout_s=10)
    want = {cfg.admin_topic: 8, cfg.heartbeat_topic: 3} | (
        {"groupscope.broker-log": 1} if log_topic_new else {}
    )
    assert {(t, n) for t, n, _ in asked} == set(want.items())
    assert {rf for _, _, rf in asked} == {-1}
    assert {cfg.admin_topic, cfg.heartbeat_topic} <= set(topics)
    default_rf = int(
        admin.describe_configs([ConfigResource(ResourceType.BROKER, "1")])[
            ConfigResource(ResourceType.BROKER, "1")
        ]
        .result(10)["default.replication.factor"]
        .value
    )
    described = admin.describe_topics(TopicCollection(list(want)))
    for t, f in described.items():
        d = f.result(10)
        assert len(d.partitions) == want[t], t
        assert {len(p.replicas) for p in d.partitions} == {default_rf}, t
    status = store.freshness()["sources"]["heartbeats"]
    assert status["ok"] and status["detail"] == "topic present"

    # a heartbeat topic of yours (no groupscope. prefix) is never created
    asked.clear()
    theirs = f"app-heartbeats-{suffix}"
    cfg.heartbeat_topic = theirs
    cfg.admin_topic = f"groupscope.admin-rf2-{suffix}"
    check_topics(cfg, store, timeout_s=10)
    assert [t for t, _, _ in asked] == [cfg.admin_topic]
    assert theirs not in admin.list_topics(timeout=10).topics


class _RefusesDefaultReplication:
    """An admin client in front of a broker older than 2.4: librdkafka refuses replication factor -1
    there (no CreateTopics v4) with _UNSUPPORTED_FEATURE."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int, int]] = []

    def create_topics(self, new_topics: list[Any], **_kw: Any) -> dict[str, Any]:
        from confluent_kafka import KafkaError, KafkaException

        out = {}
        for t in new_topics:
            self.asked.append((t.topic, t.num_partitions, t.replication_factor))
            f: concurrent.futures.Future = concurrent.futures.Future()
            if t.replication_factor == -1:
                err = KafkaError(
                    KafkaError._UNSUPPORTED_FEATURE, "default replication factor needs broker 2.4+"
                )
                f.set_exception(KafkaException(err))
            elif t.topic.endswith("exists"):
                f.set_exception(KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists")))
            else:
                f.set_result(None)
            out[t.topic] = f
        return out


@pytest.mark.parametrize(("brokers", "replicas"), [(1, 1), (2, 2), (5, 3)])
def test_a_broker_that_refuses_the_default_replication_factor_gets_min_3_brokers(
    brokers: int, replicas: int, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="groupscope.admin")
    admin = _RefusesDefaultReplication()
    left = create_internal_topics(admin, {"groupscope.admin": 8, "groupscope.exists": 1}, brokers, 5.0)
    assert left == set()  # created, or there already
    assert admin.asked == [
        ("groupscope.admin", 8, -1),
        ("groupscope.exists", 1, -1),
        ("groupscope.admin", 8, replicas),
        ("groupscope.exists", 1, replicas),
    ]
    said = [r.getMessage() for r in caplog.records if "default replication factor" in r.getMessage()]
    assert len(said) == 1 and f"replication factor {replicas} instead" in said[0], said


@pytest.mark.servers
def test_lines_over_the_record_size_are_cut_or_dropped_and_the_poll_goes_on(kafka_broker, big_groups, caplog):
    """A topic's log-end offsets, and a group's committed offsets where __consumer_offsets is read
    (sent on a refill), go in several records under the limit, which the model reads as the one line; a
    describe too large (a member owning 400 partitions) is dropped, counted and logged with its group
    and size. Where the committed offsets are the group's only word on them, they are not cut (the
    model drops what a "committed" line does not list) but dropped, counted."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    from coordinator_model.evidence import CommittedSnapshot, DescribeSnapshot, EndOffsets

    bs, topic, committed, owner, ends = big_groups
    caplog.set_level(logging.ERROR, logger="groupscope.admin")
    admin = AdminClient({"bootstrap.servers": bs})
    admin_topic = _admin_topic(bs, f"admin-cut-{time.time_ns()}")
    poller = AdminPoller(_cfg(bs, admin_topic), store=None, offsets_readable=True, refill=True)
    poller.writer.max_message_bytes = LIMIT
    producer = Producer({"bootstrap.servers": bs})
    try:
        assert poller.poll_once(admin, producer) >= 2
    finally:
        poller.stop()
    records = _records(bs, admin_topic)
    assert records and max(len(k) + len(v) + RECORD_OVERHEAD for k, v in records) <= LIMIT
    assert not poller.writer.delivery_failures
    whole = {(topic, p): off for p, off in ends.items()}
    # the topic's log ends (both groups read it): one line, cut
    parts = [ev for ev in _topic_ends(records, topic) if isinstance(ev, EndOffsets)]
    assert len(parts) >= 3  # some 14 KB in records of 4 KB
    assert len({ev.ts for ev in parts}) == 1  # one answer, at one time
    assert {(t, p): off for ev in parts for t, p, off in ev.rows} == whole
    assert sum(len(ev.rows) for ev in parts) == PARTITIONS  # each partition once
    snapshots = [ev for ev in _evidence(records, committed) if isinstance(ev, CommittedSnapshot)]
    assert len(snapshots) >= 3
    assert {(t, p): off for ev in snapshots for t, p, off in ev.offsets} == whole
    # the member's describe: 400 partitions in one answer, which cannot be cut
    assert not [ev for ev in _evidence(records, owner) if isinstance(ev, DescribeSnapshot)]
    assert [ev for ev in _evidence(records, committed) if isinstance(ev, DescribeSnapshot)]  # small: sent
    assert poller.writer.too_large == {"describe": 1}
    said = [r.getMessage() for r in caplog.records if owner in r.getMessage()]
    assert len(said) == 1 and "describe line" in said[0] and "bytes" in said[0], said
    assert poller.writer.split_lines >= 2  # the topic's log ends, the group's committed offsets

    # __consumer_offsets not read: the committed line is the group's whole word, never cut
    admin_topic2 = _admin_topic(bs, f"admin-uncut-{time.time_ns()}")
    poller2 = AdminPoller(_cfg(bs, admin_topic2), store=None, offsets_readable=False)
    poller2.writer.max_message_bytes = LIMIT
    try:
        assert poller2.poll_once(admin, producer) >= 2
    finally:
        poller2.stop()
    records2 = _records(bs, admin_topic2)
    assert not [ev for ev in _evidence(records2, committed) if isinstance(ev, CommittedSnapshot)]
    assert len(_topic_ends(records2, topic)) >= 3
    assert poller2.writer.too_large["committed offsets"] >= 1 and poller2.writer.too_large["describe"] == 1


@pytest.mark.servers
@pytest.mark.slow
def test_refused_records_are_counted_shown_and_sent_again_until_they_fit(
    kafka_broker, big_groups, redis_client
) -> None:
    """The admin topic takes records of 3,000 bytes at most (max.message.bytes), the poller starts
    writing records of up to 16 KB: the broker refuses them (MSG_SIZE_TOO_LARGE); each refusal is
    counted, the "admin" source status says so (not ok), the poller halves its record size until the
    broker takes them, and the lines refused are sent again (in parts), so the topic's log-end offsets
    and the group's committed offsets all reach the topic; the status is ok again once nothing is refused."""
    from collectors.storage.redis_store import RedisStore

    bs, topic, committed, _owner, ends = big_groups
    admin_topic = _admin_topic(bs, f"admin-small-{time.time_ns()}", **{"max.message.bytes": "3000"})
    store = RedisStore(redis_client)
    cfg = _cfg(bs, admin_topic, admin_poll_interval_s=0.5, admin_hot_interval_s=0.0)
    poller = AdminPoller(cfg, store, offsets_readable=True)  # a new Redis: committed offsets sent too
    poller.writer.max_message_bytes = 16_384
    seen: list[dict[str, Any]] = []

    def status() -> dict[str, Any]:
        s = store.freshness()["sources"].get("admin") or {}
        if s and (not seen or seen[-1] != s):
            seen.append(s)
        return s

    poller.start()
    try:
        wait_until(
            lambda: not status().get("ok", True) and "MSG_SIZE_TOO_LARGE" in status()["detail"],
            60,
            lambda: f"a status that says records were refused: {seen}",
        )
        assert poller.writer.delivery_failures["MSG_SIZE_TOO_LARGE"] >= 1
        wait_until(
            lambda: poller.writer.max_message_bytes <= 3000 and status().get("ok"), 90, lambda: f"{seen}"
        )
        whole = {(topic, p): off for p, off in ends.items()}

        def arrived() -> bool:
            from coordinator_model.evidence import CommittedSnapshot, EndOffsets

            records = _records(bs, admin_topic)
            evidence = _evidence(records, committed)
            got_ends = {
                (t, p): off
                for ev in _topic_ends(records, topic)
                if isinstance(ev, EndOffsets)
                for t, p, off in ev.rows
            }
            got = {
                (t, p): o for ev in evidence if isinstance(ev, CommittedSnapshot) for t, p, o in ev.offsets
            }
            return got_ends == whole and got == whole

        wait_until(arrived, 60, "the refused lines sent again, in parts")
    finally:
        poller.stop()
        poller.join(30)
    assert max(len(k) + len(v) for k, v in _records(bs, admin_topic)) <= 3000
    final = status()
    assert final["ok"], final
    assert "not delivered since start: MSG_SIZE_TOO_LARGE" in final["detail"], final  # still said


# ---- without a broker: what a failed delivery does to the change filter ----------------------------
def test_a_send_taken_back_is_due_again_and_a_later_send_decides() -> None:
    from collectors.pipeline.admin_changes import ChangeFilter

    f = ChangeFilter(refresh_ms=60_000, phase_of=lambda _key: 0)
    before = f.entry("g")
    assert f.verdict("g", {"v": 1}, 1_000) == "new"
    assert f.unsend("g", before, f.entry("g"))
    assert f.verdict("g", {"v": 1}, 2_000) == "new"  # as if never sent
    sent_1 = f.entry("g")
    before = f.entry("g")
    assert f.verdict("g", {"v": 2}, 3_000) == "changed"
    sent_2 = f.entry("g")
    assert f.unsend("g", before, sent_2)
    assert f.verdict("g", {"v": 2}, 4_000) == "changed"  # the change is sent again
    assert not f.unsend("g", None, sent_1)  # an older send's failure: the later send decides
    assert f.verdict("g", {"v": 2}, 5_000) is None


class _FailingProducer:
    """Keeps what is produced; `fail()` reports every record produced so far as not delivered, as
    librdkafka does from poll or flush."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self._reports: list[Any] = []

    def produce(self, topic: str, key: bytes, value: bytes, on_delivery: Any = None) -> None:
        import json

        self.lines.append(json.loads(value))
        self._reports.append(on_delivery)

    def deliver(self) -> None:
        reports, self._reports = self._reports, []
        for report in reports:
            report(None, None)

    def fail(self, code: int) -> None:
        from confluent_kafka import KafkaError

        reports, self._reports = self._reports, []
        for report in reports:
            report(KafkaError(code), None)

    def poll(self, _timeout: float) -> int:
        return 0


def test_a_line_not_delivered_is_sent_again_at_the_next_poll() -> None:
    """A describe of a steady group (not described at every poll) and a topic's log-end offsets line
    whose offsets did not move since (held): each sent again, as evidence, after its delivery
    failed; counted by reason."""
    from types import SimpleNamespace

    from confluent_kafka import KafkaError

    cfg = SimpleNamespace(kafka={}, admin_topic="a", admin_resend_s=60.0)
    poller = AdminPoller(cfg, store=None)
    out = _FailingProducer()
    doc = {"ts": 1, "group": "g", "type": "classic", "state": "Stable", "members": []}
    poller._listed["g"] = ("STABLE", 1_000, frozenset())
    assert poller._send_describe(out, "g", doc, 1_000) == "new"
    assert poller._send_describe(out, "g", doc, 6_000) is None  # unchanged: held
    out.fail(KafkaError._MSG_TIMED_OUT)
    assert poller.writer.delivery_failures == {"_MSG_TIMED_OUT": 1}
    assert "g" not in poller._listed  # described at the next poll, though steady
    assert poller._send_describe(out, "g", doc, 11_000) is not None

    wanted, ends = {"g": {("t", 0)}}, {("t", 0): 5}

    def send(key: tuple, group: str, line: dict[str, Any], hot_ms: int = 0) -> None:
        poller._send(out, key, group, line, line["ts"], hot_ms)

    poller._send_ends(wanted, dict(ends), {}, 20_000, send)
    poller._send_ends(wanted, dict(ends), {}, 25_000, send)  # the same: held
    assert [x for x in out.lines if "end_offsets" in x] == [
        {"ts": 20_000, "group": "", "end_offsets": [["t", 0, 5]]}
    ]
    out.deliver()
    ends[("t", 0)] = 6
    poller._send_ends(wanted, dict(ends), {}, 30_000, send)  # moved: sent
    out.fail(KafkaError.MSG_SIZE_TOO_LARGE)
    out.lines.clear()
    poller._send_ends(wanted, dict(ends), {}, 35_000, send)  # unmoved, but not delivered
    assert out.lines == [{"ts": 35_000, "group": "", "end_offsets": [["t", 0, 6]]}]
    assert "resend" not in out.lines[0]  # evidence, not a refresh stamp
    assert poller.writer.delivery_failures["MSG_SIZE_TOO_LARGE"] == 1


@pytest.mark.servers
def test_the_broker_log_shipper_counts_and_shows_lines_not_delivered(kafka_broker, redis_client, tmp_path):
    """A coordinator log line the broker-log topic refuses (larger than its max.message.bytes): not
    delivered, counted by reason, in the "broker_log" source status, and its file position kept (it
    goes again at every round: at least once)."""
    from collectors.pipeline.broker_log_shipper import BrokerLogShipper
    from collectors.storage.redis_store import RedisStore

    bs = kafka_broker.bootstrap_servers
    topic = _admin_topic(bs, f"broker-log-small-{time.time_ns()}", **{"max.message.bytes": "1000"})
    log_file = tmp_path / "server.log"
    log_file.write_text("[2026-11-28 11:00:00,000] INFO [GroupCoordinator 1]: group " + "x" * 2000 + "\n")
    cfg = PipelineConfig(
        redis_url="",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        kafka={"bootstrap.servers": bs},
        broker_log_topic=topic,
        broker_log_files=[str(log_file)],
    )
    store = RedisStore(redis_client)
    shipper = BrokerLogShipper(cfg, interval_s=0.2, store=store)
    shipper.start()
    try:
        wait_until(lambda: shipper.delivery_failures["MSG_SIZE_TOO_LARGE"] >= 2, 60, "two refused rounds")
    finally:
        shipper.stop()
        shipper.join(30)
    status = store.freshness()["sources"]["broker_log"]
    assert not status["ok"] and "MSG_SIZE_TOO_LARGE" in status["detail"] and topic in status["detail"]
    assert not (tmp_path / "checkpoint" / "broker-log-positions.json").exists()  # not moved on


def test_the_probe_counts_events_not_delivered_by_reason() -> None:
    """The probe's telemetry producer, its broker unreachable: each event not delivered is counted,
    with the delivery report's reason, in the counters the application reads."""
    from collectors.probe.emitter import TelemetryEmitter

    class Event:
        group = "g"

        def to_json(self) -> bytes:
            return b"{}"

    emitter = TelemetryEmitter({"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 300}, "t")
    emitter.start()
    try:
        emitter.emit(Event())  # type: ignore[arg-type]
        emitter.emit(Event())  # type: ignore[arg-type]
        wait_until(lambda: emitter.counts.snapshot().dropped_undeliverable == 2, 20, "two reports")
    finally:
        emitter.close(timeout=2)
    counters = emitter.counts.snapshot()
    assert counters.undeliverable_reasons == (("_MSG_TIMED_OUT", 2),)
    assert counters.dropped == 2 and counters.errors == 0


def test_no_admin_request_goes_out_while_no_bootstrap_server_accepts_a_connection() -> None:
    """After a failed poll the Admin poller asks nothing of librdkafka until a bootstrap server
    accepts a TCP connection (confluentinc/librdkafka#4605: an Admin client that keeps asking a
    broker that went away can abort the process), and says why it waits."""
    import socket

    from collectors.demo.servers.processes import free_port
    from collectors.pipeline.topic_check import bootstrap_unreachable

    closed = free_port()
    why = bootstrap_unreachable({"bootstrap.servers": f"127.0.0.1:{closed}"}, timeout_s=1)
    assert why is not None and f"127.0.0.1:{closed}" in why
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        # one server of the list answering is enough
        servers = f"127.0.0.1:{closed}, 127.0.0.1:{port}"
        assert bootstrap_unreachable({"bootstrap.servers": servers}, timeout_s=1) is None
    assert "none configured" in (bootstrap_unreachable({}) or "")
