"""Evidence: what the reconstruction learns from, one dataclass per kind, each with `.ts` (epoch ms) and
`.group` (None for log-end offsets, which belong to a topic partition, not a group).

Four sources, any subset of which may be missing:
1. `__consumer_offsets` records (`from_offsets_record`, typed records from collectors.codec);
2. broker group-coordinator log lines (`parse_broker_log_line`);
3. client heartbeat events (`from_heartbeat_json`, schema in docs/heartbeat-events.md);
4. Admin API snapshots (`from_describe_json`: group descriptions, committed offsets, and the
   broker's refusals to give either) and log-end offsets (`from_end_offset_json`).
Malformed input raises `EvidenceError` (a ValueError), never anything else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from coordinator_model.broker_log import BrokerLogEvent, parse_broker_log_line
from coordinator_model.errors import EvidenceError

__all__ = [
    "SHARE_START_OFFSETS",
    "AdminDenied",
    "BrokerLogEvent",
    "CommittedSnapshot",
    "ConsumerGroupEpoch",
    "ConsumerGroupTopics",
    "ConsumerMemberAssignment",
    "ConsumerMemberSubscription",
    "ConsumerTargetAssignment",
    "ConsumerTargetMember",
    "DescribeSnapshot",
    "DescribedMember",
    "EndOffset",
    "EndOffsets",
    "Evidence",
    "EvidenceError",
    "GroupMetadataSnapshot",
    "HeartbeatEvent",
    "MemberSnapshot",
    "OffsetCommit",
    "StreamsDescribe",
    "StreamsMemberTasks",
    "StreamsTargetTasks",
    "StreamsTopology",
    "Subtopology",
    "UnknownRecord",
    "from_describe_json",
    "from_end_offset_json",
    "from_heartbeat_json",
    "from_offsets_record",
    "parse_broker_log_line",
    "poll_interval",
    "session_timeout",
]

TP = tuple[str, int]

# Kafka's `Uuid.ZERO_UUID` as `Uuid.toString()` prints it: a record's topic id field when it names no
# topic (its default). Said once here; the codec and the pipeline's columns import it.
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


# ---------------------------------------------------------------------------------------------
# 1. __consumer_offsets records
@dataclass(slots=True, frozen=True)
class OffsetCommit:
    ts: int
    group: str
    topic: str
    partition: int
    offset: int | None  # None: tombstone (the committed offset was deleted)
    commit_timestamp: int = -1
    leader_epoch: int = -1
    metadata: str = ""
    expire_timestamp: int = -1
    log_offset: int = -1  # position of the record in __consumer_offsets (newer record wins)
    topic_id: str | None = None  # OffsetCommitValue v4's tagged topicId (Kafka 4.1+)
    source = "offsets"


@dataclass(slots=True, frozen=True)
class MemberSnapshot:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    subscription: tuple[str, ...]
    assignment: tuple[TP, ...]
    owned_partitions: tuple[TP, ...] = ()


@dataclass(slots=True, frozen=True)
class GroupMetadataSnapshot:
    """A classic group's GroupMetadata record (written at the leader's SyncGroup, on Empty, at creation);
    `deleted` for a tombstone."""

    ts: int
    group: str
    deleted: bool
    protocol_type: str = ""
    generation: int = 0
    protocol: str | None = None
    leader: str | None = None
    state_timestamp: int = -1  # currentStateTimestamp: when the group entered its state
    members: tuple[MemberSnapshot, ...] = ()
    log_offset: int = -1
    source = "offsets"


# The modern groups' records (KIP-848 consumer, KIP-932 share, KIP-1071 streams) share their shapes
# where Kafka's ConsumerGroup, ShareGroup and StreamsGroup records agree; `kind` says whose one is.
CONSUMER, SHARE, STREAMS = "consumer", "share", "streams"
MODERN_RECORD_PREFIXES = (("ConsumerGroup", CONSUMER), ("ShareGroup", SHARE), ("StreamsGroup", STREAMS))


@dataclass(slots=True, frozen=True)
class ConsumerGroupEpoch:
    ts: int
    group: str
    epoch: int | None  # None: tombstone (group deleted)
    kind: str = CONSUMER
    source = "offsets"


@dataclass(slots=True, frozen=True)
class ConsumerGroupTopics:
    """ConsumerGroupPartitionMetadata: topic ids and names the group subscribes to."""

    ts: int
    group: str
    topics: tuple[tuple[str, str, int], ...]  # (topic id, name, partitions); () for a tombstone
    kind: str = CONSUMER
    source = "offsets"


@dataclass(slots=True, frozen=True)
class ConsumerMemberSubscription:
    """ConsumerGroupMemberMetadata; `deleted` when the member left."""

    ts: int
    group: str
    member_id: str
    deleted: bool
    instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topics: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    process_id: str = ""  # a streams member's: its Kafka Streams process (one per instance)
    kind: str = CONSUMER
    source = "offsets"


@dataclass(slots=True, frozen=True)
class ConsumerTargetAssignment:
    """ConsumerGroupTargetAssignmentMetadata (the assignment epoch)."""

    ts: int
    group: str
    epoch: int | None
    kind: str = CONSUMER
    source = "offsets"


@dataclass(slots=True, frozen=True)
class ConsumerTargetMember:
    ts: int
    group: str
    member_id: str
    partitions: tuple[tuple[str, int], ...] | None  # (topic id, partition); None: tombstone
    kind: str = CONSUMER
    source = "offsets"


@dataclass(slots=True, frozen=True)
class ConsumerMemberAssignment:
    """ConsumerGroupCurrentMemberAssignment: a member's epoch, state and partitions."""

    ts: int
    group: str
    member_id: str
    deleted: bool
    member_epoch: int = 0
    previous_member_epoch: int = 0
    # 0 stable, 1 unrevoked partitions, 2 unreleased partitions, 127 unknown; a streams member's is
    # numbered from 1 (membership.STREAMS_MEMBER_STATES)
    state: int = 0
    assigned: tuple[tuple[str, int], ...] = ()  # (topic id, partition)
    pending_revocation: tuple[tuple[str, int], ...] = ()
    tasks: tuple[Tasks, Tasks, Tasks] | None = None  # a streams member's active, standby, warm-up tasks
    kind: str = CONSUMER
    source = "offsets"


