"""KIP-1071 streams groups: StreamsGroupDescribe's answer read into the describe line, the model and
the document (state as Kafka names it, epochs, members with their tasks, the topology, the
topic-partitions the tasks read); the live tests against a real Kafka Streams application are at the
end of this file."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.kafka_protocol import streams_broker_block
from collectors.pipeline.admin_lines import streams_describe_json, task_partitions
from coordinator_model.document import GroupDocument
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import CommittedSnapshot, EvidenceError, from_describe_json
from coordinator_model.render import render_group

APP = "wordcount"


def task_ids(sub: str, parts: list[int]) -> dict[str, Any]:
    return {"subtopology_id": sub, "partitions": parts}


def assignment(active: list[dict[str, Any]], standby: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"active_tasks": active, "standby_tasks": standby or [], "warmup_tasks": []}


def described(
    state: str, epoch: int, members: list[tuple[str, list[int], list[int]]], ready: bool = True
) -> dict:
    """A decoded StreamsGroupDescribe DescribedGroup: a word count's two subtopologies (0 reads the
    input and repartitions by word, 1 reads the repartition topic and counts in a store); each
    member (id, subtopology-0 partitions, subtopology-1 partitions)."""
    info = {"partitions": 0, "replication_factor": 0, "topic_configs": []}
    subs = [
        {
            "subtopology_id": "0",
            "source_topics": ["lines"],
            "repartition_sink_topics": [f"{APP}-words-repartition"],
            "state_changelog_topics": [],
            "repartition_source_topics": [],
        },
        {
            "subtopology_id": "1",
            "source_topics": [],
            "repartition_sink_topics": [],
            "state_changelog_topics": [{"name": f"{APP}-counts-changelog", **info}],
            "repartition_source_topics": [{"name": f"{APP}-words-repartition", **info}],
        },
    ]
    return {
        "error_code": 0,
        "error_message": None,
        "group_id": APP,
        "group_state": state,
        "group_epoch": epoch,
        "assignment_epoch": epoch,
        "topology": {"epoch": 0, "subtopologies": subs if ready else None},
        "members": [
            {
                "member_id": mid,
                "member_epoch": epoch,
                "instance_id": None,
                "rack_id": None,
                "client_id": f"{mid}-client",
                "client_host": "/127.0.0.1",
                "topology_epoch": 0,
                "process_id": f"process-{mid}",
                "user_endpoint": None,
                "client_tags": [],
                "task_offsets": [],
                "task_end_offsets": [],
                "assignment": assignment([task_ids("0", p0), task_ids("1", p1)], [task_ids("1", [9])]),
                "target_assignment": assignment([task_ids("0", p0), task_ids("1", p1)]),
                "is_classic": False,
            }
            for mid, p0, p1 in members
        ],
        "authorized_operations": -(2**31),
    }


def from_records(bootstrap: str, group: str) -> dict[str, Any]:
    """The group's document rebuilt from its coordinator partition of __consumer_offsets alone."""
    from share_scenario import read_group_records

    from collectors.capture import offsets_line_to_evidence
    from coordinator_model.rebuild import rebuild

    engines = rebuild([offsets_line_to_evidence(x) for x in read_group_records(bootstrap, group)])
    return engines[group].document_json() if group in engines else {"state": None, "members": []}


def line(group: dict, ts: int) -> dict[str, Any]:
    return streams_describe_json(APP, streams_broker_block(group), ts)


def test_a_streams_group_is_its_own_kind_with_kafkas_states_tasks_and_topology() -> None:
    eng = GroupEngine(APP)
    # its commits come first: a group that only commits reads as classic until it is described
    eng.apply(CommittedSnapshot(900, APP, (("lines", 0, 10), ("lines", 1, 12))))
    eng.apply(from_describe_json(line(described("NotReady", 1, [("a", [], [])], ready=False), 1_000)))
    doc = eng.document(1_000)
    assert doc.type == "streams" and doc.state == "NotReady" and doc.modern
    assert doc.topology is not None and doc.topology.subtopologies is None
    eng.apply(
        from_describe_json(line(described("Reconciling", 3, [("a", [0], [0]), ("b", [1], [1])]), 2_000))
    )
    eng.apply(from_describe_json(line(described("Stable", 3, [("a", [0], [0]), ("b", [1], [1])]), 3_000)))
    doc = eng.document(3_000)
    assert doc.state == "Stable" and doc.group_epoch == 3 and doc.assignment_epoch == 3
    assert [s.state for s in doc.timeline] == ["NotReady", "Reconciling", "Stable"]
    a = doc.member_by_id()["a"]
    assert a.tasks is not None and a.tasks.active == ["0_0", "1_0"] and a.tasks.standby == ["1_9"]
    assert a.process_id == "process-a" and a.client_id == "a-client"
    # its assignment is what its active tasks read: the input and the repartition topic
    assert sorted(a.assignment) == [("lines", 0), (f"{APP}-words-repartition", 0)]
    subs = {s.id: s for s in doc.topology.subtopologies}
    assert subs["1"].changelog_topics == [f"{APP}-counts-changelog"]
    assert subs["1"].repartition_source_topics == [f"{APP}-words-repartition"]
    # member b leaves: the next describe's epoch says a new epoch, and the member left
    eng.apply(from_describe_json(line(described("Stable", 5, [("a", [0, 1], [0, 1])]), 4_000)))
    doc = eng.document(4_000)
    assert list(doc.member_by_id()) == ["a"]
    assert doc.generations[-1].generation == 5 and "b" in doc.generations[-1].members_left
    assert [(o.topic, o.partition, o.offset) for o in doc.offsets] == [("lines", 0, 10), ("lines", 1, 12)]
    text = render_group(doc)  # what `groupscope group NAME` prints
    assert "type=streams  state=Stable" in text and "group_epoch=5" in text
    assert "process=process-a tasks active[0_0,0_1,1_0,1_1] standby[1_9]" in text
    assert (
        f"subtopology 1: reads {APP}-words-repartition; repartitions to -; changelogs {APP}-counts-changelog"
        in text
    )
    back = GroupDocument.from_json(json.loads(json.dumps(doc.to_json())))
    assert back.to_json() == doc.to_json()
    # an Admin answer of another kind is not about a streams group
    other = {"ts": 5_000, "group": APP, "type": "classic", "state": "Dead", "members": []}
    eng.apply(from_describe_json(other))
    assert eng.document(5_000).state == "Stable"


