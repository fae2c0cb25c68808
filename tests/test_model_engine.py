"""Evidence parsers, lag and Burrow evaluation, and engine behaviour that the captures do not isolate."""

from __future__ import annotations

import base64
import json
import pickle
from pathlib import Path

import pytest
from conftest import CAPTURES

from collectors.capture import offsets_line_to_evidence, read_capture
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import (
    CommittedSnapshot,
    DescribeSnapshot,
    EndOffset,
    EvidenceError,
    GroupMetadataSnapshot,
    HeartbeatEvent,
    OffsetCommit,
    from_describe_json,
    from_end_offset_json,
    from_heartbeat_json,
)
from coordinator_model.membership import Member
from coordinator_model.offsets import lag as lagmod
from coordinator_model.rebuild import rebuild

HB = {
    "ts": 1000,
    "group": "g",
    "member_id": "m1",
    "group_instance_id": None,
    "client_id": "c",
    "host": "/h",
    "generation": None,
    "event": "heartbeat",
    "state": "steady",
    "partitions": [],
    "session_timeout_ms": 6000,
    "max_poll_interval_ms": 10000,
}


def hb(ts: int, member: str, event: str = "heartbeat", parts=(), instance=None) -> HeartbeatEvent:
    return from_heartbeat_json(
        {**HB, "ts": ts, "member_id": member, "event": event, "partitions": [list(p) for p in parts],
         "group_instance_id": instance}
    )  # fmt: skip


# -- parsers ---------------------------------------------------------------------------------------------
def test_heartbeat_json_and_its_errors() -> None:
    ev = from_heartbeat_json({**HB, "event": "assigned", "partitions": [["t", 1]]})
    assert ev.partitions == (("t", 1),) and ev.session_timeout_ms == 6000 and ev.group == "g"
    for bad in (
        {**HB, "event": "dance"},
        {**HB, "ts": "soon"},
        {**HB, "partitions": [["t"]]},
        [],
        {"event": "join"},
    ):
        with pytest.raises(EvidenceError):
            from_heartbeat_json(bad)


def test_describe_and_committed_lines() -> None:
    lines = (CAPTURES / "kip848-lifecycle" / "describe.jsonl").read_text().splitlines()
    parsed = [from_describe_json(json.loads(line)) for line in lines]
    consumer = [p for p in parsed if isinstance(p, DescribeSnapshot) and p.broker_state]
    assert (
        consumer and consumer[0].group_epoch is not None and consumer[0].members[0].member_epoch is not None
    )
    assert any(isinstance(p, CommittedSnapshot) and p.offsets for p in parsed)
    with pytest.raises(EvidenceError):
        from_describe_json({"ts": 1, "group": "g", "committed": [["t", "x", 1]]})
    with pytest.raises(EvidenceError):
        from_describe_json({"ts": 1, "group": "g", "state": "Stable"})
    assert from_end_offset_json({"ts": 5, "topic": "t", "partition": 0, "end_offset": 9}).group is None
    with pytest.raises(EvidenceError):
        from_end_offset_json({"ts": 5, "topic": "t", "partition": 0})


def test_offsets_lines_decode_through_the_codec() -> None:
    first = json.loads((CAPTURES / "classic-range-lifecycle" / "offsets.jsonl").read_text().splitlines()[1])
    ev = offsets_line_to_evidence(first)
    assert isinstance(ev, GroupMetadataSnapshot) and ev.generation == 1 and ev.protocol == "range"
    assert (
        ev.members[0].subscription == ("crl-A-060433a", "crl-B-060433a")
        and len(ev.members[0].assignment) == 10
    )
    for bad in (
        {"key": "!!!", "value": None},
        {"key": base64.b64encode(b"\x00\x02\xff").decode(), "value": None},
        {},
    ):
        with pytest.raises(EvidenceError):
            offsets_line_to_evidence(bad)


def test_capture_reader_reports_bad_lines_and_keeps_the_rest(tmp_path: Path) -> None:
    good = (CAPTURES / "lag-ramp" / "heartbeats.jsonl").read_text().splitlines()[:3]
    (tmp_path / "heartbeats.jsonl").write_text(
        "\n".join([good[0], "{oops", good[1], '{"event": 1}', good[2]]) + "\n"
    )
    cap = read_capture(tmp_path)
    assert len(cap.evidence) == 3 and [e[1] for e in cap.errors] == [2, 4]


