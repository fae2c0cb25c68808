"""What an evaluation cycle reports: its counts and the alerts that moved, per cluster and over all."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Transition:
    """An alert that started firing or was resolved in this cycle: what the notifiers send."""

    event: str  # "firing" | "resolved"
    alert: dict[str, Any]


@dataclass
class CycleResult:
    now_ms: int
    groups_total: int = 0
    evaluated: int = 0
    fired: int = 0
    resolved: int = 0
    updated: int = 0
    active: int = 0
    trimmed: int = 0  # resolved alerts dropped from the history (older than the retention)
    skipped_quiet: int = 0  # changed groups whose verdict could not change: document not read
    bad_documents: int = 0  # groups whose stored value is not a group document: not judged
    duration_s: float = 0.0
    cpu_s: float = 0.0  # this process's CPU time: the cost without other load on the machine
    skipped_locked: bool = False
    transitions: list[Transition] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "transitions"}
        d["transitions"] = len(self.transitions)
        return d


@dataclass
class FleetResult:
    """One cycle over every cluster: each cluster's result, and the clusters that failed."""

    now_ms: int
    cycles: dict[str, CycleResult] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # cluster -> why its cycle failed

    @property
    def transitions(self) -> list[Transition]:
        return [t for c in self.cycles.values() for t in c.transitions]

    @property
    def locked(self) -> list[str]:
        """Clusters whose cycle was skipped because another one held their lock."""
        return [name for name, c in self.cycles.items() if c.skipped_locked]

    def total(self, what: str) -> int:
        return sum(int(getattr(c, what)) for c in self.cycles.values())

    def summary(self) -> dict[str, Any]:
        totals = (
            "groups_total",
            "evaluated",
            "fired",
            "resolved",
            "updated",
            "active",
            "skipped_quiet",
            "bad_documents",
        )
        return {
            "now_ms": self.now_ms,
            **{k: self.total(k) for k in totals},
            "transitions": len(self.transitions),
            "clusters": {name: c.summary() for name, c in self.cycles.items()},
            "errors": dict(self.errors),
        }
