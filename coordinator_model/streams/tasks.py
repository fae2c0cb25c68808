"""A streams group's lag per task: what an operator of a Kafka Streams application reads it by.

A task (subtopology S, partition p) reads partition p of each of S's source topics and of the
repartition topics S reads; its lag is the sum of those partitions' lags (in offsets) and the worst
of their lags in seconds, from the group document's lag rows. Only active tasks process, so only
they have a lag and an owner; a standby or warm-up task replays a changelog, which the group commits
no offsets for."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator_model.document import GroupDocument, TopicPartition
from coordinator_model.streams.group import topics_read


@dataclass(slots=True)
class TaskLag:
    """One active task: its id as Kafka prints it ("<subtopology>_<partition>"), the member running
    it (None: no member holds it now), the topic-partitions it reads and their lag (None when no
    partition's lag is known)."""

    task: str
    member_id: str | None
    client_id: str | None
    partitions: list[TopicPartition] = field(default_factory=list)
    lag: int | None = None
    lag_seconds: float | None = None


def task_id(subtopology: str, partition: int) -> str:
    return f"{subtopology}_{partition}"


def split_task(task: str) -> tuple[str, int] | None:
    """ "1_3" -> ("1", 3); None for what is not a task id (a subtopology id may hold underscores: the
    partition is what follows the last one)."""
    sub, _, part = task.rpartition("_")
    return (sub, int(part)) if sub and part.isdigit() else None


def task_lags(doc: GroupDocument) -> list[TaskLag]:
    """Every task of the group's topology that a member runs or whose partitions have a lag row, in
    task order; [] without a topology (not a streams group, or no member brought one yet)."""
    topo = doc.topology
    if topo is None or not topo.subtopologies:
        return []
    reads = {st.id: topics_read(st.source_topics, st.repartition_source_topics) for st in topo.subtopologies}
    owner: dict[str, tuple[str, str | None]] = {}
    for m in doc.members:
        for t in m.tasks.active if m.tasks is not None else ():
            owner[t] = (m.member_id, m.client_id)
    rows = {(p.topic, p.partition): p for p in doc.lag.partitions}
    tasks = set(owner)
    for sub, topics in reads.items():  # a task no member runs now still has its partitions' lag
        tasks.update(task_id(sub, p) for (t, p) in rows if t in topics)
    out = []
    for task in tasks:
        parsed = split_task(task)
        if parsed is None or parsed[0] not in reads:
            continue
        sub, p = parsed
        parts = [(t, p) for t in reads[sub]]
        lags = [rows[tp] for tp in parts if tp in rows and rows[tp].lag is not None]
        seconds = [r.lag_seconds for r in lags if r.lag_seconds is not None]
        mid, client = owner.get(task, (None, None))
        out.append(
            TaskLag(
                task,
                mid,
                client,
                parts,
                sum(r.lag for r in lags) if lags else None,  # type: ignore[misc]
                max(seconds) if seconds else None,
            )
        )
    return sorted(out, key=_order)


def _order(t: TaskLag) -> tuple[int, str, int]:
    """Task order: subtopologies as numbers where they are (Kafka numbers them), then partitions."""
    sub, p = split_task(t.task) or ("", 0)
    return len(sub), sub, p
