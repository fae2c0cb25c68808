"""Group states as Kafka defines them.

Classic groups follow Kafka's GroupMetadata.scala: each state carries the set of its legal
previous states and `transitionTo` refuses anything else. KIP-848 ("consumer") groups have no
transition table: their state is derived from epochs each time (`derive_consumer_group_state`).
"""

from __future__ import annotations

from enum import Enum


class IllegalStateTransition(RuntimeError):
    """A transition that Kafka's `assertValidTransition` would refuse."""


class GroupState(Enum):
    """The five classic-group states; `.value` is Kafka's spelling."""

    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    EMPTY = "Empty"
    DEAD = "Dead"

    @property
    def valid_previous_states(self) -> frozenset[GroupState]:
        return _VALID_PREVIOUS[self]

    def can_follow(self, previous: GroupState) -> bool:
        return previous in _VALID_PREVIOUS[self]

    @classmethod
    def parse(cls, name: str) -> GroupState:
        """Kafka's spelling, case and underscores ignored ('PREPARING_REBALANCE', 'preparingrebalance')."""
        key = name.replace("_", "").lower()
        for state in cls:
            if state.value.lower() == key:
                return state
        raise ValueError(f"not a classic group state: {name!r}")


# GroupMetadata.scala: `private[group] sealed trait GroupState { val validPreviousStates: Set[GroupState] }`
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(
        {
            GroupState.STABLE,
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
            GroupState.DEAD,
        }
    ),
}


def assert_valid_transition(current: GroupState, target: GroupState) -> None:
    if not target.can_follow(current):
        raise IllegalStateTransition(
            f"Group state transition from {current.value} to {target.value} is not legal "
            f"(legal previous states: {sorted(s.value for s in target.valid_previous_states)})"
        )


def legal_path(current: GroupState, target: GroupState) -> list[GroupState]:
    """The shortest chain of states after `current` that ends in `target` using only legal steps
    (the reconstruction uses it when evidence skips states Kafka never writes down). Empty when
    `target` cannot be reached (nothing leaves Dead)."""
    if target.can_follow(current):
        return [target]
    frontier: list[list[GroupState]] = [[current]]
    seen: set[GroupState] = set()  # `current` may come round again (Stable -> ... -> Stable)
    while frontier:
        nxt: list[list[GroupState]] = []
        for path in frontier:
            for state in GroupState:
                if state in seen or not state.can_follow(path[-1]):
                    continue
                if state is target:
                    return [*path[1:], state]
                seen.add(state)
                nxt.append([*path, state])
        frontier = nxt
    return []


class ConsumerGroupState(Enum):
    """KIP-848 consumer group states (ConsumerGroup.ConsumerGroupState)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def derive_consumer_group_state(
    member_count: int,
    group_epoch: int,
    assignment_epoch: int,
    members_reconciled: bool,
) -> ConsumerGroupState:
    """ConsumerGroup.maybeUpdateGroupState: Empty without members; Assigning while the group epoch is
    ahead of the target assignment epoch; Reconciling while some member is not yet stable at the
    target epoch; else Stable."""
    if member_count == 0:
        return ConsumerGroupState.EMPTY
    if group_epoch > assignment_epoch:
        return ConsumerGroupState.ASSIGNING
    if not members_reconciled:
        return ConsumerGroupState.RECONCILING
    return ConsumerGroupState.STABLE


# The kinds of group on the modern protocol (KIP-848's ModernGroup): their state, epochs and members
# come from the same shape of records, kept by consumer.ConsumerGroupModel or its share and streams
# subclasses.
MODERN_TYPES = ("consumer", "share", "streams")


class StreamsGroupState(Enum):
    """KIP-1071 streams group states (StreamsGroup.StreamsGroupState): NotReady while its topology is
    not initialised or its source topics are missing or wrongly partitioned."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class ShareGroupState(Enum):
    """KIP-932 share group states (ShareGroup.ShareGroupState)."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


def derive_share_group_state(member_count: int) -> ShareGroupState:
    """ShareGroup.maybeUpdateGroupState: Empty without members, else Stable (a share group's members
    take partitions as the assignor gives them; there is no reconciliation to wait for)."""
    return ShareGroupState.EMPTY if member_count == 0 else ShareGroupState.STABLE