# -- lag ------------------------------------------------------------------------------------------------
def test_lag_in_offsets_and_seconds() -> None:
    h = lagmod.EndOffsetHistory()
    for ts, end in ((0, 0), (1000, 100), (2000, 200), (3000, 200), (4000, 300)):
        h.add(ts, end)
    assert lagmod.lag_offsets(150, h.latest) == 150
    assert lagmod.lag_offsets(400, h.latest) == 0  # never negative
    # offset 151 was written between t=1000 (end 100) and t=2000 (end 200): at ~1510 ms
    assert lagmod.lag_seconds(150, h, 5000) == pytest.approx((5000 - 1510) / 1000)
    assert lagmod.lag_seconds(300, h, 10**9) == 0.0  # consumed everything: no time lag on an idle topic
    assert lagmod.lag_seconds(None, h, 5000) is None


def _window(points: list[tuple[int, int, int]]) -> lagmod.PartitionWindow:
    w = lagmod.PartitionWindow()
    for ts, offset, end in points:
        w.add(lagmod.CommitSample(ts, offset, lagmod.lag_offsets(offset, end), end))
    return w


def test_burrow_rules() -> None:
    ev = lagmod.evaluate_partition
    steady = _window([(i * 1000, 100 * i, 100 * i + 5) for i in range(10)])
    assert ev(steady, 0, 10_000) == "OK"  # no lag now
    assert ev(steady, 5, 10_000) == "OK"  # keeps up
    growing = _window([(i * 1000, 10 * i, 100 * i + 5) for i in range(10)])
    assert ev(growing, 500, 10_000) == "WARN"  # lag never shrinks
    stalled = _window([(i * 1000, 10, 100 * i + 50) for i in range(10)])
    assert ev(stalled, 900, 10_000) == "STALL"  # commits keep coming but the offset does not move
    rewound = _window([(i * 1000, 10 * i if i != 5 else 1, 100 * i + 50) for i in range(10)])
    assert ev(rewound, 500, 10_000) == "REWIND"
    assert ev(growing, 500, 40_000) == "STOP"  # no commit for longer than the window spans
    marker = _window([(i * 1000, 99, 100) for i in range(10)])
    assert ev(marker, 1, 10_000) == "OK"  # a transaction marker the consumer can never consume
    assert lagmod.group_status(["OK", "WARN"]) == "WARN"
    assert lagmod.group_status(["OK", "STALL"]) == "ERR"


def test_lag_document_on_a_real_capture() -> None:
    cap = read_capture(CAPTURES / "lag-ramp")
    eng = rebuild(cap.evidence)["lag-060433j"]
    start = min(e.ts for e in cap.evidence if e.source == "offsets")
    growing = start + 35_000  # the member consumes 50 msg/s of 200: lag grows at every commit
    lag = rebuild(cap.evidence, at_ms=growing)["lag-060433j"].document_json(growing)["lag"]
    assert lag["total"] > 4000 and lag["max_seconds"] > 20
    assert all(p["lag"] >= 0 for p in lag["partitions"])
    assert lag["members"] and lag["members"][0]["lag"] == lag["total"]
    assert {p["status"] for p in lag["partitions"]} == {"WARN"} and lag["status"] == "WARN"
    drained = start + 75_000  # it sped up at t=40 and caught up around t=60
    lag = rebuild(cap.evidence, at_ms=drained)["lag-060433j"].document_json(drained)["lag"]
    assert lag["total"] < 100 and lag["status"] == "OK"
    final = eng.document_json()["lag"]
    assert final["total"] == 0 and final["max_seconds"] == 0.0


def test_partition_without_commit_says_so() -> None:
    eng = GroupEngine("g")
    eng.apply(DescribeSnapshot(1000, "g", "classic", "Stable", "range", ()))
    eng.apply(EndOffset(1000, "t", 0, 10))
    eng.apply(OffsetCommit(1000, "g", "t", 1, 5, 1000, log_offset=1))
    eng.members["m"] = Member("m", assignment=(("t", 0), ("t", 1)))
    rows = {p["partition"]: p for p in eng.document_json()["lag"]["partitions"]}
    assert (
        rows[0]["has_commit"] is False and rows[0]["committed"] is None and rows[0]["status"] == "NO_COMMIT"
    )
    assert rows[1]["has_commit"] is True


