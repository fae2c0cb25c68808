"""Typed records of the `__consumer_offsets` topic: what the coordinator model consumes.

The codec (`collectors.codec.decoder`) turns one raw record (key bytes, value bytes or None) into an
`OffsetsRecord`, whose `key` and `value` are the dataclasses below. The coordinator model replays
these, one small method per key class, the way Kafka's `GroupMetadataManager.replay(key, value)` does.

Naming: every class is named after Kafka's JSON message schema (apache/kafka
`group-coordinator/src/main/resources/common/message/*.json`, Kafka 4.3.1) and every attribute is the
schema's field name in snake_case (`leaderEpoch` -> `leader_epoch`). Kafka's defaults are kept: a
field that a version does not carry holds Kafka's default (-1 for timestamps/epochs/timeouts, None
for nullable strings), so `OffsetCommitValue.leader_epoch` is -1 for a v1 record, exactly as Kafka
reads it. Nested structs that Kafka declares inside one message only get a prefix when two messages
use the same name for different shapes (`ShareTopicInfo`, `StreamsTopicInfo`).

- Every key class exposes `.group` (the group id), so consumers can route by group without knowing
  the record type (KIP-848, share and streams keys call the field `group_id`; `.group` is an alias).
- A `value` of None is a tombstone: the key's entity (the group, one committed offset, one member's
  assignment, ...) was deleted. `OffsetsRecord.is_tombstone` says so.
- Topic ids (KIP-848 records) are kept as Kafka prints them: 22 characters of URL-safe base64
  without padding (`Uuid.toString()`), e.g. "ShUO6j_ERf206hfij4NzFg".
- Classic members keep their raw `subscription` / `assignment` bytes; when the group's protocol type
  is "consumer" and the bytes parse, `subscription_decoded` / `assignment_decoded` hold the decoded
  consumer-protocol payloads, otherwise None (Connect, Streams and broken payloads stay bytes).
- Flexible (tagged-field) structs keep tags the codec does not know in `unknown_tagged_fields` as
  (tag, raw bytes) pairs, so re-encoding is byte-exact (and the JSON rendering shows them).
- Record types Kafka 4.3.1 does not define (9: Kafka 4.0's early-access ShareGroupPartitionMetadata,
  dropped in 4.1; 18; 24 and up) decode to `UnknownKey` / `UnknownValue` with the raw bytes.

Keys are frozen (hashable, usable as dict keys); values are slotted and treated as read-only.
Classic members decode their consumer-protocol payloads lazily, on first access (same values).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator_model.evidence import ZERO_UUID

TaggedFields = tuple[tuple[int, bytes], ...]

# ----------------------------------------------------------------------------------------------
# Record types (the int16 at the start of every key).
OFFSET_COMMIT_LEGACY = 0  # LegacyOffsetCommitKey
OFFSET_COMMIT = 1  # OffsetCommitKey
GROUP_METADATA = 2  # GroupMetadataKey (classic groups)
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
SHARE_GROUP_MEMBER_METADATA = 10
SHARE_GROUP_METADATA = 11
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
SHARE_GROUP_STATE_PARTITION_METADATA = 15
CONSUMER_GROUP_REGULAR_EXPRESSION = 16
STREAMS_GROUP_METADATA = 17
STREAMS_GROUP_MEMBER_METADATA = 19
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
STREAMS_GROUP_TOPOLOGY = 23


# ConsumerGroupCurrentMemberAssignmentValue.state (Kafka's MemberState ids).
MEMBER_STATE_STABLE = 0
MEMBER_STATE_UNREVOKED_PARTITIONS = 1
MEMBER_STATE_UNRELEASED_PARTITIONS = 2
MEMBER_STATE_UNKNOWN = 127


# ----------------------------------------------------------------------------------------------
# Offset commits (key types 0 and 1).
@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1  # v3+
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1  # v1 only
    topic_id: str = ZERO_UUID  # v4+, tagged field 0 (Kafka 4.1+)
    unknown_tagged_fields: TaggedFields = ()  # v4+ (flexible)


# ----------------------------------------------------------------------------------------------
# Consumer protocol payloads carried inside classic members (protocolType "consumer").
@dataclass(slots=True)
class TopicPartition:
    """ConsumerProtocol's TopicPartition: a topic name and partitions, in the order the client sent."""

    topic: str
    partitions: list[int]


