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
  heartbeating; they open rebalances only when the broker log is missing. Anyone who may write the
  heartbeat topic can write them (docs/security.md, "Trust model for the probe's heartbeat events"):
  they never make a group on their own (`confirmed`), and where GroupMetadata records list the
  members, a client's join or leave is only the time and cause of the rebalance the records show.
- Admin snapshots are exact at their timestamp (state, members, assignment, KIP-848 epochs) but
  sampled: between snapshots nothing is known from them.

Evidence from different sources may arrive a few seconds out of order: a late piece of evidence is
applied at the time of the latest transition it cannot precede (`_clamp`), and an inferred
rebalance start is moved to the broker's time when the broker's line comes in.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from coordinator_model.broker_log import (
    BrokerLogEvent,
)
from coordinator_model.classic import ClassicGroupModel
from coordinator_model.consumer import ConsumerGroupModel, has_k848_details
from coordinator_model.document.types import GroupDocument, LagDoc
from coordinator_model.document.writer import group_document
from coordinator_model.evidence import (
    CONSUMER,
    SHARE,
    SHARE_START_OFFSETS,
    STREAMS,
    AdminDenied,
    CommittedSnapshot,
    ConsumerGroupEpoch,
    ConsumerGroupTopics,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerTargetAssignment,
    ConsumerTargetMember,
    DescribeSnapshot,
    EndOffset,
    EndOffsets,
    Evidence,
    GroupMetadataSnapshot,
    HeartbeatEvent,
    OffsetCommit,
    StreamsTargetTasks,
    StreamsTopology,
    UnknownRecord,
)
from coordinator_model.evidence_order import sort_evidence, sort_key
from coordinator_model.group_metadata import CONSUMER_PROTOCOL_TYPE
from coordinator_model.membership import (
    TP,
    Generation,  # noqa: F401  engines pickled before membership.py
    Member,
)
from coordinator_model.offsets import CommitRun, OffsetState, OffsetStore, merged_rows
from coordinator_model.older_pickles import migrate
from coordinator_model.share import ShareGroupModel
from coordinator_model.share.group import SHARE_PROTOCOL_TYPE
from coordinator_model.states import MODERN_TYPES
from coordinator_model.streams import StreamsGroupModel
from coordinator_model.streams.group import STREAMS_PROTOCOL_TYPE
from coordinator_model.weighing import (
    MAX_CONFLICTS,
    contradiction,
    looks_like_a_member_id,
    looks_like_consumer_member_id,
    outweighs,
)

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
MAX_DEPARTED = 500
# The sources that speak for the group coordinator itself: its `__consumer_offsets` records, its log,
# and the Admin API's answers. Client heartbeat events are not among them: any application with the
# probe's credentials can write them (docs/security.md, "Trust model for the probe's heartbeat
# events"), so they never make a group exist on their own (`GroupEngine.confirmed`).
COORDINATOR_SOURCES = frozenset({"offsets", "broker_log", "describe", SHARE_START_OFFSETS})


