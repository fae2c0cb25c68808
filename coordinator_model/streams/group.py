"""A KIP-1071 streams group: a Kafka Streams application on `group.protocol=streams`, whose members
(stream threads' clients) are given tasks by the group coordinator itself: a task is a subtopology
and a partition of its source topics, active (processing), standby (a replica of its state) or
warm-up (a standby catching up before it takes over).

Kafka's own model is modern/streams/StreamsGroup, a modern group like ConsumerGroup: the group epoch
moves when membership or the topology changes, the assignment epoch when the coordinator's task
assignor has run, members reconcile towards their target tasks, and its state is one of Empty,
NotReady (no topology yet, or its source topics missing or wrongly partitioned), Assigning,
Reconciling, Stable and Dead. Its records in __consumer_offsets (types 17, 19-23) are decoded but not
read into evidence yet: this model is rebuilt from StreamsGroupDescribe (the Admin poller's) and the
group's offset commits, which a streams group makes like any other (its source and repartition
topics). So the broker's state, epochs, members and tasks are taken as described, and epochs are
counted between describes, as for a KIP-848 group without its records.
"""

from __future__ import annotations

from typing import Any

from coordinator_model.consumer.group import ConsumerGroupModel
from coordinator_model.evidence import DescribeSnapshot, StreamsMemberTasks, Subtopology
from coordinator_model.membership import Member
from coordinator_model.states import StreamsGroupState

STREAMS_PROTOCOL_TYPE = "streams"


class StreamsGroupModel(ConsumerGroupModel):
    """The KIP-1071 part of one group's reconstruction."""

    def __init__(self, engine: Any) -> None:
        super().__init__(engine)
        self.topology_epoch: int | None = None
        self.subtopologies: tuple[Subtopology, ...] | None = None
        self.tasks: dict[str, StreamsMemberTasks] = {}  # member id -> its tasks, as last described

    def claim(self, source: str = "records") -> None:
        self.engine.as_streams(source)

    def reset(self) -> None:
        super().reset()
        self.topology_epoch = None
        self.subtopologies = None
        self.tasks = {}

    def on_describe(self, ev: DescribeSnapshot) -> None:
        if ev.type != "streams":
            return  # DescribeConsumerGroups does not describe streams groups: its answer is not about it
        self.claim("describe_broker")
        if ev.broker_state:
            self.describe_state = (ev.ts, ev.broker_state)
        if ev.streams is not None:
            self.topology_epoch = ev.streams.topology_epoch
            self.subtopologies = ev.streams.subtopologies
            self.tasks = {t.member_id: t for t in ev.streams.members}
        # membership is the describe's (the group's own records are not read yet)
        for mid in self.take_described_members(ev):
            self.tasks.pop(mid, None)
        # after the members: who joined and left is what the new epoch is about
        self.take_described_epochs(ev)
        self.update_state(ev.ts)

    def counted_members(self) -> list[Member]:
        return list(self.engine.members.values())

    def current_state(self) -> str:
        if self.engine.deleted:
            return StreamsGroupState.DEAD.value
        if self.describe_state is not None:
            return self.describe_state[1]
        return (StreamsGroupState.STABLE if self.engine.members else StreamsGroupState.EMPTY).value
