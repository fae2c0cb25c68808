"""The lines the Admin poller writes to its topic, in the shapes of a capture's files
(describe.jsonl, end_offsets.jsonl; coordinator_model.evidence reads them): a group's describe, a
share group's, a share group's start offsets, its log-end offsets, and a refusal by the broker's ACLs.
"""

from __future__ import annotations

from typing import Any

from coordinator_model.streams.group import topics_read

STATE_NAMES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
    "ASSIGNING": "Assigning",
    "RECONCILING": "Reconciling",
}


def enum_name(v: Any) -> str:
    return str(getattr(v, "name", v) or "")


# GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED: an ACL withholds the answer
AUTHORIZATION_FAILED = (30, 29)


def denial(exc: BaseException) -> str | None:
    """Why the broker refused a group's describe, when an ACL did (else None: another error)."""
    from confluent_kafka import KafkaError, KafkaException

    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(err, KafkaError) and err.code() in AUTHORIZATION_FAILED:
        return f"{err.name()}: {err.str()}"
    return None


def denied_line(ts: int, group: str, what: str, why: str) -> dict[str, Any]:
    """The Admin topic's line of a refusal (coordinator_model.evidence.AdminDenied); `why` empty: the
    refusal is over."""
    return {"ts": ts, "group": group, "denied": what, "error": why}


