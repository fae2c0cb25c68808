"""Rebuild every group that a body of evidence names (a capture folder, a test's evidence): one
GroupEngine per group, fed in evidence order, its timers run to the end. A group that only client
heartbeat events name is not among them when the evidence has the coordinator's own sources (see
`rebuild`)."""

from __future__ import annotations

from collections.abc import Iterable

from coordinator_model.broker_log import BrokerLogEvent
from coordinator_model.engine import COORDINATOR_SOURCES, GroupEngine
from coordinator_model.evidence import (
    CommittedSnapshot,
    ConsumerGroupTopics,
    ConsumerMemberSubscription,
    DescribeSnapshot,
    EndOffset,
    Evidence,
    GroupMetadataSnapshot,
    HeartbeatEvent,
    OffsetCommit,
)
from coordinator_model.evidence_order import sort_evidence
from coordinator_model.offsets.expiry import DEFAULT_OFFSETS_RETENTION_MS


def rebuild(
    evidence: Iterable[Evidence], at_ms: int | None = None, retention_ms: int = DEFAULT_OFFSETS_RETENTION_MS
) -> dict[str, GroupEngine]:
    """Rebuild every group the evidence names. End offsets go to every group that commits to (or is
    assigned) that topic. `at_ms`: only evidence up to that moment, timers run to it.

    When the evidence has any of the coordinator's own sources (`__consumer_offsets` records, the
    broker log, Admin API answers), a group they do not know (yet) is left out: client heartbeat
    events alone never make a group (GroupEngine.confirmed). The probe runs inside real consumers,
    whose groups have records or are described, so a group named only by heartbeat events is one
    somebody wrote to the heartbeat topic. Evidence of client events alone has nothing to weigh
    them against: its groups are all the probe's, shown as it tells them."""
    evs = [ev for ev in evidence if at_ms is None or ev.ts <= at_ms]
    evs = sort_evidence(evs)
    engines: dict[str, GroupEngine] = {}
    topic_groups: dict[str, set[str]] = {}
    ends: list[EndOffset] = []
    for ev in evs:
        if isinstance(ev, EndOffset):
            ends.append(ev)
            continue
        groups = ev.groups if isinstance(ev, BrokerLogEvent) and ev.groups else (ev.group,)
        for grp in groups:
            if grp is None:
                continue
            eng = engines.get(grp)
            if eng is None:
                eng = engines[grp] = GroupEngine(grp, retention_ms)
            for t in topics_of(ev):
                topic_groups.setdefault(t, set()).add(grp)
    # second pass in time order, now that we know which group reads which topic
    for ev in evs:
        if isinstance(ev, EndOffset):
            for grp in topic_groups.get(ev.topic, ()):
                engines[grp].apply(ev)
            continue
        groups = ev.groups if isinstance(ev, BrokerLogEvent) and ev.groups else (ev.group,)
        for grp in groups:
            if grp is not None:
                engines[grp].apply(ev)
    end = at_ms if at_ms is not None else max((ev.ts for ev in evs), default=0)
    for eng in engines.values():
        eng.advance(end)
    if any(ev.source in COORDINATOR_SOURCES for ev in evs):
        engines = {g: eng for g, eng in engines.items() if eng.confirmed}
    return engines


def topics_of(ev: Evidence) -> list[str]:
    if isinstance(ev, OffsetCommit):
        return [ev.topic]
    if isinstance(ev, CommittedSnapshot):
        return [t for t, _, _ in ev.offsets]
    if isinstance(ev, GroupMetadataSnapshot):
        return [t for m in ev.members for t in m.subscription]
    if isinstance(ev, ConsumerMemberSubscription):
        return list(ev.subscribed_topics)
    if isinstance(ev, ConsumerGroupTopics):
        return [name for _, name, _ in ev.topics]
    if isinstance(ev, DescribeSnapshot):
        return [t for m in ev.members for t, _ in m.assignment]
    if isinstance(ev, HeartbeatEvent):
        return [t for t, _ in ev.partitions]
    return []
