"""What "in a rebalance storm", "flapping" and "lagging" mean: one definition for every reader.

Each status is one alert rule (coordinator_model/alert_rules/), run with the parameters the
alert configuration gives the group: the built-in defaults (`DEFAULT_RULES`), then the alerts file or
the `alerts:` section of the config file, a cluster's `clusters:` entry and the per-group overrides
(docs/alerts.md). A group is in a status at a moment exactly when that rule returns a finding for it
at that moment, which is when the alert evaluator raises (or keeps) that alert. The fleet page's
counts and lists, the group page, `groupscope groups` and `groupscope group`, the Prometheus metrics
and the alerts all ask here, so on the same data they cannot disagree.

- storm: `rebalance_storm`, at least `count` unexplained rebalances started within `window_s`
  (default 5 in 600 s; a scale-out, a scale-in, a rolling restart and group creation explain theirs).
- flapping: `member_flapping`, the same client joined `joins` times within `window_s`, leaving in
  between (default 3 in 600 s).
- lagging: `lag`, a partition whose Burrow status is one of `statuses` is at least `min_offsets`
  messages and `min_seconds` seconds behind (default WARN/ERR/STOP/STALL, 10 messages and 60 s).

A status whose rule is disabled for a group (everywhere, in its cluster, or for it by a group
pattern) is never held by that group. Pure: the readers that find the groups in a status over a
whole fleet in Redis are in collectors/alerts/fleet_statuses.py.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator_model.alert_rules import RULES, AlertConfig, Finding, evaluate_group
from coordinator_model.document.types import GroupDocument
from coordinator_model.document.view import GroupView

# status -> the alert rule that defines it
STATUS_RULES: dict[str, str] = {"storm": "rebalance_storm", "flapping": "member_flapping", "lagging": "lag"}
STATUSES: tuple[str, ...] = tuple(STATUS_RULES)
RULE_STATUS: dict[str, str] = {rule: status for status, rule in STATUS_RULES.items()}
# How a page or a line of text names a group in the status.
LABELS: dict[str, str] = {"storm": "in a rebalance storm", "flapping": "flapping", "lagging": "lagging"}


@dataclass(frozen=True)
class GroupStatuses:
    """The statuses one group is in at `now_ms`, each with the rule's finding (its evidence)."""

    group: str
    now_ms: int
    found: dict[str, Finding] = field(default_factory=dict)

    def has(self, status: str) -> bool:
        return status in self.found

    @property
    def names(self) -> list[str]:
        return [s for s in STATUSES if s in self.found]

    def to_json(self) -> dict[str, Any]:
        """status -> {"summary", "severity", "since"} or None, for every status."""
        return {
            s: (
                {"summary": f.summary, "severity": f.severity, "since": f.since}
                if (f := self.found.get(s)) is not None
                else None
            )
            for s in STATUSES
        }


def status_rules(statuses: Collection[str] = STATUSES) -> list[str]:
    """The rules behind `statuses` (ValueError for a name that is not a status)."""
    unknown = [s for s in statuses if s not in STATUS_RULES]
    if unknown:
        raise ValueError(f"unknown status(es) {', '.join(unknown)} (known: {', '.join(STATUSES)})")
    return [STATUS_RULES[s] for s in statuses]


def from_findings(findings: Collection[Finding]) -> dict[str, Finding]:
    """status -> finding, from an evaluation's findings (other rules' findings left out)."""
    return {RULE_STATUS[f.rule]: f for f in findings if f.rule in RULE_STATUS}


def judge(
    view: GroupView, now_ms: int, rules: Mapping[str, Mapping[str, Any]], statuses: Collection[str] = STATUSES
) -> dict[str, Finding]:
    """status -> finding for a view already cut at `now_ms - lookback_ms(rules)`, `rules` being the
    group's enabled rules (`AlertConfig.rules_for`): the readers that build their own view (the
    summaries' PackedView) call this; the others call `group_statuses`."""
    out: dict[str, Finding] = {}
    for status in statuses:
        rule = STATUS_RULES[status]
        params = rules.get(rule)
        if params is None:
            continue  # disabled for this group: never in that status
        found = RULES[rule](view, now_ms, dict(params)).finding
        if found is not None:
            out[status] = found
    return out


def group_statuses(
    doc: GroupDocument | Mapping[str, Any],
    now_ms: int,
    config: AlertConfig,
    statuses: Collection[str] = STATUSES,
) -> GroupStatuses:
    """The statuses of one group document at `now_ms` under `config` (a cluster's: `for_cluster`):
    the alert evaluation itself, with the status rules alone (DocumentError when `doc` is not a
    group document)."""
    ev = evaluate_group(doc, now_ms, config, only=status_rules(statuses))
    return GroupStatuses(ev.group, now_ms, from_findings(ev.findings))


def _secs(v: Any) -> str:
    return f"{float(v):g} s"


def definitions(config: AlertConfig, group: str = "") -> dict[str, str | None]:
    """status -> what it means under `config` for `group` (its overrides; "" for the base rules),
    in a few words, for the pages and the CLI to say what they count; None when its rule is
    disabled (no group is ever in that status)."""
    if group:
        rules = config.rules_for(group)
    else:
        rules = {k: v for k, v in config.rules.items() if v.get("enabled", True)}
    out: dict[str, str | None] = {}
    for status, rule in STATUS_RULES.items():
        p = rules.get(rule)
        if p is None:
            out[status] = None
        elif status == "storm":
            out[status] = f"at least {p['count']} unexplained rebalances within {_secs(p['window_s'])}"
        elif status == "flapping":
            out[status] = f"the same client joining {p['joins']} times within {_secs(p['window_s'])}"
        else:
            bounds = []
            if p.get("min_offsets") is not None:
                bounds.append(f"{p['min_offsets']} messages")
            if p.get("min_seconds") is not None:
                bounds.append(_secs(p["min_seconds"]))
            how = (" and " if p.get("match", "all") == "all" else " or ").join(bounds) or "anything"
            out[status] = f"a partition ({'/'.join(p['statuses'])}) at least {how} behind"
    return out
