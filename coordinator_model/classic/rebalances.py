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

from coordinator_model.classic.causes import RebalanceCauses
from coordinator_model.classic.client_hints import ClientHints
from coordinator_model.classic.poll_timeouts import PollTimeouts
from coordinator_model.classic.take_backs import TakeBacks
from coordinator_model.group_context import GroupContext
from coordinator_model.membership import MAX_GENERATIONS, Generation
from coordinator_model.states import GroupState, assert_valid_transition, legal_path

MAX_TIMELINE = 5000
# A rebalance no describe saw in PreparingRebalance began after the last thing known of the old
# generation (its Stable record, or a describe that saw it Stable) and before its new generation
# settled. Bounds this close (the Admin poller describes a group in motion every 300 ms) put
# it at their middle; wider ones leave it at the settling, the one moment the evidence gives (a
# group Empty for an hour that someone joins did not spend half an hour in PreparingRebalance).
BRACKET_MS = 600


class ClassicRebalances(ClientHints, RebalanceCauses, PollTimeouts, TakeBacks):
    """The classic group's state, rebalances and generations (the group's shared parts on `engine`)."""

    # when a describe last saw the group Stable (a class default: engines pickled before it read None)
    _last_stable_seen: int | None = None
    # the group's GroupMetadata records have been seen: the coordinator's own list of its members
    # (a class default: engines pickled before it read False until their next record)
    metadata_records = False

    def __init__(self, engine: GroupContext) -> None:
        # a weak reference: a group and its model never form a cycle, so a group the pipeline has
        # unpickled, used and let go is freed at once (cyclic garbage waits for the collector, and
        # the pipeline unpickles thousands of groups a batch)
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
                # a jump of billions (a forged or corrupt broker-log line) must not make billions
                # of placeholders
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
