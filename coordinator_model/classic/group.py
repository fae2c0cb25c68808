"""A classic group (JoinGroup/SyncGroup, `group.protocol=classic`): its rebalances, generations and
their causes, rebuilt from GroupMetadata records, the coordinator's log lines, client events and
Admin API snapshots, one method per source (as Kafka's GroupMetadataManager replays one record type
per method) over the state machine of classic/rebalances.py.

A GroupMetadata record is written at the leader's SyncGroup (Stable) and carries when
CompletingRebalance began; PreparingRebalance is never recorded, so its start comes from the
broker's log, else from client events (a join, a leave, a member that went silent), else it is
inferred from snapshots and marked so.

What every kind of group shares (members, the timeline, the sources seen, offsets, the weighing of
sources) lives on the GroupEngine this model belongs to (`engine`, seen through group_context.py).
"""

from __future__ import annotations

from coordinator_model.broker_log import (
    BrokerLogEvent,
    adding_instance_id,
    cause_of_reason,
    reason_members,
)
from coordinator_model.classic.rebalances import ClassicRebalances
from coordinator_model.evidence import (
    DescribeSnapshot,
    GroupMetadataSnapshot,
    HeartbeatEvent,
    poll_interval,
    session_timeout,
)
from coordinator_model.membership import Member

ABANDON_MS = 1000  # a joiner that leaves this long after its join got through the join phase
DESCRIBE_SKEW_MS = 250  # a snapshot this close to a known transition may predate it
REJOIN_WINDOW_MS = 5_000  # a rebalance this soon after a known member's JoinGroup is that join's


