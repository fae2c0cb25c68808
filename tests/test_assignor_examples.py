"""Worked examples of Kafka's RangeAssignor and RoundRobinAssignor, and Kafka's member order."""

from __future__ import annotations

from coordinator_model.assignors import GroupSpec, MemberSpec, assign


def group(members: dict[str, list[str]], partitions: dict[str, int], **static: str) -> GroupSpec:
    return GroupSpec(
        tuple(MemberSpec(m, tuple(t), group_instance_id=static.get(m)) for m, t in members.items()),
        partitions,
    )


def test_range_five_partitions_over_three_consumers() -> None:
    g = group({"c2": ["t"], "c0": ["t"], "c1": ["t"]}, {"t": 5})
    assert assign("range", g) == {
        "c0": [("t", 0), ("t", 1)],
        "c1": [("t", 2), ("t", 3)],
        "c2": [("t", 4)],
    }


def test_range_javadoc_two_topics() -> None:
    g = group({"C0": ["t0", "t1"], "C1": ["t0", "t1"]}, {"t0": 3, "t1": 3})
    assert assign("range", g) == {
        "C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)],
        "C1": [("t0", 2), ("t1", 2)],
    }


def test_roundrobin_two_topics_two_consumers() -> None:
    g = group({"C1": ["t0", "t1"], "C0": ["t0", "t1"]}, {"t0": 3, "t1": 3})
    assert assign("roundrobin", g) == {
        "C0": [("t0", 0), ("t0", 2), ("t1", 1)],
        "C1": [("t0", 1), ("t1", 0), ("t1", 2)],
    }


def test_ta_tb_range_leaves_a_member_idle_round_robin_does_not() -> None:
    g = group({"Ca": ["Ta", "Tb"], "Cb": ["Ta", "Tb"], "Cc": ["Ta", "Tb"]}, {"Ta": 2, "Tb": 2})
    assert assign("range", g) == {
        "Ca": [("Ta", 0), ("Tb", 0)],
        "Cb": [("Ta", 1), ("Tb", 1)],
        "Cc": [],
    }
    assert assign("roundrobin", g) == {
        "Ca": [("Ta", 0), ("Tb", 1)],
        "Cb": [("Ta", 1)],
        "Cc": [("Tb", 0)],
    }


def test_roundrobin_skips_members_not_subscribed() -> None:
    g = group({"a": ["t0"], "b": ["t0", "t1"], "c": ["t1"]}, {"t0": 3, "t1": 3})
    # t0p0->a, t0p1->b, t0p2: c is not on t0, skipped -> a; t1p0->b, t1p1->c, t1p2: a skipped -> b.
    assert assign("roundrobin", g) == {
        "a": [("t0", 0), ("t0", 2)],
        "b": [("t0", 1), ("t1", 0), ("t1", 2)],
        "c": [("t1", 1)],
    }


def test_static_members_come_first_ordered_by_instance_id() -> None:
    # MemberInfo order: members with group.instance.id first (by instance id), then by member id.
    g = group({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 3}, c="i-1", b="i-2")
    assert assign("range", g) == {"c": [("t", 0)], "b": [("t", 1)], "a": [("t", 2)]}
    assert assign("roundrobin", g) == {"c": [("t", 0)], "b": [("t", 1)], "a": [("t", 2)]}


def test_member_ids_sort_like_java_strings() -> None:
    # Python orders U+FF21 (fullwidth A) before U+1F600; Java compares UTF-16 code units, and
    # U+1F600 starts with the surrogate 0xD83D < 0xFF21, so Kafka puts it first.
    g = group({"\uff21": ["t"], "\U0001f600": ["t"]}, {"t": 2})
    assert assign("range", g) == {"\U0001f600": [("t", 0)], "\uff21": [("t", 1)]}