# -- engine ------------------------------------------------------------------------------------------------
def test_heartbeats_alone_see_a_session_expire_without_new_input() -> None:
    eng = GroupEngine("g")
    eng.apply_many([hb(1000, "m1", "join"), hb(1000, "m1", "assigned", [("t", 0)]), hb(3000, "m2", "join")])
    eng.apply_many([hb(3100, "m1", "assigned", [("t", 0)]), hb(3100, "m2", "assigned", [("t", 1)])])
    eng.apply_many([hb(t, "m1") for t in range(4000, 10000, 2000)] + [hb(4000, "m2")])
    assert set(eng.members) == {"m1", "m2"}
    eng.advance(9_999)
    assert "m2" in eng.members
    eng.advance(10_500)  # m2's last heartbeat was at 4000 with a 6 s session: no new input needed
    assert set(eng.members) == {"m1"}
    eng.apply_many([hb(t, "m1") for t in range(10000, 20000, 2000)])
    eng.advance(20_000)
    doc = eng.document_json()
    assert set(eng.members) == {"m1"}
    last = doc["generations"][-1]
    assert last["cause"] == "session_timeout" and last["start"] == 10_000 and "cause" in last["inferred"]
    assert doc["state"] == "PreparingRebalance"  # nothing told us the rebalance finished
    assert "generation" in last["inferred"] or last["end"] is None


def test_poll_stall_then_leave_is_a_poll_timeout_and_static_close_is_not_a_leave() -> None:
    eng = GroupEngine("g")
    eng.apply_many([hb(1000, "a", "join"), hb(1100, "a", "assigned", [("t", 0)]), hb(2000, "b", "join")])
    eng.apply_many([hb(2100, "b", "assigned", [("t", 1)]), hb(5000, "b", "poll_stall"), hb(6000, "a")])
    eng.apply(hb(9000, "b", "leave"))
    gens = eng.document_json()["generations"]
    assert gens[-1]["cause"] == "poll_timeout" and gens[-1]["members_left"] == ["b"]
    static = GroupEngine("s")
    static.apply_many(
        [hb(1000, "i1-a", "join", instance="i1"), hb(1100, "i1-a", "assigned", [("t", 0)], "i1")]
    )
    static.apply(hb(5000, "i1-a", "leave", instance="i1"))
    assert "i1-a" in static.members and static.state == "Stable"  # static members never send LeaveGroup
    static.apply(hb(7000, "i1-b", "join", instance="i1"))  # restarted: new id, same place, no rebalance
    assert set(static.members) == {"i1-b"} and static.state == "Stable"


def test_offset_commit_rules_in_the_engine() -> None:
    eng = GroupEngine("g")
    eng.apply(OffsetCommit(1000, "g", "t", 0, 50, 1000, log_offset=20))
    eng.apply(OffsetCommit(900, "g", "t", 0, 40, 900, log_offset=10))  # older record, read late
    assert eng.offsets.committed[("t", 0)].offset == 50
    eng.apply(OffsetCommit(2000, "g", "t", 0, None, log_offset=30))  # tombstone
    assert ("t", 0) not in eng.offsets.committed
    eng.apply(OffsetCommit(3000, "g", "t", 1, 7, 3000, log_offset=31))
    eng.advance(3000 + 7 * 24 * 3600 * 1000)  # a standalone group's commits expire from commit time
    assert eng.document_json()["offsets"] == [] and eng.document_json()["simple"] is True


def test_engine_is_picklable_compact_and_bounded() -> None:
    cap = read_capture(CAPTURES / "rebalance-storm")
    eng = rebuild(cap.evidence)["storm-060433f"]
    blob = pickle.dumps(eng)
    assert len(blob) < 64_000
    assert pickle.loads(blob).document_json() == eng.document_json()
    short = GroupEngine("storm-060433f", retention_ms=20_000)
    short.apply_many(e for e in cap.evidence if e.group in ("storm-060433f", None))
    short.advance(max(e.ts for e in cap.evidence))
    doc = short.document_json()
    assert len(doc["generations"]) < len(eng.document_json()["generations"])
    assert doc["timeline"][0]["start"] >= short.now - 20_000 - 5_000


