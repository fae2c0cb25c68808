"""The group document as types: one group's reconstruction, written by the engine (writer.py) and
read by the Redis store, the dashboard, the alert rules, what-if and the CLI through these same
classes.

Its JSON form (`to_json`) is what `groupscope model --json` prints and the sink stores in Redis
(docs/redis-schema.md); `from_json` reads it back. The writer builds every document through
`to_json`, so a field renamed here is renamed everywhere at once, and a reader that asks for a field
the writer does not write fails in its tests instead of showing an empty cell.

Documents stored by an older version may lack a field added since: `from_json` gives it its default
(None, False or empty). A value that is not a document (not an object, no group name) raises
DocumentError, which readers turn into a message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator_model.states import MODERN_TYPES

TopicPartition = tuple[str, int]
# the states in which a group is rebalancing (classic) or reconciling its members (KIP-848)
REBALANCING_STATES = frozenset({"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"})


class DocumentError(ValueError):
    """A stored value that is not a group document."""


def _tps(items: Iterable[Any] | None) -> list[TopicPartition]:
    return [(t, p) for t, p in items] if items else []


def _tp_lists(tps: Iterable[TopicPartition]) -> list[list[Any]]:
    return [[t, p] for t, p in tps]


@dataclass(slots=True)
class TasksDoc:
    """A KIP-1071 streams member's tasks, each named as Kafka names it: "<subtopology>_<partition>"."""

    active: list[str] = field(default_factory=list)
    standby: list[str] = field(default_factory=list)
    warmup: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"active": list(self.active), "standby": list(self.standby), "warmup": list(self.warmup)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> TasksDoc | None:
        if d is None:
            return None
        return cls(
            active=[str(x) for x in d.get("active") or ()],
            standby=[str(x) for x in d.get("standby") or ()],
            warmup=[str(x) for x in d.get("warmup") or ()],
        )


@dataclass(slots=True)
class SubtopologyDoc:
    """One subtopology of a streams group's topology: the topics it reads (its source topics and the
    repartition topics it reads), writes for repartitioning, and its state stores' changelogs."""

    id: str
    source_topics: list[str] = field(default_factory=list)
    repartition_source_topics: list[str] = field(default_factory=list)
    repartition_sink_topics: list[str] = field(default_factory=list)
    changelog_topics: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source_topics": list(self.source_topics),
            "repartition_source_topics": list(self.repartition_source_topics),
            "repartition_sink_topics": list(self.repartition_sink_topics),
            "changelog_topics": list(self.changelog_topics),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SubtopologyDoc:
        return cls(
            id=str(d["id"]),
            source_topics=list(d.get("source_topics") or ()),
            repartition_source_topics=list(d.get("repartition_source_topics") or ()),
            repartition_sink_topics=list(d.get("repartition_sink_topics") or ()),
            changelog_topics=list(d.get("changelog_topics") or ()),
        )


