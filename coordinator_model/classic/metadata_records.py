"""A classic group's GroupMetadata records replayed (Kafka's GroupMetadataManager loads them the
same way): written at the leader's SyncGroup (Stable), on Empty and at creation, they carry when
CompletingRebalance began and the exact members, protocol and assignment; never PreparingRebalance.
"""

from __future__ import annotations

from coordinator_model.evidence import GroupMetadataSnapshot
from coordinator_model.membership import Member


class MetadataRecordReplay:
    """The coordinator's GroupMetadata records, onto the group's state machine."""

    def on_group_metadata(self, ev: GroupMetadataSnapshot) -> None:
        self.engine.typed("classic", "records")
        self.metadata_records = True
        if ev.deleted:
            self.goto("Dead", ev.ts)
            self.engine.deleted = True
            self.engine.members.clear()
            return
        self.engine.protocol_type = ev.protocol_type
        state_ts = ev.state_timestamp if ev.state_timestamp > 0 else ev.ts
        if self.engine.state == "Dead":
            self.reset_incarnation()
            self.engine.state = None
        if not ev.members:
            if ev.generation == 0 or self.engine.state is None:
                self.generation = (
                    ev.generation if self.generation is None else max(self.generation, ev.generation)
                )
                if self.engine.state is None:
                    self.goto("Empty", state_ts)
                return
            if (
                self.generation is not None
                and ev.generation <= self.generation
                and self.engine.state == "Empty"
            ):
                return
            if (
                "broker_log" in self.engine.sources
                and self.generation is not None
                and ev.generation <= self.generation
            ):
                return
            self.become_empty(state_ts, inferred=False, gen=ev.generation)
            return
        same = self.generation == ev.generation and ev.generation in self.generations
        if self.generation is not None and ev.generation < self.generation:
            return  # stale
        new_ids = [m.member_id for m in ev.members]
        self.refute_hints(set(new_ids), ev.ts)
        if not same or self.generations[ev.generation].stable is None:
            if self.open is None and (
                self.engine.state not in ("PreparingRebalance", "CompletingRebalance")
                or (self.engine.state == "PreparingRebalance" and self.generation == ev.generation)
            ):
                # the rebalance left no other trace: it began before the record (unseen_start), or at
                # a leave its members' clients reported
                settled = min(state_ts, ev.ts)
                self.open_rebalance(
                    self.unseen_start(settled), "unknown", None, True, upto=settled, exclude=new_ids
                )
            g = self.close_generation(ev.generation, state_ts, inferred=False)
            if g.stabilized is None:
                g.stabilized = state_ts
            self.goto("CompletingRebalance", state_ts, "broker_log" not in self.engine.sources)
            g.stable = ev.ts
            self.goto("Stable", ev.ts)
        g = self.generations[ev.generation]
        prev_ids = set(self.engine.members)
        keep = {mid: self.engine.members[mid] for mid in new_ids if mid in self.engine.members}
        old_members = self.engine.members
        self.engine.members = {}
        for ms in ev.members:
            m = keep.get(ms.member_id) or Member(ms.member_id)
            m.group_instance_id = ms.group_instance_id
            m.client_id, m.client_host = ms.client_id, ms.client_host
            m.session_timeout_ms, m.rebalance_timeout_ms = ms.session_timeout_ms, ms.rebalance_timeout_ms
            m.subscription = ms.subscription
            m.assignment = ms.assignment
            self.engine.members[ms.member_id] = m
            self.engine.departed.pop(ms.member_id, None)
        hinted = []  # members whose client's leave the record now shows: they left then
        for mid in prev_ids - set(new_ids):
            hint = self.drop_hint(mid)
            if hint is not None:
                hinted.append(mid)
            self.engine.departed[mid] = hint[0] if hint is not None else ev.ts
            if mid in old_members:
                self.engine.departed_members[mid] = old_members[mid]
        self.protocol, self.leader = ev.protocol, ev.leader
        g.members = tuple(new_ids)
        g.protocol, g.leader = ev.protocol, ev.leader
        g.assignment = {ms.member_id: ms.assignment for ms in ev.members}
        # against the last members known: a generation that left no record knows none
        prev = self.members_before(ev.generation)
        if prev is not None and not same:
            if "joined" not in g.inferred and not g.joined:
                g.joined = [m for m in new_ids if m not in prev.members]
            if not g.left:
                g.left = [m for m in prev.members if m not in new_ids]
        if not same:
            g.left.extend(mid for mid in sorted(hinted) if mid not in g.left)
            # member ids client events named that joined and left between the last record and this
            # one: a generation no record shows (split_transient takes their join there)
            transient = self.transient_joiners(set(new_ids))
            for mid in transient:
                g.joined.extend([mid] if mid not in g.joined else [])
                g.left.extend([mid] if mid not in g.left else [])
            if transient and "cause" in g.inferred:
                g.cause = "unknown"  # gen_cause reads it once split_transient has taken their joins
        g.inferred.discard("members")
        g.inferred.discard("assignment")
        self.gen_cause(g)
