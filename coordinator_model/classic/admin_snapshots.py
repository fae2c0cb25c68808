"""A classic group's Admin API snapshots (DescribeConsumerGroups) replayed: exact at their
timestamp, sampled in between; a state the other sources missed is adopted, a rebalance that
happened between two snapshots is inferred.
"""

from __future__ import annotations

from coordinator_model.evidence import DescribeSnapshot
from coordinator_model.membership import Member

DESCRIBE_SKEW_MS = 250  # a snapshot this close to a known transition may predate it


class AdminSnapshotReplay:
    """Admin API snapshots, onto the group's state machine."""

    def on_describe(self, ev: DescribeSnapshot) -> None:
        if ev.state == "Dead":
            if self.engine.state is not None and self.engine.state != "Dead" and not ev.members:
                self.goto("Dead", ev.ts, True)
                self.engine.deleted = True
                self.engine.members.clear()
            return
        self.engine.typed("classic", "describe")
        if ev.simple:
            self.simple = True
        if ev.assignor and self.engine.names_a_member(ev.assignor):
            self.engine.conflict(
                "assignor", ev.ts, f"the Admin API's assignor field holds a member id ({ev.assignor})"
            )
        elif ev.assignor:
            self.protocol = ev.assignor
        doubt = self.engine.contradiction(ev)
        if doubt is not None:
            # a snapshot that cannot be right: it does not wipe members or assignment, nor move the
            # state the client events follow
            self.engine.conflict("members", ev.ts, doubt)
            self._last_describe_ts = ev.ts
            return
        if "broker_log" not in self.engine.sources and (ev.members or ev.state == "Empty"):
            self.confirm_leaves(ev)
            if ev.members:
                self.take_back(ev)
        # members and assignments are exact at ts
        self.snapshot_members = self.snapshot_members or bool(ev.members)
        expiry = self._expiry_undo
        if (
            expiry is not None
            and ev.state == "Stable"
            and any(dm.member_id == expiry[0] for dm in ev.members)
        ):
            self.revive(expiry[0])  # the coordinator still has the member our heartbeat timer expired
        prev = set(self.engine.members)
        before = {mid: (m.group_instance_id, m.assignment) for mid, m in self.engine.members.items()}
        listed = {dm.member_id for dm in ev.members}
        for mid in prev - listed:
            m = self.engine.members[mid]
            if (
                "broker_log" not in self.engine.sources
                and m.last_heartbeat is not None
                and m.session_timeout_ms
                and ev.ts - m.last_heartbeat >= m.session_timeout_ms // 2
            ):
                # gone while its heartbeats had stopped: the coordinator expired its session
                self.expire(mid, min(ev.ts, m.last_heartbeat + m.session_timeout_ms))
            else:
                self.engine.remove_member(mid, ev.ts)
                if self.open is not None and mid not in self.open.left:
                    self.open.left.append(mid)
        keep = dict(self.engine.members)
        self.engine.members = {}
        for dm in ev.members:
            gone = self.engine.departed.get(dm.member_id)
            if dm.member_id not in keep and gone is not None and 0 <= ev.ts - gone <= DESCRIBE_SKEW_MS:
                continue  # it left a moment ago: the snapshot was taken just before its LeaveGroup
            m = keep.get(dm.member_id) or Member(dm.member_id)
            m.group_instance_id = dm.group_instance_id
            m.client_id = dm.client_id or m.client_id
            m.client_host = dm.host or m.client_host
            if ev.state == "Stable" or dm.assignment:
                # Kafka describes a group that is not Stable without assignments (summaryNoMetadata):
                # that is not evidence that its members hold nothing
                m.assignment = dm.assignment
            self.engine.members[dm.member_id] = m
            self.engine.departed.pop(dm.member_id, None)
        for mid in prev - set(self.engine.members):
            self.engine.departed[mid] = ev.ts
        if self.leader not in self.engine.members:
            self.leader = None if not self.engine.members else self.leader
        state = ev.state
        if state not in ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty"):
            return
        prev_snapshot, self._last_describe_ts = self._last_describe_ts, ev.ts
        if state == "Stable":
            self._last_stable_seen = ev.ts
        if "broker_log" in self.engine.sources:
            return
        if (
            state == "Stable"
            and self.engine.state == "Stable"
            and self.open is None
            and prev_snapshot is not None
            and self.engine.last_ts() <= prev_snapshot  # no rebalance seen since the last snapshot
            and "offsets" not in self.engine.sources
        ):
            self.missed_rebalance(ev, before, prev_snapshot)
            return
        if self.engine.state == state or ev.ts - self.engine.last_ts() < DESCRIBE_SKEW_MS:
            return
        # the snapshot shows a state the other sources missed: adopt it; it began somewhere between
        # the previous snapshot and this one
        if prev_snapshot is None or self.engine.last_ts() > prev_snapshot:
            # it was not so at our last transition, which is newer than the last snapshot: it began
            # in between (a cooperative follow-up, at that transition)
            last = self.engine.last_ts()
            if state == "PreparingRebalance" and self.follow_up_due():
                since = last + 1
            else:
                since = (last + ev.ts) // 2 if prev_snapshot is not None else ev.ts
        else:
            since = (prev_snapshot + ev.ts) // 2
        if state == "PreparingRebalance":
            g = self.open_rebalance(max(since, self.engine.last_ts()), "unknown", None, True, upto=ev.ts)
            for mid in listed - prev:
                if mid not in g.joined:
                    g.joined.append(mid)
        elif state in ("CompletingRebalance", "Stable"):
            if self.engine.state in ("Empty", None, "Stable") or self.open is not None:
                if "offsets" in self.engine.sources:
                    return  # the GroupMetadata record will say which generation, and when
                if self.open is None and self.engine.state != "CompletingRebalance":
                    self.open_rebalance(ev.ts, "unknown", None, True)
                gen = (self.generation or 0) + 1
                g = self.close_generation(gen, ev.ts, inferred=True)
                g.inferred.update({"stabilized", "stable"})
                g.stabilized = ev.ts
                g.members = tuple(self.engine.members)
                g.assignment = {k: v.assignment for k, v in self.engine.members.items()}
                g.protocol = ev.assignor or None
                self.gen_cause(g)
                self.goto("CompletingRebalance", ev.ts, True)
                if state == "Stable":
                    g.stable = ev.ts
                    self.goto("Stable", ev.ts, True)
        elif state == "Empty":
            if self.engine.state is None:
                self.goto("Empty", ev.ts, True)
            elif "offsets" not in self.engine.sources:
                self.become_empty(ev.ts, inferred=True)

    def missed_rebalance(self, ev: DescribeSnapshot, before: dict, prev_snapshot: int) -> None:
        """Two Stable snapshots with different members or assignments: a whole rebalance happened
        between them (Admin API polling sees only states that last longer than its interval)."""
        now = {dm.member_id: (dm.group_instance_id, dm.assignment) for dm in ev.members}
        if now == before:
            return
        joined = [m for m in now if m not in before]
        left = [m for m in before if m not in now]
        if joined and len(joined) == len(left):
            # a restarted static member keeps its instance id and partitions: no rebalance
            old = sorted(v for m, v in before.items() if m in left)
            new = sorted(v for m, v in now.items() if m in joined)
            if (
                old == new
                and all(inst for inst, _ in old)
                and all(before[m] == now[m] for m in now if m in before)
            ):
                return
        g = self.open_rebalance(
            max((prev_snapshot + ev.ts) // 2, self.engine.last_ts()), "unknown", None, True, upto=ev.ts
        )
        g.joined.extend(m for m in joined if m not in g.joined)
        g.left.extend(m for m in left if m not in g.left)
        c = self.close_generation((self.generation or 0) + 1, ev.ts, inferred=True)
        c.inferred.update({"stabilized", "stable"})
        c.stabilized = c.stable = ev.ts
        c.members = tuple(now)
        c.assignment = {m: v[1] for m, v in now.items()}
        c.protocol = ev.assignor or None
        self.gen_cause(c)
        self.goto("CompletingRebalance", ev.ts, True)
        self.goto("Stable", ev.ts, True)

    def take_back(self, ev: DescribeSnapshot) -> None:
        """A snapshot that lists the group's members, taken more than a moment after a client event
        alone opened a rebalance: it still lists the member that event said left, or does not list
        the one it said joined. The event was not that member's (`unleave`, `unjoin`)."""
        listed = {dm.member_id for dm in ev.members}
        leave = self._leave_undo
        if leave is not None and leave[0] in listed and ev.ts - leave[3].start > DESCRIBE_SKEW_MS:
            self.unleave(leave[0])
        join = self._join_undo
        if join is not None and join[0] not in listed and ev.ts - join[3].start > DESCRIBE_SKEW_MS:
            self.unjoin(join[0], ev.ts)

    def confirm_leaves(self, ev: DescribeSnapshot) -> None:
        """A snapshot that lists the group's members (an Empty group has none): the leave its client
        reported of a member it no longer lists happened, as said; of a member it still lists, more
        than a moment after the leave, it did not."""
        listed = {dm.member_id for dm in ev.members}
        self.refute_hints(listed, ev.ts)
        for mid, (ts, stalled) in list((self._leave_hints or {}).items()):
            if mid not in listed and mid in self.engine.members and ts <= ev.ts:
                self.drop_hint(mid)
                self.leave(mid, ts, stalled)