class GroupEngine:
    """Rebuilds one group's state, members, generations and timeline from evidence."""

    def __init__(self, group: str, retention_ms: int = DEFAULT_RETENTION_MS) -> None:
        self.group = group
        self.retention_ms = retention_ms
        self.type: str | None = None  # classic | consumer
        self.sources: set[str] = set()
        self.now = 0
        # what every kind of group has (group_context.GroupContext is what a kind's model sees of it)
        self.state: str | None = None
        self.timeline: list[list[Any]] = []  # [state, start, inferred]
        self.protocol_type: str | None = None
        self.members: dict[str, Member] = {}
        self.departed: dict[str, int] = {}  # member id -> when it left (late events must not revive it)
        self.departed_members: dict[str, Member] = {}  # for the poll_stall of a member that just left
        self.deleted = False
        self.offsets = OffsetStore()  # committed offsets, log ends, lag windows
        self._next_due = 2**62  # earliest session expiry to check (heartbeat-only inference)
        # each kind's own part: the evidence of a classic / KIP-848 group is replayed there
        self.classic = ClassicGroupModel(self)
        self.consumer = ConsumerGroupModel(self)
        # evidence weighing: who said what the group's type is, and what contradicted what
        self.client_protocol: str | None = None  # the clients' own group.protocol (heartbeat events)
        self.type_source: str | None = None  # client | records | broker_log | describe
        self.conflicts: dict[str, dict[str, Any]] = {}
        # what the broker refused to tell about the group ("describe", "offsets", "end_offsets" -> since,
        # error): the poller's AdminDenied lines
        self.denied: dict[str, dict[str, Any]] = {}
        # the coordinator broker (id, host, port) the Admin API's last describe named
        self.coordinator: tuple[int, str, int] | None = None

    @property
    def confirmed(self) -> bool:
        """The coordinator's own sources (its records, its log, the Admin API) know the group: only
        then is it shown. A group named only by client heartbeat events is held, unconfirmed: its
        events are applied as they come (so that, once confirmed, its history is whole), but no
        document of it is shown (`rebuild`), as any writer of the heartbeat topic could have made
        it up. The broker's refusal to describe it (AdminDenied) is an answer about a group it
        lists, so it counts."""
        return bool(self.sources & COORDINATOR_SOURCES) or bool(self.denied)

    # ------------------------------------------------------------------------------------------
    # feeding
    def apply_many(self, evs: Iterable[Evidence]) -> None:
        for ev in sort_evidence(evs):
            self.apply(ev)

    def apply(self, ev: Evidence) -> None:
        ts = ev.ts
        self.now = max(self.now, ts)
        if isinstance(ev, EndOffset):
            self._end_offset(ev.topic, ev.partition, ts, ev.end_offset)
            return
        if isinstance(ev, EndOffsets):  # a line of them: each as an EndOffset in turn
            for topic, partition, end in ev.rows:
                self._end_offset(topic, partition, ts, end)
            return
        if isinstance(ev, AdminDenied):  # a refusal is not a source of what the group does
            if not ev.error:
                self.denied.pop(ev.what, None)
            else:
                since = self.denied.get(ev.what, {}).get("since", ts)
                self.denied[ev.what] = {"since": since, "error": ev.error}
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
        self._commits_end(self.offsets.apply_runs(runs))

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
        if kept:
            self._only_commits(min(kept))

    def _only_commits(self, ts: int) -> None:
        """A classic group seen only through its commits is a standalone (assign()) group: Kafka
        describes it as Empty."""
        if self.state is None and not self.members and self.type == "classic":
            self.classic.simple = True
            self.classic.goto("Empty", ts, True)

    def preview_commits(self, commits: Iterable[OffsetCommit | CommittedSnapshot]) -> None:
        """Offset commits (and a share group's positions, CommittedSnapshot of SHARE_START_OFFSETS)
        shown before their turn: committed offsets and lag samples only, no timers and no state
        inference. Only for a throwaway copy of an engine (the live pipeline shows a commit's lag
        while the commit waits behind the event-time watermark; the real engine applies it in
        evidence order later)."""
        for ev in sorted(commits, key=sort_key):
            if isinstance(ev, CommittedSnapshot):
                self.now = max(self.now, ev.ts)
                self.offsets.snapshot(ev.ts, ev.offsets, drop_unseen=False)
            elif ev.offset is not None:
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
        return not (self.type in MODERN_TYPES and ("offsets" in self.sources or "describe" in self.sources))

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

    def _expire(self, member_id: str, ts: int) -> None:
        """A member's session expired, seen from its heartbeat events that stopped (no broker log)."""
        if self.type in MODERN_TYPES:
            self.remove_member(member_id, ts)  # fenced: the member session expired
            self.consumer.update_state(ts)
        else:
            self.classic.expire(member_id, ts)

    # ------------------------------------------------------------------------------------------
    # classic timeline primitives
    def last_ts(self) -> int:
        return self.timeline[-1][1] if self.timeline else -(2**62)

    def clamp(self, ts: int) -> int:
        return max(ts, self.last_ts())

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
            self.departed_members[member_id] = m
            if len(self.departed_members) > 50:
                del self.departed_members[next(iter(self.departed_members))]
        if self.classic.leader == member_id:
            self.classic.leader = next(iter(self.members), None)
        return m

    # ------------------------------------------------------------------------------------------
    # 1. __consumer_offsets
    def _on_offset_commit(self, ev: OffsetCommit) -> None:
        self.type = self.type or "classic"
        if ev.topic_id is not None and ev.topic_id not in self.consumer.topic_names:
            self.consumer.learn_topic_id(ev.topic_id, ev.topic)
        tp = (ev.topic, ev.partition)
        if ev.offset is None:
            self.offsets.tombstone(tp, ev.log_offset)
            return
        if self.offsets.commit(tp, _offset_state(ev)):
            self._only_commits(ev.ts)

    def _on_unknown_record(self, ev: UnknownRecord) -> None:
        pass

    # KIP-848 and KIP-932 records
    def as_share(self, source: str = "records") -> None:
        """A share group (KIP-932): its modern-protocol part becomes a ShareGroupModel (what a record
        of the consumer kind had set up is kept: topic names, epochs)."""
        self._become("share", SHARE_PROTOCOL_TYPE, ShareGroupModel, source)

    def as_streams(self, source: str = "records") -> None:
        """A streams group (KIP-1071): its modern-protocol part becomes a StreamsGroupModel (epochs and
        topic names a model of another kind had set up are kept)."""
        self._become("streams", STREAMS_PROTOCOL_TYPE, StreamsGroupModel, source)

    def _become(self, kind: str, protocol_type: str, model_class: type, source: str) -> None:
        """The group is of modern `kind`: its modern-protocol part becomes a `model_class`, keeping
        what the model before it had set up (topic names, epochs)."""
        if self.type != kind or outweighs(source, self.type_source):
            self.type_source = source
        self.type = kind
        self.protocol_type = protocol_type
        if not isinstance(self.consumer, model_class):
            model = model_class(self)
            model.__dict__.update({k: v for k, v in self.consumer.__dict__.items() if k != "engine"})
            self.consumer = model

    def modern(self, ev: Any) -> ConsumerGroupModel:
        """The model a modern-protocol record goes to: the share or streams group's when it is one."""
        kind = getattr(ev, "kind", CONSUMER)
        if kind == SHARE and not isinstance(self.consumer, ShareGroupModel):
            self.as_share()
        elif kind == STREAMS and not isinstance(self.consumer, StreamsGroupModel):
            self.as_streams()
        return self.consumer

    def as_consumer(self, source: str = "records") -> None:
        if self.type != "consumer" or outweighs(source, self.type_source):
            self.type_source = source
        self.type = "consumer"
        self.protocol_type = CONSUMER_PROTOCOL_TYPE

    def typed(self, kind: str, source: str) -> None:
        """Who last said which protocol the group speaks (an Admin API answer is the weakest word)."""
        if self.type is None or outweighs(source, self.type_source):
            self.type_source = source
        self.type = self.type or kind

    def _retype(self, kind: str, ts: int, why: str) -> None:
        """The group's type came from an Admin API answer that stronger evidence contradicts: start the
        group again as `kind` (what was derived from that answer was derived for the wrong protocol)."""
        self.conflict("type", ts, why)
        self.type, self.type_source = kind, "client"
        self.timeline.clear()
        self.state = None
        self.classic.generations.clear()
        self.classic.open = None
        self.classic.generation = None
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
            self.modern(ev).on_broker(ev)
            return
        self.classic.on_broker(ev)

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
            self.typed(kind, "client")
            if consumer:
                self.as_consumer("client")
        elif self.type != kind and self.type_source == "describe":
            self._retype(
                kind, ev.ts, f"the Admin API described the group as {self.type}; its clients use {kind}"
            )
        elif self.type_source == "describe":
            self.type_source = "client"
        if self.type in MODERN_TYPES:
            self.consumer.on_heartbeat(ev)
        else:
            self.classic.on_heartbeat(ev)

    # ------------------------------------------------------------------------------------------
    # 4. Admin API
    def _on_describe(self, ev: DescribeSnapshot) -> None:
        self.denied.pop("describe", None)  # allowed again
        if ev.coordinator_id is not None and ev.coordinator_host and ev.coordinator_port is not None:
            self.coordinator = (ev.coordinator_id, ev.coordinator_host, ev.coordinator_port)
        if ev.type == "streams" or self.type == "streams":
            # StreamsGroupDescribe (KIP-1071) is the only answer about a streams group: its commits
            # alone had made it a classic group until now
            if ev.type == "streams":
                self.as_streams("describe_broker")
                self.consumer.on_describe(ev)
            return
        if self.type == "share":
            if ev.type == "share":  # the broker's ShareGroupDescribe (KIP-932)
                self.consumer.on_describe(ev)
            return  # DescribeConsumerGroups does not describe share groups: its answer is not about it
        if ev.type == "consumer" or ev.broker_state:
            if (
                self.type == "classic"
                and not has_k848_details(ev)
                and outweighs(self.type_source, "describe")
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
        self.classic.on_describe(ev)

    def names_a_member(self, assignor: str) -> bool:
        """An assignor field that is a member id (seen, or shaped like one) is not an assignor name."""
        return assignor in self.members or assignor in self.departed or looks_like_a_member_id(assignor)

    def contradiction(self, ev: DescribeSnapshot) -> str | None:
        return contradiction(ev, self.members, self.sources)

    def _on_committed(self, ev: CommittedSnapshot) -> None:
        self.denied.pop("offsets", None)
        self.offsets.snapshot(ev.ts, ev.offsets, drop_unseen="offsets" not in self.sources)

    # ------------------------------------------------------------------------------------------
    # offsets, lag
    def _end_offset(self, topic: str, partition: int, ts: int, end: int) -> None:
        new, note = self.offsets.end_offset((topic, partition), ts, end)
        if new and self.type in MODERN_TYPES:
            self.consumer.rename_partitions()  # a partition count may name a topic id
        if note is not None:
            self.conflict("end_offsets", ts, note)

    def log_end_topics(self) -> set[str]:
        """The topics whose log ends the group's lag needs: those it commits to, and those its
        members subscribe to or own."""
        topics = {t for t, _ in self.offsets.committed}
        for m in self.members.values():
            topics.update(m.subscription)
            topics.update(t for t, _ in m.assignment)
        return topics

    def take_log_ends(self, histories: dict[TP, Any], upto: int) -> None:
        """The cluster's log-end histories of the group's partitions, shared by every group that reads
        them (the live pipeline keeps one per partition, not one per group), as far as `upto`: what
        the engine would hold had it seen each observation up to then as EndOffset evidence. A
        partition new to the group has the effects of `_end_offset` (a KIP-848 group may now name a
        topic id; a committed offset past the log end is noted)."""
        old = self.offsets.ends
        self.offsets.ends = {}
        for tp, h in histories.items():
            cut = bisect.bisect_right(h.ts, upto)
            if cut < len(h.ts):
                # a history cut at `upto` is a new one: the caller may have lent its own, which other
                # groups read after this one
                h = type(h)(h.ts[:cut], h.offsets[:cut], min(h.last_seen, upto))
            if not h.ts:
                continue
            self.offsets.ends[tp] = h
            if tp not in old:
                if self.type in MODERN_TYPES:
                    self.consumer.rename_partitions()
                cur = self.offsets.committed.get(tp)
                if cur is not None and cur.ts <= h.ts[-1] and cur.offset > h.offsets[-1]:
                    _, note = self.offsets.end_offset(tp, h.ts[-1], h.offsets[-1])
                    if note is not None:
                        self.conflict("end_offsets", h.ts[-1], note)

    def _expire_offsets(self, now: int) -> None:
        """Kafka's GroupMetadata.removeExpiredOffsets, with the group's state and protocol type."""
        rule = self._expiry_rule()
        if rule is None:
            return
        first = self.offsets.first_expiry(self.retention_ms, *rule)
        if first is not None and now >= first:  # (almost never: the list is made only then)
            self.offsets.expire(now, self.offsets.expiries(self.retention_ms, *rule))

    def next_offset_expiry(self) -> int | None:
        """When the first committed offset expires if nothing else happens to the group (None: none
        can, in its present state): what an idle group has to be looked at again for."""
        rule = self._expiry_rule()
        return None if rule is None else self.offsets.first_expiry(self.retention_ms, *rule)

    def _expiry_rule(self) -> tuple[int | None, Callable[[TP], bool] | None] | None:
        """Which offsets expire in the group's present state (removeExpiredOffsets' choice by state and
        protocol type) and from when: (the time the group became Empty, else None: each offset's
        commit; a filter of the partitions, or None: all of them); None: none expire."""
        if not self.offsets.committed:
            return None
        if self.protocol_type and self.state == "Empty":
            return self.classic.empty_since, None
        if self.protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscribed = {t for m in self.members.values() for t in m.subscription}
            if not subscribed:
                return None
            return None, lambda tp: tp[0] not in subscribed
        if not self.protocol_type:
            return None, None
        return None

    def _trim(self, now: int) -> None:
        cutoff = now - self.retention_ms
        while len(self.timeline) > 1 and self.timeline[1][1] < cutoff:
            del self.timeline[0]
        for store in (self.classic.generations, self.consumer.epochs):
            for k in [k for k, g in store.items() if g.end is not None and g.end < cutoff]:
                del store[k]
        self.offsets.trim(cutoff)

    # ------------------------------------------------------------------------------------------
    # output
    def lag(self, now: int) -> LagDoc:
        owner = {tp: mid for mid, m in self.members.items() for tp in m.assignment}
        return self.offsets.lag(now, owner)

    def document(self, at_ms: int | None = None) -> GroupDocument:
        """The group as the collector stores and shows it (coordinator_model/document/)."""
        return group_document(self, self.now if at_ms is None else at_ms)

    def document_json(self, at_ms: int | None = None) -> dict[str, Any]:
        """The document in the JSON form that is stored and printed."""
        return self.document(at_ms).to_json()

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Engines pickled by an older version (the pipeline keeps them in Spark state) get the
        attributes added since with their initial values."""
        if state.keys() >= _ATTRIBUTES:
            # pickled by this version: as it is (the pipeline unpickles every group it touches at
            # every micro-batch; building a fresh engine here cost half as much again)
            self.__dict__.update(state)
            self._attach()
            return
        fresh = GroupEngine(state.get("group", ""), state.get("retention_ms", DEFAULT_RETENTION_MS))
        self.__dict__.update(fresh.__dict__)
        state = migrate(state, ClassicGroupModel(self), ConsumerGroupModel(self))
        self.__dict__.update(state)
        self._attach()

    def _attach(self) -> None:
        """Its kind's models point back at this group (pickled without: see their __getstate__)."""
        proxy = weakref.proxy(self)
        self.classic.engine = proxy
        self.consumer.engine = proxy


def _consumer(method: str) -> Callable[[GroupEngine, Any], None]:
    """A handler that hands a modern group's record (KIP-848, or a share or streams group's) to the
    group's model of it."""
    return lambda engine, ev: getattr(engine.modern(ev), method)(ev)


def _classic(method: str) -> Callable[[GroupEngine, Any], None]:
    """A handler that hands a classic group's record to the group's classic model."""
    return lambda engine, ev: getattr(engine.classic, method)(ev)


_HANDLERS = {
    GroupMetadataSnapshot: _classic("on_group_metadata"),
    OffsetCommit: GroupEngine._on_offset_commit,
    UnknownRecord: GroupEngine._on_unknown_record,
    ConsumerGroupEpoch: _consumer("on_epoch"),
    ConsumerGroupTopics: _consumer("on_topics"),
    ConsumerMemberSubscription: _consumer("on_member"),
    ConsumerTargetAssignment: _consumer("on_target_epoch"),
    ConsumerTargetMember: _consumer("on_target_member"),
    ConsumerMemberAssignment: _consumer("on_assignment"),
    StreamsTargetTasks: _consumer("on_target_tasks"),  # (of kind streams: its model's own records)
    StreamsTopology: _consumer("on_topology"),
    BrokerLogEvent: GroupEngine._on_broker,
    HeartbeatEvent: GroupEngine._on_heartbeat,
    DescribeSnapshot: GroupEngine._on_describe,
    CommittedSnapshot: GroupEngine._on_committed,
}


def _offset_state(ev: OffsetCommit) -> OffsetState:
    """What a partition keeps of a (non-tombstone) commit record."""
    assert ev.offset is not None
    cts = ev.commit_timestamp if ev.commit_timestamp >= 0 else ev.ts
    return OffsetState(
        ev.offset, cts, ev.ts, ev.log_offset, ev.metadata, ev.leader_epoch, ev.expire_timestamp
    )


# what an engine of this version holds: one pickled with all of them needs no migration
_ATTRIBUTES = frozenset(vars(GroupEngine("")))
