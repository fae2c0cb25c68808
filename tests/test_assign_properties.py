"""Property tests over random groups: 1-200 members, 1-50 topics, different subscriptions, members
that own what an earlier generation of the group gave them."""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator_model.assignors import ASSIGNORS, GroupSpec, MemberSpec, assign
from coordinator_model.assignors.sticky import sticky_target

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def groups(draw: st.DrawFn, same: bool | None = None, with_owned: bool = True) -> GroupSpec:
    n_topics = draw(st.integers(1, 50))
    n_members = draw(st.integers(1, 200))
    seed = draw(st.integers(0, 2**32 - 1))
    same = draw(st.booleans()) if same is None else same
    rng = random.Random(seed)
    topics = [f"t{i}" for i in range(n_topics)]
    partitions = {t: rng.randint(0, 12) for t in topics}
    racked = draw(st.booleans())  # members on racks "a".."c", replicas on random racks (KIP-881)
    members = []
    for i in range(n_members):
        subs = topics if same else rng.sample(topics, rng.randint(1, min(n_topics, 8)))
        static = f"static-{rng.randint(0, 999)}-{i}" if rng.random() < 0.1 else None
        rack = rng.choice("abc") if racked and rng.random() < 0.9 else None
        members.append(
            MemberSpec(f"m{rng.getrandbits(24):06x}-{i}", tuple(subs), group_instance_id=static, rack=rack)
        )
    replica_racks = (
        {t: [rng.sample("abcd", rng.randint(1, 2)) for _ in range(n)] for t, n in partitions.items()}
        if racked
        else {}
    )
    group = GroupSpec(tuple(members), partitions, replica_racks)
    if with_owned and draw(st.booleans()):
        # An earlier generation: a random subset of members, some with other subscriptions, and a
        # few more partitions since; members now own what that generation gave them.
        old_members = [m for m in members if rng.random() < 0.7] or members[:1]
        old_members = [
            replace(m, topics=tuple(rng.sample(topics, rng.randint(1, min(n_topics, 8)))))
            if rng.random() < 0.2
            else m
            for m in old_members
        ]
        old_parts = {t: max(0, n - rng.randint(0, 3)) for t, n in partitions.items()}
        previous = sticky_target(GroupSpec(tuple(old_members), old_parts))
        group = GroupSpec(
            tuple(replace(m, owned=tuple(previous.get(m.member_id, [])), generation=4) for m in members),
            partitions,
            replica_racks,
        )
    return group


def every_partition(g: GroupSpec) -> set[tuple[str, int]]:
    return set(g.all_partitions())


def check_valid(g: GroupSpec, a: dict, complete: bool = True) -> None:
    subs = {m.member_id: set(m.topics) for m in g.members}
    assert set(a) == set(subs)
    seen = Counter(tp for tps in a.values() for tp in tps)
    assert all(c == 1 for c in seen.values()), "a partition went to two members"
    for m, tps in a.items():
        assert all(t in subs[m] for t, _ in tps), "a partition went to a member not subscribed to its topic"
        assert tps == sorted(tps)
    if complete:
        assert set(seen) == every_partition(g)
    else:
        assert set(seen) <= every_partition(g)


def loads(g: GroupSpec, a: dict) -> dict[str, int]:
    return {m.member_id: len(a[m.member_id]) for m in g.members}


def _max_flow(g: GroupSpec, cap: dict[str, int]) -> int:
    """Most partitions placeable with member m taking at most cap[m] (topic-level Dinic)."""
    topics = sorted(g.subscribed_topics())
    ids = [m.member_id for m in g.members]
    n = 2 + len(topics) + len(ids)
    src, snk = 0, n - 1
    graph: list[list[list[int]]] = [[] for _ in range(n)]  # edge: [to, cap, rev index]

    def edge(u: int, v: int, c: int) -> None:
        graph[u].append([v, c, len(graph[v])])
        graph[v].append([u, 0, len(graph[u]) - 1])

    tix = {t: 1 + i for i, t in enumerate(topics)}
    for t in topics:
        edge(src, tix[t], g.partitions.get(t, 0))
    for j, m in enumerate(g.members):
        node = 1 + len(topics) + j
        edge(node, snk, cap[m.member_id])
        for t in set(m.topics):
            edge(tix[t], node, 10**9)
    flow = 0
    while True:
        level = [-1] * n
        level[src] = 0
        q = deque([src])
        while q:
            u = q.popleft()
            for v, c, _ in graph[u]:
                if c > 0 and level[v] < 0:
                    level[v] = level[u] + 1
                    q.append(v)
        if level[snk] < 0:
            return flow
        it = [0] * n

        def dfs(u: int, f: int, level: list[int] = level, it: list[int] = it) -> int:
            if u == snk:
                return f
            while it[u] < len(graph[u]):
                e = graph[u][it[u]]
                v, c, r = e
                if c > 0 and level[v] == level[u] + 1:
                    d = dfs(v, min(f, c))
                    if d:
                        e[1] -= d
                        graph[v][r][1] += d
                        return d
                it[u] += 1
            return 0

        while f := dfs(src, 10**9):
            flow += f


