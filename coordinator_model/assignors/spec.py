"""The input every assignor takes: who is in the group, what they subscribe to and own, how many
partitions each topic has. Plain dataclasses, so the model, the CLI and the what-if engine share them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]

# Kafka's ConsumerProtocol default when a subscription carries no generation.
DEFAULT_GENERATION = -1


class AssignorError(ValueError):
    """Input an assignor cannot work with (unknown assignor, inconsistent group description)."""


@dataclass(frozen=True)
class MemberSpec:
    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = DEFAULT_GENERATION
    rack: str | None = None
    group_instance_id: str | None = None


@dataclass(frozen=True)
class GroupSpec:
    members: tuple[MemberSpec, ...]
    partitions: Mapping[str, int] = field(default_factory=dict)
    # Replica racks per partition, {topic: [[racks of p0's replicas], ...]}; only rack-aware
    # assignment (KIP-881) reads it, and only when members have racks too.
    partition_racks: Mapping[str, Sequence[Sequence[str]]] = field(default_factory=dict)

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members for t in m.topics}

    def all_partitions(self) -> list[TopicPartition]:
        """Every partition of every subscribed topic, in (topic, partition) order."""
        return [
            (t, p)
            for t in sorted(self.subscribed_topics(), key=java_key)
            for p in range(self.partitions.get(t, 0))
        ]


def java_key(s: str) -> bytes:
    """Sort key that orders strings like Java's String.compareTo (UTF-16 code units), which is what
    Kafka's assignors use; Python's own order differs only for characters outside the BMP."""
    return s.encode("utf-16-be", "surrogatepass")


def member_order_key(m: MemberSpec) -> tuple[int, bytes]:
    """Kafka's AbstractPartitionAssignor.MemberInfo order: static members (group.instance.id) first,
    sorted by instance id, then dynamic members sorted by member id."""
    if m.group_instance_id is not None:
        return (0, java_key(m.group_instance_id))
    return (1, java_key(m.member_id))


def validate_group(group: GroupSpec) -> None:
    """Reject descriptions no assignor can handle; messages are one line, for the CLI."""
    seen: set[str] = set()
    for m in group.members:
        if m.member_id in seen:
            raise AssignorError(f"duplicate member id {m.member_id!r}")
        seen.add(m.member_id)
    for t, n in group.partitions.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise AssignorError(f"topic {t!r}: partition count must be a non-negative integer, got {n!r}")
    for m in group.members:
        for t in m.topics:
            if t not in group.partitions:
                raise AssignorError(
                    f"member {m.member_id!r} subscribes to topic {t!r} which has no partition count"
                )


def sorted_assignment(assignment: Mapping[str, Iterable[TopicPartition]]) -> Assignment:
    return {m: sorted(tps, key=lambda tp: (java_key(tp[0]), tp[1])) for m, tps in assignment.items()}
