"""Alert rule configuration: built-in defaults, a YAML mapping on top, per-group overrides.

Pure: takes the already-loaded mapping (collectors/alerts/config.py reads the file). Unknown rules or
parameters are refused with a message naming them, so a typo never silently disables an alert.

Group patterns (in `groups.allow`, `groups.deny`, a rule's `allow`/`deny`, an override's `group`) are
exact group names, or regular expressions when written `re:<pattern>` (matched with re.search).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

# Every rule and its parameters with the defaults that apply out of the box. Times are seconds.
DEFAULT_RULES: dict[str, dict[str, Any]] = {
    "rebalance_storm": {
        "enabled": True,
        "severity": "critical",
        "count": 5,  # at least this many unexplained rebalances ...
        "window_s": 600,  # ... within this window
        # A member that stays at least settle_s explains its own join (a scale-out, a restart), and a
        # member that had been in the group that long explains its own leave, once per client in the
        # window: deploys and restarts are not storms, a member joining and leaving within seconds is.
        "settle_s": 10,
        "ignore_causes": ["group_created", "leader_rejoin"],
    },
    "rebalance_stuck": {
        "enabled": True,
        "severity": "critical",
        "after_s": 300,  # not Stable for longer than this (Kafka's default rebalance timeout is 300 s)
    },
    "member_flapping": {
        "enabled": True,
        "severity": "warning",
        "joins": 3,  # the same client (client.id or group.instance.id) joining this many times ...
        "window_s": 600,  # ... within this window, leaving in between
    },
    "member_lost": {
        "enabled": True,
        "severity": "warning",
        "causes": ["session_timeout", "poll_timeout"],
        "window_s": 600,  # firing while such a rebalance happened within this window
    },
    "group_empty": {
        "enabled": True,
        "severity": "warning",
        "states": ["Empty", "Dead"],
        "for_s": 60,  # a restart brings members back within this; only then does it alert
        # An Empty group with nothing left to read finished its work (a batch job, a consumer
        # stopped after reading everything): it alerts only while at least this many messages wait
        # for it (partitions with a lag of at most 1, a transaction marker, do not count).
        # 0 alerts on every group that became Empty.
        "min_lag": 1,
        "resolve_after_s": None,  # seconds after which a group left Empty is taken as retired
    },
    "lag": {
        "enabled": True,
        "severity": "warning",
        "critical_statuses": ["ERR", "STOP", "STALL"],
        "statuses": ["WARN", "ERR", "STOP", "STALL"],
        # Both thresholds must hold ("all") or either ("any"); None disables one.
        "min_offsets": 10,
        "min_seconds": 60,
        "match": "all",
        # A committed offset one short of the log end is a transaction marker (or a control record):
        # there is nothing left to consume, so lag <= this never alerts, whatever the seconds say.
        "ignore_lag_at_most": 1,
    },
    "lag_retention": {
        "enabled": True,
        "severity": "critical",
        "fraction": 0.8,  # lag in seconds above this fraction of the topic's retention.ms
        "default_retention_ms": 7 * 24 * 3600 * 1000,  # Kafka's default log.retention.hours=168
        "topics": {},  # topic -> retention.ms, for topics whose retention the data does not carry
        "ignore_lag_at_most": 1,
    },
}

SEVERITIES = ("info", "warning", "critical")


class AlertConfigError(ValueError):
    """The alert configuration cannot be used; the message names the setting."""


class GroupPattern:
    """An exact group name, or `re:<regex>`."""

    __slots__ = ("exact", "regex", "text")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text:
            raise AlertConfigError(f"group pattern must be a non-empty string, got {text!r}")
        self.text = text
        self.exact: str | None = None
        self.regex: re.Pattern[str] | None = None
        if text.startswith("re:"):
            try:
                self.regex = re.compile(text[3:])
            except re.error as e:
                raise AlertConfigError(f"bad regular expression {text[3:]!r}: {e}") from e
        else:
            self.exact = text

    def matches(self, group: str) -> bool:
        if self.exact is not None:
            return group == self.exact
        assert self.regex is not None
        return self.regex.search(group) is not None

    def __repr__(self) -> str:
        return f"GroupPattern({self.text!r})"


def _patterns(value: Any, where: str) -> list[GroupPattern]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise AlertConfigError(f"{where} must be a list of group names or re:patterns")
    return [GroupPattern(v) for v in value]


@dataclass(frozen=True)
class Override:
    patterns: list[GroupPattern]
    rules: dict[str, dict[str, Any]]


@dataclass
class AlertConfig:
    """Resolved configuration: call `rules_for(group)` for the parameters that apply to one group."""

    rules: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(DEFAULT_RULES))
    allow: list[GroupPattern] = field(default_factory=list)
    deny: list[GroupPattern] = field(default_factory=list)
    rule_allow: dict[str, list[GroupPattern]] = field(default_factory=dict)
    rule_deny: dict[str, list[GroupPattern]] = field(default_factory=dict)
    overrides: list[Override] = field(default_factory=list)
    notifiers: list[dict[str, Any]] = field(default_factory=list)
    notify: dict[str, Any] = field(default_factory=dict)
    _cache: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict, repr=False)

    def group_enabled(self, group: str) -> bool:
        if self.allow and not any(p.matches(group) for p in self.allow):
            return False
        return not any(p.matches(group) for p in self.deny)

    def rules_for(self, group: str) -> dict[str, dict[str, Any]]:
        """Rule name -> parameters for this group; disabled rules are left out. Cached per group:
        50,000 groups are evaluated every few seconds, the configuration changes only on restart."""
        cached = self._cache.get(group)
        if cached is not None:
            return cached
        result: dict[str, dict[str, Any]] = {}
        if self.group_enabled(group):
            for name, params in self.rules.items():
                merged = params
                for ov in self.overrides:
                    if name in ov.rules and any(p.matches(group) for p in ov.patterns):
                        merged = {**merged, **ov.rules[name]}
                if not merged.get("enabled", True):
                    continue
                allow = self.rule_allow.get(name)
                if allow and not any(p.matches(group) for p in allow):
                    continue
                if any(p.matches(group) for p in self.rule_deny.get(name, [])):
                    continue
                result[name] = merged
        if len(self._cache) > 200_000:  # bound memory on fleets whose group names churn
            self._cache.clear()
        self._cache[group] = result
        return result

    def max_window_s(self) -> int:
        """The longest look-back any rule uses: history older than this never changes a finding."""
        spans = [0]
        for params in self.rules.values():
            for k in ("window_s", "after_s", "for_s"):
                v = params.get(k)
                if isinstance(v, int | float):
                    spans.append(int(v))
        for ov in self.overrides:
            for params in ov.rules.values():
                for k in ("window_s", "after_s", "for_s"):
                    v = params.get(k)
                    if isinstance(v, int | float):
                        spans.append(int(v))
        return max(spans)


def _rule_params(name: str, raw: Any, where: str) -> dict[str, Any]:
    if name not in DEFAULT_RULES:
        raise AlertConfigError(f"{where}: unknown rule {name!r} (known: {', '.join(DEFAULT_RULES)})")
    if raw is None:
        return {}
    if isinstance(raw, bool):
        return {"enabled": raw}
    if not isinstance(raw, dict):
        raise AlertConfigError(f"{where}.{name} must be a mapping of parameters (or true/false)")
    params = {}
    for k, v in raw.items():
        if k in ("allow", "deny"):
            continue
        if k not in DEFAULT_RULES[name]:
            raise AlertConfigError(
                f"{where}.{name}: unknown parameter {k!r} (known: {', '.join(DEFAULT_RULES[name])})"
            )
        default = DEFAULT_RULES[name][k]
        if isinstance(default, bool) and not isinstance(v, bool):
            raise AlertConfigError(f"{where}.{name}.{k} must be true or false")
        if isinstance(default, int | float) and not isinstance(default, bool):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise AlertConfigError(f"{where}.{name}.{k} must be a number")
            if v < 0:
                raise AlertConfigError(f"{where}.{name}.{k} must not be negative")
        if k == "severity" and v not in SEVERITIES:
            raise AlertConfigError(f"{where}.{name}.severity must be one of {', '.join(SEVERITIES)}")
        if k == "match" and v not in ("all", "any"):
            raise AlertConfigError(f"{where}.{name}.match must be 'all' or 'any'")
        params[k] = v
    return params


def parse_alert_config(data: dict[str, Any] | None) -> AlertConfig:
    """Build the configuration from a mapping (the YAML file's `alerts:` section, or the whole file).

    Shape (every key optional):
        rules:     {rule: {param: value, allow: [...], deny: [...]} or false}
        groups:    {allow: [...], deny: [...]}
        overrides: [{group: name-or-re:pattern (or a list), rules: {rule: {...}}}]
        notifiers: [{name, type: webhook|slack|email, ...}]
        notify:    {retries, backoff_s, resolved}
    """
    cfg = AlertConfig()
    if data is None:
        return cfg
    if not isinstance(data, dict):
        raise AlertConfigError("the alerts configuration must be a mapping")
    if "alerts" in data and isinstance(data["alerts"], dict):
        data = data["alerts"]
    known_top = {"rules", "groups", "overrides", "notifiers", "notify"}
    unknown = set(data) - known_top
    if unknown:
        raise AlertConfigError(f"alerts: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    rules = data.get("rules") or {}
    if not isinstance(rules, dict):
        raise AlertConfigError("alerts.rules must be a mapping of rule name to parameters")
    for name, raw in rules.items():
        cfg.rules[name] = {**DEFAULT_RULES.get(name, {}), **_rule_params(name, raw, "rules")}
        if isinstance(raw, dict):
            if raw.get("allow") is not None:
                cfg.rule_allow[name] = _patterns(raw.get("allow"), f"rules.{name}.allow")
            if raw.get("deny") is not None:
                cfg.rule_deny[name] = _patterns(raw.get("deny"), f"rules.{name}.deny")
    groups = data.get("groups") or {}
    if not isinstance(groups, dict):
        raise AlertConfigError("alerts.groups must be a mapping with allow and/or deny")
    cfg.allow = _patterns(groups.get("allow"), "groups.allow")
    cfg.deny = _patterns(groups.get("deny"), "groups.deny")
    overrides = data.get("overrides") or []
    if not isinstance(overrides, list):
        raise AlertConfigError("alerts.overrides must be a list")
    for i, ov in enumerate(overrides):
        where = f"overrides[{i}]"
        if not isinstance(ov, dict) or "group" not in ov:
            raise AlertConfigError(f"{where} must be a mapping with 'group' and 'rules'")
        ov_rules = ov.get("rules") or {}
        if not isinstance(ov_rules, dict):
            raise AlertConfigError(f"{where}.rules must be a mapping")
        cfg.overrides.append(
            Override(
                _patterns(ov["group"], f"{where}.group"),
                {name: _rule_params(name, raw, f"{where}.rules") for name, raw in ov_rules.items()},
            )
        )
    notifiers = data.get("notifiers") or []
    if not isinstance(notifiers, list) or not all(isinstance(n, dict) for n in notifiers):
        raise AlertConfigError("alerts.notifiers must be a list of mappings")
    for i, n in enumerate(notifiers):
        if n.get("type") not in ("webhook", "slack", "email"):
            raise AlertConfigError(f"notifiers[{i}].type must be webhook, slack or email")
        if n["type"] in ("webhook", "slack") and not n.get("url"):
            raise AlertConfigError(f"notifiers[{i}] ({n['type']}) needs a url")
        if n["type"] == "email" and (not n.get("to") or not n.get("host")):
            raise AlertConfigError(f"notifiers[{i}] (email) needs host and to")
    cfg.notifiers = [dict(n, name=n.get("name") or f"{n['type']}-{i}") for i, n in enumerate(notifiers)]
    notify = data.get("notify") or {}
    if not isinstance(notify, dict):
        raise AlertConfigError("alerts.notify must be a mapping")
    defaults = {"retries": 5, "backoff_s": 1.0, "resolved": True, "timeout_s": 5.0, "cli_wait_s": 60.0}
    unknown_notify = set(notify) - set(defaults)
    if unknown_notify:
        raise AlertConfigError(f"alerts.notify: unknown key(s) {', '.join(sorted(map(str, unknown_notify)))}")
    for k, v in notify.items():
        if k != "resolved" and (isinstance(v, bool) or not isinstance(v, int | float) or v < 0):
            raise AlertConfigError(f"alerts.notify.{k} must be a non-negative number")
    cfg.notify = {**defaults, **notify}
    return cfg
