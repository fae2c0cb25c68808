"""Which `__consumer_offsets` partition holds a group, and so which broker is its coordinator (the
partition's leader): Kafka's GroupMetadataManager.partitionFor,
Utils.abs(groupId.hashCode) % offsets.topic.num.partitions."""

from __future__ import annotations

OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions default


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_utils_abs(n: int) -> int:
    """org.apache.kafka.common.utils.Utils.abs: Integer.MIN_VALUE maps to 0 (Math.abs keeps it negative)."""
    return 0 if n == -(2**31) else abs(n)


def coordinator_partition(group_id: str, partitions: int = OFFSETS_TOPIC_PARTITIONS) -> int:
    """The `__consumer_offsets` partition holding the group: GroupMetadataManager.partitionFor."""
    return kafka_utils_abs(java_string_hash(group_id)) % partitions
