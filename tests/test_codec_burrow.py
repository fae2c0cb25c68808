"""Public test vectors of another decoder: linkedin/Burrow's Go tests
(core/internal/consumer/kafka_client_test.go), ported with their expected values.

Burrow reads the key/value bodies after the int16 type/version; the vectors below are the same
byte strings with that prefix where Burrow's test strips it. Where Kafka's own reader differs from
Burrow (Burrow skips value v2 and record type 3), the test follows Kafka and says so.
"""

from __future__ import annotations

import pytest

from collectors.codec import records as r
from collectors.codec.decoder import decode_key, decode_record, decode_value
from collectors.codec.encoder import encode_record
from collectors.codec.errors import DecodeError

OFFSET_KEY_BODY = b"\x00\x09testgroup\x00\x09testtopic\x00\x00\x00\x0b"
OFFSET_VALUE_V0 = (
    b"\x00\x00" + b"\x00\x00\x00\x00\x00\x00\x20\xb4\x00\x08testdata\x00\x00\x00\x00\x00\x00\x06\x65"
)
OFFSET_VALUE_V3 = (
    b"\x00\x03"
    + b"\x00\x00\x00\x00\x00\x00\x20\xb4\x00\x00\x00\x00\x00\x08testdata\x00\x00\x00\x00\x00\x00\x06\x65"
)

# TestKafkaClient_decodeGroupMetadata (value v1, protocol type "consumer", one member)
GROUP_VALUE_V1 = (
    b"\x00\x01\x00\x08consumer\x00\x00\x00\x01\x00\x0ctestprotocol\x00\x0atestleader\x00\x00\x00\x01"
    b"\x00\x0ctestmemberid\x00\x0ctestclientid\x00\x0etestclienthost\x00\x00\x00\x04\x00\x00\x00\x08"
    b"\x00\x00\x00\x00\x00\x00\x00\x1a\x00\x00\x00\x00\x00\x01\x00\x06topic1\x00\x00\x00\x01\x00\x00\x00\x0b"
    b"\x00\x00\x00\x00"
)
# TestKafkaClient_decodeMetadataValueHeaderV2
GROUP_VALUE_V2 = (
    b"\x00\x02\x00"
    b"\x08consumer"
    b"\x00\x00\x00\x03\x00\x05range\x00,tLeader-a42d2baa-bfaa-4b96-9ea2-dee5f42b2ab2"
    b"\x00\x00\x01i_\x1cJJ\x00\x00\x00\x01"
    b"\x00,tLeader-a42d2baa-bfaa-4b96-9ea2-dee5f42b2ab2"
    b"\x00\x07tMember\x00\x0b/172.18.0.1\x00\x00u0\x00\x00u0\x00\x00\x00\x15\x00\x00\x00\x00\x00\x01\x00"
    b"\x09testtopic\x00\x00\x00\x00\x00\x00\x00=\x00\x00\x00\x00\x00\x01\x00"
    b"\x09testtopic\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03"
    b"\x00\x00\x00\x04\x00\x00\x00\x05\x00\x00\x00\x06\x00\x00\x00\x07\x00\x00\x00\x08\x00\x00\x00\x00"
)
# TestKafkaClient_decodeMetadataValueHeaderV3 + TestKafkaClient_decodeMetadataMemberV3
GROUP_VALUE_V3 = (
    b"\x00\x03\x00"
    b"\x08consumer"
    b"\x00\x00\x00\x01\x00\x12RoundRobinAssigner\x00,tLeader-a42d2baa-bfaa-4b96-9ea2-dee5f42b2ab2"
    b"\x00\x00\x01l\xdf5\x07k\x00\x00\x00\x01"
    b"\x00\x06member\xff\xff\x00\x06client\x00\x0d/10.10.10.100\xff\xff\xff\xff\x00\x00\x75\x30"
    b"\x00\x00\x00\x12\x00\x01\x00\x00\x00\x01\x00\x06topic1\x00\x00\x00\x00"
    b"\x00\x00\x00\x1a\x00\x01\x00\x00\x00\x01\x00\x06topic1\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"
)


