"""The rules about lag: a consumer behind by too many offsets or seconds (Burrow's evaluation), and
committed offsets about to fall out of the topic's retention.
"""

from __future__ import annotations

from typing import Any

from coordinator_model.alert_rules.findings import Doc, Finding, RuleResult
from coordinator_model.document.types import PartitionLag
from coordinator_model.document.view import view_of

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
