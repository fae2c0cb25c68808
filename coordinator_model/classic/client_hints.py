"""What a classic group's clients said before the coordinator's account showed it: a member's
`leave` and a new member id's first event are hints (their time and cause) for the rebalance the
coordinator's records or snapshots show next, not facts (anyone who may write the heartbeat topic
can write them; docs/security.md).
"""

from __future__ import annotations

from collections.abc import Collection

from coordinator_model.evidence import POLL_INTERVAL_MAX_MS

# Members whose `leave` a client event reported, and member ids client events named, that the
# coordinator's account has not shown yet (ClassicGroupModel.on_heartbeat): kept per group at most
# this many of each, the oldest dropped first.
MAX_LEAVE_HINTS = 100
DEFAULT_REBALANCE_TIMEOUT_MS = 300_000  # max.poll.interval.ms's default: a classic member's rebalance timeout


class ClientHints:
    """The leaves and joins client events reported that the coordinator's account has not shown yet."""

    # member id -> (when its client said it left, whether its poll() had stalled): leaves not taken
    # as said yet (`hint_leave`; a class default for engines pickled before it, made when first used)
    _leave_hints: dict[str, tuple[int, bool]] | None = None
    # member id -> when a client event first named it, for a member id the coordinator's account
    # does not have yet (`hint_join`; likewise a class default)
    _join_hints: dict[str, int] | None = None

    # -- leaves reported by clients, waiting for the coordinator's account ------------------------
    def hint_leave(self, member_id: str, ts: int, stalled: bool) -> None:
        """`member_id`'s client said it left at `ts`: a hint, not yet a fact (see on_heartbeat)."""
        hints = self._leave_hints
        if hints is None:
            hints = self._leave_hints = {}
        if member_id in hints:
            return  # the first leave is when it left
        hints[member_id] = (ts, stalled)
        if len(hints) > MAX_LEAVE_HINTS:
            oldest = next(iter(hints))
            del hints[oldest]
            if oldest in self.engine.members:
                self.engine.members[oldest].closed = False

    def hint_join(self, member_id: str, ts: int) -> None:
        """A member id the coordinator's account does not have yet spoke at `ts`: a hint of a join."""
        hints = self._join_hints
        if hints is None:
            hints = self._join_hints = {}
        if member_id in hints:
            return
        hints[member_id] = ts
        if len(hints) > MAX_LEAVE_HINTS:
            del hints[next(iter(hints))]

    def leave_hint(self, member_id: str) -> tuple[int, bool] | None:
        return self._leave_hints.get(member_id) if self._leave_hints else None

    def drop_hint(self, member_id: str) -> tuple[int, bool] | None:
        return self._leave_hints.pop(member_id, None) if self._leave_hints else None

    def hinted_leaves(self, upto: int, exclude: Collection[str] = ()) -> list[tuple[str, int, bool]]:
        """The current members whose client said they left after the group's last transition and by
        `upto`: (member id, when, stalled). A hint from before the last transition is stale (the
        group moved on without it) and is dropped."""
        hints = self._leave_hints
        if not hints:
            return []
        out = []
        last = self.engine.last_ts()
        joiners = self._join_hints or {}
        for mid, (ts, stalled) in list(hints.items()):
            if mid in joiners and mid not in self.engine.members:
                continue  # a joiner that left before any record listed it (transient_joiners)
            if ts < last or mid not in self.engine.members:
                del hints[mid]
                if mid in self.engine.members:
                    self.engine.members[mid].closed = False  # still a member, as far as anyone knows
            elif ts <= upto and mid not in exclude:
                out.append((mid, ts, stalled))
        return out

    def transient_joiners(self, listed: set[str]) -> list[str]:
        """The member ids client events named that joined and left (both hints) without a record
        listing them; their hints are taken."""
        out = []
        for mid in sorted(self._join_hints or ()):
            if mid not in listed and self.leave_hint(mid) is not None:
                del self._join_hints[mid]
                self.drop_hint(mid)
                out.append(mid)
        return out

    def hinted_joins(self, upto: int) -> list[tuple[str, int]]:
        """The member ids client events named, not members yet, after the group's last transition and
        by `upto`, no longer ago than a rebalance may take (the members' rebalance timeout: a join's
        rebalance shows, in a record at the latest, within it): (member id, when first named), in
        that order. Stale ones are dropped."""
        hints = self._join_hints
        if not hints:
            return []
        out = []
        last = self.engine.last_ts()
        timeouts = [m.rebalance_timeout_ms or 0 for m in self.engine.members.values()]
        window = min(max(timeouts, default=0) or DEFAULT_REBALANCE_TIMEOUT_MS, POLL_INTERVAL_MAX_MS)
        for mid, ts in list(hints.items()):
            if ts < last or ts < upto - window or mid in self.engine.members:
                del hints[mid]
            elif ts <= upto and self.leave_hint(mid) is None:  # (a transient one waits for its record)
                out.append((mid, ts))
        return sorted(out, key=lambda x: (x[1], x[0]))
