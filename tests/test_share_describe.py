"""KIP-932 share groups read from the Admin API: the broker's ShareGroupDescribe (API key 77,
collectors.kafka_protocol) as the Admin poller's describe line of type "share", that line as
evidence, and the share group's model (coordinator_model/share/) rebuilt from it: state, group and
assignment epochs, members with their member epochs and partitions. Without servers; the same on a
real broker, judged by Kafka's own kafka-share-groups.sh, is in test_share_groups.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from collectors.kafka_protocol import GroupError, codec
from collectors.kafka_protocol.client import share_broker_block
from collectors.kafka_protocol.messages import SHARE_GROUP_DESCRIBE
from collectors.pipeline.admin_lines import share_describe_json
from collectors.pipeline.admin_poller import AdminPoller
from coordinator_model.evidence import DescribeSnapshot, from_describe_json
from coordinator_model.rebuild import rebuild

T = 1_700_000_000_000
TOPIC_ID = "bhmqV4K2TEe9s1FkC9wc5w"


def described_group(
    group: str = "sg", state: str = "Stable", epoch: int = 3, assignment_epoch: int = 3, members: Any = None
) -> dict[str, Any]:
    """A decoded ShareGroupDescribe v1 DescribedGroup, as the codec gives it."""
    if members is None:
        members = [("m-two", "sc-2", epoch, [1, 2]), ("m-one", "sc-1", epoch, [0])]
    return {
        "error_code": 0,
        "error_message": None,
        "group_id": group,
        "group_state": state,
        "group_epoch": epoch,
        "assignment_epoch": assignment_epoch,
        "assignor_name": "simple",
        "members": [
            {
                "member_id": mid,
                "rack_id": None,
                "member_epoch": member_epoch,
                "client_id": client,
                "client_host": "/10.0.0.7",
                "subscribed_topic_names": ["orders"],
                "assignment": {
                    "topic_partitions": [{"topic_id": TOPIC_ID, "topic_name": "orders", "partitions": parts}]
                },
            }
            for mid, client, member_epoch, parts in members
        ],
        "authorized_operations": -(2**31),
    }


def document(evidence: list[Any], group: str = "sg") -> dict[str, Any]:
    """The group's document in its stored (JSON) form."""
    engine = rebuild(evidence)[group]
    return engine.document_json() if hasattr(engine, "document_json") else engine.document()


def line_of(group: dict[str, Any], ts: int = T) -> dict[str, Any]:
    return share_describe_json(group["group_id"], share_broker_block(group, {TOPIC_ID: "orders"}), ts)


def test_the_broker_answer_decodes_into_the_describe_lines_broker_block() -> None:
    """ShareGroupDescribe v1 bytes -> the codec -> the "broker" block -> the poller's line."""
    answer = {"throttle_time_ms": 0, "groups": [described_group()]}
    frame = codec.encode_response(SHARE_GROUP_DESCRIBE, 1, 7, answer)
    decoded = codec.decode_response(SHARE_GROUP_DESCRIBE, 1, frame)
    block = share_broker_block(decoded["groups"][0], {TOPIC_ID: "orders"})
    assert block == {
        "state": "Stable",
        "group_epoch": 3,
        "assignment_epoch": 3,
        "assignor": "simple",
        "members": [
            {
                "member_id": "m-one",
                "member_epoch": 3,
                "rack_id": None,
                "client_id": "sc-1",
                "client_host": "/10.0.0.7",
                "subscribed": ["orders"],
                "assignment": [["orders", 0]],
            },
            {
                "member_id": "m-two",
                "member_epoch": 3,
                "rack_id": None,
                "client_id": "sc-2",
                "client_host": "/10.0.0.7",
                "subscribed": ["orders"],
                "assignment": [["orders", 1], ["orders", 2]],
            },
        ],
        "topic_ids": {TOPIC_ID: "orders"},
    }
    line = share_describe_json("sg", block, T)
    assert (line["type"], line["state"], line["broker"]) == ("share", "Stable", block)
    assert [
        (m["member_id"], m["host"], m["assignment"], m["target_assignment"]) for m in line["members"]
    ] == [
        ("m-one", "/10.0.0.7", [["orders", 0]], None),
        ("m-two", "/10.0.0.7", [["orders", 1], ["orders", 2]], None),
    ]


