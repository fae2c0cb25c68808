"""The schema table: every `__consumer_offsets` record, transcribed from Kafka's JSON message
definitions (apache/kafka `group-coordinator/src/main/resources/common/message/*.json`, Kafka 4.3.1,
and `clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json`).
`tests/test_codec_schemas.py` holds the table against the JSON files inside Kafka's jars, so a field a
new Kafka release adds fails a test instead of ending up in `unknown_tagged_fields` unnoticed.

Nothing here reads or writes bytes: `collectors.codec.compiler` turns each (struct, version) into a
reader, a writer and a JSON renderer, the way franz-go's kmsg is generated from the same JSON files.
A new version of a record is a new line in this table, not new code.

Field spelling follows the JSON files: `versions` "3+" / "1" / "0-1", `nullable` the nullable
versions, `tag` for tagged fields (flexible versions only), `default` where the JSON gives one.
`name` is Kafka's camelCase JSON name (what kafka-dump-log prints); the dataclass attribute is its
snake_case form. Keys are read at the version equal to their record type (Kafka 4.0's key files said
so; 4.1+ files say version 0 and carry the record type as "apiKey"), which changes nothing on the wire.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from collectors.codec import records as r

MAX_VERSION = 0x7FFF
_NO_DEFAULT: Any = object()


def version_range(spec: str | None) -> tuple[int, int] | None:
    """Kafka's version syntax: "0+", "3+", "1", "0-4", "none"/None."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def snake(name: str) -> str:
    name = name[0].lower() + name[1:]
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


@dataclass(frozen=True)
class Field:
    name: str  # Kafka's JSON name, camelCase
    type: str  # int8 int16 int32 int64 uint16 string bytes uuid []int16 []int32 []string []Struct Struct
    versions: str = "0+"
    nullable: str | None = None
    default: Any = _NO_DEFAULT
    tag: int | None = None
    struct: Struct | None = None  # element type of []Struct / type of Struct
    # bytes printed decoded (from the `<attr>_decoded` attribute) when it parsed: member payloads
    render_decoded: bool = False

    @property
    def attr(self) -> str:
        return snake(self.name)

    def present_in(self, version: int) -> bool:
        lo, hi = version_range(self.versions)  # type: ignore[misc]
        return lo <= version <= hi

    def nullable_in(self, version: int) -> bool:
        rng = version_range(self.nullable)
        return rng is not None and rng[0] <= version <= rng[1]

    def default_value(self) -> Any:
        """Kafka's default (generated-code semantics): the value when a version does not carry the
        field or a tagged field is not written. A writer leaves a tagged field holding it out, and
        kafka-dump-log does not print it. Without a "default" in the JSON (a JSON null counts as
        none), Kafka's generator takes the type's zero: 0, "", b"", the zero Uuid, an empty list, an
        empty struct (even for nullable fields: "null" as a string means None)."""
        if self.default is not _NO_DEFAULT:
            return self.default
        if self.type in ("int8", "int16", "int32", "int64", "uint16"):
            return 0
        if self.type == "string":
            return ""
        if self.type == "bytes":
            return b""
        if self.type == "uuid":
            return r.ZERO_UUID
        if self.type.startswith("[]"):
            return []
        assert self.struct is not None, f"{self.name}: no default for type {self.type}"
        return self.struct.cls(**{f.attr: f.default_value() for f in self.struct.fields})


@dataclass(frozen=True)
class Struct:
    name: str
    cls: type
    fields: tuple[Field, ...]
    # Where the dataclass keeps tagged fields it does not know (None: the class has no such slot).
    unknown_tags_attr: str | None = "unknown_tagged_fields"
    # Attribute that receives the version the struct was read in (consumer-protocol payloads).
    version_attr: str | None = None