def test_rebuild_fans_end_offsets_out_to_the_groups_reading_the_topic() -> None:
    evs = [
        OffsetCommit(1000, "a", "t", 0, 5, 1000, log_offset=1),
        OffsetCommit(1000, "b", "u", 0, 5, 1000, log_offset=2),
        EndOffset(1500, "t", 0, 9),
        EndOffset(1500, "u", 0, 7),
    ]
    docs = {g: e.document_json() for g, e in rebuild(evs).items()}
    assert docs["a"]["lag"]["total"] == 4 and docs["b"]["lag"]["total"] == 2
    assert rebuild(evs, at_ms=1200)["a"].document_json(1200)["lag"]["total"] is None  # no end offset yet


def test_kip848_group_from_records() -> None:
    cap = read_capture(CAPTURES / "kip848-lifecycle")
    part = [e for e in cap.evidence if e.source == "offsets"]
    engines = rebuild(part)
    doc = engines["k848-uniform-060433h"].document_json()
    assert doc["type"] == "consumer" and doc["state"] == "Empty" and doc["group_epoch"] == 10
    states = {r["state"] for r in doc["timeline"]}
    assert {"Reconciling", "Stable", "Empty"} <= states
    assert doc["generations"][0]["cause"] == "group_created"


def test_kip848_group_from_client_events_only() -> None:
    cap = read_capture(CAPTURES / "kip848-lifecycle")
    part = [e for e in cap.evidence if e.source == "heartbeats"]
    doc = rebuild(part)["k848-range-060433h"].document_json()
    assert doc["type"] == "consumer"  # KIP-848 member ids are bare base64 UUIDs
    assert doc["state"] == "Empty" and doc["group_epoch"] is None  # the SIGKILLed member's session expired
    assert any("client events only" in n for n in doc["inferred"])
    ev = from_heartbeat_json({**HB, "member_id": "O6bFJVdKREesa0Z4Y8so2A", "group_protocol": "consumer"})
    assert ev.group_protocol == "consumer"


def test_kip848_topic_ids_are_named_from_a_snapshot() -> None:
    from coordinator_model.evidence import (
        ConsumerMemberAssignment,
        ConsumerMemberSubscription,
        DescribedMember,
    )

    eng = GroupEngine("k")
    eng.apply(ConsumerMemberSubscription(1, "k", "M", False, subscribed_topics=("a", "b")))
    eng.apply(ConsumerMemberAssignment(2, "k", "M", False, 1, 0, 0, (("ID-A", 0), ("ID-A", 1), ("ID-B", 0))))
    assert eng.document_json()["members"][0]["assignment"][0][0] == "ID-A"  # two topics: ids stay ids for now
    eng.apply(DescribeSnapshot(3, "k", "consumer", "Stable", "uniform", (
        DescribedMember("M", None, "c", "/h", (("a", 0), ("a", 1), ("b", 0))),)))  # fmt: skip
    assert eng.document_json()["members"][0]["assignment"] == [["a", 0], ["a", 1], ["b", 0]]


def test_an_unfinished_rebalance_shows_as_such() -> None:
    from coordinator_model.evidence import BrokerLogEvent

    eng = GroupEngine("g")
    reason = "Adding new member m1 with group instance id null; client reason: x"
    eng.apply(BrokerLogEvent(1000, "g", "prepare", generation=0, reason=reason))
    eng.members["m1"].rebalance_timeout_ms = 30_000
    eng.advance(5_000)
    row = eng.document_json()["generations"][-1]
    assert row["end"] is None and row["in_progress_ms"] == 4_000 and not row["overdue"]
    assert row["generation"] == 1 and row["cause"] == "group_created"
    eng.advance(60_000)
    doc = eng.document_json()
    assert doc["generations"][-1]["overdue"] and doc["state"] == "PreparingRebalance"
    assert doc["timeline"][-1] == {
        "state": "PreparingRebalance",
        "start": 1000,
        "end": None,
        "inferred": False,
    }