def test_a_share_groups_describe_line_rebuilds_its_document() -> None:
    ev = from_describe_json(line_of(described_group(epoch=4, assignment_epoch=4)))
    assert isinstance(ev, DescribeSnapshot)
    assert (ev.type, ev.broker_state, ev.group_epoch, ev.assignment_epoch) == ("share", "Stable", 4, 4)
    assert {m.member_id: m.member_epoch for m in ev.members} == {"m-one": 4, "m-two": 4}
    doc = document([ev])
    assert (doc["type"], doc["protocol_type"], doc["state"], doc["protocol"]) == (
        "share",
        "share",
        "Stable",
        "simple",
    )
    assert (doc["group_epoch"], doc["assignment_epoch"]) == (4, 4)
    assert [
        (
            m["member_id"],
            m["client_id"],
            m["client_host"],
            m["member_epoch"],
            m["assignment"],
            m["subscription"],
        )
        for m in doc["members"]
    ] == [
        ("m-one", "sc-1", "/10.0.0.7", 4, [["orders", 0]], ["orders"]),
        ("m-two", "sc-2", "/10.0.0.7", 4, [["orders", 1], ["orders", 2]], ["orders"]),
    ]
    assert all(m["target_assignment"] is None for m in doc["members"])  # a share group has none
    assert [b["state"] for b in doc["timeline"]] == ["Stable"]
    assert doc["sources"] == ["describe"]
    assert any("share group commits no offsets" in n for n in doc["inferred"])


def test_an_empty_share_group_keeps_its_epochs() -> None:
    """Left by all its members: Empty, the group epoch bumped by the leaves, the assignment epoch
    that of the last assignment (Kafka does not run the assignor for an empty group)."""
    line = line_of(described_group(state="Empty", epoch=5, assignment_epoch=3, members=[]))
    doc = document([from_describe_json(line)])
    assert (doc["type"], doc["state"], doc["group_epoch"], doc["assignment_epoch"]) == (
        "share",
        "Empty",
        5,
        3,
    )
    assert doc["members"] == []


def test_a_later_share_describe_replaces_the_earlier_one() -> None:
    first = line_of(described_group(epoch=3, assignment_epoch=3), T)
    left = described_group(epoch=4, assignment_epoch=4, members=[("m-one", "sc-1", 4, [0, 1, 2])])
    doc = document([from_describe_json(first), from_describe_json(line_of(left, T + 5_000))])
    assert (doc["group_epoch"], doc["assignment_epoch"]) == (4, 4)
    assert [(m["member_id"], m["member_epoch"], len(m["assignment"])) for m in doc["members"]] == [
        ("m-one", 4, 3)
    ]


# -- the Admin poller ---------------------------------------------------------------------------
class Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self, timeout: float | None = None) -> Any:
        return self.value


class FakeAdmin:
    """librdkafka's AdminClient as the poller uses it, on a cluster whose only group is a share group
    (librdkafka 2.16 lists no share groups: ListGroups in the protocol client does)."""

    def __init__(self) -> None:
        self.described: list[list[str]] = []

    def list_topics(self, timeout: float) -> None:
        return None

    def list_consumer_groups(self, request_timeout: float) -> Done:
        return Done(SimpleNamespace(valid=[], errors=[]))

    def describe_consumer_groups(self, groups: list[str], request_timeout: float) -> dict[str, Done]:
        self.described.append(list(groups))
        return {}

    def list_offsets(self, tps: dict[Any, Any], request_timeout: float) -> dict[Any, Done]:
        return {tp: Done(SimpleNamespace(offset=100 + tp.partition)) for tp in tps}