@dataclass(frozen=True)
class Message:
    """A top-level key or value schema: its struct, valid and flexible versions."""

    name: str
    struct: Struct
    valid: str
    flexible: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def versions(self) -> range:
        lo, hi = version_range(self.valid)  # type: ignore[misc]
        return range(lo, hi + 1)

    def is_flexible(self, version: int) -> bool:
        rng = version_range(self.flexible)
        return rng is not None and rng[0] <= version <= rng[1]


F = Field

# ----------------------------------------------------------------------------------------------
# Keys. A key's "version" is the record type; keys are never flexible.
OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey",
    Struct(
        "OffsetCommitKey",
        r.OffsetCommitKey,
        (F("group", "string"), F("topic", "string"), F("partition", "int32")),
        None,
    ),
    valid="0-1",
)
GROUP_METADATA_KEY = Message(
    "GroupMetadataKey", Struct("GroupMetadataKey", r.GroupMetadataKey, (F("group", "string"),), None), "2"
)


def _group_key(name: str, cls: type, record_type: int, *more: Field) -> Message:
    return Message(name, Struct(name, cls, (F("groupId", "string"), *more), None), str(record_type))


CONSUMER_GROUP_METADATA_KEY = _group_key("ConsumerGroupMetadataKey", r.ConsumerGroupMetadataKey, 3)
CONSUMER_GROUP_PARTITION_METADATA_KEY = _group_key(
    "ConsumerGroupPartitionMetadataKey", r.ConsumerGroupPartitionMetadataKey, 4
)
CONSUMER_GROUP_MEMBER_METADATA_KEY = _group_key(
    "ConsumerGroupMemberMetadataKey", r.ConsumerGroupMemberMetadataKey, 5, F("memberId", "string")
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMetadataKey", r.ConsumerGroupTargetAssignmentMetadataKey, 6
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMemberKey",
    r.ConsumerGroupTargetAssignmentMemberKey,
    7,
    F("memberId", "string"),
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "ConsumerGroupCurrentMemberAssignmentKey",
    r.ConsumerGroupCurrentMemberAssignmentKey,
    8,
    F("memberId", "string"),
)
CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = _group_key(
    "ConsumerGroupRegularExpressionKey",
    r.ConsumerGroupRegularExpressionKey,
    16,
    F("regularExpression", "string"),
)
SHARE_GROUP_MEMBER_METADATA_KEY = _group_key(
    "ShareGroupMemberMetadataKey", r.ShareGroupMemberMetadataKey, 10, F("memberId", "string")
)
SHARE_GROUP_METADATA_KEY = _group_key("ShareGroupMetadataKey", r.ShareGroupMetadataKey, 11)
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key(
    "ShareGroupTargetAssignmentMetadataKey", r.ShareGroupTargetAssignmentMetadataKey, 12
)
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "ShareGroupTargetAssignmentMemberKey", r.ShareGroupTargetAssignmentMemberKey, 13, F("memberId", "string")
)
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "ShareGroupCurrentMemberAssignmentKey",
    r.ShareGroupCurrentMemberAssignmentKey,
    14,
    F("memberId", "string"),
)
SHARE_GROUP_STATE_PARTITION_METADATA_KEY = _group_key(
    "ShareGroupStatePartitionMetadataKey", r.ShareGroupStatePartitionMetadataKey, 15
)
STREAMS_GROUP_METADATA_KEY = _group_key("StreamsGroupMetadataKey", r.StreamsGroupMetadataKey, 17)
STREAMS_GROUP_MEMBER_METADATA_KEY = _group_key(
    "StreamsGroupMemberMetadataKey", r.StreamsGroupMemberMetadataKey, 19, F("memberId", "string")
)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key(
    "StreamsGroupTargetAssignmentMetadataKey", r.StreamsGroupTargetAssignmentMetadataKey, 20
)
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "StreamsGroupTargetAssignmentMemberKey",
    r.StreamsGroupTargetAssignmentMemberKey,
    21,
    F("memberId", "string"),
)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "StreamsGroupCurrentMemberAssignmentKey",
    r.StreamsGroupCurrentMemberAssignmentKey,
    22,
    F("memberId", "string"),
)
STREAMS_GROUP_TOPOLOGY_KEY = _group_key("StreamsGroupTopologyKey", r.StreamsGroupTopologyKey, 23)

