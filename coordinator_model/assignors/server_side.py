"""KIP-848 server-side assignors (group-coordinator/.../assignor): the broker computes a target
assignment from the members' subscriptions and their current assignment (here: `owned`).

- `uniform` (UniformAssignor: OptimizedUniformAssignmentBuilder when every member subscribes to the
  same topics, UniformHeterogeneousAssignmentBuilder otherwise): balanced and sticky towards the
  current assignment; no generations, the current assignment is authoritative. Same goals as the
  client sticky assignor, so it shares its engine.
- `range` (server RangeAssignor): per topic, members in member-id order each get
  numPartitions // numMembers, the first numPartitions % numMembers one more, but a member first
  keeps the partitions it already has within its quota and only the rest are dealt in range order.
The server reconciles revocations per member, so the target is reported whole.
"""

from __future__ import annotations

from coordinator_model.assignors.spec import Assignment, GroupSpec, java_key
from coordinator_model.assignors.sticky import sticky_target


def assign_uniform(group: GroupSpec) -> Assignment:
    return sticky_target(group, use_generation=False)


def assign_server_range(group: GroupSpec) -> Assignment:
    assignment: Assignment = {m.member_id: [] for m in group.members}
    members = sorted(group.members, key=lambda m: java_key(m.member_id))
    for topic in sorted(group.subscribed_topics(), key=java_key):
        n = group.partitions.get(topic, 0)
        subscribers = [m for m in members if topic in m.topics]
        if n <= 0 or not subscribers:
            continue
        min_q, extra = divmod(n, len(subscribers))
        taken: set[int] = set()
        got_extra: set[str] = set()
        counts: dict[str, int] = {}
        for m in subscribers:
            current = sorted({p for t, p in m.owned if t == topic and 0 <= p < n} - taken)
            keep = current[:min_q]
            if len(current) > min_q and extra > 0:
                keep = current[: min_q + 1]
                extra -= 1
                got_extra.add(m.member_id)
            taken.update(keep)
            counts[m.member_id] = len(keep)
            assignment[m.member_id].extend((topic, p) for p in keep)
        free = iter(p for p in range(n) if p not in taken)
        for m in subscribers:  # fill to minQuota, in member order
            while counts[m.member_id] < min_q:
                assignment[m.member_id].append((topic, next(free)))
                counts[m.member_id] += 1
        for m in subscribers:  # then the remaining extra partitions, one per member
            if extra <= 0:
                break
            if m.member_id not in got_extra:
                assignment[m.member_id].append((topic, next(free)))
                extra -= 1
    return assignment