def test_kip848_topic_ids_are_named_from_end_offsets_or_client_events() -> None:
    from coordinator_model.evidence import ConsumerMemberAssignment, ConsumerMemberSubscription

    def engine() -> GroupEngine:
        eng = GroupEngine("k")
        eng.apply(ConsumerMemberSubscription(1, "k", "M", False, subscribed_topics=("a", "b")))
        ids = (("IDA", 0), ("IDA", 1), ("IDA", 2), ("IDB", 0), ("IDB", 1))
        eng.apply(ConsumerMemberAssignment(2, "k", "M", False, 1, 0, 0, ids))
        return eng

    by_size = engine()
    for t, n in (("a", 3), ("b", 2)):
        for p in range(n):
            by_size.apply(EndOffset(3, t, p, 10))
    assert by_size.document_json()["members"][0]["assignment"] == [
        ["a", 0],
        ["a", 1],
        ["a", 2],
        ["b", 0],
        ["b", 1],
    ]
    by_client = engine()
    by_client.apply(hb(4, "M", "assigned", [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]))
    assert by_client.document_json()["members"][0]["assignment"][-1] == ["b", 1]


def test_admin_snapshots_alone_see_rebalances_between_polls() -> None:
    from coordinator_model.evidence import DescribedMember

    def snap(ts: int, *members: tuple[str, str | None, tuple]) -> DescribeSnapshot:
        return DescribeSnapshot(
            ts,
            "g",
            "classic",
            "Stable",
            "range",
            tuple(DescribedMember(m, i, m, "/h", a) for m, i, a in members),
        )

    eng = GroupEngine("g")
    eng.apply(snap(1000, ("a", "ia", (("t", 0), ("t", 1)))))
    eng.apply(snap(2000, ("a", "ia", (("t", 0), ("t", 1)))))
    eng.apply(snap(3000, ("a", "ia", (("t", 0),)), ("b", None, (("t", 1),))))  # b joined between polls
    gens = eng.document_json()["generations"]
    assert gens[-1]["cause"] == "member_joined" and gens[-1]["members_joined"] == ["b"]
    assert gens[-1]["start"] == 2500 and {"start", "cause", "stable"} <= set(gens[-1]["inferred"])
    eng.apply(snap(4000, ("a2", "ia", (("t", 0),)), ("b", None, (("t", 1),))))  # static restart: no rebalance
    assert len(eng.document_json()["generations"]) == len(gens)


# -- KIP-848 topic ids --------------------------------------------------------------------------------
def _k848_group_with_two_lookalike_topics() -> GroupEngine:
    """Records name topics by id only (Kafka 4.1+ writes no ConsumerGroupPartitionMetadata), and the
    two subscribed topics have the same partition count, so no guess can tell them apart."""
    from coordinator_model.evidence import (
        ConsumerGroupEpoch,
        ConsumerMemberAssignment,
        ConsumerMemberSubscription,
        ConsumerTargetAssignment,
    )

    e = GroupEngine("k")
    e.apply(ConsumerMemberSubscription(1000, "k", "m1", False, client_id="c", subscribed_topics=("a", "b")))
    e.apply(ConsumerGroupEpoch(1001, "k", 2))
    e.apply(ConsumerTargetAssignment(1002, "k", 2))
    assigned = (("ID-A", 0), ("ID-A", 1), ("ID-B", 0), ("ID-B", 1))
    e.apply(ConsumerMemberAssignment(1003, "k", "m1", False, member_epoch=2, assigned=assigned))
    return e


def _assignment(e: GroupEngine) -> list:
    return sorted(tuple(tp) for m in e.document_json()["members"] for tp in m["assignment"])


def test_a_commits_topic_id_names_a_kip848_assignment() -> None:
    e = _k848_group_with_two_lookalike_topics()
    assert {t for t, _ in _assignment(e)} == {"ID-A", "ID-B"}  # nothing says which is which yet
    e.apply(OffsetCommit(1100, "k", "a", 0, 5, commit_timestamp=1100, topic_id="ID-A", log_offset=10))
    e.apply(OffsetCommit(1101, "k", "b", 1, 5, commit_timestamp=1101, topic_id="ID-B", log_offset=11))
    assert _assignment(e) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


def test_the_brokers_describe_names_a_kip848_assignment() -> None:
    e = _k848_group_with_two_lookalike_topics()
    line = {
        "ts": 1200, "group": "k", "type": "consumer", "state": "Stable", "assignor": "uniform",
        "members": [{"member_id": "m1", "client_id": "c", "host": "/h",
                     "assignment": [["a", 0], ["a", 1], ["b", 0], ["b", 1]]}],
        "broker": {"state": "Stable", "group_epoch": 2, "assignment_epoch": 2, "assignor": "uniform",
                   "members": [{"member_id": "m1", "member_epoch": 2, "subscribed": ["a", "b"]}],
                   "topic_ids": {"ID-A": "a", "ID-B": "b"}},
    }  # fmt: skip
    ev = from_describe_json(line)
    assert ev.topic_ids == (("ID-A", "a"), ("ID-B", "b"))
    e.apply(ev)
    assert e.consumer.topic_names == {"ID-A": "a", "ID-B": "b"}
    assert _assignment(e) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


