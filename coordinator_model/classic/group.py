"""A classic group (JoinGroup/SyncGroup, `group.protocol=classic`): its rebalances, generations and
their causes, rebuilt from GroupMetadata records, the coordinator's log lines, client events and
Admin API snapshots.

Kafka's own model is classic/ClassicGroup (seed 000's GroupMetadata): Empty -> PreparingRebalance
-> CompletingRebalance -> Stable, Dead at deletion. A GroupMetadata record is written at the
leader's SyncGroup (Stable) and carries when CompletingRebalance began; PreparingRebalance is never
recorded, so its start comes from the broker's log, else from client events (a join, a leave, a
member that went silent), else it is inferred from snapshots and marked so. Every move goes through
`goto`, which passes the states Kafka would have passed (states.legal_path) and marks them inferred.

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
from coordinator_model.evidence import DescribeSnapshot, GroupMetadataSnapshot, HeartbeatEvent
from coordinator_model.group_context import GroupContext
from coordinator_model.membership import MAX_GENERATIONS, Generation, Member
from coordinator_model.states import GroupState, legal_path

ABANDON_MS = 1000  # a joiner that leaves this long after its join got through the join phase
DESCRIBE_SKEW_MS = 250  # a snapshot this close to a known transition may predate it
MAX_TIMELINE = 5000
POLL_LEAVE_SLACK_MS = 2_000  # a poll_stall event is emitted up to about a second late
POLL_STALL_WINDOW_MS = 30_000  # a LeaveGroup this soon after a poll_stall is the poll interval expiring
REJOIN_WINDOW_MS = 5_000  # a rebalance this soon after a known member's JoinGroup is that join's


class ClassicGroupModel:
    """The classic-protocol part of one group's reconstruction."""

    def __init__(self, engine: GroupContext) -> None:
        self.engine = engine
        self.generation: int | None = None
        self.generation_inferred = False
        self.protocol: str | None = None
        self.leader: str | None = None
        self.pending_members: set[str] = set()
        self.generations: dict[int, Generation] = {}
        self.open: Generation | None = None  # a rebalance that has not produced its generation yet
        self.simple = False
        self.replaced_instances: dict[str, str] = {}  # instance id -> old member id awaiting its new id
        self.empty_since: int | None = None
        self._last_describe_ts: int | None = None
        self._expiry_undo: tuple[str, int, str, Generation, int] | None = None
        self.snapshot_members = False  # an Admin API snapshot has listed members (and so assignments)
        self.incremental = False  # client events show cooperative (incremental) rebalancing
        self._rejoined: tuple[str, int] | None = None  # a known (static) member's latest new JoinGroup

    def on_group_metadata(self, ev: GroupMetadataSnapshot) -> None:
        self.engine.typed("classic", "records")
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
        if not same or self.generations[ev.generation].stable is None:
            if self.open is None and (
                self.engine.state not in ("PreparingRebalance", "CompletingRebalance")
                or (self.engine.state == "PreparingRebalance" and self.generation == ev.generation)
            ):
                # the rebalance left no other trace: it began before the record, when is unknown
                self.open_rebalance(min(state_ts, ev.ts), "unknown", None, True)
            g = self.close_generation(ev.generation, state_ts, inferred=False)
            if g.stabilized is None:
                g.stabilized = state_ts
            self.goto("CompletingRebalance", state_ts, "broker_log" not in self.engine.sources)
            g.stable = ev.ts
            self.goto("Stable", ev.ts)
        g = self.generations[ev.generation]
        prev_ids = set(self.engine.members)
        new_ids = [m.member_id for m in ev.members]
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
        for mid in prev_ids - set(new_ids):
            self.engine.departed[mid] = ev.ts
            if mid in old_members:
                self.engine.departed_members[mid] = old_members[mid]
        self.protocol, self.leader = ev.protocol, ev.leader
        g.members = tuple(new_ids)
        g.protocol, g.leader = ev.protocol, ev.leader
        g.assignment = {ms.member_id: ms.assignment for ms in ev.members}
        prev = self.generations.get(ev.generation - 1)
        if prev is not None and not same:
            if "joined" not in g.inferred and not g.joined:
                g.joined = [m for m in new_ids if m not in prev.members]
            if not g.left:
                g.left = [m for m in prev.members if m not in new_ids]
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
                    mid, ev.ts, m or self.engine.departed_member(mid)
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
                return
            m.last_heartbeat = ev.ts
            if m.group_instance_id or ev.group_instance_id:
                # static members never send LeaveGroup (seed 001): the session timeout will remove it
                m.closed = True
                self.engine.arm(m)
                return
            if broker or self.engine.type == "consumer":
                return  # the broker's LeaveGroup line will say it
            stalled = self.poll_stalled(mid, ev.ts, m)
            if (
                self.open is not None
                and "start" in self.open.inferred
                and mid in self.open.joined
                and ev.ts - self.open.start > ABANDON_MS
            ):
                # the member joined, its rebalance stabilised, and it left before the leader's
                # SyncGroup: that generation was abandoned and the LeaveGroup starts the next one
                gen = (self.generation or 0) + 1
                g = self.close_generation(gen, ev.ts, inferred=True)
                g.inferred.update({"stabilized", "members", "assignment"})
                g.members = tuple(self.engine.members)
                self.gen_cause(g)
                self.goto("CompletingRebalance", ev.ts, True)
            self.engine.remove_member(mid, ev.ts)
            if self.engine.state in ("Stable", "CompletingRebalance") or self.engine.state is None:
                g = self.open_rebalance(ev.ts, "poll_timeout" if stalled else "member_left", None, True)
                g.left.append(mid)
            elif self.open is not None:
                self.open.left.append(mid)
                if stalled and self.open.cause in ("unknown", "member_left"):
                    self.open.cause = "poll_timeout"
            if not self.engine.members and self.engine.state == "PreparingRebalance" and not records:
                self.become_empty(ev.ts, inferred=True)
            return
        if mid in self.engine.departed and mid not in self.engine.members:
            late = ev.ts <= self.engine.departed[mid] or ev.event == "poll_stall"
            if late and self.revive(mid):
                pass  # the expiry our timer inferred did not happen
            elif ev.event == "join" and not broker and not records:
                self.engine.departed.pop(
                    mid, None
                )  # the coordinator handed this id out again (a static member)
            else:
                if ev.event == "lost" and mid in self.engine.departed_members:
                    self.stall_ended(mid, self.engine.departed_members[mid], ev.ts)
                return  # a late event of a member that already left
        known = mid in self.engine.members
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
        m = self.engine.member(mid)
        m.group_instance_id = ev.group_instance_id or m.group_instance_id
        m.client_id = ev.client_id or m.client_id
        m.client_host = ev.host or m.client_host
        m.session_timeout_ms = ev.session_timeout_ms or m.session_timeout_ms
        m.max_poll_interval_ms = ev.max_poll_interval_ms or m.max_poll_interval_ms
        m.rebalance_timeout_ms = m.rebalance_timeout_ms or ev.max_poll_interval_ms
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
                    g = self.open_rebalance(
                        ev.ts, "group_created" if created else "member_joined", None, True
                    )
                    g.joined.append(mid)
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
            since = ev.ts  # it was not so at our last transition, which is newer than the last snapshot
        else:
            since = (prev_snapshot + ev.ts) // 2
        if state == "PreparingRebalance":
            g = self.open_rebalance(max(since, self.engine.last_ts()), "unknown", None, True)
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
            max((prev_snapshot + ev.ts) // 2, self.engine.last_ts()), "unknown", None, True
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

    def goto(self, state: str, ts: int, inferred: bool = False, again: bool = False) -> None:
        """Move to `state` at `ts` through the legal states Kafka would have passed (those inferred)."""
        ts = self.engine.clamp(ts)
        if self.engine.state is None or (self.engine.state == "Dead" and state != "Dead"):
            if self.engine.state == "Dead":
                self.reset_incarnation()
            self.engine.timeline.append([state, ts, inferred])
            self.engine.state = state
            return
        if self.engine.state == state and not again:
            return
        path = legal_path(GroupState.parse(self.engine.state), GroupState.parse(state))
        for step in path[:-1]:
            self.engine.timeline.append([step.value, ts, True])
        self.engine.timeline.append([state, ts, inferred])
        self.engine.state = state
        if state == "Empty":
            self.empty_since = ts
        if len(self.engine.timeline) > MAX_TIMELINE:
            del self.engine.timeline[: len(self.engine.timeline) - MAX_TIMELINE]

    def reset_incarnation(self) -> None:
        """A deleted group id used again is a new group (Kafka creates a new GroupMetadata)."""
        self.engine.members.clear()
        self.open = None
        self.generations.clear()  # generation numbers start again; the timeline keeps the old life
        self.generation = None
        self.protocol = None
        self.leader = None
        self.engine.deleted = False

    def open_rebalance(self, ts: int, cause: str, reason: str | None, inferred: bool) -> Generation:
        """A rebalance starts (PreparingRebalance). Merges with an inferred one already open."""
        if self.open is not None:
            g = self.open
            if not inferred and "start" in g.inferred:
                # the broker's account replaces the client-side guess
                g.start = ts
                g.inferred.discard("start")
                g.cause, g.reason = cause, reason
                g.inferred.discard("cause")
                for i in range(len(self.engine.timeline) - 1, -1, -1):
                    row = self.engine.timeline[i]
                    if row[0] == "PreparingRebalance":
                        if row[2]:
                            floor = self.engine.timeline[i - 1][1] if i > 0 else row[1]
                            ceiling = (
                                self.engine.timeline[i + 1][1] if i + 1 < len(self.engine.timeline) else ts
                            )
                            row[1] = min(max(ts, floor), ceiling)
                            row[2] = False
                        break
            elif g.cause == "unknown":
                g.cause = cause
            return g
        ts = self.engine.clamp(ts)
        g = Generation(generation=None, start=ts, cause=cause, reason=reason)
        if inferred:
            g.inferred.update({"start", "cause"})
        self.open = g
        self.goto("PreparingRebalance", ts, inferred)
        return g

    def close_generation(self, gen: int, ts: int, inferred: bool) -> Generation:
        """Generation `gen` exists from now on: attach the open rebalance to it."""
        g = self.generations.get(gen)
        if g is None:
            g = self.open if self.open is not None and (self.open.generation or 0) <= gen else None
            if g is None:
                g = Generation(generation=gen, start=ts, inferred={"start", "cause"})
            g.generation = gen
            self.generations[gen] = g
            if len(self.generations) > MAX_GENERATIONS:
                del self.generations[min(self.generations)]
            # the previous generation ends where this rebalance began
            prev = [k for k in self.generations if k < gen]
            if prev:
                p = self.generations[max(prev)]
                if p.end is None:
                    p.end = g.start
        if self.open is g:
            self.open = None
        self.fill_gap(g)
        if self.generation is None or gen > self.generation:
            # a jump of more than one: rebalances that left no record (abandoned before SyncGroup)
            if self.generation is not None and gen > self.generation + 1:
                for missing in range(self.generation + 1, gen):
                    if missing not in self.generations:
                        self.generations[missing] = Generation(
                            generation=missing,
                            start=g.start,
                            end=g.start,
                            inferred={"start", "cause", "members", "assignment"},
                        )
            self.generation = gen
        if inferred:
            self.generation_inferred = True
        return g

    def gen_cause(self, g: Generation) -> None:
        """Cause from the members that joined/left when the broker did not say."""
        if g.cause != "unknown" and "cause" not in g.inferred:
            self.fill_gap(g)
            return  # the broker's reason
        if g.cause == "unknown":
            if g.generation == 1:
                g.cause = "group_created"
            elif g.left:
                g.cause = "member_left"
            elif g.joined:
                g.cause = "member_joined"
            elif (self.protocol and "cooperative" in self.protocol) or self.incremental:
                # cooperative protocols rebalance twice: the leader rejoins to hand out revoked partitions
                g.cause = "leader_rejoin"
        if g.cause == "member_left" and g.left and all(self.went_silent(mid) for mid in g.left):
            # The broker's record came before the session timer fired (the probe's last heartbeat
            # event can trail the broker's last heartbeat by up to an interval): a member that sent
            # no LeaveGroup and fell silent for most of its session was expired, it did not leave.
            g.cause = "session_timeout"
        if g.cause == "member_left" and any(
            self.poll_stalled(
                mid, g.start, self.engine.members.get(mid) or self.engine.departed_members.get(mid)
            )
            for mid in g.left
        ):
            g.cause = "poll_timeout"
        g.inferred.add("cause")
        self.fill_gap(g)

    def went_silent(self, member_id: str) -> bool:
        """Its heartbeat events stopped at least half its session timeout before it was removed. A
        LeaveGroup's `leave` event counts as a heartbeat (its time is the leave's), so a member that
        left cleanly never qualifies; nor does one the clients never reported on."""
        m = self.engine.members.get(member_id) or self.engine.departed_members.get(member_id)
        gone = self.engine.departed.get(member_id)
        if m is None or gone is None or m.last_heartbeat is None or not m.session_timeout_ms:
            return False
        return "heartbeats" in self.engine.sources and gone - m.last_heartbeat >= m.session_timeout_ms // 2

    def poll_stalled(self, member_id: str, ts: int, m: Member | None) -> bool:
        if m is None or m.poll_stall_at is None:
            return False
        return 0 <= ts - m.poll_stall_at <= max(POLL_STALL_WINDOW_MS, (m.max_poll_interval_ms or 0))

    def expire(self, member_id: str, ts: int) -> None:
        """Session timeout inferred from heartbeats that stopped (no broker log)."""
        m = self.engine.remove_member(member_id, ts)
        g = None
        if self.engine.state in ("Stable", "CompletingRebalance"):
            rows, state = len(self.engine.timeline), self.engine.state
            g = self.open_rebalance(ts, "session_timeout", None, True)
            g.left.append(member_id)
            self._expiry_undo = (member_id, rows, state, g, len(self.engine.timeline))
        elif self.open is not None:
            g = self.open
            if "cause" in g.inferred and g.cause == "unknown" and not g.joined and not g.left:
                # the survivors' revocation came first: it was this member's session expiring
                g.cause = "session_timeout"
            g.left.append(member_id)
        if g is not None and g.cause == "session_timeout" and g.member_id is None:
            g.member_id = member_id
            g.gap_ms = ts - m.last_heartbeat if m is not None and m.last_heartbeat is not None else None
        if m is not None and not self.engine.members and self.engine.state == "PreparingRebalance":
            self.become_empty(ts, inferred=True)

    def revive(self, member_id: str) -> bool:
        """Undo a session expiry inferred from silent heartbeats when the member speaks again before
        anything else happened: an event from before the expiry that arrived late (the timers ran
        ahead of the events' transport), or a poll_stall (librdkafka serves the statistics behind
        heartbeat events from poll(), so a stalled poll() silences the probe before it reports)."""
        u = self._expiry_undo
        self._expiry_undo = None
        if u is None or u[0] != member_id or self.open is not u[3] or len(self.engine.timeline) != u[4]:
            return False
        g = u[3]
        if g.left != [member_id] or g.joined or self.engine.state != "PreparingRebalance":
            return False
        m = self.engine.departed_members.pop(member_id, None)
        if m is None:
            return False
        del self.engine.timeline[u[1] :]
        self.engine.state = u[2]
        self.open = None
        self.engine.departed.pop(member_id, None)
        self.engine.members[member_id] = m
        return True

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

    def fill_gap(self, g: Generation) -> None:
        """member_id and gap_ms of a session or poll timeout generation, from the member's last
        heartbeat (session) or poll stall (poll) and the time it was removed."""
        if g.gap_ms is not None or g.cause not in ("session_timeout", "poll_timeout"):
            return
        for mid in [g.member_id] if g.member_id else list(g.left):
            m = self.engine.members.get(mid) or self.engine.departed_members.get(mid)
            removed = self.engine.departed.get(mid, g.start)
            if g.cause == "session_timeout":
                if m is None or m.last_heartbeat is None or m.last_heartbeat > removed:
                    continue
                gap = removed - m.last_heartbeat
            else:
                if m is None:
                    continue
                if g.member_id is None and len(g.left) > 1 and not self.poll_stalled(mid, removed, m):
                    continue  # of several leavers, the one whose poll() stalled
                gap = self.poll_gap(m, removed)
            g.member_id = mid
            g.gap_ms = gap
            return
        if g.member_id is None and len(g.left) == 1:
            g.member_id = g.left[0]

    def become_empty(self, ts: int, inferred: bool, gen: int | None = None) -> None:
        if gen is None:
            gen = (self.generation or 0) + 1
        if self.open is None and self.engine.state != "PreparingRebalance":
            self.open_rebalance(ts, "unknown", None, True)
        g = self.close_generation(gen, ts, inferred)
        g.empty = True
        g.stable = ts
        g.members = ()
        g.protocol = None
        self.gen_cause(g)
        self.engine.members.clear()
        self.protocol = None
        self.leader = None
        self.goto("Empty", ts, inferred)