class ClassicGroupModel(ClassicRebalances):
    """The classic-protocol part of one group's reconstruction: each source's evidence replayed."""

    def on_group_metadata(self, ev: GroupMetadataSnapshot) -> None:
        self.engine.typed("classic", "records")
        self.metadata_records = True
        if ev.deleted:
            self.goto("Dead", ev.ts)
            self.engine.deleted = True
            self.engine.members.clear()
            return
        self.engine.protocol_type = ev.protocol_type
        state_ts = ev.state_timestamp if ev.state_timestamp > 0 else ev.ts
        if self.engine.state == "Dead":
            self.reset_incarnation()
            self.engine.state = None
        if not ev.members:
            if ev.generation == 0 or self.engine.state is None:
                self.generation = (
                    ev.generation if self.generation is None else max(self.generation, ev.generation)
                )
                if self.engine.state is None:
                    self.goto("Empty", state_ts)
                return
            if (
                self.generation is not None
                and ev.generation <= self.generation
                and self.engine.state == "Empty"
            ):
                return
            if (
                "broker_log" in self.engine.sources
                and self.generation is not None
                and ev.generation <= self.generation
            ):
                return
            self.become_empty(state_ts, inferred=False, gen=ev.generation)
            return
        same = self.generation == ev.generation and ev.generation in self.generations
        if self.generation is not None and ev.generation < self.generation:
            return  # stale
        new_ids = [m.member_id for m in ev.members]
        self.refute_hints(set(new_ids), ev.ts)
        if not same or self.generations[ev.generation].stable is None:
            if self.open is None and (
                self.engine.state not in ("PreparingRebalance", "CompletingRebalance")
                or (self.engine.state == "PreparingRebalance" and self.generation == ev.generation)
            ):
                # the rebalance left no other trace: it began before the record (unseen_start), or at
                # a leave its members' clients reported
                settled = min(state_ts, ev.ts)
                self.open_rebalance(
                    self.unseen_start(settled), "unknown", None, True, upto=settled, exclude=new_ids
                )
            g = self.close_generation(ev.generation, state_ts, inferred=False)
            if g.stabilized is None:
                g.stabilized = state_ts
            self.goto("CompletingRebalance", state_ts, "broker_log" not in self.engine.sources)
            g.stable = ev.ts
            self.goto("Stable", ev.ts)
        g = self.generations[ev.generation]
        prev_ids = set(self.engine.members)
        keep = {mid: self.engine.members[mid] for mid in new_ids if mid in self.engine.members}
        old_members = self.engine.members
        self.engine.members = {}
        for ms in ev.members:
            m = keep.get(ms.member_id) or Member(ms.member_id)
            m.group_instance_id = ms.group_instance_id
            m.client_id, m.client_host = ms.client_id, ms.client_host
            m.session_timeout_ms, m.rebalance_timeout_ms = ms.session_timeout_ms, ms.rebalance_timeout_ms
            m.subscription = ms.subscription
            m.assignment = ms.assignment
            self.engine.members[ms.member_id] = m
            self.engine.departed.pop(ms.member_id, None)
        hinted = []  # members whose client's leave the record now shows: they left then
        for mid in prev_ids - set(new_ids):
            hint = self.drop_hint(mid)
            if hint is not None:
                hinted.append(mid)
            self.engine.departed[mid] = hint[0] if hint is not None else ev.ts
            if mid in old_members:
                self.engine.departed_members[mid] = old_members[mid]
        self.protocol, self.leader = ev.protocol, ev.leader
        g.members = tuple(new_ids)
        g.protocol, g.leader = ev.protocol, ev.leader
        g.assignment = {ms.member_id: ms.assignment for ms in ev.members}
        # against the last members known: a generation that left no record knows none
        prev = self.members_before(ev.generation)
        if prev is not None and not same:
            if "joined" not in g.inferred and not g.joined:
                g.joined = [m for m in new_ids if m not in prev.members]
            if not g.left:
                g.left = [m for m in prev.members if m not in new_ids]
        if not same:
            g.left.extend(mid for mid in sorted(hinted) if mid not in g.left)
            # member ids client events named that joined and left between the last record and this
            # one: a generation no record shows (split_transient takes their join there)
            transient = self.transient_joiners(set(new_ids))
            for mid in transient:
                g.joined.extend([mid] if mid not in g.joined else [])
                g.left.extend([mid] if mid not in g.left else [])
            if transient and "cause" in g.inferred:
                g.cause = "unknown"  # gen_cause reads it once split_transient has taken their joins
        g.inferred.discard("members")
        g.inferred.discard("assignment")
        self.gen_cause(g)

    def on_broker(self, ev: BrokerLogEvent) -> None:
        k = ev.kind
        if k == "groups_deleted":
            self.goto("Dead", ev.ts)
            self.engine.deleted = True
            self.engine.members.clear()
            self.engine.offsets.forget()
            return
        self.engine.typed("classic", "broker_log")
        if k == "simple_group_created":
            self.simple = True
            if self.engine.state is None:
                self.goto("Empty", ev.ts)
            return
        if k == "prepare":
            old = ev.generation or 0
            done = self.generations.get(old + 1)
            if self.generation is not None and old + 1 <= self.generation:
                # a late line about a rebalance we already closed: it only adds the broker's reason
                if done is not None and ("cause" in done.inferred or done.reason is None):
                    cause = cause_of_reason(ev.reason)
                    done.cause = "group_created" if old == 0 and cause == "member_joined" else cause
                    done.reason = ev.reason
                    done.inferred.discard("cause")
                return
            if self.generation is None or self.generation < old:
                self.generation = old
            if self.engine.state == "Dead":
                self.goto("Empty", ev.ts, True)
            names = reason_members(ev.reason or "")
            cause = cause_of_reason(ev.reason)
            g = self.open_rebalance(ev.ts, cause, ev.reason, inferred=False)
            g.generation = old + 1
            if old == 0 and cause == "member_joined":
                g.cause = "group_created" if self.generation == 0 else cause
            for mid in names["joined"]:
                m = self.engine.member(mid)
                m.group_instance_id = adding_instance_id(ev.reason or "") or m.group_instance_id
                m.joined_at = ev.ts
                if mid not in g.joined:
                    g.joined.append(mid)
            for mid in names["left"] + names["expired"]:
                m = self.engine.members.get(mid)
                if cause == "member_left" and self.poll_stalled(
                    mid, ev.ts, m or self.engine.departed_members.get(mid)
                ):
                    g.cause = "poll_timeout"
                self.engine.remove_member(mid, ev.ts)
                if mid not in g.left:
                    g.left.append(mid)
            self.goto("PreparingRebalance", ev.ts)
            return
        if k == "stabilized":
            g = self.close_generation(ev.generation, ev.ts, inferred=False)
            g.stabilized = ev.ts
            self.goto("CompletingRebalance", ev.ts)
            return
        if k == "assignment":
            g = self.close_generation(ev.generation, ev.ts, inferred=False)
            if g.stabilized is None:
                g.stabilized = ev.ts
            g.stable = ev.ts
            g.leader = ev.member_id
            self.leader = ev.member_id
            if (
                ev.member_id
                and ev.member_id not in self.engine.members
                and ev.member_id not in self.engine.departed
            ):
                self.engine.member(ev.member_id)
            if not g.members:
                g.members = tuple(self.engine.members)
            self.goto("Stable", ev.ts)
            return
        if k == "empty":
            if self.engine.state not in ("PreparingRebalance",) and self.open is None:
                self.open_rebalance(ev.ts, "unknown", None, True)
            self.become_empty(ev.ts, inferred=False, gen=ev.generation)
            return
        if k in ("member_failed", "member_left"):
            m = self.engine.members.get(ev.member_id)
            stalled = self.poll_stalled(ev.member_id, ev.ts, m)
            self.engine.remove_member(ev.member_id, ev.ts)
            if (
                self.open is not None
                and self.engine.state == "PreparingRebalance"
                and ev.member_id not in self.open.left
            ):
                self.open.left.append(ev.member_id)
            if stalled and self.open is not None and self.open.cause == "member_left":
                self.open.cause = "poll_timeout"
            return
        if k == "member_pending":
            self.pending_members.add(ev.member_id)
            return
        if k == "member_added":
            self.pending_members.discard(ev.member_id)
            m = self.engine.member(ev.member_id)
            m.group_instance_id = ev.group_instance_id or m.group_instance_id
            m.joined_at = m.joined_at or ev.ts
            return
        if k == "static_member_replaced":
            if ev.group_instance_id:
                self.replaced_instances[ev.group_instance_id] = ev.member_id or ""
            return
        if k == "pending_expired":
            self.pending_members.discard(ev.member_id)

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

    def take_back(self, ev: DescribeSnapshot) -> None:
        """A snapshot that lists the group's members, taken more than a moment after a client event
        alone opened a rebalance: it still lists the member that event said left, or does not list
        the one it said joined. The event was not that member's (`unleave`, `unjoin`)."""
        listed = {dm.member_id for dm in ev.members}
        u = self._leave_undo
        if u is not None and u[0] in listed and ev.ts - u[3].start > DESCRIBE_SKEW_MS:
            self.unleave(u[0])
        j = self._join_undo
        if j is not None and j[0] not in listed and ev.ts - j[3].start > DESCRIBE_SKEW_MS:
            self.unjoin(j[0], ev.ts)

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
        u = self._expiry_undo
        if u is not None and ev.state == "Stable" and any(dm.member_id == u[0] for dm in ev.members):
            self.revive(u[0])  # the coordinator still has the member our heartbeat timer expired
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
