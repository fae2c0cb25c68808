"""A KIP-1071 streams group: a Kafka Streams application on `group.protocol=streams`, whose members
(stream threads' clients) are given tasks by the group coordinator itself: a task is a subtopology
and a partition of its source topics, active (processing), standby (a replica of its state) or
warm-up (a standby catching up before it takes over).

Kafka's own model is modern/streams/StreamsGroup, a modern group like ConsumerGroup: the group epoch
moves when membership or the topology changes, the assignment epoch when the coordinator's task
assignor has run, members reconcile towards their target tasks, and its state is one of Empty,
NotReady (no topology yet, or its source topics missing or wrongly partitioned), Assigning,
Reconciling, Stable and Dead.

It is rebuilt from its records in __consumer_offsets (StreamsGroupMetadata, StreamsGroupMemberMetadata,
StreamsGroupTargetAssignmentMetadata and ...Member, StreamsGroupCurrentMemberAssignment,
StreamsGroupTopology: types 17, 19-23), read into the KIP-848 evidence where the shapes agree (of kind
`streams`) and into evidence of their own for tasks and the topology; so every epoch is seen as the
coordinator wrote it, member first, epoch after, with who joined or left. StreamsGroupDescribe (the
Admin poller's) adds the broker's own state (only it knows whether the topology's topics are ready)
and, where the records are not read, is the whole of it: membership, tasks and epochs as described,
epochs counted between describes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from coordinator_model.consumer.group import ConsumerGroupModel
from coordinator_model.evidence import (
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    DescribeSnapshot,
    StreamsMemberTasks,
    StreamsTargetTasks,
    StreamsTopology,
    Subtopology,
    Tasks,
)
from coordinator_model.membership import STREAMS_MEMBER_STABLE, TP, Member
from coordinator_model.states import StreamsGroupState

STREAMS_PROTOCOL_TYPE = "streams"


def topics_read(source_topics: Iterable[str], repartition_source_topics: Iterable[str]) -> list[str]:
    """The topics a subtopology's tasks read (what the group commits offsets for): task (S, p) reads
    partition p of each of them."""
    return [*source_topics, *repartition_source_topics]


def task_partitions(tasks: Tasks, subtopologies: Iterable[Subtopology] | None) -> tuple[TP, ...]:
    """The topic-partitions tasks read (`topics_read`, at each task's partition). Unknown, so (),
    while the topology is."""
    reads = {st.id: topics_read(st.source_topics, st.repartition_source_topics) for st in subtopologies or ()}
    return tuple(sorted({(topic, p) for sub, parts in tasks for topic in reads.get(sub, ()) for p in parts}))


class StreamsGroupModel(ConsumerGroupModel):
    """The KIP-1071 part of one group's reconstruction."""

    # the group's own records were read: they, not the describes, say who the members are and what
    # they hold (a class default: models pickled before it was kept have none)
    from_records: bool = False

    def __init__(self, engine: Any) -> None:
        super().__init__(engine)
        self.topology_epoch: int | None = None
        self.subtopologies: tuple[Subtopology, ...] | None = None
        self.tasks: dict[str, StreamsMemberTasks] = {}  # member id -> its tasks, current and target

    def claim(self, source: str = "records") -> None:
        self.engine.as_streams(source)
        if source == "records":
            self.from_records = True

    def reset(self) -> None:
        super().reset()
        self.topology_epoch = None
        self.subtopologies = None
        self.tasks = {}
        self.from_records = False

    # the group's records
    def on_member(self, ev: ConsumerMemberSubscription) -> None:
        super().on_member(ev)  # joins and leaves, noted for the epoch bump the coordinator writes next
        if ev.deleted:
            self.tasks.pop(ev.member_id, None)
        elif ev.member_id in self.engine.members:
            held = self.tasks.get(ev.member_id) or StreamsMemberTasks(ev.member_id)
            self.tasks[ev.member_id] = replace(held, process_id=ev.process_id)

    def on_target_tasks(self, ev: StreamsTargetTasks) -> None:
        self.claim()
        held = self.tasks.get(ev.member_id)
        if held is None and (ev.tasks is None or ev.member_id not in self.engine.members):
            return  # a departed member's target, or the tombstone of one
        active, standby, warmup = ev.tasks or ((), (), ())
        held = held or StreamsMemberTasks(ev.member_id)
        self.tasks[ev.member_id] = replace(
            held, target_active=active, target_standby=standby, target_warmup=warmup
        )
        m = self.engine.members.get(ev.member_id)
        if m is not None:
            m.target_assignment = task_partitions(active, self.subtopologies) if ev.tasks else None

    def on_assignment(self, ev: ConsumerMemberAssignment) -> None:
        super().on_assignment(ev)  # the member's epoch and state
        m = self.engine.members.get(ev.member_id)
        held = self.tasks.get(ev.member_id)
        if m is None or (held is None and ev.deleted):
            return
        active, standby, warmup = ev.tasks or ((), (), ())
        held = held or StreamsMemberTasks(ev.member_id)
        self.tasks[ev.member_id] = replace(held, active=active, standby=standby, warmup=warmup)
        m.assignment = task_partitions(active, self.subtopologies)

    def on_topology(self, ev: StreamsTopology) -> None:
        self.claim()
        self.topology_epoch, self.subtopologies = ev.epoch, ev.subtopologies
        for mid, held in self.tasks.items():  # the partitions each member's tasks read
            m = self.engine.members.get(mid)
            if m is not None:
                m.assignment = task_partitions(held.active, self.subtopologies)
                if m.target_assignment is not None:
                    m.target_assignment = task_partitions(held.target_active, self.subtopologies)
        self.update_state(ev.ts)

    # StreamsGroupDescribe
    def on_describe(self, ev: DescribeSnapshot) -> None:
        if ev.type != "streams":
            return  # DescribeConsumerGroups does not describe streams groups: its answer is not about it
        self.engine.as_streams("describe_broker")
        if ev.broker_state:
            self.describe_state = (ev.ts, ev.broker_state)
        if not self.from_records:  # membership, tasks and the topology are the describe's
            if ev.streams is not None:
                self.topology_epoch = ev.streams.topology_epoch
                self.subtopologies = ev.streams.subtopologies
                self.tasks = {t.member_id: t for t in ev.streams.members}
            for mid in self.take_described_members(ev):
                self.tasks.pop(mid, None)
        # after the members: who joined and left is what the new epoch is about. With the records
        # read, only an epoch they have not shown yet is taken (theirs to confirm, as for a KIP-848
        # group): a describe answered before the records read is older than them
        newer = ev.group_epoch is not None and ev.group_epoch > (self.group_epoch or -1)
        if not self.from_records or newer:
            self.take_described_epochs(ev)
        self.update_state(ev.ts)

    def counted_members(self) -> list[Member]:
        return list(self.engine.members.values())

    def current_state(self) -> str:
        if self.engine.deleted:
            return StreamsGroupState.DEAD.value
        d = self.describe_state
        if d is not None and (not self.from_records or d[0] >= self.epoch_source_ts["records"]):
            return d[1]
        if not self.from_records:
            return (StreamsGroupState.STABLE if self.engine.members else StreamsGroupState.EMPTY).value
        # StreamsGroup.maybeUpdateGroupState, as far as the records tell: whether the topology's topics
        # are ready is the broker's to say (a describe), so a group with a topology is taken as ready
        members = self.counted_members()
        ae = self.assignment_epoch or 0
        if not members:
            return StreamsGroupState.EMPTY.value
        if self.topology_epoch is None:
            return StreamsGroupState.NOT_READY.value
        if (self.group_epoch or 0) > ae:
            return StreamsGroupState.ASSIGNING.value
        # a member without a current-assignment record is, like Kafka's default, stable at epoch 0
        unreconciled = (
            m.member_state not in (None, STREAMS_MEMBER_STABLE) or (m.member_epoch or 0) != ae
            for m in members
        )
        if any(unreconciled):
            return StreamsGroupState.RECONCILING.value
        return StreamsGroupState.STABLE.value