@dataclass(slots=True, frozen=True)
class StreamsTargetTasks:
    """StreamsGroupTargetAssignmentMember: the tasks the coordinator's assignor gave a streams member
    (active, standby, warm-up); None: tombstone."""

    ts: int
    group: str
    member_id: str
    tasks: tuple[Tasks, Tasks, Tasks] | None
    kind = STREAMS  # a streams group's own record (GroupEngine.modern)
    source = "offsets"


@dataclass(slots=True, frozen=True)
class StreamsTopology:
    """StreamsGroupTopology: the topology the group's members brought (its epoch and subtopologies);
    epoch None: tombstone."""

    ts: int
    group: str
    epoch: int | None
    subtopologies: tuple[Subtopology, ...] | None
    kind = STREAMS  # a streams group's own record (GroupEngine.modern)
    source = "offsets"


@dataclass(slots=True, frozen=True)
class UnknownRecord:
    ts: int
    group: str | None
    record_type: int
    source = "offsets"


# ---------------------------------------------------------------------------------------------
# 3. client heartbeat events
HEARTBEAT_EVENTS = frozenset(
    {"heartbeat", "join", "sync", "assigned", "revoked", "lost", "leave", "poll_stall"}
)


@dataclass(slots=True, frozen=True)
class HeartbeatEvent:
    ts: int
    group: str
    member_id: str | None
    event: str
    group_instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None
    generation: int | None = None
    state: str | None = None
    partitions: tuple[TP, ...] = ()
    session_timeout_ms: int | None = None
    max_poll_interval_ms: int | None = None
    group_protocol: str | None = None  # "classic" | "consumer" (KIP-848), when the probe knows it
    source = "heartbeats"


# ---------------------------------------------------------------------------------------------
# 4. Admin API
@dataclass(slots=True, frozen=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TP, ...]
    target_assignment: tuple[TP, ...] | None = None
    member_epoch: int | None = None
    subscription: tuple[str, ...] = ()


Tasks = tuple[tuple[str, tuple[int, ...]], ...]  # ((subtopology id, (partition, ...)), ...)


@dataclass(slots=True, frozen=True)
class StreamsMemberTasks:
    """A KIP-1071 streams group member's tasks as StreamsGroupDescribe gives them: current and
    target, active, standby and warm-up."""

    member_id: str
    process_id: str = ""
    topology_epoch: int | None = None
    active: Tasks = ()
    standby: Tasks = ()
    warmup: Tasks = ()
    target_active: Tasks = ()
    target_standby: Tasks = ()
    target_warmup: Tasks = ()


@dataclass(slots=True, frozen=True)
class Subtopology:
    id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    changelog_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class StreamsDescribe:
    """What StreamsGroupDescribe adds for a streams group: its topology (None until a member brought
    one; subtopologies None while it is not ready) and its members' tasks."""

    topology_epoch: int | None
    subtopologies: tuple[Subtopology, ...] | None
    members: tuple[StreamsMemberTasks, ...]


