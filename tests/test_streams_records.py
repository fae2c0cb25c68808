"""A KIP-1071 streams group rebuilt from its own records in __consumer_offsets (types 17, 19-23), in
the order Kafka's GroupMetadataManager writes them (a member's records first, then the epoch it
leads to, then the target assignment, then each member's current assignment): every epoch with who
joined or left, the states StreamsGroup moves through, each member's tasks and the partitions they
read. The records go through the wire codec (encoded, then decoded as the collector decodes them).
The same against a real Kafka Streams application is in test_streams_groups.py."""

from __future__ import annotations

from typing import Any

from collectors.codec import records as r
from collectors.codec.decoder import decode_record
from collectors.codec.encoder import encode_record
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import from_offsets_record

GROUP = "wordcount"
ALL = {"0": [0, 1], "1": [0, 1]}  # subtopology -> partitions: four tasks


class Coordinator:
    """Writes a streams group's records as Kafka's coordinator does, into a GroupEngine."""

    def __init__(self) -> None:
        self.engine = GroupEngine(GROUP)
        self.ts = 1_000_000
        self.offset = 0
        self.states: list[str] = []

    def write(self, record_type: int, key: Any, value: Any) -> None:
        self.ts += 10
        self.offset += 1
        rec = r.OffsetsRecord(3, self.offset, self.ts, record_type, key, None if value is None else 0, value)
        raw_key, raw_value = encode_record(rec)
        self.engine.apply(from_offsets_record(decode_record(raw_key, raw_value, 3, self.offset, self.ts)))
        self.states.append(self.engine.state)

    def member(self, mid: str, client: str, gone: bool = False) -> None:
        value = r.StreamsGroupMemberMetadataValue(
            None, None, client, "/10.0.0.1", 30000, 0, f"process-{client}", None, []
        )
        self.write(19, r.StreamsGroupMemberMetadataKey(GROUP, mid), None if gone else value)

    def epoch(self, epoch: int) -> None:
        self.write(17, r.StreamsGroupMetadataKey(GROUP), r.StreamsGroupMetadataValue(epoch, 12345))

    def topology(self) -> None:
        def info(name: str) -> r.StreamsTopicInfo:
            return r.StreamsTopicInfo(name, 0, 0, [])

        subs = [
            r.Subtopology("0", ["words"], [], [], ["wordcount-repartition"], [], []),
            r.Subtopology(
                "1", [], [], [info("wordcount-store-changelog")], [], [info("wordcount-repartition")], []
            ),
        ]
        self.write(23, r.StreamsGroupTopologyKey(GROUP), r.StreamsGroupTopologyValue(0, subs))

    def target(self, epoch: int, tasks: dict[str, dict[str, list[int]] | None]) -> None:
        for mid, held in tasks.items():
            value = None if held is None else r.StreamsGroupTargetAssignmentMemberValue(_ids(held), [], [])
            self.write(21, r.StreamsGroupTargetAssignmentMemberKey(GROUP, mid), value)
        self.write(
            20,
            r.StreamsGroupTargetAssignmentMetadataKey(GROUP),
            r.StreamsGroupTargetAssignmentMetadataValue(epoch),
        )

    def current(
        self, mid: str, epoch: int, previous: int, held: dict[str, list[int]] | None, state: int = 1
    ) -> None:
        """A member's current assignment; state as Kafka's streams MemberState numbers it (1 stable,
        2 unrevoked tasks)."""
        value = (
            None
            if held is None
            else r.StreamsGroupCurrentMemberAssignmentValue(
                epoch, previous, state, _ids(held), [], [], [], [], []
            )
        )
        self.write(22, r.StreamsGroupCurrentMemberAssignmentKey(GROUP, mid), value)

    def first_member(self) -> Coordinator:
        """streams-1 (member A) joins the new group with its topology: epoch 2, every task its own,
        taken at once."""
        self.member("A", "streams-1")
        self.topology()
        self.epoch(2)
        self.target(2, {"A": ALL})
        self.current("A", 2, 0, ALL)
        return self

    def doc(self) -> dict[str, Any]:
        return self.engine.document_json(self.ts)


def _ids(held: dict[str, list[int]]) -> list[r.TaskIds]:
    return [r.TaskIds(sub, parts) for sub, parts in sorted(held.items())]


