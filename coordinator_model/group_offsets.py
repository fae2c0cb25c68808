"""A group's committed offsets as the evidence brings them, on the GroupEngine: offset commits (one by
one, in bulk, in the pipeline's runs, or shown early), the Admin API's committed offsets, the
partitions' log ends, offset expiry (offsets/expiry.py: Kafka's removeExpiredOffsets) and the lag
they give. The rules for the offsets themselves are offsets/store.py's; what this adds is what the
group's other parts take from them (a group seen only through its commits, a topic id a commit
names)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from coordinator_model.document.types import LagDoc
from coordinator_model.evidence import CommittedSnapshot, OffsetCommit
from coordinator_model.evidence_order import sort_key
from coordinator_model.membership import TP
from coordinator_model.offsets import CommitRun, OffsetState, merged_rows
from coordinator_model.offsets.expiry import ExpiryRule, expiry_rule, remove_expired_offsets
from coordinator_model.states import MODERN_TYPES


class GroupOffsets:
    """The offsets part of a GroupEngine (a base class of it: its methods use the group's state)."""

    def apply_commits(self, rows: list[tuple[int, str, int, int, int, int, int, int]]) -> None:
        """Offset commits in bulk, with exactly the effect of `apply`ing each as an OffsetCommit in
        the order given (the evidence order; no other evidence of the group among them).

        rows: (ts, topic, partition, offset, commit timestamp, leader epoch, expire timestamp, log
        offset), none a tombstone, each with an empty metadata string. A catch-up feeds millions of
        these, so only what survives is built: one OffsetState per partition (each commit replaces
        the last) and the CommitSamples of the window's last slots (see lag.PartitionWindow.add)."""
        if not rows:
            return
        last_ts = max(r[0] for r in rows)
        if last_ts >= self._next_due:
            self._commits_one_by_one(rows)
            return
        self._commits_begin(last_ts)
        by_tp: dict[TP, list[tuple]] = {}
        for row in rows:
            seq = by_tp.get((row[1], row[2]))
            if seq is None:
                seq = by_tp[(row[1], row[2])] = []
            seq.append(row)
        # Partitions are independent of each other; the first commit kept (in evidence order, which
        # is by time) is when a group seen only through its commits became Empty.
        firsts = [self.offsets.commit_rows(tp, seq) for tp, seq in by_tp.items()]
        self._commits_end(firsts)

    def apply_commit_runs(self, runs: list[CommitRun]) -> None:
        """`apply_commits` for commits the pipeline's first stage gathered into runs (one partition's
        commits each, in evidence order, with a summary). A run whose summary holds against this
        engine's state (see `_commit_run`) costs O(1) whatever its length; any other is expanded."""
        if not runs:
            return
        for run in runs:
            if run.topic_id is not None and run.topic_id not in self.consumer.topic_names:
                self.consumer.learn_topic_id(run.topic_id, run.topic)
        runs = sorted(runs, key=lambda r: (r.first_ts, r.first_log))
        last_ts = max(r.last_ts for r in runs)
        if last_ts >= self._next_due:
            self._commits_one_by_one(merged_rows(runs))
            return
        self._commits_begin(last_ts)
        self._commits_end(self.offsets.apply_runs(runs))

    def _commits_one_by_one(self, rows: Iterable[tuple]) -> None:
        # a session timer falls among them: one by one, so that it fires where it would
        for ts, topic, part, off, cts, epoch, expire, log_off in rows:
            self.apply(OffsetCommit(ts, self.group, topic, part, off, cts, epoch, "", expire, log_off))

    def _commits_begin(self, last_ts: int) -> None:
        self.now = max(self.now, last_ts)
        self.sources.add("offsets")
        self.type = self.type or "classic"

    def _commits_end(self, firsts: list[int | None]) -> None:
        kept = [t for t in firsts if t is not None]
        if kept:
            self._only_commits(min(kept))

    def _only_commits(self, ts: int) -> None:
        """A classic group seen only through its commits is a standalone (assign()) group: Kafka
        describes it as Empty."""
        if self.state is None and not self.members and self.type == "classic":
            self.classic.simple = True
            self.classic.goto("Empty", ts, True)

    def preview_commits(self, commits: Iterable[OffsetCommit | CommittedSnapshot]) -> None:
        """Offset commits (and a share group's positions, CommittedSnapshot of SHARE_START_OFFSETS)
        shown before their turn: committed offsets and lag samples only, no timers and no state
        inference. Only for a throwaway copy of an engine (the live pipeline shows a commit's lag
        while the commit waits behind the event-time watermark; the real engine applies it in
        evidence order later)."""
        for ev in sorted(commits, key=sort_key):
            if isinstance(ev, CommittedSnapshot):
                self.now = max(self.now, ev.ts)
                self.offsets.snapshot(ev.ts, ev.offsets, drop_unseen=False)
            elif ev.offset is not None:
                self.now = max(self.now, ev.ts)
                self.offsets.commit((ev.topic, ev.partition), _offset_state(ev))

    def _on_offset_commit(self, ev: OffsetCommit) -> None:
        self.type = self.type or "classic"
        if ev.topic_id is not None and ev.topic_id not in self.consumer.topic_names:
            self.consumer.learn_topic_id(ev.topic_id, ev.topic)
        tp = (ev.topic, ev.partition)
        if ev.offset is None:
            self.offsets.tombstone(tp, ev.log_offset)
            return
        if self.offsets.commit(tp, _offset_state(ev)):
            self._only_commits(ev.ts)

    def _on_committed(self, ev: CommittedSnapshot) -> None:
        self.denied.pop("offsets", None)
        self.offsets.snapshot(ev.ts, ev.offsets, drop_unseen="offsets" not in self.sources)

    def _end_offset(self, topic: str, partition: int, ts: int, end: int) -> None:
        new, note = self.offsets.end_offset((topic, partition), ts, end)
        if new and self.type in MODERN_TYPES:
            self.consumer.rename_partitions()  # a partition count may name a topic id
        if note is not None:
            self.conflict("end_offsets", ts, note)

    def log_end_topics(self) -> set[str]:
        """The topics whose log ends the group's lag needs: those it commits to, and those its
        members subscribe to or own."""
        topics = {t for t, _ in self.offsets.committed}
        for m in self.members.values():
            topics.update(m.subscription)
            topics.update(t for t, _ in m.assignment)
        return topics

    def take_log_ends(self, histories: dict[TP, Any], upto: int) -> None:
        """The cluster's log-end histories of the group's partitions, shared by every group that reads
        them (the live pipeline keeps one per partition, not one per group), as far as `upto`: what
        the engine would hold had it seen each observation up to then as EndOffset evidence. A
        partition new to the group has the effects of `_end_offset` (a KIP-848 group may now name a
        topic id; a committed offset past the log end is noted)."""
        old = self.offsets.ends
        self.offsets.ends = {}
        for tp, h in histories.items():
            cut = bisect.bisect_right(h.ts, upto)
            if cut < len(h.ts):
                # a history cut at `upto` is a new one: the caller may have lent its own, which other
                # groups read after this one
                h = type(h)(h.ts[:cut], h.offsets[:cut], min(h.last_seen, upto))
            if not h.ts:
                continue
            self.offsets.ends[tp] = h
            if tp not in old:
                if self.type in MODERN_TYPES:
                    self.consumer.rename_partitions()
                cur = self.offsets.committed.get(tp)
                if cur is not None and cur.ts <= h.ts[-1] and cur.offset > h.offsets[-1]:
                    _, note = self.offsets.end_offset(tp, h.ts[-1], h.offsets[-1])
                    if note is not None:
                        self.conflict("end_offsets", h.ts[-1], note)

    def _expire_offsets(self, now: int) -> None:
        """Kafka's GroupMetadata.removeExpiredOffsets, with the group's state and protocol type."""
        rule = self._expiry_rule()
        if rule is not None:
            remove_expired_offsets(self.offsets, now, self.retention_ms, rule)

    def next_offset_expiry(self) -> int | None:
        """When the first committed offset expires if nothing else happens to the group (None: none
        can, in its present state): what an idle group has to be looked at again for."""
        rule = self._expiry_rule()
        return None if rule is None else self.offsets.first_expiry(self.retention_ms, *rule)

    def _expiry_rule(self) -> ExpiryRule | None:
        """Which offsets expire in the group's present state, and from when (offsets/expiry.py). A
        member list that names no subscribed topic is a subscription not known yet."""
        if not self.offsets.committed:
            return None
        subscribed = {t for m in self.members.values() for t in m.subscription}
        return expiry_rule(self.protocol_type, self.state, self.classic.empty_since, subscribed or None)

    def lag(self, now: int) -> LagDoc:
        owner = {tp: mid for mid, m in self.members.items() for tp in m.assignment}
        return self.offsets.lag(now, owner)


def _offset_state(ev: OffsetCommit) -> OffsetState:
    """What a partition keeps of a (non-tombstone) commit record."""
    assert ev.offset is not None
    cts = ev.commit_timestamp if ev.commit_timestamp >= 0 else ev.ts
    return OffsetState(
        ev.offset, cts, ev.ts, ev.log_offset, ev.metadata, ev.leader_epoch, ev.expire_timestamp
    )