@dataclass(slots=True)
class TopologyDoc:
    """A streams group's topology as its coordinator holds it: `subtopologies` None while it is not
    ready (NotReady: source topics missing or wrongly partitioned)."""

    epoch: int | None = None
    subtopologies: list[SubtopologyDoc] | None = None

    def to_json(self) -> dict[str, Any]:
        subs = self.subtopologies
        return {"epoch": self.epoch, "subtopologies": None if subs is None else [x.to_json() for x in subs]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> TopologyDoc | None:
        if d is None:
            return None
        subs = d.get("subtopologies")
        return cls(
            epoch=d.get("epoch"),
            subtopologies=None if subs is None else [SubtopologyDoc.from_json(x) for x in subs],
        )


@dataclass(slots=True)
class MemberDoc:
    """A member of the group now. The last four fields are those of a KIP-848 or KIP-932 member:
    a classic group's members do not carry them in JSON."""

    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    subscription: list[str] = field(default_factory=list)
    assignment: list[TopicPartition] = field(default_factory=list)
    last_heartbeat: int | None = None
    modern: bool = False  # the member of a consumer or share group: the fields below are written
    member_epoch: int | None = None
    state: str | None = None  # its reconciliation state (Stable, UnrevokedPartitions, ...)
    pending_revocation: list[TopicPartition] = field(default_factory=list)
    target_assignment: list[TopicPartition] | None = None
    # a streams group's member (KIP-1071): its tasks now and its target tasks, and its process (one
    # Kafka Streams instance, whose stream threads may be several members); written when set
    tasks: TasksDoc | None = None
    target_tasks: TasksDoc | None = None
    process_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "subscription": list(self.subscription),
            "assignment": _tp_lists(self.assignment),
            "last_heartbeat": self.last_heartbeat,
        }
        if self.modern:
            row["member_epoch"] = self.member_epoch
            row["state"] = self.state
            row["pending_revocation"] = _tp_lists(self.pending_revocation)
            row["target_assignment"] = (
                _tp_lists(self.target_assignment) if self.target_assignment is not None else None
            )
        if self.tasks is not None:
            row["tasks"] = self.tasks.to_json()
            row["target_tasks"] = self.target_tasks.to_json() if self.target_tasks is not None else None
            row["process_id"] = self.process_id
        return row

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MemberDoc:
        target = d.get("target_assignment")
        return cls(
            member_id=str(d["member_id"]),
            group_instance_id=d.get("group_instance_id"),
            client_id=d.get("client_id"),
            client_host=d.get("client_host"),
            session_timeout_ms=d.get("session_timeout_ms"),
            rebalance_timeout_ms=d.get("rebalance_timeout_ms"),
            subscription=list(d.get("subscription") or ()),
            assignment=_tps(d.get("assignment")),
            last_heartbeat=d.get("last_heartbeat"),
            modern="member_epoch" in d,
            member_epoch=d.get("member_epoch"),
            state=d.get("state"),
            pending_revocation=_tps(d.get("pending_revocation")),
            target_assignment=_tps(target) if target is not None else None,
            tasks=TasksDoc.from_json(d.get("tasks")),
            target_tasks=TasksDoc.from_json(d.get("target_tasks")),
            process_id=d.get("process_id"),
        )


@dataclass(slots=True)
class ClientDoc:
    """Who a member was to Kafka, kept for a generation's or epoch's events that name it: its client
    id and host. A classic member's id starts with its client id, so a classic group's events read
    as clients even after the member left; a KIP-848, share or streams member's id is an opaque
    UUID, which once the member left said nothing of who it was without these."""

    client_id: str | None = None
    client_host: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"client_id": self.client_id, "client_host": self.client_host}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ClientDoc:
        return cls(d.get("client_id"), d.get("client_host"))


@dataclass(slots=True)
class CoordinatorDoc:
    """The broker that coordinates the group, as the Admin API's describe named it (its node)."""

    id: int
    host: str
    port: int

    def label(self) -> str:
        """As kafka-consumer-groups.sh prints it in its COORDINATOR (ID) column: "host:port  (id)",
        two spaces before the id as Kafka's ConsumerGroupCommand writes them."""
        return f"{self.host}:{self.port}  ({self.id})"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "host": self.host, "port": self.port}

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> CoordinatorDoc | None:
        if d is None:
            return None
        return cls(int(d["id"]), str(d["host"]), int(d["port"]))


@dataclass(slots=True)
class TimelineSpan:
    """The group was in `state` from `start` to `end` (None: still is). `inferred`: the moment was not
    seen, only implied by the evidence (a state the coordinator must have passed through)."""

    state: str
    start: int
    end: int | None = None
    inferred: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "start": self.start, "end": self.end, "inferred": self.inferred}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TimelineSpan:
        return cls(str(d["state"]), d["start"], d.get("end"), bool(d.get("inferred")))


