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
applied at the time of the latest transition it cannot precede (`clamp`), and an inferred
rebalance start is moved to the broker's time when the broker's line comes in.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any

from coordinator_model.broker_log import (
    BrokerLogEvent,
)
from coordinator_model.classic import ClassicGroupModel
from coordinator_model.consumer import ConsumerGroupModel, has_k848_details
from coordinator_model.document.types import GroupDocument
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
from coordinator_model.evidence_order import sort_evidence
from coordinator_model.group_offsets import GroupOffsets
from coordinator_model.membership import (
    Generation,  # noqa: F401  engines pickled before membership.py
    Member,
)
from coordinator_model.offsets import (
    OffsetState,  # noqa: F401  engines pickled before offsets/ name it here
    OffsetStore,
)
from coordinator_model.offsets.expiry import (
    CONSUMER_PROTOCOL_TYPE,
    DEFAULT_OFFSETS_RETENTION_MS,
)
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

MAX_DEPARTED = 500
# The sources that speak for the group coordinator itself: its `__consumer_offsets` records, its log,
# and the Admin API's answers. Client heartbeat events are not among them: any application with the
# probe's credentials can write them (docs/security.md, "Trust model for the probe's heartbeat
# events"), so they never make a group exist on their own (`GroupEngine.confirmed`).
COORDINATOR_SOURCES = frozenset({"offsets", "broker_log", "describe", SHARE_START_OFFSETS})


class GroupEngine(GroupOffsets):
    """Rebuilds one group's state, members, generations and timeline from evidence."""

    def __init__(self, group: str, retention_ms: int = DEFAULT_OFFSETS_RETENTION_MS) -> None:
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

    def _on_unknown_record(self, ev: UnknownRecord) -> None:
        pass

    # ------------------------------------------------------------------------------------------
    # the group's kind: classic, or a modern one (KIP-848, KIP-932 share, KIP-1071 streams)
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
    # the coordinator's log
    def _on_broker(self, ev: BrokerLogEvent) -> None:
        kind = ev.kind
        if kind in (
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
    # client heartbeat events
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
    # the Admin API
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

    def _trim(self, now: int) -> None:
        cutoff = now - self.retention_ms
        while len(self.timeline) > 1 and self.timeline[1][1] < cutoff:
            del self.timeline[0]
        for store in (self.classic.generations, self.consumer.epochs):
            for number in [n for n, g in store.items() if g.end is not None and g.end < cutoff]:
                del store[number]
        self.offsets.trim(cutoff)

    # ------------------------------------------------------------------------------------------
    # output
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
            # every micro-batch, and building a fresh engine first would cost half as much again)
            self.__dict__.update(state)
            self._attach()
            return
        fresh = GroupEngine(state.get("group", ""), state.get("retention_ms", DEFAULT_OFFSETS_RETENTION_MS))
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

# what an engine of this version holds: one pickled with all of them needs no migration
_ATTRIBUTES = frozenset(vars(GroupEngine("")))
