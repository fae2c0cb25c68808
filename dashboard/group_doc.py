"""Reading the per-group JSON document (the coordinator model's output, as the pipeline stores it)
into flat rows for tables and charts.

The document is produced by other components and grows over time, so every accessor here is
tolerant: a missing key gives an empty result or None, never an exception, and a few spellings of
the same field are accepted (``committed_offset`` or ``committed``, lists or topic->partition maps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TopicPartition = tuple[str, int]


def _first(d: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return default


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _int(v: Any) -> int | None:
    n = _num(v)
    return None if n is None else int(n)


def tp_list(value: Any) -> list[TopicPartition]:
    """[[topic, partition], ...] or {topic: [partitions]} -> sorted [(topic, partition)]."""
    out: list[TopicPartition] = []
    if isinstance(value, Mapping):
        for topic, parts in value.items():
            for p in parts or []:
                if _int(p) is not None:
                    out.append((str(topic), int(p)))
    elif isinstance(value, Iterable) and not isinstance(value, str | bytes):
        for item in value:
            if isinstance(item, Mapping):
                p = _int(item.get("partition"))
                if item.get("topic") is not None and p is not None:
                    out.append((str(item["topic"]), p))
            elif isinstance(item, list | tuple) and len(item) == 2 and _int(item[1]) is not None:
                out.append((str(item[0]), int(item[1])))
    return sorted(set(out))


def is_kip848(doc: Mapping[str, Any]) -> bool:
    """A group on the modern protocol: a KIP-848 consumer group or a KIP-932 share group (epochs, no
    generations)."""
    return doc.get("type") in ("consumer", "share")


@dataclass
class PartitionLag:
    topic: str
    partition: int
    committed: int | None = None
    log_end: int | None = None
    lag: int | None = None
    lag_seconds: float | None = None
    status: str | None = None
    member: str | None = None
    commit_time: int | None = None
    metadata: str | None = None


def _lag_entries(lag: Any) -> list[Mapping[str, Any]]:
    """The per-partition entries of doc['lag'], whatever container holds them."""
    if isinstance(lag, Mapping):
        for key in ("partitions", "per_partition", "by_partition"):
            if key in lag:
                return _lag_entries(lag[key])
        # {topic: {partition: {...}}} or {topic: [{...}]}
        out: list[Mapping[str, Any]] = []
        for topic, parts in lag.items():
            if isinstance(parts, Mapping):
                for p, e in parts.items():
                    if isinstance(e, Mapping) and _int(p) is not None:
                        out.append({"topic": topic, "partition": int(p), **e})
            elif isinstance(parts, list):
                out.extend({"topic": topic, **e} for e in parts if isinstance(e, Mapping))
        return out
    if isinstance(lag, list):
        return [e for e in lag if isinstance(e, Mapping)]
    return []


def _offset_entries(offsets: Any) -> dict[TopicPartition, Mapping[str, Any]]:
    out: dict[TopicPartition, Mapping[str, Any]] = {}
    if isinstance(offsets, Mapping):
        for topic, parts in offsets.items():
            if isinstance(parts, Mapping):
                for p, e in parts.items():
                    if _int(p) is None:
                        continue
                    out[(str(topic), int(p))] = e if isinstance(e, Mapping) else {"offset": e}
            elif isinstance(parts, list):
                for e in parts:
                    if isinstance(e, Mapping) and _int(e.get("partition")) is not None:
                        out[(str(topic), int(e["partition"]))] = e
    elif isinstance(offsets, list):
        for e in offsets:
            if isinstance(e, Mapping) and e.get("topic") is not None and _int(e.get("partition")) is not None:
                out[(str(e["topic"]), int(e["partition"]))] = e
    return out


def owners(doc: Mapping[str, Any]) -> dict[TopicPartition, str]:
    """Which member owns each partition now (the current assignment)."""
    out: dict[TopicPartition, str] = {}
    for m in members(doc):
        for tp in m.assignment:
            out[tp] = m.member_id
    return out


def partition_lag(doc: Mapping[str, Any]) -> list[PartitionLag]:
    """Every partition the group commits to or owns: offsets, log end, lag, status, owner."""
    own = owners(doc)
    rows: dict[TopicPartition, PartitionLag] = {}
    for e in _lag_entries(doc.get("lag")):
        p = _int(e.get("partition"))
        if e.get("topic") is None or p is None:
            continue
        tp = (str(e["topic"]), p)
        rows[tp] = PartitionLag(
            topic=tp[0],
            partition=p,
            committed=_int(_first(e, "committed_offset", "committed", "offset")),
            log_end=_int(_first(e, "log_end_offset", "end_offset", "log_end")),
            lag=_int(_first(e, "lag_offsets", "lag", "offset_lag")),
            lag_seconds=_num(_first(e, "lag_seconds", "lag_s", "time_lag_s", "time_lag_seconds")),
            status=_first(e, "status", "evaluation"),
            member=_first(e, "member", "member_id", "owner"),
        )
    for tp, e in _offset_entries(doc.get("offsets")).items():
        row = rows.setdefault(tp, PartitionLag(topic=tp[0], partition=tp[1]))
        if row.committed is None:
            row.committed = _int(_first(e, "offset", "committed_offset", "committed"))
        row.commit_time = _int(_first(e, "commit_timestamp", "commit_ts", "timestamp", "ts"))
        md = e.get("metadata")
        row.metadata = md if isinstance(md, str) else None
    for tp, m in own.items():
        rows.setdefault(tp, PartitionLag(topic=tp[0], partition=tp[1]))
        if rows[tp].member is None:
            rows[tp].member = m
    return [rows[k] for k in sorted(rows)]


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    subscription: list[str] = field(default_factory=list)
    assignment: list[TopicPartition] = field(default_factory=list)
    target_assignment: list[TopicPartition] | None = None
    pending_revocation: list[TopicPartition] = field(default_factory=list)
    last_heartbeat: int | None = None
    member_epoch: int | None = None
    state: str | None = None


def members(doc: Mapping[str, Any]) -> list[Member]:
    out: list[Member] = []
    for m in doc.get("members") or []:
        if not isinstance(m, Mapping) or m.get("member_id") is None:
            continue
        sub = m.get("subscription")
        if isinstance(sub, Mapping):  # {"topics": [...], ...} as some decoders spell it
            sub = sub.get("topics")
        target = _first(m, "target_assignment", "target")
        out.append(
            Member(
                member_id=str(m["member_id"]),
                group_instance_id=m.get("group_instance_id"),
                client_id=m.get("client_id"),
                client_host=_first(m, "client_host", "host"),
                session_timeout_ms=_int(m.get("session_timeout_ms")),
                rebalance_timeout_ms=_int(m.get("rebalance_timeout_ms")),
                subscription=sorted(str(t) for t in (sub or []) if isinstance(t, str)),
                assignment=tp_list(m.get("assignment")),
                target_assignment=tp_list(target) if target is not None else None,
                pending_revocation=tp_list(_first(m, "pending_revocation", "partitions_pending_revocation")),
                last_heartbeat=_int(_first(m, "last_heartbeat", "last_heartbeat_ms")),
                member_epoch=_int(m.get("member_epoch")),
                state=m.get("state"),
            )
        )
    return out


@dataclass
class MemberRow:
    """One line of the members table."""

    member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    partitions: int
    assignment: str
    lag: int | None
    lag_seconds: float | None
    heartbeat_age_s: float | None
    session_timeout_s: float | None
    heartbeat_ratio: float | None
    member_epoch: int | None
    state: str | None
    target: str | None


def _fmt_tps(tps: list[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return "; ".join(f"{t}: {','.join(map(str, ps))}" for t, ps in sorted(by_topic.items()))


def member_rows(doc: Mapping[str, Any], now_ms: int) -> list[MemberRow]:
    lag_by_tp = {(r.topic, r.partition): r for r in partition_lag(doc)}
    rows = []
    for m in members(doc):
        lags = [lag_by_tp[tp] for tp in m.assignment if tp in lag_by_tp]
        offs = [r.lag for r in lags if r.lag is not None]
        secs = [r.lag_seconds for r in lags if r.lag_seconds is not None]
        age = (now_ms - m.last_heartbeat) / 1000 if m.last_heartbeat else None
        st = m.session_timeout_ms / 1000 if m.session_timeout_ms else None
        rows.append(
            MemberRow(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                partitions=len(m.assignment),
                assignment=_fmt_tps(m.assignment),
                lag=sum(offs) if offs else None,
                lag_seconds=max(secs) if secs else None,
                heartbeat_age_s=round(age, 1) if age is not None else None,
                session_timeout_s=st,
                heartbeat_ratio=round(age / st, 2) if age is not None and st else None,
                member_epoch=m.member_epoch,
                state=m.state,
                target=_fmt_tps(m.target_assignment) if m.target_assignment is not None else None,
            )
        )
    return rows


@dataclass
class Band:
    state: str
    start: int
    end: int | None
    inferred: bool = False  # no source saw this state begin: the model inferred it


def timeline(doc: Mapping[str, Any]) -> list[Band]:
    out = []
    for b in doc.get("timeline") or []:
        if isinstance(b, Mapping) and b.get("state") and _int(b.get("start")) is not None:
            out.append(Band(str(b["state"]), int(b["start"]), _int(b.get("end")), b.get("inferred") is True))
    return sorted(out, key=lambda b: b.start)


@dataclass
class Generation:
    generation: int | None
    start: int | None
    end: int | None
    duration_ms: int | None
    members_joined: list[str]
    members_left: list[str]
    protocol: str | None
    cause: str | None
    reason: str | None
    inferred: list[str]
    assignment: Any


def _names(v: Any) -> list[str]:
    if isinstance(v, list):
        return [str(x.get("member_id") if isinstance(x, Mapping) else x) for x in v]
    return []


def generations(doc: Mapping[str, Any]) -> list[Generation]:
    out = []
    for g in doc.get("generations") or []:
        if not isinstance(g, Mapping):
            continue
        inferred = g.get("inferred")
        out.append(
            Generation(
                generation=_int(_first(g, "generation", "epoch", "group_epoch")),
                start=_int(g.get("start")),
                end=_int(g.get("end")),
                duration_ms=_int(g.get("duration_ms")),
                members_joined=_names(g.get("members_joined")),
                members_left=_names(g.get("members_left")),
                protocol=g.get("protocol"),
                cause=g.get("cause"),
                reason=g.get("reason"),
                inferred=[str(x) for x in inferred]
                if isinstance(inferred, list)
                else ([str(inferred)] if inferred else []),
                assignment=g.get("assignment"),
            )
        )
    return out


def totals(doc: Mapping[str, Any]) -> tuple[int | None, float | None]:
    """Group lag in offsets (sum) and seconds (max), from the document's own total if it has one."""
    lag = doc.get("lag")
    if isinstance(lag, Mapping) and _num(lag.get("total")) is not None:
        # the model's own shape: {"total": offsets, "max_seconds": worst partition, "partitions": [...]}
        return _int(lag["total"]), _num(_first(lag, "max_seconds", "lag_seconds"))
    if isinstance(lag, Mapping):
        tot = _first(lag, "group", "total", "totals")
        if isinstance(tot, Mapping):
            o = _int(_first(tot, "lag_offsets", "lag", "offsets"))
            s = _num(_first(tot, "lag_seconds", "seconds", "lag_s"))
            if o is not None or s is not None:
                return o, s
    rows = partition_lag(doc)
    offs = [r.lag for r in rows if r.lag is not None]
    secs = [r.lag_seconds for r in rows if r.lag_seconds is not None]
    return (sum(offs) if offs else None, max(secs) if secs else None)


def last_change(doc: Mapping[str, Any]) -> int | None:
    bands = timeline(doc)
    return bands[-1].start if bands else None


def latest_time(doc: Mapping[str, Any]) -> int | None:
    """The newest timestamp the document mentions: the right edge of 'all history'."""
    times: list[int] = []
    for b in timeline(doc):
        times.append(b.end or b.start)
    for g in generations(doc):
        times.extend(t for t in (g.start, g.end) if t)
    for m in members(doc):
        if m.last_heartbeat:
            times.append(m.last_heartbeat)
    return max(times) if times else None