@dataclass(slots=True)
class GenerationDoc:
    """A classic group's generation, or a KIP-848/932 group's epoch: when its rebalance began
    (`start`), when the group was Stable in it (`stable`), why (`cause`, `reason`) and who was in it.
    `in_progress_ms` and `overdue` are set only on a classic rebalance still in progress (its
    generation number is then inferred: the next one)."""

    generation: int | None
    start: int | None
    end: int | None = None
    stabilized: int | None = None
    stable: int | None = None
    duration_ms: int | None = None
    members: list[str] = field(default_factory=list)
    members_joined: list[str] = field(default_factory=list)
    members_left: list[str] = field(default_factory=list)
    assignment: dict[str, list[TopicPartition]] = field(default_factory=dict)
    protocol: str | None = None
    leader: str | None = None
    cause: str | None = None
    reason: str | None = None
    empty: bool = False
    inferred: list[str] = field(default_factory=list)  # which of its values were inferred
    member_id: str | None = None  # the member whose join, leave or expiry caused it
    gap_ms: int | None = None  # how long that member had been silent or not polling
    in_progress_ms: int | None = None
    overdue: bool = False
    # a KIP-848, share or streams epoch's: who the members it names (joined, left) were, by member
    # id, for those whose client id or host is known; written when there are any
    clients: dict[str, ClientDoc] = field(default_factory=dict)

    @property
    def in_progress(self) -> bool:
        return self.in_progress_ms is not None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "generation": self.generation,
            "start": self.start,
            "end": self.end,
            "stabilized": self.stabilized,
            "stable": self.stable,
            "duration_ms": self.duration_ms,
        }
        if self.in_progress_ms is not None:
            d["in_progress_ms"] = self.in_progress_ms
            d["overdue"] = self.overdue
        d.update(
            {
                "members": list(self.members),
                "members_joined": list(self.members_joined),
                "members_left": list(self.members_left),
                "assignment": {mid: _tp_lists(a) for mid, a in self.assignment.items()},
                "protocol": self.protocol,
                "leader": self.leader,
                "cause": self.cause,
                "reason": self.reason,
                "empty": self.empty,
                "inferred": list(self.inferred),
                "member_id": self.member_id,
                "gap_ms": self.gap_ms,
            }
        )
        if self.clients:
            d["clients"] = {mid: c.to_json() for mid, c in sorted(self.clients.items())}
        return d

    def client_of(self, member_id: str) -> ClientDoc | None:
        """Who a member this epoch names was (None: not known)."""
        return self.clients.get(member_id)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GenerationDoc:
        return cls(
            generation=d.get("generation"),
            start=d.get("start"),
            end=d.get("end"),
            stabilized=d.get("stabilized"),
            stable=d.get("stable"),
            duration_ms=d.get("duration_ms"),
            members=list(d.get("members") or ()),
            members_joined=list(d.get("members_joined") or ()),
            members_left=list(d.get("members_left") or ()),
            assignment={mid: _tps(a) for mid, a in (d.get("assignment") or {}).items()},
            protocol=d.get("protocol"),
            leader=d.get("leader"),
            cause=d.get("cause"),
            reason=d.get("reason"),
            empty=bool(d.get("empty")),
            inferred=list(d.get("inferred") or ()),
            member_id=d.get("member_id"),
            gap_ms=d.get("gap_ms"),
            in_progress_ms=d.get("in_progress_ms"),
            overdue=bool(d.get("overdue")),
            clients={str(mid): ClientDoc.from_json(c) for mid, c in (d.get("clients") or {}).items()},
        )


@dataclass(slots=True)
class OffsetDoc:
    """A committed offset, as the coordinator stored it."""

    topic: str
    partition: int
    offset: int
    commit_timestamp: int | None = None
    metadata: str | None = None
    leader_epoch: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "commit_timestamp": self.commit_timestamp,
            "metadata": self.metadata,
            "leader_epoch": self.leader_epoch,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> OffsetDoc:
        return cls(
            d["topic"],
            d["partition"],
            d["offset"],
            d.get("commit_timestamp"),
            d.get("metadata"),
            d.get("leader_epoch"),
        )


@dataclass(slots=True)
class PartitionLag:
    """One partition's lag: committed or owned by a member. `lag` (offsets) and `lag_seconds` are
    None when the log-end offset or the commit is not known; `status` is Burrow's evaluation, or
    NO_COMMIT / UNKNOWN."""

    topic: str
    partition: int
    committed: int | None = None
    has_commit: bool = False
    end_offset: int | None = None
    lag: int | None = None
    lag_seconds: float | None = None
    status: str | None = None
    member_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "committed": self.committed,
            "has_commit": self.has_commit,
            "end_offset": self.end_offset,
            "lag": self.lag,
            "lag_seconds": self.lag_seconds,
            "status": self.status,
            "member_id": self.member_id,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PartitionLag:
        return cls(
            d["topic"],
            d["partition"],
            d.get("committed"),
            bool(d.get("has_commit", d.get("committed") is not None)),
            d.get("end_offset"),
            d.get("lag"),
            d.get("lag_seconds"),
            d.get("status"),
            d.get("member_id"),
        )


