"""The dashboard's read-only HTTP API, JSON and versioned (docs/api.md):

    GET /api/v1                                              what the API offers
    GET /api/v1/openapi.json                                 its OpenAPI document (dashboard/api_spec.py)
    GET /api/v1/clusters                                     every cluster, with counts and freshness
    GET /api/v1/clusters/{cluster}                           one of them
    GET /api/v1/clusters/{cluster}/groups                    the fleet: filtered, sorted, paged
    GET /api/v1/clusters/{cluster}/groups/{group}            the group's document
    GET /api/v1/clusters/{cluster}/groups/{group}/timeline     its states over a time range
    GET /api/v1/clusters/{cluster}/groups/{group}/generations  its generations (epochs) over a range
    GET /api/v1/clusters/{cluster}/topics                    the topics: filtered, sorted, paged
    GET /api/v1/clusters/{cluster}/topics/{topic}            one topic, its groups and their partitions
    GET /api/v1/alerts                                       the alerts firing now

and Burrow's consumer endpoints (dashboard/api_burrow.py). It is mounted on the dashboard's own Flask
server (dashboard/app.py), so the dashboard's basic authentication covers it, and it reads through
the same DashboardData calls the pages make, so the API and the pages never disagree.

A group or topic name travels percent-encoded as ONE path segment ('/' included, as the pages'
URLs), so the routes read the raw request URI, not the path the server decoded. A bad parameter is a
400, an unknown cluster, group, topic or path a 404, a method other than GET a 405, each with a JSON
body {"error", "message", "status"}; Redis unreachable is a 503.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit

from flask import Flask, Response, request

from collectors.config import CLUSTER_NAME
from collectors.storage.fleet_rows import KNOWN_STATES
from collectors.storage.topics import TOPIC_SORT_KEYS
from coordinator_model.document.types import DocumentError
from coordinator_model.streams.tasks import TaskLag, task_lags
from dashboard.data import GRID_SORT, DashboardData, Unavailable

PREFIX = ("api", "v1")
MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
GROUP_TYPES = ("classic", "consumer", "share")
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]

REASONS = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    500: "internal_error",
    503: "unavailable",
}


class ApiError(Exception):
    """An answer other than 200: its status and the message said to the client."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    text = json.dumps(body, separators=(",", ":"), allow_nan=False)
    resp = Response(text, status, mimetype="application/json")
    resp.headers["Cache-Control"] = "no-store"
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": REASONS.get(status, "error"), "message": message, "status": status}


def fail(status: int, message: str) -> NoReturn:
    raise ApiError(status, message)


# ---- the request's path, as sent ---------------------------------------------------------------------
def raw_segments(prefix: tuple[str, ...]) -> list[str] | None:
    """The path segments after `prefix` (e.g. ("api", "v1")), each percent-decoded on its own, so a
    name holding '/' (sent as %2F) stays one segment. Read from the raw request URI (gunicorn's and
    Werkzeug's RAW_URI / REQUEST_URI); without one, from the decoded path. A trailing '/' is ignored.
    None when the path is not under `prefix`."""
    env = request.environ
    raw = env.get("RAW_URI") or env.get("REQUEST_URI")
    path = urlsplit(raw).path if raw else request.path
    parts = path.split("/")
    n = len(prefix)
    for i in range(len(parts) - n + 1):
        if tuple(parts[i : i + n]) == prefix:
            rest = parts[i + n :]
            if rest and rest[-1] == "":
                rest = rest[:-1]
            return [unquote(p) for p in rest]
    return None


