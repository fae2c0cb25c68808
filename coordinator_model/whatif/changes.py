"""Changes a what-if applies to a group, in the order given. Each returns the new state and a short
human description for the report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from coordinator_model.assignors import AssignorError, GroupSpec, MemberSpec, canonical_name
from coordinator_model.assignors.spec import validate_group
from coordinator_model.whatif.scenario import Timeouts, _positive_ms

CHANGE_KINDS = (
    "add_members",
    "remove_members",
    "change_subscription",
    "add_partitions",
    "switch_assignor",
    "set_session_timeout",
    "set_max_poll_interval",
)


@dataclass
class State:
    group: GroupSpec
    assignor: str
    timeouts: Timeouts
    timeouts_changed: bool = False


def _kind(change: dict[str, Any]) -> str:
    kind = change.get("kind", change.get("type", change.get("op")))
    if not isinstance(kind, str):
        raise AssignorError(f"change {change!r} has no kind (one of {', '.join(CHANGE_KINDS)})"[:300])
    kind = kind.strip().lower().replace("-", "_")
    aliases = {
        "add_member": "add_members",
        "remove_member": "remove_members",
        "subscribe": "change_subscription",
        "set_assignor": "switch_assignor",
        "session_timeout": "set_session_timeout",
        "session_timeout_ms": "set_session_timeout",
        "max_poll_interval": "set_max_poll_interval",
        "max_poll_interval_ms": "set_max_poll_interval",
    }
    kind = aliases.get(kind, kind)
    if kind not in CHANGE_KINDS:
        raise AssignorError(f"unknown change kind {kind!r} (one of {', '.join(CHANGE_KINDS)})")
    return kind


def _count(change: dict[str, Any], key: str = "count") -> int:
    n = change.get(key, 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise AssignorError(f"change {change.get('kind')!r}: {key} must be a non-negative integer, got {n!r}")
    return n


def _topics(change: dict[str, Any]) -> tuple[str, ...] | None:
    topics = change.get("topics")
    if topics is None:
        return None
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise AssignorError(f"change {change.get('kind')!r}: topics must be a list of topic names")
    return tuple(dict.fromkeys(topics))


def apply_change(state: State, change: dict[str, Any]) -> str:
    kind = _kind(change)
    g = state.group
    members = list(g.members)
    ids = {m.member_id for m in members}
    if kind == "add_members":
        n = _count(change)
        topics = _topics(change)
        if topics is None:
            like = change.get("like")
            if like is not None:
                src = next((m for m in members if m.member_id == like), None)
                if src is None:
                    raise AssignorError(f"add_members: no member {like!r} to copy the subscription of")
                topics = src.topics
            elif members:
                # "same subscription": the most common one in the group (first seen wins a tie)
                topics = Counter(tuple(sorted(m.topics)) for m in members).most_common(1)[0][0]
            else:
                # an empty group: the topics it has partitions (offsets, lag) for
                topics = tuple(sorted(t for t, n in g.partitions.items() if n > 0))
                if not topics:
                    raise AssignorError("add_members: the group is empty, give the new members' topics")
        prefix = str(change.get("prefix", "whatif-member-"))
        added = []
        k = 0
        while len(added) < n:
            mid = f"{prefix}{k}"
            k += 1
            if mid not in ids:
                ids.add(mid)
                added.append(MemberSpec(member_id=mid, topics=topics))
        state.group = GroupSpec(tuple(members + added), g.partitions)
        validate_group(state.group)
        return f"add {n} member(s) subscribed to {', '.join(topics) or 'nothing'}"
    if kind == "remove_members":
        wanted = change.get("member_ids", change.get("members"))
        if wanted is None:
            n = _count(change)
            # without ids: the last n members in member-id order
            wanted = sorted(ids)[len(ids) - min(n, len(ids)) :]
        if isinstance(wanted, str):
            wanted = [wanted]
        unknown = [w for w in wanted if w not in ids]
        if unknown:
            raise AssignorError(f"remove_members: no member {unknown[0]!r} in the group")
        gone = set(wanted)
        state.group = GroupSpec(tuple(m for m in members if m.member_id not in gone), g.partitions)
        return f"remove {len(gone)} member(s): {', '.join(sorted(gone))}"
    if kind == "change_subscription":
        mid = change.get("member_id")
        topics = _topics(change)
        if mid not in ids or topics is None:
            raise AssignorError(f"change_subscription: needs an existing member_id and topics, got {mid!r}")
        state.group = GroupSpec(
            tuple(replace(m, topics=topics) if m.member_id == mid else m for m in members), g.partitions
        )
        validate_group(state.group)
        return f"{mid} now subscribes to {', '.join(topics) or 'nothing'}"
    if kind == "add_partitions":
        topic = change.get("topic")
        if not isinstance(topic, str):
            raise AssignorError("add_partitions: needs a topic")
        current = g.partitions.get(topic, 0)
        if "total" in change:
            total = _count(change, "total")
            if total < current:
                raise AssignorError(
                    f"add_partitions: {topic} has {current} partitions, Kafka cannot shrink it"
                )
        else:
            total = current + _count(change)
        state.group = GroupSpec(g.members, {**g.partitions, topic: total})
        return f"{topic}: {current} -> {total} partitions"
    if kind == "switch_assignor":
        name = change.get("assignor")
        if not isinstance(name, str):
            raise AssignorError("switch_assignor: needs an assignor name")
        state.assignor = canonical_name(name)
        return f"switch assignor to {state.assignor}"
    # timeouts
    ms = _positive_ms(change.get("ms", change.get("value")), f"{kind}: ms")
    mid = change.get("member_id")
    if mid is not None and mid not in ids:
        raise AssignorError(f"{kind}: no member {mid!r} in the group")
    t = state.timeouts
    state.timeouts_changed = True
    if kind == "set_session_timeout":
        if mid is None:
            t.session_ms = ms
            t.member_session_ms.clear()
        else:
            t.member_session_ms[mid] = ms
        return f"session.timeout.ms = {ms}" + (f" for {mid}" if mid else "")
    if mid is None:
        t.max_poll_ms = ms
        t.member_max_poll_ms.clear()
    else:
        t.member_max_poll_ms[mid] = ms
    return f"max.poll.interval.ms = {ms}" + (f" for {mid}" if mid else "")
