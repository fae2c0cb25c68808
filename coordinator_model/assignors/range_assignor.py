"""Kafka's client-side RangeAssignor (org.apache.kafka.clients.consumer.RangeAssignor, Kafka 4.0).

Per topic: the subscribed members in MemberInfo order, the partitions in numeric order; each member
takes numPartitions / numMembers, and the first numPartitions % numMembers members take one more
(RangeAssignor's javadoc: 5 partitions over c0, c1, c2 -> [0, 1], [2, 3], [4]). Topics are
independent, which is why range can leave a member idle that round robin would use.

Rack awareness (KIP-881) as Kafka 4.0 does it, when members have racks and the description carries
the partitions' replica racks: if some topic's partitions are not all on every rack its members are
on, partitions are first matched to members on a rack holding a replica, within each member's range
quota. Topics with the same members and partition count are co-partitioned: partition p of all of
them goes to one member, if a member matches the racks of all of them. What is left is then dealt in
range order. Without racks this is exactly the classic range assignment.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice

from coordinator_model.assignors.spec import Assignment, GroupSpec, MemberSpec, member_order_key


class _TopicState:
    """Kafka's RangeAssignor.TopicAssignmentState: quotas and what is left of one topic."""

    def __init__(self, topic: str, n: int, members: list[MemberSpec], racks: list[set[str]]) -> None:
        self.topic = topic
        self.consumers: dict[str, str | None] = {m.member_id: m.rack for m in members}
        self.partition_racks = racks
        self.unassigned: dict[int, None] = dict.fromkeys(range(n))
        self.assigned_by: dict[str, int] = dict.fromkeys(self.consumers, 0)
        self.per_consumer, self.with_extra = divmod(n, len(members)) if members else (0, 0)
        member_racks = {r for r in self.consumers.values() if r}
        all_racks = set().union(*racks) if racks else set()
        if not member_racks or not member_racks & all_racks:
            self.needs_rack_aware = False
        else:
            # Rack matching only helps when some partition is missing from some rack.
            self.needs_rack_aware = any(r != all_racks for r in racks)

    def max_assignable(self, consumer: str) -> int:
        quota = self.per_consumer + (1 if self.with_extra > 0 else 0)
        return max(0, quota - self.assigned_by[consumer])

    def racks_match(self, consumer: str, p: int) -> bool:
        rack = self.consumers[consumer]
        return rack is None or (p < len(self.partition_racks) and rack in self.partition_racks[p])

    def assign(self, consumer: str, partitions: list[int], assignment: Assignment) -> None:
        assignment[consumer].extend((self.topic, p) for p in partitions)
        self.assigned_by[consumer] += len(partitions)
        if self.assigned_by[consumer] > self.per_consumer:
            self.with_extra -= 1
        for p in partitions:
            del self.unassigned[p]


def _assign_ranges(
    state: _TopicState, may_assign: Callable[[str, int], bool] | None, assignment: Assignment
) -> None:
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        if may_assign is None:
            take = list(islice(state.unassigned, limit))
        else:
            take = list(islice((p for p in state.unassigned if may_assign(consumer, p)), limit))
        if take:
            state.assign(consumer, take, assignment)


def _assign_co_partitioned(n: int, states: list[_TopicState], assignment: Assignment) -> None:
    remaining = list(states[0].consumers)
    for p in range(n):
        match = next(
            (c for c in remaining if all(s.racks_match(c, p) and s.max_assignable(c) > 0 for s in states)),
            None,
        )
        if match is None:
            continue
        for s in states:
            s.assign(match, [p], assignment)
        if all(s.max_assignable(match) <= 0 for s in states):
            remaining.remove(match)
            if not remaining:
                break


def assign_range(group: GroupSpec) -> Assignment:
    assignment: Assignment = {m.member_id: [] for m in group.members}
    by_topic: dict[str, list[MemberSpec]] = {}
    for m in group.members:
        for t in dict.fromkeys(m.topics):
            by_topic.setdefault(t, []).append(m)
    states: list[_TopicState] = []
    for topic, members in by_topic.items():
        n = group.partitions.get(topic, 0)
        if n <= 0:
            continue
        members.sort(key=member_order_key)
        racks = [set(r) for r in group.partition_racks.get(topic, [])][:n]
        states.append(_TopicState(topic, n, members, racks))

    rack_aware = any(s.needs_rack_aware for s in states)
    if rack_aware:
        # Topics with the same ordered members and partition count are co-partitioned.
        groups: dict[tuple[tuple[tuple[str, str | None], ...], int], list[_TopicState]] = {}
        for s in states:
            key = (tuple(s.consumers.items()), len(s.unassigned))
            groups.setdefault(key, []).append(s)
        for (_, n), same in groups.items():
            if len(same) > 1:
                _assign_co_partitioned(n, same, assignment)
            elif same[0].needs_rack_aware:
                _assign_ranges(same[0], same[0].racks_match, assignment)
    for s in states:
        _assign_ranges(s, None, assignment)
    return assignment