# ----------------------------------------------------------------------------------------------
# Values.
OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue",
    Struct(
        "OffsetCommitValue",
        r.OffsetCommitValue,
        (
            F("offset", "int64"),
            F("leaderEpoch", "int32", "3+", default=-1),
            F("metadata", "string"),
            F("commitTimestamp", "int64"),
            F("expireTimestamp", "int64", "1", default=-1),
            F("topicId", "uuid", "4+", tag=0),
        ),
    ),
    valid="0-4",
    flexible="4+",
)

MEMBER_METADATA = Struct(
    "MemberMetadata",
    r.MemberMetadata,
    (
        F("memberId", "string"),
        F("groupInstanceId", "string", "3+", nullable="3+", default=None),
        F("clientId", "string"),
        F("clientHost", "string"),
        # -1 in v0 (the JSON's default): the model then takes the session timeout, as old brokers did
        F("rebalanceTimeout", "int32", "1+", default=-1),
        F("sessionTimeout", "int32"),
        F("subscription", "bytes", render_decoded=True),
        F("assignment", "bytes", render_decoded=True),
    ),
)
GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue",
    Struct(
        "GroupMetadataValue",
        r.GroupMetadataValue,
        (
            F("protocolType", "string"),
            F("generation", "int32"),
            F("protocol", "string", nullable="0+"),
            F("leader", "string", nullable="0+"),
            F("currentStateTimestamp", "int64", "2+", default=-1),
            F("members", "[]MemberMetadata", struct=MEMBER_METADATA),
        ),
    ),
    valid="0-4",
    flexible="4+",
)

CONSUMER_GROUP_METADATA_VALUE = Message(
    "ConsumerGroupMetadataValue",
    Struct(
        "ConsumerGroupMetadataValue",
        r.ConsumerGroupMetadataValue,
        (F("epoch", "int32"), F("metadataHash", "int64", default=0, tag=0)),
    ),
    valid="0",
    flexible="0+",
)

PARTITION_METADATA = Struct(
    "PartitionMetadata", r.PartitionMetadata, (F("partition", "int32"), F("racks", "[]string"))
)
TOPIC_METADATA = Struct(
    "TopicMetadata",
    r.TopicMetadata,
    (
        F("topicId", "uuid"),
        F("topicName", "string"),
        F("numPartitions", "int32"),
        F("partitionMetadata", "[]PartitionMetadata", struct=PARTITION_METADATA),
    ),
)
CONSUMER_GROUP_PARTITION_METADATA_VALUE = Message(
    "ConsumerGroupPartitionMetadataValue",
    Struct(
        "ConsumerGroupPartitionMetadataValue",
        r.ConsumerGroupPartitionMetadataValue,
        (F("topics", "[]TopicMetadata", struct=TOPIC_METADATA),),
    ),
    valid="0",
    flexible="0+",
)

