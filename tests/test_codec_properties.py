"""Property tests of the codec.

- encode then decode is the identity for every record type and every value version (strategies
  are derived from the schema table, so a new version is covered as soon as it is in the table):
  offset commits, classic groups, KIP-848, share-group and streams-group records;
- tagged fields are written and printed only when they are not their default, and tagged fields
  the table does not know are kept and printed (`_unknownTaggedFields`);
- the new record classes go through routing and the coordinator model without an error;
- consumer-protocol payloads and StickyAssignor userData round-trip inside GroupMetadata;
- arbitrary bytes, mutated real records and every truncation of real records only ever raise
  DecodeError.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.codec import records as r
from collectors.codec import schema
from collectors.codec.compiler import uuid_str
from collectors.codec.decoder import decode_record, decode_sticky_user_data
from collectors.codec.encoder import (
    encode_assignment,
    encode_key,
    encode_record,
    encode_sticky_user_data,
    encode_subscription,
    encode_value,
)
from collectors.codec.errors import DecodeError
from collectors.codec.render import record_to_json

CAPTURES = Path(__file__).parent / "fixtures" / "real-kafka-4.0"
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_INT = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1),
}
_text = st.text(max_size=12)
_bytes = st.binary(max_size=24)
_uuid = st.binary(min_size=16, max_size=16).map(uuid_str)


def _field(f: schema.Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if f.type in _INT:
        s = _INT[f.type]
    elif f.type == "string":
        s = _text
    elif f.type == "bytes":
        s = _bytes
    elif f.type == "uuid":
        s = _uuid
    elif f.type in ("[]int32", "[]int16"):
        s = st.lists(_INT[f.type[2:]], max_size=6)
    elif f.type == "[]string":
        s = st.lists(_text, max_size=4)
    elif f.type.startswith("[]"):
        assert f.struct is not None
        s = st.lists(struct_strategy(f.struct, version, flexible), max_size=3)
    else:
        assert f.struct is not None
        s = struct_strategy(f.struct, version, flexible)
    return st.one_of(st.none(), s) if f.nullable_in(version) else s


def _unknown_tags(st_: schema.Struct) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    known = {f.tag for f in st_.fields if f.tag is not None}
    tags = st.lists(st.integers(0, 300).filter(lambda t: t not in known), max_size=2, unique=True)
    return tags.flatmap(lambda ts: st.tuples(*[st.tuples(st.just(t), _bytes) for t in sorted(ts)]))


def struct_strategy(st_: schema.Struct, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """Objects of a struct as the decoder builds them for `version`: absent fields at their default."""
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in st_.fields:
        if f.present_in(version) and (f.tag is None or flexible):
            kwargs[f.attr] = _field(f, version, flexible)
        else:
            kwargs[f.attr] = st.builds(f.default_value)  # a fresh default (lists, empty structs)
    if st_.unknown_tags_attr is not None:
        kwargs[st_.unknown_tags_attr] = _unknown_tags(st_) if flexible else st.just(())
    if st_.version_attr is not None:
        kwargs[st_.version_attr] = st.just(version)
    return st.builds(st_.cls, **kwargs)


def _record_strategy(record_type: int, version: int) -> st.SearchStrategy[r.OffsetsRecord]:
    key_msg, value_msg = schema.RECORDS[record_type]
    key = struct_strategy(key_msg.struct, record_type, False)
    value = struct_strategy(value_msg.struct, version, value_msg.is_flexible(version))
    if record_type == r.GROUP_METADATA:
        # Not "consumer": the member payloads stay plain bytes (payloads have their own test).
        value = value.filter(lambda v: v.protocol_type != "consumer")
    return st.builds(
        r.OffsetsRecord,
        partition=st.integers(0, 49),
        offset=st.integers(0, 2**40),
        timestamp=st.integers(0, 2**42),
        record_type=st.just(record_type),
        key=key,
        value_version=st.just(version),
        value=value,
    )


CASES = [(rt, v) for rt, (_, value) in sorted(schema.RECORDS.items()) for v in value.versions]


def test_every_record_type_and_version_is_covered() -> None:
    # Kafka 4.3.1's group coordinator: 0-8 and 16 (offsets, classic, KIP-848), 10-15 (share
    # groups), 17 and 19-23 (streams groups); 9 and 18 are not defined any more.
    assert {rt for rt, _ in CASES} == {*range(0, 9), *range(10, 18), *range(19, 24)}
    assert [v for rt, v in CASES if rt == 1] == [0, 1, 2, 3, 4]
    assert [v for rt, v in CASES if rt == 2] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("record_type, version", CASES, ids=[f"type{rt}-v{v}" for rt, v in CASES])
def test_encode_then_decode_is_identity(record_type: int, version: int) -> None:
    @PROPS
    @given(rec=_record_strategy(record_type, version), tombstone=st.booleans())
    def check(rec: r.OffsetsRecord, tombstone: bool) -> None:
        if tombstone:
            rec.value, rec.value_version = None, None
        key, value = encode_record(rec)
        back = decode_record(key, value, rec.partition, rec.offset, rec.timestamp)
        assert back == rec
        assert back.is_tombstone == tombstone
        assert encode_record(back) == (key, value)
        json.dumps(record_to_json(back))  # always renderable

    check()


@PROPS
@given(
    subs=st.lists(
        st.integers(0, 3).flatmap(
            lambda v: struct_strategy(schema.CONSUMER_PROTOCOL_SUBSCRIPTION.struct, v, False)
        ),
        min_size=1,
        max_size=3,
    ),
    asgs=st.lists(
        st.integers(0, 3).flatmap(
            lambda v: struct_strategy(schema.CONSUMER_PROTOCOL_ASSIGNMENT.struct, v, False)
        ),
        min_size=3,
        max_size=3,
    ),
    version=st.integers(0, 4),
)
def test_consumer_protocol_payloads_round_trip_inside_group_metadata(subs, asgs, version) -> None:
    members = [
        r.MemberMetadata(
            member_id=f"m{i}",
            group_instance_id=None,
            client_id="c",
            client_host="/127.0.0.1",
            rebalance_timeout=300000 if version >= 1 else -1,
            session_timeout=6000,
            subscription=encode_subscription(sub),
            assignment=encode_assignment(asgs[i]),
        )
        for i, sub in enumerate(subs)
    ]
    value = r.GroupMetadataValue("consumer", 3, "range", "m0", 1 if version >= 2 else -1, members)
    rec = decode_record(encode_key(r.GroupMetadataKey("g")), encode_value(2, value, version))
    for member, sub, asg in zip(rec.value.members, subs, asgs, strict=False):
        assert member.subscription_decoded == sub
        assert member.assignment_decoded == asg
        rendered = record_to_json(rec)["value"]["data"]["members"][0]["subscription"]
        assert isinstance(rendered, dict) and "topics" in rendered


_TP = st.builds(r.TopicPartition, topic=_text, partitions=st.lists(_INT["int32"], max_size=5))


@PROPS
@given(
    data=st.one_of(
        st.builds(
            r.StickyAssignorUserData,
            version=st.just(1),
            previous_assignment=st.lists(_TP, max_size=3),
            generation=_INT["int32"],
        ),
        st.builds(
            r.StickyAssignorUserData,
            version=st.just(0),
            previous_assignment=st.lists(_TP, min_size=1, max_size=3),
            generation=st.just(-1),
        ),
    )
)
def test_sticky_user_data_round_trip(data: r.StickyAssignorUserData) -> None:
    decoded = decode_sticky_user_data(encode_sticky_user_data(data))
    # A v0 payload can also read as v1 when its last 4 bytes happen to parse as a generation;
    # Kafka tries v1 first too. What matters: the bytes are reproduced.
    assert decoded is not None
    assert encode_sticky_user_data(decoded) == encode_sticky_user_data(data)
    if data.version == 1:
        assert decoded == data


# ----------------------------------------------------------------------------------------------
# Bad input only ever raises DecodeError.
def _real_records() -> list[tuple[bytes, bytes | None]]:
    """One record of each (type, version, tombstone) of the captures, plus the largest GroupMetadata."""
    seen: dict[tuple[int, int | None], tuple[bytes, bytes | None]] = {}
    largest: tuple[bytes, bytes | None] | None = None
    for path in sorted(CAPTURES.glob("*/offsets.jsonl")):
        for line in path.read_text().splitlines():
            cap = json.loads(line)
            key = base64.b64decode(cap["key"])
            value = None if cap["value"] is None else base64.b64decode(cap["value"])
            rt = int.from_bytes(key[:2], "big")
            ver = None if value is None else int.from_bytes(value[:2], "big")
            seen.setdefault((rt, ver), (key, value))
            if rt == 2 and value is not None and (largest is None or len(value) > len(largest[1] or b"")):
                largest = (key, value)
    assert largest is not None
    return [*seen.values(), largest]


REAL = _real_records()


def _only_decode_error(key: bytes, value: bytes | None) -> None:
    try:
        rec = decode_record(key, value, 7, 42)
    except DecodeError as exc:
        assert exc.partition == 7 and exc.offset == 42 and exc.part in ("key", "value")
        return
    json.dumps(record_to_json(rec))


def test_every_truncation_of_real_records_raises_only_decode_error() -> None:
    failures = 0
    for key, value in REAL:
        for cut in range(len(key)):
            with pytest.raises(DecodeError):
                decode_record(key[:cut], value)
        if value is not None:
            for cut in range(len(value)):
                try:
                    decode_record(key, value[:cut], 7, 42)
                except DecodeError as exc:
                    failures += 1
                    assert exc.part == "value" and exc.offset == 42
                    # one precise message: the innermost field, not a chain of wrapped errors
                    assert "DecodeError" not in str(exc) and str(exc).count("record 7/42") == 1
    assert failures > 0


@PROPS
@given(key=st.binary(max_size=64), value=st.one_of(st.none(), st.binary(max_size=256)))
def test_arbitrary_bytes_only_raise_decode_error(key: bytes, value: bytes | None) -> None:
    _only_decode_error(key, value)


@PROPS
@given(
    record_type=st.sampled_from([*range(0, 25), 99]),
    version=st.integers(-1, 5),
    key=st.binary(max_size=40),
    value=st.binary(max_size=300),
)
def test_known_prefixes_with_arbitrary_bodies_only_raise_decode_error(
    record_type, version, key, value
) -> None:
    _only_decode_error(record_type.to_bytes(2, "big") + key, version.to_bytes(2, "big", signed=True) + value)


@PROPS
@given(data=st.data())
def test_mutated_real_records_only_raise_decode_error(data: st.DataObject) -> None:
    key, value = data.draw(st.sampled_from(REAL))
    blob = bytearray(value if value is not None else key)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    if value is not None:
        _only_decode_error(key, bytes(blob))
    else:
        _only_decode_error(bytes(blob), None)


@pytest.mark.parametrize(
    "value",
    [
        # GroupMetadataValue v3 announcing 2**31-1 members
        b"\x00\x03\x00\x08consumer\x00\x00\x00\x01\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff\xff\xff",
        # ... announcing a 2**31-1 byte subscription
        b"\x00\x01\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\x00\x00\x00\x01\x00\x01m\x00\x00\x00\x00"
        b"\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff\xff\xff",
    ],
)
def test_huge_lengths_fail_fast(value: bytes) -> None:
    with pytest.raises(DecodeError) as err:
        decode_record(b"\x00\x02\x00\x01g", value, 3, 4)
    assert "exceed" in str(err.value) or "truncated" in str(err.value)


@pytest.mark.parametrize("record_type", [9, 18, 24, 99])
def test_unknown_record_types_keep_their_bytes(record_type: int) -> None:
    # 9: Kafka 4.0's early-access ShareGroupPartitionMetadata, which 4.1 dropped; 18: not used;
    # 24, 99: whatever a newer Kafka adds.
    key = record_type.to_bytes(2, "big") + b"\x00\x05share\x00\x00\x00\x01"
    value = b"\x00\x00\x01\x02\x03"
    rec = decode_record(key, value)
    assert rec.key == r.UnknownKey(record_type, key) and rec.key.group == "share"
    assert rec.value == r.UnknownValue(0, value)
    assert encode_record(rec) == (key, value)
    assert record_to_json(rec)["key"]["data"]["unknown"] is True


def test_memoryview_input_and_missing_key() -> None:
    key = encode_key(r.OffsetCommitKey("g", "t", 1))
    value = encode_value(1, r.OffsetCommitValue(3, 0, "", 4))
    assert decode_record(memoryview(key), bytearray(value)).value.offset == 3
    with pytest.raises(DecodeError, match="no key"):
        decode_record(None, value, 1, 2)  # type: ignore[arg-type]


def test_unknown_value_version_is_a_decode_error() -> None:
    with pytest.raises(DecodeError) as err:
        decode_record(b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00", b"\x00\x05" + b"\x00" * 30, 1, 2)
    assert "unknown version 5 of OffsetCommitValue" in str(err.value)
    key = encode_key(r.StreamsGroupTopologyKey("s"))
    with pytest.raises(DecodeError) as err:
        decode_record(key, b"\x00\x01" + b"\x00" * 30, 1, 3)
    assert "unknown version 1 of StreamsGroupTopologyValue (record type 23)" in str(err.value)


def test_kafka_4_0_share_group_metadata_is_a_clear_decode_error() -> None:
    # Kafka 4.0's early-access ShareGroupMetadataValue v0 was the epoch alone; 4.1 added MetadataHash
    # without a new version. Such a record cannot be read as 4.1+ (nor can Kafka 4.1+ read it).
    key = encode_key(r.ShareGroupMetadataKey("share-g"))
    with pytest.raises(DecodeError) as err:
        decode_record(key, b"\x00\x00" + b"\x00\x00\x00\x05" + b"\x00", 4, 5)
    # (epoch and metadataHash are read as one fixed-width run: the message names the run's first field)
    assert "record 4/5, value" in str(err.value) and "ShareGroupMetadataValue." in str(err.value)
    assert "truncated" in str(err.value)


@PROPS
@given(
    protocol=st.sampled_from(["range", "sticky", "cooperative-sticky"]),
    payloads=st.lists(st.tuples(_bytes, st.binary(max_size=80)), min_size=1, max_size=4),
    prefix=st.sampled_from([b"", b"\x00\x00", b"\x00\x01", b"\x00\x03", b"\x00\x07", b"\xff\xff"]),
)
def test_arbitrary_member_payloads_never_fail_the_record(protocol, payloads, prefix) -> None:
    members = [
        r.MemberMetadata(f"m{i}", None, "c", "h", 1, 2, prefix + sub, prefix + asg)
        for i, (sub, asg) in enumerate(payloads)
    ]
    value = r.GroupMetadataValue("consumer", 1, protocol, "m0", 5, members)
    rec = decode_record(encode_key(r.GroupMetadataKey("g")), encode_value(2, value, 3))
    for m in rec.value.members:
        sub, asg = m.subscription_decoded, m.assignment_decoded
        assert sub is None or isinstance(sub, r.ConsumerProtocolSubscription)
        assert asg is None or isinstance(asg, r.ConsumerProtocolAssignment)
    rendered = record_to_json(rec)["value"]["data"]["members"]
    for m, out in zip(rec.value.members, rendered, strict=True):
        # decoded -> object; not decoded -> Kafka keeps the bytes, printed as base64
        assert isinstance(out["subscription"], dict) == (m.subscription_decoded is not None)
        if m.subscription_decoded is None:
            assert base64.b64decode(out["subscription"]) == m.subscription


def test_keys_are_frozen_and_hashable() -> None:
    key = r.OffsetCommitKey("g", "t", 1)
    assert {key: 1}[r.OffsetCommitKey("g", "t", 1)] == 1
    with pytest.raises(AttributeError):
        key.group = "other"  # type: ignore[misc]
    decoded = decode_record(encode_key(key), None).key
    assert decoded == key and hash(decoded) == hash(key)


# ----------------------------------------------------------------------------------------------
# Tagged fields: written and printed when not their default; unknown ones kept and printed.
def _tagged(st_: schema.Struct, version: int) -> list[schema.Field]:
    return [f for f in st_.fields if f.tag is not None and f.present_in(version)]


TAGGED_CASES = [
    (rt, v)
    for rt, v in CASES
    if schema.RECORDS[rt][1].is_flexible(v) and _tagged(schema.RECORDS[rt][1].struct, v)
]


def test_tagged_cases_cover_the_fields_added_after_kafka_4_0() -> None:
    names = {f.name for rt, v in TAGGED_CASES for f in _tagged(schema.RECORDS[rt][1].struct, v)}
    assert {"topicId", "metadataHash", "assignmentTimestamp", "validatedTopologyEpoch"} <= names
    assert "lastAssignmentConfigs" in names and "classicMemberMetadata" in names


@pytest.mark.parametrize(
    "record_type, version", TAGGED_CASES, ids=[f"type{rt}-v{v}" for rt, v in TAGGED_CASES]
)
def test_tagged_fields_are_printed_when_not_their_default(record_type: int, version: int) -> None:
    msg = schema.RECORDS[record_type][1]

    @PROPS
    @given(rec=_record_strategy(record_type, version))
    def check(rec: r.OffsetsRecord) -> None:
        data = record_to_json(rec)["value"]["data"]
        for f in _tagged(msg.struct, version):
            value = getattr(rec.value, f.attr)
            assert (f.name in data) == (value != f.default_value()), (f.name, value)
        unknown = rec.value.unknown_tagged_fields
        expected = [{"tag": t, "data": d.hex()} for t, d in unknown]
        assert data.get("_unknownTaggedFields", []) == expected

    check()


@PROPS
@given(
    epoch=_INT["int32"],
    metadata_hash=_INT["int64"],
    unknown=st.lists(st.tuples(st.integers(1, 2000), _bytes), max_size=3, unique_by=lambda t: t[0]),
)
def test_unknown_tagged_fields_are_kept_and_printed(epoch, metadata_hash, unknown) -> None:
    tags = tuple(sorted(unknown))
    value = r.ConsumerGroupMetadataValue(epoch, metadata_hash, tags)
    key, raw = encode_record(r.OffsetsRecord(0, 0, 0, 3, r.ConsumerGroupMetadataKey("g"), 0, value))
    rec = decode_record(key, raw)
    assert rec.value == value and encode_record(rec) == (key, raw)
    data = record_to_json(rec)["value"]["data"]
    assert data.get("_unknownTaggedFields", []) == [{"tag": t, "data": d.hex()} for t, d in tags]
    assert ("metadataHash" in data) == (metadata_hash != 0)


@pytest.mark.parametrize(
    "tag_bytes",
    [
        b"\x00\x00\x00\x00\x00\x00\x00\x07\x01",  # 9 bytes: not one int64
        b"\x00\x00\x00\x07",  # 4 bytes: not one int64
        b"\x00\x00\x00\x00\x00\x00\x00\x00",  # the default (0), which Kafka does not write
    ],
)
def test_known_tag_whose_bytes_are_not_one_value_is_kept_raw(tag_bytes: bytes) -> None:
    # ConsumerGroupMetadataValue v0: epoch 5, then one tagged field: tag 0 (metadataHash)
    raw = b"\x00\x00" + b"\x00\x00\x00\x05" + b"\x01\x00" + bytes([len(tag_bytes)]) + tag_bytes
    key = encode_key(r.ConsumerGroupMetadataKey("g"))
    rec = decode_record(key, raw)
    assert rec.value.metadata_hash == 0 and rec.value.unknown_tagged_fields == ((0, tag_bytes),)
    assert encode_record(rec) == (key, raw)
    data = record_to_json(rec)["value"]["data"]
    assert data == {"epoch": 5, "_unknownTaggedFields": [{"tag": 0, "data": tag_bytes.hex()}]}


def test_classic_member_metadata_null_is_the_one_byte_tag_kafka_writes() -> None:
    """The schema's default for classicMemberMetadata is an empty struct, so Kafka writes a KIP-848
    member's null as tag 0 with the single byte 0 (and prints it as null); a record without the tag
    reads as the empty struct, which is not printed."""
    value = r.ConsumerGroupMemberMetadataValue(None, None, "c", "/h", ["t"], None, 1000, "uniform")
    raw = encode_value(5, value)
    assert raw is not None and raw.endswith(b"\x01\x00\x01\x00")  # 1 tag: tag 0, 1 byte, null
    key = encode_key(r.ConsumerGroupMemberMetadataKey("g", "m"))
    rec = decode_record(key, raw)
    assert rec.value.classic_member_metadata is None and rec.value.unknown_tagged_fields == ()
    assert record_to_json(rec)["value"]["data"]["classicMemberMetadata"] is None
    without_tag = decode_record(key, raw[:-4] + b"\x00")
    assert without_tag.value.classic_member_metadata == r.ClassicMemberMetadata(0, [])
    assert "classicMemberMetadata" not in record_to_json(without_tag)["value"]["data"]
    classic = r.ClassicMemberMetadata(45000, [r.ClassicProtocol("range", b"\x00\x03")])
    value.classic_member_metadata = classic
    back = decode_record(key, encode_value(5, value))
    assert back.value.classic_member_metadata == classic
    assert record_to_json(back)["value"]["data"]["classicMemberMetadata"] == {
        "sessionTimeoutMs": 45000,
        "supportedProtocols": [{"name": "range", "metadata": "AAM="}],
    }


def test_share_and_streams_records_render_kafkas_field_names() -> None:
    topic_id = uuid_str(bytes(range(16)))
    share = r.ShareGroupCurrentMemberAssignmentValue(3, 2, 0, [r.TopicIdPartitions(topic_id, [0, 1])])
    rec = decode_record(
        encode_key(r.ShareGroupCurrentMemberAssignmentKey("sg", "m1")), encode_value(14, share), 1, 2, 3
    )
    assert rec.value == share
    assert record_to_json(rec)["key"] == {"type": "14", "data": {"groupId": "sg", "memberId": "m1"}}
    assert record_to_json(rec)["value"]["data"] == {
        "memberEpoch": 3,
        "previousMemberEpoch": 2,
        "state": 0,
        "assignedPartitions": [{"topicId": topic_id, "partitions": [0, 1]}],
    }
    member = r.StreamsGroupMemberMetadataValue(
        None, "rack", "c", "/h", 30000, 2, "p1", r.Endpoint("host", 65535), [r.KeyValue("zone", "a")]
    )
    rec = decode_record(encode_key(r.StreamsGroupMemberMetadataKey("app", "m")), encode_value(19, member))
    assert rec.value == member
    data = record_to_json(rec)["value"]["data"]
    assert data["userEndpoint"] == {"host": "host", "port": 65535}
    assert data["clientTags"] == [{"key": "zone", "value": "a"}]
    current = r.StreamsGroupCurrentMemberAssignmentValue(
        4, 3, 0, [r.TaskIds("0", [0, 1], [4, 4])], [], [], [], [], []
    )
    rec = decode_record(
        encode_key(r.StreamsGroupCurrentMemberAssignmentKey("app", "m")), encode_value(22, current)
    )
    assert rec.value == current
    assert record_to_json(rec)["value"]["data"]["activeTasks"] == [
        {"subtopologyId": "0", "partitions": [0, 1], "assignmentEpochs": [4, 4]}
    ]
    topology = r.StreamsGroupTopologyValue(
        1,
        [
            r.Subtopology(
                "0",
                ["in"],
                [],
                [r.StreamsTopicInfo("app-store-changelog", 0, 3, [r.KeyValue("cleanup.policy", "compact")])],
                ["app-repartition"],
                [],
                [r.CopartitionGroup([0], [], [1])],
            )
        ],
    )
    rec = decode_record(encode_key(r.StreamsGroupTopologyKey("app")), encode_value(23, topology))
    assert rec.value == topology
    sub = record_to_json(rec)["value"]["data"]["subtopologies"][0]
    assert sub["stateChangelogTopics"][0]["replicationFactor"] == 3
    assert sub["copartitionGroups"] == [
        {"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [1]}
    ]


# ----------------------------------------------------------------------------------------------
# The new record classes go through the pipeline's routing and the coordinator model.
NEW_TYPES = sorted(rt for rt in schema.RECORDS if 10 <= rt <= 15 or rt >= 17)


@pytest.mark.parametrize("record_type", NEW_TYPES)
def test_share_and_streams_records_are_routed_to_the_model(record_type: int) -> None:
    """Share group records (10-15) become the share group's evidence (the KIP-848 shape, of kind
    `share`) and make the group a share group; streams group records (17, 19-23) the streams group's,
    and make it a streams group."""
    from collectors.pipeline.route import decode_one, route_one
    from coordinator_model.engine import GroupEngine
    from coordinator_model.evidence import UnknownRecord

    @settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(rec=_record_strategy(record_type, 0), tombstone=st.booleans())
    def check(rec: r.OffsetsRecord, tombstone: bool) -> None:
        if tombstone:
            rec.value, rec.value_version = None, None
        key, value = encode_record(rec)
        group = rec.key.group
        assert route_one("offsets", "__consumer_offsets", 3, 7, 1000, key, value) == [(group, 1000, 0)]
        ((g, ts, _rank, ev),) = decode_one("offsets", "__consumer_offsets", 3, 7, 1000, key, value)
        assert (g, ts) == (group, 1000)
        engine = GroupEngine(group)
        engine.apply(ev)
        if record_type <= 15:
            assert not isinstance(ev, UnknownRecord) and ev.kind == "share", ev
            doc = engine.document_json()
            assert (doc["type"], doc["protocol_type"]) == ("share", "share")
            assert doc["state"] in ("Empty", "Stable", "Dead", None), doc["state"]  # None: no member known
        else:
            assert not isinstance(ev, UnknownRecord), ev
            doc = engine.document_json()
            assert (doc["type"], doc["protocol_type"]) == ("streams", "streams")
            streams_states = ("Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead", None)
            assert doc["state"] in streams_states, doc["state"]

    check()
