"""A classic group's state machine and its generations: the moves between Kafka's five states
(Kafka's GroupMetadata.transitionTo with its legal previous states, states.py), the rebalance
that opens when a group leaves Stable and the generation it produces, and why it happened.

Evidence often skips states Kafka never writes down (no record says PreparingRebalance): `goto`
passes the states Kafka must have passed, marks them inferred, and checks every step against the
table of Kafka's legal previous states (states.py), so the timeline never shows an illegal
transition. classic/group.py replays each source's evidence onto this.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection
from typing import Any

from coordinator_model.evidence import POLL_INTERVAL_MAX_MS
from coordinator_model.group_context import GroupContext
from coordinator_model.membership import MAX_GENERATIONS, Generation, Member
from coordinator_model.states import GroupState, assert_valid_transition, legal_path

MAX_TIMELINE = 5000
POLL_LEAVE_SLACK_MS = 2_000  # a poll_stall event is emitted up to about a second late
POLL_STALL_WINDOW_MS = 30_000  # a LeaveGroup this soon after a poll_stall is the poll interval expiring
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
# A rebalance no describe saw in PreparingRebalance began after the last thing known of the old
# generation (its Stable record, or a describe that saw it Stable) and before its new generation
# settled. Bounds this close (the Admin poller describes a group in motion every 300 ms) put
# it at their middle; wider ones leave it at the settling, the one moment the evidence gives (a
# group Empty for an hour that someone joins did not spend half an hour in PreparingRebalance).
BRACKET_MS = 600
# Members whose `leave` a client event reported, and member ids client events named, that the
# coordinator's account has not shown yet (ClassicGroupModel.on_heartbeat): kept per group at most
# this many of each, the oldest dropped first.
MAX_LEAVE_HINTS = 100
DEFAULT_REBALANCE_TIMEOUT_MS = 300_000  # max.poll.interval.ms's default: a classic member's rebalance timeout


class ClassicRebalances:
    """The classic group's state, rebalances and generations (the group's shared parts on `engine`)."""

    # when a describe last saw the group Stable (a class default: engines pickled before it read None)
    _last_stable_seen: int | None = None
    # the group's GroupMetadata records have been seen: the coordinator's own list of its members
    # (a class default: engines pickled before it read False until their next record)
    metadata_records = False
    # member id -> (when its client said it left, whether its poll() had stalled): leaves not taken
    # as said yet (`hint_leave`; a class default for engines pickled before it, made when first used)
    _leave_hints: dict[str, tuple[int, bool]] | None = None
    # member id -> when a client event first named it, for a member id the coordinator's account
    # does not have yet (`hint_join`; likewise a class default)
    _join_hints: dict[str, int] | None = None
    # the rebalance a client's `leave` alone opened, to take back if that member speaks again
    # (`unleave`; as _expiry_undo, and a class default for engines pickled before it); and the one a
    # new member id's first event alone opened, to take back if a snapshot does not list it (`unjoin`)
    _leave_undo: tuple[str, int, str, Generation, int] | None = None
    _join_undo: tuple[str, int, str, Generation, int] | None = None

    def __init__(self, engine: GroupContext) -> None:
        # a weak reference: a group and its model never form a cycle, so a group the pipeline has
        # unpickled, used and let go is freed at once (cyclic garbage waits for the collector, which
        # made unpickling 10,000 groups a batch a third slower)
        self.engine = engine if isinstance(engine, weakref.ProxyType) else weakref.proxy(engine)
        self.generation: int | None = None
        self.generation_inferred = False
        self.protocol: str | None = None
        self.leader: str | None = None
        self.pending_members: set[str] = set()
        self.generations: dict[int, Generation] = {}
        self.open: Generation | None = None  # a rebalance that has not produced its generation yet
        self.simple = False
        self.replaced_instances: dict[str, str] = {}  # instance id -> old member id awaiting its new id
        self.empty_since: int | None = None
        self._last_describe_ts: int | None = None
        self._expiry_undo: tuple[str, int, str, Generation, int] | None = None
        self.snapshot_members = False  # an Admin API snapshot has listed members (and so assignments)
        self.incremental = False  # client events show cooperative (incremental) rebalancing
        self._rejoined: tuple[str, int] | None = None  # a known (static) member's latest new JoinGroup

    def __getstate__(self) -> dict[str, Any]:
        # the group it belongs to is not part of its state: GroupEngine.__setstate__ attaches it again
        return {k: v for k, v in self.__dict__.items() if k != "engine"}

    def goto(self, state: str, ts: int, inferred: bool = False, again: bool = False) -> None:
        """Move to `state` at `ts` through the legal states Kafka would have passed (those inferred)."""
        ts = self.engine.clamp(ts)
        if self.engine.state is None or (self.engine.state == "Dead" and state != "Dead"):
            if self.engine.state == "Dead":
                self.reset_incarnation()
            self.engine.timeline.append([state, ts, inferred])
            self.engine.state = state
            return
        if self.engine.state == state and not again:
            return
        current = GroupState.parse(self.engine.state)
        path = legal_path(current, GroupState.parse(state))
        for step in path:  # GroupMetadata.transitionTo: every step the timeline shows is a legal one
            assert_valid_transition(current, step)
            current = step
        for step in path[:-1]:
            self.engine.timeline.append([step.value, ts, True])
        self.engine.timeline.append([state, ts, inferred])
        self.engine.state = state
        if state == "Empty":
            self.empty_since = ts
        if len(self.engine.timeline) > MAX_TIMELINE:
            del self.engine.timeline[: len(self.engine.timeline) - MAX_TIMELINE]

    def reset_incarnation(self) -> None:
        """A deleted group id used again is a new group (Kafka creates a new GroupMetadata)."""
        self.engine.members.clear()
        self.open = None
        self.generations.clear()  # generation numbers start again; the timeline keeps the old life
        self.generation = None
        self.protocol = None
        self.leader = None
        self.engine.deleted = False

    # -- leaves reported by clients, waiting for the coordinator's account ------------------------
    def hint_leave(self, member_id: str, ts: int, stalled: bool) -> None:
        """`member_id`'s client said it left at `ts`: a hint, not yet a fact (see on_heartbeat)."""
        hints = self._leave_hints
        if hints is None:
            hints = self._leave_hints = {}
        if member_id in hints:
            return  # the first leave is when it left
        hints[member_id] = (ts, stalled)
        if len(hints) > MAX_LEAVE_HINTS:
            oldest = next(iter(hints))
            del hints[oldest]
            if oldest in self.engine.members:
                self.engine.members[oldest].closed = False

    def hint_join(self, member_id: str, ts: int) -> None:
        """A member id the coordinator's account does not have yet spoke at `ts`: a hint of a join."""
        hints = self._join_hints
        if hints is None:
            hints = self._join_hints = {}
        if member_id in hints:
            return
        hints[member_id] = ts
        if len(hints) > MAX_LEAVE_HINTS:
            del hints[next(iter(hints))]

    def leave_hint(self, member_id: str) -> tuple[int, bool] | None:
        return self._leave_hints.get(member_id) if self._leave_hints else None

    def drop_hint(self, member_id: str) -> tuple[int, bool] | None:
        return self._leave_hints.pop(member_id, None) if self._leave_hints else None

    def hinted_leaves(self, upto: int, exclude: Collection[str] = ()) -> list[tuple[str, int, bool]]:
        """The current members whose client said they left after the group's last transition and by
        `upto`: (member id, when, stalled). A hint from before the last transition is stale (the
        group moved on without it) and is dropped."""
        hints = self._leave_hints
        if not hints:
            return []
        out = []
        last = self.engine.last_ts()
        joiners = self._join_hints or {}
        for mid, (ts, stalled) in list(hints.items()):
            if mid in joiners and mid not in self.engine.members:
                continue  # a joiner that left before any record listed it (transient_joiners)
            if ts < last or mid not in self.engine.members:
                del hints[mid]
                if mid in self.engine.members:
                    self.engine.members[mid].closed = False  # still a member, as far as anyone knows
            elif ts <= upto and mid not in exclude:
                out.append((mid, ts, stalled))
        return out

    def transient_joiners(self, listed: set[str]) -> list[str]:
        """The member ids client events named that joined and left (both hints) without a record
        listing them; their hints are taken."""
        out = []
        for mid in sorted(self._join_hints or ()):
            if mid not in listed and self.leave_hint(mid) is not None:
                del self._join_hints[mid]
                self.drop_hint(mid)
                out.append(mid)
        return out

    def hinted_joins(self, upto: int) -> list[tuple[str, int]]:
        """The member ids client events named, not members yet, after the group's last transition and
        by `upto`, no longer ago than a rebalance may take (the members' rebalance timeout: a join's
        rebalance shows, in a record at the latest, within it): (member id, when first named), in
        that order. Stale ones are dropped."""
        hints = self._join_hints
        if not hints:
            return []
        out = []
        last = self.engine.last_ts()
        timeouts = [m.rebalance_timeout_ms or 0 for m in self.engine.members.values()]
        window = min(max(timeouts, default=0) or DEFAULT_REBALANCE_TIMEOUT_MS, POLL_INTERVAL_MAX_MS)
        for mid, ts in list(hints.items()):
            if ts < last or ts < upto - window or mid in self.engine.members:
                del hints[mid]
            elif ts <= upto and self.leave_hint(mid) is None:  # (a transient one waits for its record)
                out.append((mid, ts))
        return sorted(out, key=lambda x: (x[1], x[0]))

    def open_rebalance(
        self,
        ts: int,
        cause: str,
        reason: str | None,
        inferred: bool,
        upto: int | None = None,
        exclude: Collection[str] = (),
    ) -> Generation:
        """A rebalance starts (PreparingRebalance). Merges with an inferred one already open.

        An inferred start takes the members whose client said they left since the last transition
        and by `upto` (default `ts`; except `exclude`, members the evidence at hand still lists),
        and the member ids client events named that the group does not have yet: the earliest of
        their LeaveGroups and JoinGroups began it (and says why), they are its leavers and joiners."""
        if self.open is not None:
            g = self.open
            if not inferred and "start" in g.inferred:
                # the broker's account replaces the client-side guess
                g.start = ts
                g.inferred.discard("start")
                g.cause, g.reason = cause, reason
                g.inferred.discard("cause")
                for i in range(len(self.engine.timeline) - 1, -1, -1):
                    row = self.engine.timeline[i]
                    if row[0] == "PreparingRebalance":
                        if row[2]:
                            # between the row before and the row after (the last row has none after:
                            # evidence applied out of time order must not put it before its floor)
                            floor = self.engine.timeline[i - 1][1] if i > 0 else row[1]
                            moved = max(ts, floor)
                            if i + 1 < len(self.engine.timeline):
                                moved = min(moved, self.engine.timeline[i + 1][1])
                            row[1] = g.start = moved
                            row[2] = False
                        break
            elif g.cause == "unknown":
                g.cause = cause
            return g
        limit = ts if upto is None else upto
        left = self.hinted_leaves(limit, exclude) if inferred else []
        joined = self.hinted_joins(limit) if inferred else []
        # a joiner that left again before any record listed it (its record will say; transient_joiners)
        # still began the rebalance with its join
        last = self.engine.last_ts()
        transient = [
            t
            for mid, t in (self._join_hints or {}).items()
            if inferred and last <= t <= limit and self.leave_hint(mid) is not None
        ]
        first = min([t for _, t, _ in left] + [t for _, t in joined] + transient, default=None)
        if first is not None and (first < ts or cause == "unknown"):
            # the earliest of them began it (the evidence at hand only shows it under way), and says why
            if left and min(t for _, t, _ in left) == first:
                cause = "poll_timeout" if any(stalled for _, _, stalled in left) else "member_left"
            else:
                created = self.generation in (None, 0) and not self.generations
                cause = "group_created" if created else "member_joined"
            ts = first
        ts = self.engine.clamp(ts)
        g = Generation(generation=None, start=ts, cause=cause, reason=reason)
        if inferred:
            g.inferred.update({"start", "cause"})
        self.open = g
        self.goto("PreparingRebalance", ts, inferred)
        for mid, t, _ in left:
            self.drop_hint(mid)
            self.engine.remove_member(mid, t)
            g.left.append(mid)
        for mid, _ in joined:
            del self._join_hints[mid]  # (hinted_joins only gives those it holds)
            g.joined.append(mid)
        return g

    def _keep_newest(self) -> None:
        """The newest MAX_GENERATIONS generations, the older dropped."""
        if len(self.generations) <= MAX_GENERATIONS:
            return  # (every generation closes here: no sort of them each time)
        for old in sorted(self.generations)[: max(0, len(self.generations) - MAX_GENERATIONS)]:
            del self.generations[old]

    def close_generation(self, gen: int, ts: int, inferred: bool) -> Generation:
        """Generation `gen` exists from now on: attach the open rebalance to it."""
        g = self.generations.get(gen)
        if g is None:
            g = self.open if self.open is not None and (self.open.generation or 0) <= gen else None
            if g is None:
                g = Generation(generation=gen, start=ts, inferred={"start", "cause"})
            g.generation = gen
            self.generations[gen] = g
            self._keep_newest()
            # the previous generation ends where this rebalance began
            prev = [k for k in self.generations if k < gen]
            if prev:
                p = self.generations[max(prev)]
                if p.end is None:
                    p.end = g.start
        if self.open is g:
            self.open = None
        self.fill_gap(g)
        if self.generation is None or gen > self.generation:
            # a jump of more than one: rebalances that left no record (abandoned before SyncGroup)
            if self.generation is not None and gen > self.generation + 1:
                # at most the MAX_GENERATIONS numbers below `gen` (the older ones would be trimmed):
                # a jump of billions (a forged or corrupt broker-log line) made billions of
                # placeholders, and a live collector's model worker grew to 16 GB (issue 32)
                for missing in range(max(self.generation + 1, gen - MAX_GENERATIONS), gen):
                    if missing not in self.generations:
                        self.generations[missing] = Generation(
                            generation=missing,
                            start=g.start,
                            end=g.start,
                            inferred={"start", "cause", "members", "assignment"},
                        )
                self._keep_newest()
            self.generation = gen
        if inferred:
            self.generation_inferred = True
        return g

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

    def unseen_start(self, settled: int) -> int:
        """When a rebalance began that no describe saw, its new generation settled at `settled`:
        the middle of its bounds when they are close (BRACKET_MS), else `settled`."""
        lo = max(self.engine.last_ts(), self._last_stable_seen or -(2**62))
        if 0 <= settled - lo <= BRACKET_MS:
            return (lo + settled) // 2
        return settled

    def move_start(self, g: Generation, ts: int) -> None:
        """An inferred rebalance start moved to `ts`, strictly between the state it followed and the
        one after it (else the evidence does not place it, and it stays)."""
        tl = self.engine.timeline
        for i in range(len(tl) - 1, 0, -1):
            if tl[i][0] == "PreparingRebalance" and tl[i][1] == g.start and tl[i][2]:
                ceiling = tl[i + 1][1] if i + 1 < len(tl) else g.stabilized or g.stable or ts + 1
                if not tl[i - 1][1] < ts < ceiling:
                    return  # e.g. a last commit before the state it followed: when it left is unknown
                tl[i][1] = ts
                prev = self.generations.get((g.generation or 0) - 1)
                if prev is not None and prev.end == g.start:
                    prev.end = ts
                g.start = ts
                return

    def went_silent(self, member_id: str) -> bool:
        """Its heartbeat events stopped at least half its session timeout before it was removed. A
        LeaveGroup's `leave` event counts as a heartbeat (its time is the leave's), so a member that
        left cleanly never qualifies; nor does one the clients never reported on."""
        m = self.engine.members.get(member_id) or self.engine.departed_members.get(member_id)
        gone = self.engine.departed.get(member_id)
        if m is None or gone is None or m.last_heartbeat is None or not m.session_timeout_ms:
            return False
        return "heartbeats" in self.engine.sources and gone - m.last_heartbeat >= m.session_timeout_ms // 2

    def poll_stalled(self, member_id: str, ts: int, m: Member | None) -> bool:
        if m is None or m.poll_stall_at is None:
            return False
        return 0 <= ts - m.poll_stall_at <= max(POLL_STALL_WINDOW_MS, (m.max_poll_interval_ms or 0))

    def leave(self, member_id: str, ts: int, stalled: bool) -> None:
        """A dynamic member left at `ts` (ClassicGroupModel: the rebalance its LeaveGroup starts)."""
        raise NotImplementedError

    def expire(self, member_id: str, ts: int) -> None:
        """Session timeout inferred from heartbeats that stopped (no broker log)."""
        hint = self.drop_hint(member_id)
        if hint is not None and member_id in self.engine.members:
            # its client said it left, and it said nothing since: it left then (LeaveGroup), it did
            # not expire
            self.leave(member_id, hint[0], hint[1])
            return
        m = self.engine.remove_member(member_id, ts)
        g = None
        if self.engine.state in ("Stable", "CompletingRebalance"):
            rows, state = len(self.engine.timeline), self.engine.state
            g = self.open_rebalance(ts, "session_timeout", None, True)
            g.left.append(member_id)
            self._expiry_undo = (member_id, rows, state, g, len(self.engine.timeline))
        elif self.open is not None:
            g = self.open
            if "cause" in g.inferred and g.cause == "unknown" and not g.joined and not g.left:
                # the survivors' revocation came first: it was this member's session expiring
                g.cause = "session_timeout"
            g.left.append(member_id)
        if g is not None and g.cause == "session_timeout" and g.member_id is None:
            g.member_id = member_id
            g.gap_ms = ts - m.last_heartbeat if m is not None and m.last_heartbeat is not None else None
        if m is not None and not self.engine.members and self.engine.state == "PreparingRebalance":
            self.become_empty(ts, inferred=True)

    def revive(self, member_id: str) -> bool:
        """Undo a session expiry inferred from silent heartbeats when the member speaks again before
        anything else happened: an event from before the expiry that arrived late (the timers ran
        ahead of the events' transport), or a poll_stall (librdkafka serves the statistics behind
        heartbeat events from poll(), so a stalled poll() silences the probe before it reports)."""
        u = self._expiry_undo
        self._expiry_undo = None
        return self._undo_removal(u, member_id)

    def unleave(self, member_id: str) -> bool:
        """Undo the rebalance a client `leave` opened where client events are the group's only account
        (no records, no broker log, no snapshot listing members), when the same member speaks again
        before anything else happened: a dynamic member's id ends with its LeaveGroup (its client
        rejoins with a new one), so the leave was not its own but written in its name."""
        u = self._leave_undo
        if u is None or u[0] != member_id:
            return False
        self._leave_undo = None
        return self._undo_removal(u, member_id)

    def unjoin(self, member_id: str, ts: int) -> bool:
        """Undo the rebalance a new member id's first client event opened where there are no records,
        when a snapshot that lists the group's members does not list it, before anything else
        happened: the member the event named is not one the coordinator has."""
        u = self._join_undo
        if u is None or u[0] != member_id:
            return False
        self._join_undo = None
        g = u[3]
        if self.open is not g or len(self.engine.timeline) != u[4] or g.joined != [member_id] or g.left:
            return False
        if self.engine.state != "PreparingRebalance" or member_id not in self.engine.members:
            return False
        del self.engine.timeline[u[1] :]
        self.engine.state = u[2]
        self.open = None
        self.engine.members.pop(member_id)
        self.engine.departed[member_id] = ts  # its later events are a departed member's
        return True

    def _undo_removal(self, u: tuple[str, int, str, Generation, int] | None, member_id: str) -> bool:
        """Take back a member's removal and the rebalance it alone opened (`u`: the member, the
        timeline's length and the state before, that rebalance, the timeline's length after), if
        nothing happened since."""
        if u is None or u[0] != member_id or self.open is not u[3] or len(self.engine.timeline) != u[4]:
            return False
        g = u[3]
        if g.left != [member_id] or g.joined or self.engine.state != "PreparingRebalance":
            return False
        m = self.engine.departed_members.pop(member_id, None)
        if m is None:
            return False
        del self.engine.timeline[u[1] :]
        self.engine.state = u[2]
        self.open = None
        self.engine.departed.pop(member_id, None)
        self.engine.members[member_id] = m
        return True

    def poll_left_at(self, m: Member, ts: int) -> int | None:
        """When `m`'s client left the group by itself because its poll interval expired (librdkafka
        sends LeaveGroup then), if a rebalance seen at `ts` can be that; None otherwise."""
        if m.poll_stall_at is None or m.closed:
            return None
        interval = m.max_poll_interval_ms or m.rebalance_timeout_ms or 0
        left = m.poll_stall_at + interval // 2  # poll_stall is reported at half the interval
        if left - POLL_LEAVE_SLACK_MS <= ts <= m.poll_stall_at + max(POLL_STALL_WINDOW_MS, interval):
            return left
        return None

    def poll_expired(self, ts: int, g: Generation) -> None:
        """A rebalance that began with no join or leave in sight: a member whose poll() stalled long
        enough has left by itself (heartbeats from the background thread go on, so they say nothing)."""
        for m in sorted(self.engine.members.values(), key=lambda m: m.poll_stall_at or 0):
            left = self.poll_left_at(m, ts)
            if left is None:
                continue
            self.engine.remove_member(m.member_id, min(left, ts))
            g.left.append(m.member_id)
            g.cause = "poll_timeout"
            g.member_id = m.member_id
            g.gap_ms = self.poll_gap(m, min(left, ts))
            return

    def stall_ended(self, mid: str, m: Member, ts: int) -> None:
        """The stalled client polled again at `ts` (librdkafka reports `lost` from that poll): the
        poll gap of its poll_timeout generation is now known in full, from the stall's start to this
        poll, not just to the leave. The what-if needs the full gap: a max.poll.interval.ms below
        it would not have avoided the rebalance."""
        if m.poll_stall_at is None:
            return
        start = m.poll_stall_at - (m.max_poll_interval_ms or m.rebalance_timeout_ms or 0) // 2
        recent = [self.open] + [self.generations[k] for k in sorted(self.generations, reverse=True)[:3]]
        for g in recent:
            if g is not None and g.cause == "poll_timeout" and (g.member_id or mid) == mid and mid in g.left:
                g.member_id = mid
                g.gap_ms = max(g.gap_ms or 0, ts - start)
                return

    @staticmethod
    def poll_gap(m: Member | None, left_ts: int) -> int | None:
        """How long the member had not polled when it left: from the stall's start (the poll_stall
        event comes at half the interval) to the leave, else the poll interval itself."""
        if m is None:
            return None
        interval = m.max_poll_interval_ms or m.rebalance_timeout_ms
        if m.poll_stall_at is not None:
            return max(0, left_ts - (m.poll_stall_at - (interval or 0) // 2))
        return interval

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

    def become_empty(self, ts: int, inferred: bool, gen: int | None = None) -> None:
        if gen is None:
            gen = (self.generation or 0) + 1
        if self.open is None and self.engine.state != "PreparingRebalance":
            self.open_rebalance(ts, "unknown", None, True)
        g = self.close_generation(gen, ts, inferred)
        g.empty = True
        g.stable = ts
        g.members = ()
        g.protocol = None
        if not g.left:  # the last members went: the group is Empty because they left
            g.left = [mid for mid in self.engine.members if mid not in g.joined]
        self.gen_cause(g)
        self.engine.members.clear()
        self.protocol = None
        self.leader = None
        self.goto("Empty", ts, inferred)
