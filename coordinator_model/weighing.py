"""Whose word counts when the sources disagree (docs/coordinator-model.md, "Sources, and who wins"):
how much each source's word on the group's protocol weighs, when an Admin API snapshot cannot be
right, and what a member id looks like. The engine applies these rules (GroupEngine.typed,
as_consumer, _retype, conflict); a disagreement that is not believed is kept as a conflict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from coordinator_model.classic import DESCRIBE_SKEW_MS
from coordinator_model.evidence import DescribeSnapshot
from coordinator_model.membership import Member

MAX_CONFLICTS = 20  # kinds of disagreement kept per group

# How much each source's word on the group's protocol weighs: the Admin API's type is the weakest (a
# broker that is not Apache Kafka may answer ConsumerGroupDescribe for a classic group).
TYPE_WEIGHT = {"describe": 1, "describe_broker": 2, "client": 2, "records": 3, "broker_log": 3}

_LIVE_OR_EMPTY = ("Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "Empty")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def outweighs(source: str | None, than: str | None) -> bool:
    """`source`'s word on the group's protocol weighs more than `than`'s (None: nobody's)."""
    return TYPE_WEIGHT.get(source or "", 0) > TYPE_WEIGHT.get(than or "", 0)


def looks_like_consumer_member_id(member_id: str, client_id: str | None) -> bool:
    """KIP-848 member ids are a bare UUID in base64 (22 characters); classic ones are
    `client.id-<uuid>` (or `group.instance.id-<uuid>`)."""
    if len(member_id) != 22 or (client_id and member_id.startswith(client_id + "-")):
        return False
    return all(c.isalnum() or c in "+/_-" for c in member_id)


def looks_like_a_member_id(text: str) -> bool:
    """A classic (`client.id-<uuid>`) or KIP-848 member id's shape: what an assignor name never has."""
    return bool(_UUID.search(text)) or looks_like_consumer_member_id(text, None)


def contradiction(ev: DescribeSnapshot, members: Mapping[str, Member], sources: set[str]) -> str | None:
    """Why a snapshot cannot be right, or None. Kafka lists every member of a group that is not
    Empty, so a live state without members is self-contradictory: when client events follow the
    group, they are believed instead. An Empty snapshot is believed unless members heartbeated
    within half their session timeout. A state the model does not know (some Kafka-protocol
    brokers answer UNKNOWN during a rebalance) says nothing about the members: with client
    events, it is not believed."""
    if ev.members:
        return None
    if ev.state not in _LIVE_OR_EMPTY:
        if "heartbeats" in sources and members:
            return f"the Admin API describes the group in state {ev.state} with no members"
        return None
    alive = 0
    for m in members.values():
        if m.last_heartbeat is None or not m.session_timeout_ms or (m.closed and ev.state == "Empty"):
            continue  # (a client that said it left may well be gone)
        quiet = ev.ts - m.last_heartbeat
        limit = m.session_timeout_ms // 2 if ev.state == "Empty" else m.session_timeout_ms
        if -DESCRIBE_SKEW_MS <= quiet <= limit or (m.closed and ev.state != "Empty"):
            alive += 1  # a closed static member stays until its session expires
    if ev.state == "Empty":
        if not alive:
            return None
        return f"the Admin API describes the group as Empty while {alive} member(s) heartbeat"
    if not alive and "heartbeats" not in sources:
        return None  # nothing better to go by: the state is all the snapshot gives
    return (
        f"the Admin API describes the group as {ev.state} with no members; client events show "
        f"{alive} member(s) within their session timeout"
    )
