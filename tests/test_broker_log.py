"""Broker group-coordinator log lines, Kafka 4.x (from the real captures) and 3.x (Kafka's own message
formats of kafka.coordinator.group.GroupCoordinator)."""

from __future__ import annotations

import pytest
from conftest import capture_dirs

from coordinator_model.broker_log import (
    adding_instance_id,
    cause_of_reason,
    parse_broker_log_line,
    parse_timestamp,
    reason_members,
)
from coordinator_model.errors import EvidenceError

P4 = "[2026-11-21 06:04:33,518] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=25] "
S4 = " (org.apache.kafka.coordinator.group.GroupMetadataManager)"
P3 = "[2023-05-02 10:11:12,345] INFO [GroupCoordinator 1]: "
S3 = " (kafka.coordinator.group.GroupCoordinator)"


def test_every_line_of_every_capture_parses() -> None:
    kinds: set[str] = set()
    for folder in capture_dirs():
        for line in (folder / "broker.log").read_text().splitlines():
            ev = parse_broker_log_line(line)
            assert ev is not None, line
            kinds.add(ev.kind)
    assert {"prepare", "stabilized", "assignment", "empty", "member_failed", "member_left", "member_added",
            "static_member_replaced", "groups_deleted", "group_epoch", "target_assignment",
            "consumer_member_fenced"} <= kinds  # fmt: skip


def test_kafka4_prepare_line() -> None:
    ev = parse_broker_log_line(
        P4 + "Preparing to rebalance group crl in state PreparingRebalance with old generation 3 "
        "(reason: explicit `LeaveGroup` request for (m2-42e3) members.)." + S4
    )
    assert (ev.kind, ev.group, ev.generation, ev.state) == ("prepare", "crl", 3, "PreparingRebalance")
    assert ev.reason == "explicit `LeaveGroup` request for (m2-42e3) members"
    assert ev.ts == parse_timestamp("2026-11-21 06:04:33,518") == 1795241073518
    assert reason_members(ev.reason)["left"] == ["m2-42e3"]
    assert cause_of_reason(ev.reason) == "member_left"


@pytest.mark.parametrize(
    ("message", "kind", "fields"),
    [
        (
            "Preparing to rebalance group g1 in state PreparingRebalance with old generation 4 "
            "(__consumer_offsets-7) (reason: Adding new member c-1 with group instance id None; "
            "client reason: x)",
            "prepare",
            {"group": "g1", "generation": 4},
        ),
        (
            "Preparing to rebalance group g1 with old generation 4 (__consumer_offsets-7)",
            "prepare",
            {"reason": None},
        ),
        (
            "Stabilized group g1 generation 5 (__consumer_offsets-7) with 3 members",
            "stabilized",
            {"member_count": 3},
        ),
        (
            "Assignment received from leader c-1 for group g1 for generation 5. The group has 3 members, "
            "1 of which are static.",
            "assignment",
            {"member_id": "c-1", "generation": 5},
        ),
        ("Group g1 with generation 6 is now empty (__consumer_offsets-7)", "empty", {"generation": 6}),
        (
            "Member c-2 in group g1 has failed, removing it from the group",
            "member_failed",
            {"member_id": "c-2"},
        ),
        (
            "Member c-3 has left group g1 through explicit `LeaveGroup`; "
            "client reason: the consumer is being closed",
            "member_left",
            {"member_id": "c-3", "reason": "the consumer is being closed"},
        ),
        (
            "Member[group.instance.id Some(i-5), member.id c-5] in group g1 has left, "
            "removing it from the group",
            "member_left",
            {"member_id": "c-5", "group_instance_id": "i-5"},
        ),
        (
            "Dynamic member with unknown member id joins group g1 in Stable state. "
            "Created a new member id c-6 and request the member to rejoin with this id.",
            "member_pending",
            {"member_id": "c-6"},
        ),
        (
            "Pending member c-4 in group g1 has been removed after session timeout expiration.",
            "pending_expired",
            {"member_id": "c-4"},
        ),
    ],
)
def test_kafka3_lines(message: str, kind: str, fields: dict) -> None:
    ev = parse_broker_log_line(P3 + message + S3)
    assert ev is not None and ev.kind == kind and ev.group == "g1"
    for k, v in fields.items():
        assert getattr(ev, k) == v


def test_kip848_lines() -> None:
    ev = parse_broker_log_line(P4 + "[GroupId k] Bumped group epoch to 7." + S4)
    assert (ev.kind, ev.group, ev.epoch) == ("group_epoch", "k", 7)
    ev = parse_broker_log_line(
        P4 + "[GroupId k] Computed a new target assignment for epoch 7 with 'range' assignor in 0ms." + S4
    )
    assert (ev.kind, ev.epoch, ev.assignor) == ("target_assignment", 7, "range")
    ev = parse_broker_log_line(
        P4 + "[GroupId k] Member Ab+c/d fenced from the group because the member session expired." + S4
    )
    assert (ev.kind, ev.member_id, ev.reason) == (
        "consumer_member_fenced",
        "Ab+c/d",
        "the member session expired.",
    )


def test_static_member_lines_and_deletion() -> None:
    ev = parse_broker_log_line(
        P4 + "Static member with groupInstanceId=inst-2 and unknown member id joins group s in Stable state. "
        "Replacing previously mapped member inst-2-a with this groupInstanceId." + S4
    )
    assert (ev.kind, ev.group_instance_id, ev.member_id) == ("static_member_replaced", "inst-2", "inst-2-a")
    ev = parse_broker_log_line(
        P4 + "The following groups were deleted: a, b. A total of 4 offsets were removed." + S4
    )
    assert ev.kind == "groups_deleted" and ev.groups == ("a", "b")
    assert (
        adding_instance_id("Adding new member x with group instance id inst-3; client reason: y") == "inst-3"
    )
    assert adding_instance_id("Adding new member x with group instance id null; client reason: y") is None
    assert (
        adding_instance_id("Adding new member x with group instance id Some(i-9); client reason: y") == "i-9"
    )
    assert adding_instance_id("Adding new member x with group instance id None; client reason: y") is None
    assert reason_members("Removing member c-1 on LeaveGroup")["left"] == ["c-1"]


def test_other_lines_are_ignored_and_broken_coordinator_lines_raise() -> None:
    assert (
        parse_broker_log_line("[2026-11-21 06:04:33,518] INFO [KafkaServer id=1] started (kafka.server)")
        is None
    )
    assert parse_broker_log_line("a stack trace line") is None
    assert parse_broker_log_line(P4 + "Loading group metadata for g with generation 3" + S4) is None
    with pytest.raises(EvidenceError):
        parse_broker_log_line(
            "[2026-13-45 99:04:33,518] INFO [GroupCoordinator id=1] Stabilized group g generation 1"
        )


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        ("removing member m on heartbeat expiration", "session_timeout"),
        ("Adding new member m with group instance id null", "member_joined"),
        ("explicit `LeaveGroup` request for (m) members.", "member_left"),
        ("Leader m re-joining group during Stable", "leader_rejoin"),
        ("Updating metadata for member m during Stable", "metadata_change"),
        ("consumer poll timeout has expired", "poll_timeout"),
        ("something new", "unknown"),
        (None, "unknown"),
    ],
)
def test_causes(reason: str | None, cause: str) -> None:
    assert cause_of_reason(reason) == cause
