"""Group descriptions as JSON-shaped dicts (the `groupscope assign` / `whatif` FILE format,
docs/assign-format.md) to GroupSpec. Every problem becomes an AssignorError with a one-line message.

This is the input format, not the model's group document: a document becomes one through
coordinator_model.whatif.whatif_input_from_group_document, which reads it as a GroupDocument."""

from __future__ import annotations

from typing import Any

from coordinator_model.assignors.spec import (
    DEFAULT_GENERATION,
    AssignorError,
    GroupSpec,
    MemberSpec,
    TopicPartition,
    validate_group,
)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AssignorError(f"{what} must be an integer, got {value!r}")
    return value


def parse_partitions(raw: Any) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise AssignorError('"partitions" must be an object {topic: partition count}')
    counts: dict[str, int] = {}
    for t, n in raw.items():
        n = _int(n, f"partition count of topic {t!r}")
        if n < 0:
            raise AssignorError(f"partition count of topic {t!r} is negative ({n})")
        counts[str(t)] = n
    return counts


def parse_partition_racks(raw: Any) -> dict[str, list[list[str]]]:
    """{"t0": [["a", "b"], ["b", "c"], ...]}: the racks of each partition's replicas, in partition order."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise AssignorError('"partition_racks" must be an object {topic: [[replica racks of p0], ...]}')
    out: dict[str, list[list[str]]] = {}
    for t, per in raw.items():
        if not isinstance(per, list) or not all(
            isinstance(r, list) and all(isinstance(x, str) for x in r) for r in per
        ):
            raise AssignorError(f"partition_racks of topic {t!r} must be a list of lists of rack names")
        out[str(t)] = per
    return out


def parse_owned(raw: Any, member_id: str) -> tuple[TopicPartition, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise AssignorError(f'member {member_id!r}: "owned" must be a list of [topic, partition]')
    owned: list[TopicPartition] = []
    for item in raw:
        if not isinstance(item, list | tuple) or len(item) != 2 or not isinstance(item[0], str):
            raise AssignorError(f"member {member_id!r}: owned entry {item!r} is not [topic, partition]")
        p = _int(item[1], f"member {member_id!r}: owned partition")
        if p < 0:
            raise AssignorError(f"member {member_id!r}: owned partition {item!r} is negative")
        owned.append((item[0], p))
    return tuple(owned)


def parse_member(raw: Any) -> MemberSpec:
    if not isinstance(raw, dict):
        raise AssignorError(f"member entry {raw!r} is not an object")
    mid = raw.get("member_id")
    if not isinstance(mid, str) or not mid:
        raise AssignorError(f"member entry without a string member_id: {raw!r}"[:200])
    topics = raw.get("topics")
    if topics is None:
        topics = []
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise AssignorError(f'member {mid!r}: "topics" must be a list of topic names')
    gen = raw.get("generation")
    gen = DEFAULT_GENERATION if gen is None else _int(gen, f"member {mid!r}: generation")
    rack = raw.get("rack")
    instance = raw.get("group_instance_id")
    return MemberSpec(
        member_id=mid,
        topics=tuple(dict.fromkeys(topics)),
        owned=parse_owned(raw.get("owned"), mid),
        generation=gen,
        rack=rack if isinstance(rack, str) and rack else None,
        group_instance_id=instance if isinstance(instance, str) and instance else None,
    )


def parse_group(doc: Any) -> GroupSpec:
    """{"members": [...], "partitions": {...}} -> a validated GroupSpec."""
    if not isinstance(doc, dict):
        raise AssignorError("group description must be a JSON object with members and partitions")
    raw_members = doc.get("members", [])
    if not isinstance(raw_members, list):
        raise AssignorError('"members" must be a list')
    group = GroupSpec(
        tuple(parse_member(m) for m in raw_members),
        parse_partitions(doc.get("partitions")),
        parse_partition_racks(doc.get("partition_racks")),
    )
    validate_group(group)
    return group


def group_to_json(group: GroupSpec) -> dict[str, Any]:
    return {
        "members": [
            {
                "member_id": m.member_id,
                "topics": list(m.topics),
                "owned": [list(tp) for tp in m.owned],
                "generation": m.generation,
                "rack": m.rack,
            }
            for m in group.members
        ],
        "partitions": dict(group.partitions),
        "partition_racks": {t: [list(r) for r in per] for t, per in group.partition_racks.items()},
    }