def assert_min_spread(g: GroupSpec, a: dict) -> None:
    """No assignment of g has a smaller max load, none has a larger min load (so none a smaller spread)."""
    ld = loads(g, a)
    if not ld:
        return
    total = len(every_partition(g))
    hi, lo = max(ld.values()), min(ld.values())
    if hi > 0:
        assert _max_flow(g, dict.fromkeys(ld, hi - 1)) < total, "a lower max load was possible"
    assert _max_flow(g, dict.fromkeys(ld, lo + 1)) < (lo + 1) * len(ld), "a higher min load was possible"


@SETTINGS
@given(groups())
def test_every_assignor_is_valid(g: GroupSpec) -> None:
    for name in ASSIGNORS:
        check_valid(g, assign(name, g), complete=name != "cooperative-sticky")


@SETTINGS
@given(groups())
def test_range_balances_each_topic_over_its_subscribers(g: GroupSpec) -> None:
    for name in ("range", "server-range"):
        a = assign(name, g)
        for t in g.subscribed_topics():
            counts = [sum(1 for tp in a[m.member_id] if tp[0] == t) for m in g.members if t in m.topics]
            assert max(counts) - min(counts) <= 1


@SETTINGS
@given(groups(same=True))
def test_roundrobin_with_same_subscriptions_is_within_one(g: GroupSpec) -> None:
    ld = loads(g, assign("roundrobin", g)).values()
    assert max(ld) - min(ld) <= 1


@SETTINGS
@given(groups())
def test_sticky_and_uniform_reach_the_smallest_possible_spread(g: GroupSpec) -> None:
    for name in ("sticky", "uniform"):
        assert_min_spread(g, assign(name, g))


@SETTINGS
@given(groups())
def test_sticky_moves_nothing_a_balanced_result_could_leave_in_place(g: GroupSpec) -> None:
    owner = {tp: m.member_id for m in g.members for tp in m.owned}
    for name in ("sticky", "cooperative-sticky"):
        target = sticky_target(g) if name == "cooperative-sticky" else assign(name, g)
        ld = {m: len(v) for m, v in target.items()}
        holder = {tp: m for m, tps in target.items() for tp in tps}
        subs = {m.member_id: set(m.topics) for m in g.members}
        for tp, o in owner.items():
            h = holder.get(tp)
            if h is None or h == o or tp[0] not in subs[o]:
                continue
            # giving tp back to o would leave o no lower than h was: no more balanced result keeps it
            assert ld[o] >= ld[h], f"{tp} moved from {o} ({ld[o]}) to {h} ({ld[h]})"


@SETTINGS
@given(groups(same=True))
def test_sticky_with_same_subscriptions_moves_only_what_the_quotas_force(g: GroupSpec) -> None:
    a = assign("sticky", g)
    total = len(every_partition(g))
    n = len(g.members)
    min_q, extra = divmod(total, n)
    owned = [len({tp for tp in m.owned if tp[1] < g.partitions.get(tp[0], 0)}) for m in g.members]
    # each member keeps min(owned, minQuota), and up to `extra` of those above it keep one more
    forced = sum(max(0, o - min_q) for o in owned) - min(extra, sum(1 for o in owned if o > min_q))
    holder = {tp: m for m, tps in a.items() for tp in tps}
    moved = sum(1 for m in g.members for tp in m.owned if tp in holder and holder[tp] != m.member_id)
    assert moved == forced
    ld = loads(g, a).values()
    assert max(ld) - min(ld) <= 1


