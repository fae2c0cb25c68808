"""A classic member whose poll() stalled: its client leaves the group by itself when
max.poll.interval.ms runs out (librdkafka sends LeaveGroup then, while heartbeats from the
background thread go on), and the gap its poll_timeout generation reports.
"""

from __future__ import annotations

from coordinator_model.membership import Generation, Member

POLL_LEAVE_SLACK_MS = 2_000  # a poll_stall event is emitted up to about a second late
POLL_STALL_WINDOW_MS = 30_000  # a LeaveGroup this soon after a poll_stall is the poll interval expiring


class PollTimeouts:
    """Leaves that a stalled poll() explains, and how long the member had not polled."""

    def poll_stalled(self, member_id: str, ts: int, m: Member | None) -> bool:
        if m is None or m.poll_stall_at is None:
            return False
        return 0 <= ts - m.poll_stall_at <= max(POLL_STALL_WINDOW_MS, (m.max_poll_interval_ms or 0))

    def poll_left_at(self, m: Member, ts: int) -> int | None:
        """When `m`'s client left the group by itself because its poll interval expired (librdkafka
        sends LeaveGroup then), if a rebalance seen at `ts` can be that; None otherwise."""
        if m.poll_stall_at is None or m.closed:
            return None
        interval = m.max_poll_interval_ms or m.rebalance_timeout_ms or 0
        left = m.poll_stall_at + interval // 2  # poll_stall is reported at half the interval
        if left - POLL_LEAVE_SLACK_MS <= ts <= m.poll_stall_at + max(POLL_STALL_WINDOW_MS, interval):
            return left
        return None

    def poll_expired(self, ts: int, g: Generation) -> None:
        """A rebalance that began with no join or leave in sight: a member whose poll() stalled long
        enough has left by itself (heartbeats from the background thread go on, so they say nothing)."""
        for m in sorted(self.engine.members.values(), key=lambda m: m.poll_stall_at or 0):
            left = self.poll_left_at(m, ts)
            if left is None:
                continue
            self.engine.remove_member(m.member_id, min(left, ts))
            g.left.append(m.member_id)
            g.cause = "poll_timeout"
            g.member_id = m.member_id
            g.gap_ms = self.poll_gap(m, min(left, ts))
            return

    def stall_ended(self, mid: str, m: Member, ts: int) -> None:
        """The stalled client polled again at `ts` (librdkafka reports `lost` from that poll): the
        poll gap of its poll_timeout generation is now known in full, from the stall's start to this
        poll, not just to the leave. The what-if needs the full gap: a max.poll.interval.ms below
        it would not have avoided the rebalance."""
        if m.poll_stall_at is None:
            return
        start = m.poll_stall_at - (m.max_poll_interval_ms or m.rebalance_timeout_ms or 0) // 2
        recent = [self.open] + [self.generations[k] for k in sorted(self.generations, reverse=True)[:3]]
        for g in recent:
            if g is not None and g.cause == "poll_timeout" and (g.member_id or mid) == mid and mid in g.left:
                g.member_id = mid
                g.gap_ms = max(g.gap_ms or 0, ts - start)
                return

    @staticmethod
    def poll_gap(m: Member | None, left_ts: int) -> int | None:
        """How long the member had not polled when it left: from the stall's start (the poll_stall
        event comes at half the interval) to the leave, else the poll interval itself."""
        if m is None:
            return None
        interval = m.max_poll_interval_ms or m.rebalance_timeout_ms
        if m.poll_stall_at is not None:
            return max(0, left_ts - (m.poll_stall_at - (interval or 0) // 2))
        return interval
