"""What an alert rule answers (a Finding, and when to look again: RuleResult), what a group's
evaluation collects, and the few helpers every rule uses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from coordinator_model.document.types import GroupDocument
from coordinator_model.document.view import Generation, GroupView

# A rule reads a GroupView; a document (or its JSON form, read with GroupDocument.from_json) is
# wrapped in one.
Doc = GroupDocument | Mapping[str, Any] | GroupView


def utc_text(ms: int) -> str:
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


def earliest(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def generations_until(v: GroupView, now_ms: int) -> list[Generation]:
    return [g for g in v.generations if g.start <= now_ms]