CLASSIC_PROTOCOL = Struct("ClassicProtocol", r.ClassicProtocol, (F("name", "string"), F("metadata", "bytes")))
CLASSIC_MEMBER_METADATA = Struct(
    "ClassicMemberMetadata",
    r.ClassicMemberMetadata,
    (
        F("sessionTimeoutMs", "int32"),
        F("supportedProtocols", "[]ClassicProtocol", struct=CLASSIC_PROTOCOL),
    ),
)
CONSUMER_GROUP_MEMBER_METADATA_VALUE = Message(
    "ConsumerGroupMemberMetadataValue",
    Struct(
        "ConsumerGroupMemberMetadataValue",
        r.ConsumerGroupMemberMetadataValue,
        (
            F("instanceId", "string", nullable="0+"),
            F("rackId", "string", nullable="0+"),
            F("clientId", "string"),
            F("clientHost", "string"),
            F("subscribedTopicNames", "[]string"),
            F("subscribedTopicRegex", "string", nullable="0+"),
            F("rebalanceTimeoutMs", "int32", default=-1),
            F("serverAssignor", "string", nullable="0+"),
            # The JSON's `"default": null` is no default to Kafka's generator: an empty struct. So a
            # KIP-848 member (null) is written as a 1-byte tag (uvarint 0: null), as real 4.0+
            # brokers do, and a record without the tag reads as the empty struct.
            F(
                "classicMemberMetadata",
                "ClassicMemberMetadata",
                nullable="0+",
                tag=0,
                struct=CLASSIC_MEMBER_METADATA,
            ),
        ),
    ),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "ConsumerGroupTargetAssignmentMetadataValue",
    Struct(
        "ConsumerGroupTargetAssignmentMetadataValue",
        r.ConsumerGroupTargetAssignmentMetadataValue,
        (F("assignmentEpoch", "int32"), F("assignmentTimestamp", "int64", default=0, tag=0)),
    ),
    valid="0",
    flexible="0+",
)

TOPIC_PARTITIONS = Struct(
    "TopicPartitions", r.TopicIdPartitions, (F("topicId", "uuid"), F("partitions", "[]int32"))
)
# A current member assignment's TopicPartitions also carries, from Kafka 4.3, the epoch at which each
# partition was assigned (same class; the target assignment's struct has no such field).
ASSIGNED_TOPIC_PARTITIONS = Struct(
    "AssignedTopicPartitions",
    r.TopicIdPartitions,
    (
        F("topicId", "uuid"),
        F("partitions", "[]int32"),
        F("assignmentEpochs", "[]int32", nullable="0+", tag=0),
    ),
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "ConsumerGroupTargetAssignmentMemberValue",
    Struct(
        "ConsumerGroupTargetAssignmentMemberValue",
        r.ConsumerGroupTargetAssignmentMemberValue,
        (F("topicPartitions", "[]TopicPartition", struct=TOPIC_PARTITIONS),),
    ),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message(
    "ConsumerGroupCurrentMemberAssignmentValue",
    Struct(
        "ConsumerGroupCurrentMemberAssignmentValue",
        r.ConsumerGroupCurrentMemberAssignmentValue,
        (
            F("memberEpoch", "int32"),
            F("previousMemberEpoch", "int32"),
            F("state", "int8"),
            F("assignedPartitions", "[]TopicPartitions", struct=ASSIGNED_TOPIC_PARTITIONS),
            F("partitionsPendingRevocation", "[]TopicPartitions", struct=ASSIGNED_TOPIC_PARTITIONS),
        ),
    ),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = Message(
    "ConsumerGroupRegularExpressionValue",
    Struct(
        "ConsumerGroupRegularExpressionValue",
        r.ConsumerGroupRegularExpressionValue,
        (F("topics", "[]string"), F("version", "int64"), F("timestamp", "int64")),
    ),
    valid="0",
    flexible="0+",
)

# ----------------------------------------------------------------------------------------------
# Share groups (KIP-932).
SHARE_GROUP_MEMBER_METADATA_VALUE = Message(
    "ShareGroupMemberMetadataValue",
    Struct(
        "ShareGroupMemberMetadataValue",
        r.ShareGroupMemberMetadataValue,
        (
            F("rackId", "string", nullable="0+"),
            F("clientId", "string"),
            F("clientHost", "string"),
            F("subscribedTopicNames", "[]string"),
        ),
    ),
    valid="0",
    flexible="0+",
)
SHARE_GROUP_METADATA_VALUE = Message(
    "ShareGroupMetadataValue",
    Struct(
        "ShareGroupMetadataValue",
        r.ShareGroupMetadataValue,
        (F("epoch", "int32"), F("metadataHash", "int64")),
    ),
    valid="0",
    flexible="0+",
)
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "ShareGroupTargetAssignmentMetadataValue",
    Struct(
        "ShareGroupTargetAssignmentMetadataValue",
        r.ShareGroupTargetAssignmentMetadataValue,
        (F("assignmentEpoch", "int32"), F("assignmentTimestamp", "int64", default=0, tag=0)),
    ),
    valid="0",
    flexible="0+",
)
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "ShareGroupTargetAssignmentMemberValue",
    Struct(
        "ShareGroupTargetAssignmentMemberValue",
        r.ShareGroupTargetAssignmentMemberValue,
        (F("topicPartitions", "[]TopicPartition", struct=TOPIC_PARTITIONS),),
    ),
    valid="0",
    flexible="0+",
)
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message(
    "ShareGroupCurrentMemberAssignmentValue",
    Struct(
        "ShareGroupCurrentMemberAssignmentValue",
        r.ShareGroupCurrentMemberAssignmentValue,
        (
            F("memberEpoch", "int32"),
            F("previousMemberEpoch", "int32"),
            F("state", "int8"),
            F("assignedPartitions", "[]TopicPartitions", struct=TOPIC_PARTITIONS),
        ),
    ),
    valid="0",
    flexible="0+",
)
TOPIC_PARTITIONS_INFO = Struct(
    "TopicPartitionsInfo",
    r.TopicPartitionsInfo,
    (F("topicId", "uuid"), F("topicName", "string"), F("partitions", "[]int32")),
)
SHARE_TOPIC_INFO = Struct(
    "ShareTopicInfo", r.ShareTopicInfo, (F("topicId", "uuid"), F("topicName", "string"))
)
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = Message(
    "ShareGroupStatePartitionMetadataValue",
    Struct(
        "ShareGroupStatePartitionMetadataValue",
        r.ShareGroupStatePartitionMetadataValue,
        (
            F("initializingTopics", "[]TopicPartitionsInfo", struct=TOPIC_PARTITIONS_INFO),
            F("initializedTopics", "[]TopicPartitionsInfo", struct=TOPIC_PARTITIONS_INFO),
            F("deletingTopics", "[]TopicInfo", struct=SHARE_TOPIC_INFO),
        ),
    ),
    valid="0",
    flexible="0+",
)