# ---- query parameters --------------------------------------------------------------------------------
class Query:
    """The request's query parameters, checked against what the endpoint accepts: an unknown or
    repeated one is a 400 (a typo must not silently widen a list)."""

    def __init__(self, allowed: tuple[str, ...], repeatable: tuple[str, ...] = ()) -> None:
        self.args = request.args
        unknown = sorted(set(self.args) - set(allowed))
        if unknown:
            accepted = ", ".join(allowed) if allowed else "none"
            fail(400, f"unknown query parameter {unknown[0]!r} (accepted: {accepted})")
        for k in self.args:
            if k not in repeatable and len(self.args.getlist(k)) > 1:
                fail(400, f"query parameter {k!r} given more than once")

    def text(self, name: str, max_len: int = 256) -> str | None:
        v = self.args.get(name)
        if v is None:
            return None
        v = v.strip()
        if len(v) > max_len:
            fail(400, f"{name} is longer than {max_len} characters")
        return v or None

    def choice(self, name: str, choices: tuple[str, ...] | list[str], default: str | None) -> str | None:
        v = self.text(name)
        if v is None:
            return default
        if v not in choices:
            fail(400, f"{name} must be one of {', '.join(choices)}, not {v!r}")
        return v

    def integer(self, name: str, default: int | None, lo: int = 0, hi: int | None = None) -> int | None:
        v = self.text(name, 32)
        if v is None:
            return default
        try:
            n = int(v)
        except ValueError:
            fail(400, f"{name} must be an integer, not {v!r}")
        if n < lo or (hi is not None and n > hi):
            bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            fail(400, f"{name} must be {bound}, not {n}")
        return n

    def states(self, name: str = "state") -> list[str] | None:
        """One or several group states (repeated, or comma-separated), as Kafka spells them (any
        case accepted)."""
        by_lower = {s.lower(): s for s in KNOWN_STATES}
        out: list[str] = []
        for v in self.args.getlist(name):
            for s in v.split(","):
                s = s.strip()
                if not s:
                    continue
                if s.lower() not in by_lower:
                    fail(400, f"{name} must be among {', '.join(KNOWN_STATES)}, not {s!r}")
                out.append(by_lower[s.lower()])
        return list(dict.fromkeys(out)) or None

    def time_range(self) -> tuple[int | None, int | None]:
        since = self.integer("since", None)
        until = self.integer("until", None)
        if since is not None and until is not None and since > until:
            fail(400, f"since ({since}) is after until ({until})")
        return since, until


def paging(q: Query) -> tuple[int, int]:
    return q.integer("offset", 0) or 0, q.integer("limit", DEFAULT_LIMIT, 0, MAX_LIMIT) or 0


# ---- reads -------------------------------------------------------------------------------------------
def guarded(data: DashboardData, read: Callable[[], Any]) -> Any:
    """`read()` with Redis errors turned into Unavailable (as DashboardData does for its own reads)."""
    import redis

    try:
        return read()
    except (redis.ConnectionError, redis.TimeoutError) as e:
        raise Unavailable(f"Redis is unreachable ({e})") from e
    except redis.RedisError as e:
        raise Unavailable(f"Redis error: {e}") from e


def known_cluster(data: DashboardData, cluster: str) -> str:
    """`cluster` when this Redis holds it or it is configured; a 404 naming the known ones if not."""
    names = data.cluster_names()
    if not CLUSTER_NAME.fullmatch(cluster) or cluster not in names:
        fail(404, f"no cluster named {cluster!r} (known: {', '.join(names) or 'none'})")
    return cluster


def cluster_json(data: DashboardData, cluster: str) -> dict[str, Any]:
    """A cluster as /api/v1/clusters lists it: its registry entry, counts and freshness."""
    info = next((c for c in data.clusters() if c.name == cluster), None)
    health = data.health(cluster)
    if not health.reachable:
        raise Unavailable(health.error or "Redis is unreachable")
    counts = data.fleet_counts(cluster)
    topics = data.topic_counts(cluster)
    collector = None
    if health.collector_ts is not None:
        collector = {
            "ts": health.collector_ts,
            "age_s": round(health.collector_age_s, 3) if health.collector_age_s is not None else None,
            "event_ms": health.event_ms,
        }
    return {
        "name": cluster,
        "configured": bool(info.configured) if info else False,
        "bootstrap_servers": info.bootstrap_servers if info else None,
        "registered_ms": info.registered_ms if info else None,
        "groups": counts["total"],
        "groups_by_state": counts["by_state"],
        "storms": counts["storms"],
        "lagging": counts["lagging"],
        "topics": topics["total"],
        "collector": collector,
        "sources": health.sources or {},
    }


def group_exists(data: DashboardData, cluster: str, group: str) -> bool:
    if data.fleet_row(group, cluster) is not None:
        return True
    store = data.store_for(cluster)
    return bool(guarded(data, lambda: store.r.exists(store.document_key(group))))


def no_group(cluster: str, group: str) -> NoReturn:
    fail(404, f"no group named {group!r} in cluster {cluster!r}")


