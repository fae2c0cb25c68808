"""The /alerts page's one connection to the alerting component, kept in one place so the page does not
depend on how alerts are stored. The alerting component owns the keys; until its read API is
present the page says alerts are not configured."""

from __future__ import annotations

import importlib
from typing import Any


def read_alerts(client: Any, prefix: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """(active alerts, recent history, newest first), or None if no alert store is installed."""
    try:
        mod = importlib.import_module("collectors.alerts_store")
    except ImportError:
        return None
    store_cls = getattr(mod, "AlertsStore", None)
    if store_cls is None:
        return None
    store = store_cls(client, prefix=prefix)
    active = list(store.active())
    history = list(store.history(limit=200))
    return active, history
