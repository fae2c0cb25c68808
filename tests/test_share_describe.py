"""KIP-932 share groups read from the Admin API: the broker's ShareGroupDescribe (API key 77,
collectors.kafka_protocol) as the Admin poller's describe line of type "share", that line as
evidence, and the share group's model (coordinator_model/share/) rebuilt from it: state, group and
assignment epochs, members with their member epochs and partitions. Their progress: the broker's
DescribeShareGroupOffsets (API key 90) as the poller's "committed" line marked "share_start_offsets",
and the document's lag from it (log-end offset minus share-partition start offset). Without servers;
the same on a real broker, judged by Kafka's own kafka-share-groups.sh, is in test_share_groups.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from collectors.kafka_protocol import GroupError, codec
from collectors.kafka_protocol.client import start_offsets
from collectors.kafka_protocol.describe_lines import share_broker_block
from collectors.kafka_protocol.messages import DESCRIBE_SHARE_GROUP_OFFSETS, SHARE_GROUP_DESCRIBE
from collectors.pipeline.admin_lines import end_offset_lines, share_describe_json, share_offsets_line
from collectors.pipeline.admin_poller import AdminPoller
from coordinator_model.evidence import (
    SHARE_START_OFFSETS,
    CommittedSnapshot,
    DescribeSnapshot,
    from_describe_json,
    from_end_offset_json,
)
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
    def __init__(self, blocks: dict[str, dict[str, Any]], starts: dict[str, Any] | None = None) -> None:
        self.blocks = blocks
        self.starts = starts or {}  # group -> [(topic, partition, start offset, lag)] or GroupError
        self.listed = 0
        self.described: list[list[str]] = []
        self.committed_asked: list[str] = []
        self.starts_asked: list[list[str]] = []

    def list_typed_groups(self, types: Any, deadline: Any) -> tuple[dict[str, tuple[str, str]], list[int]]:
        self.listed += 1
        return {g: ("share", b.get("state", "Stable")) for g, b in self.blocks.items()}, []

    def describe_share(
        self, groups: list[str], deadline: Any, coordinators: Any = None
    ) -> dict[str, dict[str, Any]]:
        self.described.append(list(groups))
        return {g: self.blocks[g] for g in groups}

    def fetch_committed(self, groups: list[str], deadline: Any) -> dict[str, Any]:
        self.committed_asked.extend(groups)
        return {}

    def describe_share_group_offsets(self, groups: list[str], deadline: Any) -> dict[str, Any]:
        self.starts_asked.append(list(groups))
        return {g: self.starts.get(g, []) for g in groups}

    def close(self) -> None: ...


class Sink:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def produce(
        self, topic: str, key: bytes | None = None, value: bytes | None = None, **_kw: object
    ) -> None:
        import json

        self.lines.append(json.loads(value or b"null"))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        return 0


def poller_with(
    blocks: dict[str, dict[str, Any]], starts: dict[str, Any] | None = None, offsets_readable: bool = False
) -> tuple[AdminPoller, FakeProtocol]:
    cfg = SimpleNamespace(kafka={"bootstrap.servers": "b:9092"}, admin_topic="gs-admin", admin_resend_s=60.0)
    poller = AdminPoller(cfg, store=None, offsets_readable=offsets_readable)
    fake = FakeProtocol(blocks, starts)
    poller.link.kept, poller.link.conf = fake, dict(cfg.kafka)  # type: ignore[assignment]
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
    assert fake.starts_asked == [["sg"]]  # its progress: DescribeShareGroupOffsets (none here yet)
    assert [x["committed"] for x in sink.lines if "committed" in x] == [[]]
    ends = [x for x in sink.lines if "end_offsets" in x]
    assert ends == [
        {
            "ts": ends[0]["ts"],
            "group": "",  # the cluster's, one line per topic
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
    # every full poll; not a hot poll (no log-end offsets there to place the broker's lag against)
    assert fake.starts_asked == [["sg"], ["sg"]]


def test_a_refused_share_describe_is_a_denied_line_and_a_vanished_group_nothing() -> None:
    refused = GroupError(30, "Not authorized").as_block()
    gone = GroupError(69, "Group gone not found.").as_block()
    starts = {"locked": GroupError(30, "Not authorized"), "gone": GroupError(69, "Group gone not found.")}
    poller, _fake = poller_with({"locked": refused, "gone": gone}, starts)
    sink = Sink()
    poller.poll_once(FakeAdmin(), sink)
    assert [x for x in sink.lines if x.get("group") in ("locked", "gone")] == [
        {
            "ts": sink.lines[0]["ts"],
            "group": "locked",
            "denied": what,
            "error": "GROUP_AUTHORIZATION_FAILED: Not authorized",
        }
        for what in ("describe", "offsets")  # its start offsets are refused as well
    ]
    ev = from_describe_json(sink.lines[0])
    assert (type(ev).__name__, ev.what) == ("AdminDenied", "describe")


# -- share-partition start offsets (DescribeShareGroupOffsets, API key 90) -----------------------
def offsets_group(group: str = "sg", parts: Any = None, error: int = 0) -> dict[str, Any]:
    """A decoded DescribeShareGroupOffsets v1 response group: (partition, start offset, lag, error)."""
    if parts is None:
        parts = [(0, 40, 60, 0), (1, 101, 0, 0), (2, -1, -1, 0), (3, 0, 0, 29)]
    return {
        "group_id": group,
        "topics": [
            {
                "topic_name": "orders",
                "topic_id": TOPIC_ID,
                "partitions": [
                    {
                        "partition_index": p,
                        "start_offset": start,
                        "leader_epoch": 0,
                        "lag": lag,
                        "error_code": err,
                        "error_message": "Not authorized" if err else None,
                    }
                    for p, start, lag, err in parts
                ],
            }
        ],
        "error_code": error,
        "error_message": None,
    }


def test_start_offsets_decode_into_a_committed_line_and_the_documents_lag() -> None:
    """DescribeShareGroupOffsets v1 bytes -> start offsets and the broker's lag -> the poller's
    "committed" line marked share_start_offsets, at the position the broker's lag implies (log-end
    minus lag, never below the start offset) -> evidence -> the document, whose lag is the broker's
    (kafka-share-groups.sh's LAG); a start offset of -1 (not initialised) is no progress; a
    partition answered with an error is left out; the note says where lag comes from."""
    answer = {"throttle_time_ms": 0, "groups": [offsets_group()]}
    frame = codec.encode_response(DESCRIBE_SHARE_GROUP_OFFSETS, 1, 9, answer)
    decoded = codec.decode_response(DESCRIBE_SHARE_GROUP_OFFSETS, 1, frame)
    starts = start_offsets(decoded["groups"][0])
    assert starts == [("orders", 0, 40, 60), ("orders", 1, 101, 0), ("orders", 2, -1, -1)]
    ends_now = {("orders", 0): 100, ("orders", 1): 101, ("orders", 2): 102}
    line = share_offsets_line("sg", starts, ends_now, T + 1)
    assert line == {
        "ts": T + 1,
        "group": "sg",
        "committed": [["orders", 0, 40], ["orders", 1, 101]],  # 100 - 60 and 101 - 0
        "source": "share_start_offsets",
    }
    # records acknowledged past the start offset: the broker's lag is below log-end - start offset
    acked = share_offsets_line("sg", [("orders", 0, 40, 25)], ends_now, T + 1)
    assert acked["committed"] == [["orders", 0, 75]]
    # no log-end offset, or no broker lag (v0): the start offset itself
    assert share_offsets_line("sg", [("orders", 0, 40, 25)], {}, T + 1)["committed"] == [["orders", 0, 40]]
    assert share_offsets_line("sg", [("orders", 0, 40, -1)], ends_now, T + 1)["committed"] == [
        ["orders", 0, 40]
    ]
    ev = from_describe_json(line)
    assert isinstance(ev, CommittedSnapshot) and ev.source == SHARE_START_OFFSETS
    ends = [
        from_end_offset_json({"ts": T + 1, "topic": "orders", "partition": p, "end_offset": e})
        for p, e in ((0, 100), (1, 101), (2, 102))
    ]
    doc = document([from_describe_json(line_of(described_group())), ev, *ends])
    lag = {
        (p["topic"], p["partition"]): (p["committed"], p["end_offset"], p["lag"])
        for p in doc["lag"]["partitions"]
    }
    assert lag == {
        ("orders", 0): (40, 100, 60),
        ("orders", 1): (101, 101, 0),
        ("orders", 2): (None, 102, None),  # held by m-two, its share-partition not initialised
    }
    assert doc["lag"]["total"] == 60
    assert SHARE_START_OFFSETS in doc["sources"]
    assert not any("commits no offsets" in n for n in doc["inferred"])
    assert any("the broker's share-partition lag" in n for n in doc["inferred"])


def test_a_v0_answer_has_no_broker_lag() -> None:
    """Kafka 4.1/4.2 answer v0 (no Lag field): the start offsets are all there is, lag -1."""
    group = offsets_group(parts=[(0, 7, 0, 0)])
    frame = codec.encode_response(
        DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, {"throttle_time_ms": 0, "groups": [group]}
    )
    decoded = codec.decode_response(DESCRIBE_SHARE_GROUP_OFFSETS, 0, frame)
    assert "lag" not in decoded["groups"][0]["topics"][0]["partitions"][0]
    assert start_offsets(decoded["groups"][0]) == [("orders", 0, 7, -1)]


def test_later_start_offsets_move_the_lag() -> None:
    describe = from_describe_json(line_of(described_group()))
    first = from_describe_json(share_offsets_line("sg", [("orders", 0, 10, -1)], {}, T + 1))
    later = from_describe_json(share_offsets_line("sg", [("orders", 0, 90, -1)], {}, T + 5_000))
    ends = [
        from_end_offset_json({"ts": ts, "topic": "orders", "partition": 0, "end_offset": 100})
        for ts in (T + 1, T + 5_000)
    ]
    doc = document([describe, first, later, *ends])
    part = next(p for p in doc["lag"]["partitions"] if p["partition"] == 0)
    assert (part["committed"], part["lag"]) == (90, 10)


def test_the_poller_sends_start_offsets_and_their_partitions_end_offsets() -> None:
    """Every share group's start offsets at every full poll, as a "committed" line marked
    share_start_offsets, also when __consumer_offsets is read (it holds no share-group progress);
    log-end offsets for the partitions its members hold and those its start offsets name; a hot
    describe brings its start offsets too."""
    block = share_broker_block(described_group(members=[("m-one", "sc-1", 3, [0])]), {TOPIC_ID: "orders"})
    starts = {"sg": [("orders", 0, 40, 60), ("orders", 1, 101, 0), ("orders", 2, -1, -1)]}
    poller, fake = poller_with({"sg": block}, starts, offsets_readable=True)
    admin, sink = FakeAdmin(), Sink()
    poller.poll_once(admin, sink)
    committed = [x for x in sink.lines if "committed" in x]
    assert committed == [
        {
            "ts": committed[0]["ts"],
            "group": "sg",
            "committed": [["orders", 0, 40], ["orders", 1, 101]],
            "source": "share_start_offsets",
        }
    ]
    assert fake.committed_asked == []  # no OffsetFetch for a share group
    ends = [x for x in sink.lines if "end_offsets" in x]
    assert [x["end_offsets"] for x in ends] == [[["orders", 0, 100], ["orders", 1, 101], ["orders", 2, 102]]]
    # the lines rebuild the group with its lag
    evidence = [
        from_describe_json(x) for x in sink.lines if x.get("group") == "sg" and "end_offsets" not in x
    ]
    evidence += [from_end_offset_json(y) for x in ends for y in end_offset_lines(x)]
    doc = document(evidence)
    assert [(p["partition"], p["committed"], p["lag"]) for p in doc["lag"]["partitions"]] == [
        (0, 40, 60),
        (1, 101, 0),
    ]
    # unchanged: held back at the next poll; moved: sent at once
    sink.lines.clear()
    poller.poll_once(admin, sink)
    assert not any("committed" in x for x in sink.lines)
    fake.starts["sg"] = [("orders", 0, 100, 0), ("orders", 1, 101, 0), ("orders", 2, 5, 97)]
    poller.poll_once(admin, sink)
    assert [x["committed"] for x in sink.lines if "committed" in x] == [
        [["orders", 0, 100], ["orders", 1, 101], ["orders", 2, 5]]
    ]


def test_a_failing_start_offsets_call_leaves_the_describe_alone(caplog) -> None:
    """A broker without DescribeShareGroupOffsets (before Kafka 4.1): warned once, describes go on."""

    class Unsupported(FakeProtocol):
        def describe_share_group_offsets(self, groups: list[str], deadline: Any) -> dict[str, Any]:
            raise RuntimeError("DescribeShareGroupOffsets not supported")

    block = share_broker_block(described_group(), {TOPIC_ID: "orders"})
    poller, _ = poller_with({"sg": block})
    fake = Unsupported({"sg": block})
    poller.link.kept = fake  # type: ignore[assignment]
    sink = Sink()
    with caplog.at_level("WARNING", logger="groupscope.admin"):
        poller.poll_once(FakeAdmin(), sink)
    assert [x["type"] for x in sink.lines if "members" in x] == ["share"]
    assert not any("committed" in x for x in sink.lines)
    assert [r.getMessage() for r in caplog.records if "start offsets" in r.getMessage()] == [
        "share groups' start offsets not read (DescribeShareGroupOffsets): "
        "DescribeShareGroupOffsets not supported"
    ]
