"""Time every assignor on 10, 100 and 1000 members over 10,000 partitions (100 topics x 100).

Subscriptions: `same` (every member on all 100 topics) or `mixed` (each member on a random 10-60
topics, seeded). Two situations per group: `fresh` (nobody owns anything) and `rejoin` (the group
ran the sticky target with 10% fewer members, those owners come back with their partitions and the
rest join empty), which is the case the sticky assignors' stickiness work is for.

usage: python benchmarks/assign.py [--members 10,100,1000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import replace

from coordinator_model.assignors import ASSIGNORS, GroupSpec, MemberSpec, assign

TOPICS = [f"topic-{i:03d}" for i in range(100)]
PARTITIONS = dict.fromkeys(TOPICS, 100)


def make_group(n_members: int, mixed: bool, seed: int = 7) -> GroupSpec:
    rng = random.Random(seed)
    members = []
    for i in range(n_members):
        topics = tuple(sorted(rng.sample(TOPICS, rng.randint(10, 60)))) if mixed else tuple(TOPICS)
        members.append(MemberSpec(member_id=f"consumer-{i:04d}-{rng.getrandbits(32):08x}", topics=topics))
    # every topic needs at least one subscriber to be part of the group's 10,000 partitions
    covered = {t for m in members for t in m.topics}
    if covered != set(TOPICS):
        first = members[0]
        members[0] = replace(first, topics=tuple(sorted(set(first.topics) | set(TOPICS))))
    return GroupSpec(tuple(members), PARTITIONS)


def with_owners(group: GroupSpec) -> GroupSpec:
    """Members as they rejoin after 10% of them were added: the others own their previous target."""
    n_old = max(1, len(group.members) * 9 // 10)
    old = GroupSpec(group.members[:n_old], group.partitions)
    previous = assign("sticky", old)
    members = [
        replace(
            m, owned=tuple(previous.get(m.member_id, ())), generation=5 if m.member_id in previous else -1
        )
        for m in group.members
    ]
    return GroupSpec(tuple(members), group.partitions)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    rows = []
    for n in (int(x) for x in args.members.split(",")):
        for mixed in (False, True):
            base = make_group(n, mixed)
            for situation, group in (("fresh", base), ("rejoin", with_owners(base))):
                for name in ASSIGNORS:
                    best = float("inf")
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        result = assign(name, group)
                        best = min(best, time.perf_counter() - t0)
                    counts = [len(v) for v in result.values()]
                    rows.append(
                        (n, "mixed" if mixed else "same", situation, name, best, max(counts) - min(counts))
                    )
                    n_, subs_, sit_, _, _, spread_ = rows[-1]
                    print(f"{n_:>5} {subs_:>5} {sit_:>6} {name:>18} {best * 1000:9.1f} ms  spread {spread_}")
    print()
    print("| members | subscriptions | situation | assignor | ms per assignment | spread |")
    print("|---:|---|---|---|---:|---:|")
    for n, subs, situation, name, secs, spread in rows:
        print(f"| {n} | {subs} | {situation} | {name} | {secs * 1000:.1f} | {spread} |")


if __name__ == "__main__":
    main()
