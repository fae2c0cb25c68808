"""Kafka's bookkeeping of a classic group on its coordinator, as Kafka's GroupMetadata.scala and
MemberMetadata.scala keep it, with the parts of GroupCoordinator.scala that drive them
(handleHeartbeat, onExpireHeartbeat, prepareRebalance): members and their leader, the protocol
vote, pending and static members, heartbeat answers and session expiry.

The model does not replay these: it reads their outcome (who the members are, which protocol won,
when a session expired) from the coordinator's records and log (classic/group.py). They are here so
that those rules are written once, in Kafka's words, and checked against Kafka's behaviour
(tests/test_model_kafka_rules.py). The states and their legal moves are the one table of states.py, as the
model's own state machine (`goto` in classic/rebalances.py) uses it; committed offsets and their expiry
live in offsets/ (store.py, expiry.py). Times are explicit `now_ms` arguments: nothing here reads a
clock.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from coordinator_model.offsets.expiry import CONSUMER_PROTOCOL_TYPE
from coordinator_model.states import GroupState, assert_valid_transition


class HeartbeatError(Enum):
    """The error code a Heartbeat response carries (Errors.*)."""

    NONE = "NONE"
    UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
    REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS"
    ILLEGAL_GENERATION = "ILLEGAL_GENERATION"
    COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"
    FENCED_INSTANCE_ID = "FENCED_INSTANCE_ID"


@dataclass(slots=True)
class MemberMetadata:
    member_id: str
    group_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    session_timeout_ms: int = 45_000
    protocol_type: str = CONSUMER_PROTOCOL_TYPE
    # Ordered: the member prefers earlier protocols (GroupMetadata.scala: [B, A] differs from [A, B]).
    supported_protocols: list[tuple[str, bytes]] = field(default_factory=list)
    assignment: bytes = b""
    is_awaiting_join: bool = False
    is_awaiting_sync: bool = False
    last_heartbeat_ms: int | None = None
    heartbeat_satisfied: bool = False
    is_new: bool = False

    @property
    def protocols(self) -> list[str]:
        return [name for name, _ in self.supported_protocols]

    def vote(self, candidates: set[str]) -> str:
        """MemberMetadata.vote: the first protocol of the member's own list that is a candidate."""
        for name in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"Member {self.member_id} does not support any of the candidate protocols")

    def session_expired(self, now_ms: int) -> bool:
        return (
            self.last_heartbeat_ms is not None and now_ms - self.last_heartbeat_ms >= self.session_timeout_ms
        )