@dataclass(slots=True)
class MemberLag:
    """A member's lag: the sum over the partitions it owns, and the worst of their lags in seconds."""

    member_id: str
    lag: int = 0
    lag_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"member_id": self.member_id, "lag": self.lag, "lag_seconds": self.lag_seconds}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MemberLag:
        return cls(str(d["member_id"]), d.get("lag") or 0, d.get("lag_seconds") or 0.0)


@dataclass(slots=True)
class LagDoc:
    """The group's lag. `total` (offsets, summed over the partitions whose lag is known) and
    `max_seconds` (the worst partition) are None when no partition's lag is known: the one group
    total every reader uses (`totals`)."""

    total: int | None = None
    max_seconds: float | None = None
    status: str | None = None  # Burrow's group status: OK, WARN, ERR (or NOTFOUND)
    partitions: list[PartitionLag] = field(default_factory=list)
    members: list[MemberLag] = field(default_factory=list)

    def totals(self) -> tuple[int, float]:
        """(offsets, seconds) with unknown counted as 0: what sorting, summing and charts use."""
        return self.total or 0, float(self.max_seconds or 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "max_seconds": self.max_seconds,
            "status": self.status,
            "partitions": [p.to_json() for p in self.partitions],
            "members": [m.to_json() for m in self.members],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> LagDoc:
        if not d:
            return cls()
        return cls(
            d.get("total"),
            d.get("max_seconds"),
            d.get("status"),
            [PartitionLag.from_json(p) for p in d.get("partitions") or ()],
            [MemberLag.from_json(m) for m in d.get("members") or ()],
        )


@dataclass(slots=True)
class Conflict:
    """Two sources disagreed and the weaker was not believed (engine.conflict)."""

    kind: str
    first: int | None = None
    last: int | None = None
    count: int = 0
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "first": self.first,
            "last": self.last,
            "count": self.count,
            "note": self.note,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Conflict:
        return cls(str(d["kind"]), d.get("first"), d.get("last"), d.get("count") or 0, d.get("note") or "")


@dataclass(slots=True)
class Denied:
    """The broker refuses groupscope something about the group (docs/security.md)."""

    since: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"since": self.since, "error": self.error}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Denied:
        return cls(d.get("since"), d.get("error"))