def test_a_classic_and_a_kip848_groups_documents_carry_no_streams_fields() -> None:
    eng = GroupEngine("plain")
    eng.apply(CommittedSnapshot(900, "plain", (("t", 0, 1),)))
    d = eng.document(1_000).to_json()
    assert "topology" not in d and all("tasks" not in m for m in d["members"])


@settings(max_examples=50, deadline=None)
@given(
    tasks=st.lists(
        st.tuples(st.sampled_from(["0", "1", "2"]), st.lists(st.integers(0, 7), max_size=4)), max_size=4
    )
)
def test_tasks_read_the_partitions_of_their_subtopologys_topics(tasks: list[tuple[str, list[int]]]) -> None:
    topology = {
        "subtopologies": [
            {"id": "0", "source_topics": ["a", "b"], "repartition_source_topics": []},
            {"id": "1", "source_topics": [], "repartition_source_topics": ["r"]},
        ]
    }
    got = task_partitions([[s, ps] for s, ps in tasks], topology)
    want = sorted({(t, p) for s, ps in tasks for p in ps for t in {"0": ["a", "b"], "1": ["r"]}.get(s, [])})
    assert [tuple(x) for x in got] == want
    assert task_partitions([[s, ps] for s, ps in tasks], None) == []  # no topology yet: unknown


@pytest.mark.parametrize(
    "bad",
    [
        {"active": "0_0"},
        {"active": [["0", "x"]]},
        {"standby": [["0", [1, 2], 3]]},
        {"active": [["0", [2**40]]]},
    ],
)
def test_a_malformed_streams_block_is_an_evidence_error(bad: dict[str, Any]) -> None:
    good = line(described("Stable", 3, [("a", [0], [0])]), 1_000)
    good["broker"]["members"][0].update(bad)
    with pytest.raises(EvidenceError):
        from_describe_json(good)


