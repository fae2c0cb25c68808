"""Why a classic group rebalanced, where the broker did not say: from the members that joined and
left, their heartbeats and commits, and the cooperative protocols' follow-up rebalance.
"""

from __future__ import annotations

from coordinator_model.membership import Generation

# a member quiet for twice its commit interval plus this, before its rebalance settled, had stopped
QUIET_SLACK_MS = 1_500
# A member with no commit pace to judge by whose last sign of life came this close to one session
# timeout (or max.poll.interval) before its group's next rebalance was expired (or stopped polling):
# within SESSION_MATCH of the timeout, plus the time the remaining members take to settle that
# rebalance (a session timeout at most, and never more than SETTLE_MAX_MS: with Kafka's 45 s
# default session the window stays about 15 s wide, so an idle member that closes is rarely taken
# for a crash).
SESSION_MATCH = 0.1
SETTLE_MAX_MS = 5_000


class RebalanceCauses:
    """The cause of each generation (`gen_cause`), and the member and gap of a timeout."""

    def gen_cause(self, g: Generation) -> None:
        """Cause from the members that joined/left when the broker did not say."""
        self.split_transient(g)
        if g.cause != "unknown" and "cause" not in g.inferred:
            if g.cause == "member_left" and g.left and "heartbeats" not in self.engine.sources:
                # an explicit LeaveGroup is also how a client leaves when its poll interval expired:
                # its commits say which (the broker's reason stands otherwise)
                self.cause_from_commits(g, only_poll=True)
            self.fill_gap(g)
            return  # the broker's reason
        if g.cause == "unknown":
            if g.generation == 1:
                g.cause = "group_created"
            elif g.left:
                g.cause = "member_left"
            elif g.joined:
                g.cause = "member_joined"
            elif (self.protocol and "cooperative" in self.protocol) or self.incremental:
                # cooperative protocols rebalance twice: a member that gave up partitions rejoins to
                # have them handed out, right after the generation that took them settled
                g.cause = self.follow_up_cause(g)
                prev = self.generations.get((g.generation or 0) - 1)
                if "start" in g.inferred and prev is not None and prev.stable is not None:
                    self.move_start(g, max(prev.stable, self._last_stable_seen or prev.stable) + 1)
        if g.cause == "member_left" and g.left and "heartbeats" not in self.engine.sources:
            self.cause_from_commits(g)
        if g.cause == "member_left" and g.left and all(self.went_silent(mid) for mid in g.left):
            # The broker's record came before the session timer fired (the probe's last heartbeat
            # event can trail the broker's last heartbeat by up to an interval): a member that sent
            # no LeaveGroup and fell silent for most of its session was expired, it did not leave.
            g.cause = "session_timeout"
        if g.cause == "member_left" and any(
            self.poll_stalled(
                mid, g.start, self.engine.members.get(mid) or self.engine.departed_members.get(mid)
            )
            for mid in g.left
        ):
            g.cause = "poll_timeout"
        g.inferred.add("cause")
        self.fill_gap(g)

    def members_before(self, gen: int) -> Generation | None:
        """The newest generation below `gen` whose members are known (a record or the broker's
        log), skipping generations that left no record."""
        known = [k for k, x in self.generations.items() if k < gen and "members" not in x.inferred]
        return self.generations[max(known)] if known else None

    def split_transient(self, g: Generation) -> None:
        """A member that joined and left between two records, across a generation that left none:
        that generation's rebalance was abandoned right after the member's join completed it (the
        member left before SyncGroup, so no record was written). The skipped generation is the
        join, the recorded one the leave (in a storm of short-lived members, each flapper makes
        such a pair). A member is transient when the recorded generation saw it leave though the
        last known members did not hold it, or saw it both join and leave."""
        gap = self.generations.get(g.generation - 1) if g.generation else None
        if gap is None or gap.cause != "unknown" or "members" not in gap.inferred or gap.joined:
            return
        before = self.members_before(gap.generation or 0)
        if before is None:
            return
        transient = [m for m in g.left if m not in before.members or m in g.joined]
        if not transient:
            return
        gap.joined = transient
        gap.cause = "member_joined"
        gap.inferred.add("cause")
        g.joined = [m for m in g.joined if m not in transient]

    def cause_from_commits(self, g: Generation, only_poll: bool = False) -> None:
        """Without client events, how the members of `g.left` went, read from their commits: a member
        commits its partitions at its own pace until it goes; one that closes cleanly commits a last
        time and sends LeaveGroup (the rebalance begins right after that commit), one that crashed
        or froze went quiet about a session timeout before it was removed, one that stopped polling
        about its max.poll.interval (the rebalance timeout a classic client sends) before it left.
        Inferred, and said so: the cause is in `g.inferred`. `only_poll`: the broker said LeaveGroup,
        so only a poll timeout (whose client sends one) can be read from the commits."""
        ref = g.stabilized if g.stabilized is not None else g.stable if g.stable is not None else g.start
        verdicts: list[tuple[str | None, str, int]] = []  # (how it went, member, quiet for)
        for mid in g.left:
            m = self.engine.members.get(mid) or self.engine.departed_members.get(mid)
            joined = self.joined_at(mid, g) if m is not None else None
            # its own commits: those since the rebalance that gave it the partitions (before that,
            # the member that held them committed there, last of all as it gave them up)
            seen = (
                self.engine.offsets.last_commit(m.assignment, since=self.assigned_at(mid, g)) if m else None
            )
            if m is None or (seen is None and joined is None):
                verdicts.append((None, mid, 0))
                continue
            last, cadence = seen if seen is not None else (None, None)
            st, rt = m.session_timeout_ms or 0, m.rebalance_timeout_ms or 0
            if last is None or cadence is None:
                # No pace to judge by (its partitions had nothing new to commit). Its last sign of
                # life, a commit or the rebalance that gave it its partitions, one session timeout
                # before the rebalance that removed it is the signature of an expiry (a crash); one
                # max.poll.interval (a classic client's rebalance timeout) before it, of a poll loop
                # that stopped (its client then sends LeaveGroup); the nearer of the two when both
                # fit. A member that closes sends LeaveGroup at any moment.
                quiet = ref - max(t for t in (last, joined) if t is not None)
                timeouts = [("session_timeout", st)] + ([("poll_timeout", rt)] if rt > st else [])
                # the others settle the rebalance within about a heartbeat (a third of a session)
                settle = max(QUIET_SLACK_MS, min(st, SETTLE_MAX_MS))
                fits = sorted(
                    (abs(quiet - t) / t, how)
                    for how, t in timeouts
                    if t and (1 - SESSION_MATCH) * t <= quiet <= (1 + SESSION_MATCH) * t + settle
                )
                if fits:
                    verdicts.append((fits[0][1], mid, quiet))
                else:
                    verdicts.append(("member_left", mid, last) if last is not None else (None, mid, 0))
                continue
            gap = ref - last
            if gap < 2 * cadence + QUIET_SLACK_MS:
                verdicts.append(("member_left", mid, last))  # committing at its pace until it went
            elif rt and gap >= 0.8 * rt and gap >= (st + rt) / 2:
                verdicts.append(("poll_timeout", mid, gap))
            elif st and gap >= 0.8 * st:
                verdicts.append(("session_timeout", mid, gap))
            else:
                verdicts.append((None, mid, gap))  # quiet for a while, for no reason the evidence shows
        how = [v for v, _, _ in verdicts]
        if "poll_timeout" in how or (not only_poll and how and all(v == "session_timeout" for v in how)):
            cause = "poll_timeout" if "poll_timeout" in how else "session_timeout"
            g.cause = cause
            g.inferred.add("cause")
            g.member_id, g.gap_ms = next((mid, gap) for v, mid, gap in verdicts if v == cause)
        elif not only_poll and "start" in g.inferred and "member_left" in how:
            # a member that closes commits a last time, then sends LeaveGroup
            self.move_start(g, min(t for v, _, t in verdicts if v == "member_left"))

    def assigned_at(self, member_id: str, g: Generation) -> int | None:
        """When `member_id` got the partitions it held before `g`: the start of the first of the
        unbroken run of generations before `g` that gave it the same partitions (None: not known)."""
        start = None
        owned = None
        for k in sorted((k for k in self.generations if k < (g.generation or 0)), reverse=True):
            x = self.generations[k]
            if "members" in x.inferred:
                continue
            mine = x.assignment.get(member_id)
            if mine is None or (owned is not None and set(mine) != owned):
                break
            owned = set(mine)
            start = x.start
        return start

    def joined_at(self, member_id: str, g: Generation) -> int | None:
        """When the rebalance that last gave `member_id` its partitions before `g` settled."""
        before = self.members_before(g.generation or 0)
        if before is None or member_id not in before.members:
            return None
        return before.stable if before.stable is not None else before.stabilized

    def follow_up_cause(self, g: Generation) -> str:
        """Why a cooperative group rebalanced again with nobody joining or leaving: a member whose
        owned partitions the previous generation took away revoked them and rejoined. Kafka calls it
        `leader_rejoin` when that member is the leader, `metadata_change` for a follower (its
        subscription's owned partitions changed). When only followers gave partitions up, one of
        them rejoined; otherwise (the leader did, or who did is unknown) the leader is assumed."""
        prev = self.generations.get((g.generation or 0) - 1)
        revoked = self.revoked_in((g.generation or 0) - 1)
        if prev is None or revoked is None:
            return "leader_rejoin"
        leader = prev.leader or g.leader
        if revoked and leader is not None and leader not in revoked:
            return "metadata_change"
        return "leader_rejoin"

    def revoked_in(self, gen: int) -> list[str] | None:
        """The members that generation `gen` took partitions from and kept (None: unknown). In a
        cooperative group each of them revokes those partitions and rejoins at once, which starts
        the next rebalance the moment `gen` is Stable."""
        now, before = self.generations.get(gen), self.generations.get(gen - 1)
        if now is None or before is None or not now.assignment or not before.assignment:
            return None
        return [
            mid
            for mid, owned in before.assignment.items()
            if mid in now.assignment and set(owned) - set(now.assignment[mid])
        ]

    def follow_up_due(self) -> bool:
        """The current generation of a cooperative group revoked partitions from members it kept:
        a follow-up rebalance starts as soon as it is Stable."""
        cooperative = (self.protocol and "cooperative" in self.protocol) or self.incremental
        return bool(cooperative and self.generation is not None and self.revoked_in(self.generation))

    def went_silent(self, member_id: str) -> bool:
        """Its heartbeat events stopped at least half its session timeout before it was removed. A
        LeaveGroup's `leave` event counts as a heartbeat (its time is the leave's), so a member that
        left cleanly never qualifies; nor does one the clients never reported on."""
        m = self.engine.members.get(member_id) or self.engine.departed_members.get(member_id)
        gone = self.engine.departed.get(member_id)
        if m is None or gone is None or m.last_heartbeat is None or not m.session_timeout_ms:
            return False
        return "heartbeats" in self.engine.sources and gone - m.last_heartbeat >= m.session_timeout_ms // 2

    def fill_gap(self, g: Generation) -> None:
        """member_id and gap_ms of a session or poll timeout generation, from the member's last
        heartbeat (session) or poll stall (poll) and the time it was removed."""
        if g.gap_ms is not None or g.cause not in ("session_timeout", "poll_timeout"):
            return
        for mid in [g.member_id] if g.member_id else list(g.left):
            m = self.engine.members.get(mid) or self.engine.departed_members.get(mid)
            removed = self.engine.departed.get(mid, g.start)
            if g.cause == "session_timeout":
                if m is None or m.last_heartbeat is None or m.last_heartbeat > removed:
                    continue
                gap = removed - m.last_heartbeat
            else:
                if m is None:
                    continue
                if g.member_id is None and len(g.left) > 1 and not self.poll_stalled(mid, removed, m):
                    continue  # of several leavers, the one whose poll() stalled
                gap = self.poll_gap(m, removed)
            g.member_id = mid
            g.gap_ms = gap
            return
        if g.member_id is None and len(g.left) == 1:
            g.member_id = g.left[0]
