"""The request and response schemas this client speaks, transcribed from Kafka 4.3's JSON message
definitions (`clients/src/main/resources/common/message/*.json`), only for the versions it uses.

Spelling follows the JSON files: field names in CamelCase (the dicts the codec reads and writes are
keyed by their snake_case form), `versions` and `nullable` as "0+", "1-3", "12+". Tagged fields are
left out: this client sends none and the codec skips those it receives. `test_kafka_protocol.py`
checks every schema here against the JSON files in the Kafka jar.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# Memoized: the codec asks these for every field of every struct it reads, and an OffsetFetch answer
# holds tens of thousands of structs (one per group, topic and partition).


@functools.cache
def snake(name: str) -> str:
    """Kafka's JSON name -> the dict key: "GroupIds" -> "group_ids", "TopicId" -> "topic_id"."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


@functools.cache
def _range(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def in_versions(spec: str | None, version: int) -> bool:
    rng = _range(spec)
    return rng is not None and rng[0] <= version <= rng[1]


@dataclass(frozen=True)
class Field:
    """One field: type int8/int16/int32/int64/bool/uuid/string/bytes/[]int32/[]string, or a struct
    ("Assignment") or an array of structs ("[]Member") whose own fields are in `fields`."""

    name: str
    type: str
    versions: str = "0+"
    nullable: str | None = None
    fields: tuple[Field, ...] = ()

    @property
    def key(self) -> str:
        return snake(self.name)

    @functools.cached_property
    def item(self) -> Field:
        """An array field's element as a field of its own: "[]Member" -> a "Member" struct."""
        return Field(self.name + "[]", self.type[2:], fields=self.fields)

    def present_in(self, version: int) -> bool:
        return in_versions(self.versions, version)

    def nullable_in(self, version: int) -> bool:
        return in_versions(self.nullable, version)


@dataclass(frozen=True)
class Api:
    """One Kafka API: its key, the versions this client implements, where flexible versions start."""

    key: int
    name: str
    min_version: int
    max_version: int
    flexible: str | None
    request: tuple[Field, ...]
    response: tuple[Field, ...]

    def is_flexible(self, version: int) -> bool:
        return in_versions(self.flexible, version)


F = Field

API_VERSIONS = Api(
    18,
    "ApiVersions",
    0,
    4,
    "3+",
    request=(
        F("ClientSoftwareName", "string", "3+"),
        F("ClientSoftwareVersion", "string", "3+"),
    ),
    response=(
        F("ErrorCode", "int16"),
        F(
            "ApiKeys",
            "[]ApiVersion",
            fields=(F("ApiKey", "int16"), F("MinVersion", "int16"), F("MaxVersion", "int16")),
        ),
        F("ThrottleTimeMs", "int32", "1+"),
    ),
)

# v0 carried the SASL tokens as raw frames; v1 wraps them in SaslAuthenticate (the only form used here).
SASL_HANDSHAKE = Api(
    17,
    "SaslHandshake",
    1,
    1,
    None,
    request=(F("Mechanism", "string"),),
    response=(F("ErrorCode", "int16"), F("Mechanisms", "[]string")),
)

SASL_AUTHENTICATE = Api(
    36,
    "SaslAuthenticate",
    0,
    2,
    "2+",
    request=(F("AuthBytes", "bytes"),),
    response=(
        F("ErrorCode", "int16"),
        F("ErrorMessage", "string", nullable="0+"),
        F("AuthBytes", "bytes"),
        F("SessionLifetimeMs", "int64", "1+"),
    ),
)

# v4+ only: one request finds the coordinators of many groups (CoordinatorKeys).
FIND_COORDINATOR = Api(
    10,
    "FindCoordinator",
    4,
    6,
    "3+",
    request=(F("KeyType", "int8", "1+"), F("CoordinatorKeys", "[]string", "4+")),
    response=(
        F("ThrottleTimeMs", "int32", "1+"),
        F(
            "Coordinators",
            "[]Coordinator",
            "4+",
            fields=(
                F("Key", "string", "4+"),
                F("NodeId", "int32", "4+"),
                F("Host", "string", "4+"),
                F("Port", "int32", "4+"),
                F("ErrorCode", "int16", "4+"),
                F("ErrorMessage", "string", "4+", nullable="4+"),
            ),
        ),
    ),
)
KEY_TYPE_GROUP = 0

# v12+ only: the first versions that look topics up by id (names null in the request).
METADATA = Api(
    3,
    "Metadata",
    12,
    13,
    "9+",
    request=(
        F(
            "Topics",
            "[]MetadataRequestTopic",
            nullable="1+",
            fields=(F("TopicId", "uuid", "10+"), F("Name", "string", nullable="10+")),
        ),
        F("AllowAutoTopicCreation", "bool", "4+"),
        F("IncludeTopicAuthorizedOperations", "bool", "8+"),
    ),
    response=(
        F("ThrottleTimeMs", "int32", "3+"),
        F(
            "Brokers",
            "[]MetadataResponseBroker",
            fields=(
                F("NodeId", "int32"),
                F("Host", "string"),
                F("Port", "int32"),
                F("Rack", "string", "1+", nullable="1+"),
            ),
        ),
        F("ClusterId", "string", "2+", nullable="2+"),
        F("ControllerId", "int32", "1+"),
        F(
            "Topics",
            "[]MetadataResponseTopic",
            fields=(
                F("ErrorCode", "int16"),
                F("Name", "string", nullable="12+"),
                F("TopicId", "uuid", "10+"),
                F("IsInternal", "bool", "1+"),
                F(
                    "Partitions",
                    "[]MetadataResponsePartition",
                    fields=(
                        F("ErrorCode", "int16"),
                        F("PartitionIndex", "int32"),
                        F("LeaderId", "int32"),
                        F("LeaderEpoch", "int32", "7+"),
                        F("ReplicaNodes", "[]int32"),
                        F("IsrNodes", "[]int32"),
                        F("OfflineReplicas", "[]int32", "5+"),
                    ),
                ),
                F("TopicAuthorizedOperations", "int32", "8+"),
            ),
        ),
        F("ErrorCode", "int16", "13+"),
    ),
)

_TOPIC_PARTITIONS = F(
    "TopicPartitions",
    "[]TopicPartitions",
    fields=(F("TopicId", "uuid"), F("TopicName", "string"), F("Partitions", "[]int32")),
)

CONSUMER_GROUP_DESCRIBE = Api(
    69,
    "ConsumerGroupDescribe",
    0,
    1,
    "0+",
    request=(F("GroupIds", "[]string"), F("IncludeAuthorizedOperations", "bool")),
    response=(
        F("ThrottleTimeMs", "int32"),
        F(
            "Groups",
            "[]DescribedGroup",
            fields=(
                F("ErrorCode", "int16"),
                F("ErrorMessage", "string", nullable="0+"),
                F("GroupId", "string"),
                F("GroupState", "string"),
                F("GroupEpoch", "int32"),
                F("AssignmentEpoch", "int32"),
                F("AssignorName", "string"),
                F(
                    "Members",
                    "[]Member",
                    fields=(
                        F("MemberId", "string"),
                        F("InstanceId", "string", nullable="0+"),
                        F("RackId", "string", nullable="0+"),
                        F("MemberEpoch", "int32"),
                        F("ClientId", "string"),
                        F("ClientHost", "string"),
                        F("SubscribedTopicNames", "[]string"),
                        F("SubscribedTopicRegex", "string", nullable="0+"),
                        F("Assignment", "Assignment", fields=(_TOPIC_PARTITIONS,)),
                        F("TargetAssignment", "Assignment", fields=(_TOPIC_PARTITIONS,)),
                        F("MemberType", "int8", "1+"),
                    ),
                ),
                F("AuthorizedOperations", "int32"),
            ),
        ),
    ),
)

# Classic groups, many a request (librdkafka's describe_consumer_groups sends one group a request).
# v5 is the first flexible version; v6 (KIP-1043) answers GROUP_ID_NOT_FOUND where v5 says Dead.
# MemberMetadata and MemberAssignment are the protocol's own bytes (for protocol type "consumer": a
# ConsumerProtocolSubscription and ConsumerProtocolAssignment), filled in only while Stable.
DESCRIBE_GROUPS = Api(
    15,
    "DescribeGroups",
    5,
    6,
    "5+",
    request=(F("Groups", "[]string"), F("IncludeAuthorizedOperations", "bool")),
    response=(
        F("ThrottleTimeMs", "int32"),
        F(
            "Groups",
            "[]DescribedGroup",
            fields=(
                F("ErrorCode", "int16"),
                F("ErrorMessage", "string", "6+", nullable="6+"),
                F("GroupId", "string"),
                F("GroupState", "string"),
                F("ProtocolType", "string"),
                F("ProtocolData", "string"),
                F(
                    "Members",
                    "[]DescribedGroupMember",
                    fields=(
                        F("MemberId", "string"),
                        F("GroupInstanceId", "string", "4+", nullable="4+"),
                        F("ClientId", "string"),
                        F("ClientHost", "string"),
                        F("MemberMetadata", "bytes"),
                        F("MemberAssignment", "bytes"),
                    ),
                ),
                F("AuthorizedOperations", "int32"),
            ),
        ),
    ),
)

# v5 only: the first version with TypesFilter (KIP-848), which lists share groups (KIP-932) on their
# own; librdkafka's list_consumer_groups lists no share groups at all.
LIST_GROUPS = Api(
    16,
    "ListGroups",
    5,
    5,
    "3+",
    request=(F("StatesFilter", "[]string", "4+"), F("TypesFilter", "[]string", "5+")),
    response=(
        F("ThrottleTimeMs", "int32", "1+"),
        F("ErrorCode", "int16"),
        F(
            "Groups",
            "[]ListedGroup",
            fields=(
                F("GroupId", "string"),
                F("ProtocolType", "string"),
                F("GroupState", "string", "4+"),
                F("GroupType", "string", "5+"),
            ),
        ),
    ),
)

# KIP-932 share groups. v0 was Kafka 4.0's early access, removed in 4.1: v1 is the only version a
# 4.1+ broker takes. A member has no instance id, regex, target assignment or member type.
SHARE_GROUP_DESCRIBE = Api(
    77,
    "ShareGroupDescribe",
    1,
    1,
    "0+",
    request=(F("GroupIds", "[]string"), F("IncludeAuthorizedOperations", "bool")),
    response=(
        F("ThrottleTimeMs", "int32"),
        F(
            "Groups",
            "[]DescribedGroup",
            fields=(
                F("ErrorCode", "int16"),
                F("ErrorMessage", "string", nullable="0+"),
                F("GroupId", "string"),
                F("GroupState", "string"),
                F("GroupEpoch", "int32"),
                F("AssignmentEpoch", "int32"),
                F("AssignorName", "string"),
                F(
                    "Members",
                    "[]Member",
                    fields=(
                        F("MemberId", "string"),
                        F("RackId", "string", nullable="0+"),
                        F("MemberEpoch", "int32"),
                        F("ClientId", "string"),
                        F("ClientHost", "string"),
                        F("SubscribedTopicNames", "[]string"),
                        F("Assignment", "Assignment", fields=(_TOPIC_PARTITIONS,)),
                    ),
                ),
                F("AuthorizedOperations", "int32"),
            ),
        ),
    ),
)

# KIP-932 share groups' progress: each share-partition's start offset (SPSO), the offset below which
# every record is acknowledged (or archived), -1 while the share-partition is not initialised. v1
# (KIP-1226) adds the broker's own Lag; v0 is what a 4.1/4.2 broker answers with. Topics null asks for
# every topic-partition the group has state for.
DESCRIBE_SHARE_GROUP_OFFSETS = Api(
    90,
    "DescribeShareGroupOffsets",
    0,
    1,
    "0+",
    request=(
        F(
            "Groups",
            "[]DescribeShareGroupOffsetsRequestGroup",
            fields=(
                F("GroupId", "string"),
                F(
                    "Topics",
                    "[]DescribeShareGroupOffsetsRequestTopic",
                    nullable="0+",
                    fields=(F("TopicName", "string"), F("Partitions", "[]int32")),
                ),
            ),
        ),
    ),
    response=(
        F("ThrottleTimeMs", "int32"),
        F(
            "Groups",
            "[]DescribeShareGroupOffsetsResponseGroup",
            fields=(
                F("GroupId", "string"),
                F(
                    "Topics",
                    "[]DescribeShareGroupOffsetsResponseTopic",
                    fields=(
                        F("TopicName", "string"),
                        F("TopicId", "uuid"),
                        F(
                            "Partitions",
                            "[]DescribeShareGroupOffsetsResponsePartition",
                            fields=(
                                F("PartitionIndex", "int32"),
                                F("StartOffset", "int64"),
                                F("LeaderEpoch", "int32"),
                                F("Lag", "int64", "1+"),
                                F("ErrorCode", "int16"),
                                F("ErrorMessage", "string", nullable="0+"),
                            ),
                        ),
                    ),
                ),
                F("ErrorCode", "int16"),
                F("ErrorMessage", "string", nullable="0+"),
            ),
        ),
    ),
)

# KIP-1071 streams groups (Kafka Streams on `group.protocol=streams`): v0, the only version (4.2-4.3).
# A member's assignment is tasks, (subtopology, partitions of its source topics), active, standby and
# warm-up; the group's topology names each subtopology's source, repartition and changelog topics.
_TASK_IDS = (F("SubtopologyId", "string"), F("Partitions", "[]int32"))
_STREAMS_ASSIGNMENT = (
    F("ActiveTasks", "[]TaskIds", fields=_TASK_IDS),
    F("StandbyTasks", "[]TaskIds", fields=_TASK_IDS),
    F("WarmupTasks", "[]TaskIds", fields=_TASK_IDS),
)
_KEY_VALUE = (F("Key", "string"), F("Value", "string"))
_TOPIC_INFO = (
    F("Name", "string"),
    F("Partitions", "int32"),
    F("ReplicationFactor", "int16"),
    F("TopicConfigs", "[]KeyValue", fields=_KEY_VALUE),
)
_TASK_OFFSET = (F("SubtopologyId", "string"), F("Partition", "int32"), F("Offset", "int64"))
STREAMS_GROUP_DESCRIBE = Api(
    89,
    "StreamsGroupDescribe",
    0,
    0,
    "0+",
    request=(F("GroupIds", "[]string"), F("IncludeAuthorizedOperations", "bool")),
    response=(
        F("ThrottleTimeMs", "int32"),
        F(
            "Groups",
            "[]DescribedGroup",
            fields=(
                F("ErrorCode", "int16"),
                F("ErrorMessage", "string", nullable="0+"),
                F("GroupId", "string"),
                F("GroupState", "string"),
                F("GroupEpoch", "int32"),
                F("AssignmentEpoch", "int32"),
                F(
                    "Topology",
                    "Topology",
                    nullable="0+",
                    fields=(
                        F("Epoch", "int32"),
                        F(
                            "Subtopologies",
                            "[]Subtopology",
                            nullable="0+",
                            fields=(
                                F("SubtopologyId", "string"),
                                F("SourceTopics", "[]string"),
                                F("RepartitionSinkTopics", "[]string"),
                                F("StateChangelogTopics", "[]TopicInfo", fields=_TOPIC_INFO),
                                F("RepartitionSourceTopics", "[]TopicInfo", fields=_TOPIC_INFO),
                            ),
                        ),
                    ),
                ),
                F(
                    "Members",
                    "[]Member",
                    fields=(
                        F("MemberId", "string"),
                        F("MemberEpoch", "int32"),
                        F("InstanceId", "string", nullable="0+"),
                        F("RackId", "string", nullable="0+"),
                        F("ClientId", "string"),
                        F("ClientHost", "string"),
                        F("TopologyEpoch", "int32"),
                        F("ProcessId", "string"),
                        F(
                            "UserEndpoint",
                            "Endpoint",
                            nullable="0+",
                            fields=(F("Host", "string"), F("Port", "uint16")),
                        ),
                        F("ClientTags", "[]KeyValue", fields=_KEY_VALUE),
                        F("TaskOffsets", "[]TaskOffset", fields=_TASK_OFFSET),
                        F("TaskEndOffsets", "[]TaskOffset", fields=_TASK_OFFSET),
                        F("Assignment", "Assignment", fields=_STREAMS_ASSIGNMENT),
                        F("TargetAssignment", "Assignment", fields=_STREAMS_ASSIGNMENT),
                        F("IsClassic", "bool"),
                    ),
                ),
                F("AuthorizedOperations", "int32"),
            ),
        ),
    ),
)

# v8-9 only: the first versions with many groups in one request (KIP-709), and the last that name
# topics. v10 names them by id, which would take a Metadata round trip to map back and loses the
# offsets of a deleted topic (no id left to name it by), which librdkafka's call does return.
OFFSET_FETCH = Api(
    9,
    "OffsetFetch",
    8,
    9,
    "6+",
    request=(
        F(
            "Groups",
            "[]OffsetFetchRequestGroup",
            "8+",
            fields=(
                F("GroupId", "string", "8+"),
                F("MemberId", "string", "9+", nullable="9+"),
                F("MemberEpoch", "int32", "9+"),
                F(
                    "Topics",
                    "[]OffsetFetchRequestTopics",
                    "8+",
                    nullable="8+",
                    fields=(
                        F("Name", "string", "8-9"),
                        F("TopicId", "uuid", "10+"),
                        F("PartitionIndexes", "[]int32", "8+"),
                    ),
                ),
            ),
        ),
        F("RequireStable", "bool", "7+"),
    ),
    response=(
        F("ThrottleTimeMs", "int32", "3+"),
        F(
            "Groups",
            "[]OffsetFetchResponseGroup",
            "8+",
            fields=(
                F("GroupId", "string", "8+"),
                F(
                    "Topics",
                    "[]OffsetFetchResponseTopics",
                    "8+",
                    fields=(
                        F("Name", "string", "8-9"),
                        F("TopicId", "uuid", "10+"),
                        F(
                            "Partitions",
                            "[]OffsetFetchResponsePartitions",
                            "8+",
                            fields=(
                                F("PartitionIndex", "int32", "8+"),
                                F("CommittedOffset", "int64", "8+"),
                                F("CommittedLeaderEpoch", "int32", "8+"),
                                F("Metadata", "string", "8+", nullable="8+"),
                                F("ErrorCode", "int16", "8+"),
                            ),
                        ),
                    ),
                ),
                F("ErrorCode", "int16", "8+"),
            ),
        ),
    ),
)

ALL_APIS = (
    API_VERSIONS,
    SASL_HANDSHAKE,
    SASL_AUTHENTICATE,
    FIND_COORDINATOR,
    METADATA,
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    SHARE_GROUP_DESCRIBE,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    STREAMS_GROUP_DESCRIBE,
    OFFSET_FETCH,
)
