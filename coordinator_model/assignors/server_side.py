"""KIP-848 server-side assignors (group-coordinator/.../assignor): the broker computes a target
assignment from the members' subscriptions and their current assignment (here: `owned`).

- `uniform` (UniformAssignor: OptimizedUniformAssignmentBuilder when every member subscribes to the
  same topics, UniformHeterogeneousAssignmentBuilder otherwise): balanced and sticky towards the
  current assignment; no generations, the current assignment is authoritative. Same goals as the
  client sticky assignor, so it shares its engine.
- `range` (server RangeAssignor): per topic, each member gets numPartitions // numMembers and
  numPartitions % numMembers members one more; a member first keeps the lowest-numbered partitions it
  already has, within its quota (one over it while extra partitions last), then the members short of
  their quota take the free partitions in ascending order, in member-id order (Kafka walks its member
  map; member-id order makes the result reproducible).
The server reconciles revocations per member, so the target is reported whole.
"""

from __future__ import annotations

from coordinator_model.assignors.spec import Assignment, GroupSpec, MemberSpec, java_key
from coordinator_model.assignors.sticky import sticky_target


def assign_uniform(group: GroupSpec) -> Assignment:
    return sticky_target(group, use_generation=False)


def assign_server_range(group: GroupSpec) -> Assignment:
    assignment: Assignment = {m.member_id: [] for m in group.members}
    by_topic: dict[str, list[MemberSpec]] = {}
    owned: dict[tuple[str, str], set[int]] = {}  # (member, topic) -> partitions it has now
    for m in sorted(group.members, key=lambda m: java_key(m.member_id)):
        for t in dict.fromkeys(m.topics):
            by_topic.setdefault(t, []).append(m)
        for t, p in m.owned:
            owned.setdefault((m.member_id, t), set()).add(p)
    for topic in sorted(by_topic, key=java_key):
        n = group.partitions.get(topic, 0)
        subscribers = by_topic[topic]
        if n <= 0:
            continue
        min_q, extra = divmod(n, len(subscribers))
        retained: set[int] = set()
        unfilled: list[tuple[str, int]] = []  # (member, partitions short of minQuota)
        for m in subscribers:
            current = sorted(p for p in owned.get((m.member_id, topic), ()) if 0 <= p < n)
            keep = current[:min_q]
            remaining = min_q - len(current)
            if remaining < 0 and extra > 0:
                # over quota and an extra partition is still free: keep one more
                extra -= 1
                keep = current[: min_q + 1]
            else:
                unfilled.append((m.member_id, remaining))
            retained.update(keep)
            assignment[m.member_id].extend((topic, p) for p in keep)
        free = [p for p in range(n) if p not in retained]
        pos = 0
        for mid, remaining in unfilled:
            if extra > 0:
                remaining += 1
                extra -= 1
            if remaining > 0:
                assignment[mid].extend((topic, p) for p in free[pos : pos + remaining])
                pos += remaining
    return assignment
