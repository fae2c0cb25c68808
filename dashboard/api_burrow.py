"""Burrow's read-only HTTP API v3 (linkedin/Burrow), answered as Burrow answers it, so the
dashboards, exporters and scripts people run against Burrow work against groupscope unchanged:

    GET /burrow/admin                                  Burrow's health check: "GOOD"
    GET /v3/kafka                                      {"clusters": [...]}
    GET /v3/kafka/{cluster}                            {"module": the cluster module's settings}
    GET /v3/kafka/{cluster}/topic                      {"topics": [...]}
    GET /v3/kafka/{cluster}/topic/{topic}              {"offsets": log-end offset per partition}
    GET /v3/kafka/{cluster}/topic/{topic}/consumers    {"consumers": [...]}
    GET /v3/kafka/{cluster}/consumer                   {"consumers": [...]}
    GET /v3/kafka/{cluster}/consumer/{group}           {"topics": the group's offset rings}
    GET /v3/kafka/{cluster}/consumer/{group}/status    the group's status, its partitions not OK
    GET /v3/kafka/{cluster}/consumer/{group}/lag       the same with every partition

The status is groupscope's own evaluation of Burrow's rules (coordinator_model/offsets/lag.py, over
the same window of 10 commit slots), read from the group's document (its `lag` section) and the
partitions' windows in the group's offsets hash; docs/api.md, "Burrow's rules vs ours", says where
the two evaluations differ and what each groupscope partition status is said as here.

Shapes and messages are Burrow's, file by file (github.com/linkedin/Burrow):
- every answer carries `error`, `message` and `request` {url, host}, an error is httpResponseError
  (core/internal/httpserver/structs.go, coordinator.go: makeRequestInfo, writeErrorResponse), a URL
  it does not serve its defaultHandler's catch-all (coordinator.go);
- the cluster list, cluster detail, topic list, topic detail, topic consumers, consumer list and
  consumer detail: the handlers of core/internal/httpserver/kafka.go (their messages and 404s) and
  their structs in structs.go (httpResponseConfigModuleCluster, httpResponseClientProfile, ...);
  what the storage module answers to each, core/internal/storage/inmemory.go (fetchTopic,
  fetchConsumer, getConsumerTopicList, fetchConsumersForTopicList);
- the consumer detail's partitions and offsets: ConsumerPartition and ConsumerOffset of
  core/protocol/storage.go; the status: ConsumerGroupStatus and PartitionStatus of
  core/protocol/evaluator.go.
An unknown cluster or group on /status and /lag is a 404 carrying a NOTFOUND status, as Burrow's
evaluator answers it; every other unknown name is a 404 with Burrow's message for it.

What groupscope knows is not all Burrow knows, so some values are groupscope's nearest:
- a topic is one some group of the cluster reads (the topic index, collectors/storage/topics.py),
  not every topic of the brokers' metadata; its log-end offsets are the newest any of its groups'
  documents holds (a partition no group has a log end for is null, where Burrow has its broker's);
- a group's partitions of a topic run to the highest one it commits to or owns (Burrow's, to the
  topic's partition count), one it neither commits to nor owns listed as Burrow lists such a one;
- the cluster module's `servers` are the bootstrap servers its collector registered
  (collectors/storage/clusters.py, ClusterRegistry; [] when none did), its refresh intervals the
  collector's default Admin API poll (MODULE_REFRESH_S), its client profile CLIENT_PROFILE.
"""

from __future__ import annotations

import math
import socket
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, request

from collectors.config import Settings
from collectors.storage.clusters import ClusterInfo
from collectors.storage.group_offsets import GroupOffsets
from collectors.storage.topics import TopicView
from coordinator_model.document.types import DocumentError, GroupDocument, MemberDoc
from coordinator_model.offsets import OffsetStore
from coordinator_model.offsets.lag import WINDOW, CommitSample
from dashboard.api import ALL_METHODS, PARTITION_FIELDS, guarded, json_response, raw_segments
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

# The cluster module's settings Burrow reads from its configuration and groupscope has none of.
# topic-refresh and offset-refresh (seconds): groupscope's collector lists groups and fetches log-end
# offsets at every full Admin API poll, whose default this is (the dashboard does not know the
# interval a collector was started with).
MODULE_REFRESH_S = math.ceil(Settings.model_fields["admin_poll_interval_s"].default)
# Burrow's client profile (httpResponseClientProfile): the client id groupscope's Kafka connections
# give by default (collectors/kafka_protocol/connection.py); no Kafka version (groupscope negotiates
# each request's version with the broker); TLS and SASL profiles never said (null, as Burrow says a
# profile without them).
CLIENT_PROFILE = {"name": "", "client-id": "groupscope", "kafka-version": "", "tls": None, "sasl": None}


