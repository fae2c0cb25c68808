"""Kafka's client-side RoundRobinAssignor.

All partitions of all subscribed topics laid out in (topic, partition) order; a circular iterator over
the members in MemberInfo order hands each partition to the next member subscribed to its topic,
skipping the others (RoundRobinAssignor's javadoc: t0p0->C0, t0p1->C1, t0p2->C0, t1p0->C1, ...).
"""

from __future__ import annotations

from coordinator_model.assignors.spec import Assignment, GroupSpec, member_order_key


def assign_roundrobin(group: GroupSpec) -> Assignment:
    assignment: Assignment = {m.member_id: [] for m in group.members}
    members = sorted(group.members, key=member_order_key)
    if not members:
        return assignment
    subs = [set(m.topics) for m in members]
    cursor = 0  # the member CircularIterator.peek() would return
    for topic, partition in group.all_partitions():
        # Every listed topic has at least one subscriber, so this loop ends within one turn.
        while topic not in subs[cursor]:
            cursor = (cursor + 1) % len(members)
        assignment[members[cursor].member_id].append((topic, partition))
        cursor = (cursor + 1) % len(members)
    return assignment
