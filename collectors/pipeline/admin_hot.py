"""Which groups are changing right now, so the Admin poller describes them every tenth of a
second between its full polls (admin_hot_interval_s, default 0.1 s), while steady groups wait
for the next full poll (admin_poll_interval_s) or their resend.

A rebalance's phases last from a few hundred milliseconds to a rebalance timeout: a describe every
5 s sees few of them, and the model then has to infer when they began. A group is hot from the
moment a describe shows it in motion (PreparingRebalance, CompletingRebalance, Assigning,
Reconciling) until a little after it is steady again (a cooperative group rebalances twice in a
row; a storm goes on), and for a moment after any describe that changed (members, assignment):
the poller's cost follows the number of groups that change, not the size of the fleet.
"""

from __future__ import annotations

# not in motion: a streams group NotReady waits for its source topics, not for a rebalance, and may
# wait for days (described fast, it would be every tenth of a second all that time)
STEADY = frozenset({"Stable", "Empty", "Dead", "NotReady"})
HOLD_MS = 60_000  # in motion: described fast for up to this long after the last describe in motion
TAIL_MS = 5_000  # and for this long after it is steady again, or after a describe that changed


class HotGroups:
    def __init__(self, hold_ms: int = HOLD_MS, tail_ms: int = TAIL_MS) -> None:
        self.hold_ms = hold_ms
        self.tail_ms = tail_ms
        self._until: dict[str, int] = {}  # group -> described fast until then (epoch ms)

    def saw(self, group: str, state: str, changed: bool, now_ms: int) -> None:
        """A describe of `group` at `now_ms` found it in `state`; `changed`: unlike the last one."""
        until = self._until.get(group)
        if state not in STEADY:
            self._until[group] = now_ms + self.hold_ms
        elif until is not None:
            self._until[group] = min(until, now_ms + self.tail_ms)
        if changed:
            self.changed(group, now_ms)

    def changed(self, group: str, now_ms: int) -> None:
        """Something showed `group` changing at `now_ms`: described fast for at least `tail_ms` more
        (a group already in motion keeps its longer hold)."""
        self._until[group] = max(self._until.get(group, 0), now_ms + self.tail_ms)

    def due(self, now_ms: int) -> list[str]:
        """The groups to describe now (those whose time ran out are dropped)."""
        for g in [g for g, until in self._until.items() if until <= now_ms]:
            del self._until[g]
        return sorted(self._until)

    def forget(self, known: set[str]) -> None:
        """Groups the cluster no longer lists are not described."""
        for g in [g for g in self._until if g not in known]:
            del self._until[g]

    def __len__(self) -> int:
        return len(self._until)


HOT_S_PER_GROUP = 0.001  # at least this much of the hot interval per hot group (see hot_interval)


def hot_interval(configured_s: float, hot_groups: int) -> float:
    """How often the hot groups are described: `admin_hot_interval_s`, stretched by a millisecond a
    hot group beyond a hundred, so the poller describes at most about a thousand groups a second.
    A few groups in motion are what the short interval is for (a rebalance's phases timed within
    50 ms); when thousands are (a storm across the fleet, the hints of a catch-up), describing each
    every tenth of a second took the CPU the catch-up needed (benchmarks/RESULTS.md)."""
    return max(configured_s, hot_groups * HOT_S_PER_GROUP)
