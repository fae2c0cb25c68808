"""Rack-aware range assignment (KIP-881), held against the expectations in Kafka 4.0's own
RangeAssignorTest. Replica placement follows that test's helper: brokers numbered 0..racks*rf-1 with
broker b on rack "abc..."[b % racks], partition i of a topic on brokers (i + j + offset) % brokers for
j < rf, where offset counts the partitions of the topics before it."""

from __future__ import annotations

from coordinator_model.assignors import GroupSpec, MemberSpec, assign

RACKS = "abcdefg"


def replica_racks(topics: dict[str, int], rf: int, n_racks: int) -> dict[str, list[list[str]]]:
    brokers = n_racks * rf
    out: dict[str, list[list[str]]] = {}
    offset = 0
    for topic, n in topics.items():
        out[topic] = [
            sorted({RACKS[((i + j + offset) % brokers) % n_racks] for j in range(rf)}) for i in range(n)
        ]
        offset += n
    return out


def run(
    topics: dict[str, int], subs: list[list[str]], rf: int, n_racks: int, member_racks: list[str | None]
) -> list[str]:
    members = tuple(
        MemberSpec(f"consumer{i}", tuple(s), rack=r)
        for i, (s, r) in enumerate(zip(subs, member_racks, strict=True))
    )
    partitions = {t: topics.get(t, 0) for s in subs for t in s}
    racks = replica_racks(topics, rf, n_racks) if n_racks else {}
    result = assign("range", GroupSpec(members, partitions, racks))
    return [", ".join(f"{t}-{p}" for t, p in result[f"consumer{i}"]) for i in range(len(subs))]


ALL3 = ["t1", "t2", "t3"]


def test_uniform_subscription() -> None:
    topics = {"t1": 6, "t2": 7, "t3": 2}
    subs = [ALL3] * 3
    plain = ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"]
    assert run(topics, subs, 3, 0, ["a", "b", "c"]) == plain  # no partition racks
    assert run(topics, subs, 3, 3, [None, None, None]) == plain  # no member racks
    assert run(topics, subs, 3, 3, ["a", "b", "c"]) == plain  # every partition on every rack
    assert run(topics, subs, 3, 3, ["d", "e", "f"]) == plain  # no rack in common
    assert run(topics, subs, 1, 3, ["a", "b", "c"]) == [
        "t1-0, t1-3, t2-0, t2-3, t2-6",
        "t1-1, t1-4, t2-1, t2-4, t3-0",
        "t1-2, t1-5, t2-2, t2-5, t3-1",
    ]
    assert run(topics, subs, 2, 3, ["a", "b", "c"]) == [
        "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1",
        "t1-1, t1-3, t2-1, t2-4, t3-0",
        "t1-4, t1-5, t2-5, t2-6",
    ]
    assert run(topics, subs, 3, 2, ["a", "b", "c"]) == plain


def test_non_equal_subscription() -> None:
    topics = {"t1": 6, "t2": 7, "t3": 2}
    subs = [ALL3, ALL3, ["t1", "t3"]]
    assert run(topics, subs, 3, 3, ["a", "b", "c"]) == [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
        "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
        "t1-4, t1-5",
    ]
    assert run(topics, subs, 1, 3, ["a", "b", "c"]) == [
        "t1-0, t1-3, t2-0, t2-2, t2-3, t2-6",
        "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
        "t1-2, t1-5, t3-1",
    ]
    assert run(topics, subs, 2, 3, ["a", "b", "c"]) == [
        "t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1",
        "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
        "t1-4, t1-5",
    ]


def test_uniform_partitions_non_equal_subscription() -> None:
    topics = {"t1": 5, "t2": 5, "t3": 5}
    subs = [ALL3, ALL3, ["t1", "t3"]]
    # co-partitioning (t1 and t3 share members and partition count) wins over rack alignment
    assert run(topics, subs, 1, 3, ["a", "b", "c"]) == [
        "t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1",
        "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
        "t1-4, t3-4",
    ]
    assert run(topics, subs, 2, 3, ["a", "b", "c"]) == [
        "t1-2, t2-0, t2-1, t2-3, t3-2",
        "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3",
        "t1-1, t1-4, t3-1, t3-4",
    ]


def test_co_partitioning() -> None:
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    member_racks = ["a", "b", "b", "a"]
    subs = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    plain = [
        "t1-0, t1-1, t1-2, t2-0, t2-1, t2-2",
        "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5",
        "t3-0, t4-0",
        "t3-1, t4-1",
    ]
    assert run(topics, subs, 3, 2, member_racks) == plain
    assert run(topics, subs, 2, 2, member_racks) == plain
    assert run(topics, subs, 1, 2, member_racks) == [
        "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4",
        "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
        "t3-1, t4-1",
        "t3-0, t4-0",
    ]
    subs = [["t1", "t2", "t3", "t4"]] * 4
    assert run(topics, subs, 1, 2, member_racks) == [
        "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0",
        "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1",
        "t1-5, t2-5",
        "t1-4, t2-4",
    ]
    assert run(topics, subs, 1, 3, member_racks) == [
        "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0",
        "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
        "t1-2, t2-2",
        "t1-5, t2-5",
    ]


def test_co_partitioned_with_same_subscription() -> None:
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    subs = [["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]] * 3
    assert run(topics, subs, 2, 3, ["a", "b", "c"]) == [
        "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1",
        "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3",
    ]
