"""Turn the coordinator model's per-group JSON document into what-if input.

The document (see the model's docs) has group, type, state, protocol_type, protocol, generation,
members [{member_id, group_instance_id, client_id, client_host, session_timeout_ms,
rebalance_timeout_ms, subscription, assignment}], offsets, lag, generations [...]. Every key is
optional here: a missing or oddly shaped part gives a sensible default rather than an error, because
the document comes from live data.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from coordinator_model.assignors import AssignorError, canonical_name

GAP_KEYS = ("gap_ms", "heartbeat_gap_ms", "poll_gap_ms", "poll_interval_ms", "expiry_gap_ms")
LAG_KEYS = ("lag", "lag_offsets", "offset_lag", "records_lag", "lag_messages")


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _per_partition(raw: Any) -> Iterator[tuple[str, int, Any]]:
    """Yield (topic, partition, entry) from a list of {topic, partition, ...}, {topic: [..]},
    {topic: {partition: ..}} or a wrapper {"partitions": [...]}."""
    if isinstance(raw, list):
        for e in raw:
            if isinstance(e, dict):
                t, p = e.get("topic"), _as_int(e.get("partition"))
                if isinstance(t, str) and p is not None and p >= 0:
                    yield t, p, e
    elif isinstance(raw, dict):
        for key in ("partitions", "per_partition", "entries"):
            if isinstance(raw.get(key), list):
                yield from _per_partition(raw[key])
                return
        for t, per in raw.items():
            if not isinstance(t, str):
                continue
            if isinstance(per, list):
                for p, v in enumerate(per):
                    if isinstance(v, dict) and _as_int(v.get("partition")) is not None:
                        yield t, _as_int(v["partition"]), v  # type: ignore[misc]
                    else:
                        yield t, p, v
            elif isinstance(per, dict):
                for p, v in per.items():
                    pi = _as_int(p)
                    if pi is not None and pi >= 0:
                        yield t, pi, v


def _lag_of(entry: Any) -> float | None:
    if isinstance(entry, bool):
        return None
    if isinstance(entry, int | float):
        return entry if entry >= 0 else None
    if isinstance(entry, dict):
        for k in LAG_KEYS:
            v = entry.get(k)
            if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0:
                return v
    return None


def _assignment_pairs(raw: Any) -> list[list[Any]]:
    pairs: list[list[Any]] = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], str):
                p = _as_int(item[1])
                if p is not None and p >= 0:
                    pairs.append([item[0], p])
            elif isinstance(item, dict) and isinstance(item.get("topic"), str):
                if isinstance(item.get("partitions"), list):  # {"topic", "partitions": [..]}
                    pairs += [[item["topic"], p] for p in map(_as_int, item["partitions"]) if p is not None]
                elif _as_int(item.get("partition")) is not None:
                    pairs.append([item["topic"], _as_int(item["partition"])])
    elif isinstance(raw, dict):
        for t, ps in raw.items():
            if isinstance(ps, list):
                pairs += [[t, p] for p in map(_as_int, ps) if p is not None]
    return pairs


def _topics(raw: Any) -> list[str]:
    if isinstance(raw, dict):
        raw = raw.get("topics")
    if isinstance(raw, list):
        return [t for t in raw if isinstance(t, str)]
    return []


def _assignor(doc: dict[str, Any]) -> str:
    protocol = doc.get("protocol")
    if not isinstance(protocol, str) or not protocol:
        # an Empty group has no protocol any more: the last generation that had one says what it was
        gens = doc.get("generations") if isinstance(doc.get("generations"), list) else []
        protocol = next(
            (
                g["protocol"]
                for g in reversed(gens)
                if isinstance(g, dict) and isinstance(g.get("protocol"), str)
            ),
            None,
        )
    if not isinstance(protocol, str) or not protocol:
        return "range"
    try:
        name = canonical_name(protocol)
    except AssignorError:
        return "range"
    if name == "range" and str(doc.get("type") or "").lower() == "consumer":
        return "server-range"  # a KIP-848 group's 'range' is the broker's assignor
    return name


def _rebalances(raw: Any) -> list[dict[str, Any]]:
    out = []
    for g in raw if isinstance(raw, list) else []:
        if not isinstance(g, dict):
            continue
        member = g.get("member_id")
        if not isinstance(member, str):
            left = g.get("members_left")
            first = left[0] if isinstance(left, list) and left else None
            member = first.get("member_id") if isinstance(first, dict) else first
        gap = next(
            (g[k] for k in GAP_KEYS if isinstance(g.get(k), int | float) and not isinstance(g.get(k), bool)),
            None,
        )
        out.append(
            {
                "generation": _as_int(g.get("generation")),
                "cause": str(g.get("cause") or g.get("reason") or ""),
                "start": g.get("start"),
                "member_id": member if isinstance(member, str) else None,
                "gap_ms": gap,
            }
        )
    return out


def whatif_input_from_group_document(doc: dict[str, Any], partitions: dict[str, int] | None = None) -> dict:
    """The coordinator model's group document -> the `groupscope whatif` input (without changes)."""
    doc = doc if isinstance(doc, dict) else {}
    generation = _as_int(doc.get("generation"))
    members: list[dict[str, Any]] = []
    seen: set[str] = set()
    counts: dict[str, int] = {}

    def saw(t: str, p: int) -> None:
        counts[t] = max(counts.get(t, 0), p + 1)

    for m in doc.get("members") or []:
        if not isinstance(m, dict) or not isinstance(m.get("member_id"), str) or m["member_id"] in seen:
            continue
        seen.add(m["member_id"])
        owned = _assignment_pairs(m.get("assignment"))
        for t, p in owned:
            saw(t, p)
        entry: dict[str, Any] = {
            "member_id": m["member_id"],
            "topics": _topics(m.get("subscription")),
            "owned": owned,
        }
        if generation is not None:
            entry["generation"] = generation
        if isinstance(m.get("group_instance_id"), str) and m["group_instance_id"]:
            entry["group_instance_id"] = m["group_instance_id"]
        if isinstance(m.get("rack"), str) and m["rack"]:
            entry["rack"] = m["rack"]
        session = _as_int(m.get("session_timeout_ms"))
        if session and session > 0:
            entry["session_timeout_ms"] = session
        # The classic consumer sends max.poll.interval.ms as its rebalance timeout.
        poll = _as_int(m.get("max_poll_interval_ms", m.get("rebalance_timeout_ms")))
        if poll and poll > 0:
            entry["max_poll_interval_ms"] = poll
        members.append(entry)

    lag: dict[str, dict[str, float]] = {}
    for t, p, e in _per_partition(doc.get("lag")):
        saw(t, p)
        value = _lag_of(e)
        if value is not None:
            lag.setdefault(t, {})[str(p)] = value
    for t, p, _ in _per_partition(doc.get("offsets")):
        saw(t, p)

    final_counts = dict(counts)
    for t, n in (partitions or {}).items():
        if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
            final_counts[t] = n
    for m in members:  # a subscribed topic we know nothing about has no partitions we can see
        for t in m["topics"]:
            final_counts.setdefault(t, 0)
        m["owned"] = [[t, p] for t, p in m["owned"] if p < final_counts.get(t, 0)]

    return {
        "group": doc.get("group"),
        "assignor": _assignor(doc),
        "members": members,
        "partitions": final_counts,
        "lag": lag,
        "rebalances": _rebalances(doc.get("generations")),
        "changes": [],
        "assignors": [],
    }
