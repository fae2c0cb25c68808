"""Burrow's consumer endpoints (linkedin/Burrow, HTTP API v3), answered as Burrow answers them, so
the dashboards, exporters and scripts people run against Burrow work against groupscope unchanged:

    GET /burrow/admin                                  Burrow's health check: "GOOD"
    GET /v3/kafka                                      {"clusters": [...]}
    GET /v3/kafka/{cluster}/consumer                   {"consumers": [...]}
    GET /v3/kafka/{cluster}/consumer/{group}/status    the group's status, its partitions not OK
    GET /v3/kafka/{cluster}/consumer/{group}/lag       the same with every partition

The status is groupscope's own evaluation of Burrow's rules (coordinator_model/offsets/lag.py, over
the same window of 10 commit slots), read from the group's document (its `lag` section) and the
partitions' windows in the group's offsets hash; docs/api.md, "Burrow's rules vs ours", says where
the two evaluations differ and what each groupscope partition status is said as here.

Shapes are Burrow's (core/protocol/evaluator.go, core/internal/httpserver): every answer carries
`error`, `message` and `request` {url, host}; an unknown cluster on the consumer list is a 404
{"error": true, "message": "cluster not found"}; an unknown cluster or group on /status and /lag is
a 404 carrying a NOTFOUND status, as Burrow's evaluator answers it.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, request

from collectors.storage.group_offsets import GroupOffsets
from coordinator_model.document.types import DocumentError, GroupDocument, MemberDoc
from coordinator_model.offsets import OffsetStore
from coordinator_model.offsets.lag import WINDOW, CommitSample
from dashboard.api import ALL_METHODS, guarded, json_response, raw_segments
from dashboard.data import DashboardData, Unavailable

PREFIX = ("v3", "kafka")

# Burrow's StatusConstant, in its order: a group's status is its worst partition's, capped at ERR.
STATUSES = ("NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND")
RANK = {s: i for i, s in enumerate(STATUSES)}
# groupscope's partition statuses that Burrow has no word for: said as OK, as Burrow's evaluator says
# a partition it cannot evaluate (no commit in its window, or no broker offset to measure lag)
AS_OK = {"NO_COMMIT", "UNKNOWN", None}
# Burrow knows the groups that commit offsets; a KIP-932 share group commits none
NOT_BURROWS = {"share"}


def request_info() -> dict[str, str]:
    """Burrow's `request`: the URL path asked for and the answering host's name."""
    return {"url": request.path, "host": socket.gethostname()}


def answer(body: dict[str, Any], status: int = 200) -> Response:
    return json_response({**body, "request": request_info()}, status)


def error(status: int, message: str) -> Response:
    """Burrow's httpResponseError."""
    return answer({"error": True, "message": message}, status)


# ---- the status of a group -----------------------------------------------------------------------
def burrow_offset(s: CommitSample) -> dict[str, Any]:
    """A window slot as Burrow's ConsumerOffset: the commit's offset, its time (Burrow's `timestamp`,
    the time its STOP rule reads; groupscope's sample time), when it was observed, and the lag at
    that commit (null when the log end was not known then)."""
    return {"offset": s.offset, "timestamp": s.ts, "observedAt": s.ts, "lag": s.lag}


def partition_status(
    p: Any,
    doc: GroupDocument,
    store: OffsetStore,
    commit_ts: Mapping[tuple[str, int], int | None],
    members: Mapping[str, MemberDoc],
) -> dict[str, Any]:
    """One partition of the group's lag section as Burrow's PartitionStatus."""
    tp = (p.topic, p.partition)
    member = members.get(p.member_id) if p.member_id else None
    window = store.windows.get(tp)
    samples = list(window.samples) if window is not None else []
    if samples:
        start, end = burrow_offset(samples[0]), burrow_offset(samples[-1])
        complete = min(1.0, len(samples) / WINDOW)
    elif p.has_commit and p.committed is not None:
        # a document stored whole (a replay, an older collector) keeps no window in Redis: the one
        # commit it knows is the window's only slot
        ts = commit_ts.get(tp) or doc.as_of or 0
        start = end = {"offset": p.committed, "timestamp": ts, "observedAt": ts, "lag": p.lag}
        complete = 1 / WINDOW
    else:
        # owned, never committed: Burrow lists such a partition (it knows its owner) with no offsets
        start = end = None
        complete = 0.0
    status = "OK" if p.status in AS_OK else str(p.status)
    if status not in RANK:
        status = "OK"
    return {
        "topic": p.topic,
        "partition": p.partition,
        "owner": (member.client_host if member else None) or "",
        "client_id": (member.client_id if member else None) or "",
        "status": status,
        "start": start,
        "end": end,
        "current_lag": max(0, int(p.lag or 0)),
        "complete": complete,
    }