def test_a_streams_group_from_its_records_join_join_leave() -> None:
    c = Coordinator()
    # streams-1 joins a new group with its topology: epoch 2 (Kafka 4.1+), every task its own
    c.member("A", "streams-1")
    c.topology()
    c.epoch(2)
    assert c.engine.state == "Assigning"
    c.target(2, {"A": ALL})
    assert c.engine.state == "Reconciling"  # A has not taken its tasks yet
    c.current("A", 2, 0, ALL)
    assert c.engine.state == "Stable"
    # streams-2 joins: epoch 3, the tasks split, A gives up subtopology 1's before B takes them
    c.member("B", "streams-2")
    c.epoch(3)
    c.target(3, {"A": {"0": [0, 1]}, "B": {"1": [0, 1]}})
    c.current("A", 2, 2, ALL, state=2)  # A must give up subtopology 1's tasks first
    assert c.doc()["members"][0]["state"] == "unrevoked_tasks" and c.engine.state == "Reconciling"
    c.current("A", 3, 2, {"0": [0, 1]})
    assert c.engine.state == "Reconciling"  # B still at epoch 0
    c.current("B", 3, 0, {"1": [0, 1]})
    mid = c.doc()
    assert mid["state"] == "Stable" and mid["type"] == "streams" and mid["protocol_type"] == "streams"
    members = {m["member_id"]: m for m in mid["members"]}
    assert members["A"]["tasks"]["active"] == ["0_0", "0_1"]
    assert members["B"]["tasks"]["active"] == ["1_0", "1_1"]
    assert members["B"]["target_tasks"]["active"] == ["1_0", "1_1"]
    assert (members["B"]["client_id"], members["B"]["process_id"]) == ("streams-2", "process-streams-2")
    assert members["A"]["assignment"] == [["words", 0], ["words", 1]]
    assert members["B"]["assignment"] == [["wordcount-repartition", 0], ["wordcount-repartition", 1]]
    assert [s["id"] for s in mid["topology"]["subtopologies"]] == ["0", "1"]
    # streams-1 leaves: its records go, then epoch 4; B holds every task
    c.current("A", 0, 0, None)
    c.write(21, r.StreamsGroupTargetAssignmentMemberKey(GROUP, "A"), None)
    c.member("A", "streams-1", gone=True)
    c.epoch(4)
    c.target(4, {"B": ALL})
    c.current("B", 4, 3, ALL)
    doc = c.doc()
    assert doc["state"] == "Stable" and [m["member_id"] for m in doc["members"]] == ["B"]
    assert doc["members"][0]["tasks"]["active"] == ["0_0", "0_1", "1_0", "1_1"]
    gens = [(g["generation"], g["cause"], g["members_joined"], g["members_left"]) for g in doc["generations"]]
    assert gens == [
        (2, "group_created", ["A"], []),
        (3, "member_joined", ["B"], []),
        (4, "member_left", [], ["A"]),
    ]
    assert (doc["group_epoch"], doc["assignment_epoch"]) == (4, 4)
    # the group deleted: its epoch tombstone
    c.write(17, r.StreamsGroupMetadataKey(GROUP), None)
    assert c.engine.state == "Dead"


def test_a_streams_describe_does_not_undo_what_the_records_say() -> None:
    """With the records read, StreamsGroupDescribe gives the broker's state (only it knows whether the
    topology's topics are ready) but not membership: a describe answered before a leave's records
    are read does not bring the member back."""
    from coordinator_model.evidence import from_describe_json

    c = Coordinator().first_member()
    c.member("B", "streams-2")
    c.epoch(3)
    c.target(3, {"A": {"0": [0, 1]}, "B": {"1": [0, 1]}})
    c.current("A", 3, 2, {"0": [0, 1]})
    c.current("B", 3, 0, {"1": [0, 1]})
    c.current("B", 0, 0, None)
    c.member("B", "streams-2", gone=True)
    c.epoch(4)
    stale = {
        "ts": c.ts - 100,
        "group": GROUP,
        "type": "streams",
        "state": "Stable",
        "assignor": "",
        "members": [
            {"member_id": mid, "client_id": mid, "host": "/10.0.0.1", "assignment": [], "member_epoch": 3}
            for mid in ("A", "B")
        ],
        "broker": {"state": "Stable", "group_epoch": 3, "assignment_epoch": 3, "members": []},
    }
    c.engine.apply(from_describe_json(stale))
    doc = c.doc()
    assert [m["member_id"] for m in doc["members"]] == ["A"]
    assert doc["state"] == "Assigning"  # epoch 4 not yet assigned; the describe is older than the records
    assert doc["generations"][-1]["members_left"] == ["B"]


def test_lag_per_task_is_the_lag_of_the_partitions_it_reads() -> None:
    """A task's lag: its source partition's plus its repartition partition's (subtopology 1 reads the
    repartition topic), owned by the member that runs it; printed by `groupscope model`."""
    from coordinator_model.evidence import EndOffset, OffsetCommit
    from coordinator_model.render import render_group
    from coordinator_model.streams import task_lags

    c = Coordinator().first_member()
    ends = {
        ("words", 0): 100,
        ("words", 1): 50,
        ("wordcount-repartition", 0): 30,
        ("wordcount-repartition", 1): 9,
    }
    committed = {("words", 0): 90, ("words", 1): 50, ("wordcount-repartition", 0): 25}  # 1 never committed
    for (topic, p), end in ends.items():
        c.engine.apply(EndOffset(c.ts, topic, p, end))
    for (topic, p), off in committed.items():
        c.engine.apply(OffsetCommit(c.ts, GROUP, topic, p, off, commit_timestamp=c.ts))
    doc = c.engine.document(c.ts)
    got = {t.task: (t.member_id, t.client_id, t.lag, t.partitions) for t in task_lags(doc)}
    assert got == {
        "0_0": ("A", "streams-1", 10, [("words", 0)]),
        "0_1": ("A", "streams-1", 0, [("words", 1)]),
        "1_0": ("A", "streams-1", 5, [("wordcount-repartition", 0)]),
        "1_1": ("A", "streams-1", None, [("wordcount-repartition", 1)]),  # no commit: no lag known
    }
    text = render_group(doc)
    assert "lag per task:" in text and "0_0 (streams-1): lag=10" in text, text
    # a classic group has no tasks
    assert task_lags(GroupEngine("plain").document(c.ts)) == []
