"""A classic group's lines in the group coordinator's log replayed: every state change, each
rebalance's stated reason, members added, removed and replaced (broker_log.py parses them).
"""

from __future__ import annotations

from coordinator_model.broker_log import BrokerLogEvent, adding_instance_id, cause_of_reason, reason_members


class BrokerLogReplay:
    """The coordinator's log lines, onto the group's state machine."""

    def on_broker(self, ev: BrokerLogEvent) -> None:
        kind = ev.kind
        if kind == "groups_deleted":
            self.goto("Dead", ev.ts)
            self.engine.deleted = True
            self.engine.members.clear()
            self.engine.offsets.forget()
            return
        self.engine.typed("classic", "broker_log")
        if kind == "simple_group_created":
            self.simple = True
            if self.engine.state is None:
                self.goto("Empty", ev.ts)
            return
        if kind == "prepare":
            old = ev.generation or 0
            done = self.generations.get(old + 1)
            if self.generation is not None and old + 1 <= self.generation:
                # a late line about a rebalance we already closed: it only adds the broker's reason
                if done is not None and ("cause" in done.inferred or done.reason is None):
                    cause = cause_of_reason(ev.reason)
                    done.cause = "group_created" if old == 0 and cause == "member_joined" else cause
                    done.reason = ev.reason
                    done.inferred.discard("cause")
                return
            if self.generation is None or self.generation < old:
                self.generation = old
            if self.engine.state == "Dead":
                self.goto("Empty", ev.ts, True)
            names = reason_members(ev.reason or "")
            cause = cause_of_reason(ev.reason)
            g = self.open_rebalance(ev.ts, cause, ev.reason, inferred=False)
            g.generation = old + 1
            if old == 0 and cause == "member_joined":
                g.cause = "group_created" if self.generation == 0 else cause
            for mid in names["joined"]:
                m = self.engine.member(mid)
                m.group_instance_id = adding_instance_id(ev.reason or "") or m.group_instance_id
                m.joined_at = ev.ts
                if mid not in g.joined:
                    g.joined.append(mid)
            for mid in names["left"] + names["expired"]:
                m = self.engine.members.get(mid)
                if cause == "member_left" and self.poll_stalled(
                    mid, ev.ts, m or self.engine.departed_members.get(mid)
                ):
                    g.cause = "poll_timeout"
                self.engine.remove_member(mid, ev.ts)
                if mid not in g.left:
                    g.left.append(mid)
            self.goto("PreparingRebalance", ev.ts)
            return
        if kind == "stabilized":
            g = self.close_generation(ev.generation, ev.ts, inferred=False)
            g.stabilized = ev.ts
            self.goto("CompletingRebalance", ev.ts)
            return
        if kind == "assignment":
            g = self.close_generation(ev.generation, ev.ts, inferred=False)
            if g.stabilized is None:
                g.stabilized = ev.ts
            g.stable = ev.ts
            g.leader = ev.member_id
            self.leader = ev.member_id
            if (
                ev.member_id
                and ev.member_id not in self.engine.members
                and ev.member_id not in self.engine.departed
            ):
                self.engine.member(ev.member_id)
            if not g.members:
                g.members = tuple(self.engine.members)
            self.goto("Stable", ev.ts)
            return
        if kind == "empty":
            if self.engine.state not in ("PreparingRebalance",) and self.open is None:
                self.open_rebalance(ev.ts, "unknown", None, True)
            self.become_empty(ev.ts, inferred=False, gen=ev.generation)
            return
        if kind in ("member_failed", "member_left"):
            m = self.engine.members.get(ev.member_id)
            stalled = self.poll_stalled(ev.member_id, ev.ts, m)
            self.engine.remove_member(ev.member_id, ev.ts)
            if (
                self.open is not None
                and self.engine.state == "PreparingRebalance"
                and ev.member_id not in self.open.left
            ):
                self.open.left.append(ev.member_id)
            if stalled and self.open is not None and self.open.cause == "member_left":
                self.open.cause = "poll_timeout"
            return
        if kind == "member_pending":
            self.pending_members.add(ev.member_id)
            return
        if kind == "member_added":
            self.pending_members.discard(ev.member_id)
            m = self.engine.member(ev.member_id)
            m.group_instance_id = ev.group_instance_id or m.group_instance_id
            m.joined_at = m.joined_at or ev.ts
            return
        if kind == "static_member_replaced":
            if ev.group_instance_id:
                self.replaced_instances[ev.group_instance_id] = ev.member_id or ""
            return
        if kind == "pending_expired":
            self.pending_members.discard(ev.member_id)
