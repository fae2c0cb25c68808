"""Which partitions' log ends an Admin poll wants (collectors/pipeline/wanted_ends.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from collectors.pipeline.wanted_ends import Wanted

TPS = st.frozensets(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5)), max_size=8)


@given(st.lists(st.tuples(st.sampled_from(["g1", "g2", "g3"]), TPS, st.booleans()), max_size=12))
def test_wanted_is_the_union_of_what_each_group_was_given(adds) -> None:
    w = Wanted()
    plain: dict[str, set] = {}
    for group, tps, as_list in adds:
        w.add(group, sorted(tps) if as_list else tps)  # a list (an answer) or a kept frozenset
        plain.setdefault(group, set()).update(tps)
    assert w.partitions() == sorted(set().union(*plain.values()))
    assert set(w.groups()) == set(plain)
    for group, tps in plain.items():
        assert w.of(group) == tps


def test_a_group_given_nothing_is_still_a_group_of_the_poll() -> None:
    """(its denied line for end offsets is cleared when an ACL no longer withholds them)"""
    w = Wanted()
    w.add("idle", ())
    assert w.groups() == ["idle"] and w.of("idle") == frozenset() and w.partitions() == []


def test_the_same_sets_kept_by_many_groups_are_merged_once() -> None:
    shared = frozenset(("orders", p) for p in range(100))
    w = Wanted()
    for i in range(10_000):
        w.add(f"g{i}", shared)
    assert w.partitions() == sorted(shared)
