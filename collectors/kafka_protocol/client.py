"""The public calls: find group coordinators, resolve topic ids, describe KIP-848 groups with
ConsumerGroupDescribe, which librdkafka does not expose with its epochs, list and describe KIP-932
share groups (ListGroups v5, ShareGroupDescribe v1, Kafka 4.1+), which librdkafka does not expose at
all, and fetch many groups' committed offsets per request (OffsetFetch v8+), which librdkafka does
one group a request, and which crashes librdkafka 2.16 when a coordinator moves or loads
(confluentinc/librdkafka#5040).

`describe_consumer_groups_kip848(conf, group_ids, timeout_s)` returns, per group, the `"broker"`
block of a describe.jsonl line (see coordinator_model/evidence.py `from_describe_json`):

    {"state", "group_epoch", "assignment_epoch", "assignor",
     "members": [{"member_id", "member_epoch", "instance_id", "client_id", "member_type",
                  "subscribed": [topic, ...], "assignment": [[topic, p], ...],
                  "target_assignment": [[topic, p], ...]}]}

or, for a group the broker answered with an error (GROUP_ID_NOT_FOUND for an unknown group and for
a classic group, GROUP_AUTHORIZATION_FAILED, a coordinator that could not be reached, ...):

    {"error": "GROUP_ID_NOT_FOUND", "error_code": 69, "error_message": "..."}

One group's error never fails the others. Whole-call failures (no broker reachable, wrong
password, a broker without ConsumerGroupDescribe) raise a KafkaProtocolError.

One FindCoordinator (v4+, all groups at once) and then one ConsumerGroupDescribe per coordinator,
all coordinators' requests in flight together; topic names come from one Metadata request by topic
id (v12+), falling back to the names the coordinator put in its answer.

`describe_share_groups(conf, group_ids, timeout_s)` (`KafkaProtocolClient.describe_share`) returns
the same blocks for share groups, their members without instance id, member type or target
assignment, with "rack_id" and "client_host" (ShareGroupDescribe has them), one ShareGroupDescribe
per coordinator. A share group commits no offsets: it is not OffsetFetch'ed. librdkafka lists no
share groups either: `KafkaProtocolClient.list_share_groups()` does (ListGroups v5, TypesFilter
["share"], to every broker of one Metadata answer). A share group's progress is its share-partition
start offsets: `KafkaProtocolClient.describe_share_group_offsets(group_ids)` returns, per group,
[(topic, partition, start offset, lag), ...] or its GroupError (DescribeShareGroupOffsets v0-1, many
groups a request to their coordinator, as OffsetFetch).

`KafkaProtocolClient.fetch_committed(group_ids)` returns, per group, its committed offsets
[(topic, partition, offset), ...] (sorted, offset -1 left out) or its GroupError, the same way: one
FindCoordinator, then OffsetFetch requests of up to 500 groups to each coordinator; groups answered
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE (or whose coordinator
could not be reached) find their coordinator again and are asked again until the call's deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from collectors.kafka_protocol.connection import Deadline
from collectors.kafka_protocol.coordinators import (
    CHUNK_GROUPS,
    MAX_ROUNDS,
    CoordinatorClient,
    GroupError,
    Node,
    described_groups,
)
from collectors.kafka_protocol.describe_lines import broker_block, share_broker_block, streams_broker_block
from collectors.kafka_protocol.errors import (
    BrokerError,
    UnsupportedVersionError,
    error_name,
)
from collectors.kafka_protocol.messages import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    OFFSET_FETCH,
    SHARE_GROUP_DESCRIBE,
    STREAMS_GROUP_DESCRIBE,
)

log = logging.getLogger("groupscope.kafka_protocol")

Committed = list[tuple[str, int, int]]  # (topic, partition, committed offset), sorted
# (topic, partition, share-partition start offset, the broker's lag or -1), sorted; start offset -1:
# the share-partition is not initialised yet
StartOffsets = list[tuple[str, int, int, int]]


class KafkaProtocolClient(CoordinatorClient):
    """The calls groupscope makes over the shared connections (coordinators.py): describes and
    committed offsets of many groups a request. Not thread-safe: one caller at a time."""

    def consumer_group_describe(
        self, group_ids: Iterable[str], deadline: Deadline | None = None
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each group's DescribedGroup (the decoded response struct), or its error."""

        return self._per_coordinator(
            CONSUMER_GROUP_DESCRIBE,
            group_ids,
            lambda groups: {"group_ids": groups, "include_authorized_operations": False},
            described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
        )

    # -- DescribeGroups (classic groups) ---------------------------------------------------------
    def describe_groups(
        self,
        group_ids: Iterable[str],
        deadline: Deadline | None = None,
        coordinators: dict[str, Node] | None = None,
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each classic group's DescribedGroup (DescribeGroups v5-6, the decoded response struct, its
        members' MemberMetadata and MemberAssignment left as bytes), or its error: many groups a
        request to each coordinator. A group of another type (KIP-848, share) or none at all is
        GROUP_ID_NOT_FOUND from v6 on, Dead before. `coordinators` gets each group's coordinator."""

        return self._per_coordinator(
            DESCRIBE_GROUPS,
            group_ids,
            lambda groups: {"groups": groups, "include_authorized_operations": False},
            described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
            coordinators=coordinators,
        )

    # -- ShareGroupDescribe (KIP-932) -------------------------------------------------------------
    def share_group_describe(
        self,
        group_ids: Iterable[str],
        deadline: Deadline | None = None,
        coordinators: dict[str, Node] | None = None,
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each share group's DescribedGroup (ShareGroupDescribe v1, the decoded response struct), or
        its error (GROUP_ID_NOT_FOUND for an unknown group and for a group of another type)."""

        return self._per_coordinator(
            SHARE_GROUP_DESCRIBE,
            group_ids,
            lambda groups: {"group_ids": groups, "include_authorized_operations": False},
            described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
            coordinators=coordinators,
        )

    def describe_share(
        self,
        group_ids: Iterable[str],
        deadline: Deadline | None = None,
        coordinators: dict[str, Node] | None = None,
    ) -> dict[str, dict]:
        """The `"broker"` block (or error block) of each share group: the KIP-848 block's shape
        (see the module docstring), its members without instance id, member type or target
        assignment (a share group has none: members take their partitions at once). `coordinators`
        gets each group's coordinator."""
        deadline = deadline or Deadline(self.timeout_s)
        described = self.share_group_describe(group_ids, deadline, coordinators)
        ids = {
            tp["topic_id"]
            for d in described.values()
            if isinstance(d, dict)
            for m in d["members"]
            for tp in m["assignment"]["topic_partitions"]
        }
        try:
            names = self.topic_names(ids, deadline)
        except (UnsupportedVersionError, BrokerError) as exc:
            log.debug("topic ids not resolved through Metadata: %s", exc)
            names = {}
        return {
            g: d.as_block() if isinstance(d, GroupError) else share_broker_block(d, names)
            for g, d in described.items()
        }

    # -- StreamsGroupDescribe (KIP-1071) ----------------------------------------------------------
    def streams_group_describe(
        self,
        group_ids: Iterable[str],
        deadline: Deadline | None = None,
        coordinators: dict[str, Node] | None = None,
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each streams group's DescribedGroup (StreamsGroupDescribe v0, the decoded response struct),
        or its error (GROUP_ID_NOT_FOUND for an unknown group and for a group of another type)."""

        return self._per_coordinator(
            STREAMS_GROUP_DESCRIBE,
            group_ids,
            lambda groups: {"group_ids": groups, "include_authorized_operations": False},
            described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
            coordinators=coordinators,
        )

    def describe_streams(
        self,
        group_ids: Iterable[str],
        deadline: Deadline | None = None,
        coordinators: dict[str, Node] | None = None,
    ) -> dict[str, dict]:
        """The `"broker"` block (or error block) of each streams group (`streams_broker_block`).
        `coordinators` gets each group's coordinator."""
        described = self.streams_group_describe(group_ids, deadline, coordinators)
        return {
            g: d.as_block() if isinstance(d, GroupError) else streams_broker_block(d)
            for g, d in described.items()
        }

    # -- DescribeShareGroupOffsets (KIP-932) ------------------------------------------------------
    def describe_share_group_offsets(
        self,
        groups: Iterable[str] | Mapping[str, Mapping[str, Iterable[int]] | None],
        deadline: Deadline | None = None,
        chunk: int = CHUNK_GROUPS,
    ) -> dict[str, StartOffsets | GroupError]:
        """Each share group's share-partition start offsets, [(topic, partition, start offset, lag),
        ...] sorted, or its error (GROUP_ID_NOT_FOUND for an unknown group and for a group of another
        type, GROUP_AUTHORIZATION_FAILED, ...). `groups`: group ids (every topic-partition the group
        has share-partition state for: Topics null), or {group: {topic: [partition, ...]} or None}.

        A start offset of -1: the share-partition is not initialised (no record delivered yet). The
        lag is the broker's (DescribeShareGroupOffsets v1, KIP-1226), -1 when it has none (v0: Kafka
        4.1/4.2). Partitions answered with an error (TOPIC_AUTHORIZATION_FAILED, ...) are left out.
        DescribeShareGroupOffsets v0-1, `chunk` groups a request to their coordinator, retried as
        `fetch_committed` is when a coordinator moved or is loading."""
        wanted: dict[str, Mapping[str, Iterable[int]] | None] = (
            dict(groups) if isinstance(groups, Mapping) else dict.fromkeys(groups)
        )

        def topics(g: str) -> list[dict[str, Any]] | None:
            asked = wanted.get(g)
            if asked is None:
                return None
            return [{"topic_name": t, "partitions": sorted(set(ps))} for t, ps in sorted(asked.items())]

        def body(gs: list[str]) -> dict[str, Any]:
            return {"groups": [{"group_id": g, "topics": topics(g)} for g in gs]}

        fetched = self._per_coordinator(
            DESCRIBE_SHARE_GROUP_OFFSETS,
            wanted,
            body,
            described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
            chunk=max(1, chunk),
        )
        return {g: v if isinstance(v, GroupError) else start_offsets(v) for g, v in fetched.items()}

    # -- OffsetFetch -------------------------------------------------------------------------------
    def fetch_committed(
        self, group_ids: Iterable[str], deadline: Deadline | None = None, chunk: int = CHUNK_GROUPS
    ) -> dict[str, Committed | GroupError]:
        """Each group's committed offsets, [(topic, partition, offset), ...] sorted, partitions without
        one (offset -1) left out; an empty list for a group that has none (or that does not exist: Kafka
        answers both alike). Or the group's error (GROUP_AUTHORIZATION_FAILED, ...; NOT_COORDINATOR and
        the like only when retrying until the deadline did not get past them).

        OffsetFetch v8-9 (KIP-709), `chunk` groups a request to their coordinator, all topics of each
        group (Topics null), RequireStable false: offsets of open transactions are not waited for, as
        librdkafka's list_consumer_group_offsets does by default."""

        def body(groups: list[str]) -> dict[str, Any]:
            return {
                "groups": [
                    {"group_id": g, "member_id": None, "member_epoch": -1, "topics": None} for g in groups
                ],
                "require_stable": False,
            }

        def answers(answer: dict[str, Any]) -> Iterator[tuple[str, int, str | None, Any]]:
            for group in answer["groups"]:
                yield group["group_id"], group["error_code"], None, group

        fetched = self._per_coordinator(
            OFFSET_FETCH, group_ids, body, answers, deadline or Deadline(self.timeout_s), chunk=max(1, chunk)
        )
        return {g: v if isinstance(v, GroupError) else _committed(v) for g, v in fetched.items()}

    def describe_kip848(self, group_ids: Iterable[str], deadline: Deadline | None = None) -> dict[str, dict]:
        """The `"broker"` block (or error block) of each group: see the module docstring."""
        deadline = deadline or Deadline(self.timeout_s)
        described = self.consumer_group_describe(group_ids, deadline)
        ids = {
            tp["topic_id"]
            for d in described.values()
            if isinstance(d, dict)
            for m in d["members"]
            for a in (m["assignment"], m["target_assignment"])
            for tp in a["topic_partitions"]
        }
        try:
            names = self.topic_names(ids, deadline)
        except (UnsupportedVersionError, BrokerError) as exc:
            # The coordinator's answer carries names too; they only lack the check against Metadata.
            log.debug("topic ids not resolved through Metadata: %s", exc)
            names = {}
        return {
            g: d.as_block() if isinstance(d, GroupError) else broker_block(d, names)
            for g, d in described.items()
        }


def _committed(group: Mapping[str, Any]) -> Committed:
    out = []
    for t in group["topics"]:
        for p in t["partitions"]:
            if p["error_code"]:  # none expected with RequireStable false and all topics asked for
                log.debug(
                    "OffsetFetch %s %s-%d: %s",
                    group["group_id"],
                    t["name"],
                    p["partition_index"],
                    error_name(p["error_code"]),
                )
            elif p["committed_offset"] >= 0:
                out.append((t["name"], p["partition_index"], p["committed_offset"]))
    return sorted(out)


def start_offsets(group: Mapping[str, Any]) -> StartOffsets:
    """A decoded DescribeShareGroupOffsetsResponseGroup (no group error) -> [(topic, partition, start
    offset, lag), ...] sorted; partitions answered with an error left out (logged)."""
    out = []
    for t in group["topics"]:
        for p in t["partitions"]:
            if p["error_code"]:
                log.debug(
                    "DescribeShareGroupOffsets %s %s-%d: %s",
                    group["group_id"],
                    t["topic_name"],
                    p["partition_index"],
                    error_name(p["error_code"]),
                )
            else:
                lag = p.get("lag", -1)  # v1+ (KIP-1226)
                out.append((t["topic_name"], p["partition_index"], p["start_offset"], lag))
    return sorted(out)


def describe_streams_groups(
    conf: Mapping[str, Any], group_ids: Iterable[str], timeout_s: float = 10.0
) -> dict[str, dict]:
    """Each streams group's `"broker"` block (or error block), over connections opened and closed here."""
    with KafkaProtocolClient(conf, timeout_s) as client:
        return client.describe_streams(group_ids, Deadline(timeout_s))


def describe_share_groups(
    conf: Mapping[str, Any], group_ids: Iterable[str], timeout_s: float = 10.0
) -> dict[str, dict]:
    """Each share group's `"broker"` block (or error block), over connections opened and closed here."""
    with KafkaProtocolClient(conf, timeout_s) as client:
        return client.describe_share(group_ids, Deadline(timeout_s))


def describe_consumer_groups_kip848(
    conf: Mapping[str, Any], group_ids: Iterable[str], timeout_s: float = 10.0
) -> dict[str, dict]:
    """Each group's `"broker"` block (or error block), over connections opened and closed here."""
    with KafkaProtocolClient(conf, timeout_s) as client:
        return client.describe_kip848(group_ids, Deadline(timeout_s))
