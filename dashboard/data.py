"""What the dashboard reads, and how it tells "no data" from "cannot reach Redis".

Every read goes through collectors.storage.redis_store.RedisStore (the pipeline's documented read API); the
dashboard never writes group data. A Redis error becomes :class:`Unavailable`, which pages turn into
the red banner; the next refresh simply tries again, so the banner clears by itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collectors.storage.redis_store import RedisStore
from collectors.storage.topics import TOPIC_SORT_KEYS, TopicRow, TopicView

# The grid's columns that the fleet index can sort by server-side (RedisStore.SORT_KEYS).
GRID_SORT = {
    "name": "name",
    "state": "state",
    "lag": "lag",
    "lag_seconds": "lag_seconds",
    "rebalances_1h": "rebalance_rate",
    "members": "members",
    "last_change": "last_change",
}


# The topics grid's columns are named as the topic index's sort keys.
TOPIC_GRID_SORT = {k: k for k in TOPIC_SORT_KEYS}


class Unavailable(RuntimeError):
    """Redis cannot be reached or answered with an error; the message is shown in the banner."""


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Health:
    reachable: bool
    error: str | None = None
    collector_ts: int | None = None
    collector_age_s: float | None = None
    event_ms: int | None = None
    sources: dict[str, Any] | None = None


class DashboardData:
    """One Redis connection pool per process (gunicorn forks after import; redis-py reconnects)."""

    def __init__(self, redis_url: str, prefix: str = "gs", timeout_s: float = 2.0) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        self.timeout_s = timeout_s
        self._store: RedisStore | None = None
        self._lock = threading.Lock()

    @property
    def store(self) -> RedisStore:
        with self._lock:
            if self._store is None:
                import redis

                # Short timeouts: an unreachable Redis must turn into a banner within a refresh, not
                # hang the page's callbacks.
                client = redis.Redis.from_url(
                    self.redis_url,
                    socket_timeout=self.timeout_s,
                    socket_connect_timeout=self.timeout_s,
                    health_check_interval=30,
                )
                self._store = RedisStore(client, prefix=self.prefix)
            return self._store

    def _call(self, fn: str, *args: Any, **kw: Any) -> Any:
        return self._call_on(None, fn, *args, **kw)

    def _call_on(self, target: Any, fn: str, *args: Any, **kw: Any) -> Any:
        """`target.fn(...)` (the store when None), Redis errors turned into Unavailable."""
        import redis

        try:
            return getattr(self.store if target is None else target, fn)(*args, **kw)
        except (redis.ConnectionError, redis.TimeoutError) as e:
            raise Unavailable(f"Redis at {_safe_url(self.redis_url)} is unreachable ({e})") from e
        except redis.RedisError as e:
            raise Unavailable(f"Redis error: {e}") from e

    # ---- reads -------------------------------------------------------------------------------------
    def health(self) -> Health:
        try:
            f = self._call("freshness")
        except Unavailable as e:
            return Health(reachable=False, error=str(e))
        c = f.get("collector") or {}
        age = f.get("collector_age_ms")
        return Health(
            reachable=True,
            collector_ts=c.get("ts"),
            collector_age_s=age / 1000 if age is not None else None,
            event_ms=c.get("event_ms"),
            sources=f.get("sources") or {},
        )

    def fleet_counts(self) -> dict[str, Any]:
        return self._call("fleet_counts")

    def list_groups(self, **kw: Any) -> tuple[int, list[dict[str, Any]]]:
        return self._call("list_groups", **kw)

    def group(self, name: str) -> dict[str, Any] | None:
        return self._call("get_group", name)

    def fleet_row(self, name: str) -> dict[str, Any] | None:
        return self._call("get_row", name)

    def timeline(self, name: str, since: int | None, until: int | None) -> list[dict[str, Any]]:
        return self._call("get_timeline", name, since, until)

    def generations(self, name: str, since: int | None, until: int | None) -> list[dict[str, Any]]:
        return self._call("get_generations", name, since, until)

    def lag_history(self, name: str, since: int | None, until: int | None) -> list[dict[str, Any]]:
        return self._call("get_lag_history", name, since, until)

    # ---- topics (collectors/storage/topics.py) ------------------------------------------------------
    def list_topics(self, **kw: Any) -> tuple[int, list[TopicRow]]:
        return self._call_on(self.store.topics, "list_topics", **kw)

    def topic_counts(self) -> dict[str, int]:
        return self._call_on(self.store.topics, "counts")

    def topic(self, name: str) -> TopicView | None:
        return self._call_on(self.store.topics, "get_topic", name)

    def topic_lag_history(
        self, name: str, groups: list[str], span_ms: int
    ) -> dict[str, list[tuple[int, int, float]]]:
        return self._call_on(self.store.topics, "lag_history", name, groups, span_ms)

    def alerts(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """(active, recent history) from the alerts component (collectors/alerts), or None when it is
        not installed."""
        from dashboard import alerts_source

        try:
            return alerts_source.read_alerts(self.store.r, self.prefix)
        except Exception as e:  # its own errors must not take the page down
            import redis

            if isinstance(e, redis.RedisError):
                raise Unavailable(str(e)) from e
            raise


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


# ---- the fleet grid's server-side row model ---------------------------------------------------------
@dataclass
class GridQuery:
    sort_by: str = "name"
    descending: bool = False
    states: list[str] | None = None
    name_contains: str | None = None
    type_: str | None = None
    offset: int = 0
    limit: int = 100


def _text_values(model: Mapping[str, Any]) -> list[str]:
    """The values of an AG Grid text filter (one condition or several joined by OR)."""
    if "conditions" in model:
        out: list[str] = []
        for c in model.get("conditions") or []:
            out += _text_values(c)
        return out
    v = model.get("filter")
    return [str(v).strip()] if v not in (None, "") else []


def grid_query(request: Mapping[str, Any] | None, sort_keys: Mapping[str, str] = GRID_SORT) -> GridQuery:
    """Translate AG Grid's infinite-row-model request (startRow, endRow, sortModel, filterModel) into
    a query of a sorted index: RedisStore.list_groups's (columns to sort keys: `sort_keys`), or the
    topic index's. Unsortable columns fall back to name order."""
    req = request or {}
    start = max(0, int(req.get("startRow") or 0))
    end = max(start, int(req.get("endRow") or start + 100))
    q = GridQuery(offset=start, limit=min(end - start, 1000))
    sort = req.get("sortModel") or []
    if sort:
        col = sort[0].get("colId")
        if col in sort_keys:
            q.sort_by = sort_keys[col]
            q.descending = sort[0].get("sort") == "desc"
    fm = req.get("filterModel") or {}
    if "name" in fm:
        vals = _text_values(fm["name"])
        q.name_contains = vals[0] if vals else None
    if "state" in fm:
        q.states = _text_values(fm["state"]) or None
    if "type" in fm:
        vals = _text_values(fm["type"])
        q.type_ = vals[0] if vals else None
    return q