# ---- live: a real Kafka Streams application on the embedded broker ---------------------------------
@pytest.mark.servers
def test_a_running_streams_application_is_what_kafka_streams_groups_sh_says(kafka_broker, tmp_path) -> None:
    """Two instances of the word count (collectors/demo/streams_app) on `group.protocol=streams`: the
    Admin poller lists the group as a streams group and describes it; the model's document has the
    broker's state, both members with the tasks kafka-streams-groups.sh shows, the topology with the
    repartition and changelog topics, and the committed offsets; one instance killed, the document
    follows the broker to one member holding every task."""
    from confluent_kafka.admin import AdminClient
    from test_streams_app import PARTITIONS, SESSION_MS, group_members, produce, streams_group, until

    from collectors.demo.streams_app import changelog_topic, repartition_topic
    from collectors.pipeline.admin_groups import list_groups
    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig

    bs = kafka_broker.bootstrap_servers
    group, source, _, apps = streams_group(bs, "gs-streams-doc", tmp_path)
    admin = AdminClient({"bootstrap.servers": bs})
    poller = AdminPoller(
        PipelineConfig(redis_url="redis://unused", checkpoint_dir="/tmp", kafka={"bootstrap.servers": bs}),
        store=None,
    )
    eng = GroupEngine(group)

    def document() -> GroupDocument:
        """The poller's typed listing and describe of the group, through the model."""
        listing = list_groups(admin, poller.link, set(), set(), 10)
        assert group in listing.streams, listing  # listed as a streams group
        lines, refused = poller.modern.describe(poller.link, [group], "streams", 10)
        assert not refused, refused
        eng.apply(from_describe_json(lines[group]))
        return eng.document(lines[group]["ts"])

    try:
        for app in apps:
            app.start()
        for app in apps:
            app.wait_running(60)
        broker = until(
            lambda: group_members(bs, group),
            45,
            "two members holding the four tasks",
            lambda m: (
                len(m) == 2
                and sorted(t for x in m.values() for t in x["active"]) == ["0_0", "0_1", "1_0", "1_1"]
            ),
        )
        doc = until(document, 30, "a Stable document", lambda d: d.state == "Stable" and len(d.members) == 2)
        # the group's own records alone (types 17, 19-23 in __consumer_offsets) say the same
        records = until(
            lambda: from_records(bs, group),
            30,
            "the records' two members holding the four tasks",
            lambda d: d["state"] == "Stable" and len(d["members"]) == 2,
        )
        assert records["type"] == "streams" and records["sources"] == ["offsets"]
        assert {m["member_id"] for m in records["members"]} == set(broker)
        for m in records["members"]:
            b = broker[m["member_id"]]
            assert sorted(m["tasks"]["active"]) == b["active"], (m, b)
            assert (m["member_epoch"], m["process_id"]) == (b["epoch"], b["process"]), (m, b)
            assert m["client_id"] == b["client_id"], (m, b)
        assert records["topology"] == doc.topology.to_json()
        assert sorted(tp for m in records["members"] for tp in map(tuple, m["assignment"])) == sorted(
            tp for m in doc.members for tp in m.assignment
        )
        assert records["generations"][0]["cause"] == "group_created"
        # each member's join is an epoch of its own; a later one can be the coordinator's (its internal
        # topics created: the metadata changed), never a leave
        joins = [g["members_joined"] for g in records["generations"] if g["members_joined"]]
        assert sorted(m for j in joins for m in j) == sorted(broker) and len(joins) == 2, joins
        assert not any(g["members_left"] for g in records["generations"])
        assert doc.type == "streams" and doc.group_epoch == doc.assignment_epoch
        got = {m.member_id: m for m in doc.members}
        assert set(got) == set(broker)
        for mid, b in broker.items():
            assert sorted(got[mid].tasks.active) == b["active"], (mid, got[mid].tasks, b)
            assert got[mid].member_epoch == b["epoch"] and got[mid].process_id == b["process"]
        subs = doc.topology.subtopologies
        assert [s.id for s in subs] == ["0", "1"]
        assert subs[0].source_topics == [source] and subs[0].repartition_sink_topics == [
            repartition_topic(group)
        ]
        assert subs[1].repartition_source_topics == [repartition_topic(group)]
        assert subs[1].changelog_topics == [changelog_topic(group)]
        # the partitions each member's active tasks read
        reads = sorted(tp for m in doc.members for tp in m.assignment)
        want = sorted(
            [(source, p) for p in range(PARTITIONS)]
            + [(repartition_topic(group), p) for p in range(PARTITIONS)]
        )
        assert reads == want
        produce(bs, source, ["alpha beta"] * 10)
        committed = until(
            lambda: poller.committed.fetch(poller.link, admin, [group], 10)[0].get(group) or [],
            30,
            "the application's commits, on every input partition",
            # both of its tasks commit, each in its own time: wait for every input partition's
            lambda c: (
                {t for t, _, _ in c} == {source, repartition_topic(group)}
                and {(t, p) for t, p, _ in c} >= {(source, p) for p in range(PARTITIONS)}
            ),
        )
        eng.apply(CommittedSnapshot(int(time.time() * 1000), group, tuple(committed)))
        apps[1].kill()
        survivor = next(mid for mid, b in broker.items() if b["client_id"].startswith(apps[0].client_id))
        doc = until(
            document,
            SESSION_MS / 1000 + 30,
            "one member holding every task",
            lambda d: [m.member_id for m in d.members] == [survivor] and d.state == "Stable",
        )
        assert sorted(doc.members[0].tasks.active) == ["0_0", "0_1", "1_0", "1_1"]
        assert any(survivor not in g.members_left and g.members_left for g in doc.generations)
        # the records: the killed member's leave is an epoch of its own, the survivor holds every task
        records = until(
            lambda: from_records(bs, group),
            30,
            "the records' one member",
            lambda d: [m["member_id"] for m in d["members"]] == [survivor] and d["state"] == "Stable",
        )
        assert sorted(records["members"][0]["tasks"]["active"]) == ["0_0", "0_1", "1_0", "1_1"]
        gone = set(broker) - {survivor}
        leaves = [g for g in records["generations"] if g["members_left"]]
        assert [set(g["members_left"]) for g in leaves] == [gone] and leaves[0]["cause"] == "member_left"
        assert {(o.topic, o.partition) for o in doc.offsets} >= {(source, p) for p in range(PARTITIONS)}
    finally:
        poller.link.close()
        for app in apps:
            app.close()
