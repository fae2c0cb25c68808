"""What the dashboard reads, and how it tells "no data" from "cannot reach Redis".

Every read goes through collectors.storage.redis_store.RedisStore (the pipeline's documented read API),
one per Kafka cluster (each cluster's keys under its own prefix, collectors/storage/clusters.py); a
group or topic is (cluster, name) everywhere. The dashboard never writes group data. A Redis error
becomes :class:`Unavailable`, which pages turn into the red banner; the next refresh simply tries
again, so the banner clears by itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from collectors.alerts.fleet_statuses import read_statuses, top_key
from collectors.config import CLUSTER_NAME, DEFAULT_CLUSTER, one_cluster
from collectors.storage.clusters import (
    BASE_PREFIX,
    ClusterInfo,
    ClusterRegistry,
    cluster_prefix,
    list_groups_across,
    merge_pages,
)
from collectors.storage.redis_store import RedisStore
from collectors.storage.topics import TOPIC_SORT_KEYS, TopicRow, TopicView
from coordinator_model.alert_rules import AlertConfig, parse_alert_config
from coordinator_model.document.types import DocumentError, GenerationDoc, GroupDocument, TimelineSpan
from coordinator_model.states import MODERN_TYPES
from coordinator_model.statuses import STATUSES, GroupStatuses, definitions, group_statuses
from dashboard import alerts_source

T = TypeVar("T")

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
    """One cluster's collector heartbeat and sources (cluster None: Redis itself is unreachable)."""

    reachable: bool
    error: str | None = None
    collector_ts: int | None = None
    collector_age_s: float | None = None
    event_ms: int | None = None
    sources: dict[str, Any] | None = None
    cluster: str | None = None
    redis_full: str | None = None  # why Redis refuses writes (RedisStore.memory_full), or None


