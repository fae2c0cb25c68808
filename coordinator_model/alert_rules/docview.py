"""Tolerant reading of the per-group document (the JSON of `groupscope model --json`, one group).

The rules only read documents; they never trust that a key is present, because a group rebuilt from
a subset of the sources (no broker log, no Admin API) has fewer fields, and older documents in Redis
may predate a field. Every accessor here returns a safe default instead of raising.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# librdkafka and the Java client both build member ids as "<client.id>-<uuid4>".
_UUID_SUFFIX = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)

REBALANCING_STATES = frozenset({"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"})
GONE_STATES = frozenset({"Empty", "Dead"})


def as_ms(value: Any) -> int | None:
    """An epoch-millisecond value, or None for anything that is not a number."""
    if type(value) is int:  # the common case first: this runs for every row of 50,000 groups
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value))
        except ValueError:
            return None
    return None


def as_int(value: Any) -> int | None:
    return as_ms(value)


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


@dataclass(frozen=True, slots=True)
class MemberRef:
    """A member as a generation names it: its id and the key that survives a restart."""

    member_id: str
    key: str  # group.instance.id, else client.id, else the member id without its uuid suffix


def member_key(member_id: str, instance_id: str | None = None, client_id: str | None = None) -> str:
    if instance_id:
        return f"instance:{instance_id}"
    if client_id:
        return f"client:{client_id}"
    stripped = _UUID_SUFFIX.sub("", member_id)
    return f"client:{stripped}" if stripped != member_id else f"member:{member_id}"


def _known_members(doc: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    """member id -> (group.instance.id, client.id) from every place the document names members."""
    known: dict[str, tuple[str | None, str | None]] = {}
    for m in doc.get("members") or []:
        if isinstance(m, dict) and m.get("member_id"):
            known[str(m["member_id"])] = (m.get("group_instance_id"), m.get("client_id"))
    return known


def member_refs(items: Any, known: dict[str, tuple[str | None, str | None]]) -> list[MemberRef]:
    """Members named by a generation's members_joined / members_left: ids or member objects."""
    refs: list[MemberRef] = []
    if not isinstance(items, list):
        return refs
    for item in items:
        if isinstance(item, str):
            inst, client = known.get(item, (None, None))
            refs.append(MemberRef(item, member_key(item, inst, client)))
        elif isinstance(item, dict):
            mid = item.get("member_id") or item.get("id") or ""
            inst, client = known.get(str(mid), (None, None))
            refs.append(
                MemberRef(
                    str(mid),
                    member_key(
                        str(mid), item.get("group_instance_id") or inst, item.get("client_id") or client
                    ),
                )
            )
    return refs


@dataclass(frozen=True, slots=True)
class Generation:
    generation: int | None
    start: int
    end: int | None
    cause: str
    reason: str | None
    joined: tuple[MemberRef, ...]
    left: tuple[MemberRef, ...]
    member_count: int | None  # members after the rebalance, when the document says
    raw: dict[str, Any]

    def evidence(self) -> dict[str, Any]:
        """What an alert keeps of the generation: enough to see why it counted."""
        return {
            "generation": self.generation,
            "start": self.start,
            "end": self.end,
            "duration_ms": self.raw.get("duration_ms"),
            "cause": self.cause,
            "reason": self.reason,
            "members_joined": [m.member_id for m in self.joined],
            "members_left": [m.member_id for m in self.left],
        }


def generations(doc: dict[str, Any], since: int | None = None) -> list[Generation]:
    """The document's generations (or KIP-848 epochs) with a start time, oldest first; with `since`,
    only those that started after it (the rules never look further back than their windows)."""
    known = _known_members(doc)
    out: list[Generation] = []
    for g in doc.get("generations") or []:
        if not isinstance(g, dict):
            continue
        start = as_ms(g.get("start"))
        if start is None or (since is not None and start <= since):
            continue
        members = g.get("members")
        count = len(members) if isinstance(members, list) else as_int(g.get("member_count"))
        if count is None and isinstance(g.get("assignment"), dict):
            count = len(g["assignment"])
        out.append(
            Generation(
                generation=as_int(g.get("generation", g.get("epoch"))),
                start=start,
                end=as_ms(g.get("end")),
                cause=str(g.get("cause") or "unknown"),
                reason=g.get("reason") if isinstance(g.get("reason"), str) else None,
                joined=tuple(member_refs(g.get("members_joined"), known)),
                left=tuple(member_refs(g.get("members_left"), known)),
                member_count=count,
                raw=g,
            )
        )
    out.sort(key=lambda g: (g.start, g.generation or 0))
    return out