@dataclass(slots=True)
class ConsumerProtocolSubscription:
    version: int
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+
    # StickyAssignor / CooperativeStickyAssignor userData, when it parses as such.
    user_data_decoded: StickyAssignorUserData | None = None


@dataclass(slots=True)
class ConsumerProtocolAssignment:
    version: int
    assigned_partitions: list[TopicPartition]
    user_data: bytes | None = None
    user_data_decoded: StickyAssignorUserData | None = None


@dataclass(slots=True)
class StickyAssignorUserData:
    """The (Java) StickyAssignor's userData: the member's previous assignment, and from v1 its
    generation (-1 when absent). Kafka: StickyAssignor.serializeTopicPartitionAssignment."""

    version: int
    previous_assignment: list[TopicPartition]
    generation: int = -1


# ----------------------------------------------------------------------------------------------
# Classic group metadata (key type 2).
@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


class _Unread:
    """Marks a payload not decoded yet. Pickled by reference, so records sent to another process
    (Spark workers) still decode lazily there."""

    __slots__ = ()

    def __reduce__(self) -> str:
        return "_UNREAD"

    def __repr__(self) -> str:
        return "<not decoded yet>"


_UNREAD: Any = _Unread()


@dataclass(slots=True, init=False)
class MemberMetadata:
    """A classic group member. `subscription_decoded` / `assignment_decoded` are read lazily, on
    first access, from the raw bytes when the group's protocolType is "consumer" (None when the
    bytes do not parse or the protocol type is another): decoding a GroupMetadata record with
    100 members does not pay for 200 payloads nobody looks at. They can also be set."""

    member_id: str
    group_instance_id: str | None  # v3+
    client_id: str
    client_host: str
    rebalance_timeout: int  # v1+ (-1 in v0 records: the schema's default)
    session_timeout: int
    subscription: bytes
    assignment: bytes
    # Caches behind the properties below (init=False: dataclasses.replace() starts them afresh).
    _subscription_decoded: Any = field(default=_UNREAD, compare=False, repr=False, init=False)
    _assignment_decoded: Any = field(default=_UNREAD, compare=False, repr=False, init=False)
    unknown_tagged_fields: TaggedFields = ()
    # How to read the payloads (the consumer protocol, with StickyAssignor userData or not), None for
    # opaque bytes: set by the decoder from the group's protocolType / protocol. The reader is the
    # decoder's, so the data does not import its decoder (and a record unpickled in a Spark worker
    # brings the decoder's module along).
    payload_reader: Any = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout: int,
        session_timeout: int,
        subscription: bytes,
        assignment: bytes,
        subscription_decoded: Any = _UNREAD,  # ConsumerProtocolSubscription | None; unset: lazy
        assignment_decoded: Any = _UNREAD,  # ConsumerProtocolAssignment | None; unset: lazy
        unknown_tagged_fields: TaggedFields = (),
        payload_reader: Any = None,
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout = rebalance_timeout
        self.session_timeout = session_timeout
        self.subscription = subscription
        self.assignment = assignment
        self._subscription_decoded = subscription_decoded
        self._assignment_decoded = assignment_decoded
        self.unknown_tagged_fields = unknown_tagged_fields
        self.payload_reader = payload_reader

    @property
    def subscription_decoded(self) -> ConsumerProtocolSubscription | None:
        value = self._subscription_decoded
        if value is _UNREAD:
            value = None
            if self.payload_reader is not None:
                value = self.payload_reader.subscription(self.subscription)
            self._subscription_decoded = value
        return value

    @subscription_decoded.setter
    def subscription_decoded(self, value: ConsumerProtocolSubscription | None) -> None:
        self._subscription_decoded = value

    @property
    def assignment_decoded(self) -> ConsumerProtocolAssignment | None:
        value = self._assignment_decoded
        if value is _UNREAD:
            value = None
            if self.payload_reader is not None:
                value = self.payload_reader.assignment(self.assignment)
            self._assignment_decoded = value
        return value

    @assignment_decoded.setter
    def assignment_decoded(self, value: ConsumerProtocolAssignment | None) -> None:
        self._assignment_decoded = value


