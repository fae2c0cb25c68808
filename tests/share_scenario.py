"""A KIP-932 share group's life on a real broker: real ShareConsumers (librdkafka's, as a user's
application runs them) join, share a topic's partitions and leave; what the coordinator wrote for the
group is read back from __consumer_offsets as capture lines (base64 key/value, as
tests/fixtures/real-kafka-4.0/*/offsets.jsonl). Used by tests/test_share_groups.py on the harness's
broker and by tests/fixtures/kafka-share/make_fixture.py."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.demo.share import ShareMember as Member
from coordinator_model.coordinator_partition import coordinator_partition

PARTITIONS = 3


@dataclass
class ShareRun:
    lines: list[dict[str, Any]]  # the group's records, as capture lines, in log order
    mid_ms: int  # a moment both members were in the group, each with its partitions
    marks: dict[str, int] = field(default_factory=dict)
    during: Any = None  # what the `during` callback of run_share_group returned
    after: Any = None  # what its `after` callback returned


def read_group_records(bootstrap: str, group: str, timeout_s: float = 5.0) -> list[dict[str, Any]]:
    """Every record of the group's coordinator partition of __consumer_offsets, as capture lines."""
    part = coordinator_partition(group)
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "share-scenario-reader", "enable.auto.commit": False}
    )
    c.assign([TopicPartition("__consumer_offsets", part, 0)])
    _lo, hi = c.get_watermark_offsets(TopicPartition("__consumer_offsets", part), timeout=10)
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while (not out or out[-1]["offset"] < hi - 1) and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        out.append(
            {
                "topic": m.topic(),
                "partition": m.partition(),
                "offset": m.offset(),
                "timestamp": m.timestamp()[1],
                "timestamp_type": m.timestamp()[0],
                "key": base64.b64encode(m.key()).decode(),
                "value": base64.b64encode(m.value()).decode() if m.value() is not None else None,
            }
        )
    c.close()
    return out


def _until(cond: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _assigned(bootstrap: str, group: str) -> dict[str, int]:
    """Member id -> partitions in its latest current-assignment record."""
    from collectors.capture import offsets_line_to_evidence
    from coordinator_model.evidence import ConsumerMemberAssignment

    held: dict[str, int] = {}
    for line in read_group_records(bootstrap, group, 2.0):
        ev = offsets_line_to_evidence(line)
        if isinstance(ev, ConsumerMemberAssignment) and ev.group == group:
            if ev.deleted:
                held.pop(ev.member_id, None)
            else:
                held[ev.member_id] = len(ev.assigned)
    return held


def produce_backlog(bootstrap: str, topic: str, per_partition: Callable[[int], int]) -> None:
    """`per_partition(p)` more records to each partition of `topic` (a backlog nobody consumes when
    the share group is empty: its share-partition start offsets stay, its lag grows by as many)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for i in range(per_partition(p)):
            producer.produce(topic, value=b"late%d" % i, partition=p)
    producer.flush(30)


def run_share_group(
    bootstrap: str,
    group: str,
    topic: str,
    during: Callable[[], Any] | None = None,
    after: Callable[[], Any] | None = None,
) -> ShareRun:
    """sc-1 joins and takes every partition; sc-2 joins and they share them; sc-2 leaves, then sc-1.
    `during` is called while both members share the partitions (after `mid_ms`), the group steady
    (both members keep polling meanwhile); what it returns is the run's `during`. `after` is called
    once the group is empty (before its records are read back); what it returns is the run's
    `after`."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        f.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(60):
        producer.produce(topic, value=b"m%d" % i, partition=i % PARTITIONS)
    producer.flush(30)
    marks = {}
    one = Member(bootstrap, group, topic, "sc-1")
    one.start()
    marks["one_joined"] = int(time.time() * 1000)
    _until(
        lambda: sorted(_assigned(bootstrap, group).values()) == [PARTITIONS], 60, "sc-1 with every partition"
    )
    two = Member(bootstrap, group, topic, "sc-2")
    two.start()
    _until(lambda: sorted(_assigned(bootstrap, group).values()) == [1, 2], 60, "sc-1 and sc-2 sharing")
    time.sleep(1.0)
    mid = int(time.time() * 1000)
    seen = during() if during is not None else None
    time.sleep(1.0)
    two.halt.set()
    two.join(30)
    _until(lambda: list(_assigned(bootstrap, group).values()) == [PARTITIONS], 60, "sc-1 alone again")
    one.halt.set()
    one.join(30)
    _until(lambda: not _assigned(bootstrap, group), 60, "an empty group")
    later = after() if after is not None else None
    return ShareRun(read_group_records(bootstrap, group), mid, marks, seen, later)