class DashboardData:
    """Every read of the dashboard, for every cluster this Redis holds.

    One Redis client (so one connection pool) per process, shared by one RedisStore per cluster, each
    under its cluster's prefix (collectors/storage/clusters.py); gunicorn forks after import and
    redis-py reconnects. The clusters are the registry's (every cluster a collector wrote) and the
    configured ones (`settings.cluster_names()`, so a configured cluster whose collector never ran is
    shown, empty, with its missing heartbeat; `default` when nothing else is known), re-read every
    `clusters_ttl_s` seconds: a new
    cluster's collector shows up without a restart, and a page does not cost a registry read."""

    def __init__(
        self,
        redis_url: str,
        prefix: str = BASE_PREFIX,
        timeout_s: float = 2.0,
        clusters: Iterable[str] = (),
        clusters_ttl_s: float = 5.0,
        alert_config: AlertConfig | None = None,
    ) -> None:
        self.redis_url = redis_url
        # The alert rules, whose storm, flapping and lag rules define those statuses on every page
        # (coordinator_model/statuses.py): the worker's configuration (collectors/alerts/config.py).
        self.alert_config = alert_config if alert_config is not None else parse_alert_config(None)
        self.prefix = prefix  # the base prefix: each cluster's is cluster_prefix(name, prefix)
        self.timeout_s = timeout_s
        self.configured = list(clusters)
        self.clusters_ttl_s = clusters_ttl_s
        self._client: Any = None
        self._stores: dict[str, RedisStore] = {}
        self._clusters: list[ClusterInfo] | None = None
        self._clusters_at = 0.0
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import redis

                # Short timeouts: an unreachable Redis must turn into a banner within a refresh, not
                # hang the page's callbacks.
                self._client = redis.Redis.from_url(
                    self.redis_url,
                    socket_timeout=self.timeout_s,
                    socket_connect_timeout=self.timeout_s,
                    health_check_interval=30,
                )
            return self._client

    def store_for(self, cluster: str) -> RedisStore:
        """The cluster's RedisStore (they all share the one client). Kept for the known clusters
        only: a URL can name any cluster, and a made-up one must not grow the cache."""
        store = self._stores.get(cluster)
        if store is None:
            store = RedisStore(self.client, prefix=cluster_prefix(cluster, self.prefix))
            with self._lock:
                known = cluster == DEFAULT_CLUSTER or any(c.name == cluster for c in self._clusters or [])
                if known:
                    store = self._stores.setdefault(cluster, store)
        return store

    @property
    def store(self) -> RedisStore:
        """The cluster `default`'s store (the layout from before clusters existed)."""
        return self.store_for(DEFAULT_CLUSTER)

    def _call(self, fn: str, *args: Any, cluster: str | None = None, **kw: Any) -> Any:
        return self._call_on(self.store_for(self.resolve(cluster)), fn, *args, **kw)

    def _call_on(self, target: Any, fn: str, *args: Any, **kw: Any) -> Any:
        """`target.fn(...)`, Redis errors turned into Unavailable."""
        return self._guard(lambda: getattr(target, fn)(*args, **kw))

    def _guard(self, read: Callable[[], T]) -> T:
        import redis

        try:
            return read()
        except (redis.ConnectionError, redis.TimeoutError) as e:
            raise Unavailable(f"Redis at {_safe_url(self.redis_url)} is unreachable ({e})") from e
        except redis.RedisError as e:
            raise Unavailable(f"Redis error: {e}") from e

    # ---- clusters ----------------------------------------------------------------------------------
    def clusters(self) -> list[ClusterInfo]:
        """Registry ∪ configured, `default` first (cached for clusters_ttl_s)."""
        with self._lock:
            if self._clusters is not None and time.monotonic() - self._clusters_at < self.clusters_ttl_s:
                return self._clusters
        registry = ClusterRegistry(self.client, self.prefix)
        found = self._guard(lambda: registry.clusters(self.configured))
        if not found:
            # nothing configured and nothing written yet: the single-cluster dashboard of an empty
            # Redis (its banner says no collector wrote to it)
            found = [ClusterInfo(DEFAULT_CLUSTER, cluster_prefix(DEFAULT_CLUSTER, self.prefix))]
        with self._lock:
            self._clusters, self._clusters_at = found, time.monotonic()
        return found

    def cluster_names(self) -> list[str]:
        return [c.name for c in self.clusters()]

    def resolve(self, cluster: str | None) -> str:
        """The cluster a page reads: its URL's, else (a legacy URL) the only cluster when there is
        exactly one, else `default`."""
        return one_cluster(self.cluster_names(), cluster) or DEFAULT_CLUSTER

    def scope(self, cluster: str | None) -> list[str]:
        """The clusters a list page shows: the URL's one, or every cluster."""
        return [cluster] if cluster is not None else self.cluster_names()

    # ---- reads -------------------------------------------------------------------------------------
    def health(self, cluster: str | None = None) -> Health:
        """One cluster's freshness (a legacy caller's: the resolved cluster's)."""
        try:
            return self._health_of(self.resolve(cluster))
        except Unavailable as e:
            return Health(reachable=False, error=str(e))

    def healths(self, cluster: str | None = None) -> list[Health]:
        """The freshness of every cluster in scope (two small reads each), or one unreachable Health."""
        try:
            healths = [self._health_of(c) for c in self.scope(cluster)]
            full = self._call_on(self.store_for(healths[0].cluster), "memory_full") if healths else None
        except Unavailable as e:
            return [Health(reachable=False, error=str(e))]
        for h in healths:  # one Redis for every cluster
            h.redis_full = full
        return healths

    def _health_of(self, cluster: str) -> Health:
        f = self._call_on(self.store_for(cluster), "freshness")
        c = f.get("collector") or {}
        age = f.get("collector_age_ms")
        return Health(
            reachable=True,
            collector_ts=c.get("ts"),
            collector_age_s=age / 1000 if age is not None else None,
            event_ms=c.get("event_ms"),
            sources=f.get("sources") or {},
            cluster=cluster,
        )

    def fleet_counts(self, cluster: str | None = None, now: int | None = None) -> dict[str, Any]:
        """The fleet header's counts over the clusters in scope, summed, with each cluster's total
        in `by_cluster` (in cluster order). `storms`, `flapping` and `lagging` count the groups in
        each status at `now` (default: the clock) as the alert rules define it, each cluster under
        its own rules (coordinator_model/statuses.py); `top` lists the five furthest into each
        ({"name", "cluster", "summary"}), `definitions` says what each status means."""
        at = now if now is not None else now_ms()
        out: dict[str, Any] = {
            "total": 0,
            "by_state": {},
            "storms": 0,
            "flapping": 0,
            "lagging": 0,
            "by_cluster": {},
            "definitions": definitions(self.alert_config),
        }
        found: dict[str, list[tuple[str, str, Any]]] = {s: [] for s in STATUSES}
        for c in self.scope(cluster):
            store = self.store_for(c)
            counts = self._call_on(store, "fleet_counts")
            st = self._guard(
                lambda store=store, c=c: read_statuses(store, self.alert_config.for_cluster(c), at)
            )
            out["total"] += counts["total"]
            out["storms"] += st.count("storm")
            out["flapping"] += st.count("flapping")
            out["lagging"] += st.count("lagging")
            for s, n in counts["by_state"].items():
                out["by_state"][s] = out["by_state"].get(s, 0) + n
            out["by_cluster"][c] = counts["total"]
            for status in STATUSES:
                found[status] += [(c, name, f) for name, f in st.top(status)]
        out["top"] = {
            status: [
                {"name": name, "cluster": c, "summary": f.summary}
                for c, name, f in sorted(rows, key=lambda x: (*top_key(status, x[2]), x[1], x[0]))[:5]
            ]
            for status, rows in found.items()
        }
        return out

    def group_statuses(
        self, doc: GroupDocument, cluster: str | None = None, now: int | None = None
    ) -> GroupStatuses:
        """The statuses of one group of `cluster` (coordinator_model/statuses.py), at `now`."""
        config = self.alert_config.for_cluster(self.resolve(cluster))
        return group_statuses(doc, now if now is not None else now_ms(), config)

    def list_groups(
        self, cluster: str | list[str] | None = None, **kw: Any
    ) -> tuple[int, list[dict[str, Any]]]:
        """(total, one page of fleet rows, each with its `cluster`) over the clusters in scope (a
        name, a list of names, or None: all), merged in the sort's order (merge_pages)."""
        names = cluster if isinstance(cluster, list) else self.scope(cluster)
        offset, limit = max(0, int(kw.pop("offset", 0))), max(0, int(kw.pop("limit", 100)))
        if len(names) == 1:
            # one cluster: exactly the single-cluster read, the page asked for and nothing more
            total, rows = self._call_on(
                self.store_for(names[0]), "list_groups", offset=offset, limit=limit, **kw
            )
            return total, [{**r, "cluster": names[0]} for r in rows]
        stores = {c: self.store_for(c) for c in names}
        return self._guard(lambda: list_groups_across(stores, offset=offset, limit=limit, **kw))

    def group(self, name: str, cluster: str | None = None) -> GroupDocument | None:
        """The group's document read through its types, or None when there is none. DocumentError
        when what is stored is not a group document (the page says so)."""
        raw = self._call("get_group", name, cluster=cluster)
        return None if raw is None else GroupDocument.from_json(raw)

    def fleet_row(self, name: str, cluster: str | None = None) -> dict[str, Any] | None:
        return self._call("get_row", name, cluster=cluster)

    def timeline(
        self, name: str, since: int | None, until: int | None, cluster: str | None = None
    ) -> list[TimelineSpan]:
        """The group's state spans in [since, until] from its history (the document's own, indexed)."""
        rows = self._call("get_timeline", name, since, until, cluster=cluster)
        return _history(name, "timeline", TimelineSpan.from_json, rows)

    def generations(
        self, name: str, since: int | None, until: int | None, cluster: str | None = None
    ) -> list[GenerationDoc]:
        rows = self._call("get_generations", name, since, until, cluster=cluster)
        return _history(name, "generations", GenerationDoc.from_json, rows)

    def lag_history(
        self, name: str, since: int | None, until: int | None, cluster: str | None = None
    ) -> list[dict[str, Any]]:
        return self._call("get_lag_history", name, since, until, cluster=cluster)

    # ---- topics (collectors/storage/topics.py) ------------------------------------------------------
    def list_topics(
        self, cluster: str | list[str] | None = None, **kw: Any
    ) -> tuple[int, list[tuple[str, TopicRow]]]:
        """(total, one page of (cluster, topic row)) over the clusters in scope, merged like
        list_groups: a topic name is one topic per cluster."""
        names = cluster if isinstance(cluster, list) else self.scope(cluster)
        sort_by = kw.get("sort_by", "name")
        descending = bool(kw.get("descending", False))
        offset, limit = max(0, int(kw.pop("offset", 0))), max(0, int(kw.pop("limit", 100)))
        if len(names) == 1:
            total, rows = self._call_on(
                self.store_for(names[0]).topics, "list_topics", offset=offset, limit=limit, **kw
            )
            return total, [(names[0], r) for r in rows]
        parts = {
            c: self._call_on(self.store_for(c).topics, "list_topics", offset=0, limit=offset + limit, **kw)
            for c in names
        }
        total, merged = merge_pages(
            {c: (n, [{"row": r} for r in rows]) for c, (n, rows) in parts.items()},
            lambda d: topic_sort_key(d["row"], sort_by),
            descending,
            offset,
            limit,
        )
        return total, [(d["cluster"], d["row"]) for d in merged]

    def topic_counts(self, cluster: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"total": 0, "rebalancing": 0, "lagging": 0, "by_cluster": {}}
        for c in self.scope(cluster):
            counts = self._call_on(self.store_for(c).topics, "counts")
            for k in ("total", "rebalancing", "lagging"):
                out[k] += counts[k]
            out["by_cluster"][c] = counts["total"]
        return out

    def topic(self, name: str, cluster: str | None = None) -> TopicView | None:
        return self._call_on(self.store_for(self.resolve(cluster)).topics, "get_topic", name)

    def topic_lag_history(
        self, name: str, groups: list[str], span_ms: int, cluster: str | None = None
    ) -> dict[str, list[tuple[int, int, float]]]:
        store = self.store_for(self.resolve(cluster))
        return self._call_on(store.topics, "lag_history", name, groups, span_ms)

    def alerts(self, cluster: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(active, recent history), each alert with the `cluster` whose store holds it, from the
        alerts component (collectors/alerts) of every cluster in scope."""
        return self._alerts_read(alerts_source.read_cluster_alerts, cluster)

    def alerts_evaluated(self, cluster: str | None = None) -> bool:
        """Whether the alert evaluator ever ran for a cluster in scope (`groupscope worker`)."""
        return self._alerts_read(alerts_source.evaluated, cluster)

    def _alerts_read(self, read: Callable[[Any, dict[str, str]], T], cluster: str | None) -> T:
        prefixes = {c: cluster_prefix(c, self.prefix) for c in self.scope(cluster)}
        try:
            return self._guard(lambda: read(self.client, prefixes))
        except Unavailable:
            raise
        except Exception as e:  # its own errors must not take the page down
            raise Unavailable(f"the alerts store could not be read: {e}") from e


def _history(group: str, what: str, read: Callable[[Any], T], rows: list[Any]) -> list[T]:
    """A group's stored history rows (its document's timeline spans or generations) read through
    their type; DocumentError when one is not."""
    try:
        return [read(r) for r in rows]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DocumentError(f"group {group!r}: malformed {what} history ({exc!r})") from exc


def topic_sort_key(row: TopicRow, sort_by: str) -> tuple[float, str]:
    """A topic row's place in its cluster's topic index. The index scores lag in seconds unrounded
    and the row keeps 3 decimals: two topics that differ past that merge by name instead, still
    every row once, in each cluster's own order."""
    score = 0.0 if sort_by == "name" else float(getattr(row, sort_by))
    return score, row.name


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
    clusters: list[str] | None = None  # the cluster filter (the URL's cluster, or the filter box's)
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
    if "cluster" in fm:
        q.clusters = _text_values(fm["cluster"]) or None
    return q


