"""The /alerts page's one connection to the alerts component (collectors.alerts.store.AlertStore,
documented in docs/alerts.md), kept in one place so the page does not depend on how alerts are
stored. Without the component the page says alerts are not set up."""

from __future__ import annotations

import importlib
from typing import Any


def read_alerts(client: Any, prefix: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """(active alerts, recent history, both newest first), or None if no alert store is installed."""
    try:
        mod = importlib.import_module("collectors.alerts.store")
    except ImportError:
        return None
    store = mod.AlertStore(client, prefix=prefix)
    return list(store.active()), list(store.history(limit=200))