@dataclass(slots=True, frozen=True)
class DescribeSnapshot:
    """DescribeConsumerGroups (plus, for KIP-848 groups, the broker's own ConsumerGroupDescribe), or a
    KIP-932 share group's ShareGroupDescribe (type "share": the broker block is all there is, its
    members without target assignment)."""

    ts: int
    group: str
    type: str  # classic | consumer | share
    state: str
    assignor: str
    members: tuple[DescribedMember, ...]
    simple: bool = False
    coordinator_id: int | None = None
    # the coordinator's address as the describe's node gave it (kafka-consumer-groups.sh's
    # COORDINATOR (ID) column: "host:port  (id)"); None where the answer named no node
    coordinator_host: str | None = None
    coordinator_port: int | None = None
    broker_state: str | None = None  # Consumer/ShareGroupDescribe state, group and assignment epochs
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    topic_ids: tuple[tuple[str, str], ...] = ()  # (topic id, name) the broker's describe resolved
    streams: StreamsDescribe | None = None  # a streams group's topology and tasks (type "streams")
    source = "describe"


@dataclass(slots=True, frozen=True)
class CommittedSnapshot:
    """ListConsumerGroupOffsets: every committed offset of the group at `ts`. Or, `source`
    SHARE_START_OFFSETS, a KIP-932 share group's progress: its share-partition start offsets
    (DescribeShareGroupOffsets), the offset below which every record is acknowledged (or archived):
    the same evidence to the offsets store, so the lag is the log-end offset minus it; the source
    tells the document where the share group's lag is from."""

    ts: int
    group: str
    offsets: tuple[tuple[str, int, int], ...]  # (topic, partition, offset)
    source: str = "describe"


SHARE_START_OFFSETS = "share_start_offsets"  # a "committed" line's source: see CommittedSnapshot


@dataclass(slots=True, frozen=True)
class AdminDenied:
    """The broker refused groupscope's principal an Admin answer about the group (an ACL withholds
    Describe on it): `what` is "describe" (members, assignment, state), "offsets" (OffsetFetch) or
    "end_offsets" (ListOffsets of some of its topics, whose Describe an ACL withholds). An empty
    `error`: the refusal is over (the poller got the answer again)."""

    ts: int
    group: str
    what: str
    error: str
    source = "describe"


@dataclass(slots=True, frozen=True)
class EndOffset:
    ts: int
    topic: str
    partition: int
    end_offset: int
    group: None = None
    source = "end_offsets"


@dataclass(slots=True, frozen=True)
class EndOffsets:
    """The log-end offsets of one Admin poller line, all at `ts`: (topic, partition, end offset) in
    the line's order. Exactly an EndOffset per row applied in turn; one object, because a catch-up
    reads a line for each of 10,000 groups of 100 partitions, and a million EndOffsets (each built
    and applied on its own) were a fifth of its model stage."""

    ts: int
    rows: tuple[tuple[str, int, int], ...]
    group: None = None
    source = "end_offsets"


Evidence = (
    OffsetCommit
    | GroupMetadataSnapshot
    | ConsumerGroupEpoch
    | ConsumerGroupTopics
    | ConsumerMemberSubscription
    | ConsumerTargetAssignment
    | ConsumerTargetMember
    | ConsumerMemberAssignment
    | StreamsTargetTasks
    | StreamsTopology
    | UnknownRecord
    | BrokerLogEvent
    | HeartbeatEvent
    | DescribeSnapshot
    | CommittedSnapshot
    | AdminDenied
    | EndOffset
    | EndOffsets
)


# ---------------------------------------------------------------------------------------------
# parsers
# Every integer read from JSON ends up in a fixed-width column somewhere (the first stage's Arrow rows,
# Spark's longs, the partition ints): Python's ints have no bound, so a value past these is refused
# here, as malformed evidence, not found later as an overflow that fails a whole batch.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Broker limits of a member's timeouts (both int configs: group.max.session.timeout.ms defaults to
# 1,800,000 ms, max.poll.interval.ms to at most Integer.MAX_VALUE): past them, no client sent it.
TIMEOUT_MAX_MS = INT32_MAX

