"""Which Kafka clusters the alerts and the metrics look at: the registry's (each collector registers
its cluster when it starts) and the configured ones, read again at every cycle and every scrape."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from collectors.config import DEFAULT_CLUSTER
from collectors.storage.clusters import BASE_PREFIX, ClusterRegistry


def cluster_names(client: Any, configured: Iterable[str] = (), base: str = BASE_PREFIX) -> list[str]:
    """Every cluster with data in this Redis or configured, `default` first (at least `default`).
    A registry field that is no cluster name is left out (ClusterRegistry.clusters), so one bad
    field never hides the other clusters."""
    return ClusterRegistry(client, base).names(configured) or [DEFAULT_CLUSTER]
