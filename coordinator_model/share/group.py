"""A KIP-932 share group: members that share the records of their topics' partitions (each record
delivered to one member, acknowledged one by one), rebuilt from its records in __consumer_offsets
(ShareGroupMetadata, ShareGroupMemberMetadata, ShareGroupTargetAssignment..., ShareGroup
CurrentMemberAssignment, ShareGroupStatePartitionMetadata) and the broker's log.

Kafka's own model is modern/share/ShareGroup, a ModernGroup like modern/consumer/ConsumerGroup: the
group epoch moves when membership or subscriptions change (or a subscribed topic's share-partition
state is initialized), the assignment epoch when the assignor (SimpleAssignor by default) has run,
and members take their partitions at once. So this model is the KIP-848 one (its records have the
same shape: evidence.py reads them into the same evidence, of kind `share`) with the share group's
own state rule: Empty without members, else Stable. A share group commits no offsets: its progress is
the share-partition start offset the share coordinator keeps in __share_group_state, which
groupscope does not read yet (the document says so).
"""

from __future__ import annotations

from coordinator_model.consumer.group import ConsumerGroupModel
from coordinator_model.states import derive_share_group_state

SHARE_PROTOCOL_TYPE = "share"


class ShareGroupModel(ConsumerGroupModel):
    """The KIP-932 part of one group's reconstruction."""

    def claim(self, source: str = "records") -> None:
        self.engine.as_share(source)

    def current_state(self) -> str:
        if self.engine.deleted:
            return "Dead"
        return derive_share_group_state(len(self.counted_members())).value