# ---- endpoints ---------------------------------------------------------------------------------------
ENDPOINTS = [
    "/api/v1",
    "/api/v1/openapi.json",
    "/api/v1/clusters",
    "/api/v1/clusters/{cluster}",
    "/api/v1/clusters/{cluster}/groups",
    "/api/v1/clusters/{cluster}/groups/{group}",
    "/api/v1/clusters/{cluster}/groups/{group}/timeline",
    "/api/v1/clusters/{cluster}/groups/{group}/generations",
    "/api/v1/clusters/{cluster}/topics",
    "/api/v1/clusters/{cluster}/topics/{topic}",
    "/api/v1/alerts",
]


def index() -> dict[str, Any]:
    Query(())
    return {"version": "v1", "openapi": "/api/v1/openapi.json", "endpoints": ENDPOINTS}


def openapi() -> dict[str, Any]:
    from dashboard.api_spec import spec

    Query(())
    return spec()


def clusters(data: DashboardData) -> dict[str, Any]:
    Query(())
    return {"clusters": [cluster_json(data, c) for c in data.cluster_names()]}


def cluster(data: DashboardData, name: str) -> dict[str, Any]:
    Query(())
    return cluster_json(data, known_cluster(data, name))


def groups(data: DashboardData, cluster: str) -> dict[str, Any]:
    q = Query(("sort", "order", "state", "type", "name", "offset", "limit"), repeatable=("state",))
    sort = q.choice("sort", list(GRID_SORT), "name") or "name"
    order = q.choice("order", ("asc", "desc"), "asc")
    states = q.states()
    type_ = q.choice("type", GROUP_TYPES, None)
    name = q.text("name")
    offset, limit = paging(q)
    known_cluster(data, cluster)
    total, rows = data.list_groups(
        cluster,
        sort_by=GRID_SORT[sort],
        descending=order == "desc",
        state=states,
        name_contains=name,
        type_=type_,
        offset=offset,
        limit=limit,
    )
    return {
        "cluster": cluster,
        "total": total,
        "offset": offset,
        "limit": limit,
        "sort": sort,
        "order": order,
        "groups": rows,
    }


def group(data: DashboardData, cluster: str, name: str) -> dict[str, Any]:
    Query(())
    known_cluster(data, cluster)
    try:
        doc = data.group(name, cluster)
    except DocumentError as e:
        fail(500, f"the stored document of group {name!r} cannot be read: {e}")
    if doc is None:
        no_group(cluster, name)
    row = data.fleet_row(name, cluster)
    return {
        "cluster": cluster,
        "document": doc.to_json(),
        "last_refreshed": row.get("last_refreshed") if row else None,
        "tasks": [_task_json(t) for t in task_lags(doc)],
    }


def _task_json(t: TaskLag) -> dict[str, Any]:
    return {
        "task": t.task,
        "member_id": t.member_id,
        "client_id": t.client_id,
        "partitions": [[topic, p] for topic, p in t.partitions],
        "lag": t.lag,
        "lag_seconds": t.lag_seconds,
    }


def _group_range(data: DashboardData, cluster: str, name: str) -> tuple[Any, Any]:
    """The (since, until) of a request about one group's history, after its cluster and the group
    are known to exist (404 otherwise)."""
    since, until = Query(("since", "until")).time_range()
    known_cluster(data, cluster)
    if not group_exists(data, cluster, name):
        no_group(cluster, name)
    return since, until


def timeline(data: DashboardData, cluster: str, name: str) -> dict[str, Any]:
    since, until = _group_range(data, cluster, name)
    try:
        spans = data.timeline(name, since, until, cluster)
    except DocumentError as e:
        fail(500, str(e))
    return {
        "cluster": cluster,
        "group": name,
        "since": since,
        "until": until,
        "timeline": [s.to_json() for s in spans],
    }


def generations(data: DashboardData, cluster: str, name: str) -> dict[str, Any]:
    """Generations in force at some moment of [since, until]: begun by `until`, and not ended
    before `since` (as the group page reads them: those begun by `until`, then cut at `since`)."""
    since, until = _group_range(data, cluster, name)
    try:
        gens = data.generations(name, None, until, cluster)
    except DocumentError as e:
        fail(500, str(e))
    if since is not None:
        gens = [g for g in gens if g.end is None or g.end >= since]
    return {
        "cluster": cluster,
        "group": name,
        "since": since,
        "until": until,
        "generations": [g.to_json() for g in gens],
    }