class GroupMetadata:
    """One classic group on its coordinator (GroupMetadata.scala)."""

    def __init__(self, group_id: str, initial_state: GroupState = GroupState.EMPTY, now_ms: int = 0) -> None:
        self.group_id = group_id
        self.state = initial_state
        self.current_state_timestamp: int | None = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}  # insertion order = Scala's HashMap head
        self.pending_members: set[str] = set()
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.supported_protocols: Counter[str] = Counter()
        self.num_members_awaiting_join = 0
        self.rebalance_reason: str | None = None

    # -- state ------------------------------------------------------------------------------------
    def transition_to(self, target: GroupState, now_ms: int) -> None:
        assert_valid_transition(self.state, target)
        self.state = target
        self.current_state_timestamp = now_ms

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def not_(self, state: GroupState) -> bool:
        return self.state is not state

    @property
    def can_rebalance(self) -> bool:
        return GroupState.PREPARING_REBALANCE.can_follow(self.state)

    # -- members ----------------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def supports_protocols(self, member_protocol_type: str, protocols: list[str]) -> bool:
        if not self.members:
            return bool(member_protocol_type) and bool(protocols)
        return self.protocol_type == member_protocol_type and any(
            self.supported_protocols[p] == len(self.members) for p in protocols
        )

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if member.group_id != self.group_id:
            raise ValueError(f"member of {member.group_id!r} added to {self.group_id!r}")
        if self.protocol_type != member.protocol_type:
            raise ValueError(f"protocol type {member.protocol_type!r} differs from the group's")
        if not self.supports_protocols(member.protocol_type, member.protocols):
            raise ValueError(f"member {member.member_id} supports none of the group's protocols")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        for name in member.protocols:
            self.supported_protocols[name] += 1
        if member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            for name in member.protocols:
                self.supported_protocols[name] -= 1
            if member.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == (
                member_id
            ):
                del self.static_members[member.group_instance_id]
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)

    # pending members: a first JoinGroup without member id gets an id and must rejoin with it
    def add_pending_member(self, member_id: str) -> None:
        self.pending_members.add(member_id)

    def remove_pending_member(self, member_id: str) -> None:
        self.pending_members.discard(member_id)

    def has_pending(self, member_id: str) -> bool:
        return member_id in self.pending_members

    # static members (KIP-345)
    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> None:
        """A restarted static member gets a new member id but keeps its place (no rebalance)."""
        old = self.members.pop(old_member_id)
        old.member_id = new_member_id
        self.members[new_member_id] = old
        self.static_members[group_instance_id] = new_member_id
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A static instance whose registered member id is not the caller's: the caller is a zombie."""
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    # -- protocol vote ----------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports (support count equals the member count)."""
        n = len(self.members)
        return {name for name, votes in self.supported_protocols.items() if votes == n and n > 0}

    def select_protocol(self) -> str:
        if not self.members:
            raise ValueError("Cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        # Scala's groupBy/maxBy: most votes wins; Kafka leaves ties to HashMap order, we break them by name.
        return min(votes.items(), key=lambda kv: (-kv[1], kv[0]))[0]

    # -- rebalance --------------------------------------------------------------------------------
    def prepare_rebalance(self, reason: str, now_ms: int) -> None:
        self.rebalance_reason = reason
        self.transition_to(GroupState.PREPARING_REBALANCE, now_ms)

    def maybe_prepare_rebalance(self, reason: str, now_ms: int) -> bool:
        if self.can_rebalance:
            self.prepare_rebalance(reason, now_ms)
            return True
        return False

    def init_next_generation(self, now_ms: int) -> None:
        """onCompleteJoin: a new generation; Empty if nobody joined, else CompletingRebalance."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)

    def complete_sync(self, now_ms: int) -> None:
        """The leader's SyncGroup assignment is stored: the group is Stable."""
        self.transition_to(GroupState.STABLE, now_ms)

    def remove_member_and_update_group(self, member_id: str, reason: str, now_ms: int) -> None:
        self.remove(member_id)
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.prepare_rebalance(reason, now_ms)
        elif self.state is GroupState.PREPARING_REBALANCE and not self.members:
            # everyone that was expected to rejoin is gone: the join completes as an empty generation
            self.init_next_generation(now_ms)

    # -- heartbeats (GroupCoordinator.handleHeartbeat / onExpireHeartbeat) --------------------------
    def handle_heartbeat(
        self, member_id: str, group_instance_id: str | None, generation_id: int, now_ms: int
    ) -> HeartbeatError:
        if self.state is GroupState.DEAD:
            return HeartbeatError.COORDINATOR_NOT_AVAILABLE
        if self.is_static_member_fenced(member_id, group_instance_id):
            return HeartbeatError.FENCED_INSTANCE_ID
        if not self.has(member_id):
            return HeartbeatError.UNKNOWN_MEMBER_ID
        if generation_id != self.generation_id:
            return HeartbeatError.ILLEGAL_GENERATION
        if self.state is GroupState.EMPTY:
            return HeartbeatError.UNKNOWN_MEMBER_ID
        member = self.members[member_id]
        member.last_heartbeat_ms = now_ms  # completeAndScheduleNextHeartbeatExpiration
        member.heartbeat_satisfied = True
        if self.state is GroupState.PREPARING_REBALANCE:
            return HeartbeatError.REBALANCE_IN_PROGRESS
        return HeartbeatError.NONE

    def on_expire_heartbeat(self, member_id: str, now_ms: int, is_pending: bool = False) -> bool:
        """The session timer of a member fired. True when the member was removed."""
        if self.state is GroupState.DEAD:
            return False
        if is_pending:
            self.remove_pending_member(member_id)
            return True
        if not self.has(member_id):
            return False
        member = self.members[member_id]
        if not member.session_expired(now_ms):
            return False
        self.remove_member_and_update_group(
            member_id, f"removing member {member_id} on heartbeat expiration", now_ms
        )
        return True

    def expire_sessions(self, now_ms: int) -> list[str]:
        """Fire every member session timer that is due at `now_ms`."""
        due = [m.member_id for m in self.members.values() if m.session_expired(now_ms)]
        return [mid for mid in due if self.on_expire_heartbeat(mid, now_ms)]
