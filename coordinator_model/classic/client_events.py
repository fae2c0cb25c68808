"""A classic group's client events (the probe's heartbeat topic) replayed: joins, leaves, poll stalls
and partition callbacks. Where the coordinator's records or log are there, they are hints for
what those show (client_hints.py); without them, the account of each rebalance.
"""

from __future__ import annotations

from coordinator_model.classic.admin_snapshots import DESCRIBE_SKEW_MS
from coordinator_model.evidence import HeartbeatEvent, poll_interval, session_timeout

ABANDON_MS = 1000  # a joiner that leaves this long after its join got through the join phase
REJOIN_WINDOW_MS = 5_000  # a rebalance this soon after a known member's JoinGroup is that join's


class ClientEventReplay:
    """Client events, onto the group's state machine."""

    def on_heartbeat(self, ev: HeartbeatEvent) -> None:
        mid = ev.member_id
        assert mid is not None
        broker = "broker_log" in self.engine.sources
        records = "offsets" in self.engine.sources
        if ev.event == "leave":
            m = self.engine.members.get(mid)
            if m is None:
                if self.leave_hint(mid) is None and mid in (self._join_hints or ()):
                    # a member id the records never listed, that joined and left between two of them
                    # (the storm's flappers): both are hints for the record that follows
                    self.hint_leave(mid, ev.ts, False)
                return  # not a member the group has (now): nobody's leave, or a forged one
            m.last_heartbeat = ev.ts
            if m.group_instance_id or ev.group_instance_id:
                # static members never send LeaveGroup (Kafka's consumer): the session timeout will remove it
                m.closed = True
                self.engine.arm(m)
                return
            if broker or self.engine.type == "consumer":
                return  # the broker's LeaveGroup line will say it
            stalled = self.poll_stalled(mid, ev.ts, m)
            if self.metadata_records:
                # The coordinator's GroupMetadata records are its own account of the group's members
                # and generations: there, a client's `leave` is only a hint, its time and cause
                # (member_left, or poll_timeout after a poll_stall) for the rebalance that account
                # shows next (`open_rebalance`, or the next record), or taken as said when a snapshot
                # no longer lists the member or its session runs out (`expire`). Anyone who may
                # write the heartbeat topic can send a `leave` in a member's name: on its own it
                # removes nobody, opens no rebalance and adds no generation. The member's own next
                # event (a dynamic member's id ends with its LeaveGroup), or a snapshot or record
                # that still lists it, withdraws the hint.
                m.closed = True
                self.hint_leave(mid, ev.ts, stalled)
                self.engine.arm(m)
                return
            # No records (Admin API snapshots at most, polled every few seconds): client events are
            # the account of each rebalance, and the leave is taken as said; but if the same member
            # speaks again, or a snapshot still lists it, before anything else happened, it was not
            # its own (`unleave`).
            rows, state, before = len(self.engine.timeline), self.engine.state, self.open
            self.leave(mid, ev.ts, stalled)
            g = self.open
            if g is not None and g is not before and g.left == [mid] and state is not None:
                self._leave_undo = (mid, rows, state, g, len(self.engine.timeline))
            return
        if mid in self.engine.departed and mid not in self.engine.members:
            late = ev.ts <= self.engine.departed[mid] or ev.event == "poll_stall"
            if late and self.revive(mid):
                pass  # the expiry our timer inferred did not happen
            elif ev.event not in ("revoked", "lost") and not late and self.unleave(mid):
                pass  # the member goes on after a `leave` in its name: that leave was not its own
            elif ev.event == "join" and not broker and not records:
                self.engine.departed.pop(
                    mid, None
                )  # the coordinator handed this id out again (a static member)
            else:
                if ev.event == "lost" and mid in self.engine.departed_members:
                    self.stall_ended(mid, self.engine.departed_members[mid], ev.ts)
                return  # a late event of a member that already left
        known = mid in self.engine.members
        hint = self.leave_hint(mid)
        if hint is not None and ev.ts > hint[0] and ev.event not in ("revoked", "lost"):
            # the member speaks again after its `leave` (a closing client only reports the revocation
            # or loss of its partitions after it): the leave was not its own
            self.drop_hint(mid)
            if known:
                self.engine.members[mid].closed = False
        # a static member restarted with a new member id takes the old one's place
        if not known and ev.group_instance_id:
            old = next(
                (m for m in self.engine.members.values() if m.group_instance_id == ev.group_instance_id), None
            )
            if old is not None and (ev.group_instance_id in self.replaced_instances or ev.event == "join"):
                self.engine.members.pop(old.member_id)
                self.engine.departed[old.member_id] = ev.ts
                old.member_id = mid
                self.engine.members[mid] = old
                self.replaced_instances.pop(ev.group_instance_id, None)
                if self.leader == old.member_id:
                    self.leader = mid
                known = True
        if not known and self.engine.type == "consumer" and records:
            return
        if not known and broker and self.engine.type == "classic":
            return  # the coordinator's log names each member it adds (member_added)
        if not known and self.metadata_records:
            # A member id the coordinator's records do not have: as a `leave` above, a hint (the time
            # and cause, member_joined, of the rebalance they show next), not a member. Anyone may
            # write an event in a new member's name; the member shows when a record (or a snapshot)
            # lists it.
            self.hint_join(mid, ev.ts)
            return
        m = self.engine.member(mid)
        m.group_instance_id = ev.group_instance_id or m.group_instance_id
        m.client_id = ev.client_id or m.client_id
        # the host as the coordinator saw the connection (its records, a describe: what
        # kafka-consumer-groups.sh prints) stands; the client's own word only fills in where the
        # coordinator has said nothing yet (anyone who may write the heartbeat topic can forge it)
        m.client_host = m.client_host or ev.host
        # The client's word on its timeouts, held to the broker's limits (evidence.session_timeout),
        # where nothing said them before: a member's settings do not change under its member id, and
        # the coordinator's record of them (GroupMetadata, which always sets them) is exact, where a
        # later event may be anybody's.
        m.session_timeout_ms = m.session_timeout_ms or session_timeout(ev.session_timeout_ms)
        m.max_poll_interval_ms = m.max_poll_interval_ms or poll_interval(ev.max_poll_interval_ms)
        m.rebalance_timeout_ms = m.rebalance_timeout_ms or poll_interval(ev.max_poll_interval_ms)
        m.last_heartbeat = ev.ts
        if known and ev.event == "join":
            # a member the group still has joins again (a static member back within its session):
            # a rebalance that follows at once is its doing
            m.closed = False
            self._rejoined = (mid, ev.ts)
        self.engine.arm(m)
        if not known:
            m.joined_at = ev.ts
            if not broker and self.engine.type == "classic":
                created = self.generation in (None, 0) and not self.generations
                if self.engine.state in ("Stable", "CompletingRebalance", "Empty", None):
                    rows, state = len(self.engine.timeline), self.engine.state
                    g = self.open_rebalance(
                        ev.ts, "group_created" if created else "member_joined", None, True
                    )
                    g.joined.append(mid)
                    if state is not None and g.joined == [mid] and not g.left:
                        # taken back if a snapshot soon says the group has no such member (`unjoin`)
                        self._join_undo = (mid, rows, state, g, len(self.engine.timeline))
                elif self.open is not None:
                    self.open.joined.append(mid)
                    if self.open.cause == "unknown":
                        self.open.cause = "member_joined"
        if (
            ev.event == "revoked"
            and ev.partitions
            and not broker
            and self.engine.type == "classic"
            and self.engine.state == "Stable"
            and known
            and not m.closed
        ):
            # a client revokes when it learns of a rebalance (eager) or right before it rejoins
            # (cooperative): the rebalance has begun
            g = self.open_rebalance(ev.ts, "unknown", None, True)
            if g.cause == "unknown" and not g.left and not g.joined:
                self.poll_expired(ev.ts, g)
            r = self._rejoined
            if g.cause == "unknown" and r is not None and 0 <= ev.ts - r[1] <= REJOIN_WINDOW_MS:
                g.cause = "member_joined"
                g.joined.append(r[0])
        elif (
            ev.event == "lost"
            and not broker
            and self.engine.type == "classic"
            and self.engine.state == "Stable"
            and self.open is None
            and self.poll_left_at(m, ev.ts) is not None
        ):
            # the stalled client's next poll() reports its partitions lost: it had left the group
            # when its poll interval expired, and nobody else's events showed that rebalance
            g = self.open_rebalance(self.poll_left_at(m, ev.ts) or ev.ts, "unknown", None, True)
            self.poll_expired(ev.ts, g)
            self.stall_ended(mid, m, ev.ts)
            if not self.engine.members and not records:
                self.become_empty(ev.ts, inferred=True)
            return
        if ev.event == "poll_stall":
            m.poll_stall_at = ev.ts
        elif ev.event in ("assigned", "revoked", "lost"):
            if ev.event == "assigned" and m.poll_stall_at is not None and ev.ts > m.poll_stall_at:
                m.poll_stall_at = None  # rebalance callbacks run inside poll(): the application polls again
            held = set(m.client_assignment)
            if held and (
                (ev.event == "revoked" and ev.partitions and set(ev.partitions) < held)
                or (ev.event == "assigned" and not ev.partitions)
            ):
                # eager clients give everything back at every rebalance: this one revokes only what moves
                self.incremental = True
            if ev.event == "assigned":
                held |= set(ev.partitions)
            else:
                held -= set(ev.partitions)
            m.client_assignment = tuple(sorted(held))
            if records or self.snapshot_members:
                pass  # the coordinator's own assignment (records, snapshots) wins over the client's view
            elif ev.event == "assigned":
                m.assignment = tuple(sorted(set(m.assignment) | set(ev.partitions)))
            else:
                m.assignment = tuple(sorted(set(m.assignment) - set(ev.partitions)))
            if ev.event == "assigned" and not broker and not records and self.engine.type == "classic":
                if self.engine.state in ("PreparingRebalance", "CompletingRebalance"):
                    gen = (self.generation or 0) + 1
                    g = self.close_generation(gen, ev.ts, inferred=True)
                    g.inferred.update({"stabilized", "stable"})
                    g.stabilized = g.stable = ev.ts
                    g.members = tuple(self.engine.members)
                    self.goto("CompletingRebalance", ev.ts, True)
                    self.goto("Stable", ev.ts, True)
                    self.gen_cause(g)
                if self.generation is not None and self.generation in self.generations:
                    g = self.generations[self.generation]
                    g.assignment = {k: v.assignment for k, v in self.engine.members.items()}
                    g.members = tuple(self.engine.members)

    def leave(self, member_id: str, ts: int, stalled: bool) -> None:
        """The dynamic member left at `ts` (LeaveGroup, its client said so): the rebalance that starts,
        where no broker log says it (`stalled`: its poll() had stalled, the poll interval ran out)."""
        mid = member_id
        records = "offsets" in self.engine.sources
        if (
            self.open is not None
            and "start" in self.open.inferred
            and mid in self.open.joined
            and ts - self.open.start > ABANDON_MS
        ):
            # the member joined, its rebalance stabilised, and it left before the leader's
            # SyncGroup: that generation was abandoned and the LeaveGroup starts the next one
            gen = (self.generation or 0) + 1
            g = self.close_generation(gen, ts, inferred=True)
            g.inferred.update({"stabilized", "members", "assignment"})
            g.members = tuple(self.engine.members)
            self.gen_cause(g)
            self.goto("CompletingRebalance", ts, True)
        self.engine.remove_member(mid, ts)
        if self.engine.state in ("Stable", "CompletingRebalance") or self.engine.state is None:
            g = self.open_rebalance(ts, "poll_timeout" if stalled else "member_left", None, True)
            g.left.append(mid)
        elif self.open is not None:
            self.open.left.append(mid)
            if stalled and self.open.cause in ("unknown", "member_left"):
                self.open.cause = "poll_timeout"
        if not self.engine.members and self.engine.state == "PreparingRebalance" and not records:
            self.become_empty(ts, inferred=True)

    def refute_hints(self, listed: set[str], ts: int) -> None:
        """The coordinator lists these members at `ts`: a leave reported for one of them more than a
        moment before (a snapshot or record may be a little older than its timestamp says) was not
        its own."""
        for mid in [mid for mid in listed if mid in (self._leave_hints or ())]:
            if ts - self._leave_hints[mid][0] > DESCRIBE_SKEW_MS:
                del self._leave_hints[mid]
                m = self.engine.members.get(mid)
                if m is not None:
                    m.closed = False
