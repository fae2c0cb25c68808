"""The alert rules: pure functions of (group document, now_ms, parameters) -> findings with evidence.

Each rule looks at the document as of now_ms: generations and timeline spans that start after now_ms
are ignored, so a document rebuilt later can still be judged "as of" an earlier moment. A rule also
says when its answer may change with no new data (`recheck_at`): windows slide and durations grow,
so the evaluator re-runs a quiet group only then instead of every cycle.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from coordinator_model.alert_rules.config import AlertConfig
from coordinator_model.alert_rules.docview import (
    GONE_STATES,
    REBALANCING_STATES,
    Generation,
    GroupView,
    document_of,
    state_at,
    view_of,
)
from coordinator_model.document.types import GroupDocument, PartitionLag

# A rule reads a GroupView; a document (or its JSON form, read with GroupDocument.from_json) is
# wrapped in one.
Doc = GroupDocument | Mapping[str, Any] | GroupView


def _utc(ms: int) -> str:
    """A moment as people read it in a summary (an alert's summary goes to Slack, e-mail and
    Alertmanager as it is): UTC, to the second."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True)
class Finding:
    """A rule that holds for a group at now_ms."""

    group: str
    rule: str
    severity: str
    summary: str
    since: int  # when the condition started to hold (threshold crossed), epoch ms
    evidence: dict[str, Any]


@dataclass
class RuleResult:
    finding: Finding | None = None
    recheck_at: int | None = None  # earliest moment the result may change with no new data


@dataclass
class Evaluation:
    group: str
    now_ms: int
    findings: list[Finding] = field(default_factory=list)
    recheck_at: int | None = None


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _gens_until(v: GroupView, now_ms: int) -> list[Generation]:
    return [g for g in v.generations if g.start <= now_ms]


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
                recheck = _min(recheck, g.start + settle_ms)
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
    gens = _gens_until(v, now_ms)
    # The rebalance that empties the group is a shutdown, not a storm.
    relevant = [g for g in gens if g.cause not in ignore and g.member_count != 0 and not g.empty]
    counted, recheck = _unexplained(gens, relevant, window_start, now_ms, int(p["settle_s"] * 1000))
    if counted:
        recheck = _min(recheck, counted[0].start + window + 1)
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
    for g in _gens_until(v, now_ms):
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
    lost = [g for g in _gens_until(v, now_ms) if g.cause in causes and g.start > now_ms - window]
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

# The kinds of group whose members reconcile towards a target assignment epoch by epoch (KIP-848
# consumer groups, KIP-1071 streams groups). A share group's members take their partitions at once.
CONVERGING_TYPES = frozenset({"consumer", "streams"})


def members_behind(doc: GroupDocument, now_ms: int) -> list[tuple[str, int, int]]:
    """The members whose epoch is behind the group's target assignment epoch as of `now_ms`, each
    as (member id, its epoch, since when it has been behind: the start of the first epoch past its
    own). A member whose next epoch's start the document no longer holds is left out (it cannot be
    timed). Both the rule and the alert summaries (collectors/storage/summaries.py) read this."""
    target = doc.assignment_epoch
    if doc.type not in CONVERGING_TYPES or target is None:
        return []
    starts = sorted(
        (g.generation, g.start)
        for g in doc.generations
        if g.generation is not None and g.start is not None and g.start <= now_ms
    )
    out = []
    for m in doc.members:
        epoch = m.member_epoch
        if epoch is None or epoch >= target:
            continue
        since = next((start for n, start in starts if n > epoch), None)
        if since is not None:
            out.append((m.member_id, epoch, since))
    return out


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
        summary=f"group {state} since {_utc(begin)} (was {spans[j].state})",
        since=begin + for_ms,
        evidence={
            "state": state,
            "became_at": begin,
            "previous_state": spans[j].state,
            "lag_waiting": waiting,
        },
    )
    return RuleResult(finding, recheck)


# --- lag -------------------------------------------------------------------------------------


def _lag_breaches(row: PartitionLag, p: dict[str, Any]) -> bool:
    if row.lag is not None and row.lag <= p["ignore_lag_at_most"]:
        return False
    checks = []
    if p.get("min_offsets") is not None:
        checks.append(row.lag is not None and row.lag >= p["min_offsets"])
    if p.get("min_seconds") is not None:
        checks.append(row.lag_seconds is not None and row.lag_seconds >= p["min_seconds"])
    if not checks:
        return row.lag is not None and row.lag > 0
    return all(checks) if p["match"] == "all" else any(checks)