# What the model takes from a client's word on its timeouts (`session_timeout`, `poll_interval`).
# Anyone who may write the heartbeat topic can put any number in an event (docs/security.md, "Trust
# model for the probe's heartbeat events"); the reader refuses what no client can have sent (not an
# integer, negative, past an int), and the model holds the rest to what a broker lets a member use:
# - session timeouts within Kafka's default group.min.session.timeout.ms .. group.max.session.timeout.ms
#   (6 s .. 30 min; a broker configured beyond them is rare, and the coordinator's own records carry
#   the member's exact value). A session timeout is how long a silent member is kept: a forged
#   2**31 - 1 ms (24 days) kept a member, and its rebalance, open for weeks; at most 30 min now;
# - max.poll.interval.ms (a classic member's rebalance timeout) at most 1 hour. Kafka takes any int,
#   but the model only uses it to place a poll stall's leave and to read a rebalance's cause (a
#   member silent for about this long stopped polling): past an hour, a stall that old says nothing
#   about the rebalance at hand, and a forged interval of days would tie any later rebalance to it.
SESSION_TIMEOUT_MIN_MS = 6_000
SESSION_TIMEOUT_MAX_MS = 1_800_000
POLL_INTERVAL_MAX_MS = 3_600_000


def session_timeout(v: int | None) -> int | None:
    """A client's session.timeout.ms as the model uses it: None when unknown (absent or 0), else
    within the broker's limits."""
    if not v:
        return None
    return min(max(v, SESSION_TIMEOUT_MIN_MS), SESSION_TIMEOUT_MAX_MS)


def poll_interval(v: int | None) -> int | None:
    """A client's max.poll.interval.ms as the model uses it: None when unknown (absent or 0), else at
    most POLL_INTERVAL_MAX_MS."""
    if not v:
        return None
    return min(v, POLL_INTERVAL_MAX_MS)


def _shown(v: int) -> str:
    """An int for an error message: its digits, unless it is too long to print (or to read)."""
    return str(v) if v.bit_length() <= 128 else f"an integer of {v.bit_length()} bits"


