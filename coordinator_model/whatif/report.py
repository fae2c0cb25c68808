"""What an assignment costs and how it spreads the work: the per-assignor part of a what-if report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from coordinator_model.assignors import PROTOCOL, Assignment, GroupSpec, TopicPartition
from coordinator_model.assignors.sticky import sticky_target
from coordinator_model.whatif.scenario import RecordedRebalance, Timeouts


def spread_stats(per_member: Mapping[str, float]) -> dict[str, Any]:
    values = list(per_member.values())
    lo = min(values) if values else 0
    hi = max(values) if values else 0
    return {"per_member": dict(per_member), "min": lo, "max": hi, "spread": hi - lo}


def owners_of(assignment: Mapping[str, Iterable[TopicPartition]]) -> dict[TopicPartition, str]:
    return {tuple(tp): m for m, tps in assignment.items() for tp in tps}  # type: ignore[misc]


def target_assignment(name: str, group: GroupSpec, assignment: Assignment) -> Assignment:
    """Where every partition ends up once the rebalance is over: for cooperative-sticky, after the
    follow-up rebalance that hands over the partitions withheld in the first one."""
    if name == "cooperative-sticky":
        return {m: sorted(tps) for m, tps in sticky_target(group).items()}
    return assignment


def assignor_report(
    name: str,
    group: GroupSpec,
    first: Assignment,
    current: Mapping[TopicPartition, str],
    lag: Mapping[TopicPartition, float],
) -> dict[str, Any]:
    final = target_assignment(name, group, first)
    new_owner = owners_of(final)
    member_ids = [m.member_id for m in group.members]
    partitions = {tp: 0 for tp in group.all_partitions()}
    per_member_count = {m: len(final.get(m, [])) for m in member_ids}
    per_member_lag = {m: sum(lag.get(tuple(tp), 0) for tp in final.get(m, [])) for m in member_ids}

    moves = []
    losing: dict[str, int] = {}
    for tp, old in sorted(current.items()):
        new = new_owner.get(tp)
        if new != old:
            moves.append({"topic": tp[0], "partition": tp[1], "from": old, "to": new})
            losing[old] = losing.get(old, 0) + 1
    unowned = sorted(tp for tp in partitions if tp not in current)  # new partitions, orphans of leavers

    protocol = PROTOCOL[name]
    moved_tps = [(m["topic"], m["partition"]) for m in moves if m["to"] is not None]
    if protocol == "eager":
        # Every member revokes everything before rejoining: the whole group stops for the rebalance.
        revoked = [tp for tp, old in current.items() if old in per_member_count]
        paused = list(partitions)
        rebalances = 1
    else:
        # Only the partitions that change owner are revoked; the others keep being consumed.
        revoked = [tp for tp in moved_tps if current.get(tp) in per_member_count]
        paused = sorted(set(moved_tps) | set(unowned))
        rebalances = 2 if protocol == "cooperative" and revoked else 1
    cost: dict[str, Any] = {
        "protocol": protocol,
        "rebalances": rebalances,
        "partitions_revoked": len(revoked),
        "partitions_paused": len(paused),
        "lag_paused": sum(lag.get(tp, 0) for tp in paused),
        "partitions_newly_assigned": len(unowned),
    }
    if name == "cooperative-sticky":
        cost["withheld_in_first_rebalance"] = sum(len(v) for v in final.values()) - sum(
            len(v) for v in first.values()
        )
    return {
        "protocol": protocol,
        "assignment": {m: [list(tp) for tp in sorted(final.get(m, []))] for m in member_ids},
        "partitions_per_member": spread_stats(per_member_count),
        "lag_per_member": spread_stats(per_member_lag),
        "moves": {"count": len(moves), "partitions": moves},
        "members_losing_partitions": dict(sorted(losing.items())),
        "rebalance_cost": cost,
    }


def cause_kind(cause: str) -> str | None:
    """'poll' for max.poll.interval.ms expiries, 'session' for session.timeout.ms expiries."""
    c = cause.lower().replace("-", "_").replace(" ", "_")
    if "poll" in c:
        return "poll"
    if "session" in c or "heartbeat" in c:
        return "session"
    return None


def timeout_report(
    rebalances: list[RecordedRebalance], before: Timeouts, after: Timeouts, changed: bool
) -> dict[str, Any]:
    """Which recorded expiries a new timeout would have prevented: a session expiry after a heartbeat
    gap of G ms does not happen with session.timeout.ms > G; a poll expiry after a poll interval of
    G ms does not happen with max.poll.interval.ms > G. Counted only where the timeout changed for
    that member, so a guessed default cannot 'avoid' what really happened."""
    out: dict[str, Any] = {"changed": changed, "recorded_rebalances": len(rebalances)}
    avoided_generations: list[int | None] = []
    for kind, label in (("session", "session_timeout"), ("poll", "poll_timeout")):
        recorded = [r for r in rebalances if cause_kind(r.cause) == kind]
        known = [r for r in recorded if r.gap_ms is not None]
        if kind == "session":
            limit_before, limit_after = before.session_for, after.session_for
        else:
            limit_before, limit_after = before.max_poll_for, after.max_poll_for
        # Only a timeout that changed for that member can un-happen a recorded expiry.
        avoided = [
            r
            for r in known
            if limit_after(r.member_id) != limit_before(r.member_id) and limit_after(r.member_id) > r.gap_ms  # type: ignore[operator]
        ]
        avoided_generations += [r.generation for r in avoided]
        out[label] = {
            "recorded": len(recorded),
            "gap_unknown": len(recorded) - len(known),
            "avoided": len(avoided),
            "timeout_ms_before": limit_before(None),
            "timeout_ms_after": limit_after(None),
            "max_gap_ms": max((r.gap_ms for r in known), default=None),
        }
    out["avoided_total"] = len(avoided_generations)
    out["avoided_generations"] = avoided_generations
    return out
