"""Alert rules over the coordinator model's per-group documents (pure, no I/O)."""

from coordinator_model.alerting.config import (
    DEFAULT_RULES,
    AlertConfig,
    AlertConfigError,
    parse_alert_config,
)
from coordinator_model.alerting.rules import RULES, Evaluation, Finding, RuleResult, evaluate_group

__all__ = [
    "DEFAULT_RULES",
    "RULES",
    "AlertConfig",
    "AlertConfigError",
    "Evaluation",
    "Finding",
    "RuleResult",
    "evaluate_group",
    "parse_alert_config",
]
