"""Kafka's client-side RangeAssignor (org.apache.kafka.clients.consumer.RangeAssignor).

Per topic: the subscribed members in MemberInfo order, the partitions in numeric order; each member
takes numPartitions / numMembers, and the first numPartitions % numMembers members take one more
(seed 002: 5 partitions over c0, c1, c2 -> [0, 1], [2, 3], [4]). Topics are independent, which is
why range can leave a member idle that round robin would use.

Kafka 4.0 adds rack matching (KIP-881), which needs the replica racks of every partition; a group
description carries member racks only, so without partition racks the non-rack path below is the
one Kafka runs too.
"""

from __future__ import annotations

from coordinator_model.assignors.spec import Assignment, GroupSpec, MemberSpec, member_order_key


def assign_range(group: GroupSpec) -> Assignment:
    assignment: Assignment = {m.member_id: [] for m in group.members}
    by_topic: dict[str, list[MemberSpec]] = {}
    for m in group.members:
        for t in dict.fromkeys(m.topics):
            by_topic.setdefault(t, []).append(m)
    for topic, members in by_topic.items():
        n = group.partitions.get(topic, 0)
        if n <= 0:
            continue
        members.sort(key=member_order_key)
        per_member, extra = divmod(n, len(members))
        for i, m in enumerate(members):
            start = per_member * i + min(i, extra)
            length = per_member + (1 if i < extra else 0)
            assignment[m.member_id].extend((topic, p) for p in range(start, start + length))
    return assignment
