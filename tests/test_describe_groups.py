"""Classic groups described many a request (DescribeGroups through collectors.kafka_protocol) say,
field for field, what librdkafka's describe_consumer_groups says of them, on the harness's real
Kafka broker; and the Admin poller describes its classic groups that way (librdkafka asks one group a
request: at 50,000 groups a first poll's describes took 40 s)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from collectors.kafka_protocol import KafkaProtocolClient, Node
from collectors.pipeline.admin_lines import classic_describe_json, describe_json

pytestmark = pytest.mark.servers


def _without_ts(line: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k != "ts"}


def _librdkafka(bs: str, groups: list[str]) -> dict[str, dict[str, Any]]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bs})
    futs = admin.describe_consumer_groups(groups, request_timeout=15)
    return {g: _without_ts(describe_json(f.result(20), 0)) for g, f in futs.items()}


def _ours(bs: str, groups: list[str]) -> dict[str, dict[str, Any]]:
    coordinators: dict[str, Node] = {}
    with KafkaProtocolClient({"bootstrap.servers": bs}, timeout_s=15) as client:
        got = client.describe_groups(groups, coordinators=coordinators)
    return {g: _without_ts(classic_describe_json(v, coordinators[g], 0)) for g, v in got.items()}


@pytest.fixture(scope="module")
def classic_groups(kafka_broker):
    """A range group of a dynamic and a static member, a cooperative-sticky group of one, a group a
    member left (Empty), and a simple group (offsets committed, no member)."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bs = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    topic = f"dg-data-{suffix}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(15)
    names = {k: f"dg-{k}-{suffix}" for k in ("range", "coop", "left", "simple")}

    def member(group: str, client: str, **extra: str) -> Any:
        c = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": group,
                "client.id": client,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                **extra,
            }
        )
        c.subscribe([topic])
        return c

    members = [
        member(names["range"], "r1", **{"partition.assignment.strategy": "range"}),
        member(names["range"], "r2", **{"partition.assignment.strategy": "range", "group.instance.id": "r2"}),
        member(names["coop"], "c1", **{"partition.assignment.strategy": "cooperative-sticky"}),
    ]
    leaver = member(names["left"], "l1")
    req = ConsumerGroupTopicPartitions(names["simple"], [TopicPartition(topic, 0, 5)])
    admin.alter_consumer_group_offsets([req])[names["simple"]].result(15)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for c in [*members, leaver]:
            c.poll(0.1)
        states = {g: d["state"] for g, d in _librdkafka(bs, list(names.values())).items()}
        if all(states[names[k]] == "Stable" for k in ("range", "coop", "left")) and all(
            c.assignment() for c in members[:1] + members[2:]
        ):
            break
    leaver.close()
    yield bs, names
    for c in members:
        c.close()


def test_describe_groups_says_what_librdkafka_says(classic_groups):
    bs, names = classic_groups
    groups = [*names.values(), f"dg-nobody-{time.time_ns()}"]
    for _ in range(20):  # the members heartbeat meanwhile: compare two answers taken together
        theirs, ours = _librdkafka(bs, groups), _ours(bs, groups[:-1])
        if all(ours[g] == theirs[g] for g in ours):
            break
        time.sleep(0.5)
    for g in names.values():
        assert ours[g] == theirs[g], g
    assert ours[names["range"]]["state"] == "Stable" and len(ours[names["range"]]["members"]) == 2
    assert {m["group_instance_id"] for m in ours[names["range"]]["members"]} == {None, "r2"}
    assert ours[names["range"]]["assignor"] == "range"
    assert ours[names["coop"]]["assignor"] == "cooperative-sticky"
    assert sorted(p for m in ours[names["range"]]["members"] for _, p in m["assignment"]) == [0, 1, 2, 3]
    assert ours[names["left"]]["state"] == "Empty" and ours[names["left"]]["members"] == []
    assert ours[names["simple"]]["simple"] and ours[names["simple"]]["state"] == "Empty"


def test_many_groups_go_in_few_requests(classic_groups, monkeypatch):
    """600 groups (most unknown to the broker) in two requests to the one coordinator (500 a request):
    a group that does not exist is answered for, not retried."""
    from collectors.kafka_protocol.connection import BrokerConnection

    bs, names = classic_groups
    sent: list[str] = []
    real = BrokerConnection.send

    def counting(self, api, body, deadline):
        sent.append(api.name)
        return real(self, api, body, deadline)

    monkeypatch.setattr(BrokerConnection, "send", counting)
    groups = [*names.values(), *(f"dg-none-{i}" for i in range(596))]
    with KafkaProtocolClient({"bootstrap.servers": bs}, timeout_s=15) as client:
        got = client.describe_groups(groups)
    assert sent.count("DescribeGroups") == 2, sent
    assert set(got) == set(groups)
    assert not isinstance(got[names["range"]], Exception) and got[names["range"]]["group_state"] == "Stable"


def test_the_poller_describes_classic_groups_with_describe_groups(classic_groups, monkeypatch):
    """A full poll and a hot poll send the same describe lines librdkafka's answers make, and ask
    librdkafka's describe_consumer_groups about none of the classic groups."""
    from types import SimpleNamespace

    from confluent_kafka.admin import AdminClient

    from collectors.pipeline.admin_poller import AdminPoller

    bs, names = classic_groups
    lines: list[dict[str, Any]] = []

    class Sink:
        def produce(self, topic: str, key: bytes, value: bytes, **_kw: object) -> None:
            import json

            lines.append(json.loads(value))

        def poll(self, _t: float) -> None: ...

        def flush(self, _t: float = 0) -> None: ...

    asked: list[str] = []
    admin = AdminClient({"bootstrap.servers": bs})
    real = admin.describe_consumer_groups

    def spy(groups, **kw):
        asked.extend(groups)
        return real(groups, **kw)

    admin.describe_consumer_groups = spy  # type: ignore[method-assign]
    cfg = SimpleNamespace(admin_topic="unused", kafka={"bootstrap.servers": bs}, admin_resend_s=60.0)
    poller = AdminPoller(cfg, None)
    try:
        poller.poll_once(admin, Sink(), timeout_s=15)
        described = {x["group"]: _without_ts(x) for x in lines if "members" in x}
        theirs = _librdkafka(bs, list(names.values()))
        for g in names.values():
            assert described[g] == theirs[g], g
        assert not set(asked) & set(names.values()), asked
        seen: list[dict[str, Any]] = []
        real_send = poller._send_describe
        monkeypatch.setattr(
            poller, "_send_describe", lambda p, g, doc, ts: seen.append(doc) or real_send(p, g, doc, ts)
        )
        poller.hot.saw(names["range"], "PreparingRebalance", True, int(time.time() * 1000))
        poller.poll_hot(admin, Sink())
        assert [_without_ts(d) for d in seen] == [described[names["range"]]]
        assert not set(asked) & set(names.values()), asked
    finally:
        poller.stop()
