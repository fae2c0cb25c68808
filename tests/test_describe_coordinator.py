"""Issue 34: `groupscope describe --state` printed "-" in its COORDINATOR (ID) column, the document
keeping only the coordinator's __consumer_offsets partition. The Admin poller's describe names the
coordinator node (DescribeConsumerGroups, DescribeGroups): its id, host and port go through the
evidence (DescribeSnapshot) into the document (GroupDocument.coordinator) and the CLI prints them as
kafka-consumer-groups.sh does, "host:port  (id)"; "-" only when no describe named one. Checked
against Kafka's own ConsumerGroupCommand on the harness's real broker."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.cli.main import cli
from collectors.storage.redis_store import RedisStore
from coordinator_model.document import CoordinatorDoc, GroupDocument
from coordinator_model.engine import GroupEngine
from coordinator_model.errors import EvidenceError
from coordinator_model.evidence import DescribeSnapshot, from_describe_json

NOW = 1_700_000_100_000


def _line(ts: int, coordinator: Any, group: str = "g") -> dict[str, Any]:
    return {
        "ts": ts,
        "group": group,
        "type": "classic",
        "state": "Stable",
        "assignor": "range",
        "coordinator": coordinator,
        "simple": False,
        "members": [
            {
                "member_id": "c1-3f2a",
                "group_instance_id": None,
                "client_id": "c1",
                "host": "/10.0.0.1",
                "assignment": [["t", 0]],
                "target_assignment": None,
            }
        ],
    }


def test_a_describe_names_the_coordinator_in_the_document() -> None:
    """The coordinator of the last describe that named one: a describe naming none (a share or
    streams group's, an older line) leaves it as it was; the document keeps it through its JSON."""
    eng = GroupEngine("g")
    eng.apply(from_describe_json(_line(1_000, None)))
    assert eng.document().coordinator is None and "coordinator" not in eng.document_json()
    eng.apply(from_describe_json(_line(2_000, {"id": 1, "host": "broker-1.kafka", "port": 9092})))
    doc = eng.document()
    assert doc.coordinator == CoordinatorDoc(1, "broker-1.kafka", 9092)
    assert doc.coordinator.label() == "broker-1.kafka:9092  (1)"  # Kafka's tool: two spaces
    assert doc.to_json()["coordinator"] == {"id": 1, "host": "broker-1.kafka", "port": 9092}
    assert GroupDocument.from_json(doc.to_json()) == doc
    # the coordinator moved (a broker restarted, the partition's leadership moved)
    eng.apply(from_describe_json(_line(3_000, {"id": 3, "host": "broker-3.kafka", "port": 9093})))
    assert eng.document().coordinator == CoordinatorDoc(3, "broker-3.kafka", 9093)
    eng.apply(from_describe_json(_line(4_000, None)))
    assert eng.document().coordinator == CoordinatorDoc(3, "broker-3.kafka", 9093)
    # a document stored before it was kept reads without it
    old = doc.to_json()
    del old["coordinator"]
    assert GroupDocument.from_json(old).coordinator is None


anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "id": anything | st.integers(-(2**40), 2**40),
            "host": anything,
            "port": anything | st.integers(-10, 70_000),
        },
    )
    | anything
)
def test_any_coordinator_field_is_a_node_or_none_or_evidence_error(coordinator: Any) -> None:
    """Whatever the admin topic's line says of its coordinator (it is a topic anyone allowed to
    write could write): a node the document can print, nothing, or one EvidenceError (a dead letter),
    never another exception."""
    try:
        ev = from_describe_json(_line(1_000, coordinator))
    except EvidenceError:
        return
    assert isinstance(ev, DescribeSnapshot)
    eng = GroupEngine("g")
    eng.apply(ev)
    node = eng.document().coordinator
    if node is not None:
        assert isinstance(node.id, int) and -(2**31) <= node.id < 2**31
        assert isinstance(node.host, str) and 0 < len(node.host) <= 253
        assert isinstance(node.port, int) and 0 <= node.port <= 65535
        assert GroupDocument.from_json(json.loads(json.dumps(eng.document_json()))).coordinator == node


# ---- the CLI over a real Redis -----------------------------------------------------------------------
@pytest.fixture()
def url(redis_client, redis_server, monkeypatch: pytest.MonkeyPatch) -> str:
    for k in list(os.environ):
        if k.startswith("GROUPSCOPE_"):
            monkeypatch.delenv(k)
    known = GroupDocument(
        group="orders",
        state="Stable",
        protocol_type="consumer",
        protocol="range",
        coordinator=CoordinatorDoc(2, "kafka-2.internal.example", 19092),
        as_of=NOW,
    )
    unknown = GroupDocument(group="quiet", state="Empty", protocol_type="consumer", as_of=NOW)
    RedisStore(redis_client).write_groups([known.to_json(), unknown.to_json()], NOW)
    return redis_server.url


@pytest.mark.servers
def test_describe_state_prints_the_coordinator_as_kafka_does(url: str) -> None:
    r = CliRunner().invoke(cli, ["describe", "--all-groups", "--state", "--redis", url])
    assert r.exit_code == 0, r.output
    head, *rows = [ln for ln in r.output.splitlines() if ln.strip()]
    assert head.split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    assert rows[0].split() == ["orders", "kafka-2.internal.example:19092", "(2)", "range", "Stable", "0"]
    assert " kafka-2.internal.example:19092  (2) " in rows[0]
    assert rows[1].split() == ["quiet", "-", "-", "Empty", "0"]  # no describe named its coordinator
    # the columns line up under their headers, as Kafka's do
    assert rows[0].index("range") == head.index("ASSIGNMENT-STRATEGY")
    r = CliRunner().invoke(cli, ["describe", "--all-groups", "--state", "--json", "--redis", url])
    got = {x["group"]: x["coordinator"] for x in json.loads(r.stdout)["rows"]}
    assert got == {"orders": {"id": 2, "host": "kafka-2.internal.example", "port": 19092}, "quiet": None}


