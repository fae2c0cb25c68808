"""The writer of the group document (types.py): one group's reconstruction, read from the engine's
models. The engine's `document()` is its only caller, and so the document's only writer.
"""

from __future__ import annotations

from typing import Any, Protocol

from coordinator_model.coordinator_partition import coordinator_partition
from coordinator_model.document.types import (
    ClientDoc,
    Conflict,
    CoordinatorDoc,
    Denied,
    GenerationDoc,
    GroupDocument,
    LagDoc,
    MemberDoc,
    SubtopologyDoc,
    TasksDoc,
    TimelineSpan,
    TopologyDoc,
)
from coordinator_model.group_context import GroupContext
from coordinator_model.membership import MEMBER_STATES, STREAMS_MEMBER_STATES
from coordinator_model.states import MODERN_TYPES


class DocumentedGroup(GroupContext, Protocol):
    """What the document is written from: the shared parts of the group and its kind's model."""

    group: str
    conflicts: dict[str, dict[str, Any]]
    denied: dict[str, dict[str, Any]]
    coordinator: tuple[int, str, int] | None
    classic: Any  # classic.ClassicGroupModel
    consumer: Any  # consumer.ConsumerGroupModel

    def lag(self, now: int) -> LagDoc: ...


def group_document(engine: DocumentedGroup, now: int) -> GroupDocument:
    """One group's document as of `now`: what `groupscope model --json` prints (its `to_json`) and
    the sink stores (docs/redis-schema.md)."""
    modern = engine.type in MODERN_TYPES  # KIP-848 consumer, KIP-932 share and KIP-1071 streams groups
    streams_tasks = getattr(engine.consumer, "tasks", None) if engine.type == "streams" else None
    members = []
    for m in sorted(engine.members.values(), key=lambda m: m.member_id):
        doc = MemberDoc(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            session_timeout_ms=m.session_timeout_ms,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            subscription=list(m.subscription),
            assignment=list(m.assignment),
            last_heartbeat=m.last_heartbeat,
        )
        if modern:
            doc.modern = True
            doc.member_epoch = m.member_epoch
            states = STREAMS_MEMBER_STATES if engine.type == "streams" else MEMBER_STATES
            doc.state = states.get(m.member_state) if m.member_state is not None else None
            doc.pending_revocation = list(engine.consumer.names(m.pending_ids))
            doc.target_assignment = list(m.target_assignment) if m.target_assignment is not None else None
        tasks = streams_tasks.get(m.member_id) if streams_tasks is not None else None
        if tasks is not None:
            doc.tasks = TasksDoc(_task_ids(tasks.active), _task_ids(tasks.standby), _task_ids(tasks.warmup))
            doc.target_tasks = TasksDoc(
                _task_ids(tasks.target_active),
                _task_ids(tasks.target_standby),
                _task_ids(tasks.target_warmup),
            )
            doc.process_id = tasks.process_id or None
        members.append(doc)
    timeline = []
    for i, (state, start, inferred) in enumerate(engine.timeline):
        end = engine.timeline[i + 1][1] if i + 1 < len(engine.timeline) else None
        timeline.append(TimelineSpan(state, start, end, bool(inferred)))
    gens_src = engine.consumer.epochs if modern else engine.classic.generations
    generations = []
    for k in sorted(gens_src):
        g = gens_src[k]
        generations.append(
            GenerationDoc(
                generation=g.generation,
                start=g.start,
                end=g.end,
                stabilized=g.stabilized,
                stable=g.stable,
                duration_ms=(g.stable - g.start) if g.stable is not None else None,
                members=list(g.members),
                members_joined=list(g.joined),
                members_left=list(g.left),
                assignment={mid: list(a) for mid, a in g.assignment.items()},
                protocol=g.protocol,
                leader=g.leader,
                cause=g.cause,
                reason=g.reason,
                empty=g.empty,
                inferred=sorted(g.inferred),
                member_id=g.member_id,
                gap_ms=g.gap_ms,
                clients={mid: ClientDoc(cid, host) for mid, (cid, host) in g.clients.items()},
            )
        )
    if engine.classic.open is not None and not modern:
        g = engine.classic.open
        engine.classic.fill_gap(g)
        overdue = max([m.rebalance_timeout_ms or 0 for m in engine.members.values()] + [0])
        generations.append(
            GenerationDoc(
                generation=(engine.classic.generation or 0) + 1 if g.generation is None else g.generation,
                start=g.start,
                in_progress_ms=max(0, now - g.start),
                overdue=bool(overdue) and now - g.start > overdue,
                members=list(engine.members),
                members_joined=list(g.joined),
                members_left=list(g.left),
                cause=g.cause,
                reason=g.reason,
                inferred=sorted(g.inferred | {"generation"} if g.generation is None else g.inferred),
                member_id=g.member_id,
                gap_ms=g.gap_ms,
            )
        )
    return GroupDocument(
        group=engine.group,
        type=engine.type or "classic",
        state=engine.state if engine.state is not None else ("Empty" if engine.offsets.committed else None),
        protocol_type=engine.protocol_type
        if engine.protocol_type
        else (None if engine.classic.simple else engine.protocol_type),
        protocol=engine.consumer.assignor if modern else engine.classic.protocol,
        generation=None if modern else engine.classic.generation,
        group_epoch=engine.consumer.group_epoch if modern else None,
        assignment_epoch=engine.consumer.assignment_epoch if modern else None,
        leader=None if modern else engine.classic.leader,
        coordinator_partition=coordinator_partition(engine.group),
        coordinator=CoordinatorDoc(*engine.coordinator) if engine.coordinator is not None else None,
        simple=engine.classic.simple,
        members=members,
        offsets=engine.offsets.rows(),
        timeline=timeline,
        generations=generations,
        lag=engine.lag(now),
        sources=sorted(engine.sources),
        inferred=inferred_notes(engine),
        conflicts=[Conflict(**c) for c in engine.conflicts.values()],
        denied={k: Denied(**v) for k, v in sorted(engine.denied.items())},
        as_of=now,
        topology=_topology(engine.consumer) if engine.type == "streams" else None,
    )