class FakeProtocol:
    def __init__(self, blocks: dict[str, dict[str, Any]]) -> None:
        self.blocks = blocks
        self.listed = 0
        self.described: list[list[str]] = []
        self.committed_asked: list[str] = []

    def list_share_groups(self, deadline: Any) -> tuple[dict[str, str], list[int]]:
        self.listed += 1
        return {g: b.get("state", "Stable") for g, b in self.blocks.items()}, []

    def describe_share(self, groups: list[str], deadline: Any) -> dict[str, dict[str, Any]]:
        self.described.append(list(groups))
        return {g: self.blocks[g] for g in groups}

    def fetch_committed(self, groups: list[str], deadline: Any) -> dict[str, Any]:
        self.committed_asked.extend(groups)
        return {}

    def close(self) -> None: ...


class Sink:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def produce(self, topic: str, key: bytes | None = None, value: bytes | None = None) -> None:
        import json

        self.lines.append(json.loads(value or b"null"))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        return 0


def poller_with(blocks: dict[str, dict[str, Any]]) -> tuple[AdminPoller, FakeProtocol]:
    cfg = SimpleNamespace(kafka={"bootstrap.servers": "b:9092"}, admin_topic="gs-admin", admin_resend_s=60.0)
    poller = AdminPoller(cfg, store=None)
    fake = FakeProtocol(blocks)
    poller._protocol, poller._protocol_conf = fake, dict(cfg.kafka)  # type: ignore[assignment]
    return poller, fake


def test_the_poller_describes_share_groups_and_fetches_no_offsets_for_them() -> None:
    block = share_broker_block(described_group(), {TOPIC_ID: "orders"})
    poller, fake = poller_with({"sg": block})
    admin, sink = FakeAdmin(), Sink()
    assert poller.poll_once(admin, sink) == 1
    describes = [x for x in sink.lines if x.get("group") == "sg" and "members" in x]
    assert len(describes) == 1 and describes[0]["type"] == "share" and describes[0]["broker"] == block
    assert fake.described == [["sg"]] and admin.described == []  # not asked of DescribeConsumerGroups
    assert fake.committed_asked == []  # a share group commits no offsets: no OffsetFetch
    assert not any("committed" in x for x in sink.lines)
    ends = [x for x in sink.lines if "end_offsets" in x]
    assert ends == [
        {
            "ts": ends[0]["ts"],
            "group": "sg",
            "end_offsets": [["orders", 0, 100], ["orders", 1, 101], ["orders", 2, 102]],
        }
    ]
    # steady and unchanged: not described again at the next poll (as any steady group)
    poller.poll_once(admin, sink)
    assert fake.described == [["sg"]]
    # in motion between polls: the hot describe asks ShareGroupDescribe, not DescribeConsumerGroups
    poller.hot.saw("sg", "Stable", changed=True, now_ms=int(__import__("time").time() * 1000))
    assert poller.poll_hot(admin, sink) == 1
    assert fake.described == [["sg"], ["sg"]] and admin.described == []


def test_a_refused_share_describe_is_a_denied_line_and_a_vanished_group_nothing() -> None:
    refused = GroupError(30, "Not authorized").as_block()
    gone = GroupError(69, "Group gone not found.").as_block()
    poller, _fake = poller_with({"locked": refused, "gone": gone})
    sink = Sink()
    poller.poll_once(FakeAdmin(), sink)
    assert [x for x in sink.lines if x.get("group") in ("locked", "gone")] == [
        {
            "ts": sink.lines[0]["ts"],
            "group": "locked",
            "denied": "describe",
            "error": "GROUP_AUTHORIZATION_FAILED: Not authorized",
        }
    ]
    ev = from_describe_json(sink.lines[0])
    assert (type(ev).__name__, ev.what) == ("AdminDenied", "describe")
