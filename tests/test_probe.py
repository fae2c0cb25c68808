"""The heartbeat probe against the harness's real Apache Kafka broker: what a consumer's life emits, the
application's callbacks, and a telemetry broker that is down."""

from __future__ import annotations

import itertools
import json
import socket
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.probe import CgrpStats, MemberIdentity, ProbedConsumer, ProbeEvent, groupscope_probe
from coordinator_model.evidence import from_heartbeat_json


def _create_topics(bootstrap: str, *topics: tuple[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in topics]).values():
        f.result(10)


def _produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, str(i).encode(), partition=i % partitions)
    assert p.flush(10) == 0


def _read_events(bootstrap: str, topic: str, want: int = 1, timeout: float = 15.0) -> list[dict]:
    """Every event on the heartbeat topic (one partition), waiting until at least `want` arrived."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}", "enable.auto.commit": False}
    )
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    idle_since = time.monotonic()
    while time.monotonic() < deadline:
        m = c.poll(0.3)
        if m is None or m.error():
            if len(out) >= want and time.monotonic() - idle_since > 1.5:
                break
            continue
        idle_since = time.monotonic()
        ev = json.loads(m.value())
        assert m.key() == ev["group"].encode()  # keyed by group id
        out.append(ev)
    c.close()
    return out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


# ---- pure: the event schema ---------------------------------------------------------------------
_WHO = MemberIdentity("g", "c1", "h", None, 6000, 10000)


@settings(max_examples=100, deadline=None)
@given(
    event=st.sampled_from(["heartbeat", "join", "assigned", "revoked", "lost", "leave", "poll_stall"]),
    parts=st.lists(st.tuples(st.text(min_size=1, max_size=20), st.integers(0, 10_000)), max_size=20),
    instance=st.none() | st.text(min_size=1, max_size=10),
    state=st.none() | st.sampled_from(["steady", "wait-join", "wait-sync"]),
)
def test_event_json_is_what_the_model_reads(event, parts, instance, state):
    who = MemberIdentity("grp", "cid", "host", instance, 6000, 300000)
    stats = CgrpStats("up", state, 3)
    ev = ProbeEvent.make(who, "m-1", event, state=state, partitions=parts, stats=stats)
    back = from_heartbeat_json(json.loads(ev.to_json()))
    assert (back.event, back.member_id, back.group, back.group_instance_id) == (event, "m-1", "grp", instance)
    assert list(back.partitions) == [tuple(p) for p in parts]
    assert back.state == state and back.generation is None
    assert (back.session_timeout_ms, back.max_poll_interval_ms) == (6000, 300000)


def test_unknown_event_and_bad_statistics_are_rejected_cleanly():
    with pytest.raises(ValueError, match="unknown heartbeat event"):
        ProbeEvent.make(_WHO, "m", "dance")
    assert CgrpStats.from_stats_json("not json") is None
    assert CgrpStats.from_stats_json('{"name": "x"}') is None  # producer statistics: no cgrp section
    s = CgrpStats.from_stats_json('{"cgrp": {"state": "up", "join_state": "steady", "rebalance_cnt": 2}}')
    assert s == CgrpStats("up", "steady", 2, None, None)


# ---- against the broker -------------------------------------------------------------------------
@pytest.mark.servers
def test_probe_reports_a_consumer_life_and_keeps_app_callbacks(kafka_broker):
    bs = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    topic, hb_topic, group = f"probe-data-{run}", f"probe-hb-{run}", f"probe-life-{run}"
    _create_topics(bs, (topic, 3), (hb_topic, 1))
    _produce(bs, topic, 30, 3)

    calls: list[tuple[str, list[tuple[str, int]]]] = []
    stats_seen: list[str] = []

    def on_assign(c, parts):
        assert isinstance(c, Consumer)
        calls.append(("assign", sorted((p.topic, p.partition) for p in parts)))

    def on_revoke(c, parts):
        calls.append(("revoke", sorted((p.topic, p.partition) for p in parts)))

    def on_lost(c, parts):
        calls.append(("lost", sorted((p.topic, p.partition) for p in parts)))

    conf = {
        "bootstrap.servers": bs,
        "group.id": group,
        "client.id": "life",
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "max.poll.interval.ms": 6000,
        "statistics.interval.ms": 1000,
        "stats_cb": stats_seen.append,
        "groupscope.heartbeat.topic": hb_topic,
    }
    consumer = groupscope_probe(conf)  # the one line an application adds
    assert isinstance(consumer, Consumer)
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    got = 0
    deadline = time.monotonic() + 30
    while got < 30 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got += 1
    assert got == 30, "the probed consumer must consume like a plain one"
    first_member = consumer.memberid()

    # Stop polling past max.poll.interval.ms: the probe reports the stall at half of it, librdkafka
    # leaves the group at the full interval, and the next poll gets the partitions lost.
    time.sleep(7.5)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        consumer.memberid() not in (None, "", first_member) and calls and calls[-1][0] == "assign"
    ):
        consumer.poll(0.5)
    steady_until = time.monotonic() + 3.5  # a few heartbeats in the steady state
    while time.monotonic() < steady_until:
        consumer.poll(0.5)
    second_member = consumer.memberid()
    consumer.close()
    counters = consumer.probe_counters

    assert second_member and second_member != first_member
    assert [c[0] for c in calls][:1] == ["assign"] and ("lost", [(topic, 0), (topic, 1), (topic, 2)]) in calls
    assert calls[-1][0] == "revoke", "close revokes through the application's on_revoke"
    assert stats_seen and all(isinstance(s, str) for s in stats_seen), "the application's stats_cb still runs"

    events = [e for e in _read_events(bs, hb_topic, want=counters.delivered) if e["group"] == group]
    assert counters.errors == 0, counters.last_error
    assert counters.delivered == counters.emitted == len(events) and counters.dropped == 0
    for e in events:
        from_heartbeat_json(e)  # every event is valid for the model
        assert (e["client_id"], e["session_timeout_ms"], e["max_poll_interval_ms"]) == ("life", 6000, 6000)
        assert e["group_protocol"] == "classic"

    def kinds(member: str) -> list[str]:
        return [e["event"] for e in events if e["member_id"] == member and e["event"] != "heartbeat"]

    first, second = kinds(first_member), kinds(second_member)
    assert first[:2] == ["join", "assigned"], first
    assert first.index("poll_stall") < first.index("lost"), first
    assert second[:2] == ["join", "assigned"] and second[-2:] == ["leave", "revoked"], second
    by = {e["event"]: e for e in events if e["member_id"] == first_member}
    assert sorted(map(tuple, by["assigned"]["partitions"])) == [(topic, 0), (topic, 1), (topic, 2)]
    assert sorted(map(tuple, by["lost"]["partitions"])) == [(topic, 0), (topic, 1), (topic, 2)]

    stall = by["poll_stall"]["ts"]
    assigned = [e["ts"] for e in events if e["member_id"] == first_member and e["event"] == "assigned"][-1]
    assert stall > assigned

    beats = [e for e in events if e["event"] == "heartbeat"]
    timeline = " ".join(f"{e['ts'] % 100000}:{e['event']}:{e['state']}" for e in events)
    assert beats and any(e["state"] == "steady" for e in beats), timeline
    assert all(e.get("stats", {}).get("join_state") == e["state"] for e in beats if e["state"])
    ts = [e["ts"] for e in beats]
    assert all(b - a >= 950 for a, b in itertools.pairwise(ts)), "never more often than heartbeat.interval.ms"


@pytest.mark.servers
def test_unreachable_telemetry_never_blocks_or_breaks_the_consumer(kafka_broker):
    bs = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    topic, group = f"probe-down-{run}", f"probe-down-{run}"
    _create_topics(bs, (topic, 2))
    _produce(bs, topic, 40, 2)

    with ProbedConsumer(
        {
            "bootstrap.servers": bs,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
            "max.poll.interval.ms": 6000,
        },
        telemetry_conf={"bootstrap.servers": f"127.0.0.1:{_closed_port()}", "message.timeout.ms": 1500},
        queue_size=3,  # a tiny buffer, so the bound is exercised too
        close_timeout_s=1.0,
    ) as consumer:  # the context manager closes through the probe too
        consumer.subscribe([topic])
        got, slowest = 0, 0.0
        start = time.monotonic()
        while time.monotonic() - start < 12:
            t = time.monotonic()
            m = consumer.poll(0.1)
            slowest = max(slowest, time.monotonic() - t)
            if m is not None and not m.error():
                got += 1
            if got == 40 and time.monotonic() - start > 8:
                break
        t = time.monotonic()
    close_took = time.monotonic() - t
    c = consumer.probe_counters

    assert got == 40
    # A blocking probe would hold poll for message.timeout.ms or longer; a healthy poll(0.1) is ~0.1 s
    # plus a rebalance callback. The bound is generous on purpose: this checks "never blocks".
    assert slowest < 1.5, slowest
    assert close_took < 5.0, close_took
    assert c.delivered == 0 and c.dropped > 0 and c.emitted >= 3, c
    assert c.dropped_undeliverable + c.dropped_producer_full > 0, c
    assert c.emitted == c.dropped, "every event is accounted for once the probe is closed"