def test_a_kip848_bump_described_before_its_records_keeps_the_records_cause() -> None:
    """A describe answered after the coordinator bumped the epoch for a joining member can be read
    before the records of that bump (another batch): the epoch it shows first had no membership change
    known; the member's record, then the epoch record, make the join this bump's cause, at the
    records' time, and leave nothing pending for the next bump."""
    from coordinator_model.evidence import ConsumerGroupEpoch, ConsumerMemberSubscription

    e = _k848_group_with_two_lookalike_topics()  # m1 alone, epoch 2
    e.apply(
        DescribeSnapshot(
            2500, "k", "consumer", "Reconciling", "uniform", (), broker_state="Reconciling", group_epoch=3
        )
    )
    e.apply(ConsumerMemberSubscription(2400, "k", "m2", False, client_id="c", subscribed_topics=("a", "b")))
    e.apply(ConsumerGroupEpoch(2401, "k", 3))
    gens = {g["generation"]: g for g in e.document_json()["generations"]}
    assert gens[3]["cause"] == "member_joined" and gens[3]["members_joined"] == ["m2"]
    assert gens[3]["start"] == 2401 and "start" not in gens[3]["inferred"]
    assert gens[2]["end"] == 2401
    e.apply(ConsumerMemberSubscription(3000, "k", "m2", True))
    e.apply(ConsumerGroupEpoch(3001, "k", 4))
    gens = {g["generation"]: g for g in e.document_json()["generations"]}
    assert gens[4]["cause"] == "member_left" and gens[4]["members_joined"] == []


# -- a crash the broker's record reports before the session timer fires -----------------------------
def _gm(ts: int, generation: int, members: list[str]) -> GroupMetadataSnapshot:
    from coordinator_model.evidence import MemberSnapshot

    snaps = tuple(
        MemberSnapshot(m, None, "c", "/h", 6000, 30000, ("t",), (("t", i),)) for i, m in enumerate(members)
    )
    return GroupMetadataSnapshot(
        ts, "g", False, "consumer", generation, "range", members[0], ts, snaps, log_offset=generation
    )


def _group_with_two_probed_members(until: int) -> GroupEngine:
    """Both members heartbeat every second until 10 s; m1 goes on until `until`."""
    e = GroupEngine("g")
    e.apply(_gm(1000, 1, ["m1", "m2"]))
    for t in range(1000, until + 1, 1000):
        e.apply(hb(t, "m1"))
        if t <= 10_000:
            e.apply(hb(t, "m2"))
    return e


def test_a_member_silent_for_its_session_when_the_record_removes_it_was_expired() -> None:
    """m2 crashed after its heartbeat event at 10 s; the broker expired it and wrote generation 2 at
    15.5 s, before the model's own timer (16 s, the last event + 6 s) fired."""
    e = _group_with_two_probed_members(until=15_000)
    e.apply(_gm(15_500, 2, ["m1"]))
    gen2 = next(g for g in e.document_json()["generations"] if g["generation"] == 2)
    assert gen2["cause"] == "session_timeout" and gen2["members_left"] == ["m2"]


def test_a_member_that_left_cleanly_left() -> None:
    e = _group_with_two_probed_members(until=10_000)
    e.apply(hb(10_500, "m2", "leave"))
    e.apply(_gm(10_600, 2, ["m1"]))
    gen2 = next(g for g in e.document_json()["generations"] if g["generation"] == 2)
    assert gen2["cause"] == "member_left"


def test_next_offset_expiry_is_when_the_first_offset_expires():
    """An idle group is looked at again when its first offset expires (the pipeline's wake time):
    a standalone group's offsets from their commit, an explicit expire timestamp as it says."""
    from coordinator_model.evidence import OffsetCommit

    eng = GroupEngine("g", retention_ms=10_000)
    assert eng.next_offset_expiry() is None
    eng.apply(OffsetCommit(1000, "g", "t", 0, 5, 1000, -1, "", -1, 1))
    eng.apply(OffsetCommit(2000, "g", "t", 1, 5, 2000, -1, "", 4000, 2))
    assert eng.next_offset_expiry() == 4000
    eng.advance(4000)
    assert list(eng.offsets.committed) == [("t", 0)] and eng.next_offset_expiry() == 11_000
    eng.advance(11_000)
    assert not eng.offsets.committed and eng.next_offset_expiry() is None


