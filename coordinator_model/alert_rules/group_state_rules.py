"""The rules about a group's state and its members' progress: a streams group that is NotReady,
members that do not reach their target assignment, a group that became Empty or Dead.
"""

from __future__ import annotations

from typing import Any

from coordinator_model.alert_rules.findings import Doc, Finding, RuleResult, utc_text
from coordinator_model.document.view import GONE_STATES, members_behind, state_at, view_of

# --- streams group not ready ------------------------------------------------------------------
# KIP-1071: a streams group whose topology the coordinator cannot configure (a source topic missing,
# an internal topic missing or of the wrong partition count) is NotReady: its members are there but
# get no tasks, so nothing of the application runs, and Kafka says so nowhere else.
NOT_READY = "NotReady"


def streams_not_ready(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    v = view_of(doc)
    state, idx = state_at(v, now_ms)
    if state != NOT_READY or idx < 0:
        return RuleResult()
    begin = v.timeline[idx].start
    if begin is None:
        return RuleResult()
    for_ms = int(p["for_s"] * 1000)
    if now_ms - begin < for_ms:
        return RuleResult(None, begin + for_ms)
    finding = Finding(
        group=v.group,
        rule="streams_not_ready",
        severity=p["severity"],
        summary=(
            f"streams group NotReady for {(now_ms - begin) / 1000:.0f} s: its topology cannot be "
            "configured (a source or internal topic is missing or has the wrong partition count)"
        ),
        since=begin + for_ms,
        evidence={"state": state, "not_ready_since": begin, "for_s": p["for_s"]},
    )
    return RuleResult(finding, None)


# --- member not converging ---------------------------------------------------------------------


def member_not_converging(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    v = view_of(doc)
    behind = members_behind(v.doc, now_ms)
    if not behind:
        return RuleResult()
    for_ms = int(p["for_s"] * 1000)
    late = [(mid, epoch, since) for mid, epoch, since in behind if now_ms - since >= for_ms]
    if not late:
        return RuleResult(None, min(since for _, _, since in behind) + for_ms)
    target = v.doc.assignment_epoch
    oldest = min(since for _, _, since in late)
    finding = Finding(
        group=v.group,
        rule="member_not_converging",
        severity=p["severity"],
        summary=(
            f"{len(late)} member(s) behind the target assignment (epoch {target}) for "
            f"{(now_ms - oldest) / 1000:.0f} s"
        ),
        since=oldest + for_ms,
        evidence={
            "assignment_epoch": target,
            "for_s": p["for_s"],
            "members": [{"member_id": mid, "member_epoch": e, "behind_since": s} for mid, e, s in late],
        },
    )
    # a member still within for_s may turn late later while the others stay: look again then
    pending = [since + for_ms for _, _, since in behind if now_ms - since < for_ms]
    return RuleResult(finding, min(pending) if pending else None)


# --- group became Empty or Dead ----------------------------------------------------------------


def group_empty(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    v = view_of(doc)
    states = set(p["states"])
    state, idx = state_at(v, now_ms)
    if state not in states or idx < 0:
        return RuleResult()
    spans = v.timeline
    # It must have BECOME Empty: a group that was active before. A standalone (assign()) group that
    # only commits offsets is Empty all its life and is not an alert.
    begin = spans[idx].start
    j = idx - 1
    while j >= 0 and spans[j].state in GONE_STATES:
        begin = spans[j].start
        j -= 1
    if j < 0 or begin is None:
        return RuleResult()
    for_ms = int(p["for_s"] * 1000)
    if now_ms - begin < for_ms:
        return RuleResult(None, begin + for_ms)
    waiting = sum(r.lag or 0 for r in v.lags if (r.lag or 0) > 1)
    if waiting < p["min_lag"]:
        return RuleResult()  # consumed to the end: nothing waits for a consumer
    resolve_after = p.get("resolve_after_s")
    if resolve_after is not None and now_ms - begin >= for_ms + int(resolve_after * 1000):
        return RuleResult()
    recheck = begin + for_ms + int(resolve_after * 1000) if resolve_after is not None else None
    finding = Finding(
        group=v.group,
        rule="group_empty",
        severity=p["severity"],
        summary=f"group {state} since {utc_text(begin)} (was {spans[j].state})",
        since=begin + for_ms,
        evidence={
            "state": state,
            "became_at": begin,
            "previous_state": spans[j].state,
            "lag_waiting": waiting,
        },
    )
    return RuleResult(finding, recheck)
