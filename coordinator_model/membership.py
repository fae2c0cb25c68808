"""A group's members and its generations (KIP-848: epochs), as both kinds of group keep them."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

TP = tuple[str, int]

MAX_GENERATIONS = 2000  # generations (epochs) kept per group; the oldest go first
# KIP-848 member states as ConsumerGroupCurrentMemberAssignment records number them
MEMBER_STATES = {0: "stable", 1: "unrevoked_partitions", 2: "unreleased_partitions", 127: "unknown"}
# a streams member's (KIP-1071 numbers them from 1: Kafka's streams/MemberState)
STREAMS_MEMBER_STATES = {1: "stable", 2: "unrevoked_tasks", 3: "unreleased_tasks", 127: "unknown"}
STREAMS_MEMBER_STABLE = 1


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    max_poll_interval_ms: int | None = None
    subscription: tuple[str, ...] = ()
    assignment: tuple[TP, ...] = ()
    last_heartbeat: int | None = None
    joined_at: int | None = None
    poll_stall_at: int | None = None
    closed: bool = False  # a static member's client closed: only its session timeout removes it
    # KIP-848
    member_epoch: int | None = None
    previous_member_epoch: int | None = None
    member_state: int | None = None
    assigned_ids: tuple[tuple[str, int], ...] = ()
    pending_ids: tuple[tuple[str, int], ...] = ()
    target_ids: tuple[tuple[str, int], ...] | None = None
    target_assignment: tuple[TP, ...] | None = None
    client_assignment: tuple[TP, ...] = ()  # what the client's own events say it holds
    server_assignor: str | None = None
    in_records: bool = False  # KIP-848: has a ConsumerGroupMemberMetadata record


@dataclass(slots=True)
class Generation:
    generation: int | None
    start: int
    cause: str = "unknown"
    reason: str | None = None
    stabilized: int | None = None  # CompletingRebalance began
    stable: int | None = None  # assignment received (Stable) or Empty
    end: int | None = None
    members: tuple[str, ...] = ()
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    assignment: dict[str, tuple[TP, ...]] = field(default_factory=dict)
    protocol: str | None = None
    leader: str | None = None
    inferred: set[str] = field(default_factory=set)
    empty: bool = False
    member_id: str | None = None  # session/poll timeout: the member whose timeout caused it
    gap_ms: int | None = None  # ... and how long it had been silent (heartbeats) or stalled (poll)
    # KIP-848, share and streams epochs: member id -> (client id, host) of the members it names
    # (joined, left), kept as they were when named: once one left, the group holds nothing else that
    # says who its opaque id was (a classic member's id starts with its client id)
    clients: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def __setstate__(self, state: Any) -> None:
        # a generation pickled before a field was added gets that field's default
        slots = state[1] if isinstance(state, tuple) else state
        for f in fields(self):
            if f.name in slots:
                setattr(self, f.name, slots[f.name])
            elif f.default_factory is not MISSING:
                setattr(self, f.name, f.default_factory())
            else:
                setattr(self, f.name, f.default)
