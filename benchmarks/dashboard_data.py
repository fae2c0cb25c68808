"""Synthetic group documents in the coordinator model's shape, for the dashboard benchmark (a fleet of
50,000 groups, a group of 100 members on 1,000 partitions). Real data comes from the captures; these
only need the size and the shape."""

from __future__ import annotations

import random
from typing import Any

STATES = ["Stable", "Stable", "Stable", "Empty", "PreparingRebalance", "CompletingRebalance"]


def synthetic_group(
    name: str,
    n_members: int,
    n_partitions: int,
    now_ms: int,
    *,
    n_topics: int = 10,
    n_generations: int = 20,
    seed: int = 0,
) -> dict[str, Any]:
    rnd = random.Random(seed)
    topics = [f"{name}-topic-{i}" for i in range(n_topics)]
    per_topic = max(1, n_partitions // n_topics)
    tps = [(t, p) for t in topics for p in range(per_topic)]
    members = []
    for i in range(n_members):
        mid = f"consumer-{i}-{rnd.getrandbits(64):016x}"
        members.append(
            {
                "member_id": mid,
                "group_instance_id": None,
                "client_id": f"consumer-{i}",
                "client_host": f"/10.0.{i // 250}.{i % 250}",
                "session_timeout_ms": 45000,
                "rebalance_timeout_ms": 300000,
                "subscription": topics,
                "assignment": [],
                "last_heartbeat": now_ms - rnd.randint(0, 5000),
            }
        )
    for j, tp in enumerate(tps):
        if members:
            members[j % len(members)]["assignment"].append(list(tp))
    owner = {tuple(tp): m["member_id"] for m in members for tp in m["assignment"]}
    partitions = []
    offsets: list[dict[str, Any]] = []
    for t, p in tps:  # the spellings of `groupscope model --json`
        end = rnd.randint(1000, 10_000_000)
        lag = rnd.choice([0, 0, 0, rnd.randint(0, 5000)])
        partitions.append(
            {
                "topic": t,
                "partition": p,
                "committed": end - lag,
                "has_commit": True,
                "end_offset": end,
                "lag": lag,
                "lag_seconds": round(lag / 200, 1),
                "status": "OK" if lag < 1000 else "WARN",
                "member_id": owner.get((t, p)),
            }
        )
        offsets.append(
            {
                "topic": t,
                "partition": p,
                "offset": end - lag,
                "commit_timestamp": now_ms - 1000,
                "metadata": "",
            }
        )
    start = now_ms - 3600_000
    gens, timeline = [], []
    t = start
    for g in range(1, n_generations + 1):
        dur = rnd.randint(50, 5000)
        timeline.append({"state": "PreparingRebalance", "start": t, "end": t + dur})
        timeline.append({"state": "CompletingRebalance", "start": t + dur, "end": t + dur + 20})
        nxt = t + dur + 20 + rnd.randint(10_000, 200_000)
        timeline.append(
            {"state": "Stable", "start": t + dur + 20, "end": None if g == n_generations else nxt}
        )
        gens.append(
            {
                "generation": g,
                "start": t,
                "end": t + dur + 20,
                "duration_ms": dur + 20,
                "members_joined": [members[g % len(members)]["member_id"]] if members else [],
                "members_left": [],
                "assignment": None,
                "protocol": "range",
                "cause": rnd.choice(["member_joined", "member_left", "session_timeout"]),
                "reason": "Adding new member",
                "inferred": [],
            }
        )
        t = nxt
    total = sum(p["lag"] for p in partitions)
    return {
        "group": name,
        "type": "classic",
        "state": timeline[-1]["state"] if timeline else "Empty",
        "protocol_type": "consumer",
        "protocol": "range",
        "generation": n_generations,
        "group_epoch": None,
        "assignment_epoch": None,
        "leader": members[0]["member_id"] if members else None,
        "coordinator_partition": rnd.randint(0, 49),
        "members": members,
        "offsets": offsets,
        "timeline": timeline,
        "generations": gens,
        "lag": {
            "total": total,
            "max_seconds": max((p["lag_seconds"] for p in partitions), default=0),
            "partitions": partitions,
        },
        "sources": ["offsets", "admin"],
        "inferred": [],
    }


def small_fleet_doc(i: int, now_ms: int, topic: str | None = None) -> dict[str, Any]:
    """A small group for the 50,000-group fleet: 0-5 members, a few partitions, a state; reading one
    topic of its own, or `topic`."""
    rnd = random.Random(i)
    state = rnd.choice(STATES)
    n = 0 if state == "Empty" else rnd.randint(1, 5)
    doc = synthetic_group(
        f"group-{i:05d}", n, rnd.randint(1, 12), now_ms, n_topics=1, n_generations=rnd.randint(1, 15), seed=i
    )
    doc["state"] = state
    if topic is not None:
        rename_topic(doc, f"group-{i:05d}-topic-0", topic)
    return doc


def rename_topic(doc: dict[str, Any], old: str, new: str) -> None:
    """The group reads `new` where it read `old` (members, offsets, lag rows)."""
    for m in doc["members"]:
        m["assignment"] = [[new if t == old else t, p] for t, p in m["assignment"]]
        m["subscription"] = [new if t == old else t for t in m.get("subscription") or []]
    for row in doc["offsets"] + doc["lag"]["partitions"]:
        if row.get("topic") == old:
            row["topic"] = new
