"""A KIP-848 consumer group (KIP-848, `group.protocol=consumer`): its epochs, target assignment and
reconciliation, rebuilt from its records (ConsumerGroupMetadata, ...TargetAssignment..., ...
CurrentMemberAssignment), the broker's epoch lines, client events and Admin API snapshots.

Kafka's own model is modern/consumer/ConsumerGroup: the group epoch moves when membership or
subscriptions change, the assignment epoch when the assignor has run for it, and a member is
reconciled when its epoch reached the assignment epoch with nothing left to revoke; the group's
state follows from those (states.derive_consumer_group_state).

What every kind of group shares (members, the timeline, the sources seen, offsets, the weighing of
sources) lives on the GroupEngine this model belongs to (`engine`, seen through group_context.py).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

from coordinator_model.broker_log import BrokerLogEvent
from coordinator_model.evidence import (
    ConsumerGroupEpoch,
    ConsumerGroupTopics,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerTargetAssignment,
    ConsumerTargetMember,
    DescribeSnapshot,
    HeartbeatEvent,
    session_timeout,
)
from coordinator_model.group_context import GroupContext
from coordinator_model.membership import MAX_GENERATIONS, TP, Generation, Member
from coordinator_model.states import MODERN_TYPES, derive_consumer_group_state

# How many of the newest epochs learn a member's client id or host when it becomes known late.
NAMED_EPOCHS_LOOKED_AT = 3


def no_changes() -> dict[str, Any]:
    """The membership changes noted for the next epoch bump, none yet."""
    return {"joined": [], "left": [], "cause": None, "clients": {}}


class ConsumerGroupModel:
    """The KIP-848 part of one group's reconstruction."""

    def __init__(self, engine: GroupContext) -> None:
        # a weak reference: a group and its model never form a cycle, so a group the pipeline has
        # unpickled, used and let go is freed at once (cyclic garbage waits for the collector, which
        # made unpickling 10,000 groups a batch a third slower)
        self.engine = engine if isinstance(engine, weakref.ProxyType) else weakref.proxy(engine)
        self.group_epoch: int | None = None
        self.assignment_epoch: int | None = None
        # when each source last gave the epochs (the freshest word on the state wins)
        self.epoch_source_ts = {"records": -1, "describe": -1, "broker_log": -1}
        self.describe_state: tuple[int, str] | None = None
        self.topic_names: dict[str, str] = {}  # topic id -> name
        self.assignor: str | None = None
        self.epochs: dict[int, Generation] = {}
        # membership changes seen before the epoch bump they lead to (records: member first), with
        # who each member named was (client id, host; "clients": kept once it left, Generation.clients)
        self.pending: dict[str, Any] = no_changes()

    def __getstate__(self) -> dict[str, Any]:
        # the group it belongs to is not part of its state: GroupEngine.__setstate__ attaches it again
        return {k: v for k, v in self.__dict__.items() if k != "engine"}

    def claim(self, source: str = "records") -> None:
        """The evidence says the group is of this model's kind (`source` says who said so)."""
        self.engine.as_consumer(source)

    def reset(self) -> None:
        """The group turned out not to be what it was taken for: its epochs start again (topic names
        stay: they are the cluster's)."""
        self.epochs.clear()
        self.group_epoch = self.assignment_epoch = None
        self.describe_state = None
        self.assignor = None
        self.pending = no_changes()

    def on_epoch(self, ev: ConsumerGroupEpoch) -> None:
        self.claim()
        if ev.epoch is None:
            self.engine.deleted = True
            self.engine.members.clear()
            self.update_state(ev.ts)
            return
        old = self.group_epoch
        self.group_epoch = ev.epoch
        self.epoch_source_ts["records"] = ev.ts
        if old is None or ev.epoch > old:
            self.epoch_bump(ev.epoch, ev.ts, inferred=False)
        elif ev.epoch == old:
            self.epoch_confirmed(ev.epoch, ev.ts)
        self.update_state(ev.ts)

    def on_topics(self, ev: ConsumerGroupTopics) -> None:
        self.claim()
        for tid, name, _ in ev.topics:
            self.topic_names[tid] = name
        self.rename_partitions()

    def on_member(self, ev: ConsumerMemberSubscription) -> None:
        self.claim()
        if ev.deleted:
            if ev.member_id in self.engine.members:
                self.engine.remove_member(ev.member_id, ev.ts)
                self.epoch_note(left=ev.member_id)
        else:
            new = ev.member_id not in self.engine.members
            m = self.engine.member(ev.member_id)
            m.in_records = True
            m.group_instance_id = ev.instance_id
            m.client_id, m.client_host = ev.client_id, ev.client_host
            self.name_client(m)
            m.subscription = ev.subscribed_topics
            m.rebalance_timeout_ms = ev.rebalance_timeout_ms if ev.rebalance_timeout_ms >= 0 else None
            m.server_assignor = ev.server_assignor
            if ev.server_assignor:
                self.assignor = ev.server_assignor
            if new:
                m.joined_at = ev.ts
                self.epoch_note(joined=ev.member_id)
        self.update_state(ev.ts)

    def on_target_epoch(self, ev: ConsumerTargetAssignment) -> None:
        self.claim()
        if ev.epoch is not None:
            self.assignment_epoch = ev.epoch
            self.epoch_source_ts["records"] = ev.ts
            g = self.epochs.get(ev.epoch)
            if g is not None and g.stabilized is None:
                g.stabilized = ev.ts
        self.update_state(ev.ts)

    def on_target_member(self, ev: ConsumerTargetMember) -> None:
        self.claim()
        if ev.partitions is None:
            m = self.engine.members.get(ev.member_id)
            if m is not None:
                m.target_ids = None
        elif ev.member_id in self.engine.members or ev.member_id not in self.engine.departed:
            m = self.engine.member(ev.member_id)
            m.target_ids = ev.partitions
            m.target_assignment = self.names(ev.partitions)

    def on_assignment(self, ev: ConsumerMemberAssignment) -> None:
        self.claim()
        m = self.engine.members.get(ev.member_id)
        if ev.deleted:
            if m is not None:
                m.member_epoch = None
                m.member_state = None
                m.assigned_ids = ()
        else:
            if m is None:
                if ev.member_id in self.engine.departed:
                    return
                m = self.engine.member(ev.member_id)
            m.member_epoch, m.previous_member_epoch = ev.member_epoch, ev.previous_member_epoch
            m.member_state = ev.state
            m.assigned_ids, m.pending_ids = ev.assigned, ev.pending_revocation
            m.assignment = self.names(ev.assigned)
        self.update_state(ev.ts)

    def on_broker(self, ev: BrokerLogEvent) -> None:
        self.claim("broker_log")
        self.epoch_source_ts["broker_log"] = ev.ts
        k = ev.kind
        if k == "group_epoch":
            if self.group_epoch is None or ev.epoch > self.group_epoch:
                self.group_epoch = ev.epoch
                self.epoch_bump(ev.epoch, ev.ts, inferred=False)
        elif k == "target_assignment":
            if self.assignment_epoch is None or ev.epoch > self.assignment_epoch:
                self.assignment_epoch = ev.epoch
            if ev.assignor:
                self.assignor = ev.assignor
            g = self.epochs.get(ev.epoch)
            if g is not None and g.stabilized is None:
                g.stabilized = ev.ts
            if g is not None:
                g.protocol = ev.assignor or self.assignor
        elif k == "consumer_member_joined":
            if ev.member_id not in self.engine.members:
                self.engine.member(ev.member_id).joined_at = ev.ts
                self.epoch_note(joined=ev.member_id)
        else:
            if ev.member_id in self.engine.members:
                self.engine.remove_member(ev.member_id, ev.ts)
            self.epoch_note(
                left=ev.member_id, cause="session_timeout" if k == "consumer_member_fenced" else None
            )
        self.update_state(ev.ts)

    def on_heartbeat(self, ev: HeartbeatEvent) -> None:
        """KIP-848 members: client events give membership and, without records or snapshots, the
        assignment; epochs only come from the other sources."""
        mid = ev.member_id
        authoritative = (
            "offsets" in self.engine.sources
            or "describe" in self.engine.sources
            or "broker_log" in self.engine.sources
        )
        if ev.event == "leave":
            if not authoritative and mid in self.engine.members:
                self.engine.remove_member(mid, ev.ts)
                self.update_state(ev.ts)
            elif mid in self.engine.members:
                self.engine.members[mid].closed = True  # the broker's records or snapshots will remove it
            return
        if mid in self.engine.departed and mid not in self.engine.members:
            return
        if mid not in self.engine.members and authoritative:
            return  # membership is the broker's to say
        m = self.engine.member(mid)
        known = (m.client_id, m.client_host)
        m.client_id = ev.client_id or m.client_id
        m.client_host = ev.host or m.client_host
        if (m.client_id, m.client_host) != known:
            self.name_client(m)
        m.group_instance_id = ev.group_instance_id or m.group_instance_id
        # (as a classic member's: held to the broker's limits, and not changed by a later event)
        m.session_timeout_ms = m.session_timeout_ms or session_timeout(ev.session_timeout_ms)
        m.last_heartbeat = ev.ts
        self.engine.arm(m)
        if ev.event in ("assigned", "revoked", "lost"):
            held = set(m.client_assignment)
            held = held | set(ev.partitions) if ev.event == "assigned" else held - set(ev.partitions)
            m.client_assignment = tuple(sorted(held))
            if not authoritative:
                m.assignment = m.client_assignment
            elif m.assigned_ids and any(t not in self.topic_names for t, _ in m.assigned_ids):
                # the client names the partitions the records give by topic id
                self.learn_topic_names(m.assigned_ids, m.client_assignment)
                self.rename_partitions()
        self.update_state(ev.ts)

    def on_describe(self, ev: DescribeSnapshot) -> None:
        if ev.type == "share" and self.engine.type != "share":
            # the broker's ShareGroupDescribe (KIP-932) of a group nothing else had typed: the group is
            # a share group, and the share group's model takes the answer (share/group.py)
            if self.engine.type is not None:
                self.engine.conflict(
                    "type", ev.ts, f"the broker describes a share group; it was read as {self.engine.type}"
                )
                return
            self.engine.as_share("describe_broker")
            self.engine.consumer.on_describe(ev)
            return
        self.claim("describe_broker" if has_k848_details(ev) else "describe")
        for tid, name in ev.topic_ids:
            if self.topic_names.get(tid) != name:
                self.learn_topic_id(tid, name)
        if ev.assignor and self.engine.names_a_member(ev.assignor):
            self.engine.conflict(
                "assignor", ev.ts, f"the Admin API's assignor field is a member id ({ev.assignor})"
            )
        elif ev.assignor and (ev.members or self.assignor is None):
            # an Empty group is described with the default assignor, whatever its members used
            self.assignor = ev.assignor
        doubt = self.engine.contradiction(ev)
        if doubt is not None:
            self.engine.conflict("members", ev.ts, doubt)  # as for classic groups: members are kept
            return
        self.take_described_epochs(ev)
        if ev.broker_state:
            self.describe_state = (ev.ts, ev.broker_state)
        elif ev.state in ("Empty", "Stable", "Dead"):
            self.describe_state = (ev.ts, ev.state)
        if "offsets" not in self.engine.sources:
            self.take_described_members(ev)
        else:
            # records own membership; the snapshot still knows topic names for partitions
            for dm in ev.members:
                m = self.engine.members.get(dm.member_id)
                if m is not None and m.assigned_ids:
                    self.learn_topic_names(m.assigned_ids, dm.assignment)
            self.rename_partitions()
        self.update_state(ev.ts)

    def take_described_epochs(self, ev: DescribeSnapshot) -> None:
        """The group and assignment epochs a describe gives (a higher group epoch: a new epoch, with
        the membership changes noted so far)."""
        if ev.group_epoch is not None:
            if self.group_epoch is None or ev.group_epoch > self.group_epoch:
                self.epoch_bump(ev.group_epoch, ev.ts, inferred=True)
            self.group_epoch = ev.group_epoch
            self.epoch_source_ts["describe"] = ev.ts
        if ev.assignment_epoch is not None:
            self.assignment_epoch = ev.assignment_epoch

    def take_described_members(self, ev: DescribeSnapshot) -> list[str]:
        """Membership as the snapshot has it (each member's ids, assignment, target and epoch), who
        joined and left noted for the next epoch; the ids of the members that left."""
        prev = set(self.engine.members)
        keep = dict(self.engine.members)
        self.engine.members = {}
        for dm in ev.members:
            m = keep.get(dm.member_id) or Member(dm.member_id, joined_at=ev.ts)
            m.group_instance_id = dm.group_instance_id
            m.client_id, m.client_host = dm.client_id, dm.host
            if dm.member_id in keep:
                self.name_client(m)
            m.assignment = dm.assignment
            m.target_assignment = dm.target_assignment
            m.member_epoch = dm.member_epoch if dm.member_epoch is not None else m.member_epoch
            m.subscription = dm.subscription or m.subscription
            self.engine.members[dm.member_id] = m
        for mid in set(self.engine.members) - prev:
            self.epoch_note(joined=mid)
        left = sorted(prev - set(self.engine.members))
        for mid in left:
            self.engine.departed[mid] = ev.ts
            # (not removed through remove_member: who it was is read from the members it had)
            self.epoch_note(left=mid, gone=keep[mid])
        return left

    def learn_topic_id(self, topic_id: str, name: str) -> None:
        """A topic id's name from the cluster itself (a commit's topicId, the broker's describe):
        exact, so it replaces whatever was guessed, and the members' assignments are named again."""
        self.topic_names[topic_id] = name
        if self.engine.type in MODERN_TYPES:
            self.rename_partitions()

    def names(self, ids: Iterable[tuple[str, int]]) -> tuple[TP, ...]:
        return tuple(sorted((self.topic_name(t), p) for t, p in ids))

    def topic_name(self, topic_id: str) -> str:
        name = self.topic_names.get(topic_id)
        if name is not None:
            return name
        # one subscribed topic: every id is that topic
        subs = {t for m in self.engine.members.values() for t in m.subscription}
        if len(subs) == 1:
            return next(iter(subs))
        # a subscribed topic whose partition count (from log-end offsets) no other one has
        seen = {
            p
            for m in self.engine.members.values()
            for t, p in (*m.assigned_ids, *(m.target_ids or ()))
            if t == topic_id
        }
        if seen:
            count = max(seen) + 1
            counts = {t: self.engine.offsets.partition_count(t) for t in subs}
            sizes = {t: n for t, n in counts.items() if n is not None}
            fits = [t for t, n in sizes.items() if n == count]
            if len(fits) == 1 and len(sizes) == len(subs) and list(sizes.values()).count(count) == 1:
                return fits[0]
        return topic_id

    def learn_topic_names(self, ids: tuple[tuple[str, int], ...], named: tuple[TP, ...]) -> None:
        """Match one member's partitions by topic id (records) and by name (a snapshot): a topic whose
        partition set appears once on each side is the same topic."""
        by_id: dict[str, frozenset[int]] = {}
        by_name: dict[str, frozenset[int]] = {}
        for t, p in ids:
            by_id[t] = by_id.get(t, frozenset()) | {p}
        for t, p in named:
            by_name[t] = by_name.get(t, frozenset()) | {p}
        for tid, parts in by_id.items():
            names = [n for n, ps in by_name.items() if ps == parts]
            if len(names) == 1 and list(by_id.values()).count(parts) == 1:
                self.topic_names.setdefault(tid, names[0])

    def rename_partitions(self) -> None:
        for m in self.engine.members.values():
            m.assignment = self.names(m.assigned_ids) if m.assigned_ids else m.assignment
            if m.target_ids is not None:
                m.target_assignment = self.names(m.target_ids)

    def epoch_bump(self, epoch: int, ts: int, inferred: bool) -> None:
        g = self.epochs.get(epoch)
        if g is None:
            g = Generation(generation=epoch, start=ts, protocol=self.assignor)
            if inferred:
                g.inferred.add("start")
            prev = [k for k in self.epochs if k < epoch]
            if prev and self.epochs[max(prev)].end is None:
                self.epochs[max(prev)].end = ts
            self.epochs[epoch] = g
            if len(self.epochs) > MAX_GENERATIONS:
                del self.epochs[min(self.epochs)]
            pending = self.pending
            g.joined.extend(pending["joined"])
            g.left.extend(pending["left"])
            g.clients.update(pending.get("clients") or {})  # (a pending pickled before it kept them)
            g.cause = pending.get("cause") or g.cause
            self.pending = no_changes()
            if g.cause == "unknown":
                g.cause = self.cause_of(g, first=not prev)

    @staticmethod
    def cause_of(g: Generation, first: bool) -> str:
        """An epoch bump's cause from the membership changes that led to it."""
        # A new group's first epoch: 1 up to Kafka 4.0; from 4.1 the coordinator's first bump is to 2
        # ("Bumped group epoch to 2"), with no epoch-1 record. Epoch 2 with an earlier epoch known is
        # an ordinary bump.
        if g.generation == 1 or (g.generation == 2 and first):
            return "group_created"
        return "member_left" if g.left else "member_joined" if g.joined else "metadata_change"

    def epoch_confirmed(self, epoch: int, ts: int) -> None:
        """The records' epoch bump for an epoch a snapshot showed first. A describe can be answered
        after the coordinator wrote the bump and be read before its records (another batch, or stamped
        when asked): the bump was then taken with no membership change known, and the records' member
        changes, noted meanwhile for the next bump, are this one's."""
        g = self.epochs.get(epoch)
        if g is None or "start" not in g.inferred:
            return
        g.inferred.discard("start")
        if ts < g.start:
            earlier = [k for k in self.epochs if k < epoch]
            if earlier and self.epochs[max(earlier)].end == g.start:
                self.epochs[max(earlier)].end = ts
            g.start = ts  # the coordinator's own time of the bump
        p = self.pending
        if p["joined"] or p["left"] or p["cause"]:
            g.joined.extend(m for m in p["joined"] if m not in g.joined)
            g.left.extend(m for m in p["left"] if m not in g.left)
            g.clients.update(p.get("clients") or {})
            if p["cause"]:
                g.cause = p["cause"]
            elif g.cause in ("metadata_change", "member_joined", "member_left"):
                g.cause = self.cause_of(g, first=not [k for k in self.epochs if k < epoch])
            self.pending = no_changes()

    def epoch_note(
        self,
        joined: str | None = None,
        left: str | None = None,
        cause: str | None = None,
        gone: Member | None = None,
    ) -> None:
        """Membership changes that lead to the next epoch bump (records arrive member first, epoch after)."""
        p = self.pending
        if joined:
            p["joined"].append(joined)
        if left:
            p["left"].append(left)
        if cause:
            p["cause"] = cause
        for mid in (joined, left):
            if not mid:
                continue
            who = self.client_of(mid, gone if mid == left else None)
            if who is not None:
                p.setdefault("clients", {})[mid] = who

    def client_of(self, member_id: str, gone: Member | None = None) -> tuple[str | None, str | None] | None:
        """(client id, host) of a member, present or just departed (`gone`: the member that left, when
        the caller has it); None when neither is known. A member that leaves is removed before its
        leave is noted: the engine keeps the last few that left (departed_members), read there."""
        m = gone or self.engine.members.get(member_id) or self.engine.departed_members.get(member_id)
        return _who(m) if m is not None else None

    def name_client(self, m: Member) -> None:
        """A member's client id or host became known after its join was noted (the broker's log
        names a joining member before its record or a describe says who it is): the pending change
        and the newest epochs that name it learn who it was. Only the newest few are looked at,
        as a member is described within a poll of joining, and a scan of 2,000 epochs per record
        would cost a storm group dearly."""
        who = _who(m)
        if who is None:
            return
        mid = m.member_id
        p = self.pending
        if mid in p["joined"] or mid in p["left"]:
            p.setdefault("clients", {})[mid] = who
        for n, g in enumerate(reversed(self.epochs.values())):
            if n >= NAMED_EPOCHS_LOOKED_AT:
                break
            if (mid in g.joined or mid in g.left) and g.clients.get(mid) != who:
                g.clients[mid] = who

    def counted_members(self) -> list[Member]:
        """The members the state counts: with the records read, those the records hold."""
        members = list(self.engine.members.values())
        if "offsets" in self.engine.sources:
            members = [m for m in members if m.in_records]
        return members

    def current_state(self) -> str:
        if self.engine.deleted:
            return "Dead"
        members = self.counted_members()
        if not {"offsets", "broker_log", "describe"} & self.engine.sources:
            # only client events: membership is known, epochs and reconciliation are not
            return "Stable" if members else "Empty"
        ge = self.group_epoch or 0
        ae = self.assignment_epoch or 0
        latest_records = self.epoch_source_ts["records"]
        d = self.describe_state
        if d is not None and d[0] >= max(latest_records, self.epoch_source_ts["broker_log"]):
            return d[1]
        # a member without a current-assignment record yet is, like Kafka's default, stable at epoch 0
        reconciled = all((m.member_state or 0) == 0 and (m.member_epoch or 0) == ae for m in members)
        if "offsets" not in self.engine.sources and d is not None:
            # without records, member epochs come from the last snapshot: trust it while epochs agree
            reconciled = d[1] == "Stable" and ae == (self.assignment_epoch or 0)
        return derive_consumer_group_state(len(members), ge, ae, reconciled).value

    def update_state(self, ts: int) -> None:
        st = self.current_state()
        if st != self.engine.state:
            ts = self.engine.clamp(ts)
            self.engine.timeline.append(
                [st, ts, "offsets" not in self.engine.sources and "describe" not in self.engine.sources]
            )
            self.engine.state = st
            if st == "Stable":
                g = self.epochs.get(self.group_epoch or -1)
                if g is not None and g.stable is None:
                    g.stable = ts


def _who(m: Member) -> tuple[str | None, str | None] | None:
    """A member's (client id, host), None for what is not known (a record's empty string included);
    None when neither is."""
    cid, host = m.client_id or None, m.client_host or None
    return None if cid is None and host is None else (cid, host)


def has_k848_details(ev: DescribeSnapshot) -> bool:
    """A description that only a KIP-848 group has: the broker's own state and epochs, or members with
    a target assignment or a member epoch (classic members have neither; an empty target list is not
    taken as one, in case a client library fills it in for classic members)."""
    return bool(ev.broker_state) or any(
        dm.target_assignment or dm.member_epoch is not None for dm in ev.members
    )
