"""Taking back what weak evidence alone did: a session expiry our timer inferred, a `leave` or a
join a client event alone reported, when later evidence shows it did not happen and nothing
else happened since.
"""

from __future__ import annotations

from coordinator_model.membership import Generation


class TakeBacks:
    """Undo a member's removal or join, and the rebalance it alone opened."""

    # the rebalance a client's `leave` alone opened, to take back if that member speaks again
    # (`unleave`; as _expiry_undo, and a class default for engines pickled before it); and the one a
    # new member id's first event alone opened, to take back if a snapshot does not list it (`unjoin`)
    _leave_undo: tuple[str, int, str, Generation, int] | None = None
    _join_undo: tuple[str, int, str, Generation, int] | None = None

    def revive(self, member_id: str) -> bool:
        """Undo a session expiry inferred from silent heartbeats when the member speaks again before
        anything else happened: an event from before the expiry that arrived late (the timers ran
        ahead of the events' transport), or a poll_stall (librdkafka serves the statistics behind
        heartbeat events from poll(), so a stalled poll() silences the probe before it reports)."""
        undo = self._expiry_undo
        self._expiry_undo = None
        return self._undo_removal(undo, member_id)

    def unleave(self, member_id: str) -> bool:
        """Undo the rebalance a client `leave` opened where client events are the group's only account
        (no records, no broker log, no snapshot listing members), when the same member speaks again
        before anything else happened: a dynamic member's id ends with its LeaveGroup (its client
        rejoins with a new one), so the leave was not its own but written in its name."""
        undo = self._leave_undo
        if undo is None or undo[0] != member_id:
            return False
        self._leave_undo = None
        return self._undo_removal(undo, member_id)

    def unjoin(self, member_id: str, ts: int) -> bool:
        """Undo the rebalance a new member id's first client event opened where there are no records,
        when a snapshot that lists the group's members does not list it, before anything else
        happened: the member the event named is not one the coordinator has."""
        undo = self._join_undo
        if undo is None or undo[0] != member_id:
            return False
        self._join_undo = None
        _, rows_before, state_before, g, rows_after = undo
        if self.open is not g or len(self.engine.timeline) != rows_after or g.joined != [member_id] or g.left:
            return False
        if self.engine.state != "PreparingRebalance" or member_id not in self.engine.members:
            return False
        del self.engine.timeline[rows_before:]
        self.engine.state = state_before
        self.open = None
        self.engine.members.pop(member_id)
        self.engine.departed[member_id] = ts  # its later events are a departed member's
        return True

    def _undo_removal(self, undo: tuple[str, int, str, Generation, int] | None, member_id: str) -> bool:
        """Take back a member's removal and the rebalance it alone opened (`undo`: the member, the
        timeline's length and the state before, that rebalance, the timeline's length after), if
        nothing happened since."""
        if undo is None:
            return False
        removed, rows_before, state_before, g, rows_after = undo
        if removed != member_id or self.open is not g or len(self.engine.timeline) != rows_after:
            return False
        if g.left != [member_id] or g.joined or self.engine.state != "PreparingRebalance":
            return False
        m = self.engine.departed_members.pop(member_id, None)
        if m is None:
            return False
        del self.engine.timeline[rows_before:]
        self.engine.state = state_before
        self.open = None
        self.engine.departed.pop(member_id, None)
        self.engine.members[member_id] = m
        return True