def end_offset_lines(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """An admin topic line's log-end offsets in a capture's end_offsets.jsonl shape, one line per
    partition (the poller sends a group's as one line); [] for any other line."""
    if "end_offsets" in obj:
        return [
            {"ts": obj["ts"], "topic": t, "partition": p, "end_offset": off, "group": obj.get("group")}
            for t, p, off in obj["end_offsets"]
        ]
    return [obj] if "end_offset" in obj else []


def describe_json(d: Any, ts: int) -> dict[str, Any]:
    """A confluent-kafka ConsumerGroupDescription in the shape of a capture's describe.jsonl line."""
    coord = getattr(d, "coordinator", None)
    gtype = enum_name(getattr(d, "type", None)).lower() or "classic"
    members = []
    for m in d.members or []:
        assignment = getattr(m, "assignment", None)
        tps = getattr(assignment, "topic_partitions", None) or []
        target = getattr(m, "target_assignment", None)
        ttps = getattr(target, "topic_partitions", None) if target is not None else None
        if gtype != "consumer":
            ttps = None  # classic members have no target assignment; a non-empty one reads as KIP-848
        members.append(
            {
                "member_id": m.member_id,
                "group_instance_id": getattr(m, "group_instance_id", None),
                "client_id": m.client_id,
                "host": m.host,
                "assignment": sorted([tp.topic, tp.partition] for tp in tps),
                "target_assignment": sorted([tp.topic, tp.partition] for tp in ttps)
                if ttps is not None
                else None,
            }
        )
    return {
        "ts": ts,
        "group": d.group_id,
        "type": "consumer" if gtype == "consumer" else "classic",
        "state": STATE_NAMES.get(enum_name(d.state), enum_name(d.state).title()),
        "assignor": d.partition_assignor or "",
        "coordinator": {"id": coord.id, "host": coord.host, "port": coord.port} if coord else None,
        "simple": bool(d.is_simple_consumer_group),
        "members": members,
    }


def classic_describe_json(group: dict[str, Any], node: Any, ts: int) -> dict[str, Any]:
    """A classic group's describe.jsonl line from the protocol client's DescribeGroups answer
    (`KafkaProtocolClient.describe_groups`), field for field what `describe_json` makes of
    librdkafka's: the assignor is the protocol in use, a group without protocol type is a simple
    (offsets-only) one, and a member's assignment is read only for protocol type "consumer" (other
    protocols' bytes are theirs), and only while Stable (Kafka sends it then alone)."""
    from collectors.codec.decoder import decode_assignment

    consumer = group["protocol_type"] == "consumer"
    members = []
    for m in group["members"]:
        asg = decode_assignment(m["member_assignment"]) if consumer and m["member_assignment"] else None
        tps = sorted([tp.topic, p] for tp in asg.assigned_partitions for p in tp.partitions) if asg else []
        members.append(
            {
                "member_id": m["member_id"],
                "group_instance_id": m.get("group_instance_id"),
                "client_id": m["client_id"],
                "host": m["client_host"],
                "assignment": tps,
                "target_assignment": None,
            }
        )
    return {
        "ts": ts,
        "group": group["group_id"],
        "type": "classic",
        "state": group["group_state"] or "Unknown",
        "assignor": group["protocol_data"] or "",
        "coordinator": _node(node),
        "simple": not group["protocol_type"],
        "members": members,
    }


def share_describe_json(group: str, block: dict[str, Any], ts: int, node: Any = None) -> dict[str, Any]:
    """A share group's describe.jsonl line from its ShareGroupDescribe "broker" block
    (collectors.kafka_protocol `share_broker_block`): type "share", the members as the block has them
    (no instance id, no target assignment: a share group's members take their partitions at once)."""
    return {
        "ts": ts,
        "group": group,
        "type": "share",
        "state": block["state"],
        "assignor": block["assignor"],
        "coordinator": _node(node),
        "simple": False,
        "members": [
            {
                "member_id": m["member_id"],
                "group_instance_id": None,
                "client_id": m["client_id"],
                "host": m["client_host"],
                "assignment": m["assignment"],
                "target_assignment": None,
            }
            for m in block["members"]
        ],
        "broker": block,
    }


def _node(node: Any) -> dict[str, Any] | None:
    """A coordinator node (kafka_protocol Node) as a describe line says it; None: not known."""
    return {"id": node.node_id, "host": node.host, "port": node.port} if node is not None else None


def task_partitions(tasks: list[list[Any]], topology: dict[str, Any] | None) -> list[list[Any]]:
    """The topic-partitions a streams member's tasks read (coordinator_model.streams `topics_read`),
    from the JSON of a describe. Unknown while the topology is (null, or its subtopologies not ready
    yet)."""
    reads = {
        st["id"]: topics_read(st["source_topics"], st["repartition_source_topics"])
        for st in ((topology or {}).get("subtopologies") or [])
    }
    return [
        list(tp) for tp in sorted({(t, p) for sub, parts in tasks for t in reads.get(sub, ()) for p in parts})
    ]


def streams_describe_json(group: str, block: dict[str, Any], ts: int, node: Any = None) -> dict[str, Any]:
    """A streams group's describe.jsonl line from its StreamsGroupDescribe "broker" block
    (collectors.kafka_protocol `streams_broker_block`): type "streams", each member's assignment the
    topic-partitions its active tasks read (`task_partitions`), its tasks themselves in the block."""
    topology = block.get("topology")
    return {
        "ts": ts,
        "group": group,
        "type": "streams",
        "state": block["state"],
        "assignor": "",
        "coordinator": _node(node),
        "simple": False,
        "members": [
            {
                "member_id": m["member_id"],
                "group_instance_id": m["instance_id"],
                "client_id": m["client_id"],
                "host": m["client_host"],
                "assignment": task_partitions(m["active"], topology),
                "target_assignment": task_partitions(m["target_active"], topology),
            }
            for m in block["members"]
        ],
        "broker": block,
    }


def share_offsets_line(
    group: str,
    offsets: list[tuple[str, int, int, int]],
    ends: dict[tuple[str, int], int],
    ts: int,
) -> dict[str, Any]:
    """A share group's progress per partition as a "committed" line marked with source
    "share_start_offsets" (coordinator_model.evidence SHARE_START_OFFSETS), so the model's offsets
    store takes it as the group's position and its lag is the log-end offset minus that position.

    `offsets` are collectors.kafka_protocol `describe_share_group_offsets`' (topic, partition, start
    offset, lag). The position is the one the broker's lag implies, log-end minus lag (`ends`, read in
    the same poll), never below the start offset: Kafka's lag (DescribeShareGroupOffsets v1, KIP-1226,
    what kafka-share-groups.sh prints as LAG) also leaves out the records acknowledged past the start
    offset, which the share coordinator persists behind the acknowledgements (an idle, caught-up group
    keeps a start offset a batch back). Without the broker's lag (v0, or -1) or the log-end offset the
    start offset itself is the position. A start offset of -1 (share-partition not initialised) is no
    progress: left out."""
    committed = []
    for t, p, start, lag in sorted(offsets):
        if start < 0:
            continue
        end = ends.get((t, p))
        position = max(start, end - lag) if end is not None and lag >= 0 else start
        committed.append([t, p, position])
    return {"ts": ts, "group": group, "committed": committed, "source": "share_start_offsets"}


def log_ends_lines(ends: dict[tuple[str, int], int], ts: int) -> dict[str, dict[str, Any]]:
    """The cluster's log-end offsets as one line per topic (group ""), by topic."""
    rows: dict[str, list[list[Any]]] = {}
    for (t, p), off in sorted(ends.items()):
        rows.setdefault(t, []).append([t, p, off])
    return {t: {"ts": ts, "group": "", "end_offsets": r} for t, r in rows.items()}