@pytest.mark.parametrize("record_type", [0, 1])
def test_offset_key(record_type: int) -> None:
    rt, key = decode_key(record_type.to_bytes(2, "big") + OFFSET_KEY_BODY)
    assert rt == record_type
    assert key == r.OffsetCommitKey(group="testgroup", topic="testtopic", partition=11)


@pytest.mark.parametrize(
    "body, field",
    [
        (b"\x00\x09testg", "group"),
        (b"\x00\x09testgroup\x00\x09testto", "topic"),
        (b"\x00\x09testgroup\x00\x09testtopic\x00\x00", "partition"),
    ],
)
def test_offset_key_truncated(body: bytes, field: str) -> None:
    with pytest.raises(DecodeError) as err:
        decode_key(b"\x00\x01" + body)
    assert err.value.part == "key" and field in str(err.value)


def test_offset_value_v0() -> None:
    version, value = decode_value(1, OFFSET_VALUE_V0)
    assert version == 0
    assert (value.offset, value.metadata, value.commit_timestamp) == (8372, "testdata", 1637)
    assert value.leader_epoch == -1 and value.expire_timestamp == -1  # not in v0: Kafka's defaults


def test_offset_value_v3() -> None:
    version, value = decode_value(1, OFFSET_VALUE_V3)
    assert version == 3
    assert (value.offset, value.leader_epoch, value.metadata, value.commit_timestamp) == (
        8372,
        0,
        "testdata",
        1637,
    )


@pytest.mark.parametrize(
    "value, field",
    [
        (b"\x00\x00\x00\x00\x00\x00\x00", "offset"),
        (b"\x00\x00\x00\x00\x00\x00\x00\x00\x20\xb4\x00\x08tes", "metadata"),
        (b"\x00\x00\x00\x00\x00\x00\x00\x00\x20\xb4\x00\x08testdata\x00\x00\x00\x00", "commitTimestamp"),
        (b"\x00\x03\x00\x00\x00\x00\x00\x00\x20\xb4\x00\x00\x00", "offset"),  # leaderEpoch read with offset
        (b"\x00\x03\x00\x00\x00\x00\x00\x00\x20\xb4\x00\x00\x00\x00\x00\x08tes", "metadata"),
        (
            b"\x00\x03\x00\x00\x00\x00\x00\x00\x20\xb4\x00\x00\x00\x00\x00\x08testdata\x00\x00\x00\x00",
            "commitTimestamp",
        ),
    ],
)
def test_offset_value_truncated(value: bytes, field: str) -> None:
    with pytest.raises(DecodeError) as err:
        decode_value(1, value)
    assert err.value.part == "value" and field in str(err.value)


def test_offset_record_of_process_consumer_offsets_message() -> None:
    rec = decode_record(b"\x00\x01" + OFFSET_KEY_BODY, OFFSET_VALUE_V0, partition=0, offset=8232)
    assert rec.key.group == "testgroup" and rec.value.offset == 8372 and rec.value.commit_timestamp == 1637
    assert encode_record(rec) == (b"\x00\x01" + OFFSET_KEY_BODY, OFFSET_VALUE_V0)


def test_offset_value_v2_is_kafkas_v2() -> None:
    # Burrow's "bad value version" vector: version 2 with the v0 layout. Kafka's v2 has exactly
    # those fields (offset, metadata, commitTimestamp), so Kafka, and we, read it.
    version, value = decode_value(1, b"\x00\x02" + OFFSET_VALUE_V0[2:])
    assert version == 2 and value.offset == 8372 and value.commit_timestamp == 1637


@pytest.mark.parametrize("key, value", [(b"\x00", OFFSET_VALUE_V0), (b"\x00\x01" + OFFSET_KEY_BODY, b"\x00")])
def test_records_too_short(key: bytes, value: bytes) -> None:
    with pytest.raises(DecodeError) as err:
        decode_record(key, value, partition=0, offset=8232)
    assert "record 0/8232" in str(err.value)


