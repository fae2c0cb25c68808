"""Turn the coordinator model's group document (coordinator_model/document/types.py) into what-if
input (docs/assign-format.md).

Members' `assignment` becomes `owned` with the group's generation, `rebalance_timeout_ms` becomes
`max_poll_interval_ms` (the classic consumer sends max.poll.interval.ms as its rebalance timeout),
partition counts come from `partitions` or else from the highest partition seen in lag, offsets and
assignments, and `generations` become `rebalances`. A document in its JSON form is read with
`GroupDocument.from_json` (DocumentError when it is not one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator_model.assignors import AssignorError, canonical_name
from coordinator_model.document.types import GenerationDoc, GroupDocument


def _assignor(doc: GroupDocument) -> str:
    protocol = doc.protocol
    if not protocol:
        # an Empty group has no protocol any more: the last generation that had one says what it was
        protocol = next((g.protocol for g in reversed(doc.generations) if g.protocol), None)
    if not protocol:
        return "range"
    try:
        name = canonical_name(protocol)
    except AssignorError:
        return "range"
    if name == "range" and doc.type == "consumer":
        return "server-range"  # a KIP-848 group's 'range' is the broker's assignor
    return name


def _rebalance(g: GenerationDoc) -> dict[str, Any]:
    """A generation as a recorded rebalance: the member that caused it (`member_id`, else the first
    that left) and how long it had been silent or not polling (`gap_ms`)."""
    return {
        "generation": g.generation,
        "cause": g.cause or g.reason or "",
        "start": g.start,
        "member_id": g.member_id or (g.members_left[0] if g.members_left else None),
        "gap_ms": g.gap_ms,
    }


def whatif_input_from_group_document(
    doc: GroupDocument | Mapping[str, Any], partitions: dict[str, int] | None = None
) -> dict[str, Any]:
    """The coordinator model's group document -> the `groupscope whatif` input (without changes)."""
    d = doc if isinstance(doc, GroupDocument) else GroupDocument.from_json(doc)
    counts: dict[str, int] = {}

    def saw(t: str, p: int) -> None:
        counts[t] = max(counts.get(t, 0), p + 1)

    members: list[dict[str, Any]] = []
    for m in d.members:
        for t, p in m.assignment:
            saw(t, p)
        entry: dict[str, Any] = {
            "member_id": m.member_id,
            "topics": list(m.subscription),
            "owned": [[t, p] for t, p in m.assignment],
        }
        if d.generation is not None:
            entry["generation"] = d.generation
        if m.group_instance_id:
            entry["group_instance_id"] = m.group_instance_id
        if m.session_timeout_ms and m.session_timeout_ms > 0:
            entry["session_timeout_ms"] = m.session_timeout_ms
        if m.rebalance_timeout_ms and m.rebalance_timeout_ms > 0:
            entry["max_poll_interval_ms"] = m.rebalance_timeout_ms
        members.append(entry)

    lag: dict[str, dict[str, float]] = {}
    for row in d.lag.partitions:
        saw(row.topic, row.partition)
        if row.lag is not None and row.lag >= 0:
            lag.setdefault(row.topic, {})[str(row.partition)] = row.lag
    for o in d.offsets:
        saw(o.topic, o.partition)

    final_counts = dict(counts)
    for t, n in (partitions or {}).items():
        if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
            final_counts[t] = n
    for entry in members:  # a subscribed topic we know nothing about has no partitions we can see
        for t in entry["topics"]:
            final_counts.setdefault(t, 0)
        entry["owned"] = [[t, p] for t, p in entry["owned"] if p < final_counts.get(t, 0)]

    return {
        "group": d.group,
        "assignor": _assignor(d),
        "members": members,
        "partitions": final_counts,
        "lag": lag,
        "rebalances": [_rebalance(g) for g in d.generations],
        "changes": [],
        "assignors": [],
    }