def _in_range(v: int, what: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    if not lo <= v <= hi:
        raise EvidenceError(f"{what} must be between {lo} and {hi}, got {_shown(v)}")
    return v


def _as_int(v: Any, what: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    """A JSON number (an int, or a float, truncated as int() does) as an int in [lo, hi]. Not a bool
    (JSON's true is no number), not an infinite or NaN float (int() of one raises OverflowError or
    ValueError, not EvidenceError)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise EvidenceError(f"{what} must be a number, got {v!r}"[:300])
    if isinstance(v, float) and not math.isfinite(v):
        raise EvidenceError(f"{what} must be a finite number, got {v!r}")
    return _in_range(int(v), what, lo, hi)


def _lenient_int(v: Any, what: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    """int(v) as the list readers have always taken it (a numeric string too), but not a bool, and
    within [lo, hi]."""
    if isinstance(v, bool):
        raise EvidenceError(f"{what} must be a number, got {v!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise EvidenceError(f"{what} must be a finite number, got {v!r}")
    try:
        n = int(v)
    except (TypeError, ValueError) as exc:  # ValueError also for a numeric string past 4300 digits
        raise EvidenceError(f"{what} must be a number, got {v!r}"[:300]) from exc
    return _in_range(n, what, lo, hi)


def _tps(items: Any, what: str) -> tuple[TP, ...]:
    if items is None:
        return ()
    try:
        pairs = [(t, p) for t, p in items]
    except (TypeError, ValueError) as exc:
        raise EvidenceError(f"{what}: expected [[topic, partition], ...], got {items!r}"[:300]) from exc
    # a partition is a Kafka int32
    return tuple((str(t), _lenient_int(p, f"{what}: partition", INT32_MIN, INT32_MAX)) for t, p in pairs)


def _int(obj: dict, key: str, required: bool = True, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int | None:
    v = obj.get(key)
    if v is None:
        if required:
            raise EvidenceError(f"missing {key!r} in {obj!r}"[:300])
        return None
    return _as_int(v, repr(key), lo, hi)


def _timeout(obj: dict, key: str) -> int | None:
    """A member's timeout in a heartbeat event: absent or null, or an integer of milliseconds in
    [0, TIMEOUT_MAX_MS]. Not a float (no client sends a fraction of a millisecond; 1e300 is no
    timeout), not a bool, not negative, not past a Java int: any of those is a forged or broken
    event, refused here as malformed evidence (a dead letter), never guessed at."""
    v = obj.get(key)
    if v is None:
        return None
    if type(v) is not int:
        raise EvidenceError(f"{key!r} must be an integer number of milliseconds, got {v!r}"[:300])
    return _in_range(v, repr(key), 0, TIMEOUT_MAX_MS)


def _str(obj: dict, key: str, required: bool = True) -> str | None:
    v = obj.get(key)
    if v is None:
        if required:
            raise EvidenceError(f"missing {key!r} in {obj!r}"[:300])
        return None
    if not isinstance(v, str):
        raise EvidenceError(f"{key!r} must be a string, got {v!r}")
    return v


def _decoded_tps(tps: Any) -> tuple[TP, ...]:
    """Consumer-protocol TopicPartition lists -> sorted ((topic, partition), ...)."""
    return tuple(sorted((tp.topic, p) for tp in (tps or []) for p in tp.partitions))


def _id_tps(items: Any) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((tp.topic_id, p) for tp in (items or []) for p in tp.partitions))


def from_offsets_record(rec: Any) -> Evidence:
    """A decoded `collectors.codec.records.OffsetsRecord` -> evidence; ts is the record's timestamp."""
    try:
        key, value, ts = rec.key, rec.value, int(rec.timestamp)
        kind = type(key).__name__
        log_offset = int(getattr(rec, "offset", -1))
    except (AttributeError, TypeError, ValueError) as exc:
        raise EvidenceError(f"not an OffsetsRecord: {rec!r}"[:300]) from exc
    group = key.group
    if kind == "OffsetCommitKey":
        if value is None:
            return OffsetCommit(ts, group, key.topic, key.partition, None, log_offset=log_offset)
        return OffsetCommit(
            ts,
            group,
            key.topic,
            key.partition,
            value.offset,
            commit_timestamp=value.commit_timestamp,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata or "",
            expire_timestamp=value.expire_timestamp,
            topic_id=_topic_id(getattr(value, "topic_id", None)),
            log_offset=log_offset,
        )
    if kind == "GroupMetadataKey":
        if value is None:
            return GroupMetadataSnapshot(ts, group, True, log_offset=log_offset)
        members = []
        for m in value.members:
            sub, asg = m.subscription_decoded, m.assignment_decoded
            members.append(
                MemberSnapshot(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    session_timeout_ms=m.session_timeout,
                    rebalance_timeout_ms=m.rebalance_timeout
                    if m.rebalance_timeout >= 0
                    else m.session_timeout,
                    subscription=tuple(sub.topics) if sub is not None else (),
                    assignment=_decoded_tps(asg.assigned_partitions) if asg is not None else (),
                    owned_partitions=_decoded_tps(sub.owned_partitions) if sub is not None else (),
                )
            )
        return GroupMetadataSnapshot(
            ts,
            group,
            False,
            protocol_type=value.protocol_type or "",
            generation=value.generation,
            protocol=value.protocol,
            leader=value.leader,
            state_timestamp=value.current_state_timestamp,
            members=tuple(members),
            log_offset=log_offset,
        )
    for prefix, group_kind in MODERN_RECORD_PREFIXES:
        if kind.startswith(prefix):
            ev = _modern_record(kind[len(prefix) :], key, value, ts, group, group_kind)
            if ev is not None:
                return ev
    return UnknownRecord(ts, group, int(getattr(rec, "record_type", -1)))


def _modern_record(record: str, key: Any, value: Any, ts: int, group: str, kind: str) -> Evidence | None:
    """A KIP-848 consumer group's record, a KIP-932 share group's or a KIP-1071 streams group's
    (`kind`): the same shapes where Kafka's ConsumerGroup, ShareGroup and StreamsGroup records agree
    (epochs, members, the target assignment's epoch, member epochs), read into the same evidence;
    `record` is the record key's name without its group-kind prefix. A share group's member has no
    instance id, rebalance timeout, regex or server assignor, and nothing pending revocation; its
    topic names come from the share-partition state's metadata (ShareGroupStatePartitionMetadata).
    A streams group's assignments are tasks, and its topology is a record of its own."""
    if record == "MetadataKey":
        return ConsumerGroupEpoch(ts, group, None if value is None else value.epoch, kind=kind)
    if record in ("PartitionMetadataKey", "StatePartitionMetadataKey"):
        if value is None:
            topics: tuple[tuple[str, str, int], ...] = ()
        elif kind == SHARE:  # the topics whose share-partition state is (being) initialized
            both = [*value.initializing_topics, *value.initialized_topics]
            topics = tuple((t.topic_id, t.topic_name, len(t.partitions)) for t in both)
        else:
            topics = tuple((t.topic_id, t.topic_name, t.num_partitions) for t in value.topics)
        return ConsumerGroupTopics(ts, group, topics, kind=kind)
    if record == "MemberMetadataKey":
        if value is None:
            return ConsumerMemberSubscription(ts, group, key.member_id, True, kind=kind)
        rebalance_timeout = getattr(value, "rebalance_timeout_ms", -1)
        return ConsumerMemberSubscription(
            ts,
            group,
            key.member_id,
            False,
            instance_id=getattr(value, "instance_id", None),
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topics=tuple(getattr(value, "subscribed_topic_names", None) or ()),
            subscribed_regex=getattr(value, "subscribed_topic_regex", None) or None,
            rebalance_timeout_ms=-1 if rebalance_timeout is None else rebalance_timeout,
            server_assignor=getattr(value, "server_assignor", None),
            process_id=getattr(value, "process_id", "") or "",
            kind=kind,
        )
    if record == "TargetAssignmentMetadataKey":
        return ConsumerTargetAssignment(
            ts, group, None if value is None else value.assignment_epoch, kind=kind
        )
    if record == "TargetAssignmentMemberKey":
        if kind == STREAMS:
            target = None if value is None else _record_tasks(value)
            return StreamsTargetTasks(ts, group, key.member_id, target)
        parts = None if value is None else _id_tps(value.topic_partitions)
        return ConsumerTargetMember(ts, group, key.member_id, parts, kind=kind)
    if record == "CurrentMemberAssignmentKey":
        if value is None:
            return ConsumerMemberAssignment(ts, group, key.member_id, True, kind=kind)
        return ConsumerMemberAssignment(
            ts,
            group,
            key.member_id,
            False,
            member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=value.state,
            assigned=() if kind == STREAMS else _id_tps(value.assigned_partitions),
            pending_revocation=()
            if kind == STREAMS
            else _id_tps(getattr(value, "partitions_pending_revocation", ())),
            tasks=_record_tasks(value) if kind == STREAMS else None,
            kind=kind,
        )
    if record == "TopologyKey" and kind == STREAMS:
        if value is None:
            return StreamsTopology(ts, group, None, None)
        return StreamsTopology(
            ts, group, value.epoch, tuple(_record_subtopology(st) for st in value.subtopologies)
        )
    return None


def _record_tasks(value: Any) -> tuple[Tasks, Tasks, Tasks]:
    """A streams record's active, standby and warm-up tasks (TaskIds lists)."""
    return (
        _task_ids(value.active_tasks),
        _task_ids(value.standby_tasks),
        _task_ids(value.warmup_tasks),
    )


def _task_ids(items: Any) -> Tasks:
    return tuple(sorted((t.subtopology_id, tuple(sorted(t.partitions))) for t in items or ()))


def _record_subtopology(st: Any) -> Subtopology:
    """StreamsGroupTopologyValue's Subtopology in the terms StreamsGroupDescribe uses."""
    return Subtopology(
        id=st.subtopology_id,
        source_topics=tuple(sorted(st.source_topics or ())),
        repartition_sink_topics=tuple(sorted(st.repartition_sink_topics or ())),
        changelog_topics=tuple(sorted(t.name for t in st.state_changelog_topics or ())),
        repartition_source_topics=tuple(sorted(t.name for t in st.repartition_source_topics or ())),
    )


def from_heartbeat_json(obj: dict) -> HeartbeatEvent:
    if not isinstance(obj, dict):
        raise EvidenceError(f"heartbeat event must be a JSON object, got {type(obj).__name__}")
    event = _str(obj, "event")
    if event not in HEARTBEAT_EVENTS:
        raise EvidenceError(f"unknown heartbeat event {event!r}")
    return HeartbeatEvent(
        ts=_int(obj, "ts"),
        group=_str(obj, "group"),
        member_id=_str(obj, "member_id", False),  # null: a client outside group membership (assign())
        event=event,
        group_instance_id=_str(obj, "group_instance_id", False),
        client_id=_str(obj, "client_id", False),
        host=_str(obj, "host", False),
        generation=_int(obj, "generation", False),
        state=_str(obj, "state", False),
        partitions=_tps(obj.get("partitions"), "partitions"),
        session_timeout_ms=_timeout(obj, "session_timeout_ms"),
        max_poll_interval_ms=_timeout(obj, "max_poll_interval_ms"),
        group_protocol=_str(obj, "group_protocol", False),
    )


def _described_member(m: dict, broker_members: dict[str, dict]) -> DescribedMember:
    if not isinstance(m, dict):
        raise EvidenceError(f"describe member must be an object, got {m!r}")
    mid = _str(m, "member_id")
    b = broker_members.get(mid, {})
    target = m.get("target_assignment", b.get("target_assignment"))
    return DescribedMember(
        member_id=mid,
        group_instance_id=_str(m, "group_instance_id", False),
        client_id=_str(m, "client_id", False) or "",
        host=_str(m, "host", False) or "",
        assignment=_tps(m.get("assignment"), "assignment"),
        target_assignment=None if target is None else _tps(target, "target_assignment"),
        member_epoch=_int(b, "member_epoch", False) if b else None,
        subscription=tuple(b.get("subscribed") or ()),
    )


def _topic_id(value: object) -> str | None:
    return value if isinstance(value, str) and value and value != ZERO_UUID else None


def _topic_ids(broker: dict | None) -> tuple[tuple[str, str], ...]:
    ids = (broker or {}).get("topic_ids")
    if not isinstance(ids, dict):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in ids.items() if isinstance(v, str)))