# ----------------------------------------------------------------------------------------------
# Streams groups (KIP-1071). Kafka declares three key/value structs (LastAssignmentConfig, KeyValue,
# TopicConfig) with the same two string fields: one struct here, checked against each.
KEY_VALUE = Struct("KeyValue", r.KeyValue, (F("key", "string"), F("value", "string")))
STREAMS_GROUP_METADATA_VALUE = Message(
    "StreamsGroupMetadataValue",
    Struct(
        "StreamsGroupMetadataValue",
        r.StreamsGroupMetadataValue,
        (
            F("epoch", "int32"),
            F("metadataHash", "int64"),
            F("validatedTopologyEpoch", "int32", default=-1, tag=0),
            F("lastAssignmentConfigs", "[]LastAssignmentConfig", nullable="0+", tag=1, struct=KEY_VALUE),
        ),
    ),
    valid="0",
    flexible="0+",
)
ENDPOINT = Struct("Endpoint", r.Endpoint, (F("host", "string"), F("port", "uint16")))
STREAMS_GROUP_MEMBER_METADATA_VALUE = Message(
    "StreamsGroupMemberMetadataValue",
    Struct(
        "StreamsGroupMemberMetadataValue",
        r.StreamsGroupMemberMetadataValue,
        (
            F("instanceId", "string", nullable="0+"),
            F("rackId", "string", nullable="0+"),
            F("clientId", "string"),
            F("clientHost", "string"),
            F("rebalanceTimeoutMs", "int32", default=-1),
            F("topologyEpoch", "int32"),
            F("processId", "string"),
            F("userEndpoint", "Endpoint", nullable="0+", default=None, struct=ENDPOINT),
            F("clientTags", "[]KeyValue", struct=KEY_VALUE),
        ),
    ),
    valid="0",
    flexible="0+",
)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "StreamsGroupTargetAssignmentMetadataValue",
    Struct(
        "StreamsGroupTargetAssignmentMetadataValue",
        r.StreamsGroupTargetAssignmentMetadataValue,
        (F("assignmentEpoch", "int32"), F("assignmentTimestamp", "int64", default=0, tag=0)),
    ),
    valid="0",
    flexible="0+",
)
TASK_IDS = Struct("TaskIds", r.TaskIds, (F("subtopologyId", "string"), F("partitions", "[]int32")))
# A current member assignment's TaskIds also carries, from Kafka 4.2, the epoch each task was
# assigned at (same class; the target assignment's struct has no such field).
ASSIGNED_TASK_IDS = Struct(
    "AssignedTaskIds",
    r.TaskIds,
    (
        F("subtopologyId", "string"),
        F("partitions", "[]int32"),
        F("assignmentEpochs", "[]int32", nullable="0+", tag=0),
    ),
)
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "StreamsGroupTargetAssignmentMemberValue",
    Struct(
        "StreamsGroupTargetAssignmentMemberValue",
        r.StreamsGroupTargetAssignmentMemberValue,
        (
            F("activeTasks", "[]TaskIds", struct=TASK_IDS),
            F("standbyTasks", "[]TaskIds", struct=TASK_IDS),
            F("warmupTasks", "[]TaskIds", struct=TASK_IDS),
        ),
    ),
    valid="0",
    flexible="0+",
)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message(
    "StreamsGroupCurrentMemberAssignmentValue",
    Struct(
        "StreamsGroupCurrentMemberAssignmentValue",
        r.StreamsGroupCurrentMemberAssignmentValue,
        (
            F("memberEpoch", "int32"),
            F("previousMemberEpoch", "int32"),
            F("state", "int8"),
            F("activeTasks", "[]TaskIds", struct=ASSIGNED_TASK_IDS),
            F("standbyTasks", "[]TaskIds", struct=ASSIGNED_TASK_IDS),
            F("warmupTasks", "[]TaskIds", struct=ASSIGNED_TASK_IDS),
            F("activeTasksPendingRevocation", "[]TaskIds", struct=ASSIGNED_TASK_IDS),
            F("standbyTasksPendingRevocation", "[]TaskIds", struct=ASSIGNED_TASK_IDS),
            F("warmupTasksPendingRevocation", "[]TaskIds", struct=ASSIGNED_TASK_IDS),
        ),
    ),
    valid="0",
    flexible="0+",
)
STREAMS_TOPIC_INFO = Struct(
    "StreamsTopicInfo",
    r.StreamsTopicInfo,
    (
        F("name", "string"),
        F("partitions", "int32"),
        F("replicationFactor", "int16"),
        F("topicConfigs", "[]TopicConfig", struct=KEY_VALUE),
    ),
)
COPARTITION_GROUP = Struct(
    "CopartitionGroup",
    r.CopartitionGroup,
    (
        F("sourceTopics", "[]int16"),
        F("sourceTopicRegex", "[]int16"),
        F("repartitionSourceTopics", "[]int16"),
    ),
)
SUBTOPOLOGY = Struct(
    "Subtopology",
    r.Subtopology,
    (
        F("subtopologyId", "string"),
        F("sourceTopics", "[]string"),
        F("sourceTopicRegex", "[]string"),
        F("stateChangelogTopics", "[]TopicInfo", struct=STREAMS_TOPIC_INFO),
        F("repartitionSinkTopics", "[]string"),
        F("repartitionSourceTopics", "[]TopicInfo", struct=STREAMS_TOPIC_INFO),
        F("copartitionGroups", "[]CopartitionGroup", struct=COPARTITION_GROUP),
    ),
)
STREAMS_GROUP_TOPOLOGY_VALUE = Message(
    "StreamsGroupTopologyValue",
    Struct(
        "StreamsGroupTopologyValue",
        r.StreamsGroupTopologyValue,
        (F("epoch", "int32"), F("subtopologies", "[]Subtopology", struct=SUBTOPOLOGY)),
    ),
    valid="0",
    flexible="0+",
)

