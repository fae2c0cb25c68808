"""An `Evaluator` judges one Kafka cluster's groups (the layout under one prefix). `ClusterEvaluator`
runs a cycle over every cluster (the registry's, re-read each cycle, and the configured ones), each
with its own Evaluator, its own alerts and its own rules (`AlertConfig.for_cluster`); a cluster whose
data cannot be read or judged is reported and skipped, and never stops the others.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from collectors.alerts.clusters import cluster_names
from collectors.alerts.cycle_results import FleetResult, wall_clock_ms
from collectors.alerts.evaluate import Evaluator
from collectors.storage.clusters import BASE_PREFIX, cluster_prefix
from coordinator_model.alert_rules import AlertConfig

log = logging.getLogger(__name__)


class ClusterEvaluator:
    """Evaluation cycles over every Kafka cluster in one Redis.

    The clusters are those of the registry (each collector registers its cluster when it starts)
    and the configured ones, read again every cycle, so a cluster whose collector starts after the
    worker is judged from its first cycle on. Each cluster keeps its own Evaluator (its caches and
    its resolved rules) and its own alerts, lock and bookkeeping under its prefix."""

    def __init__(
        self,
        client: Any,
        config: AlertConfig,
        configured: Iterable[str] = (),
        base: str = BASE_PREFIX,
        only: str | None = None,
        **evaluator_kw: Any,
    ) -> None:
        self.r = client
        self.config = config
        self.configured = list(configured)
        self.base = base
        self.only = only  # one cluster (`alerts evaluate --cluster`), else all
        self.evaluator_kw = evaluator_kw
        self._evaluators: dict[str, Evaluator] = {}

    def cluster_names(self) -> list[str]:
        if self.only is not None:
            return [self.only]
        return cluster_names(self.r, self.configured, self.base)

    def evaluator(self, name: str) -> Evaluator:
        ev = self._evaluators.get(name)
        if ev is None:
            ev = Evaluator(
                self.r,
                self.config.for_cluster(name),
                prefix=cluster_prefix(name, self.base),
                cluster=name,
                **self.evaluator_kw,
            )
            self._evaluators[name] = ev
        return ev

    def run_cycle(
        self,
        now_ms: int | None = None,
        at_ms: int | None = None,
        full: bool = False,
        lock_ttl_ms: int = 60_000,
    ) -> FleetResult:
        """One cycle per cluster (see Evaluator.run_cycle), one after the other. Without `now_ms`
        each cluster's cycle takes the clock when it starts, as a single cluster's does."""
        out = FleetResult(
            now_ms=at_ms if at_ms is not None else (now_ms if now_ms is not None else wall_clock_ms())
        )
        for name in self.cluster_names():  # the registry: a Redis it cannot read fails the cycle
            try:
                out.cycles[name] = self.evaluator(name).run_cycle(
                    now_ms=now_ms, at_ms=at_ms, full=full, lock_ttl_ms=lock_ttl_ms
                )
            except Exception as e:  # one cluster's broken data must not stop the others' evaluation
                log.error("cluster %s: evaluation cycle failed; the other clusters go on", name, exc_info=e)
                out.errors[name] = f"{type(e).__name__}: {e}"
                # Its evaluator may hold half-read state; the next cycle starts it afresh.
                self._evaluators.pop(name, None)
        return out
