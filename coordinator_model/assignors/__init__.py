"""Partition assignors with Kafka's semantics, pure functions over a GroupSpec.

Client side (classic protocol, the group leader assigns): `range`, `roundrobin`, `sticky`,
`cooperative-sticky`. Server side (KIP-848 consumer protocol, the coordinator assigns):
`uniform` and `server-range` (the broker's `range`).
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator_model.assignors.range_assignor import assign_range
from coordinator_model.assignors.roundrobin import assign_roundrobin
from coordinator_model.assignors.server_side import assign_server_range, assign_uniform
from coordinator_model.assignors.spec import (
    Assignment,
    AssignorError,
    GroupSpec,
    MemberSpec,
    TopicPartition,
    sorted_assignment,
    validate_group,
)
from coordinator_model.assignors.sticky import assign_cooperative_sticky, assign_sticky

ASSIGNORS: dict[str, Callable[[GroupSpec], Assignment]] = {
    "range": assign_range,
    "roundrobin": assign_roundrobin,
    "sticky": assign_sticky,
    "cooperative-sticky": assign_cooperative_sticky,
    "uniform": assign_uniform,
    "server-range": assign_server_range,
}

# How a rebalance under each assignor moves partitions: eager revokes everything first, cooperative
# revokes only what changes owner (and needs a second rebalance), the KIP-848 protocol reconciles
# each member incrementally against the broker's target.
PROTOCOL: dict[str, str] = {
    "range": "eager",
    "roundrobin": "eager",
    "sticky": "eager",
    "cooperative-sticky": "cooperative",
    "uniform": "consumer",
    "server-range": "consumer",
}

ALIASES: dict[str, str] = {
    "rangeassignor": "range",
    "roundrobinassignor": "roundrobin",
    "round-robin": "roundrobin",
    "stickyassignor": "sticky",
    "cooperativestickyassignor": "cooperative-sticky",
    "cooperative_sticky": "cooperative-sticky",
    "uniformassignor": "uniform",
    "server_range": "server-range",
}


def canonical_name(name: str) -> str:
    key = name.strip().lower()
    key = key.rsplit(".", 1)[-1] if "." in key else key  # org.apache...RangeAssignor
    key = ALIASES.get(key, key)
    if key not in ASSIGNORS:
        raise AssignorError(f"unknown assignor {name!r} (known: {', '.join(ASSIGNORS)})")
    return key


def assign(name: str, group: GroupSpec) -> Assignment:
    """Run assignor `name` over `group`; every member appears, partitions sorted per member."""
    fn = ASSIGNORS[canonical_name(name)]
    validate_group(group)
    return sorted_assignment(fn(group))


__all__ = [
    "ASSIGNORS",
    "PROTOCOL",
    "Assignment",
    "AssignorError",
    "GroupSpec",
    "MemberSpec",
    "TopicPartition",
    "assign",
    "canonical_name",
]
