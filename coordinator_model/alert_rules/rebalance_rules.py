"""The rules about rebalances: a storm of them, one that does not end, members that keep joining
and leaving, members lost to their session timeout or poll interval.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from coordinator_model.alert_rules.findings import Doc, Finding, RuleResult, earliest, generations_until
from coordinator_model.document.view import REBALANCING_STATES, Generation, state_at, view_of

# --- rebalance storm --------------------------------------------------------------------------


def _unexplained(
    history: list[Generation], gens: list[Generation], window_start: int, now_ms: int, settle_ms: int
) -> tuple[list[Generation], int | None]:
    """Generations in the window with a membership change no ordinary deploy explains.

    Per member key (client.id or group.instance.id), in the window: the first join, the first leave
    and one rejoin after that leave (a restart) are explained when the member stayed settle_ms (for a
    leave: had been in the group settle_ms). A scale-out, a scale-in and a rolling restart touch each
    client that often. Any further change by the same client, or a member that leaves within seconds
    of joining, is churn and counts."""
    joined_at: dict[str, int] = {}
    left_at: dict[str, int] = {}
    for g in history:  # every generation, ignored causes too: when did each member come and go
        for m in g.joined:
            joined_at.setdefault(m.member_id, g.start)
        for m in g.left:
            left_at.setdefault(m.member_id, g.start)
    joins_seen: dict[str, int] = defaultdict(int)
    seen_leave: set[str] = set()
    counted: list[Generation] = []
    recheck: int | None = None
    for g in gens:
        if g.start <= window_start:
            continue
        if not g.joined and not g.left:
            counted.append(g)  # no membership detail: a rebalance all the same
            continue
        churn = False
        for m in g.joined:
            end = left_at.get(m.member_id)
            stayed = (end if end is not None else now_ms) - g.start
            budget = 2 if m.key in seen_leave else 1  # first join, plus one rejoin after a leave
            if joins_seen[m.key] >= budget or (end is not None and stayed < settle_ms):
                churn = True
            elif end is None and stayed < settle_ms:
                churn = True  # too early to say: counts until it has stayed settle_ms
                recheck = earliest(recheck, g.start + settle_ms)
            joins_seen[m.key] += 1
        for m in g.left:
            began = joined_at.get(m.member_id)
            if m.key in seen_leave or (began is not None and g.start - began < settle_ms):
                churn = True
            seen_leave.add(m.key)
        if churn:
            counted.append(g)
    return counted, recheck


def rebalance_storm(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    v = view_of(doc)
    window = int(p["window_s"] * 1000)
    threshold = max(1, int(p["count"]))
    ignore = set(p.get("ignore_causes") or [])
    window_start = now_ms - window
    gens = generations_until(v, now_ms)
    # The rebalance that empties the group is a shutdown, not a storm.
    relevant = [g for g in gens if g.cause not in ignore and g.member_count != 0 and not g.empty]
    counted, recheck = _unexplained(gens, relevant, window_start, now_ms, int(p["settle_s"] * 1000))
    if counted:
        recheck = earliest(recheck, counted[0].start + window + 1)
    if len(counted) < threshold:
        # Time only drops rebalances out of the window (or explains them): it cannot start a storm.
        return RuleResult(None, None)
    since = counted[threshold - 1].start  # the moment the threshold-th rebalance began
    finding = Finding(
        group=v.group,
        rule="rebalance_storm",
        severity=p["severity"],
        summary=f"{len(counted)} rebalances in the last {p['window_s']:g} s (threshold {threshold})",
        since=since,
        evidence={
            "rebalances": len(counted),
            "threshold": threshold,
            "window_s": p["window_s"],
            "generations": [g.evidence() for g in counted],
        },
    )
    return RuleResult(finding, recheck)


# --- rebalance stuck --------------------------------------------------------------------------


def rebalance_stuck(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    v = view_of(doc)
    state, idx = state_at(v, now_ms)
    if state not in REBALANCING_STATES:
        return RuleResult()
    spans = v.timeline
    if idx < 0:
        return RuleResult()  # no timeline: the start of the rebalance is unknown
    # PreparingRebalance -> CompletingRebalance -> PreparingRebalance ... is one long rebalance.
    begin = spans[idx].start
    j = idx - 1
    while j >= 0 and spans[j].state in REBALANCING_STATES and spans[j].start is not None:
        begin = spans[j].start
        j -= 1
    assert begin is not None
    after = int(p["after_s"] * 1000)
    if now_ms - begin < after:
        return RuleResult(None, begin + after)
    finding = Finding(
        group=v.group,
        rule="rebalance_stuck",
        severity=p["severity"],
        summary=f"not Stable for {(now_ms - begin) / 1000:.0f} s (in {state})",
        since=begin + after,
        evidence={
            "state": state,
            "rebalancing_since": begin,
            "after_s": p["after_s"],
            "timeline": [
                {"state": s.state, "start": s.start, "end": s.end} for s in spans[max(0, j + 1) : idx + 1]
            ],
        },
    )
    return RuleResult(finding, None)


# --- member flapping --------------------------------------------------------------------------


def member_flapping(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    v = view_of(doc)
    window = int(p["window_s"] * 1000)
    need = max(2, int(p["joins"]))
    joins: dict[str, list[Generation]] = defaultdict(list)
    leaves: dict[str, list[Generation]] = defaultdict(list)
    oldest: int | None = None
    for g in generations_until(v, now_ms):
        if g.start <= now_ms - window:
            continue
        for m in g.joined:
            joins[m.key].append(g)
        for m in g.left:
            leaves[m.key].append(g)
        if g.joined or g.left:
            oldest = g.start if oldest is None else oldest
    flapping = {}
    since = None
    for key, js in joins.items():
        # Joining again means having left in between: count the joins that follow a leave.
        if len(js) >= need and len(leaves.get(key, ())) >= need - 1:
            flapping[key] = js
            t = js[need - 1].start
            since = t if since is None else min(since, t)
    recheck = oldest + window + 1 if oldest is not None else None
    if not flapping:
        return RuleResult(None, None)  # a sliding window only ever removes joins
    assert since is not None
    clients = {
        key.split(":", 1)[1]: {
            "joins": len(js),
            "leaves": len(leaves.get(key, ())),
            "generations": sorted(
                {g.generation for g in js + leaves.get(key, []) if g.generation is not None}
            ),
        }
        for key, js in flapping.items()
    }
    finding = Finding(
        group=v.group,
        rule="member_flapping",
        severity=p["severity"],
        summary=f"{', '.join(sorted(clients))} joined and left repeatedly in {p['window_s']:g} s",
        since=since,
        evidence={"clients": clients, "window_s": p["window_s"], "joins": need},
    )
    return RuleResult(finding, recheck)


# --- members lost to session timeout / poll interval -------------------------------------------


def member_lost(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    v = view_of(doc)
    window = int(p["window_s"] * 1000)
    causes = set(p["causes"])
    lost = [g for g in generations_until(v, now_ms) if g.cause in causes and g.start > now_ms - window]
    if not lost:
        return RuleResult()
    by_cause: dict[str, int] = defaultdict(int)
    for g in lost:
        by_cause[g.cause] += max(1, len(g.left))  # members lost (one rebalance may expire several)
    members = sorted({m.member_id for g in lost for m in g.left})
    words = {"session_timeout": "session timeout", "poll_timeout": "poll interval exceeded"}
    finding = Finding(
        group=v.group,
        rule="member_lost",
        severity=p["severity"],
        summary=", ".join(f"{n} lost to {words.get(c, c)}" for c, n in sorted(by_cause.items())),
        since=lost[0].start,
        evidence={
            "members": members,
            "causes": dict(by_cause),
            "window_s": p["window_s"],
            "generations": [g.evidence() for g in lost],
        },
    )
    return RuleResult(finding, lost[-1].start + window + 1)
