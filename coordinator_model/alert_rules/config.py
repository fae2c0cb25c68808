"""Alert rule configuration: built-in defaults, a YAML mapping on top, per-group overrides.

Pure: takes the already-loaded mapping (collectors/alerts/config.py reads the file). Unknown rules or
parameters are refused with a message naming them, so a typo never silently disables an alert.

Group patterns (in `groups.allow`, `groups.deny`, a rule's `allow`/`deny`, an override's `group`) are
exact group names, or regular expressions when written `re:<pattern>` (matched with re.search).

A `clusters:` section layers rules, groups and overrides per Kafka cluster on top of the rest, which
applies to every cluster: `config.for_cluster(name)` is the resolved configuration of one cluster, of
the same shape, so the evaluator and its summaries run unchanged on it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from coordinator_model.alert_rules.alertmanager_spec import validate_spec
from coordinator_model.errors import AlertConfigError

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
    "streams_not_ready": {
        "enabled": True,
        "severity": "critical",
        "for_s": 60,  # a streams group (KIP-1071) NotReady this long: its application runs nothing
    },
    "member_not_converging": {
        "enabled": True,
        "severity": "warning",
        # a KIP-848 or streams member whose epoch stays behind the group's target assignment this
        # long: it has not revoked what it must give up (its poll loop is stuck, or it is slow to
        # commit and revoke); the coordinator fences it after its rebalance timeout (300 s default)
        "for_s": 60,
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
    # cluster name -> that cluster's resolved configuration (this one with its `clusters:` entry on
    # top); a cluster without an entry uses this one as it is.
    clusters: dict[str, AlertConfig] = field(default_factory=dict)
    _cache: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict, repr=False)

    def for_cluster(self, name: str) -> AlertConfig:
        """The configuration that applies to the groups of cluster `name`."""
        return self.clusters.get(name, self)

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


CLUSTER_KEYS = ("rules", "groups", "overrides")
# Cluster names as collectors/config.py allows them (this package stays free of the collectors).
_CLUSTER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")


def _apply(cfg: AlertConfig, data: dict[str, Any], at: str) -> None:
    """Layer one mapping's `rules`, `groups` and `overrides` onto cfg. `at` prefixes the names in
    error messages (`clusters.prod.` inside a cluster's entry)."""
    rules = data.get("rules") or {}
    if not isinstance(rules, dict):
        raise AlertConfigError(f"alerts.{at}rules must be a mapping of rule name to parameters")
    for name, raw in rules.items():
        # On top of what applies already (the defaults, or for a cluster the top-level rules), so a
        # cluster's `lag: {min_seconds: 10}` changes that threshold and keeps the others.
        cfg.rules[name] = {
            **cfg.rules.get(name, DEFAULT_RULES.get(name, {})),
            **_rule_params(name, raw, f"{at}rules"),
        }
        if isinstance(raw, dict):
            if raw.get("allow") is not None:
                cfg.rule_allow[name] = _patterns(raw.get("allow"), f"{at}rules.{name}.allow")
            if raw.get("deny") is not None:
                cfg.rule_deny[name] = _patterns(raw.get("deny"), f"{at}rules.{name}.deny")
    groups = data.get("groups") or {}
    if not isinstance(groups, dict):
        raise AlertConfigError(f"alerts.{at}groups must be a mapping with allow and/or deny")
    unknown = set(groups) - {"allow", "deny"}
    if unknown:
        raise AlertConfigError(f"alerts.{at}groups: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    # Given lists replace the ones in force (a cluster can lift a top-level deny); absent ones stay.
    if "allow" in groups:
        cfg.allow = _patterns(groups.get("allow"), f"{at}groups.allow")
    if "deny" in groups:
        cfg.deny = _patterns(groups.get("deny"), f"{at}groups.deny")
    overrides = data.get("overrides") or []
    if not isinstance(overrides, list):
        raise AlertConfigError(f"alerts.{at}overrides must be a list")
    for i, ov in enumerate(overrides):
        where = f"{at}overrides[{i}]"
        if not isinstance(ov, dict) or "group" not in ov:
            raise AlertConfigError(f"{where} must be a mapping with 'group' and 'rules'")
        ov_rules = ov.get("rules") or {}
        if not isinstance(ov_rules, dict):
            raise AlertConfigError(f"{where}.rules must be a mapping")
        # Appended: a cluster's overrides come after the top-level ones, and later ones win.
        cfg.overrides.append(
            Override(
                _patterns(ov["group"], f"{where}.group"),
                {name: _rule_params(name, raw, f"{where}.rules") for name, raw in ov_rules.items()},
            )
        )


def _cluster_config(base: AlertConfig, name: Any, entry: Any) -> AlertConfig:
    at = f"clusters.{name}."
    if not isinstance(name, str) or not _CLUSTER_NAME.fullmatch(name):
        # An unknown name is fine (its collector may start later), a name no cluster can have is not.
        raise AlertConfigError(
            f"alerts.clusters: {name!r} is not a cluster name (1-63 lower-case letters, digits, "
            "'_', '.' or '-', starting with a letter or digit)"
        )
    if entry is None:
        entry = {}
    if not isinstance(entry, dict):
        raise AlertConfigError(f"alerts.{at[:-1]} must be a mapping with rules, groups and/or overrides")
    unknown = set(entry) - set(CLUSTER_KEYS)
    if unknown:
        extra = ""
        if unknown & {"notifiers", "notify"}:
            extra = " (notifiers are top-level; a notifier's `clusters: [...]` limits it to some clusters)"
        raise AlertConfigError(
            f"alerts.{at[:-1]}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
            f"known: {', '.join(CLUSTER_KEYS)}{extra}"
        )
    cfg = AlertConfig(
        rules=copy.deepcopy(base.rules),
        allow=list(base.allow),
        deny=list(base.deny),
        rule_allow=dict(base.rule_allow),
        rule_deny=dict(base.rule_deny),
        overrides=list(base.overrides),
        notifiers=base.notifiers,
        notify=base.notify,
    )
    _apply(cfg, entry, at)
    return cfg


def parse_alert_config(data: dict[str, Any] | None) -> AlertConfig:
    """Build the configuration from a mapping (the YAML file's `alerts:` section, or the whole file).

    Shape (every key optional):
        rules:     {rule: {param: value, allow: [...], deny: [...]} or false}
        groups:    {allow: [...], deny: [...]}
        overrides: [{group: name-or-re:pattern (or a list), rules: {rule: {...}}}]
        notifiers: [{name, type: webhook|slack|email, clusters: [...], ...}]
        notify:    {retries, backoff_s, resolved}
        clusters:  {cluster name: {rules, groups, overrides}}  # on top of the above, for that cluster
    """
    cfg = AlertConfig()
    if data is None:
        return cfg
    if not isinstance(data, dict):
        raise AlertConfigError("the alerts configuration must be a mapping")
    if "alerts" in data and isinstance(data["alerts"], dict):
        data = data["alerts"]
    known_top = {"rules", "groups", "overrides", "notifiers", "notify", "clusters"}
    unknown = set(data) - known_top
    if unknown:
        raise AlertConfigError(f"alerts: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    _apply(cfg, data, "")
    notifiers = data.get("notifiers") or []
    if not isinstance(notifiers, list) or not all(isinstance(n, dict) for n in notifiers):
        raise AlertConfigError("alerts.notifiers must be a list of mappings")
    for i, n in enumerate(notifiers):
        if n.get("type") not in ("webhook", "slack", "email", "alertmanager"):
            raise AlertConfigError(f"notifiers[{i}].type must be webhook, slack, email or alertmanager")
        if n["type"] == "alertmanager":
            validate_spec(n, f"notifiers[{i}]")
        if n["type"] in ("webhook", "slack") and not n.get("url"):
            raise AlertConfigError(f"notifiers[{i}] ({n['type']}) needs a url")
        if n["type"] == "email" and (not n.get("to") or not n.get("host")):
            raise AlertConfigError(f"notifiers[{i}] (email) needs host and to")
        only = n.get("clusters")
        if only is not None and (
            not isinstance(only, list)
            or not all(isinstance(c, str) and _CLUSTER_NAME.fullmatch(c) for c in only)
        ):
            raise AlertConfigError(f"notifiers[{i}].clusters must be a list of cluster names")
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
    clusters = data.get("clusters") or {}
    if not isinstance(clusters, dict):
        raise AlertConfigError(
            "alerts.clusters must be a mapping of cluster name to rules, groups, overrides"
        )
    # After the top level is complete: each cluster's configuration starts from all of it.
    cfg.clusters = {name: _cluster_config(cfg, name, entry) for name, entry in clusters.items()}
    return cfg
