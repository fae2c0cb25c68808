"""The alert rules by name (RULES) and their run over one group (`evaluate_group`). Each rule is a pure
function of (group document, now_ms, parameters) -> a finding with its evidence: rebalance_rules.py,
group_state_rules.py, lag_rules.py.

Each rule looks at the document as of now_ms: generations and timeline spans that start after now_ms
are ignored, so a document rebuilt later can still be judged "as of" an earlier moment. A rule also
says when its answer may change with no new data (`recheck_at`): windows slide and durations grow,
so the evaluator re-runs a quiet group only then instead of every cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from coordinator_model.alert_rules.config import AlertConfig
from coordinator_model.alert_rules.findings import Doc, Evaluation, RuleResult, earliest
from coordinator_model.alert_rules.group_state_rules import (
    group_empty,
    member_not_converging,
    streams_not_ready,
)
from coordinator_model.alert_rules.lag_rules import lag, lag_retention
from coordinator_model.alert_rules.rebalance_rules import (
    member_flapping,
    member_lost,
    rebalance_storm,
    rebalance_stuck,
)
from coordinator_model.document.types import GroupDocument
from coordinator_model.document.view import GroupView, document_of

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
        ev.recheck_at = earliest(ev.recheck_at, result.recheck_at)
    return ev
