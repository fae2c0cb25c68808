"""Kafka's StickyAssignor and CooperativeStickyAssignor (AbstractStickyAssignor semantics).

Goals, in Kafka's order: (1) the assignment is as balanced as it can be, (2) as many partitions as
possible stay with the member that owned them. Owned partitions come from each member's subscription
(ownedPartitions and generation); when two members claim one partition the higher generation wins,
as in Kafka, and claims on topics a member no longer subscribes to, or on partitions that no longer
exist, are dropped.

Two paths, as in Kafka:
- constrained (every member subscribes to the same topics): quotas minQuota = P // M and
  maxQuota = ceil(P / M), at most P % M members at maxQuota; each member keeps min(owned, quota) of
  its partitions and the rest are dealt to the members under quota. This keeps the most partitions
  any spread-<=1 assignment can.
- general (different subscriptions): keep every valid claim, deal the unowned partitions to the least
  loaded eligible member (most constrained topics first), then balance. Kafka balances with single
  moves between members; here single moves come first (cheap, heap-driven) and augmenting paths
  (member -> topic -> member chains) finish the job, which reaches the smallest possible max load and
  then the largest possible min load: no assignment of the same group has a smaller spread. Moves
  take partitions that are not owned by their holder first; then owned partitions go back to their
  owner wherever that keeps the spread, and negative-cycle cancelling (min-cost flow) leaves the
  fewest owned partitions moved that any assignment with that min and max load can.

Cooperative: the same target, minus every partition that would change owner while its owner keeps
its subscription (CooperativeStickyAssignor's adjustment): the owner revokes it in this rebalance and
the follow-up rebalance gives it to its new owner.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field, replace

from coordinator_model.assignors.spec import Assignment, GroupSpec, TopicPartition, java_key


@dataclass
class _State:
    """Who holds what, by member index; `own` holds partitions the member held before, `fresh` the rest."""

    subs: list[list[str]]
    topic_members: dict[str, list[int]]
    load: list[int]
    own: list[dict[str, dict[int, None]]]
    fresh: list[dict[str, dict[int, None]]]
    holder: dict[TopicPartition, int] = field(default_factory=dict)

    def give(self, tp: TopicPartition, i: int, owned: bool) -> None:
        bucket = self.own if owned else self.fresh
        bucket[i].setdefault(tp[0], {})[tp[1]] = None
        self.holder[tp] = i
        self.load[i] += 1

    def holds(self, i: int, t: str) -> bool:
        return bool(self.fresh[i].get(t)) or bool(self.own[i].get(t))

    def holds_fresh(self, i: int, t: str) -> bool:
        return bool(self.fresh[i].get(t))

    def move_any(self, u: int, v: int, t: str, claims: dict[TopicPartition, int]) -> TopicPartition:
        """Move one partition of t from u to v, preferring one u did not own."""
        src = self.fresh[u].get(t) or self.own[u][t]
        p, _ = src.popitem()
        tp = (t, p)
        self.load[u] -= 1
        self.give(tp, v, claims.get(tp) == v)
        return tp

    def move(self, tp: TopicPartition, v: int, claims: dict[TopicPartition, int]) -> None:
        u = self.holder[tp]
        t, p = tp
        for bucket in (self.fresh[u], self.own[u]):
            parts = bucket.get(t)
            if parts and p in parts:
                del parts[p]
                break
        self.load[u] -= 1
        self.give(tp, v, claims.get(tp) == v)


def resolve_claims(group: GroupSpec, order: list[int]) -> dict[TopicPartition, int]:
    """Partition -> index of the member that owns it: valid claims only, highest generation wins,
    ties go to the member first in member-id order."""
    members = group.members
    claims: dict[TopicPartition, int] = {}
    claim_gen: dict[TopicPartition, int] = {}
    for i in order:
        m = members[i]
        subs = set(m.topics)
        for tp in m.owned:
            t, p = tp[0], tp[1]
            if t not in subs or not 0 <= p < group.partitions.get(t, 0):
                continue
            key = (t, p)
            if key not in claims or m.generation > claim_gen[key]:
                claims[key] = i
                claim_gen[key] = m.generation
    return claims


def sticky_target(group: GroupSpec, use_generation: bool = True) -> Assignment:
    """The balanced, sticky target assignment (StickyAssignor's result)."""
    members = group.members
    if not members:
        return {}
    if not use_generation:
        group = GroupSpec(tuple(replace(m, generation=0) for m in members), group.partitions)
        members = group.members
    order = sorted(range(len(members)), key=lambda i: java_key(members[i].member_id))
    subs = [sorted({t for t in m.topics if group.partitions.get(t, 0) > 0}, key=java_key) for m in members]
    claims = resolve_claims(group, order)
    topic_members: dict[str, list[int]] = {}
    for i in order:
        for t in subs[i]:
            topic_members.setdefault(t, []).append(i)
    st = _State(
        subs=subs,
        topic_members=topic_members,
        load=[0] * len(members),
        own=[{} for _ in members],
        fresh=[{} for _ in members],
    )
    if all(set(s) == set(subs[0]) for s in subs):
        _constrained(group, st, claims, order)
    else:
        _general(group, st, claims, order)
        _give_back(st, claims)
        _cancel_negative_cycles(st, claims)
    result: Assignment = {m.member_id: [] for m in members}
    for tp, i in st.holder.items():
        result[members[i].member_id].append(tp)
    return result


def _constrained(group: GroupSpec, st: _State, claims: dict[TopicPartition, int], order: list[int]) -> None:
    topics = st.subs[order[0]]
    total = sum(group.partitions[t] for t in topics)
    n = len(order)
    min_q, extra = divmod(total, n)
    by_member: dict[int, list[TopicPartition]] = {i: [] for i in order}
    for tp, i in claims.items():
        by_member[i].append(tp)
    at_max = 0
    for i in order:
        owned = sorted(by_member[i], key=lambda tp: (java_key(tp[0]), tp[1]))
        if len(owned) <= min_q:
            keep = len(owned)
        elif at_max < extra:
            keep = min_q + 1
            at_max += 1
        else:
            keep = min_q
        for tp in owned[:keep]:
            st.give(tp, i, True)
    unassigned = deque((t, p) for t in topics for p in range(group.partitions[t]) if (t, p) not in st.holder)
    for i in order:  # everyone up to minQuota first
        while st.load[i] < min_q:
            st.give(unassigned.popleft(), i, False)
    for i in order:  # then the extra partitions, one per member, while they last
        if not unassigned:
            break
        if st.load[i] == min_q and at_max < extra:
            st.give(unassigned.popleft(), i, False)
            at_max += 1


def _general(group: GroupSpec, st: _State, claims: dict[TopicPartition, int], order: list[int]) -> None:
    for tp, i in claims.items():
        st.give(tp, i, True)
    # Deal unowned partitions, most constrained topics first, each to the least loaded subscriber.
    topics = sorted(st.topic_members, key=lambda t: (len(st.topic_members[t]), java_key(t)))
    for t in topics:
        free = [(t, p) for p in range(group.partitions[t]) if (t, p) not in st.holder]
        if not free:
            continue
        heap = [(st.load[i], rank, i) for rank, i in enumerate(st.topic_members[t])]
        heapq.heapify(heap)
        for tp in free:
            load, rank, i = heapq.heappop(heap)
            st.give(tp, i, False)
            heapq.heappush(heap, (load + 1, rank, i))
    _single_moves(st, claims)
    _lower_max(st, claims)
    _raise_min(st, claims)


def _single_moves(st: _State, claims: dict[TopicPartition, int]) -> None:
    """Move one partition at a time from the most loaded member to the least loaded subscriber of one
    of its topics while they differ by two or more (lazy heaps, O(moves * topics * log M))."""
    load = st.load
    theaps: dict[str, list[tuple[int, int]]] = {
        t: [(load[i], i) for i in ms] for t, ms in st.topic_members.items()
    }
    for h in theaps.values():
        heapq.heapify(h)
    top = [(-load[i], i) for i in range(len(load))]
    heapq.heapify(top)

    def least(t: str) -> tuple[int, int]:
        h = theaps[t]
        while h[0][0] != load[h[0][1]]:
            heapq.heappop(h)
        return h[0]

    def changed(i: int) -> None:
        for t in st.subs[i]:
            heapq.heappush(theaps[t], (load[i], i))

    while top:
        neg, u = heapq.heappop(top)
        if -neg != load[u]:
            continue
        best: tuple[int, int, int, str] | None = None  # (not fresh, load of v, v, topic)
        for t in st.subs[u]:
            if not st.holds(u, t):
                continue
            lv, v = least(t)
            if lv > load[u] - 2:
                continue
            cand = (0 if st.holds_fresh(u, t) else 1, lv, v, t)
            if best is None or cand < best:
                best = cand
        if best is None:
            continue  # stuck for single moves; the augmenting paths below take over
        _, _, v, t = best
        st.move_any(u, v, t, claims)
        changed(u)
        changed(v)
        heapq.heappush(top, (-load[u], u))


def _lower_max(st: _State, claims: dict[TopicPartition, int]) -> None:
    """Augmenting paths from the most loaded members to any member at least two below them."""
    load = st.load
    while True:
        high = max(load)
        parent: dict[int, tuple[int, str]] = {}
        seen_topics: set[str] = set()
        queue = deque(i for i in range(len(load)) if load[i] == high)
        seen = set(queue)
        target = -1
        while queue and target < 0:
            u = queue.popleft()
            for t in st.subs[u]:
                if t in seen_topics or not st.holds(u, t):
                    continue
                seen_topics.add(t)
                for v in st.topic_members[t]:
                    if v in seen:
                        continue
                    seen.add(v)
                    parent[v] = (u, t)
                    if load[v] <= high - 2:
                        target = v
                        break
                    queue.append(v)
                if target >= 0:
                    break
        if target < 0:
            return
        _apply_path(st, claims, parent, target)


def _raise_min(st: _State, claims: dict[TopicPartition, int]) -> None:
    """Augmenting paths from any member at least two above the least loaded ones to them."""
    load = st.load
    while True:
        low = min(load)
        child: dict[int, tuple[int, str]] = {}  # u -> (v, t): u gives a partition of t to v
        seen_topics: set[str] = set()
        queue = deque(i for i in range(len(load)) if load[i] == low)
        seen = set(queue)
        source = -1
        while queue and source < 0:
            v = queue.popleft()
            for t in st.subs[v]:
                if t in seen_topics:
                    continue
                seen_topics.add(t)
                for u in st.topic_members[t]:
                    if u in seen or not st.holds(u, t):
                        continue
                    seen.add(u)
                    child[u] = (v, t)
                    if load[u] >= low + 2:
                        source = u
                        break
                    queue.append(u)
                if source >= 0:
                    break
        if source < 0:
            return
        u = source
        while u in child:
            v, t = child[u]
            st.move_any(u, v, t, claims)
            u = v


def _apply_path(
    st: _State, claims: dict[TopicPartition, int], parent: dict[int, tuple[int, str]], v: int
) -> None:
    hops: list[tuple[int, int, str]] = []
    while v in parent:
        u, t = parent[v]
        hops.append((u, v, t))
        v = u
    for u, w, t in hops:
        st.move_any(u, w, t, claims)


def _give_back(st: _State, claims: dict[TopicPartition, int]) -> None:
    """Return owned partitions to their owner whenever the owner has fewer partitions than the holder:
    the spread cannot grow (owner ends at most at the holder's old load, holder at least at the owner's)."""
    changed = True
    while changed:
        changed = False
        for tp, owner in claims.items():
            h = st.holder[tp]
            if h != owner and st.load[owner] < st.load[h]:
                st.move(tp, owner, claims)
                changed = True


def _cancel_negative_cycles(st: _State, claims: dict[TopicPartition, int]) -> None:
    """Make the result as sticky as any assignment with the same min and max load can be.

    Min-cost-flow optimality: the number of owned partitions away from their owner is minimal iff the
    residual graph has no negative cycle. Nodes are members, topics and two terminals; u -> t costs 0
    when u holds a partition of t it did not own (+1 when it only holds owned ones), t -> v costs 0
    for every subscriber v, u -> w costs -1 when u holds a partition w owned; S -> u for members above
    the min load, v -> T for members below the max load and T -> S close paths into cycles, so a
    negative cycle is either a chain of hand-backs or a load-preserving exchange. Each cancelled cycle
    returns at least one partition to its owner, so there are at most as many rounds as moved owned
    partitions.
    """
    away = sum(1 for tp, owner in claims.items() if st.holder[tp] != owner)
    for _ in range(away):  # each cycle brings at least one partition home: never more rounds
        cycle = _find_negative_cycle(st, claims)
        if not cycle:
            return
        for kind, u, v, item in cycle:
            if kind == "back":
                st.move(item, v, claims)
            else:
                st.move_any(u, v, item, claims)


def _find_negative_cycle(
    st: _State, claims: dict[TopicPartition, int]
) -> list[tuple[str, int, int, object]] | None:
    n_members = len(st.load)
    topics = list(st.topic_members)
    tindex = {t: n_members + k for k, t in enumerate(topics)}
    source, sink = n_members + len(topics), n_members + len(topics) + 1
    n_nodes = sink + 1
    low, high = min(st.load), max(st.load)
    # adjacency: node -> list of (to, cost, label); label = topic (for member->topic) or tp (hand-back)
    adj: list[list[tuple[int, int, object]]] = [[] for _ in range(n_nodes)]
    for u in range(n_members):
        back_seen: set[int] = set()
        for t in st.subs[u]:
            fresh = st.fresh[u].get(t)
            if fresh:
                adj[u].append((tindex[t], 0, t))
                for p in fresh:
                    w = claims.get((t, p))
                    if w is not None and w != u and w not in back_seen:
                        back_seen.add(w)
                        adj[u].append((w, -1, (t, p)))
            elif st.own[u].get(t):
                adj[u].append((tindex[t], 1, t))
        if st.load[u] > low:
            adj[source].append((u, 0, None))
        if st.load[u] < high:
            adj[u].append((sink, 0, None))
    for t, ms in st.topic_members.items():
        adj[tindex[t]] = [(v, 0, None) for v in ms]
    adj[sink].append((source, 0, None))

    # SPFA from every node at distance 0; a shortest-path tree deeper than the node count means a cycle.
    dist = [0] * n_nodes
    parent: list[int] = [-1] * n_nodes
    plabel: list[object] = [None] * n_nodes
    pcost = [0] * n_nodes
    depth = [0] * n_nodes
    queue = deque(range(n_nodes))
    queued = [True] * n_nodes
    while queue:
        u = queue.popleft()
        queued[u] = False
        du = dist[u]
        for v, c, label in adj[u]:
            if du + c < dist[v]:
                dist[v] = du + c
                parent[v], plabel[v], pcost[v] = u, label, c
                depth[v] = depth[u] + 1
                if depth[v] > n_nodes:
                    cycle = _extract_cycle(v, parent, plabel, pcost, n_members, tindex)
                    if cycle is not None:
                        return cycle
                    depth[v] = 0  # stale depth, no cycle behind it: keep going
                if not queued[v]:
                    queued[v] = True
                    queue.append(v)
    return None


def _extract_cycle(
    v: int,
    parent: list[int],
    plabel: list[object],
    pcost: list[int],
    n_members: int,
    tindex: dict[str, int],
) -> list[tuple[str, int, int, object]] | None:
    seen: set[int] = set()
    while v not in seen:  # walk up the parent pointers until a node repeats
        seen.add(v)
        v = parent[v]
        if v < 0:
            return None
    topic_nodes = set(tindex.values())
    nodes = [v]
    u = parent[v]
    while u != v:
        nodes.append(u)
        u = parent[u]
    if sum(pcost[u] for u in nodes) >= 0:  # only a negative cycle is worth applying
        return None
    nodes.reverse()  # in forward order, nodes[0] -> nodes[1] -> ... -> nodes[0]
    hops: list[tuple[str, int, int, object]] = []
    k = len(nodes)
    for i in range(k):
        a, b = nodes[i], nodes[(i + 1) % k]
        if a < n_members and b < n_members:  # hand-back edge
            hops.append(("back", a, b, plabel[b]))
        elif a < n_members and b in topic_nodes:
            c = nodes[(i + 2) % k]
            hops.append(("topic", a, c, plabel[b]))
    return hops


def cooperative_withheld(group: GroupSpec, target: Assignment) -> set[TopicPartition]:
    """Partitions of `target` that change owner while a previous owner still subscribes to their topic:
    the cooperative protocol revokes them first and hands them over in a follow-up rebalance."""
    owners: dict[TopicPartition, set[str]] = {}
    for m in group.members:
        subs = set(m.topics)
        for t, p in m.owned:
            if t in subs:
                owners.setdefault((t, p), set()).add(m.member_id)
    withheld: set[TopicPartition] = set()
    for mid, tps in target.items():
        for tp in tps:
            prev = owners.get(tp)
            if prev and mid not in prev:
                withheld.add(tp)
    return withheld


def assign_sticky(group: GroupSpec) -> Assignment:
    return sticky_target(group)


def assign_cooperative_sticky(group: GroupSpec) -> Assignment:
    target = sticky_target(group)
    withheld = cooperative_withheld(group, target)
    return {m: [tp for tp in tps if tp not in withheld] for m, tps in target.items()}