@dataclass(slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int  # v2+, -1 before
    members: list[MemberMetadata]
    unknown_tagged_fields: TaggedFields = ()


# ----------------------------------------------------------------------------------------------
# KIP-848 consumer groups (key types 3-8 and 16). Keys call the group `group_id` like Kafka's
# schemas; `.group` is the alias every key class has.
class _GroupIdKey:
    """KIP-848 keys name the group `group_id` (as Kafka's schemas do); `.group` is what every key has."""

    __slots__ = ()
    group_id: str

    @property
    def group(self) -> str:
        return self.group_id


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0  # tagged field 0 (Kafka 4.1+): hash of the subscribed topics' metadata
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class PartitionMetadata:
    partition: int
    racks: list[str]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class TopicMetadata:
    topic_id: str
    topic_name: str
    num_partitions: int
    partition_metadata: list[PartitionMetadata]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: list[TopicMetadata]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class ClassicMemberMetadata:
    """Set when a classic (JoinGroup) member is part of a KIP-848 group (upgrade path)."""

    session_timeout_ms: int
    supported_protocols: list[ClassicProtocol]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    # Tagged field 0. None (not a classic member) is what Kafka writes for KIP-848 members: a 1-byte
    # tag, since the schema's default is an empty ClassicMemberMetadata(0, []), which a record without
    # the tag reads as (as in Kafka).
    classic_member_metadata: ClassicMemberMetadata | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0  # tagged field 0 (Kafka 4.3+): when the assignment was computed
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class TopicIdPartitions:
    """KIP-848 and share records name topics by id: (topic_id, partitions). In a current member
    assignment (ConsumerGroupCurrentMemberAssignmentValue) Kafka 4.3 adds the epoch at which each
    partition was assigned (tagged field 0; Kafka's default, an empty list, when not written); target
    assignments and share groups do not carry it."""

    topic_id: str
    partitions: list[int]
    assignment_epochs: list[int] | None = field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: list[TopicIdPartitions]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MEMBER_STATE_*
    assigned_partitions: list[TopicIdPartitions]
    partitions_pending_revocation: list[TopicIdPartitions]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey(_GroupIdKey):
    group_id: str
    regular_expression: str


@dataclass(slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: list[str]
    version: int
    timestamp: int
    unknown_tagged_fields: TaggedFields = ()


# ----------------------------------------------------------------------------------------------
# Share groups (KIP-932, key types 10-15), as Kafka 4.1+ writes them. Kafka 4.0's early-access
# share records differ: type 9 is gone (UnknownKey), and 4.1 added a non-tagged field to types 11
# (MetadataHash) and 15 (InitializingTopics) without a new version, so 4.0 records of those two types
# do not read as 4.1+ records (usually a DecodeError; Kafka 4.1+ cannot read them either).
@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class ShareGroupMetadataValue:
    epoch: int
    metadata_hash: int
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0  # tagged field 0 (Kafka 4.3+)
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class ShareGroupTargetAssignmentMemberValue:
    topic_partitions: list[TopicIdPartitions]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MEMBER_STATE_*
    assigned_partitions: list[TopicIdPartitions]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class TopicPartitionsInfo:
    topic_id: str
    topic_name: str
    partitions: list[int]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class ShareTopicInfo:
    """ShareGroupStatePartitionMetadataValue's TopicInfo (a topic whose share state is being deleted)."""

    topic_id: str
    topic_name: str
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class ShareGroupStatePartitionMetadataValue:
    """Which partitions' share-group state (in `__share_group_state`) exists or is being set up."""

    initializing_topics: list[TopicPartitionsInfo]
    initialized_topics: list[TopicPartitionsInfo]
    deleting_topics: list[ShareTopicInfo]
    unknown_tagged_fields: TaggedFields = ()


# ----------------------------------------------------------------------------------------------
# Streams groups (KIP-1071, key types 17 and 19-23, defined from Kafka 4.1; type 18 is not used).
# Tasks are named by subtopology id + partitions.
@dataclass(slots=True)
class KeyValue:
    """A key/value pair: a streams member's client tag, a topic config, an assignment config."""

    key: str
    value: str
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class StreamsGroupMetadataKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class StreamsGroupMetadataValue:
    epoch: int
    metadata_hash: int
    validated_topology_epoch: int = -1  # tagged field 0 (Kafka 4.2+)
    # tagged field 1 (Kafka 4.2+); not written: Kafka's default, an empty list
    last_assignment_configs: list[KeyValue] | None = field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class StreamsGroupMemberMetadataKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class Endpoint:
    host: str
    port: int  # uint16
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class StreamsGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: Endpoint | None
    client_tags: list[KeyValue]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMetadataKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class StreamsGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0  # tagged field 0 (Kafka 4.3+)
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class TaskIds:
    """Tasks of one subtopology: its id and partitions; in a current member assignment Kafka 4.2 adds
    the epoch each task was assigned at (tagged field 0; Kafka's default, an empty list, when not
    written)."""

    subtopology_id: str
    partitions: list[int]
    assignment_epochs: list[int] | None = field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMemberKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class StreamsGroupTargetAssignmentMemberValue:
    active_tasks: list[TaskIds]
    standby_tasks: list[TaskIds]
    warmup_tasks: list[TaskIds]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class StreamsGroupCurrentMemberAssignmentKey(_GroupIdKey):
    group_id: str
    member_id: str


@dataclass(slots=True)
class StreamsGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MEMBER_STATE_*
    active_tasks: list[TaskIds]
    standby_tasks: list[TaskIds]
    warmup_tasks: list[TaskIds]
    active_tasks_pending_revocation: list[TaskIds]
    standby_tasks_pending_revocation: list[TaskIds]
    warmup_tasks_pending_revocation: list[TaskIds]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class StreamsGroupTopologyKey(_GroupIdKey):
    group_id: str


@dataclass(slots=True)
class StreamsTopicInfo:
    """StreamsGroupTopologyValue's TopicInfo: an internal topic the application needs."""

    name: str
    partitions: int  # 0: no specific number; always 0 for changelog topics
    replication_factor: int  # 0: the broker's default
    topic_configs: list[KeyValue]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class CopartitionGroup:
    """Source topics that must be co-partitioned, as indexes into the subtopology's topic lists."""

    source_topics: list[int]
    source_topic_regex: list[int]
    repartition_source_topics: list[int]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: list[str]
    source_topic_regex: list[str]
    state_changelog_topics: list[StreamsTopicInfo]
    repartition_sink_topics: list[str]
    repartition_source_topics: list[StreamsTopicInfo]
    copartition_groups: list[CopartitionGroup]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(slots=True)
class StreamsGroupTopologyValue:
    epoch: int
    subtopologies: list[Subtopology]
    unknown_tagged_fields: TaggedFields = ()


# ----------------------------------------------------------------------------------------------
# Anything else (types 9 and 18, which Kafka 4.3.1 does not define, 24 and up): raw bytes, never an
# error.
@dataclass(frozen=True, slots=True)
class UnknownKey:
    record_type: int
    key_bytes: bytes  # the whole key, record type included

    @property
    def group(self) -> str | None:
        """Best effort: every known coordinator key starts with the group id as an int16-length
        string; None when the bytes do not look like one."""
        data = self.key_bytes
        if len(data) < 4:
            return None
        n = int.from_bytes(data[2:4], "big", signed=True)
        if n < 0 or 4 + n > len(data):
            return None
        try:
            return data[4 : 4 + n].decode("utf-8")
        except UnicodeDecodeError:
            return None


@dataclass(slots=True)
class UnknownValue:
    version: int
    value_bytes: bytes  # the whole value, version included


RecordKey = (
    OffsetCommitKey
    | GroupMetadataKey
    | ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
    | ShareGroupMemberMetadataKey
    | ShareGroupMetadataKey
    | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
    | StreamsGroupMetadataKey
    | StreamsGroupMemberMetadataKey
    | StreamsGroupTargetAssignmentMetadataKey
    | StreamsGroupTargetAssignmentMemberKey
    | StreamsGroupCurrentMemberAssignmentKey
    | StreamsGroupTopologyKey
    | UnknownKey
)
RecordValue = (
    OffsetCommitValue
    | GroupMetadataValue
    | ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
    | ShareGroupMemberMetadataValue
    | ShareGroupMetadataValue
    | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue
    | StreamsGroupMetadataValue
    | StreamsGroupMemberMetadataValue
    | StreamsGroupTargetAssignmentMetadataValue
    | StreamsGroupTargetAssignmentMemberValue
    | StreamsGroupCurrentMemberAssignmentValue
    | StreamsGroupTopologyValue
    | UnknownValue
)


@dataclass(slots=True)
class OffsetsRecord:
    """One `__consumer_offsets` record. `value` None is a tombstone: the key's entity was deleted."""

    partition: int
    offset: int
    timestamp: int
    record_type: int  # the key's int16 (Kafka calls it the key version)
    key: RecordKey
    value_version: int | None  # None for a tombstone
    value: RecordValue | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None

    @property
    def group(self) -> str | None:
        return self.key.group
