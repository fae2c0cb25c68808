"""Which partitions' log-end offsets one Admin poll wants, and for which groups (admin_poller.py).

A poll of 10,000 groups of 100 partitions wants a million (group, partition) pairs, nearly all of
them the same partitions every time: a group's assignment and committed partitions, kept by the
poller as frozensets from one poll to the next. Copied into a fresh set per group and then merged,
they were a million set insertions every poll on the driver, holding the interpreter lock the
Spark query's own driver threads need. Here each group's sets are kept as they are, by reference; a
frozenset caches its hash, so the poll's distinct sets (the groups on one topic often commit the
same partitions) are found without looking inside them, and only those are merged.
"""

from __future__ import annotations

from collections.abc import Iterable

TP = tuple[str, int]


class Wanted:
    """group -> the partitions whose log-end offsets it wants, as the frozensets they came in."""

    def __init__(self) -> None:
        self._by_group: dict[str, list[frozenset[TP]]] = {}

    def add(self, group: str, tps: Iterable[TP]) -> None:
        parts = tps if isinstance(tps, frozenset) else frozenset(tps)
        held = self._by_group.setdefault(group, [])
        if parts:
            held.append(parts)

    def groups(self) -> list[str]:
        return list(self._by_group)

    def of(self, group: str) -> frozenset[TP]:
        """Every partition `group` wants."""
        return frozenset().union(*self._by_group.get(group, ()))

    def partitions(self) -> list[TP]:
        """Every partition some group wants, sorted."""
        distinct = {parts for held in self._by_group.values() for parts in held}
        return sorted(frozenset().union(*distinct))