@pytest.mark.parametrize("capture", ["lag-ramp", "kip848-lifecycle"])
def test_engines_pickled_by_an_older_version_load_and_run(capture: str) -> None:
    """The pipeline's Spark state holds pickled engines: those written before offsets/ and consumer/
    (commit 4327628: offsets, log ends and lag windows as three dicts on the engine, the KIP-848 fields
    on the engine too, lag.py at the package's top) load, document the same and keep running."""
    here = Path(__file__).parent / "fixtures" / "engine-pickles"
    engines = pickle.loads((here / f"{capture}-4327628.pkl").read_bytes())
    want = json.loads((here / f"{capture}-4327628.json").read_text())
    got = json.loads(json.dumps({g: e.document_json() for g, e in engines.items()}, default=str))
    assert got == want
    for eng in engines.values():
        assert eng.consumer.engine.members is eng.members and eng.classic.engine.members is eng.members
        if eng.type == "consumer":
            assert eng.consumer.epochs and eng.consumer.group_epoch is not None
        first = eng.next_offset_expiry()
        if first is not None:
            before = len(eng.offsets.committed)
            eng.advance(first)
            assert len(eng.offsets.committed) < before  # the first offset due expired
        again = pickle.loads(pickle.dumps(eng))
        assert again.document_json() == eng.document_json() and again.consumer.engine.members is again.members


def test_a_refused_describe_marks_the_group_until_a_describe_succeeds() -> None:
    """The Admin poller's line of a refusal (an ACL withholds Describe on the group): the document
    says what is missing and why, keeps when it began, and a later describe clears it; a refusal is
    not a source of what the group does."""
    eng = GroupEngine("g")
    line = {"ts": 1_000, "group": "g", "denied": "describe", "error": "GROUP_AUTHORIZATION_FAILED: no"}
    eng.apply(from_describe_json(line))
    eng.apply(from_describe_json({**line, "ts": 2_000}))
    doc = eng.document_json(2_000)
    assert doc["denied"] == {"describe": {"since": 1_000, "error": "GROUP_AUTHORIZATION_FAILED: no"}}
    assert any("refuses to describe" in n and "GROUP_AUTHORIZATION_FAILED" in n for n in doc["inferred"])
    assert "describe" not in doc["sources"]
    eng.apply(from_describe_json({"ts": 3_000, "group": "g", "state": "Empty", "members": []}))
    assert "denied" not in eng.document_json(3_000)
    # some topics' end offsets refused, then allowed again (the poller's line with an empty error)
    ends = {"ts": 4_000, "group": "g", "denied": "end_offsets", "error": "TOPIC_AUTHORIZATION_FAILED (t)"}
    eng.apply(from_describe_json(ends))
    assert eng.document_json(4_000)["denied"] == {"end_offsets": {"since": 4_000, "error": ends["error"]}}
    eng.apply(from_describe_json({**ends, "ts": 5_000, "error": ""}))
    assert "denied" not in eng.document_json(5_000)
    with pytest.raises(EvidenceError):
        from_describe_json({**line, "denied": "everything"})


def test_a_broker_prepare_older_than_the_last_row_never_puts_the_timeline_back() -> None:
    """Evidence out of time order (found by test_model_properties): a GroupMetadata record at t=1, a
    member's event and the broker's PreparingRebalance line at t=0. The broker's line replaces the
    inferred start, but not before the row it follows."""
    from coordinator_model.broker_log import BrokerLogEvent

    e = GroupEngine("g")
    e.apply(GroupMetadataSnapshot(1, "g", False, "consumer", 0, None, None, -2, (), -1))
    e.apply(HeartbeatEvent(0, "g", "m1", "heartbeat", session_timeout_ms=6000))
    e.apply(BrokerLogEvent(0, "g", "prepare", generation=0, reason="Adding new member m1; client reason: x"))
    rows = e.document_json()["timeline"]
    assert [(r["state"], r["start"]) for r in rows] == [("Empty", 1), ("PreparingRebalance", 1)]
