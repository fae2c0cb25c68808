"""Kafka's GroupMetadata.removeExpiredOffsets, the one rule for when a group's committed offsets
expire: which offsets can expire in the group's present state (`expiry_rule`, its match on protocol
type and state) and their removal (`remove_expired_offsets`). The test of each offset
(getExpiredOffsets: its own expire timestamp, else the retention after the base time) is
OffsetStore.expiries.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from coordinator_model.offsets.store import TP, OffsetStore

DEFAULT_OFFSETS_RETENTION_MS = 7 * 24 * 3600 * 1000  # offsets.retention.minutes = 10080
CONSUMER_PROTOCOL_TYPE = "consumer"  # ConsumerProtocol.PROTOCOL_TYPE

# getExpiredOffsets' arguments: the base time (None: each offset's own commit timestamp) and which
# partitions may expire (None: all of them)
ExpiryRule = tuple[int | None, Callable[[TP], bool] | None]


def expiry_rule(
    protocol_type: str | None,
    state: str | None,
    current_state_timestamp: int | None,
    subscribed_topics: Collection[str] | None,
) -> ExpiryRule | None:
    """removeExpiredOffsets' choice, in Kafka's order (None: no offset expires in this state):
    - a group with a protocol type that is Empty: from when it became Empty
      (`current_state_timestamp`; unknown, each offset's commit time);
    - a consumer group whose subscriptions are known: the topics it no longer subscribes to, from
      their commit time;
    - a standalone group (no protocol type: assign() and commit): from the commit time;
    - any other: none."""
    if protocol_type and state == "Empty":
        return current_state_timestamp, None
    if protocol_type == CONSUMER_PROTOCOL_TYPE:
        if subscribed_topics is None:
            return None
        return None, lambda tp: tp[0] not in subscribed_topics
    if not protocol_type:
        return None, None
    return None


def remove_expired_offsets(store: OffsetStore, now: int, retention_ms: int, rule: ExpiryRule) -> None:
    """Drop the offsets of `store` that `rule` lets expire by `now`."""
    first = store.first_expiry(retention_ms, *rule)
    if first is not None and now >= first:  # (almost never: the list is made only then)
        store.expire(now, store.expiries(retention_ms, *rule))
