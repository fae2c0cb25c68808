"""What the pages need from a group document that its types (coordinator_model/document/types.py) do
not give: the rows of the members and partitions tables, and the newest moment the document mentions.

Pages get the document as a GroupDocument (DashboardData.group reads it with
GroupDocument.from_json, once per document); nothing here reads JSON or guesses a field's spelling.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from coordinator_model.document.types import (
    GenerationDoc,
    GroupDocument,
    MemberDoc,
    OffsetDoc,
    TopicPartition,
)


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
    tasks: str | None = None  # a streams member's: "active 0:0-1; standby 1:0" (fmt_tasks)
    target_tasks: str | None = None
    process_id: str | None = None


def _ranges(parts: list[int]) -> str:
    """[0, 1, 2, 3, 5, 7, 8] -> "0-3,5,7-8": a run of partitions said by its ends."""
    out: list[str] = []
    ps = sorted(set(parts))
    i = 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        out.append(str(ps[i]) if i == j else f"{ps[i]}-{ps[j]}")
        i = j + 1
    return ",".join(out)


def _subtopology_key(sub: str) -> tuple[int, int | str]:
    # "2" before "10"; a named subtopology (not a number) after the numbered ones
    return (0, int(sub)) if sub.isdigit() else (1, sub)


def fmt_task_ids(ids: list[str]) -> str:
    """Task ids (Kafka's "<subtopology>_<partition>") said by subtopology, each one's partitions as
    ranges: ["0_0", "0_1", "0_2", "0_3", "1_5"] -> "0:0-3 1:5". A streams member with 24 tasks was
    a line of 24 ids, wider than the members grid; this is its few subtopologies. An id that is not
    of that form is said as it is."""
    by_sub: dict[str, list[int]] = {}
    odd: list[str] = []
    for t in ids:
        sub, sep, part = t.rpartition("_")
        if sep and sub and part.isdigit():
            by_sub.setdefault(sub, []).append(int(part))
        else:
            odd.append(t)
    said = [
        f"{sub}:{_ranges(ps)}" for sub, ps in sorted(by_sub.items(), key=lambda kv: _subtopology_key(kv[0]))
    ]
    return " ".join(said + sorted(odd))


def fmt_tasks(tasks: Any) -> str | None:
    """A streams member's TasksDoc -> "active 0:0-3 1:0-1; standby 1:2-3" (fmt_task_ids; None: not
    a streams member)."""
    if tasks is None:
        return None
    parts = [
        f"{kind} {fmt_task_ids(ids)}"
        for kind, ids in (("active", tasks.active), ("standby", tasks.standby), ("warm-up", tasks.warmup))
        if ids
    ]
    return "; ".join(parts) or "none"


def fmt_tps(tps: list[TopicPartition]) -> str:
    """[(t, 0), (t, 1), (u, 3)] -> 't: 0,1; u: 3'."""
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return "; ".join(f"{t}: {','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))


def member_rows(doc: GroupDocument, now_ms: int) -> list[MemberRow]:
    """A member's lag is over the partitions it owns whose lag is known (None when none is): the
    sum in offsets, the worst in seconds. Its heartbeat's age is as of the document (`as_of`, the
    moment the model has run to; `now_ms` for a document without one): live, the model runs a few
    seconds behind the clock (the event-time watermark's lateness), and measured against the
    page's clock a member beating every second read as older than a 6 s session timeout."""
    lag_by_tp = {(p.topic, p.partition): p for p in doc.lag.partitions}
    ref = int(doc.as_of) if doc.as_of else now_ms
    rows = []
    for m in doc.members:
        lags = [lag_by_tp[tp] for tp in m.assignment if tp in lag_by_tp]
        offs = [p.lag for p in lags if p.lag is not None]
        secs = [p.lag_seconds for p in lags if p.lag_seconds is not None]
        age = max(0, ref - m.last_heartbeat) / 1000 if m.last_heartbeat else None
        st = m.session_timeout_ms / 1000 if m.session_timeout_ms else None
        rows.append(
            MemberRow(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                partitions=len(m.assignment),
                assignment=fmt_tps(m.assignment),
                lag=sum(offs) if offs else None,
                lag_seconds=max(secs) if secs else None,
                heartbeat_age_s=round(age, 1) if age is not None else None,
                session_timeout_s=st,
                heartbeat_ratio=round(age / st, 2) if age is not None and st else None,
                member_epoch=m.member_epoch,
                state=m.state,
                target=fmt_tps(m.target_assignment) if m.target_assignment is not None else None,
                tasks=fmt_tasks(m.tasks),
                target_tasks=fmt_tasks(m.target_tasks),
                process_id=m.process_id,
            )
        )
    return rows


def shown_log_end(committed: int | None, end: int | None) -> tuple[int | None, bool]:
    """(the log-end offset the partitions table shows, whether it is a lower bound) for a partition's
    commit and the Admin poller's last log end.

    A log end below the commit ("end 100, committed 120", lag 0) is the poller's reading from
    before the commit: a consumer commits the offset after what it has read, so when it committed
    the log reached at least that far. The table shows the committed offset as the log end's lower
    bound ("≥ 120", the poller's reading in the cell's tooltip) rather than the old reading, which
    contradicts the row's own lag of 0, or a bare "stale", which hides the best number known. The
    lag is the model's and is not touched. (A client may commit past the log end, or the topic be
    recreated shorter; the tooltip's reading is there for that case.)"""
    if committed is not None and end is not None and end < committed:
        return committed, True
    return end, False


def partition_rows(doc: GroupDocument) -> list[dict[str, Any]]:
    """One line per partition of the group's lag (every partition it commits to or owns), with the
    time and metadata of its last commit. Raw values: the page formats them. `log_end` is at least
    the committed offset (shown_log_end): `log_end_bound` says it was raised, `log_end_read` is
    the poller's reading."""
    commits: dict[TopicPartition, OffsetDoc] = {(o.topic, o.partition): o for o in doc.offsets}
    out = []
    for p in doc.lag.partitions:
        o = commits.get((p.topic, p.partition))
        log_end, bound = shown_log_end(p.committed, p.end_offset)
        out.append(
            {
                "topic": p.topic,
                "partition": p.partition,
                "committed": p.committed,
                "log_end": log_end,
                "log_end_bound": bound,
                "log_end_read": p.end_offset,
                "lag": p.lag,
                "lag_seconds": p.lag_seconds,
                "status": p.status,
                "member": p.member_id,
                "commit_time": o.commit_timestamp if o is not None else None,
                "metadata": o.metadata if o is not None else None,
            }
        )
    return out


def member_named(member_id: str, client_id: str | None, host: str | None) -> tuple[str, str]:
    """(what a cell shows, its tooltip) for a member a generation or epoch names. A classic member's
    id starts with its client id (Kafka makes it "<client id>-<UUID>"), so it is said as it is; a
    KIP-848, share or streams member's is an opaque UUID, so, as a classic one reads, it is said by
    its client id and host ("orders-1 (/10.0.0.7)"), its id in the tooltip. Unknown client: its id."""
    if not client_id or member_id.startswith(client_id):
        return member_id, member_id + (f" on {host}" if host else "")
    shown = f"{client_id} ({host})" if host else client_id
    return shown, f"{shown}: member {member_id}"


def members_named(
    ids: Iterable[str], gen: GenerationDoc, members: Mapping[str, MemberDoc] | None = None
) -> tuple[str, str]:
    """(shown, tooltip) of a generation's joined or left members, comma-separated and each
    member_named: who each was as the epoch kept it (GenerationDoc.clients: kept after it left), else
    as the group's present member of that id says (an epoch written before epochs kept them)."""
    shown, whole = [], []
    for mid in ids:
        c = gen.client_of(mid)
        m = (members or {}).get(mid)
        if c is not None:
            cid, host = c.client_id, c.client_host
        elif m is not None:
            cid, host = m.client_id, m.client_host
        else:
            cid, host = None, None
        one, tip = member_named(mid, cid, host)
        shown.append(one)
        whole.append(tip)
    return ", ".join(shown), "; ".join(whole)


def latest_time(doc: GroupDocument) -> int | None:
    """The newest timestamp the document mentions: the right edge of 'all history'."""
    times: list[int] = [t.end or t.start for t in doc.timeline]
    for g in doc.generations:
        times.extend(t for t in (g.start, g.end) if t)
    times.extend(m.last_heartbeat for m in doc.members if m.last_heartbeat)
    return max(times) if times else None