def group_status(cluster: str, doc: GroupDocument, store: OffsetStore) -> dict[str, Any]:
    """Burrow's ConsumerGroupStatus of a group, every partition in (what /lag answers)."""
    commit_ts = {(o.topic, o.partition): o.commit_timestamp for o in doc.offsets}
    members = doc.member_by_id()
    parts = [
        partition_status(p, doc, store, commit_ts, members)
        for p in sorted(doc.lag.partitions, key=lambda p: (p.topic, p.partition))
    ]
    status = "OK"
    maxlag = None
    for ps in parts:
        if RANK[ps["status"]] > RANK[status]:
            status = ps["status"] if RANK[ps["status"]] <= RANK["ERR"] else "ERR"
        if maxlag is None or ps["current_lag"] > maxlag["current_lag"]:
            maxlag = ps
    complete = sum(1 for ps in parts if ps["complete"] == 1.0) / len(parts) if parts else 0.0
    return {
        "cluster": cluster,
        "group": doc.group,
        "status": status,
        "complete": complete,
        "partitions": parts,
        "partition_count": len(parts),
        "maxlag": maxlag,
        "totallag": sum(ps["current_lag"] for ps in parts),
    }


def not_found_status(cluster: str, group: str) -> dict[str, Any]:
    """What Burrow's evaluator answers for a cluster or group it does not know."""
    return {
        "cluster": cluster,
        "group": group,
        "status": "NOTFOUND",
        "complete": 1.0,
        "partitions": [],
        "partition_count": 0,
        "maxlag": None,
        "totallag": 0,
    }


def read_status(data: DashboardData, cluster: str, group: str) -> dict[str, Any] | None:
    """The group's full status, or None when Burrow would not know it (no such cluster or group, or
    a share group)."""
    if cluster not in data.cluster_names():
        return None
    doc = data.group(group, cluster)
    if doc is None or doc.type in NOT_BURROWS:
        return None
    store = data.store_for(cluster)
    offsets: GroupOffsets = store.offsets
    windows = guarded(data, lambda: offsets.load([group]))[group]
    return group_status(cluster, doc, windows)


def consumers(data: DashboardData, cluster: str) -> list[str]:
    """The cluster's groups Burrow would list: every group but share groups, by name."""
    store = data.store_for(cluster)
    types = guarded(data, lambda: store.r.hgetall(store.k("fleet", "type")))
    names = []
    for k, v in types.items():
        name = k.decode(errors="replace") if isinstance(k, bytes) else str(k)
        kind = v.decode(errors="replace") if isinstance(v, bytes) else str(v)
        if kind not in NOT_BURROWS:
            names.append(name)
    return sorted(names)


# ---- routing -------------------------------------------------------------------------------------
def route(data: DashboardData, seg: list[str]) -> Response:
    match seg:
        case []:
            return answer(
                {"error": False, "message": "cluster list returned", "clusters": data.cluster_names()}
            )
        case [c, "consumer"]:
            if c not in data.cluster_names():
                return error(404, "cluster not found")
            return answer(
                {"error": False, "message": "consumer list returned", "consumers": consumers(data, c)}
            )
        case [c, "consumer", g, ("status" | "lag") as which] if g:
            try:
                status = read_status(data, c, g)
            except DocumentError as e:
                return error(500, f"the stored document of group {g!r} cannot be read: {e}")
            if status is None:
                body = {
                    "error": False,
                    "message": "consumer status returned",
                    "status": not_found_status(c, g),
                }
                return answer(body, 404)
            if which == "status":
                status = {**status, "partitions": [p for p in status["partitions"] if p["status"] != "OK"]}
            return answer({"error": False, "message": "consumer status returned", "status": status})
    # Burrow's catch-all for a URL it does not serve
    return json_response({"error": True, "message": "invalid request type", "result": {}}, 404)


def register(server: Flask, data: DashboardData) -> None:
    def view(**_: Any) -> Response:
        if request.method not in ("GET", "HEAD"):
            resp = error(405, f"{request.method} is not allowed: groupscope's Burrow endpoints are read-only")
            resp.headers["Allow"] = "GET, HEAD"
            return resp
        try:
            return route(data, raw_segments(PREFIX) or [])
        except Unavailable as e:
            return error(503, str(e))

    def admin() -> Response:
        return Response("GOOD", 200, mimetype="text/plain")

    for rule in ("/v3/kafka", "/v3/kafka/", "/v3/kafka/<path:_rest>"):
        server.add_url_rule(rule, endpoint=f"groupscope_burrow:{rule}", view_func=view, methods=ALL_METHODS)
    server.add_url_rule("/burrow/admin", endpoint="groupscope_burrow:admin", view_func=admin)