@dataclass(frozen=True, slots=True)
class StateSpan:
    state: str
    start: int | None
    end: int | None


def timeline(doc: dict[str, Any]) -> list[StateSpan]:
    spans = []
    for t in doc.get("timeline") or []:
        if isinstance(t, dict) and isinstance(t.get("state"), str):
            spans.append(StateSpan(t["state"], as_ms(t.get("start")), as_ms(t.get("end"))))
    spans.sort(key=lambda s: s.start if s.start is not None else -1)
    return spans


def state_at(view: GroupView, now_ms: int) -> tuple[str | None, int]:
    """The group's state at now_ms and the index of its span in the timeline (-1 when the timeline
    does not cover now_ms and the document's current state is used)."""
    doc = view.doc
    spans = view.timeline
    for i in range(len(spans) - 1, -1, -1):
        s = spans[i]
        if s.start is not None and s.start <= now_ms and (s.end is None or now_ms < s.end):
            return s.state, i
    if spans and spans[-1].start is not None and spans[-1].start <= now_ms:
        # The last span closed before now_ms with nothing after it: it is still the best we know.
        return spans[-1].state, len(spans) - 1
    if spans and spans[0].start is not None and now_ms < spans[0].start:
        return None, -1  # before the group existed
    state = doc.get("state")
    return (state if isinstance(state, str) else None), -1


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    committed_offset: int | None
    log_end_offset: int | None
    lag_offsets: int | None
    lag_seconds: float | None
    status: str | None
    member_id: str | None
    retention_ms: int | None
    log_start_offset: int | None

    def evidence(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "committed_offset": self.committed_offset,
            "log_end_offset": self.log_end_offset,
            "lag": self.lag_offsets,
            "lag_seconds": self.lag_seconds,
            "status": self.status,
            "member_id": self.member_id,
        }


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return None


def _partition_rows(lag: Any) -> list[dict[str, Any]]:
    if isinstance(lag, list):
        return [r for r in lag if isinstance(r, dict)]
    if not isinstance(lag, dict):
        return []
    rows = _first(lag, "partitions", "per_partition", "by_partition")
    if isinstance(rows, list):
        return [r for r in rows if isinstance(r, dict)]
    if isinstance(rows, dict):
        # {"topic": [row, ...]} or {"topic": {"0": row}}
        out: list[dict[str, Any]] = []
        for topic, value in rows.items():
            items = value.items() if isinstance(value, dict) else enumerate(value or [])
            for p, row in items:
                if isinstance(row, dict):
                    out.append({"topic": topic, "partition": row.get("partition", p), **row})
        return out
    return []


_ENGINE_ROW = ("committed", "end_offset", "lag", "lag_seconds", "status")
_NUM = (int, float)


def _engine_row(r: dict[str, Any]) -> PartitionLag | None:
    """The coordinator model's own spelling (coordinator_model/engine.py), read without guessing:
    this path runs for every partition of 50,000 groups each cold cycle."""
    topic, partition, lag, secs, status = (
        r.get("topic"),
        r.get("partition"),
        r["lag"],
        r["lag_seconds"],
        r["status"],
    )
    committed, end = r["committed"], r["end_offset"]
    if (
        type(topic) is not str
        or type(partition) is not int
        or (lag is not None and type(lag) is not int)
        or (secs is not None and type(secs) not in _NUM)
        or (status is not None and type(status) is not str)
        or (committed is not None and type(committed) is not int)
        or (end is not None and type(end) is not int)
    ):
        return None
    owner = r.get("member_id")
    return PartitionLag(
        topic=topic,
        partition=partition,
        committed_offset=committed,
        log_end_offset=end,
        lag_offsets=lag,
        lag_seconds=float(secs) if secs is not None else None,
        status=status.upper() if status else None,
        member_id=owner if type(owner) is str else None,
        retention_ms=as_int(r.get("retention_ms")),
        log_start_offset=as_int(r.get("log_start_offset")),
    )


