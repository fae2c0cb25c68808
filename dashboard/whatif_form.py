"""The what-if form: validating what the user typed, field by field, into a request for the engine.

Every problem becomes a message for the field it concerns (shown beside it); nothing here raises on
bad input. Pure functions, so they are tested without a browser."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coordinator_model.document.types import GroupDocument

MAX_ADD_MEMBERS = 10_000
MAX_PARTITIONS_PER_TOPIC = 100_000
# Kafka's broker accepts session timeouts within group.min/max.session.timeout.ms (6 s - 30 min by
# default); we accept a wider 1 s - 1 h so "what if the broker limits were changed" can be asked too.
SESSION_TIMEOUT_RANGE = (1_000, 3_600_000)
MAX_POLL_RANGE = (1_000, 24 * 3_600_000)


@dataclass
class WhatIfRequest:
    assignors: list[str]
    add_members: int = 0
    remove_members: list[str] = field(default_factory=list)
    partitions: dict[str, int] = field(default_factory=dict)  # topic -> new partition count
    subscriptions: dict[str, list[str]] = field(default_factory=dict)  # member -> new topics
    session_timeout_ms: int | None = None
    max_poll_interval_ms: int | None = None


def _int_field(raw: Any, lo: int, hi: int, what: str) -> tuple[int | None, str | None]:
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None, None
    try:
        f = float(str(raw).strip())
    except ValueError:
        return None, f"{what} must be a whole number, not {str(raw)!r}"
    if not f.is_integer():
        return None, f"{what} must be a whole number, not {raw}"
    n = int(f)
    if n < lo or n > hi:
        return None, f"{what} must be between {lo:,} and {hi:,}"
    return n, None


_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def parse_partitions(text: str | None, current: Mapping[str, int]) -> tuple[dict[str, int], str | None]:
    """'topic=12, other=+4' -> new counts. '=N' sets the count, '=+N' adds N. Kafka never lowers a
    topic's partition count, so neither do we."""
    out: dict[str, int] = {}
    if not text or not text.strip():
        return out, None
    for item in re.split(r"[,\n;]+", text):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            return {}, f"write topic=COUNT or topic=+N, not {item!r}"
        topic, _, value = (s.strip() for s in item.partition("="))
        if not _TOPIC_RE.match(topic):
            return {}, f"{topic!r} is not a valid topic name"
        add = value.startswith("+")
        n, err = _int_field(
            value.lstrip("+"), 0 if add else 1, MAX_PARTITIONS_PER_TOPIC, f"partitions of {topic}"
        )
        if err or n is None:
            return {}, err or f"give a count for {topic}"
        have = current.get(topic, 0)
        new = have + n if add else n
        if new < have:
            return {}, f"{topic} has {have} partitions; Kafka cannot reduce a topic's partition count"
        out[topic] = new
    return out, None


def parse_subscription(
    member: str | None, topics: str | None, members: Sequence[str]
) -> tuple[dict[str, list[str]], str | None]:
    if not member and not (topics or "").strip():
        return {}, None
    if not member:
        return {}, "pick the member whose subscription changes"
    if member not in members:
        return {}, f"{member!r} is not a member of this group"
    names = [t.strip() for t in re.split(r"[,\s]+", topics or "") if t.strip()]
    if not names:
        return {}, "list at least one topic (comma-separated)"
    bad = [t for t in names if not _TOPIC_RE.match(t)]
    if bad:
        return {}, f"{bad[0]!r} is not a valid topic name"
    return {member: sorted(set(names))}, None


def partition_counts(doc: GroupDocument) -> dict[str, int]:
    """Partitions per topic as far as the group knows them: highest partition seen + 1."""
    counts: dict[str, int] = {}
    tps = [(p.topic, p.partition) for p in doc.lag.partitions]
    for m in doc.members:
        tps += m.assignment
    for t, p in tps:
        counts[t] = max(counts.get(t, 0), p + 1)
    return counts


def parse_form(values: Mapping[str, Any], doc: GroupDocument) -> tuple[WhatIfRequest | None, dict[str, str]]:
    """(request, {}) when every field is valid, else (None, {field: message})."""
    errors: dict[str, str] = {}
    member_ids = [m.member_id for m in doc.members]
    assignors = [a for a in (values.get("assignors") or []) if a]
    if not assignors:
        errors["assignors"] = "pick at least one assignor"
    add, err = _int_field(values.get("add_members"), 0, MAX_ADD_MEMBERS, "members to add")
    if err:
        errors["add_members"] = err
    remove = list(values.get("remove_members") or [])
    unknown = [m for m in remove if m not in member_ids]
    if unknown:
        errors["remove_members"] = f"{unknown[0]!r} is not a member of this group"
    parts, err = parse_partitions(values.get("partitions"), partition_counts(doc))
    if err:
        errors["partitions"] = err
    subs, err = parse_subscription(values.get("sub_member"), values.get("sub_topics"), member_ids)
    if err:
        errors["subscription"] = err
    elif subs and next(iter(subs)) in remove:
        errors["subscription"] = "this member is being removed"
    st, err = _int_field(values.get("session_timeout_ms"), *SESSION_TIMEOUT_RANGE, "session.timeout.ms")
    if err:
        errors["session_timeout_ms"] = err
    mp, err = _int_field(values.get("max_poll_interval_ms"), *MAX_POLL_RANGE, "max.poll.interval.ms")
    if err:
        errors["max_poll_interval_ms"] = err
    if not errors and not member_ids and not add:
        errors["add_members"] = "the group has no members now: add at least one to see an assignment"
    if errors:
        return None, errors
    return (
        WhatIfRequest(
            assignors=assignors,
            add_members=add or 0,
            remove_members=remove,
            partitions=parts,
            subscriptions=subs,
            session_timeout_ms=st,
            max_poll_interval_ms=mp,
        ),
        {},
    )
