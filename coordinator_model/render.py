"""Human-readable rendering of group documents (what `groupscope model` prints without --json)."""

from __future__ import annotations

from datetime import UTC, datetime

from coordinator_model.document import GroupDocument, TopicPartition
from coordinator_model.streams.tasks import task_lags


def _t(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]


def _parts(assignment: list[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, p in assignment:
        by_topic.setdefault(topic, []).append(p)
    return " ".join(f"{t}[{','.join(map(str, sorted(ps)))}]" for t, ps in sorted(by_topic.items())) or "-"


def render_group(doc: GroupDocument) -> str:
    out = []
    kind = doc.type
    head = f"group {doc.group}  type={kind}  state={doc.state}  protocol={doc.protocol}"
    if doc.modern:  # KIP-848 consumer, KIP-932 share and KIP-1071 streams groups: epochs
        head += f"  group_epoch={doc.group_epoch}  assignment_epoch={doc.assignment_epoch}"
    else:
        head += f"  generation={doc.generation}  leader={doc.leader}"
    out.append(head)
    out.append(f"  coordinator partition {doc.coordinator_partition}; sources: {', '.join(doc.sources)}")
    for note in doc.inferred:
        out.append(f"  inferred: {note}")
    out.append(f"  members ({len(doc.members)}):")
    for m in doc.members:
        extra = f" epoch={m.member_epoch} {m.state}" if kind == "consumer" else ""
        if m.tasks is not None:  # a streams member: its tasks, then the partitions they read
            t = m.tasks
            tasks = " ".join(
                f"{name}[{','.join(ids)}]"
                for name, ids in (("active", t.active), ("standby", t.standby), ("warmup", t.warmup))
                if ids
            )
            extra = f" epoch={m.member_epoch} process={m.process_id} tasks {tasks or '-'}"
        inst = f" instance={m.group_instance_id}" if m.group_instance_id else ""
        out.append(f"    {m.member_id} client={m.client_id}{inst}{extra}: {_parts(m.assignment)}")
    if doc.topology is not None:
        subs = doc.topology.subtopologies
        out.append(f"  topology (epoch {doc.topology.epoch}){'' if subs is not None else ': not ready'}")
        for st in subs or ():
            reads = ", ".join(st.source_topics + st.repartition_source_topics) or "-"
            sinks, changelogs = (
                ", ".join(st.repartition_sink_topics) or "-",
                ", ".join(st.changelog_topics) or "-",
            )
            out.append(
                f"    subtopology {st.id}: reads {reads}; repartitions to {sinks}; changelogs {changelogs}"
            )
    out.append("  generations:")
    for g in doc.generations:
        dur = f"{g.duration_ms} ms" if g.duration_ms is not None else "in progress"
        inf = f" (inferred: {', '.join(g.inferred)})" if g.inferred else ""
        out.append(
            f"    {g.generation}: {_t(g.start)} {g.cause} rebalance {dur}, "
            f"+{len(g.members_joined)} -{len(g.members_left)}, protocol {g.protocol}{inf}"
        )
        if g.gap_ms is not None or g.member_id:
            what = "silent" if g.cause == "session_timeout" else "not polling"
            gap = f" {what} for {g.gap_ms} ms" if g.gap_ms is not None else ""
            out.append(f"       member {g.member_id}{gap}")
        if g.reason:
            out.append(f"       reason: {g.reason}")
    out.append("  timeline:")
    for row in doc.timeline:
        if row.end is not None and row.end == row.start:
            continue
        flag = " (inferred)" if row.inferred else ""
        out.append(f"    {_t(row.start)} - {_t(row.end)}  {row.state}{flag}")
    lag = doc.lag
    out.append(f"  lag: total={lag.total} max_seconds={lag.max_seconds} status={lag.status}")
    for p in lag.partitions:
        committed = p.committed if p.has_commit else "no commit"
        out.append(
            f"    {p.topic}-{p.partition}: committed={committed} end={p.end_offset} lag={p.lag} "
            f"({p.lag_seconds} s) {p.status}"
        )
    tasks = task_lags(doc)
    if tasks:  # a streams group: its lag as its application reads it, per active task
        out.append("  lag per task:")
        for t in tasks:
            who = t.client_id or t.member_id or "no member"
            out.append(f"    {t.task} ({who}): lag={t.lag} ({t.lag_seconds} s) reads {_parts(t.partitions)}")
    return "\n".join(out)


def render_text(docs: list[GroupDocument], files: list[str]) -> str:
    head = f"{len(docs)} group(s) from {', '.join(files)}"
    return "\n\n".join([head, *(render_group(d) for d in docs)])