def test_group_metadata_v1() -> None:
    rec = decode_record(b"\x00\x02\x00\x09testgroup", GROUP_VALUE_V1)
    assert rec.key == r.GroupMetadataKey("testgroup")
    g = rec.value
    assert (g.protocol_type, g.generation, g.protocol, g.leader) == (
        "consumer",
        1,
        "testprotocol",
        "testleader",
    )
    assert g.current_state_timestamp == -1  # v2+
    (m,) = g.members
    assert (m.member_id, m.client_id, m.client_host) == ("testmemberid", "testclientid", "testclienthost")
    assert (m.rebalance_timeout, m.session_timeout) == (4, 8)
    assert m.group_instance_id is None
    # Empty subscription bytes do not parse (no version): kept as bytes, the record still decodes.
    assert m.subscription == b"" and m.subscription_decoded is None
    assert [(tp.topic, tp.partitions) for tp in m.assignment_decoded.assigned_partitions] == [
        ("topic1", [11])
    ]
    assert encode_record(rec)[1] == GROUP_VALUE_V1


def test_group_metadata_v2() -> None:
    version, g = decode_value(2, GROUP_VALUE_V2)
    assert version == 2
    assert (g.protocol_type, g.generation, g.protocol) == ("consumer", 3, "range")
    assert g.leader == "tLeader-a42d2baa-bfaa-4b96-9ea2-dee5f42b2ab2"
    assert g.current_state_timestamp == 1552078883402
    (m,) = g.members
    assert (m.client_id, m.client_host, m.rebalance_timeout, m.session_timeout) == (
        "tMember",
        "/172.18.0.1",
        30000,
        30000,
    )
    assert m.subscription_decoded.topics == ["testtopic"] and m.subscription_decoded.user_data == b""
    assert m.assignment_decoded.assigned_partitions[0].partitions == list(range(9))


def test_group_metadata_v3_member() -> None:
    version, g = decode_value(2, GROUP_VALUE_V3)
    assert version == 3
    assert (g.generation, g.protocol, g.current_state_timestamp) == (1, "RoundRobinAssigner", 1567112890219)
    (m,) = g.members
    assert (m.member_id, m.group_instance_id, m.client_id, m.client_host) == (
        "member",
        None,
        "client",
        "/10.10.10.100",
    )
    assert (m.rebalance_timeout, m.session_timeout) == (-1, 30000)
    assert m.assignment_decoded.version == 1
    assert m.assignment_decoded.assigned_partitions[0].topic == "topic1"
    assert m.assignment_decoded.assigned_partitions[0].partitions == [0]
    # Burrow's subscription here says version 1 but stops before ownedPartitions: Kafka's reader
    # fails on it and kafka-dump-log keeps the bytes; so do we, without failing the record.
    assert m.subscription_decoded is None and len(m.subscription) == 18


@pytest.mark.parametrize(
    "value",
    [
        b"\x00\x01\x00\x08test",
        b"\x00\x01\x00\x08testtype\x00\x00\x00\x01\x00\x0ctestprotocol\x00\x0atestleader\x00\x00\x00",
        GROUP_VALUE_V1[:-30],
    ],
)
def test_group_metadata_truncated(value: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_record(b"\x00\x02\x00\x09testgroup", value)


def test_group_key_truncated() -> None:
    with pytest.raises(DecodeError):
        decode_record(b"\x00\x02\x00\x09testg", GROUP_VALUE_V1)


def test_group_metadata_other_protocol_type_keeps_bytes() -> None:
    value = GROUP_VALUE_V1.replace(b"\x00\x08consumer", b"\x00\x08connectx")
    _, g = decode_value(2, value)
    assert g.protocol_type == "connectx"
    assert g.members[0].assignment_decoded is None and g.members[0].assignment.startswith(b"\x00\x00")


def test_record_type_3_is_kip848() -> None:
    # Burrow skips record type 3; in Kafka 4.0 it is ConsumerGroupMetadata (key groupId; bytes
    # after the key's fields are ignored, as Kafka's reader ignores them).
    rec = decode_record(b"\x00\x03" + OFFSET_KEY_BODY, b"\x00\x00\x00\x00\x00\x07\x00")
    assert rec.key == r.ConsumerGroupMetadataKey("testgroup") and rec.value.epoch == 7
