"""The /alerts page's one connection to the alerts component (collectors.storage.alerts.AlertStore,
documented in docs/alerts.md), kept in one place so the page does not depend on how alerts are
stored. Each cluster's alerts are under its own prefix (collectors/storage/clusters.py): one
AlertStore per cluster. Where no evaluation cycle ever ran (no `groupscope worker`), the page says
alerts are not set up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collectors.storage.alerts import AlertStore


def read_alerts(client: Any, prefix: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(active alerts, recent history), both newest first."""
    store = AlertStore(client, prefix=prefix)
    return list(store.active()), list(store.history(limit=200))


def evaluated(client: Any, prefixes: Mapping[str, str]) -> bool:
    """Whether the alert evaluator ran a cycle for any of these clusters (name -> its key prefix)."""
    return any(AlertStore(client, prefix=prefix).last_cycle() is not None for prefix in prefixes.values())


HISTORY_SHOWN = 200  # the newest alerts of the history the page lists, over every cluster


def read_cluster_alerts(
    client: Any, prefixes: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """read_alerts of several clusters (name -> its key prefix), merged newest first, each alert
    with the `cluster` whose store holds it: derived from where it was read, not from a field of
    the alert, so alerts written before clusters existed (or by any writer) are placed right."""
    active: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    for cluster, prefix in prefixes.items():
        got = read_alerts(client, prefix)
        active += [{**a, "cluster": cluster} for a in got[0]]
        history += [{**a, "cluster": cluster} for a in got[1]]
    active.sort(key=_newest_first)
    history.sort(key=_newest_first)
    return active, history[:HISTORY_SHOWN]


def _newest_first(a: Mapping[str, Any]) -> tuple[float, str, str, str]:
    since = a.get("since")
    return (
        -float(since) if isinstance(since, int | float) else 0.0,
        str(a.get("cluster")),
        str(a.get("group")),
        str(a.get("rule")),
    )