def from_describe_json(obj: dict) -> DescribeSnapshot | CommittedSnapshot | AdminDenied:
    """One describe.jsonl line: a group description, {'ts', 'group', 'committed': [[t, p, o], ...]}
    (with 'source': 'share_start_offsets' for a share group's start offsets),
    or {'ts', 'group', 'denied': 'describe' | 'offsets' | 'end_offsets', 'error': why}."""
    if not isinstance(obj, dict):
        raise EvidenceError(f"describe line must be a JSON object, got {type(obj).__name__}")
    ts, group = _int(obj, "ts"), _str(obj, "group")
    if "denied" in obj:
        what = obj["denied"]
        if what not in ("describe", "offsets", "end_offsets"):
            raise EvidenceError(f"denied: expected 'describe', 'offsets' or 'end_offsets' in {obj!r}"[:300])
        return AdminDenied(ts, group, what, str(obj.get("error") or ""))
    if "committed" in obj:
        try:
            triples = [(t, p, o) for t, p, o in obj["committed"] or []]
        except (TypeError, ValueError) as exc:
            raise EvidenceError(
                f"committed: expected [[topic, partition, offset], ...] in {obj!r}"[:300]
            ) from exc
        offsets = tuple(
            (
                str(t),
                _lenient_int(p, "committed: partition", INT32_MIN, INT32_MAX),
                _lenient_int(o, "committed: offset"),
            )
            for t, p, o in triples
        )
        if obj.get("source") == SHARE_START_OFFSETS:
            return CommittedSnapshot(ts, group, offsets, SHARE_START_OFFSETS)
        return CommittedSnapshot(ts, group, offsets)
    broker = obj.get("broker") if isinstance(obj.get("broker"), dict) else None
    broker_members = {
        bm.get("member_id"): bm for bm in (broker or {}).get("members") or [] if isinstance(bm, dict)
    }
    members = obj.get("members")
    if not isinstance(members, list):
        raise EvidenceError(f"describe line without a members list: {obj!r}"[:300])
    coordinator = obj.get("coordinator") if isinstance(obj.get("coordinator"), dict) else {}
    return DescribeSnapshot(
        ts=ts,
        group=group,
        type=_str(obj, "type", False) or "classic",
        state=_str(obj, "state", False) or "Unknown",
        assignor=_str(obj, "assignor", False) or "",
        members=tuple(_described_member(m, broker_members) for m in members),
        simple=bool(obj.get("simple", False)),
        coordinator_id=_coordinator_id(coordinator),
        coordinator_host=_coordinator_host(coordinator),
        coordinator_port=_coordinator_port(coordinator),
        broker_state=broker.get("state") if broker else None,
        group_epoch=_int(broker, "group_epoch", False) if broker else None,
        assignment_epoch=_int(broker, "assignment_epoch", False) if broker else None,
        topic_ids=_topic_ids(broker),
        streams=_streams(broker) if obj.get("type") == "streams" and broker else None,
    )