def _task_ids(tasks: Any) -> list[str]:
    """((subtopology, (partition, ...)), ...) -> Kafka's task names, "<subtopology>_<partition>"."""
    return [f"{sub}_{p}" for sub, parts in tasks for p in parts]


def _topology(model: Any) -> TopologyDoc | None:
    """A streams group's topology as last described (None before any describe told it)."""
    epoch, subs = getattr(model, "topology_epoch", None), getattr(model, "subtopologies", None)
    if epoch is None and subs is None:
        return None
    return TopologyDoc(
        epoch=epoch,
        subtopologies=None
        if subs is None
        else [
            SubtopologyDoc(
                id=st.id,
                source_topics=list(st.source_topics),
                repartition_source_topics=list(st.repartition_source_topics),
                repartition_sink_topics=list(st.repartition_sink_topics),
                changelog_topics=list(st.changelog_topics),
            )
            for st in subs
        ],
    )


# What a refusal of the broker leaves unknown (docs/security.md).
DENIED_NOTES = {
    "describe": "members/assignment/state: the broker refuses to describe this group to groupscope",
    "offsets": "committed offsets: the broker refuses them to groupscope (no OffsetFetch for this group)",
    "end_offsets": "lag: the broker refuses the end offsets of some of its topics to groupscope",
}


def inferred_notes(engine: DocumentedGroup) -> list[str]:
    """What the document says it could not see, and so inferred or left out."""
    s = engine.sources
    notes = [
        f"conflict ({c['kind']}, {c['count']}x): {c['note']}; not believed" for c in engine.conflicts.values()
    ]
    for what, d in sorted(engine.denied.items()):
        notes.append(DENIED_NOTES[what] + f" ({d['error']})")
    if engine.type == "share":
        from coordinator_model.evidence import SHARE_START_OFFSETS

        if SHARE_START_OFFSETS in s:
            notes.append(
                "lag: the broker's share-partition lag (Admin API, DescribeShareGroupOffsets); the offset "
                "shown is the position it implies (log-end minus lag), not the share-partition start offset"
            )
        else:
            notes.append("lag: a share group commits no offsets (share-partition start offsets not read)")
    if engine.type == "streams":
        if getattr(engine.consumer, "from_records", False):
            if "describe" not in s:
                notes.append(
                    "state: from the group's records; whether its topology's topics are ready (NotReady) "
                    "is the broker's to say (StreamsGroupDescribe not read)"
                )
        else:
            notes.append(
                "streams group: state, epochs, members and tasks as of the last StreamsGroupDescribe "
                "(its records in __consumer_offsets not read); offsets and lag from its commits"
            )
        return notes
    if engine.type in MODERN_TYPES:
        if not {"offsets", "describe", "broker_log"} & s:
            notes.append("state: Empty/Stable from client events only; epochs and reconciliation unknown")
            return notes
        if "offsets" not in s and "describe" not in s:
            notes.append("state: derived from broker epoch lines; member reconciliation is not observed")
        if "offsets" not in s and "broker_log" not in s:
            notes.append("epochs: only as of the last Admin API snapshot")
        return notes
    if "broker_log" not in s:
        notes.append("rebalance reasons: causes inferred from membership changes (no broker log)")
        notes.append("timeline: PreparingRebalance starts inferred from client events or snapshots")
    if "offsets" not in s and "broker_log" not in s:
        notes.append("generation: counted from observed rebalances (no GroupMetadata records, no broker log)")
    if "offsets" not in s and "describe" not in s:
        notes.append("members/assignment: from client events and broker log only")
    if "heartbeats" not in s:
        notes.append("last_heartbeat: unknown (no client heartbeat events)")
    return notes