def request_info() -> dict[str, str]:
    """Burrow's `request`: the URL path asked for and the answering host's name."""
    return {"url": request.path, "host": socket.gethostname()}


def answer(body: dict[str, Any], status: int = 200) -> Response:
    return json_response({**body, "request": request_info()}, status)


def error(status: int, message: str) -> Response:
    """Burrow's httpResponseError."""
    return answer({"error": True, "message": message}, status)


# ---- the cluster and its topics ------------------------------------------------------------------
def cluster_info(data: DashboardData, cluster: str) -> ClusterInfo | None:
    return next((c for c in data.clusters() if c.name == cluster), None)


def cluster_module(info: ClusterInfo) -> dict[str, Any]:
    """The cluster as Burrow's kafka cluster module (httpResponseConfigModuleCluster)."""
    servers = [s.strip() for s in (info.bootstrap_servers or "").split(",") if s.strip()]
    return {
        "class-name": "kafka",
        "servers": servers,
        "client-profile": dict(CLIENT_PROFILE),
        "topic-refresh": MODULE_REFRESH_S,
        "offset-refresh": MODULE_REFRESH_S,
    }


def topics(data: DashboardData, cluster: str) -> list[str]:
    """The cluster's topics (those its groups read: the topics page's), by name."""
    total, _ = data.list_topics(cluster, limit=0)
    _, rows = data.list_topics(cluster, limit=total)
    return [r.name for _, r in rows]


def log_ends(view: TopicView) -> list[int | None]:
    """The topic's log-end offset per partition, indexed by partition number: the newest (highest)
    any group's partition row holds, null for a partition none has one for."""
    ends: dict[int, int] = {}
    for rows in view.partitions.values():
        for row in rows:
            r = dict(zip(PARTITION_FIELDS, row, strict=False))
            p, end = r.get("partition"), r.get("end_offset")
            if isinstance(p, int) and p >= 0 and isinstance(end, int):
                ends[p] = max(end, ends.get(p, end))
    count = max([view.row.partitions, *(p + 1 for p in ends)])
    return [ends.get(p) for p in range(count)]


def topic_consumers(view: TopicView | None) -> list[str]:
    """The groups reading the topic Burrow would list (not share groups), by name."""
    rows = view.groups if view is not None else []
    return sorted(str(g["group"]) for g in rows if g.get("type") not in NOT_BURROWS)


# ---- a group's partitions ------------------------------------------------------------------------
def burrow_offset(s: CommitSample) -> dict[str, Any]:
    """A window slot as Burrow's ConsumerOffset: the commit's offset, its time (Burrow's `timestamp`,
    the time its STOP rule reads; groupscope's sample time), when it was observed, and the lag at
    that commit (null when the log end was not known then)."""
    return {"offset": s.offset, "timestamp": s.ts, "observedAt": s.ts, "lag": s.lag}


def window_slots(
    p: Any, doc: GroupDocument, store: OffsetStore, commit_ts: Mapping[tuple[str, int], int | None]
) -> list[dict[str, Any]]:
    """The partition's window as Burrow's ConsumerOffsets, oldest first: its slots in the group's
    offsets hash; for a document stored whole (a replay, an older collector), which keeps no window
    in Redis, the one commit it knows; none for a partition owned and never committed."""
    window = store.windows.get((p.topic, p.partition))
    if window is not None and window.samples:
        return [burrow_offset(s) for s in window.samples]
    if p.has_commit and p.committed is not None:
        ts = commit_ts.get((p.topic, p.partition)) or doc.as_of or 0
        return [{"offset": p.committed, "timestamp": ts, "observedAt": ts, "lag": p.lag}]
    return []


def owner(p: Any, members: Mapping[str, MemberDoc]) -> tuple[str, str]:
    """Burrow's `owner` (the owning member's client host) and `client_id`; "" when none owns it."""
    member = members.get(p.member_id) if p.member_id else None
    return (member.client_host if member else None) or "", (member.client_id if member else None) or ""


def current_lag(p: Any) -> int:
    """Burrow's current lag: log end minus committed, 0 when it is not known."""
    return max(0, int(p.lag or 0))


def commit_times(doc: GroupDocument) -> dict[tuple[str, int], int | None]:
    return {(o.topic, o.partition): o.commit_timestamp for o in doc.offsets}


def partition_status(
    p: Any,
    doc: GroupDocument,
    store: OffsetStore,
    commit_ts: Mapping[tuple[str, int], int | None],
    members: Mapping[str, MemberDoc],
) -> dict[str, Any]:
    """One partition of the group's lag section as Burrow's PartitionStatus."""
    slots = window_slots(p, doc, store, commit_ts)
    # owned, never committed: Burrow lists such a partition (it knows its owner) with no offsets
    start, end = (slots[0], slots[-1]) if slots else (None, None)
    status = "OK" if p.status in AS_OK else str(p.status)
    if status not in RANK:
        status = "OK"
    host, client_id = owner(p, members)
    return {
        "topic": p.topic,
        "partition": p.partition,
        "owner": host,
        "client_id": client_id,
        "status": status,
        "start": start,
        "end": end,
        "current_lag": current_lag(p),
        "complete": min(1.0, len(slots) / WINDOW),
    }