@dataclass(slots=True)
class GroupDocument:
    """One group as of `as_of` (epoch ms). A classic group has `generation` and `leader`; a
    KIP-848 consumer group or KIP-932 share group (`modern`) has `group_epoch` and
    `assignment_epoch`, and its `generations` are its epochs."""

    group: str
    type: str = "classic"  # classic, consumer or share
    state: str | None = None
    protocol_type: str | None = None
    protocol: str | None = None  # classic: the chosen assignor (protocol name); modern: the assignor
    generation: int | None = None
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    leader: str | None = None
    coordinator_partition: int | None = None  # the __consumer_offsets partition of its coordinator
    # the coordinator broker, as the Admin API's last describe of the group named it (None: no
    # describe named one); written when known
    coordinator: CoordinatorDoc | None = None
    simple: bool = False  # a group that only commits offsets (no members ever joined)
    members: list[MemberDoc] = field(default_factory=list)
    offsets: list[OffsetDoc] = field(default_factory=list)
    timeline: list[TimelineSpan] = field(default_factory=list)
    generations: list[GenerationDoc] = field(default_factory=list)
    lag: LagDoc = field(default_factory=LagDoc)
    sources: list[str] = field(default_factory=list)  # which sources spoke about the group
    inferred: list[str] = field(default_factory=list)  # notes on what could not be seen
    conflicts: list[Conflict] = field(default_factory=list)
    denied: dict[str, Denied] = field(default_factory=dict)  # what -> since when and why
    as_of: int | None = None
    topology: TopologyDoc | None = None  # a streams group's (KIP-1071); written when set
    # made from the Admin API's first answers while the pipeline starts (collectors/pipeline/
    # provisional_heads.py): state, members and committed offsets, no history; the pipeline's own
    # document always replaces it
    provisional: bool = False

    @property
    def modern(self) -> bool:
        """A group on the KIP-848 protocol: epochs, no generations (consumer and share groups)."""
        return self.type in MODERN_TYPES

    @property
    def rebalancing(self) -> bool:
        return self.state in REBALANCING_STATES

    def member_by_id(self) -> dict[str, MemberDoc]:
        return {m.member_id: m for m in self.members}

    def owners(self) -> dict[TopicPartition, str]:
        """Which member owns each partition now."""
        return {tp: m.member_id for m in self.members for tp in m.assignment}

    def topics(self) -> list[str]:
        """Every topic the group commits to, owns or subscribes to."""
        names = {o.topic for o in self.offsets}
        names.update(p.topic for p in self.lag.partitions)
        for m in self.members:
            names.update(t for t, _ in m.assignment)
            names.update(m.subscription)
        return sorted(names)

    def last_change(self) -> int | None:
        """When the group last changed state."""
        return self.timeline[-1].start if self.timeline else None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "group": self.group,
            "type": self.type,
            "state": self.state,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol,
            "generation": self.generation,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "leader": self.leader,
            "coordinator_partition": self.coordinator_partition,
            "simple": self.simple,
            "members": [m.to_json() for m in self.members],
            "offsets": [o.to_json() for o in self.offsets],
            "timeline": [t.to_json() for t in self.timeline],
            "generations": [g.to_json() for g in self.generations],
            "lag": self.lag.to_json(),
            "sources": list(self.sources),
            "inferred": list(self.inferred),
            "conflicts": [c.to_json() for c in self.conflicts],
        }
        if self.denied:
            d["denied"] = {k: v.to_json() for k, v in sorted(self.denied.items())}
        d["as_of"] = self.as_of
        if self.topology is not None:
            d["topology"] = self.topology.to_json()
        if self.coordinator is not None:
            d["coordinator"] = self.coordinator.to_json()
        if self.provisional:
            d["provisional"] = True
        return d

    @classmethod
    def from_json(cls, d: Any) -> GroupDocument:
        """A document as stored or printed (missing fields: their defaults). DocumentError when `d`
        is not a group document or one of its parts has the wrong shape."""
        if not isinstance(d, Mapping) or not isinstance(d.get("group"), str):
            raise DocumentError(f"not a group document: {str(d)[:80]!r}")
        try:
            return cls(
                group=d["group"],
                type=d.get("type") or "classic",
                state=d.get("state"),
                protocol_type=d.get("protocol_type"),
                protocol=d.get("protocol"),
                generation=d.get("generation"),
                group_epoch=d.get("group_epoch"),
                assignment_epoch=d.get("assignment_epoch"),
                leader=d.get("leader"),
                coordinator_partition=d.get("coordinator_partition"),
                simple=bool(d.get("simple")),
                members=[MemberDoc.from_json(m) for m in d.get("members") or ()],
                offsets=[OffsetDoc.from_json(o) for o in d.get("offsets") or ()],
                timeline=[TimelineSpan.from_json(t) for t in d.get("timeline") or ()],
                generations=[GenerationDoc.from_json(g) for g in d.get("generations") or ()],
                lag=LagDoc.from_json(d.get("lag")),
                sources=list(d.get("sources") or ()),
                inferred=list(d.get("inferred") or ()),
                conflicts=[Conflict.from_json(c) for c in d.get("conflicts") or ()],
                denied={k: Denied.from_json(v) for k, v in (d.get("denied") or {}).items()},
                as_of=d.get("as_of"),
                topology=TopologyDoc.from_json(d.get("topology")),
                coordinator=CoordinatorDoc.from_json(d.get("coordinator")),
                provisional=bool(d.get("provisional")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DocumentError(f"group {d['group']!r}: malformed document ({exc!r})") from exc
