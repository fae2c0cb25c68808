"""The per-group reconstruction: fold time-ordered evidence into a group's history.

Who knows what (and so who wins when sources disagree):
- The broker log is the coordinator's own account: every state change of a classic group, each
  rebalance's reason, stabilisation and assignment times. When it is there, other sources only fill
  in what it does not say (member details, assignments, offsets).
- GroupMetadata records are written at the leader's SyncGroup (Stable, record timestamp) and carry
  `currentStateTimestamp` = when the group entered CompletingRebalance; members, protocol and
  assignment are exact. They never show PreparingRebalance, so its start comes from the broker log,
  else from client events (join/leave), else it is marked inferred.
- Heartbeat events are the clients' view: when a member joined, left, stalled or stopped
  heartbeating; they open rebalances only when the broker log is missing.
- Admin snapshots are exact at their timestamp (state, members, assignment, KIP-848 epochs) but
  sampled: between snapshots nothing is known from them.

Evidence from different sources may arrive a few seconds out of order: a late piece of evidence is
applied at the time of the latest transition it cannot precede (`_clamp`), and an inferred
rebalance start is moved to the broker's time when the broker's line comes in.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any

from coordinator_model.broker_log import (
    BrokerLogEvent,
    adding_instance_id,
    cause_of_reason,
    reason_members,
)
from coordinator_model.consumer import ConsumerGroupModel, has_k848_details
from coordinator_model.evidence import (
    CommittedSnapshot,
    ConsumerGroupEpoch,
    ConsumerGroupTopics,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerTargetAssignment,
    ConsumerTargetMember,
    DescribeSnapshot,
    EndOffset,
    Evidence,
    GroupMetadataSnapshot,
    HeartbeatEvent,
    OffsetCommit,
    UnknownRecord,
)
from coordinator_model.group_metadata import CONSUMER_PROTOCOL_TYPE, coordinator_partition
from coordinator_model.membership import MAX_GENERATIONS, MEMBER_STATES, TP, Generation, Member
from coordinator_model.offsets import CommitRun, OffsetState, OffsetStore, merged_rows
from coordinator_model.states import GroupState, legal_path

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
ABANDON_MS = 1000  # a joiner that leaves this long after its join got through the join phase
DESCRIBE_SKEW_MS = 250  # a snapshot this close to a known transition may predate it
POLL_STALL_WINDOW_MS = 30_000  # a LeaveGroup this soon after a poll_stall is the poll interval expiring
POLL_LEAVE_SLACK_MS = 2_000  # a poll_stall event is emitted up to about a second late
MAX_CONFLICTS = 20
REJOIN_WINDOW_MS = 5_000  # a rebalance this soon after a known member's JoinGroup is that join's
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MAX_TIMELINE = 5000
MAX_DEPARTED = 500

# tie-break for evidence with the same timestamp: snapshots last, so "as of ts" equals the snapshot
_PRIORITY = {"offsets": 1, "broker_log": 0, "heartbeats": 2, "end_offsets": 3, "describe": 4}


class GroupEngine:
    """Rebuilds one group's state, members, generations and timeline from evidence."""

    def __init__(self, group: str, retention_ms: int = DEFAULT_RETENTION_MS) -> None:
        self.group = group
        self.retention_ms = retention_ms
        self.type: str | None = None  # classic | consumer
        self.sources: set[str] = set()
        self.now = 0
        # classic
        self.state: str | None = None
        self.timeline: list[list[Any]] = []  # [state, start, inferred]
        self.generation: int | None = None
        self.generation_inferred = False
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: dict[str, Member] = {}
        self.departed: dict[str, int] = {}  # member id -> when it left (late events must not revive it)
        self.pending_members: set[str] = set()
        self.generations: dict[int, Generation] = {}
        self.open: Generation | None = None  # a rebalance that has not produced its generation yet
        self.simple = False
        self.deleted = False
        self.replaced_instances: dict[str, str] = {}  # instance id -> old member id awaiting its new id
        self.empty_since: int | None = None
        # offsets and lag
        self.offsets = OffsetStore()
        # KIP-848
        self.consumer = ConsumerGroupModel(self)
        self._departed_members: dict[str, Member] = {}  # for the poll_stall of a member that just left
        self._next_due = 2**62  # earliest session expiry to check (heartbeat-only inference)
        self._last_describe_ts: int | None = None
        # evidence weighing: who said what the group's type is, and what contradicted what
        self.client_protocol: str | None = None  # the clients' own group.protocol (heartbeat events)
        self.type_source: str | None = None  # client | records | broker_log | describe
        self.conflicts: dict[str, dict[str, Any]] = {}
        self._expiry_undo: tuple[str, int, str, Generation, int] | None = None
        self.snapshot_members = False  # an Admin API snapshot has listed members (and so assignments)
        self.incremental = False  # client events show cooperative (incremental) rebalancing
        self._rejoined: tuple[str, int] | None = None  # a known (static) member's latest new JoinGroup

    # ------------------------------------------------------------------------------------------
    # feeding
    def apply_many(self, evs: Iterable[Evidence]) -> None:
        for ev in sort_evidence(evs):
            self.apply(ev)

    def apply(self, ev: Evidence) -> None:
        ts = ev.ts
        self.now = max(self.now, ts)
        if isinstance(ev, EndOffset):
            self._end_offset(ev)
            return
        self.sources.add(ev.source)
        if ts >= self._next_due:
            # a member's own event proves it alive: it is not expired by the timer it would reset
            self._session_timers(ts, ev.member_id if isinstance(ev, HeartbeatEvent) else None)
        handler = _HANDLERS.get(type(ev))
        if handler is not None:
            handler(self, ev)

    def apply_commits(self, rows: list[tuple[int, str, int, int, int, int, int, int]]) -> None:
        """Offset commits in bulk, with exactly the effect of `apply`ing each as an OffsetCommit in
        the order given (the evidence order; no other evidence of the group among them).

        rows: (ts, topic, partition, offset, commit timestamp, leader epoch, expire timestamp, log
        offset), none a tombstone, each with an empty metadata string. A catch-up feeds millions of
        these, so only what survives is built: one OffsetState per partition (each commit replaces
        the last) and the CommitSamples of the window's last slots (see lag.PartitionWindow.add)."""
        if not rows:
            return
        last_ts = max(r[0] for r in rows)
        if last_ts >= self._next_due:
            self._commits_one_by_one(rows)
            return
        self._commits_begin(last_ts)
        by_tp: dict[TP, list[tuple]] = {}
        for row in rows:
            seq = by_tp.get((row[1], row[2]))
            if seq is None:
                seq = by_tp[(row[1], row[2])] = []
            seq.append(row)
        # Partitions are independent of each other; the first commit kept (in evidence order, which
        # is by time) is when a group seen only through its commits became Empty.
        firsts = [self.offsets.commit_rows(tp, seq) for tp, seq in by_tp.items()]
        self._commits_end(firsts)

    def apply_commit_runs(self, runs: list[CommitRun]) -> None:
        """`apply_commits` for commits the pipeline's first stage gathered into runs (one partition's
        commits each, in evidence order, with a summary). A run whose summary holds against this
        engine's state (see `_commit_run`) costs O(1) whatever its length; any other is expanded."""
        if not runs:
            return
        for run in runs:
            if run.topic_id is not None and run.topic_id not in self.consumer.topic_names:
                self.consumer.learn_topic_id(run.topic_id, run.topic)
        runs = sorted(runs, key=lambda r: (r.first_ts, r.first_log))
        last_ts = max(r.last_ts for r in runs)
        if last_ts >= self._next_due:
            self._commits_one_by_one(merged_rows(runs))
            return
        self._commits_begin(last_ts)
        by_tp: dict[TP, list[CommitRun]] = {}
        for run in runs:  # in order of each partition's first commit, as apply_commits meets them
            by_tp.setdefault((run.topic, run.partition), []).append(run)
        firsts: list[int | None] = []
        for tp, tp_runs in by_tp.items():
            chained = all((a.last_ts, a.last_log) < (b.first_ts, b.first_log) for a, b in pairwise(tp_runs))
            if not chained:  # runs of one partition that interleave in evidence order: merge them
                firsts.append(self.offsets.commit_rows(tp, merged_rows(tp_runs)))
                continue
            first = None
            for run in tp_runs:
                t = self.offsets.commit_run(tp, run)
                first = t if first is None else first
            firsts.append(first)
        self._commits_end(firsts)

    def _commits_one_by_one(self, rows: Iterable[tuple]) -> None:
        # a session timer falls among them: one by one, so that it fires where it would
        for ts, topic, part, off, cts, epoch, expire, log_off in rows:
            self.apply(OffsetCommit(ts, self.group, topic, part, off, cts, epoch, "", expire, log_off))

    def _commits_begin(self, last_ts: int) -> None:
        self.now = max(self.now, last_ts)
        self.sources.add("offsets")
        self.type = self.type or "classic"

    def _commits_end(self, firsts: list[int | None]) -> None:
        kept = [t for t in firsts if t is not None]
        if kept and self.state is None and not self.members and self.type == "classic":
            self.simple = True  # only commits: a standalone (assign()) group, described as Empty
            self._goto("Empty", min(kept), True)

    def preview_commits(self, commits: Iterable[OffsetCommit]) -> None:
        """Offset commits shown before their turn: committed offsets and lag samples only, no timers
        and no state inference. Only for a throwaway copy of an engine (the live pipeline shows a
        commit's lag while the commit waits behind the event-time watermark; the real engine applies
        it in evidence order later)."""
        for ev in sorted(commits, key=sort_key):
            if ev.offset is not None:
                self.now = max(self.now, ev.ts)
                self.offsets.commit((ev.topic, ev.partition), _offset_state(ev))

    def advance(self, now_ms: int) -> None:
        """Run the timers up to `now_ms`: session expiry seen from missing heartbeats, offsets expiry."""
        self.now = max(self.now, now_ms)
        self._session_timers(now_ms)
        self._expire_offsets(now_ms)
        self._trim(now_ms)

    def _timers_apply(self) -> bool:
        if "broker_log" in self.sources or "heartbeats" not in self.sources:
            return False
        return not (self.type == "consumer" and ("offsets" in self.sources or "describe" in self.sources))

    def arm(self, m: Member) -> None:
        """Schedule the check of `m`'s session expiry (heartbeats are its only liveness evidence)."""
        if m.last_heartbeat is not None and m.session_timeout_ms and self._timers_apply():
            self._next_due = min(self._next_due, m.last_heartbeat + m.session_timeout_ms)

    def _session_timers(self, now_ms: int, exclude: str | None = None) -> None:
        """Members whose heartbeat events stopped for longer than their session timeout are gone (the
        broker's heartbeat-expiration), when the broker log is not there to say so itself."""
        self._next_due = 2**62
        if not self._timers_apply():
            return
        for m in sorted(self.members.values(), key=lambda m: m.last_heartbeat or 0):
            if (
                m.last_heartbeat is None
                or not m.session_timeout_ms
                or (m.member_id == exclude and not m.closed)
            ):
                continue  # (a closed static member's own new event is a new join after its expiry)
            due = m.last_heartbeat + m.session_timeout_ms
            if due <= now_ms:
                self._expire(m.member_id, due)
            else:
                self._next_due = min(self._next_due, due)

    # ------------------------------------------------------------------------------------------
    # classic timeline primitives
    def _last_ts(self) -> int:
        return self.timeline[-1][1] if self.timeline else -(2**62)

    def clamp(self, ts: int) -> int:
        return max(ts, self._last_ts())

    def _goto(self, state: str, ts: int, inferred: bool = False, again: bool = False) -> None:
        """Move to `state` at `ts` through the legal states Kafka would have passed (those inferred)."""
        ts = self.clamp(ts)
        if self.state is None or (self.state == "Dead" and state != "Dead"):
            if self.state == "Dead":
                self._reset_incarnation()
            self.timeline.append([state, ts, inferred])
            self.state = state
            return
        if self.state == state and not again:
            return
        path = legal_path(GroupState.parse(self.state), GroupState.parse(state))
        for step in path[:-1]:
            self.timeline.append([step.value, ts, True])
        self.timeline.append([state, ts, inferred])
        self.state = state
        if state == "Empty":
            self.empty_since = ts
        if len(self.timeline) > MAX_TIMELINE:
            del self.timeline[: len(self.timeline) - MAX_TIMELINE]

    def _reset_incarnation(self) -> None:
        """A deleted group id used again is a new group (Kafka creates a new GroupMetadata)."""
        self.members.clear()
        self.open = None
        self.generations.clear()  # generation numbers start again; the timeline keeps the old life
        self.generation = None
        self.protocol = None
        self.leader = None
        self.deleted = False

    def _open_rebalance(self, ts: int, cause: str, reason: str | None, inferred: bool) -> Generation:
        """A rebalance starts (PreparingRebalance). Merges with an inferred one already open."""
        if self.open is not None:
            g = self.open
            if not inferred and "start" in g.inferred:
                # the broker's account replaces the client-side guess
                g.start = ts
                g.inferred.discard("start")
                g.cause, g.reason = cause, reason
                g.inferred.discard("cause")
                for i in range(len(self.timeline) - 1, -1, -1):
                    row = self.timeline[i]
                    if row[0] == "PreparingRebalance":
                        if row[2]:
                            floor = self.timeline[i - 1][1] if i > 0 else row[1]
                            ceiling = self.timeline[i + 1][1] if i + 1 < len(self.timeline) else ts
                            row[1] = min(max(ts, floor), ceiling)
                            row[2] = False
                        break
            elif g.cause == "unknown":
                g.cause = cause
            return g
        ts = self.clamp(ts)
        g = Generation(generation=None, start=ts, cause=cause, reason=reason)
        if inferred:
            g.inferred.update({"start", "cause"})
        self.open = g
        self._goto("PreparingRebalance", ts, inferred)
        return g

    def _close_generation(self, gen: int, ts: int, inferred: bool) -> Generation:
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
        self._fill_gap(g)
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

    def _gen_cause(self, g: Generation) -> None:
        """Cause from the members that joined/left when the broker did not say."""
        if g.cause != "unknown" and "cause" not in g.inferred:
            self._fill_gap(g)
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
        if g.cause == "member_left" and g.left and all(self._went_silent(mid) for mid in g.left):
            # The broker's record came before the session timer fired (the probe's last heartbeat
            # event can trail the broker's last heartbeat by up to an interval): a member that sent
            # no LeaveGroup and fell silent for most of its session was expired, it did not leave.
            g.cause = "session_timeout"
        if g.cause == "member_left" and any(
            self._poll_stalled(mid, g.start, self.members.get(mid) or self._departed_members.get(mid))
            for mid in g.left
        ):
            g.cause = "poll_timeout"
        g.inferred.add("cause")
        self._fill_gap(g)

    def _went_silent(self, member_id: str) -> bool:
        """Its heartbeat events stopped at least half its session timeout before it was removed. A
        LeaveGroup's `leave` event counts as a heartbeat (its time is the leave's), so a member that
        left cleanly never qualifies; nor does one the clients never reported on."""
        m = self.members.get(member_id) or self._departed_members.get(member_id)
        gone = self.departed.get(member_id)
        if m is None or gone is None or m.last_heartbeat is None or not m.session_timeout_ms:
            return False
        return "heartbeats" in self.sources and gone - m.last_heartbeat >= m.session_timeout_ms // 2

    # ------------------------------------------------------------------------------------------
    # membership primitives
    def member(self, member_id: str) -> Member:
        m = self.members.get(member_id)
        if m is None:
            m = Member(member_id)
            self.members[member_id] = m
            self.departed.pop(member_id, None)
        return m

    def remove_member(self, member_id: str, ts: int) -> Member | None:
        m = self.members.pop(member_id, None)
        self.departed[member_id] = ts
        if len(self.departed) > MAX_DEPARTED:
            del self.departed[next(iter(self.departed))]
        if m is not None:
            self._departed_members[member_id] = m
            if len(self._departed_members) > 50:
                del self._departed_members[next(iter(self._departed_members))]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return m

    def _poll_stalled(self, member_id: str, ts: int, m: Member | None) -> bool:
        if m is None or m.poll_stall_at is None:
            return False
        return 0 <= ts - m.poll_stall_at <= max(POLL_STALL_WINDOW_MS, (m.max_poll_interval_ms or 0))

    def _expire(self, member_id: str, ts: int) -> None:
        """Session timeout inferred from heartbeats that stopped (no broker log)."""
        if self.type == "consumer":
            self.remove_member(member_id, ts)  # fenced: the member session expired
            self.consumer.update_state(ts)
            return
        m = self.remove_member(member_id, ts)
        g = None
        if self.state in ("Stable", "CompletingRebalance"):
            rows, state = len(self.timeline), self.state
            g = self._open_rebalance(ts, "session_timeout", None, True)
            g.left.append(member_id)
            self._expiry_undo = (member_id, rows, state, g, len(self.timeline))
        elif self.open is not None:
            g = self.open
            if "cause" in g.inferred and g.cause == "unknown" and not g.joined and not g.left:
                # the survivors' revocation came first: it was this member's session expiring
                g.cause = "session_timeout"
            g.left.append(member_id)
        if g is not None and g.cause == "session_timeout" and g.member_id is None:
            g.member_id = member_id
            g.gap_ms = ts - m.last_heartbeat if m is not None and m.last_heartbeat is not None else None
        if m is not None and not self.members and self.state == "PreparingRebalance":
            self._become_empty(ts, inferred=True)

    def _revive(self, member_id: str) -> bool:
        """Undo a session expiry inferred from silent heartbeats when the member speaks again before
        anything else happened: an event from before the expiry that arrived late (the timers ran
        ahead of the events' transport), or a poll_stall (librdkafka serves the statistics behind
        heartbeat events from poll(), so a stalled poll() silences the probe before it reports)."""
        u = self._expiry_undo
        self._expiry_undo = None
        if u is None or u[0] != member_id or self.open is not u[3] or len(self.timeline) != u[4]:
            return False
        g = u[3]
        if g.left != [member_id] or g.joined or self.state != "PreparingRebalance":
            return False
        m = self._departed_members.pop(member_id, None)
        if m is None:
            return False
        del self.timeline[u[1] :]
        self.state = u[2]
        self.open = None
        self.departed.pop(member_id, None)
        self.members[member_id] = m
        return True

    def _poll_left_at(self, m: Member, ts: int) -> int | None:
        """When `m`'s client left the group by itself because its poll interval expired (librdkafka
        sends LeaveGroup then), if a rebalance seen at `ts` can be that; None otherwise."""
        if m.poll_stall_at is None or m.closed:
            return None
        interval = m.max_poll_interval_ms or m.rebalance_timeout_ms or 0
        left = m.poll_stall_at + interval // 2  # poll_stall is reported at half the interval
        if left - POLL_LEAVE_SLACK_MS <= ts <= m.poll_stall_at + max(POLL_STALL_WINDOW_MS, interval):
            return left
        return None

    def _poll_expired(self, ts: int, g: Generation) -> None:
        """A rebalance that began with no join or leave in sight: a member whose poll() stalled long
        enough has left by itself (heartbeats from the background thread go on, so they say nothing)."""
        for m in sorted(self.members.values(), key=lambda m: m.poll_stall_at or 0):
            left = self._poll_left_at(m, ts)
            if left is None:
                continue
            self.remove_member(m.member_id, min(left, ts))
            g.left.append(m.member_id)
            g.cause = "poll_timeout"
            g.member_id = m.member_id
            g.gap_ms = self._poll_gap(m, min(left, ts))
            return

    def _stall_ended(self, mid: str, m: Member, ts: int) -> None:
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
    def _poll_gap(m: Member | None, left_ts: int) -> int | None:
        """How long the member had not polled when it left: from the stall's start (the poll_stall
        event comes at half the interval) to the leave, else the poll interval itself."""
        if m is None:
            return None
        interval = m.max_poll_interval_ms or m.rebalance_timeout_ms
        if m.poll_stall_at is not None:
            return max(0, left_ts - (m.poll_stall_at - (interval or 0) // 2))
        return interval

    def _fill_gap(self, g: Generation) -> None:
        """member_id and gap_ms of a session or poll timeout generation, from the member's last
        heartbeat (session) or poll stall (poll) and the time it was removed."""
        if g.gap_ms is not None or g.cause not in ("session_timeout", "poll_timeout"):
            return
        for mid in [g.member_id] if g.member_id else list(g.left):
            m = self.members.get(mid) or self._departed_members.get(mid)
            removed = self.departed.get(mid, g.start)
            if g.cause == "session_timeout":
                if m is None or m.last_heartbeat is None or m.last_heartbeat > removed:
                    continue
                gap = removed - m.last_heartbeat
            else:
                if m is None:
                    continue
                if g.member_id is None and len(g.left) > 1 and not self._poll_stalled(mid, removed, m):
                    continue  # of several leavers, the one whose poll() stalled
                gap = self._poll_gap(m, removed)
            g.member_id = mid
            g.gap_ms = gap
            return
        if g.member_id is None and len(g.left) == 1:
            g.member_id = g.left[0]

    def _become_empty(self, ts: int, inferred: bool, gen: int | None = None) -> None:
        if gen is None:
            gen = (self.generation or 0) + 1
        if self.open is None and self.state != "PreparingRebalance":
            self._open_rebalance(ts, "unknown", None, True)
        g = self._close_generation(gen, ts, inferred)
        g.empty = True
        g.stable = ts
        g.members = ()
        g.protocol = None
        self._gen_cause(g)
        self.members.clear()
        self.protocol = None
        self.leader = None
        self._goto("Empty", ts, inferred)

    # ------------------------------------------------------------------------------------------
    # 1. __consumer_offsets
    def _on_group_metadata(self, ev: GroupMetadataSnapshot) -> None:
        self._typed("classic", "records")
        if ev.deleted:
            self._goto("Dead", ev.ts)
            self.deleted = True
            self.members.clear()
            return
        self.protocol_type = ev.protocol_type
        state_ts = ev.state_timestamp if ev.state_timestamp > 0 else ev.ts
        if self.state == "Dead":
            self._reset_incarnation()
            self.state = None
        if not ev.members:
            if ev.generation == 0 or self.state is None:
                self.generation = (
                    ev.generation if self.generation is None else max(self.generation, ev.generation)
                )
                if self.state is None:
                    self._goto("Empty", state_ts)
                return
            if self.generation is not None and ev.generation <= self.generation and self.state == "Empty":
                return
            if (
                "broker_log" in self.sources
                and self.generation is not None
                and ev.generation <= self.generation
            ):
                return
            self._become_empty(state_ts, inferred=False, gen=ev.generation)
            return
        same = self.generation == ev.generation and ev.generation in self.generations
        if self.generation is not None and ev.generation < self.generation:
            return  # stale
        if not same or self.generations[ev.generation].stable is None:
            if self.open is None and (
                self.state not in ("PreparingRebalance", "CompletingRebalance")
                or (self.state == "PreparingRebalance" and self.generation == ev.generation)
            ):
                # the rebalance left no other trace: it began before the record, when is unknown
                self._open_rebalance(min(state_ts, ev.ts), "unknown", None, True)
            g = self._close_generation(ev.generation, state_ts, inferred=False)
            if g.stabilized is None:
                g.stabilized = state_ts
            self._goto("CompletingRebalance", state_ts, "broker_log" not in self.sources)
            g.stable = ev.ts
            self._goto("Stable", ev.ts)
        g = self.generations[ev.generation]
        prev_ids = set(self.members)
        new_ids = [m.member_id for m in ev.members]
        keep = {mid: self.members[mid] for mid in new_ids if mid in self.members}
        old_members = self.members
        self.members = {}
        for ms in ev.members:
            m = keep.get(ms.member_id) or Member(ms.member_id)
            m.group_instance_id = ms.group_instance_id
            m.client_id, m.client_host = ms.client_id, ms.client_host
            m.session_timeout_ms, m.rebalance_timeout_ms = ms.session_timeout_ms, ms.rebalance_timeout_ms
            m.subscription = ms.subscription
            m.assignment = ms.assignment
            self.members[ms.member_id] = m
            self.departed.pop(ms.member_id, None)
        for mid in prev_ids - set(new_ids):
            self.departed[mid] = ev.ts
            if mid in old_members:
                self._departed_members[mid] = old_members[mid]
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
        self._gen_cause(g)

    def _on_offset_commit(self, ev: OffsetCommit) -> None:
        self.type = self.type or "classic"
        if ev.topic_id is not None and ev.topic_id not in self.consumer.topic_names:
            self.consumer.learn_topic_id(ev.topic_id, ev.topic)
        tp = (ev.topic, ev.partition)
        if ev.offset is None:
            self.offsets.tombstone(tp, ev.log_offset)
            return
        if not self.offsets.commit(tp, _offset_state(ev)):
            return
        if self.state is None and not self.members and self.type == "classic":
            # only commits: a standalone (assign()) group, Kafka describes it as Empty
            self.simple = True
            self._goto("Empty", ev.ts, True)

    def _on_unknown_record(self, ev: UnknownRecord) -> None:
        pass

    # KIP-848 records
    def as_consumer(self, source: str = "records") -> None:
        if self.type != "consumer" or _TYPE_WEIGHT[source] > _TYPE_WEIGHT.get(self.type_source or "", 0):
            self.type_source = source
        self.type = "consumer"
        self.protocol_type = CONSUMER_PROTOCOL_TYPE

    def _typed(self, kind: str, source: str) -> None:
        """Who last said which protocol the group speaks (an Admin API answer is the weakest word)."""
        if self.type is None or _TYPE_WEIGHT[source] > _TYPE_WEIGHT.get(self.type_source or "", 0):
            self.type_source = source
        self.type = self.type or kind

    def _retype(self, kind: str, ts: int, why: str) -> None:
        """The group's type came from an Admin API answer that stronger evidence contradicts: start the
        group again as `kind` (what was derived from that answer was derived for the wrong protocol)."""
        self.conflict("type", ts, why)
        self.type, self.type_source = kind, "client"
        self.timeline.clear()
        self.state = None
        self.generations.clear()
        self.open = None
        self.generation = None
        self.consumer.reset()
        if kind == "consumer":
            self.as_consumer("client")

    def conflict(self, kind: str, ts: int, note: str) -> None:
        """Two sources disagree and the weaker one was not believed: say so (once per kind, counted)."""
        c = self.conflicts.get(kind)
        if c is None:
            if len(self.conflicts) >= MAX_CONFLICTS:
                return
            c = self.conflicts[kind] = {"kind": kind, "first": ts, "last": ts, "count": 0, "note": note}
        c["last"], c["count"], c["note"] = ts, c["count"] + 1, note

    # ------------------------------------------------------------------------------------------
    # 2. broker log
    def _on_broker(self, ev: BrokerLogEvent) -> None:
        k = ev.kind
        if k in (
            "group_epoch",
            "target_assignment",
            "consumer_member_joined",
            "consumer_member_left",
            "consumer_member_fenced",
        ):
            self.consumer.on_broker(ev)
            return
        if k == "groups_deleted":
            self._goto("Dead", ev.ts)
            self.deleted = True
            self.members.clear()
            self.offsets.forget()
            return
        self._typed("classic", "broker_log")
        if k == "simple_group_created":
            self.simple = True
            if self.state is None:
                self._goto("Empty", ev.ts)
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
            if self.state == "Dead":
                self._goto("Empty", ev.ts, True)
            names = reason_members(ev.reason or "")
            cause = cause_of_reason(ev.reason)
            g = self._open_rebalance(ev.ts, cause, ev.reason, inferred=False)
            g.generation = old + 1
            if old == 0 and cause == "member_joined":
                g.cause = "group_created" if self.generation == 0 else cause
            for mid in names["joined"]:
                m = self.member(mid)
                m.group_instance_id = adding_instance_id(ev.reason or "") or m.group_instance_id
                m.joined_at = ev.ts
                if mid not in g.joined:
                    g.joined.append(mid)
            for mid in names["left"] + names["expired"]:
                m = self.members.get(mid)
                if cause == "member_left" and self._poll_stalled(mid, ev.ts, m or self._departed_member(mid)):
                    g.cause = "poll_timeout"
                self.remove_member(mid, ev.ts)
                if mid not in g.left:
                    g.left.append(mid)
            self._goto("PreparingRebalance", ev.ts)
            return
        if k == "stabilized":
            g = self._close_generation(ev.generation, ev.ts, inferred=False)
            g.stabilized = ev.ts
            self._goto("CompletingRebalance", ev.ts)
            return
        if k == "assignment":
            g = self._close_generation(ev.generation, ev.ts, inferred=False)
            if g.stabilized is None:
                g.stabilized = ev.ts
            g.stable = ev.ts
            g.leader = ev.member_id
            self.leader = ev.member_id
            if ev.member_id and ev.member_id not in self.members and ev.member_id not in self.departed:
                self.member(ev.member_id)
            if not g.members:
                g.members = tuple(self.members)
            self._goto("Stable", ev.ts)
            return
        if k == "empty":
            if self.state not in ("PreparingRebalance",) and self.open is None:
                self._open_rebalance(ev.ts, "unknown", None, True)
            self._become_empty(ev.ts, inferred=False, gen=ev.generation)
            return
        if k in ("member_failed", "member_left"):
            m = self.members.get(ev.member_id)
            stalled = self._poll_stalled(ev.member_id, ev.ts, m)
            self.remove_member(ev.member_id, ev.ts)
            if (
                self.open is not None
                and self.state == "PreparingRebalance"
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
            m = self.member(ev.member_id)
            m.group_instance_id = ev.group_instance_id or m.group_instance_id
            m.joined_at = m.joined_at or ev.ts
            return
        if k == "static_member_replaced":
            if ev.group_instance_id:
                self.replaced_instances[ev.group_instance_id] = ev.member_id or ""
            return
        if k == "pending_expired":
            self.pending_members.discard(ev.member_id)

    def _departed_member(self, member_id: str) -> Member | None:
        return self._departed_members.get(member_id)

    # ------------------------------------------------------------------------------------------
    # 3. heartbeat events
    def _on_heartbeat(self, ev: HeartbeatEvent) -> None:
        mid = ev.member_id
        if mid is None:
            return  # a client that uses assign(): not a member of anything
        # the client's own word (group.protocol, else the shape of the member id its coordinator gave it)
        consumer = ev.group_protocol == "consumer" or (
            ev.group_protocol is None and looks_like_consumer_member_id(mid, ev.client_id)
        )
        if ev.group_protocol:
            self.client_protocol = ev.group_protocol
        kind = "consumer" if consumer else "classic"
        if self.type is None:
            self._typed(kind, "client")
            if consumer:
                self.as_consumer("client")
        elif self.type != kind and self.type_source == "describe":
            self._retype(
                kind, ev.ts, f"the Admin API described the group as {self.type}; its clients use {kind}"
            )
        elif self.type_source == "describe":
            self.type_source = "client"
        broker = "broker_log" in self.sources
        records = "offsets" in self.sources
        if self.type == "consumer":
            self.consumer.on_heartbeat(ev)
            return
        if ev.event == "leave":
            m = self.members.get(mid)
            if m is None:
                return
            m.last_heartbeat = ev.ts
            if m.group_instance_id or ev.group_instance_id:
                # static members never send LeaveGroup (seed 001): the session timeout will remove it
                m.closed = True
                self.arm(m)
                return
            if broker or self.type == "consumer":
                return  # the broker's LeaveGroup line will say it
            stalled = self._poll_stalled(mid, ev.ts, m)
            if (
                self.open is not None
                and "start" in self.open.inferred
                and mid in self.open.joined
                and ev.ts - self.open.start > ABANDON_MS
            ):
                # the member joined, its rebalance stabilised, and it left before the leader's
                # SyncGroup: that generation was abandoned and the LeaveGroup starts the next one
                gen = (self.generation or 0) + 1
                g = self._close_generation(gen, ev.ts, inferred=True)
                g.inferred.update({"stabilized", "members", "assignment"})
                g.members = tuple(self.members)
                self._gen_cause(g)
                self._goto("CompletingRebalance", ev.ts, True)
            self.remove_member(mid, ev.ts)
            if self.state in ("Stable", "CompletingRebalance") or self.state is None:
                g = self._open_rebalance(ev.ts, "poll_timeout" if stalled else "member_left", None, True)
                g.left.append(mid)
            elif self.open is not None:
                self.open.left.append(mid)
                if stalled and self.open.cause in ("unknown", "member_left"):
                    self.open.cause = "poll_timeout"
            if not self.members and self.state == "PreparingRebalance" and not records:
                self._become_empty(ev.ts, inferred=True)
            return
        if mid in self.departed and mid not in self.members:
            late = ev.ts <= self.departed[mid] or ev.event == "poll_stall"
            if late and self._revive(mid):
                pass  # the expiry our timer inferred did not happen
            elif ev.event == "join" and not broker and not records:
                self.departed.pop(mid, None)  # the coordinator handed this id out again (a static member)
            else:
                if ev.event == "lost" and mid in self._departed_members:
                    self._stall_ended(mid, self._departed_members[mid], ev.ts)
                return  # a late event of a member that already left
        known = mid in self.members
        # a static member restarted with a new member id takes the old one's place
        if not known and ev.group_instance_id:
            old = next(
                (m for m in self.members.values() if m.group_instance_id == ev.group_instance_id), None
            )
            if old is not None and (ev.group_instance_id in self.replaced_instances or ev.event == "join"):
                self.members.pop(old.member_id)
                self.departed[old.member_id] = ev.ts
                old.member_id = mid
                self.members[mid] = old
                self.replaced_instances.pop(ev.group_instance_id, None)
                if self.leader == old.member_id:
                    self.leader = mid
                known = True
        if not known and self.type == "consumer" and records:
            return
        m = self.member(mid)
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
        self.arm(m)
        if not known:
            m.joined_at = ev.ts
            if not broker and self.type == "classic":
                created = self.generation in (None, 0) and not self.generations
                if self.state in ("Stable", "CompletingRebalance", "Empty", None):
                    g = self._open_rebalance(
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
            and self.type == "classic"
            and self.state == "Stable"
            and known
            and not m.closed
        ):
            # a client revokes when it learns of a rebalance (eager) or right before it rejoins
            # (cooperative): the rebalance has begun
            g = self._open_rebalance(ev.ts, "unknown", None, True)
            if g.cause == "unknown" and not g.left and not g.joined:
                self._poll_expired(ev.ts, g)
            r = self._rejoined
            if g.cause == "unknown" and r is not None and 0 <= ev.ts - r[1] <= REJOIN_WINDOW_MS:
                g.cause = "member_joined"
                g.joined.append(r[0])
        elif (
            ev.event == "lost"
            and not broker
            and self.type == "classic"
            and self.state == "Stable"
            and self.open is None
            and self._poll_left_at(m, ev.ts) is not None
        ):
            # the stalled client's next poll() reports its partitions lost: it had left the group
            # when its poll interval expired, and nobody else's events showed that rebalance
            g = self._open_rebalance(self._poll_left_at(m, ev.ts) or ev.ts, "unknown", None, True)
            self._poll_expired(ev.ts, g)
            self._stall_ended(mid, m, ev.ts)
            if not self.members and not records:
                self._become_empty(ev.ts, inferred=True)
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
            if ev.event == "assigned" and not broker and not records and self.type == "classic":
                if self.state in ("PreparingRebalance", "CompletingRebalance"):
                    gen = (self.generation or 0) + 1
                    g = self._close_generation(gen, ev.ts, inferred=True)
                    g.inferred.update({"stabilized", "stable"})
                    g.stabilized = g.stable = ev.ts
                    g.members = tuple(self.members)
                    self._goto("CompletingRebalance", ev.ts, True)
                    self._goto("Stable", ev.ts, True)
                    self._gen_cause(g)
                if self.generation is not None and self.generation in self.generations:
                    g = self.generations[self.generation]
                    g.assignment = {k: v.assignment for k, v in self.members.items()}
                    g.members = tuple(self.members)

    # ------------------------------------------------------------------------------------------
    # 4. Admin API
    def _on_describe(self, ev: DescribeSnapshot) -> None:
        if ev.type == "consumer" or ev.broker_state:
            if (
                self.type == "classic"
                and not has_k848_details(ev)
                and _TYPE_WEIGHT.get(self.type_source or "", 0) > _TYPE_WEIGHT["describe"]
            ):
                # the clients (or the coordinator's records) say classic; an Admin answer of type
                # consumer without KIP-848 details (the broker's ConsumerGroupDescribe state and
                # epochs, or members' target assignments) is not believed
                self.conflict(
                    "type",
                    ev.ts,
                    "the Admin API describes the group as consumer (KIP-848); its clients use classic",
                )
            else:
                self.consumer.on_describe(ev)
                return
        if ev.state == "Dead":
            if self.state is not None and self.state != "Dead" and not ev.members:
                self._goto("Dead", ev.ts, True)
                self.deleted = True
                self.members.clear()
            return
        self._typed("classic", "describe")
        if ev.simple:
            self.simple = True
        if ev.assignor and self.names_a_member(ev.assignor):
            self.conflict(
                "assignor", ev.ts, f"the Admin API's assignor field holds a member id ({ev.assignor})"
            )
        elif ev.assignor:
            self.protocol = ev.assignor
        doubt = self.contradiction(ev)
        if doubt is not None:
            # a snapshot that cannot be right: it does not wipe members or assignment, nor move the
            # state the client events follow
            self.conflict("members", ev.ts, doubt)
            self._last_describe_ts = ev.ts
            return
        # members and assignments are exact at ts
        self.snapshot_members = self.snapshot_members or bool(ev.members)
        u = self._expiry_undo
        if u is not None and ev.state == "Stable" and any(dm.member_id == u[0] for dm in ev.members):
            self._revive(u[0])  # the coordinator still has the member our heartbeat timer expired
        prev = set(self.members)
        before = {mid: (m.group_instance_id, m.assignment) for mid, m in self.members.items()}
        listed = {dm.member_id for dm in ev.members}
        for mid in prev - listed:
            m = self.members[mid]
            if (
                "broker_log" not in self.sources
                and m.last_heartbeat is not None
                and m.session_timeout_ms
                and ev.ts - m.last_heartbeat >= m.session_timeout_ms // 2
            ):
                # gone while its heartbeats had stopped: the coordinator expired its session
                self._expire(mid, min(ev.ts, m.last_heartbeat + m.session_timeout_ms))
            else:
                self.remove_member(mid, ev.ts)
                if self.open is not None and mid not in self.open.left:
                    self.open.left.append(mid)
        keep = dict(self.members)
        self.members = {}
        for dm in ev.members:
            gone = self.departed.get(dm.member_id)
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
            self.members[dm.member_id] = m
            self.departed.pop(dm.member_id, None)
        for mid in prev - set(self.members):
            self.departed[mid] = ev.ts
        if self.leader not in self.members:
            self.leader = None if not self.members else self.leader
        state = ev.state
        if state not in ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty"):
            return
        prev_snapshot, self._last_describe_ts = self._last_describe_ts, ev.ts
        if "broker_log" in self.sources:
            return
        if (
            state == "Stable"
            and self.state == "Stable"
            and self.open is None
            and prev_snapshot is not None
            and self._last_ts() <= prev_snapshot  # no rebalance seen since the last snapshot
            and "offsets" not in self.sources
        ):
            self._missed_rebalance(ev, before, prev_snapshot)
            return
        if self.state == state or ev.ts - self._last_ts() < DESCRIBE_SKEW_MS:
            return
        # the snapshot shows a state the other sources missed: adopt it; it began somewhere between
        # the previous snapshot and this one
        if prev_snapshot is None or self._last_ts() > prev_snapshot:
            since = ev.ts  # it was not so at our last transition, which is newer than the last snapshot
        else:
            since = (prev_snapshot + ev.ts) // 2
        if state == "PreparingRebalance":
            g = self._open_rebalance(max(since, self._last_ts()), "unknown", None, True)
            for mid in listed - prev:
                if mid not in g.joined:
                    g.joined.append(mid)
        elif state in ("CompletingRebalance", "Stable"):
            if self.state in ("Empty", None, "Stable") or self.open is not None:
                if "offsets" in self.sources:
                    return  # the GroupMetadata record will say which generation, and when
                if self.open is None and self.state != "CompletingRebalance":
                    self._open_rebalance(ev.ts, "unknown", None, True)
                gen = (self.generation or 0) + 1
                g = self._close_generation(gen, ev.ts, inferred=True)
                g.inferred.update({"stabilized", "stable"})
                g.stabilized = ev.ts
                g.members = tuple(self.members)
                g.assignment = {k: v.assignment for k, v in self.members.items()}
                g.protocol = ev.assignor or None
                self._gen_cause(g)
                self._goto("CompletingRebalance", ev.ts, True)
                if state == "Stable":
                    g.stable = ev.ts
                    self._goto("Stable", ev.ts, True)
        elif state == "Empty":
            if self.state is None:
                self._goto("Empty", ev.ts, True)
            elif "offsets" not in self.sources:
                self._become_empty(ev.ts, inferred=True)

    def names_a_member(self, assignor: str) -> bool:
        """An assignor field that is a member id (seen, or shaped like one) is not an assignor name."""
        if assignor in self.members or assignor in self.departed:
            return True
        return bool(_UUID.search(assignor)) or looks_like_consumer_member_id(assignor, None)

    def contradiction(self, ev: DescribeSnapshot) -> str | None:
        """Why a snapshot cannot be right, or None. Kafka lists every member of a group that is not
        Empty, so a live state without members is self-contradictory: when client events follow the
        group, they are believed instead. An Empty snapshot is believed unless members heartbeated
        within half their session timeout. A state the model does not know (some Kafka-protocol
        brokers answer UNKNOWN during a rebalance) says nothing about the members: with client
        events, it is not believed."""
        if ev.members:
            return None
        if ev.state not in _LIVE_OR_EMPTY:
            if "heartbeats" in self.sources and self.members:
                return f"the Admin API describes the group in state {ev.state} with no members"
            return None
        alive = 0
        for m in self.members.values():
            if m.last_heartbeat is None or not m.session_timeout_ms or (m.closed and ev.state == "Empty"):
                continue  # (a client that said it left may well be gone)
            quiet = ev.ts - m.last_heartbeat
            limit = m.session_timeout_ms // 2 if ev.state == "Empty" else m.session_timeout_ms
            if -DESCRIBE_SKEW_MS <= quiet <= limit or (m.closed and ev.state != "Empty"):
                alive += 1  # a closed static member stays until its session expires
        if ev.state == "Empty":
            if not alive:
                return None
            return f"the Admin API describes the group as Empty while {alive} member(s) heartbeat"
        if not alive and "heartbeats" not in self.sources:
            return None  # nothing better to go by: the state is all the snapshot gives
        return (
            f"the Admin API describes the group as {ev.state} with no members; client events show "
            f"{alive} member(s) within their session timeout"
        )

    def _missed_rebalance(self, ev: DescribeSnapshot, before: dict, prev_snapshot: int) -> None:
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
        g = self._open_rebalance(max((prev_snapshot + ev.ts) // 2, self._last_ts()), "unknown", None, True)
        g.joined.extend(m for m in joined if m not in g.joined)
        g.left.extend(m for m in left if m not in g.left)
        c = self._close_generation((self.generation or 0) + 1, ev.ts, inferred=True)
        c.inferred.update({"stabilized", "stable"})
        c.stabilized = c.stable = ev.ts
        c.members = tuple(now)
        c.assignment = {m: v[1] for m, v in now.items()}
        c.protocol = ev.assignor or None
        self._gen_cause(c)
        self._goto("CompletingRebalance", ev.ts, True)
        self._goto("Stable", ev.ts, True)

    def _on_committed(self, ev: CommittedSnapshot) -> None:
        self.offsets.snapshot(ev.ts, ev.offsets, drop_unseen="offsets" not in self.sources)

    # ------------------------------------------------------------------------------------------
    # offsets, lag
    def _end_offset(self, ev: EndOffset) -> None:
        new, note = self.offsets.end_offset((ev.topic, ev.partition), ev.ts, ev.end_offset)
        if new and self.type == "consumer":
            self.consumer.rename_partitions()  # a partition count may name a topic id
        if note is not None:
            self.conflict("end_offsets", ev.ts, note)

    def _expire_offsets(self, now: int) -> None:
        """GroupMetadata.removeExpiredOffsets (seed 000), with the group's state and protocol type."""
        self.offsets.expire(now, self._offset_expiries())

    def next_offset_expiry(self) -> int | None:
        """When the first committed offset expires if nothing else happens to the group (None: none
        can, in its present state): what an idle group has to be looked at again for."""
        return min((at for _, at in self._offset_expiries()), default=None)

    def _offset_expiries(self) -> list[tuple[TP, int]]:
        """The offsets that expire in the group's present state (removeExpiredOffsets' choice by state
        and protocol type), each with the time it expires at."""
        if not self.offsets.committed:
            return []
        if self.protocol_type and self.state == "Empty":
            return self.offsets.expiries(self.retention_ms, self.empty_since)
        if self.protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscribed = {t for m in self.members.values() for t in m.subscription}
            if not subscribed:
                return []
            return self.offsets.expiries(self.retention_ms, None, lambda tp: tp[0] not in subscribed)
        if not self.protocol_type:
            return self.offsets.expiries(self.retention_ms, None)
        return []

    def _trim(self, now: int) -> None:
        cutoff = now - self.retention_ms
        while len(self.timeline) > 1 and self.timeline[1][1] < cutoff:
            del self.timeline[0]
        for store in (self.generations, self.consumer.epochs):
            for k in [k for k, g in store.items() if g.end is not None and g.end < cutoff]:
                del store[k]
        self.offsets.trim(cutoff)

    # ------------------------------------------------------------------------------------------
    # output
    def lag(self, now: int) -> dict:
        owner = {tp: mid for mid, m in self.members.items() for tp in m.assignment}
        return self.offsets.lag(now, owner)

    def document(self, at_ms: int | None = None) -> dict:
        now = self.now if at_ms is None else at_ms
        consumer = self.type == "consumer"
        members = []
        for m in sorted(self.members.values(), key=lambda m: m.member_id):
            row: dict[str, Any] = {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "subscription": list(m.subscription),
                "assignment": [list(tp) for tp in m.assignment],
                "last_heartbeat": m.last_heartbeat,
            }
            if consumer:
                row["member_epoch"] = m.member_epoch
                row["state"] = MEMBER_STATES.get(m.member_state) if m.member_state is not None else None
                row["pending_revocation"] = [list(tp) for tp in self.consumer.names(m.pending_ids)]
                row["target_assignment"] = (
                    [list(tp) for tp in m.target_assignment] if m.target_assignment is not None else None
                )
            members.append(row)
        timeline = []
        for i, (state, start, inferred) in enumerate(self.timeline):
            end = self.timeline[i + 1][1] if i + 1 < len(self.timeline) else None
            timeline.append({"state": state, "start": start, "end": end, "inferred": bool(inferred)})
        gens_src = self.consumer.epochs if consumer else self.generations
        generations = []
        for k in sorted(gens_src):
            g = gens_src[k]
            generations.append(
                {
                    "generation": g.generation,
                    "start": g.start,
                    "end": g.end,
                    "stabilized": g.stabilized,
                    "stable": g.stable,
                    "duration_ms": (g.stable - g.start) if g.stable is not None else None,
                    "members": list(g.members),
                    "members_joined": list(g.joined),
                    "members_left": list(g.left),
                    "assignment": {mid: [list(tp) for tp in a] for mid, a in g.assignment.items()},
                    "protocol": g.protocol,
                    "leader": g.leader,
                    "cause": g.cause,
                    "reason": g.reason,
                    "empty": g.empty,
                    "inferred": sorted(g.inferred),
                    "member_id": g.member_id,
                    "gap_ms": g.gap_ms,
                }
            )
        if self.open is not None and not consumer:
            g = self.open
            self._fill_gap(g)
            overdue = max([m.rebalance_timeout_ms or 0 for m in self.members.values()] + [0])
            generations.append(
                {
                    "generation": (self.generation or 0) + 1 if g.generation is None else g.generation,
                    "start": g.start,
                    "end": None,
                    "stabilized": None,
                    "stable": None,
                    "duration_ms": None,
                    "in_progress_ms": max(0, now - g.start),
                    "overdue": bool(overdue) and now - g.start > overdue,
                    "members": list(self.members),
                    "members_joined": list(g.joined),
                    "members_left": list(g.left),
                    "assignment": {},
                    "protocol": None,
                    "leader": None,
                    "cause": g.cause,
                    "reason": g.reason,
                    "empty": False,
                    "inferred": sorted(g.inferred | {"generation"} if g.generation is None else g.inferred),
                    "member_id": g.member_id,
                    "gap_ms": g.gap_ms,
                }
            )
        offsets = self.offsets.rows()
        return {
            "group": self.group,
            "type": self.type or "classic",
            "state": self.state if self.state is not None else ("Empty" if self.offsets.committed else None),
            "protocol_type": self.protocol_type
            if self.protocol_type
            else (None if self.simple else self.protocol_type),
            "protocol": self.consumer.assignor if consumer else self.protocol,
            "generation": None if consumer else self.generation,
            "group_epoch": self.consumer.group_epoch if consumer else None,
            "assignment_epoch": self.consumer.assignment_epoch if consumer else None,
            "leader": None if consumer else self.leader,
            "coordinator_partition": coordinator_partition(self.group),
            "simple": self.simple,
            "members": members,
            "offsets": offsets,
            "timeline": timeline,
            "generations": generations,
            "lag": self.lag(now),
            "sources": sorted(self.sources),
            "inferred": self._inferred_notes(),
            "conflicts": [dict(c) for c in self.conflicts.values()],
            "as_of": now,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Engines pickled by an older version (the pipeline keeps them in Spark state) get the
        attributes added since with their initial values."""
        fresh = GroupEngine.__new__(GroupEngine)
        GroupEngine.__init__(fresh, state.get("group", ""), state.get("retention_ms", DEFAULT_RETENTION_MS))
        self.__dict__.update(fresh.__dict__)
        state = dict(state)
        if isinstance(state.get("offsets"), dict):  # before offsets/: three dicts on the engine
            state["offsets"] = OffsetStore(
                state.pop("offsets"), state.pop("end_offsets", None), state.pop("windows", None)
            )
        if "consumer" not in state:  # before consumer/: the KIP-848 fields on the engine
            consumer = ConsumerGroupModel(self)
            for old, new in _CONSUMER_FIELDS.items():
                if old in state:
                    setattr(consumer, new, state.pop(old))
            state["consumer"] = consumer
        self.__dict__.update(state)

    def _inferred_notes(self) -> list[str]:
        s = self.sources
        notes = [
            f"conflict ({c['kind']}, {c['count']}x): {c['note']}; not believed"
            for c in self.conflicts.values()
        ]
        if self.type == "consumer":
            if not {"offsets", "describe", "broker_log"} & s:
                notes.append("state: Empty/Stable from client events only; epochs and reconciliation unknown")
                return notes
            if "offsets" not in s and "describe" not in s:
                notes.append("state: derived from broker epoch lines; member reconciliation is not observed")
            if "offsets" not in s and "broker_log" not in s:
                notes.append("epochs: only as of the last Admin API snapshot")
            return notes
        if "broker_log" not in s:
            notes.append("rebalance reasons: causes inferred from membership changes (no broker log)")
            notes.append("timeline: PreparingRebalance starts inferred from client events or snapshots")
        if "offsets" not in s and "broker_log" not in s:
            notes.append(
                "generation: counted from observed rebalances (no GroupMetadata records, no broker log)"
            )
        if "offsets" not in s and "describe" not in s:
            notes.append("members/assignment: from client events and broker log only")
        if "heartbeats" not in s:
            notes.append("last_heartbeat: unknown (no client heartbeat events)")
        return notes


# how much each source's word on the group's protocol weighs: the Admin API's type is the weakest (a
# broker that is not Apache Kafka may answer ConsumerGroupDescribe for a classic group)
_TYPE_WEIGHT = {"describe": 1, "describe_broker": 2, "client": 2, "records": 3, "broker_log": 3}

# KIP-848 fields an engine pickled before consumer/ kept itself -> their ConsumerGroupModel names
_CONSUMER_FIELDS = {
    "group_epoch": "group_epoch",
    "assignment_epoch": "assignment_epoch",
    "epoch_source_ts": "epoch_source_ts",
    "describe_state": "describe_state",
    "topic_names": "topic_names",
    "assignor": "assignor",
    "epochs": "epochs",
    "_epoch_pending": "pending",
}

_LIVE_OR_EMPTY = ("Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "Empty")


def _consumer(method: str) -> Callable[[GroupEngine, Any], None]:
    """A handler that hands a KIP-848 record to the group's consumer-group model."""
    return lambda engine, ev: getattr(engine.consumer, method)(ev)


_HANDLERS = {
    GroupMetadataSnapshot: GroupEngine._on_group_metadata,
    OffsetCommit: GroupEngine._on_offset_commit,
    UnknownRecord: GroupEngine._on_unknown_record,
    ConsumerGroupEpoch: _consumer("on_epoch"),
    ConsumerGroupTopics: _consumer("on_topics"),
    ConsumerMemberSubscription: _consumer("on_member"),
    ConsumerTargetAssignment: _consumer("on_target_epoch"),
    ConsumerTargetMember: _consumer("on_target_member"),
    ConsumerMemberAssignment: _consumer("on_assignment"),
    BrokerLogEvent: GroupEngine._on_broker,
    HeartbeatEvent: GroupEngine._on_heartbeat,
    DescribeSnapshot: GroupEngine._on_describe,
    CommittedSnapshot: GroupEngine._on_committed,
}


def looks_like_consumer_member_id(member_id: str, client_id: str | None) -> bool:
    """KIP-848 member ids are a bare UUID in base64 (22 characters); classic ones are
    `client.id-<uuid>` (or `group.instance.id-<uuid>`)."""
    if len(member_id) != 22 or (client_id and member_id.startswith(client_id + "-")):
        return False
    return all(c.isalnum() or c in "+/_-" for c in member_id)


def sort_key(ev: Evidence) -> tuple[int, int, int]:
    return (ev.ts, _PRIORITY.get(ev.source, 5), getattr(ev, "log_offset", 0))


def sort_evidence(evs: Iterable[Evidence]) -> list[Evidence]:
    return sorted(evs, key=sort_key)


def rebuild(
    evidence: Iterable[Evidence], at_ms: int | None = None, retention_ms: int = DEFAULT_RETENTION_MS
) -> dict[str, GroupEngine]:
    """Rebuild every group the evidence names. End offsets go to every group that commits to (or is
    assigned) that topic. `at_ms`: only evidence up to that moment, timers run to it."""
    evs = [ev for ev in evidence if at_ms is None or ev.ts <= at_ms]
    evs = sort_evidence(evs)
    engines: dict[str, GroupEngine] = {}
    topic_groups: dict[str, set[str]] = {}
    ends: list[EndOffset] = []
    for ev in evs:
        if isinstance(ev, EndOffset):
            ends.append(ev)
            continue
        groups = ev.groups if isinstance(ev, BrokerLogEvent) and ev.groups else (ev.group,)
        for grp in groups:
            if grp is None:
                continue
            eng = engines.get(grp)
            if eng is None:
                eng = engines[grp] = GroupEngine(grp, retention_ms)
            for t in _topics_of(ev):
                topic_groups.setdefault(t, set()).add(grp)
    # second pass in time order, now that we know which group reads which topic
    for ev in evs:
        if isinstance(ev, EndOffset):
            for grp in topic_groups.get(ev.topic, ()):
                engines[grp].apply(ev)
            continue
        groups = ev.groups if isinstance(ev, BrokerLogEvent) and ev.groups else (ev.group,)
        for grp in groups:
            if grp is not None:
                engines[grp].apply(ev)
    end = at_ms if at_ms is not None else max((ev.ts for ev in evs), default=0)
    for eng in engines.values():
        eng.advance(end)
    return engines


def _topics_of(ev: Evidence) -> list[str]:
    if isinstance(ev, OffsetCommit):
        return [ev.topic]
    if isinstance(ev, CommittedSnapshot):
        return [t for t, _, _ in ev.offsets]
    if isinstance(ev, GroupMetadataSnapshot):
        return [t for m in ev.members for t in m.subscription]
    if isinstance(ev, ConsumerMemberSubscription):
        return list(ev.subscribed_topics)
    if isinstance(ev, ConsumerGroupTopics):
        return [name for _, name, _ in ev.topics]
    if isinstance(ev, DescribeSnapshot):
        return [t for m in ev.members for t, _ in m.assignment]
    if isinstance(ev, HeartbeatEvent):
        return [t for t, _ in ev.partitions]
    return []


def _offset_state(ev: OffsetCommit) -> OffsetState:
    """What a partition keeps of a (non-tombstone) commit record."""
    assert ev.offset is not None
    cts = ev.commit_timestamp if ev.commit_timestamp >= 0 else ev.ts
    return OffsetState(
        ev.offset, cts, ev.ts, ev.log_offset, ev.metadata, ev.leader_epoch, ev.expire_timestamp
    )


def merge_sorted(*streams: Iterable[Evidence]) -> Iterable[Evidence]:
    """Merge already time-ordered evidence streams."""
    return heapq.merge(*streams, key=sort_key)