def lag(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    v = view_of(doc)
    statuses = {s.upper() for s in p["statuses"]}
    rows = v.lags
    # Without a Burrow-style status at all (lag taken from a lag history point), thresholds alone
    # decide.
    have_status = any(r.status for r in rows)
    hits = [r for r in rows if (not have_status or r.status in statuses) and _lag_breaches(r, p)]
    if not hits:
        return RuleResult()
    critical = {s.upper() for s in p["critical_statuses"]}
    severity = "critical" if any(r.status in critical for r in hits) else p["severity"]
    total = sum(r.lag or 0 for r in hits)
    worst = max((r.lag_seconds or 0.0) for r in hits)
    hits.sort(key=lambda r: (-(r.lag_seconds or 0.0), -(r.lag or 0)))
    finding = Finding(
        group=v.group,
        rule="lag",
        severity=severity,
        summary=f"{len(hits)} partition(s) lagging: {total} messages, up to {worst:.0f} s",
        since=now_ms,
        evidence={
            "partitions": [r.to_json() for r in hits[:100]],
            "partitions_total": len(hits),
            "lag": total,
            "max_lag_seconds": worst,
            "thresholds": {"min_offsets": p.get("min_offsets"), "min_seconds": p.get("min_seconds")},
        },
    )
    return RuleResult(finding)


def lag_retention(doc: Doc, now_ms: int, p: dict[str, Any]) -> RuleResult:
    """Lag in seconds past `fraction` of the topic's retention: the configured one (`topics`), else
    `default_retention_ms` (the document does not carry topics' retention.ms)."""
    v = view_of(doc)
    topics = p.get("topics") or {}
    hits = []
    for r in v.lags:
        if r.lag_seconds is None or (r.lag is not None and r.lag <= p["ignore_lag_at_most"]):
            continue
        retention = topics.get(r.topic) or p["default_retention_ms"]
        if retention > 0 and r.lag_seconds * 1000 >= p["fraction"] * retention:
            ev = r.to_json()
            ev["retention_ms"] = retention
            ev["fraction_of_retention"] = r.lag_seconds * 1000 / retention
            hits.append(ev)
    if not hits:
        return RuleResult()
    finding = Finding(
        group=v.group,
        rule="lag_retention",
        severity=p["severity"],
        summary=f"{len(hits)} partition(s) lagging close to the topic's retention",
        since=now_ms,
        evidence={"partitions": hits[:100], "fraction": p["fraction"]},
    )
    return RuleResult(finding)


RULES: dict[str, Callable[[Doc, int, dict[str, Any]], RuleResult]] = {
    "rebalance_storm": rebalance_storm,
    "rebalance_stuck": rebalance_stuck,
    "streams_not_ready": streams_not_ready,
    "member_not_converging": member_not_converging,
    "member_flapping": member_flapping,
    "member_lost": member_lost,
    "group_empty": group_empty,
    "lag": lag,
    "lag_retention": lag_retention,
}


def lookback_ms(rules: Mapping[str, Mapping[str, Any]]) -> int:
    """How far back from now the rules of one group look at generations, plus one ms: no rule looks
    at generations older than its window (plus the storm's settle time). Every reader cuts its view
    of a group at `now_ms - lookback_ms(rules)` with the group's enabled rules (`rules_for`), so a
    rule run alone (coordinator_model/statuses.py) sees what it sees in a full evaluation."""
    lookback_s = max(
        (float(p.get("window_s") or 0) + float(p.get("settle_s") or 0) for p in rules.values()), default=0.0
    )
    return int(lookback_s * 1000) + 1


def evaluate_group(
    doc: GroupDocument | Mapping[str, Any],
    now_ms: int,
    config: AlertConfig,
    only: Collection[str] | None = None,
) -> Evaluation:
    """Every enabled rule over one group document (its JSON form is read with
    GroupDocument.from_json: DocumentError when it is not a document). `only`: run these rules
    alone (the view is cut as for all of them)."""
    d = document_of(doc)
    ev = Evaluation(group=d.group, now_ms=now_ms)
    rules = config.rules_for(d.group)
    if not rules:
        return ev
    view = GroupView(d, since=now_ms - lookback_ms(rules))
    for name, params in rules.items():
        if only is not None and name not in only:
            continue
        result = RULES[name](view, now_ms, params)
        if result.finding is not None:
            ev.findings.append(result.finding)
        ev.recheck_at = _min(ev.recheck_at, result.recheck_at)
    return ev
