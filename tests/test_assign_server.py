"""KIP-848 server-side assignors: the broker's range (sticky within range quotas) and uniform."""

from __future__ import annotations

from coordinator_model.assignors import GroupSpec, MemberSpec, assign


def test_server_range_without_history_is_plain_range() -> None:
    g = GroupSpec(tuple(MemberSpec(m, ("t",)) for m in ("c", "a", "b")), {"t": 5})
    assert assign("server-range", g) == {
        "a": [("t", 0), ("t", 1)],
        "b": [("t", 2), ("t", 3)],
        "c": [("t", 4)],
    }


def test_server_range_keeps_partitions_within_quota() -> None:
    g = GroupSpec(
        (
            MemberSpec("a", ("t",), owned=(("t", 3), ("t", 4))),
            MemberSpec("b", ("t",), owned=(("t", 0),)),
            MemberSpec("c", ("t",)),
        ),
        {"t": 5},
    )
    # quota 1 each plus 2 extra: a keeps both (one extra), b keeps 0 and takes the last extra (1),
    # c takes what is left
    assert assign("server-range", g) == {
        "a": [("t", 3), ("t", 4)],
        "b": [("t", 0), ("t", 1)],
        "c": [("t", 2)],
    }


def test_server_range_takes_back_over_quota_partitions() -> None:
    owned = tuple(("t", p) for p in range(6))
    g = GroupSpec((MemberSpec("a", ("t",), owned=owned), MemberSpec("b", ("t",))), {"t": 6})
    assert assign("server-range", g) == {
        "a": [("t", 0), ("t", 1), ("t", 2)],
        "b": [("t", 3), ("t", 4), ("t", 5)],
    }


def test_uniform_is_sticky_and_balanced_over_different_subscriptions() -> None:
    g = GroupSpec(
        (
            MemberSpec("a", ("t0", "t1"), owned=(("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1))),
            MemberSpec("b", ("t1",), owned=(("t1", 2),)),
            MemberSpec("c", ("t0", "t1")),
        ),
        {"t0": 2, "t1": 4},
    )
    result = assign("uniform", g)
    assert sorted(len(v) for v in result.values()) == [2, 2, 2]
    assert ("t1", 2) in result["b"]
    # a gives up exactly two partitions, and keeps the rest
    assert len(set(result["a"]) & {("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)}) == 2