def _task_list(v: Any, what: str) -> Tasks:
    if v is None:
        return ()
    if not isinstance(v, list):
        raise EvidenceError(f"{what}: expected [[subtopology, [partition, ...]], ...], got {v!r}"[:300])
    out = []
    for item in v:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], list)):
            raise EvidenceError(f"{what}: expected [subtopology, [partition, ...]], got {item!r}"[:300])
        parts = tuple(sorted(_lenient_int(p, f"{what}: partition", INT32_MIN, INT32_MAX) for p in item[1]))
        out.append((str(item[0]), parts))
    return tuple(sorted(out))


def _names(v: Any) -> tuple[str, ...]:
    return tuple(sorted(str(x) for x in v)) if isinstance(v, list) else ()


def _streams(broker: dict) -> StreamsDescribe:
    """The streams part of a streams group's "broker" block (collectors.kafka_protocol
    `streams_broker_block`)."""
    topology = broker.get("topology") if isinstance(broker.get("topology"), dict) else None
    subs = (topology or {}).get("subtopologies")
    members = []
    for m in broker.get("members") or []:
        if not isinstance(m, dict):
            raise EvidenceError(f"streams member must be an object, got {m!r}"[:300])
        members.append(
            StreamsMemberTasks(
                member_id=_str(m, "member_id"),
                process_id=_str(m, "process_id", False) or "",
                topology_epoch=_int(m, "topology_epoch", False, INT32_MIN, INT32_MAX),
                active=_task_list(m.get("active"), "active tasks"),
                standby=_task_list(m.get("standby"), "standby tasks"),
                warmup=_task_list(m.get("warmup"), "warm-up tasks"),
                target_active=_task_list(m.get("target_active"), "target active tasks"),
                target_standby=_task_list(m.get("target_standby"), "target standby tasks"),
                target_warmup=_task_list(m.get("target_warmup"), "target warm-up tasks"),
            )
        )
    return StreamsDescribe(
        topology_epoch=_int(topology, "epoch", False, INT32_MIN, INT32_MAX) if topology else None,
        subtopologies=None
        if not isinstance(subs, list)
        else tuple(
            Subtopology(
                id=str(st.get("id")),
                source_topics=_names(st.get("source_topics")),
                repartition_sink_topics=_names(st.get("repartition_sink_topics")),
                changelog_topics=_names(st.get("changelog_topics")),
                repartition_source_topics=_names(st.get("repartition_source_topics")),
            )
            for st in subs
            if isinstance(st, dict)
        ),
        members=tuple(members),
    )


