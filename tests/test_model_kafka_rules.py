"""Every rule Kafka's classic group metadata follows (GroupMetadata.scala and MemberMetadata.scala,
GroupCoordinator's heartbeat handling, GroupMetadataManager.partitionFor), with the examples of the
write-ups of that code; each checked on the code the model runs: the states and their moves
(states.py, `goto` in classic/rebalances.py), committed offsets and their expiry (offsets/), the
coordinator's member bookkeeping (classic/group_metadata.py)."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from conftest import capture_dirs
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from coordinator_model.classic.group_metadata import GroupMetadata, HeartbeatError, MemberMetadata
from coordinator_model.coordinator_partition import coordinator_partition, java_string_hash, kafka_utils_abs
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import GroupMetadataSnapshot, MemberSnapshot, OffsetCommit
from coordinator_model.offsets import OffsetState, OffsetStore
from coordinator_model.offsets.expiry import expiry_rule, remove_expired_offsets
from coordinator_model.states import (
    ConsumerGroupState,
    GroupState,
    IllegalStateTransition,
    assert_valid_transition,
    derive_consumer_group_state,
    legal_path,
)

S = GroupState
DAY = 24 * 3600 * 1000


def member(
    mid: str, protocols=("range",), instance: str | None = None, ptype="consumer", **kw
) -> MemberMetadata:
    return MemberMetadata(
        mid,
        "g",
        group_instance_id=instance,
        protocol_type=ptype,
        supported_protocols=[(p, b"") for p in protocols],
        **kw,
    )


def stable_group(*members: MemberMetadata, now: int = 0) -> GroupMetadata:
    g = GroupMetadata("g", now_ms=now)
    for m in members:
        g.add(m)
    g.prepare_rebalance("test", now)
    g.init_next_generation(now)
    g.complete_sync(now)
    return g


# -- states (GroupMetadata.transitionTo / validPreviousStates / canRebalance) ----------------------
LEGAL = {
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}


@pytest.mark.parametrize("target", list(S))
def test_each_state_carries_its_legal_previous_states(target: GroupState) -> None:
    assert target.valid_previous_states == LEGAL[target]
    for previous in S:
        if previous in LEGAL[target]:
            assert_valid_transition(previous, target)
        else:
            with pytest.raises(IllegalStateTransition):
                assert_valid_transition(previous, target)


def test_transition_to_refuses_illegal_moves_and_stamps_time() -> None:
    g = GroupMetadata("g", now_ms=5)
    with pytest.raises(IllegalStateTransition):
        g.transition_to(S.STABLE, 10)  # Empty -> Stable skips the rebalance
    assert g.is_(S.EMPTY) and g.current_state_timestamp == 5
    g.transition_to(S.PREPARING_REBALANCE, 20)
    assert g.is_(S.PREPARING_REBALANCE) and g.not_(S.EMPTY) and g.current_state_timestamp == 20
    g.transition_to(S.DEAD, 30)
    with pytest.raises(IllegalStateTransition):
        g.transition_to(S.EMPTY, 40)  # nothing leaves Dead


def test_the_models_state_machine_passes_the_states_kafka_never_records() -> None:
    eng = GroupEngine("g")
    eng.classic.goto("Empty", 5)
    eng.classic.goto("Stable", 10)  # Empty -> Stable skips the rebalance: its states are inferred
    assert eng.timeline == [
        ["Empty", 5, False],
        ["PreparingRebalance", 10, True],
        ["CompletingRebalance", 10, True],
        ["Stable", 10, False],
    ]
    eng.classic.goto("Empty", 50)
    assert eng.timeline[-2:] == [["PreparingRebalance", 50, True], ["Empty", 50, False]]
    assert eng.classic.empty_since == 50  # removeExpiredOffsets' base time while Empty
    eng.classic.goto("Dead", 60)
    eng.classic.goto("Empty", 70)  # nothing leaves Dead: the group id used again is a new group
    assert eng.timeline[-2:] == [["Dead", 60, False], ["Empty", 70, False]]
    assert eng.classic.generation is None and not eng.classic.generations


class ClassicTransitions(RuleBasedStateMachine):
    """Any sequence of moves of the model's classic state machine leaves a timeline of legal
    transitions (GroupMetadata.transitionTo's validPreviousStates), in time order."""

    def __init__(self) -> None:
        super().__init__()
        self.engine = GroupEngine("g")
        self.now = 0

    @rule(state=st.sampled_from([s.value for s in S]), dt=st.integers(-1000, 5000), again=st.booleans())
    def move(self, state: str, dt: int, again: bool) -> None:
        self.now += dt  # evidence may come late: the move is clamped to the last transition
        self.engine.classic.goto(state, self.now, again=again)
        assert self.engine.state == state

    @invariant()
    def every_move_is_legal_and_in_time_order(self) -> None:
        for (a, ta, _), (b, tb, _) in pairwise(self.engine.timeline):
            assert ta <= tb
            if a == "Dead" and b != "Dead":
                continue  # a new group under the same id
            assert S.parse(b).can_follow(S.parse(a)), (a, b)


ClassicTransitions.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
test_classic_transitions = ClassicTransitions.TestCase


@pytest.mark.parametrize("state", list(S))
def test_can_rebalance_only_from_stable_completing_or_empty(state: GroupState) -> None:
    g = GroupMetadata("g", initial_state=state)
    assert g.can_rebalance == (state in {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY})


def test_legal_path_fills_states_kafka_never_writes() -> None:
    assert legal_path(S.STABLE, S.STABLE) == [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE]
    assert legal_path(S.EMPTY, S.COMPLETING_REBALANCE) == [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE]
    assert legal_path(S.STABLE, S.EMPTY) == [S.PREPARING_REBALANCE, S.EMPTY]
    assert legal_path(S.DEAD, S.EMPTY) == []
    for a in S:
        for b in S:
            path = legal_path(a, b)
            prev = a
            for step in path:
                assert step.can_follow(prev)
                prev = step


# -- members (add/remove/leader, protocol type) ----------------------------------------------------
def test_first_member_sets_protocol_type_and_becomes_leader() -> None:
    g = GroupMetadata("g")
    g.add(member("m1", ptype="consumer"))
    assert g.protocol_type == "consumer" and g.leader_id == "m1"
    g.add(member("m2"))
    assert g.leader_id == "m1" and g.size == 2 and g.has("m2") and g.get("m2").member_id == "m2"
    with pytest.raises(ValueError):
        g.add(member("m3", ptype="connect"))  # protocol type must match the group's
    with pytest.raises(ValueError):
        g.add(member("m4", protocols=("roundrobin",)))  # supports none of the group's protocols


def test_removing_the_leader_elects_the_first_remaining_member() -> None:
    g = GroupMetadata("g")
    for mid in ("m1", "m2", "m3"):
        g.add(member(mid))
    g.remove("m2")
    assert g.leader_id == "m1"
    g.remove("m1")
    assert g.leader_id == "m3"
    g.remove("m3")
    assert g.leader_id is None and g.size == 0


def test_awaiting_join_count_follows_add_and_remove() -> None:
    g = GroupMetadata("g")
    g.add(member("m1", is_awaiting_join=True))
    g.add(member("m2"))
    assert g.num_members_awaiting_join == 1
    g.remove("m1")
    assert g.num_members_awaiting_join == 0


# -- protocol vote ---------------------------------------------------------------------------------
def test_vote_among_strategies_a_to_d_elects_b() -> None:
    g = GroupMetadata("g")
    g.add(member("1", protocols=("B", "A")))
    g.add(member("2", protocols=("A", "B", "C")))
    g.add(member("3", protocols=("D", "B", "A")))
    assert g.candidate_protocols() == {"A", "B"}
    votes = [g.get(m).vote(g.candidate_protocols()) for m in ("1", "2", "3")]
    assert votes == ["B", "A", "B"]
    assert g.select_protocol() == "B"


def test_member_order_of_preference_matters() -> None:
    assert member("x", protocols=("B", "A")).vote({"A", "B"}) == "B"
    assert member("y", protocols=("A", "B")).vote({"A", "B"}) == "A"


def test_select_protocol_of_an_empty_group_fails_and_votes_follow_removal() -> None:
    g = GroupMetadata("g")
    with pytest.raises(ValueError):
        g.select_protocol()
    g.add(member("p1", protocols=("roundrobin", "range")))
    g.add(member("j1", protocols=("range", "cooperative-sticky")))
    assert g.select_protocol() == "range"  # the only one both support
    g.remove("j1")
    assert g.select_protocol() == "roundrobin"  # back to the Python member's first choice


# -- pending and static members --------------------------------------------------------------------
def test_pending_member_becomes_a_member_when_it_rejoins_with_its_id() -> None:
    g = GroupMetadata("g")
    g.add_pending_member("m1-uuid")
    assert g.has_pending("m1-uuid") and not g.has("m1-uuid")
    g.add(member("m1-uuid"))
    assert not g.has_pending("m1-uuid") and g.has("m1-uuid")
    g.add_pending_member("m2-uuid")
    assert g.on_expire_heartbeat("m2-uuid", 1000, is_pending=True)
    assert not g.has_pending("m2-uuid")


def test_static_member_restart_keeps_its_place_and_fences_the_old_id() -> None:
    g = stable_group(member("inst-1-a", instance="inst-1"), member("inst-2-a", instance="inst-2"))
    gen = g.generation_id
    g.replace_static_member("inst-2", "inst-2-a", "inst-2-b")
    assert g.static_member_id("inst-2") == "inst-2-b" and g.has("inst-2-b") and not g.has("inst-2-a")
    assert g.generation_id == gen and g.is_(S.STABLE)  # no rebalance
    assert g.is_static_member_fenced("inst-2-a", "inst-2")
    assert g.handle_heartbeat("inst-2-a", "inst-2", gen, 10) is HeartbeatError.FENCED_INSTANCE_ID
    assert g.handle_heartbeat("inst-2-b", "inst-2", gen, 10) is HeartbeatError.NONE


# -- generations -----------------------------------------------------------------------------------
def test_generation_grows_by_one_per_completed_join_and_empty_groups_have_no_protocol() -> None:
    g = GroupMetadata("g")
    g.add(member("m1"))
    g.prepare_rebalance("join", 0)
    g.init_next_generation(1)
    assert (g.generation_id, g.state, g.protocol_name) == (1, S.COMPLETING_REBALANCE, "range")
    g.complete_sync(2)
    g.remove_member_and_update_group("m1", "leave", 3)
    assert g.is_(S.PREPARING_REBALANCE)
    g.init_next_generation(4)
    assert (g.generation_id, g.state, g.protocol_name) == (2, S.EMPTY, None)


# -- heartbeats (GroupCoordinator.handleHeartbeat / onExpireHeartbeat) -----------------------------
def test_heartbeat_response_by_state() -> None:
    g = GroupMetadata("g")
    g.add(member("m1", session_timeout_ms=6000))
    assert g.handle_heartbeat("m1", None, 0, 1) is HeartbeatError.UNKNOWN_MEMBER_ID  # Empty
    g.prepare_rebalance("join", 1)
    g.generation_id = 0
    assert g.handle_heartbeat("m1", None, 0, 2) is HeartbeatError.REBALANCE_IN_PROGRESS
    g.init_next_generation(3)
    assert g.handle_heartbeat("m1", None, 1, 4) is HeartbeatError.NONE  # CompletingRebalance
    assert g.get("m1").last_heartbeat_ms == 4  # the session timer was reset
    g.complete_sync(5)
    assert g.handle_heartbeat("m1", None, 1, 6) is HeartbeatError.NONE  # Stable
    assert g.handle_heartbeat("m1", None, 0, 7) is HeartbeatError.ILLEGAL_GENERATION
    assert g.handle_heartbeat("nobody", None, 1, 8) is HeartbeatError.UNKNOWN_MEMBER_ID
    g.transition_to(S.DEAD, 9)
    assert g.handle_heartbeat("m1", None, 1, 10) is HeartbeatError.COORDINATOR_NOT_AVAILABLE


def test_session_expiry_removes_the_member_and_starts_a_rebalance() -> None:
    g = stable_group(member("m1", session_timeout_ms=6000), member("m2", session_timeout_ms=6000))
    g.handle_heartbeat("m1", None, 1, 1000)
    g.handle_heartbeat("m2", None, 1, 4000)
    assert not g.on_expire_heartbeat("m1", 6999)  # not due yet
    assert g.expire_sessions(7000) == ["m1"]
    assert not g.has("m1") and g.is_(S.PREPARING_REBALANCE)
    assert g.rebalance_reason == "removing member m1 on heartbeat expiration"
    assert g.expire_sessions(10_000) == ["m2"]  # the last one: the join completes as an Empty generation
    assert g.is_(S.EMPTY) and g.generation_id == 2


def test_expiry_of_a_dead_group_does_nothing() -> None:
    g = stable_group(member("m1", session_timeout_ms=10))
    g.handle_heartbeat("m1", None, 1, 0)
    g.transition_to(S.DEAD, 1)
    assert not g.on_expire_heartbeat("m1", 100)


# -- committed offsets (GroupMetadata.onOffsetCommitAppend / removeExpiredOffsets) -----------------
def commit(ts: int, topic: str, part: int, offset: int, log_offset: int, expire: int = -1) -> OffsetCommit:
    return OffsetCommit(ts, "g", topic, part, offset, ts, -1, "", expire, log_offset)


def test_an_older_commit_record_never_overwrites_a_newer_one() -> None:
    eng = GroupEngine("g")
    eng.apply(commit(1, "t", 0, 500, log_offset=10))
    eng.apply(commit(2, "t", 0, 400, log_offset=7))  # applied later, but sits earlier in the log
    assert eng.offsets.committed[("t", 0)].offset == 500
    store = OffsetStore()
    assert store.commit(("t", 0), OffsetState(500, 1, 1, log_offset=10))
    assert not store.commit(("t", 0), OffsetState(400, 2, 2, log_offset=7))
    assert store.commit(("t", 0), OffsetState(600, 3, 3, log_offset=11))
    assert store.committed[("t", 0)].offset == 600


def record(ts: int, generation: int, members: tuple[str, ...], subscription=("t",)) -> GroupMetadataSnapshot:
    snapshots = tuple(MemberSnapshot(m, None, "c", "/h", 45_000, 300_000, subscription, ()) for m in members)
    return GroupMetadataSnapshot(
        ts, "g", False, "consumer", generation, "range" if members else None, members[0] if members else None,
        ts, snapshots,
    )  # fmt: skip


def test_offsets_expire_from_when_an_empty_group_became_empty() -> None:
    eng = GroupEngine("g", retention_ms=7 * DAY)
    eng.apply(record(0, 1, ("m1",)))
    eng.apply(commit(0, "t", 0, 5, log_offset=1))
    eng.apply(record(DAY, 2, ()))  # Empty at DAY
    assert eng.state == "Empty" and eng.next_offset_expiry() == 8 * DAY
    eng.advance(7 * DAY)  # 6 days after becoming Empty
    assert ("t", 0) in eng.offsets.committed
    eng.advance(8 * DAY)
    assert not eng.offsets.committed


def test_active_consumer_group_expires_only_topics_it_no_longer_subscribes_to() -> None:
    eng = GroupEngine("g", retention_ms=7 * DAY)
    eng.apply(record(0, 1, ("m1",), subscription=("kept",)))
    eng.apply(commit(0, "kept", 0, 5, log_offset=1))
    eng.apply(commit(0, "gone", 0, 5, log_offset=2))
    eng.advance(8 * DAY)
    assert eng.state == "Stable" and set(eng.offsets.committed) == {("kept", 0)}


def test_standalone_group_expires_from_commit_time_and_explicit_expire_timestamp_wins() -> None:
    eng = GroupEngine("g", retention_ms=7 * DAY)  # no protocol type: assign() + commit
    eng.apply(commit(DAY, "t", 0, 5, log_offset=1))
    eng.apply(commit(0, "t", 1, 5, log_offset=2, expire=DAY))
    assert eng.protocol_type is None
    eng.advance(DAY)
    assert set(eng.offsets.committed) == {("t", 0)}
    eng.advance(8 * DAY)
    assert not eng.offsets.committed


def test_other_protocol_types_keep_offsets_while_not_empty() -> None:
    assert expiry_rule("connect", "Stable", None, None) is None
    store = OffsetStore()
    store.commit(("t", 0), OffsetState(5, 0, 0, log_offset=1))
    rule = expiry_rule("connect", "Empty", DAY, None)
    assert rule is not None
    remove_expired_offsets(store, 7 * DAY, 7 * DAY, rule)
    assert ("t", 0) in store.committed  # Empty: from when it became Empty, not from the commit
    remove_expired_offsets(store, 8 * DAY, 7 * DAY, rule)
    assert not store.committed


# -- coordinator partition (GroupMetadataManager.partitionFor) ------------------------------------
def test_java_string_hash_and_utils_abs() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert kafka_utils_abs(-(2**31)) == 0 and kafka_utils_abs(-5) == 5
    assert coordinator_partition("polygenelubricants") == 0
    assert coordinator_partition("crl-060433a") == 25


def test_coordinator_partition_matches_the_real_broker() -> None:
    line = re.compile(r"partition=(\d+)\] .*?(?:group |Group |GroupId )\[?([\w.-]+)")
    seen = 0
    for folder in capture_dirs():
        for raw in (folder / "broker.log").read_text().splitlines():
            m = line.search(raw)
            if m and "deleted" not in raw:
                assert coordinator_partition(m.group(2)) == int(m.group(1)), raw
                seen += 1
    assert seen > 100


# -- KIP-848 state derivation ----------------------------------------------------------------------
def test_consumer_group_state_is_derived_like_kafka() -> None:
    assert derive_consumer_group_state(0, 5, 5, True) is ConsumerGroupState.EMPTY
    assert derive_consumer_group_state(2, 6, 5, True) is ConsumerGroupState.ASSIGNING
    assert derive_consumer_group_state(2, 6, 6, False) is ConsumerGroupState.RECONCILING
    assert derive_consumer_group_state(2, 6, 6, True) is ConsumerGroupState.STABLE