def group_status(cluster: str, doc: GroupDocument, store: OffsetStore) -> dict[str, Any]:
    """Burrow's ConsumerGroupStatus of a group, every partition in (what /lag answers)."""
    commit_ts = commit_times(doc)
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


def unseen_partition() -> dict[str, Any]:
    """A partition of a topic the group reads that it neither commits to nor owns, as Burrow's
    storage lists one (a ConsumerPartition with no offset ring)."""
    return {"offsets": [], "owner": "", "client_id": "", "current-lag": 0}


def consumer_detail(doc: GroupDocument, store: OffsetStore) -> dict[str, list[dict[str, Any]]]:
    """Burrow's ConsumerTopics of a group: per topic, its partitions indexed by number, each with its
    ring of WINDOW offsets oldest first, the slots not filled yet null and first (as Burrow's ring
    reads from its oldest slot), its owner and current lag."""
    commit_ts = commit_times(doc)
    members = doc.member_by_id()
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for p in doc.lag.partitions:
        slots = window_slots(p, doc, store, commit_ts)[-WINDOW:]
        host, client_id = owner(p, members)
        found.setdefault(p.topic, {})[p.partition] = {
            "offsets": [None] * (WINDOW - len(slots)) + slots,
            "owner": host,
            "client_id": client_id,
            "current-lag": current_lag(p),
        }
    return {
        topic: [parts.get(n) or unseen_partition() for n in range(max(parts) + 1)]
        for topic, parts in sorted(found.items())
    }


# ---- reads ---------------------------------------------------------------------------------------
def read_group(data: DashboardData, cluster: str, group: str) -> tuple[GroupDocument, OffsetStore] | None:
    """The group's document and its partitions' windows, or None when Burrow would not know it (no
    such cluster or group, or a share group)."""
    if cluster not in data.cluster_names():
        return None
    doc = data.group(group, cluster)
    if doc is None or doc.type in NOT_BURROWS:
        return None
    store = data.store_for(cluster)
    offsets: GroupOffsets = store.offsets
    windows = guarded(data, lambda: offsets.load([group]))[group]
    return doc, windows


def read_status(data: DashboardData, cluster: str, group: str) -> dict[str, Any] | None:
    """The group's full status, or None when Burrow would not know it (read_group)."""
    found = read_group(data, cluster, group)
    return None if found is None else group_status(cluster, *found)


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


def unreadable(group: str, e: DocumentError) -> Response:
    return error(500, f"the stored document of group {group!r} cannot be read: {e}")


# ---- routing -------------------------------------------------------------------------------------
def route(data: DashboardData, seg: list[str]) -> Response:
    match seg:
        case []:
            return answer(
                {"error": False, "message": "cluster list returned", "clusters": data.cluster_names()}
            )
        case [c] if c:
            info = cluster_info(data, c)
            if info is None:
                return error(404, "cluster module not found")
            body = {
                "error": False,
                "message": "cluster module detail returned",
                "module": cluster_module(info),
            }
            return answer(body)
        case [c, "topic"]:
            if c not in data.cluster_names():
                return error(404, "cluster not found")
            return answer({"error": False, "message": "topic list returned", "topics": topics(data, c)})
        case [c, "topic", t] if t:
            view = data.topic(t, c) if c in data.cluster_names() else None
            if view is None:
                return error(404, "cluster or topic not found")
            return answer({"error": False, "message": "topic offsets returned", "offsets": log_ends(view)})
        case [c, "topic", t, "consumers"] if t:
            # Burrow answers a topic no group reads with no consumers, not a 404
            if c not in data.cluster_names():
                return error(404, "cluster not found")
            body = {
                "error": False,
                "message": "consumers of topic returned",
                "consumers": topic_consumers(data.topic(t, c)),
            }
            return answer(body)
        case [c, "consumer"]:
            if c not in data.cluster_names():
                return error(404, "cluster not found")
            return answer(
                {"error": False, "message": "consumer list returned", "consumers": consumers(data, c)}
            )
        case [c, "consumer", g] if g:
            try:
                found = read_group(data, c, g)
            except DocumentError as e:
                return unreadable(g, e)
            if found is None:
                return error(404, "cluster or consumer not found")
            return answer(
                {"error": False, "message": "consumer detail returned", "topics": consumer_detail(*found)}
            )
        case [c, "consumer", g, ("status" | "lag") as which] if g:
            try:
                status = read_status(data, c, g)
            except DocumentError as e:
                return unreadable(g, e)
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