# ----------------------------------------------------------------------------------------------
# Consumer protocol payloads (inside classic members whose group protocolType is "consumer").
# Not flexible; the payload starts with its int16 version.
CP_TOPIC_PARTITION = Struct(
    "TopicPartition", r.TopicPartition, (F("topic", "string"), F("partitions", "[]int32")), None
)
CONSUMER_PROTOCOL_SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription",
    Struct(
        "ConsumerProtocolSubscription",
        r.ConsumerProtocolSubscription,
        (
            F("topics", "[]string"),
            F("userData", "bytes", nullable="0+", default=None),
            F("ownedPartitions", "[]TopicPartition", "1+", struct=CP_TOPIC_PARTITION),
            F("generationId", "int32", "2+", default=-1),
            F("rackId", "string", "3+", nullable="3+", default=None),
        ),
        None,
        "version",
    ),
    valid="0-3",
)
CONSUMER_PROTOCOL_ASSIGNMENT = Message(
    "ConsumerProtocolAssignment",
    Struct(
        "ConsumerProtocolAssignment",
        r.ConsumerProtocolAssignment,
        (
            F("assignedPartitions", "[]TopicPartition", struct=CP_TOPIC_PARTITION),
            F("userData", "bytes", nullable="0+", default=None),
        ),
        None,
        "version",
    ),
    valid="0-3",
)