def partition_lags(doc: dict[str, Any]) -> list[PartitionLag]:
    """Per-partition lag rows, whatever the exact spelling the model uses."""
    out: list[PartitionLag] = []
    for r in _partition_rows(doc.get("lag")):
        if all(k in r for k in _ENGINE_ROW):
            fast = _engine_row(r)
            if fast is not None:
                out.append(fast)
                continue
        topic = r.get("topic")
        partition = as_int(r.get("partition"))
        if not isinstance(topic, str) or partition is None:
            continue
        lag_block = r.get("lag") if isinstance(r.get("lag"), dict) else {}
        status = _first(r, "status", "lag_status") or lag_block.get("status")
        if isinstance(status, dict):
            status = status.get("status")
        lag_offsets = as_int(_first(r, "lag_offsets", "lag_messages", "offset_lag"))
        if lag_offsets is None:
            if lag_block:
                lag_offsets = as_int(_first(lag_block, "offsets", "messages"))
            else:
                lag_offsets = as_int(r.get("lag"))
        lag_seconds = as_float(_first(r, "lag_seconds", "lag_s", "time_lag_s"))
        if lag_seconds is None and as_float(r.get("lag_ms")) is not None:
            lag_seconds = as_float(r.get("lag_ms")) / 1000.0  # type: ignore[operator]
        if lag_seconds is None:
            lag_seconds = as_float(lag_block.get("seconds"))
        owner = _first(r, "member_id", "owner")
        out.append(
            PartitionLag(
                topic=topic,
                partition=partition,
                committed_offset=as_int(_first(r, "committed_offset", "committed", "offset")),
                log_end_offset=as_int(_first(r, "log_end_offset", "end_offset", "high_watermark")),
                lag_offsets=lag_offsets,
                lag_seconds=lag_seconds,
                status=str(status).upper() if isinstance(status, str) else None,
                member_id=owner if isinstance(owner, str) else None,
                retention_ms=as_int(_first(r, "retention_ms", "topic_retention_ms")),
                log_start_offset=as_int(_first(r, "log_start_offset", "low_watermark")),
            )
        )
    return out


def group_lag_totals(doc: dict[str, Any]) -> tuple[int | None, float | None]:
    """Group totals (offsets, worst seconds): from the document when it has them, else summed."""
    lag = doc.get("lag")
    if isinstance(lag, dict):
        totals = _first(lag, "totals", "total", "group")
        if isinstance(totals, dict):
            off = as_int(_first(totals, "lag_offsets", "lag", "offsets", "lag_messages"))
            sec = as_float(_first(totals, "lag_seconds", "max_lag_seconds", "seconds", "lag_s"))
            if off is not None or sec is not None:
                return off, sec
    rows = partition_lags(doc)
    if not rows:
        return None, None
    offs = [r.lag_offsets for r in rows if r.lag_offsets is not None]
    secs = [r.lag_seconds for r in rows if r.lag_seconds is not None]
    return (sum(offs) if offs else None), (max(secs) if secs else None)


class GroupView:
    """One document parsed once for all the rules: generations (only those within the rules' longest
    look-back, `since`), timeline and per-partition lag, each computed on first use."""

    __slots__ = ("_gens", "_lags", "_timeline", "doc", "since")

    def __init__(self, doc: dict[str, Any], since: int | None = None) -> None:
        self.doc = doc
        self.since = since
        self._gens: list[Generation] | None = None
        self._timeline: list[StateSpan] | None = None
        self._lags: list[PartitionLag] | None = None

    @property
    def group(self) -> str:
        return str(self.doc.get("group"))

    @property
    def generations(self) -> list[Generation]:
        if self._gens is None:
            self._gens = generations(self.doc, self.since)
        return self._gens

    @property
    def timeline(self) -> list[StateSpan]:
        if self._timeline is None:
            self._timeline = timeline(self.doc)
        return self._timeline

    @property
    def lags(self) -> list[PartitionLag]:
        if self._lags is None:
            self._lags = partition_lags(self.doc)
        return self._lags


def view_of(doc: dict[str, Any] | GroupView) -> GroupView:
    return doc if isinstance(doc, GroupView) else GroupView(doc)