@SETTINGS
@given(groups(with_owned=False), st.randoms(use_true_random=False))
def test_range_and_roundrobin_ignore_input_order(g: GroupSpec, rnd: random.Random) -> None:
    members = [replace(m, topics=tuple(rnd.sample(m.topics, len(m.topics)))) for m in g.members]
    rnd.shuffle(members)
    parts = list(g.partitions.items())
    rnd.shuffle(parts)
    shuffled = GroupSpec(tuple(members), dict(parts), g.partition_racks)
    for name in ("range", "roundrobin", "server-range"):
        assert assign(name, g) == assign(name, shuffled)


@st.composite
def tiny_groups(draw: st.DrawFn) -> GroupSpec:
    """Groups small enough to enumerate every assignment: up to 4 members and 7 partitions."""
    n_topics = draw(st.integers(1, 3))
    topics = [f"t{i}" for i in range(n_topics)]
    counts = draw(st.lists(st.integers(0, 3), min_size=n_topics, max_size=n_topics))
    partitions = dict(zip(topics, counts, strict=True))
    all_tps = [(t, p) for t in topics for p in range(partitions[t])][:7]
    partitions = {t: sum(1 for tp in all_tps if tp[0] == t) for t in topics}
    n_members = draw(st.integers(1, 4))
    members = []
    for i in range(n_members):
        subs = draw(st.lists(st.sampled_from(topics), min_size=1, max_size=n_topics, unique=True))
        members.append(MemberSpec(f"m{i}", tuple(subs)))
    owners = draw(st.lists(st.integers(-1, n_members - 1), min_size=len(all_tps), max_size=len(all_tps)))
    owned: dict[int, list[tuple[str, int]]] = {}
    for tp, o in zip(all_tps, owners, strict=True):
        if o >= 0:
            owned.setdefault(o, []).append(tp)
    return GroupSpec(
        tuple(replace(m, owned=tuple(owned.get(i, [])), generation=1) for i, m in enumerate(members)),
        partitions,
    )


@settings(max_examples=150, deadline=None)
@given(tiny_groups())
def test_sticky_moves_the_fewest_partitions_any_most_balanced_assignment_moves(g: GroupSpec) -> None:
    import itertools

    tps = g.all_partitions()
    ids = [m.member_id for m in g.members]
    subs = {m.member_id: set(m.topics) for m in g.members}
    # a claim counts where its member still subscribes to the topic (Kafka drops the others)
    claims = {tp: m.member_id for m in g.members for tp in m.owned if tp[0] in subs[m.member_id]}
    choices = [[m for m in ids if tp[0] in subs[m]] for tp in tps]
    best: tuple[int, int] | None = None  # (spread, moves)
    for combo in itertools.product(*choices):
        counts = dict.fromkeys(ids, 0)
        for m in combo:
            counts[m] += 1
        spread = max(counts.values()) - min(counts.values())
        moves = sum(1 for tp, m in zip(tps, combo, strict=True) if tp in claims and claims[tp] != m)
        if best is None or (spread, moves) < best:
            best = (spread, moves)
    a = assign("sticky", g)
    holder = {tp: m for m, v in a.items() for tp in v}
    ld = [len(v) for v in a.values()]
    ours = (max(ld) - min(ld), sum(1 for tp, m in claims.items() if holder.get(tp) != m))
    assert ours == best


@SETTINGS
@given(groups())
def test_cooperative_settles_in_a_second_rebalance(g: GroupSpec) -> None:
    first = assign("cooperative-sticky", g)
    target = assign("sticky", g)
    subs = {m.member_id: set(m.topics) for m in g.members}
    owners = {tp: m.member_id for m in g.members for tp in m.owned if tp[0] in subs[m.member_id]}
    withheld = {tp for tps in target.values() for tp in tps} - {tp for tps in first.values() for tp in tps}
    # only partitions that change owner while the owner keeps the topic wait for the second round
    assert all(tp in owners for tp in withheld)
    assert all(set(first[m]) <= set(target[m]) for m in first)
    # second rebalance: members own what the first one gave them, one generation later
    second_group = GroupSpec(
        tuple(replace(m, owned=tuple(first[m.member_id]), generation=m.generation + 1) for m in g.members),
        g.partitions,
        g.partition_racks,
    )
    second = assign("cooperative-sticky", second_group)
    check_valid(g, second, complete=True)
    assert all(set(first[m]) <= set(second[m]) for m in first), "the second rebalance revoked again"
    assert_min_spread(g, second)