def topics(data: DashboardData, cluster: str) -> dict[str, Any]:
    q = Query(("sort", "order", "name", "offset", "limit"))
    sort = q.choice("sort", TOPIC_SORT_KEYS, "name") or "name"
    order = q.choice("order", ("asc", "desc"), "asc")
    name = q.text("name")
    offset, limit = paging(q)
    known_cluster(data, cluster)
    total, rows = data.list_topics(
        cluster, sort_by=sort, descending=order == "desc", name_contains=name, offset=offset, limit=limit
    )
    return {
        "cluster": cluster,
        "total": total,
        "offset": offset,
        "limit": limit,
        "sort": sort,
        "order": order,
        "topics": [r.to_json() for _, r in rows],
    }


PARTITION_FIELDS = ("partition", "committed", "end_offset", "lag", "lag_seconds", "member_id")


def topic(data: DashboardData, cluster: str, name: str) -> dict[str, Any]:
    Query(())
    known_cluster(data, cluster)
    view = data.topic(name, cluster)
    if view is None:
        fail(404, f"no group reads a topic named {name!r} in cluster {cluster!r}")
    return {
        "cluster": cluster,
        "topic": view.row.to_json(),
        "groups": view.groups,
        # the topic index keeps a partition as a row (PartitionRow); the API names its fields
        "partitions": {
            g: [dict(zip(PARTITION_FIELDS, row, strict=False)) for row in rows]
            for g, rows in sorted(view.partitions.items())
        },
    }


def alerts(data: DashboardData) -> dict[str, Any]:
    """The alerts firing now, newest first, of every cluster or one; filters optional."""
    from collectors.storage.alerts import AlertStore
    from collectors.storage.clusters import cluster_prefix

    q = Query(("cluster", "group", "rule", "severity"))
    only = q.text("cluster")
    group_name = q.text("group", 1000)
    rule = q.text("rule")
    severity = q.text("severity")
    names = [known_cluster(data, only)] if only is not None else data.cluster_names()
    found: list[dict[str, Any]] = []
    for c in names:
        store = AlertStore(data.client, prefix=cluster_prefix(c, data.prefix))
        found += guarded(data, lambda s=store: s.active(group=group_name, rule=rule, severity=severity))
    found.sort(key=lambda a: (-int(a.get("since") or 0), str(a["cluster"]), str(a["group"]), str(a["rule"])))
    return {"count": len(found), "alerts": found}


# ---- routing -----------------------------------------------------------------------------------------
def route(data: DashboardData, seg: list[str]) -> dict[str, Any]:
    if "" in seg:
        fail(404, "empty path segment")
    match seg:
        case []:
            return index()
        case ["openapi.json"]:
            return openapi()
        case ["clusters"]:
            return clusters(data)
        case ["alerts"]:
            return alerts(data)
        case ["clusters", c]:
            return cluster(data, c)
        case ["clusters", c, "groups"]:
            return groups(data, c)
        case ["clusters", c, "groups", g]:
            return group(data, c, g)
        case ["clusters", c, "groups", g, "timeline"]:
            return timeline(data, c, g)
        case ["clusters", c, "groups", g, "generations"]:
            return generations(data, c, g)
        case ["clusters", c, "topics"]:
            return topics(data, c)
        case ["clusters", c, "topics", t]:
            return topic(data, c, t)
    fail(404, f"no API endpoint at {request.path} (see /api/v1/openapi.json)")


def register(server: Flask, data: DashboardData) -> None:
    """Mount the API on the dashboard's Flask server (Burrow's endpoints are api_burrow.register's,
    which builds on this module). Its authentication (dashboard.app.add_basic_auth, a before_request
    hook of the server) covers them as any route."""

    def view(**_: Any) -> Response:
        if request.method not in ("GET", "HEAD"):
            return json_response(
                error_body(405, f"{request.method} is not allowed: the API is read-only (GET)"),
                405,
                {"Allow": "GET, HEAD"},
            )
        try:
            seg = raw_segments(PREFIX)
            return json_response(route(data, seg or []))
        except ApiError as e:
            return json_response(error_body(e.status, e.message), e.status, e.headers)
        except Unavailable as e:
            return json_response(error_body(503, str(e)), 503, {"Retry-After": "5"})

    for rule in ("/api/v1", "/api/v1/", "/api/v1/<path:_rest>"):
        server.add_url_rule(rule, endpoint=f"groupscope_api:{rule}", view_func=view, methods=ALL_METHODS)