def fleet_page(data: DashboardData, request: Mapping[str, Any] | None) -> dict[str, Any]:
    """The grid's getRowsResponse for one block of rows."""
    q = grid_query(request)
    total, rows = data.list_groups(
        sort_by=q.sort_by,
        descending=q.descending,
        state=q.states,
        name_contains=q.name_contains,
        type_=q.type_,
        offset=q.offset,
        limit=q.limit,
    )
    for r in rows:
        # One "generation or epoch" column: classic groups have generations, KIP-848 groups epochs.
        modern = r.get("type") in ("consumer", "share")
        r["gen_or_epoch"] = r.get("group_epoch") if modern else r.get("generation")
        r["lag_seconds"] = round(float(r.get("lag_seconds") or 0), 1)
    return {"rowData": rows, "rowCount": total}


# ---- the topics grid's server-side row model --------------------------------------------------------
def topics_page(data: DashboardData, request: Mapping[str, Any] | None) -> dict[str, Any]:
    """The topics grid's getRowsResponse for one block: sorted by any column of the topic index,
    filtered by name."""
    q = grid_query(request, TOPIC_GRID_SORT)
    total, rows = data.list_topics(
        sort_by=q.sort_by,
        descending=q.descending,
        name_contains=q.name_contains,
        offset=q.offset,
        limit=q.limit,
    )
    out = []
    for r in rows:
        d = r.to_json()
        d["lag_seconds"] = round(r.lag_seconds, 1)
        out.append(d)
    return {"rowData": out, "rowCount": total}
