"""groupscope's describe-line `"broker"` blocks (coordinator_model/evidence.py `from_describe_json`)
built from decoded ConsumerGroupDescribe, ShareGroupDescribe and StreamsGroupDescribe answers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _partitions(assignment: dict[str, Any], names: Mapping[str, str]) -> list[list[Any]]:
    out = []
    for tp in assignment["topic_partitions"]:
        name = names.get(tp["topic_id"]) or tp["topic_name"]
        if not name:  # deleted since the coordinator answered: neither side knows the name any more
            continue
        out.extend([name, p] for p in tp["partitions"])
    return sorted(out)


def broker_block(group: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A decoded DescribedGroup (no error) -> the describe line's `"broker"` block."""
    members = [
        {
            "member_id": m["member_id"],
            "member_epoch": m["member_epoch"],
            "instance_id": m["instance_id"],
            "client_id": m["client_id"],
            "member_type": m.get("member_type", -1),  # v1+; -1 "unknown" as in Kafka's default
            "subscribed": sorted(m["subscribed_topic_names"]),
            "assignment": _partitions(m["assignment"], names),
            "target_assignment": _partitions(m["target_assignment"], names),
        }
        for m in group["members"]
    ]
    ids = {
        tp["topic_id"]
        for m in group["members"]
        for a in (m["assignment"], m["target_assignment"])
        for tp in (a or {}).get("topic_partitions", [])
    }
    return {
        "state": group["group_state"],
        "group_epoch": group["group_epoch"],
        "assignment_epoch": group["assignment_epoch"],
        "assignor": group["assignor_name"],
        "members": sorted(members, key=lambda m: m["member_id"]),
        # The group's records name topics by id only (Kafka 4.1+ no longer writes the
        # ConsumerGroupPartitionMetadata record that held the names): the model learns them here.
        "topic_ids": {tid: names[tid] for tid in sorted(ids) if tid in names},
    }


def share_broker_block(group: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A decoded ShareGroupDescribe DescribedGroup (no error) -> the describe line's `"broker"` block."""
    members = [
        {
            "member_id": m["member_id"],
            "member_epoch": m["member_epoch"],
            "rack_id": m["rack_id"],
            "client_id": m["client_id"],
            "client_host": m["client_host"],
            "subscribed": sorted(m["subscribed_topic_names"]),
            "assignment": _partitions(m["assignment"], names),
        }
        for m in group["members"]
    ]
    ids = {tp["topic_id"] for m in group["members"] for tp in m["assignment"]["topic_partitions"]}
    return {
        "state": group["group_state"],
        "group_epoch": group["group_epoch"],
        "assignment_epoch": group["assignment_epoch"],
        "assignor": group["assignor_name"],
        "members": sorted(members, key=lambda m: m["member_id"]),
        "topic_ids": {tid: names[tid] for tid in sorted(ids) if tid in names},
    }


def _tasks(tasks: Iterable[Mapping[str, Any]]) -> list[list[Any]]:
    """TaskIds -> [[subtopology id, [partition, ...]], ...], sorted (Kafka names a task
    "<subtopology>_<partition>")."""
    return sorted([t["subtopology_id"], sorted(t["partitions"])] for t in tasks if t["partitions"])


def streams_broker_block(group: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded StreamsGroupDescribe DescribedGroup (no error) -> the describe line's `"broker"` block:
    the group's state and epochs, its topology (null until a member brought one; subtopologies null
    while it is not ready: source topics missing or wrongly partitioned) and its members with their
    current and target tasks."""
    topology = group["topology"]
    subs = (topology or {}).get("subtopologies")
    members = [
        {
            "member_id": m["member_id"],
            "member_epoch": m["member_epoch"],
            "instance_id": m["instance_id"],
            "rack_id": m["rack_id"],
            "client_id": m["client_id"],
            "client_host": m["client_host"],
            "process_id": m["process_id"],
            "topology_epoch": m["topology_epoch"],
            "active": _tasks(m["assignment"]["active_tasks"]),
            "standby": _tasks(m["assignment"]["standby_tasks"]),
            "warmup": _tasks(m["assignment"]["warmup_tasks"]),
            "target_active": _tasks(m["target_assignment"]["active_tasks"]),
            "target_standby": _tasks(m["target_assignment"]["standby_tasks"]),
            "target_warmup": _tasks(m["target_assignment"]["warmup_tasks"]),
            "is_classic": m["is_classic"],
        }
        for m in group["members"]
    ]
    return {
        "state": group["group_state"],
        "group_epoch": group["group_epoch"],
        "assignment_epoch": group["assignment_epoch"],
        "topology": None
        if topology is None
        else {
            "epoch": topology["epoch"],
            "subtopologies": None
            if subs is None
            else [
                {
                    "id": st["subtopology_id"],
                    "source_topics": sorted(st["source_topics"]),
                    "repartition_sink_topics": sorted(st["repartition_sink_topics"]),
                    "changelog_topics": sorted(t["name"] for t in st["state_changelog_topics"]),
                    "repartition_source_topics": sorted(t["name"] for t in st["repartition_source_topics"]),
                }
                for st in sorted(subs, key=lambda x: x["subtopology_id"])
            ],
        },
        "members": sorted(members, key=lambda m: m["member_id"]),
    }
