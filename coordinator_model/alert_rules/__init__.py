"""Alert rules over the coordinator model's per-group documents: what fires, and why (pure, no I/O).
The service that runs them on a schedule, keeps alerts in Redis and notifies is collectors/alerts/."""

from coordinator_model.alert_rules.config import (
    DEFAULT_RULES,
    AlertConfig,
    AlertConfigError,
    parse_alert_config,
)
from coordinator_model.alert_rules.findings import Evaluation, Finding, RuleResult
from coordinator_model.alert_rules.rules import RULES, evaluate_group, lookback_ms

__all__ = [
    "DEFAULT_RULES",
    "RULES",
    "AlertConfig",
    "AlertConfigError",
    "Evaluation",
    "Finding",
    "RuleResult",
    "evaluate_group",
    "lookback_ms",
    "parse_alert_config",
]
