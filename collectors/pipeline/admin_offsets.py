"""What the Admin poller asks Kafka about offsets, one fetcher per Kafka API. Each returns what it
got and, apart, what an ACL refused with why: the poller decides what to send. One group's or
partition's error never stops the others; a failed call is warned once, until a call succeeds again.

- `CommittedOffsets`: OffsetFetch v8+ through the protocol client, hundreds of groups a request, not
  librdkafka's list_consumer_group_offsets (one group a request, and librdkafka 2.16 crashes the
  process when a coordinator moves or loads during that call, confluentinc/librdkafka#5040), which
  is only the fallback for settings the protocol client cannot use.
- `ShareStartOffsets`: DescribeShareGroupOffsets, a share group's share-partition start offsets and
  the broker's lag (KIP-932, KIP-1226): a share group's progress, which `__consumer_offsets` does not
  hold.
- `log_end_offsets`: ListOffsets (latest) through librdkafka.
"""

from __future__ import annotations

import collections
import logging
from typing import Any

from collectors.pipeline.admin_lines import AUTHORIZATION_FAILED, denial
from collectors.pipeline.admin_link import ProtocolLink, say_failure

log = logging.getLogger("groupscope.admin")

TP = tuple[str, int]
Committed = dict[str, list[tuple[str, int, int]]]  # group -> [(topic, partition, offset)], sorted
Refused = dict[str, str]  # group (or topic) -> why an ACL withholds it


class CommittedOffsets:
    def __init__(self, in_flight: int) -> None:
        self.in_flight = max(1, in_flight)  # librdkafka's requests outstanding at once (the fallback)
        self.failing = False  # OffsetFetch failed last time (warned once already)

    def fetch(
        self, link: ProtocolLink, admin: Any, groups: list[str], timeout_s: float
    ) -> tuple[Committed, Refused]:
        """Each group's committed offsets, in `groups` order, and the groups an ACL refused them for.
        A group the broker answered with an error is left out of the first, as is every group when
        the call fails: the poll goes on with what else it has, and the next starts over with new
        connections."""
        from collectors.kafka_protocol import ConfigError
        from collectors.kafka_protocol.connection import Deadline

        if link.unusable:
            return committed_through_librdkafka(admin, groups, timeout_s, self.in_flight), {}
        try:
            fetched = link.client(timeout_s).fetch_committed(groups, Deadline(timeout_s))
        except ConfigError as e:
            log.warning("committed offsets through librdkafka (the protocol client cannot: %s)", e)
            link.unusable = True
            return committed_through_librdkafka(admin, groups, timeout_s, self.in_flight), {}
        except Exception as e:
            first = "committed offsets not available (OffsetFetch): %s"
            self.failing = say_failure(self.failing, first, "OffsetFetch still failing: %s", e)
            link.close()  # a broker restart or a half-read answer: reconnect next time
            return {}, {}
        self.failing = False
        return per_group(groups, fetched, "offsets")


def committed_through_librdkafka(
    admin: Any, groups: list[str], timeout_s: float, in_flight: int
) -> Committed:
    """The fallback: librdkafka's list_consumer_group_offsets, one group a request, `in_flight` at a
    time. Only for settings the protocol client cannot use: librdkafka 2.16 can crash the process in
    this call when a coordinator moves (confluentinc/librdkafka#5040)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    out: Committed = {}
    pending: collections.deque[tuple[str, Any]] = collections.deque()

    def collect(g: str, fut: Any) -> None:
        try:
            res = fut.result(timeout_s + 5)
        except Exception as e:  # one group's error never stops the poll
            log.debug("offsets of %s: %s", g, e)
            return
        out[g] = sorted(
            (tp.topic, tp.partition, tp.offset) for tp in res.topic_partitions or [] if tp.offset >= 0
        )

    for g in groups:
        try:
            req = [ConsumerGroupTopicPartitions(g)]
            pending.append((g, admin.list_consumer_group_offsets(req, request_timeout=timeout_s)[g]))
        except Exception as e:
            log.debug("offsets of %s: %s", g, e)
        if len(pending) >= in_flight:
            collect(*pending.popleft())
    for g, fut in pending:
        collect(g, fut)
    return out


def per_group(groups: list[str], fetched: dict[str, Any], what: str) -> tuple[dict[str, Any], Refused]:
    """A call's answer for each group: what it got, and the groups an ACL refused, with why. A group
    the broker answered with another error is left out (one group's error never stops the poll); so
    is one it did not answer for (gone since it was listed)."""
    from collectors.kafka_protocol import GroupError

    out: dict[str, Any] = {}
    refused: Refused = {}
    for g in groups:
        got = fetched.get(g)
        if isinstance(got, GroupError):
            log.debug("%s of %s: %s", what, g, got.as_block()["error"])
            if got.code in AUTHORIZATION_FAILED:
                refused[g] = f"{got.as_block()['error']}: {got.message or 'not authorized'}"
        elif got is not None:
            out[g] = got
    return out, refused


ShareOffsets = dict[str, list[tuple[str, int, int, int]]]  # group -> [(topic, partition, start, lag)]


class ShareStartOffsets:
    def __init__(self) -> None:
        self.failing = False  # DescribeShareGroupOffsets failed last time (warned once)

    def fetch(self, link: ProtocolLink, groups: list[str], timeout_s: float) -> tuple[ShareOffsets, Refused]:
        """Each share group's share-partition start offsets [(topic, partition, start offset, lag)]
        (-1: not initialised), all its topics, many groups a request to each coordinator; and the
        groups an ACL refused (Describe on the group and its topics). One that went away since it
        was listed is left out; a failed call (a broker before Kafka 4.1 has no such API) leaves them
        all out."""
        if not groups or link.unusable:
            return {}, {}
        from collectors.kafka_protocol import UnsupportedVersionError
        from collectors.kafka_protocol.connection import Deadline

        try:
            fetched = link.client(timeout_s).describe_share_group_offsets(groups, Deadline(timeout_s))
        except Exception as e:
            self.failing = say_failure(
                self.failing,
                "share groups' start offsets not read (DescribeShareGroupOffsets): %s",
                "DescribeShareGroupOffsets still failing: %s",
                e,
            )
            if not isinstance(e, UnsupportedVersionError):  # a broker without the API: keep connections
                link.close()  # a broker restart or a half-read answer: reconnect next time
            return {}, {}
        self.failing = False
        return per_group(groups, fetched, "start offsets")


def log_end_offsets(admin: Any, tps: set[TP] | list[TP], timeout_s: float) -> tuple[dict[TP, int], Refused]:
    """The latest offset of each partition, and the topics an ACL withholds (their groups are told)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    ends: dict[TP, int] = {}
    refused: Refused = {}
    if not tps:
        return ends, refused
    futs = admin.list_offsets(
        {TopicPartition(t, p): OffsetSpec.latest() for t, p in tps}, request_timeout=timeout_s
    )
    for tp, f in futs.items():
        try:
            ends[(tp.topic, tp.partition)] = int(f.result(timeout_s + 5).offset)
        except Exception as e:  # one partition's error never stops the poll
            if (why := denial(e)) is not None:
                refused[tp.topic] = why
    return ends, refused