# StickyAssignor userData (Java StickyAssignor and librdkafka's sticky/cooperative-sticky): no
# version prefix; v1 appends the generation. Kafka tries v1 first, then v0.
STICKY_ASSIGNOR_USER_DATA = Message(
    "StickyAssignorUserData",
    Struct(
        "StickyAssignorUserData",
        r.StickyAssignorUserData,
        (
            F("previousAssignment", "[]TopicPartition", struct=CP_TOPIC_PARTITION),
            F("generation", "int32", "1+", default=-1),
        ),
        None,
        "version",
    ),
    valid="0-1",
)

# ----------------------------------------------------------------------------------------------
# record type -> (key schema, value schema)
RECORDS: dict[int, tuple[Message, Message]] = {
    r.OFFSET_COMMIT_LEGACY: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    r.OFFSET_COMMIT: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    r.GROUP_METADATA: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    r.CONSUMER_GROUP_METADATA: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    r.CONSUMER_GROUP_PARTITION_METADATA: (
        CONSUMER_GROUP_PARTITION_METADATA_KEY,
        CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    ),
    r.CONSUMER_GROUP_MEMBER_METADATA: (
        CONSUMER_GROUP_MEMBER_METADATA_KEY,
        CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    ),
    r.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: (
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    ),
    r.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: (
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    ),
    r.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: (
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    ),
    r.CONSUMER_GROUP_REGULAR_EXPRESSION: (
        CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
        CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
    ),
    r.SHARE_GROUP_MEMBER_METADATA: (SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    r.SHARE_GROUP_METADATA: (SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE),
    r.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: (
        SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    ),
    r.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: (
        SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    ),
    r.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: (
        SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    ),
    r.SHARE_GROUP_STATE_PARTITION_METADATA: (
        SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
        SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
    ),
    r.STREAMS_GROUP_METADATA: (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE),
    r.STREAMS_GROUP_MEMBER_METADATA: (STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE),
    r.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA: (
        STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    ),
    r.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER: (
        STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    ),
    r.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT: (
        STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    ),
    r.STREAMS_GROUP_TOPOLOGY: (STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
}

KEY_CLASSES: dict[type, int] = {
    key.struct.cls: rt for rt, (key, _) in RECORDS.items() if rt != r.OFFSET_COMMIT_LEGACY
}