def _coordinator_id(coordinator: dict) -> int | None:
    """The describing broker's id, as lenient as ever (anything but an int is no id), but an int past
    a broker id (an int32) is malformed, and a bool is no int."""
    cid = coordinator.get("id")
    if type(cid) is not int:
        return None
    return _in_range(cid, "'coordinator.id'", INT32_MIN, INT32_MAX)


def _coordinator_host(coordinator: dict) -> str | None:
    """The describing broker's host: a non-empty string of at most a DNS name's 253 characters (a
    longer one is no host a broker advertises: malformed), anything else none."""
    host = coordinator.get("host")
    if not isinstance(host, str) or not host:
        return None
    if len(host) > 253:
        raise EvidenceError(f"'coordinator.host' longer than 253 characters: {host[:80]!r}...")
    return host


def _coordinator_port(coordinator: dict) -> int | None:
    """The describing broker's port: an int in 0..65535 (past it: malformed), anything else none."""
    port = coordinator.get("port")
    if type(port) is not int:
        return None
    return _in_range(port, "'coordinator.port'", 0, 65535)


def from_end_offset_json(obj: dict) -> EndOffset:
    if not isinstance(obj, dict):
        raise EvidenceError(f"end offset line must be a JSON object, got {type(obj).__name__}")
    return EndOffset(
        _int(obj, "ts"),
        _str(obj, "topic"),
        _int(obj, "partition", True, INT32_MIN, INT32_MAX),
        _int(obj, "end_offset"),
    )


def from_end_offsets_json(obj: dict) -> EndOffsets | None:
    """The Admin poller's line of a group's log-end offsets, `end_offsets`: [[topic, partition,
    offset], ...] at `ts`; None when it lists none. Each item is read as `from_end_offset_json` reads
    a line of its own (the same conversions, the same errors)."""
    items = obj.get("end_offsets")
    if not isinstance(items, list):
        raise EvidenceError("end offsets line needs a group and a list of [topic, partition, offset]")
    if not items:
        return None
    raw_ts = obj.get("ts")
    # else read (or refused, out of range too) with the first item
    ts = raw_ts if type(raw_ts) is int and INT64_MIN <= raw_ts <= INT64_MAX else None
    rows = []
    for item in items:
        if not isinstance(item, list) or len(item) != 3:
            raise EvidenceError(f"end offset must be [topic, partition, offset], got {item!r}")
        t, p, off = item
        if (
            ts is not None
            and type(t) is str
            and type(p) is int
            and type(off) is int
            and INT32_MIN <= p <= INT32_MAX
            and INT64_MIN <= off <= INT64_MAX
        ):
            rows.append((t, p, off))  # the poller's own shape: nothing to convert or refuse
            continue
        ev = from_end_offset_json({"ts": raw_ts, "topic": t, "partition": p, "end_offset": off})
        ts = ev.ts
        rows.append((ev.topic, ev.partition, ev.end_offset))
    assert ts is not None  # the first item set it, or raised
    return EndOffsets(ts, tuple(rows))