# ---- from a real broker's describe to the CLI, beside Kafka's own tool ---------------------------------
def _kafka_state_line(bs: str, group: str) -> str:
    """kafka-consumer-groups.sh --describe --state's line for `group` (Kafka's ConsumerGroupCommand)."""
    from collectors.demo.servers.kafka.broker import java_binary
    from collectors.demo.servers.kafka.jars import classpath

    out = subprocess.run(
        [
            java_binary(),
            "-cp",
            classpath(),
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            bs,
            "--describe",
            "--group",
            group,
            "--state",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout
    return next(ln for ln in out.splitlines() if ln.startswith(group + " "))


@pytest.mark.servers
def test_the_pollers_describe_carries_the_coordinator_kafka_names(
    kafka_broker, redis_client, redis_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A classic group (DescribeGroups through the protocol client) and a KIP-848 group (librdkafka's
    DescribeConsumerGroups) on the harness's broker: the Admin poller's lines, read as evidence, give
    each document the coordinator; `groupscope describe --state` prints it as Kafka's own
    kafka-consumer-groups.sh prints it for the same group."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    from collectors.pipeline.admin_poller import AdminPoller
    from coordinator_model.rebuild import rebuild

    for k in list(os.environ):
        if k.startswith("GROUPSCOPE_"):
            monkeypatch.delenv(k)
    bs = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    topic = f"coord-data-{suffix}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(15)
    groups = {"classic": f"coord-classic-{suffix}", "consumer": f"coord-k848-{suffix}"}
    conf = {"bootstrap.servers": bs, "auto.offset.reset": "earliest"}
    members = [
        Consumer({**conf, "group.id": groups["classic"], "client.id": "cc1", "session.timeout.ms": 6000}),
        Consumer({**conf, "group.id": groups["consumer"], "client.id": "kc1", "group.protocol": "consumer"}),
    ]
    for c in members:
        c.subscribe([topic])
    lines: list[dict[str, Any]] = []

    class Sink:
        def produce(self, topic: str, key: bytes, value: bytes, **_kw: object) -> None:
            lines.append(json.loads(value))

        def poll(self, _t: float) -> None: ...

        def flush(self, _t: float = 0) -> None: ...

    cfg = SimpleNamespace(admin_topic="unused", kafka={"bootstrap.servers": bs}, admin_resend_s=60.0)
    poller = AdminPoller(cfg, None)
    try:
        deadline = time.monotonic() + 90
        described: dict[str, dict[str, Any]] = {}
        while time.monotonic() < deadline:
            for c in members:
                c.poll(0.2)
            if all(c.assignment() for c in members):
                lines.clear()
                poller.poll_once(admin, Sink(), timeout_s=15)
                described = {x["group"]: x for x in lines if "members" in x and x["group"] in groups.values()}
                if len(described) == 2 and all(d["members"] for d in described.values()):
                    break
        assert len(described) == 2, lines
        assert described[groups["consumer"]]["type"] == "consumer"
        engines = rebuild([from_describe_json(x) for x in described.values()])
        docs = [engines[g].document() for g in groups.values()]
        kafka_lines = {g: _kafka_state_line(bs, g) for g in groups.values()}
    finally:
        poller.stop()
        for c in members:
            c.close()
    RedisStore(redis_client).write_groups([d.to_json() for d in docs], int(time.time() * 1000))
    for doc in docs:
        node = doc.coordinator
        assert node is not None, doc.group
        said = node.label()
        # Kafka's tool prints the same node for the group, the same way: "host:port  (id)"
        assert re.search(rf"\s{re.escape(said)}\s", kafka_lines[doc.group]), (said, kafka_lines[doc.group])
        r = CliRunner().invoke(
            cli, ["describe", "--group", doc.group, "--state", "--redis", redis_server.url]
        )
        assert r.exit_code == 0, r.output
        row = [ln for ln in r.output.splitlines() if ln.startswith(doc.group + " ")]
        assert row and f" {said} " in row[0], (said, r.output)


def test_share_and_streams_describes_name_their_coordinator_too() -> None:
    """ShareGroupDescribe and StreamsGroupDescribe go to each group's coordinator (FindCoordinator):
    their lines say which one answered, as the classic and KIP-848 lines do."""
    from collectors.kafka_protocol.coordinators import Node
    from collectors.pipeline.admin_lines import share_describe_json, streams_describe_json

    node = Node(3, "broker-3.internal", 9094)
    share = share_describe_json("s", {"state": "Stable", "assignor": "simple", "members": []}, 1_000, node)
    streams = streams_describe_json("t", {"state": "Empty", "topology": None, "members": []}, 1_000, node)
    for line in (share, streams):
        ev = from_describe_json(line)
        assert (ev.coordinator_id, ev.coordinator_host, ev.coordinator_port) == (3, "broker-3.internal", 9094)
    assert (
        share_describe_json("s", {"state": "Empty", "assignor": "simple", "members": []}, 1)["coordinator"]
        is None
    )