def cluster_filter(clusters: list[str]) -> dict[str, Any]:
    """The grid's filter model entry that keeps `clusters` (the page's scope or the filter box)."""
    conds = [{"filterType": "text", "type": "equals", "filter": c} for c in clusters]
    return conds[0] if len(conds) == 1 else {"filterType": "text", "operator": "OR", "conditions": conds}


def row_id(cluster: str, name: str) -> str:
    """A grid row's id: a name is unique only within its cluster (cluster names hold no '/')."""
    return f"{cluster}/{name}"


def _scope(data: DashboardData, q: GridQuery) -> list[str]:
    """The clusters a grid block reads: the cluster filter's (the URL's cluster sets it), known or
    not (an unknown one reads as empty), else every cluster."""
    if not q.clusters:
        return data.cluster_names()
    # what a user typed in the column's filter: a name no cluster can have matches nothing
    return [c for c in dict.fromkeys(q.clusters) if CLUSTER_NAME.fullmatch(c)]


def fleet_page(data: DashboardData, request: Mapping[str, Any] | None) -> dict[str, Any]:
    """The grid's getRowsResponse for one block of rows: one cluster's page as it is, several
    clusters' merged in the sort's order (DashboardData.list_groups, merge_pages)."""
    q = grid_query(request)
    total, rows = data.list_groups(
        _scope(data, q),
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
        modern = r.get("type") in MODERN_TYPES
        r["gen_or_epoch"] = r.get("group_epoch") if modern else r.get("generation")
        r["lag_seconds"] = round(float(r.get("lag_seconds") or 0), 1)
        if r.get("provisional"):
            # from the Admin API's first answers while the collector starts: no lag known yet
            r["lag"] = r["lag_seconds"] = None
        r["row_id"] = row_id(r["cluster"], r["name"])
    return {"rowData": rows, "rowCount": total}


# ---- the topics grid's server-side row model --------------------------------------------------------
def topics_page(data: DashboardData, request: Mapping[str, Any] | None) -> dict[str, Any]:
    """The topics grid's getRowsResponse for one block: sorted by any column of the topic index,
    filtered by name."""
    q = grid_query(request, TOPIC_GRID_SORT)
    total, rows = data.list_topics(
        _scope(data, q),
        sort_by=q.sort_by,
        descending=q.descending,
        name_contains=q.name_contains,
        offset=q.offset,
        limit=q.limit,
    )
    out = []
    for cluster, r in rows:
        d = r.to_json()
        d["lag_seconds"] = round(r.lag_seconds, 1)
        d["cluster"] = cluster
        d["row_id"] = row_id(cluster, r.name)
        out.append(d)
    return {"rowData": out, "rowCount": total}
