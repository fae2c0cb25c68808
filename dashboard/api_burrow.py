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
    GET /v3/config                                     {"general", "logging", "zookeeper", "httpserver"}
    GET /v3/config/{storage|evaluator|cluster|consumer|notifier}         {"modules": [...]}
    GET /v3/config/{storage|evaluator|consumer|notifier}/{name}         {"module": its settings}
    GET /v3/config/cluster/{cluster}                   what GET /v3/kafka/{cluster} answers
    GET /v3/admin/loglevel                             {"level": this process's logging level}
    POST /v3/admin/loglevel {"level": "debug"}         sets it, for this process

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

Burrow's configuration and admin endpoints (core/internal/httpserver/config.go, coordinator.go:
getLogLevel, setLogLevel) answer with the structs of structs.go as Burrow marshals them today (v1.3.5
on: `group-allowlist`, not the older `group-whitelist`; the http and email notifiers with `extra-ca`
and `noverify`). Their values are what this dashboard process really has, Burrow's zero value where
groupscope has nothing of the kind, never a secret:
- configMain: no pid file, log file or CORS header (gunicorn logs to stderr, dashboard/serve.py), no
  ZooKeeper; the logging level the one this process's logging runs at (the root logger's: the
  dashboard's records come from `groupscope.*` and `collectors.*` loggers alike, as Burrow's one zap
  level governs all of Burrow's); one HTTP server, `default`, at dashboard_host:dashboard_port with
  gunicorn's worker timeout (collectors.endpoints.DASHBOARD_TIMEOUT_S) and no TLS;
- storage `default`: groupscope's Redis (class `redis`), `intervals` the lag window's slots (WINDOW),
  `min-distance` its MIN_DISTANCE_MS in seconds, `expire-group` the retention (retention_s), which
  drops a group gone Empty or Dead, as Burrow's drops a group that stopped committing;
- evaluator `default`: groupscope's own evaluation of Burrow's rules (class `groupscope`, docs/api.md
  says where the rules differ); `expire-cache` 0: a group's status is evaluated from its window at
  every read (collectors/storage/group_parts.py), not kept;
- consumer modules: one per cluster, named as it, of Burrow's `kafka` class (groupscope reads the
  group coordinator's offsets topic as that class does, from its earliest offset: `start-latest`
  false), its servers and client profile the cluster module's, its offsets topic the configured one;
- notifiers: alerting's own (the alerts configuration's `notifiers`, collectors/alerts/notifiers.py),
  each as the Burrow class that sends what it sends: webhook and alertmanager as `http` (a JSON POST;
  Alertmanager's at its /api/v2/alerts), slack as `slack`, email as `email` (`null` for a kind none
  fits). URLs are redacted (collectors/redact.py); headers, passwords and bearer tokens never said.
POST /v3/admin/loglevel changes this process's level (a gunicorn worker's, of the several serve.py
starts); a cross-site browser request to it (an Origin or Sec-Fetch-Site that says so) is refused,
as the basic authentication a browser replays by itself would otherwise let any page change it.
"""

from __future__ import annotations

import json
import logging
import math
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, request

from collectors.alerts.alertmanager import API_PATH as ALERTMANAGER_PATH
from collectors.config import Settings
from collectors.endpoints import DASHBOARD_TIMEOUT_S
from collectors.redact import redact
from collectors.storage.clusters import ClusterInfo
from collectors.storage.group_offsets import GroupOffsets
from collectors.storage.topics import TopicView
from coordinator_model.alert_rules import AlertConfig
from coordinator_model.alert_rules.config import GroupPattern
from coordinator_model.document.types import DocumentError, GroupDocument, MemberDoc
from coordinator_model.offsets import OffsetStore
from coordinator_model.offsets.lag import MIN_DISTANCE_MS, WINDOW, CommitSample
from dashboard.api import ALL_METHODS, PARTITION_FIELDS, guarded, json_response, raw_segments
from dashboard.data import DashboardData, Unavailable

PREFIX = ("v3", "kafka")
CONFIG_PREFIX = ("v3", "config")
ADMIN_PREFIX = ("v3", "admin")

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


def servers_of(info: ClusterInfo) -> list[str]:
    """The bootstrap servers its collector registered, as Burrow's list; redacted, as a server
    written as a URL may carry a user and password."""
    return [redact(s.strip()) for s in (info.bootstrap_servers or "").split(",") if s.strip()]


def cluster_module(info: ClusterInfo) -> dict[str, Any]:
    """The cluster as Burrow's kafka cluster module (httpResponseConfigModuleCluster)."""
    return {
        "class-name": "kafka",
        "servers": servers_of(info),
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
    types = guarded(data, lambda: store.r.hgetall(store.fleet_types_key))
    names = []
    for k, v in types.items():
        name = k.decode(errors="replace") if isinstance(k, bytes) else str(k)
        kind = v.decode(errors="replace") if isinstance(v, bytes) else str(v)
        if kind not in NOT_BURROWS:
            names.append(name)
    return sorted(names)


def unreadable(group: str, e: DocumentError) -> Response:
    return error(500, f"the stored document of group {group!r} cannot be read: {e}")


# ---- Burrow's configuration: what this dashboard process really has ------------------------------
STORAGE_MODULE = "default"
EVALUATOR_MODULE = "default"
HTTP_SERVER = "default"
# Burrow's notifier `threshold`, the least group status it notifies (2 WARN, 3 ERR), from a
# groupscope notifier's min_severity: the lag rule says WARN as a warning and ERR, STOP and STALL as
# critical; no groupscope alert is about an OK group, so `info` notifies from WARN too.
THRESHOLD = {"info": 2, "warning": 2, "critical": 3}
# Regular-expression characters escaped when an exact group name joins Burrow's allowlist: only
# these, as Go's RE2 refuses an escaped letter or blank that Python's re.escape may write.
REGEX_SPECIAL = set(r"\.+*?()|[]{}^$")


def zap_level(level: int) -> str:
    """A Python logging level as the zap level Burrow names (zapcore.Level.String)."""
    for at_most, name in (
        (logging.DEBUG, "debug"),
        (logging.INFO, "info"),
        (logging.WARNING, "warn"),
        (logging.ERROR, "error"),
    ):
        if level <= at_most:
            return name
    return "fatal"


# The levels setLogLevel accepts (case aside), as the Python level each one sets.
LOG_LEVELS = {
    "debug": logging.DEBUG,
    "trace": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "fatal": logging.CRITICAL,
}


def process_logger() -> logging.Logger:
    """The logger whose level is this process's: the root, which every logger of the dashboard
    (`groupscope.*` and `collectors.*` alike) inherits its level from, none setting its own."""
    return logging.getLogger()


def http_address(settings: Settings) -> str:
    """The address the dashboard listens on, as Burrow writes one (host:port, IPv6 bracketed)."""
    host = settings.dashboard_host
    return f"[{host}]:{settings.dashboard_port}" if ":" in host else f"{host}:{settings.dashboard_port}"


def config_main(settings: Settings) -> dict[str, Any]:
    """Burrow's httpResponseConfigMain, without error, message and request."""
    return {
        # gunicorn writes no pid file, logs to stderr (dashboard/serve.py); the dashboard sets no CORS
        "general": {"pidfile": "", "stdout-logfile": "", "access-control-allow-origin": ""},
        "logging": {
            "filename": "",
            "max-size": 0,
            "max-backups": 0,
            "max-age": 0,
            "use-local-time": False,
            "use-compression": False,
            "level": zap_level(process_logger().getEffectiveLevel()),
        },
        "zookeeper": {"servers": [], "timeout": 0, "root-path": ""},  # groupscope needs no ZooKeeper
        "httpserver": {
            HTTP_SERVER: {"address": http_address(settings), "tls": "", "timeout": DASHBOARD_TIMEOUT_S}
        },
    }


def storage_module(settings: Settings) -> dict[str, Any]:
    """groupscope's Redis as Burrow's storage module (httpResponseConfigModuleStorage)."""
    return {
        "class-name": "redis",
        "intervals": WINDOW,
        "min-distance": MIN_DISTANCE_MS // 1000,
        "group-allowlist": "",  # the collector keeps every group
        "expire-group": settings.retention_s,
    }


def evaluator_module() -> dict[str, Any]:
    """groupscope's evaluation as Burrow's evaluator module (httpResponseConfigModuleEvaluator)."""
    return {"class-name": "groupscope", "expire-cache": 0}


def offsets_topic(settings: Settings, cluster: str) -> str:
    """The offsets topic configured for the cluster (its own, else the top-level one)."""
    own = settings.clusters.get(cluster)
    return (own.offsets_topic if own is not None else None) or settings.offsets_topic


def consumer_module(info: ClusterInfo, settings: Settings) -> dict[str, Any]:
    """The cluster's collector as Burrow's consumer module (httpResponseConfigModuleConsumer)."""
    return {
        "class-name": "kafka",
        "cluster": info.name,
        "servers": servers_of(info),
        "group-allowlist": "",
        "zookeeper-path": "",
        "zookeeper-timeout": 0,
        "client-profile": dict(CLIENT_PROFILE),
        "offsets-topic": offsets_topic(settings, info.name),
        "start-latest": False,
    }


def go_literal(text: str) -> str:
    return "".join(f"\\{c}" if c in REGEX_SPECIAL else c for c in text)


def allowlist(patterns: Iterable[GroupPattern]) -> str:
    """The alerts' group allow list as Burrow's one regular expression ("" lets every group in): an
    exact name anchored, a `re:` pattern as it is (both searched, as Burrow's MatchString does)."""
    parts = [f"^{go_literal(p.exact)}$" if p.exact is not None else f"(?:{p.text[3:]})" for p in patterns]
    return "|".join(parts)


def notifier_common(spec: Mapping[str, Any], cfg: AlertConfig, settings: Settings) -> dict[str, Any]:
    """The fields every Burrow notifier module has. groupscope's worker evaluates every
    alerts_interval_s and sends an alert once when it fires and once when it resolves (Alertmanager's
    again every resend_s while it fires: its `interval`)."""
    sends_close = "resolved" in (spec.get("events") or ("firing", "resolved")) and bool(
        cfg.notify.get("resolved", True)
    )
    interval = settings.alerts_interval_s
    if spec.get("type") == "alertmanager":
        interval = spec.get("resend_s") or 60  # the default of collectors/alerts/alertmanager.py's build
    return {
        "class-name": "null",
        "group-allowlist": allowlist(cfg.allow),
        "interval": math.ceil(interval),
        "threshold": THRESHOLD.get(str(spec.get("min_severity", "info")), 2),
        "template-open": "",  # groupscope's messages are built in, not templates
        "template-close": "",
        "extra": {},
        "send-close": sends_close,
    }


def http_notifier(spec: Mapping[str, Any], common: dict[str, Any], timeout: int) -> dict[str, Any]:
    """A webhook or Alertmanager notifier as Burrow's http one: a JSON POST to its (redacted) URL,
    for an alert firing and for one resolved; never its headers, user, password or bearer token."""
    url = str(spec["url"])
    if spec.get("type") == "alertmanager":
        url = url.rstrip("/") + ALERTMANAGER_PATH
        # its static labels go with every alert, as Burrow's extras with every message
        common["extra"] = {str(k): redact(str(v)) for k, v in (spec.get("labels") or {}).items()}
    shown = redact(url)
    verify = spec.get("verify_tls", True)
    return {
        **common,
        "class-name": "http",
        "timeout": timeout,
        "keepalive": 0,  # a connection per request (urllib)
        "url-open": shown,
        "url-close": shown if common["send-close"] else "",
        "method-open": "POST",
        "method-close": "POST" if common["send-close"] else "",
        "extra-ca": str(spec.get("ca_file") or ""),
        "noverify": "true" if verify is False else "",
    }


def slack_notifier(spec: Mapping[str, Any], common: dict[str, Any], timeout: int) -> dict[str, Any]:
    """A slack notifier as Burrow's (which names no URL either: its webhook is the secret)."""
    return {
        **common,
        "class-name": "slack",
        "timeout": timeout,
        "keepalive": 0,
        "channel": str(spec.get("channel") or ""),
        "username": str(spec.get("username") or "groupscope"),
        "icon-url": "",
        "icon-emoji": "",
    }


def email_notifier(spec: Mapping[str, Any], common: dict[str, Any]) -> dict[str, Any]:
    """An email notifier as Burrow's: its server, sender and recipients, the user it logs in as
    (smtplib negotiates the mechanism), never the password."""
    to = spec.get("to") or ()
    return {
        **common,
        "class-name": "email",
        "server": str(spec.get("host") or ""),
        "port": int(spec.get("port", 25)),
        "auth-type": "plain" if spec.get("username") else "",
        "username": str(spec.get("username") or ""),
        "from": str(spec.get("from") or "groupscope@localhost"),
        "to": to if isinstance(to, str) else ",".join(map(str, to)),
        "extra-ca": "",
        "noverify": "",
    }


def notifier_module(spec: Mapping[str, Any], cfg: AlertConfig, settings: Settings) -> dict[str, Any]:
    """One of alerting's notifiers as the Burrow notifier module of the class that fits it."""
    common = notifier_common(spec, cfg, settings)
    timeout = math.ceil(float(spec.get("timeout_s", cfg.notify.get("timeout_s", 5.0))))
    kind = spec.get("type")
    if kind in ("webhook", "alertmanager"):
        return http_notifier(spec, common, timeout)
    if kind == "slack":
        return slack_notifier(spec, common, timeout)
    if kind == "email":
        return email_notifier(spec, common)
    return common  # Burrow's null notifier: a kind no Burrow class sends as


def notifiers(cfg: AlertConfig) -> dict[str, Mapping[str, Any]]:
    """Alerting's notifiers by name (the first of a repeated name, as one module answers)."""
    found: dict[str, Mapping[str, Any]] = {}
    for spec in cfg.notifiers:
        found.setdefault(str(spec["name"]), spec)
    return found


def module_list(coordinator: str, names: Iterable[str]) -> Response:
    body = {"error": False, "message": "module list returned", "coordinator": coordinator}
    return answer({**body, "modules": list(names)})


def module_detail(coordinator: str, module: dict[str, Any] | None) -> Response:
    """Burrow's httpResponseConfigModuleDetail, or its 404 for a module it does not have."""
    if module is None:
        return error(404, f"{coordinator} module not found")
    return answer({"error": False, "message": f"{coordinator} module detail returned", "module": module})


def route_config(data: DashboardData, settings: Settings, seg: list[str]) -> Response:
    match seg:
        case []:
            return answer({"error": False, "message": "main config returned", **config_main(settings)})
        case ["storage"]:
            return module_list("storage", [STORAGE_MODULE])
        case ["storage", name]:
            return module_detail("storage", storage_module(settings) if name == STORAGE_MODULE else None)
        case ["evaluator"]:
            return module_list("evaluator", [EVALUATOR_MODULE])
        case ["evaluator", name]:
            return module_detail("evaluator", evaluator_module() if name == EVALUATOR_MODULE else None)
        case ["cluster"]:
            return module_list("cluster", data.cluster_names())
        case ["cluster", c] if c:
            return route(data, [c])  # Burrow's handleClusterDetail, as GET /v3/kafka/{cluster}
        case ["consumer"]:
            return module_list("consumer", data.cluster_names())
        case ["consumer", name]:
            info = cluster_info(data, name)
            return module_detail("consumer", consumer_module(info, settings) if info is not None else None)
        case ["notifier"]:
            return module_list("notifier", sorted(notifiers(data.alert_config)))
        case ["notifier", name]:
            spec = notifiers(data.alert_config).get(name)
            module = notifier_module(spec, data.alert_config, settings) if spec is not None else None
            return module_detail("notifier", module)
    return catch_all()


# ---- Burrow's admin endpoint: this process's logging level ---------------------------------------
class BadBody(ValueError):
    """A body Go's json.Decoder would not decode into Burrow's logLevelRequest."""


def requested_level(body: bytes) -> str:
    """The `level` of a POST body, read as Burrow's json.Decoder reads it into logLevelRequest: the
    first JSON value only (what follows is not read), an object or null, its key matched case aside
    (the last such key winning), a string or null; "" when there is none. BadBody otherwise."""
    text = body.decode("utf-8", errors="replace").lstrip()
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except ValueError as e:
        raise BadBody(str(e)) from e
    if value is None:
        return ""
    if not isinstance(value, dict):
        raise BadBody("not an object")
    level: Any = None
    for k, v in value.items():
        if k.lower() == "level":
            level = v
    if level is not None and not isinstance(level, str):
        raise BadBody("level is not a string")
    return level or ""


def cross_site() -> bool:
    """Whether a browser sent the request from another site's page (its Origin names another host,
    or Sec-Fetch-Site says so); a script (curl, Burrow's clients) sends neither."""
    origin = request.headers.get("Origin")
    if origin is not None:
        return urlsplit(origin).netloc != request.host
    return request.headers.get("Sec-Fetch-Site") == "cross-site"


def get_log_level() -> Response:
    level = zap_level(process_logger().getEffectiveLevel())
    return answer({"error": False, "message": "log level returned", "level": level})


def set_log_level() -> Response:
    if cross_site():
        return error(403, "cross-site request refused: set the log level from a script, not a page")
    try:
        asked = requested_level(request.get_data(cache=False))
    except BadBody:
        return error(400, "could not decode message body")
    level = LOG_LEVELS.get(asked.lower())
    if level is None:
        return error(404, "unknown log level")
    process_logger().setLevel(level)
    return answer({"error": False, "message": "set log level"})


def route_admin(seg: list[str]) -> Response:
    if seg != ["loglevel"]:
        return catch_all()
    if request.method in ("GET", "HEAD"):
        return get_log_level()
    if request.method == "POST":
        return set_log_level()
    return not_allowed("GET, HEAD, POST", f"{request.method} is not allowed on /v3/admin/loglevel")


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
    return catch_all()


def catch_all() -> Response:
    """Burrow's catch-all for a URL it does not serve."""
    return json_response({"error": True, "message": "invalid request type", "result": {}}, 404)


def not_allowed(allow: str, message: str) -> Response:
    resp = error(405, message)
    resp.headers["Allow"] = allow
    return resp


def read_only(serve: Callable[[], Response]) -> Callable[..., Response]:
    """A view answering GET and HEAD with `serve`, any other method with a 405 (groupscope never
    writes: Burrow's DELETE of a consumer group is refused too), Redis unreachable with a 503."""

    def view(**_: Any) -> Response:
        if request.method not in ("GET", "HEAD"):
            message = f"{request.method} is not allowed: groupscope's Burrow endpoints are read-only"
            return not_allowed("GET, HEAD", message)
        try:
            return serve()
        except Unavailable as e:
            return error(503, str(e))

    return view


def register(server: Flask, data: DashboardData, settings: Settings | None = None) -> None:
    """Mount Burrow's endpoints on the dashboard's Flask server, behind its authentication (a
    before_request hook of the server, dashboard.app.add_basic_auth). `settings`: the dashboard's
    (its address, retention, offsets topics and alerting interval, said by /v3/config)."""
    conf = settings if settings is not None else Settings()
    kafka = read_only(lambda: route(data, raw_segments(PREFIX) or []))
    config = read_only(lambda: route_config(data, conf, raw_segments(CONFIG_PREFIX) or []))

    def admin_view(**_: Any) -> Response:
        return route_admin(raw_segments(ADMIN_PREFIX) or [])

    def admin() -> Response:
        return Response("GOOD", 200, mimetype="text/plain")

    for base, view in (("/v3/kafka", kafka), ("/v3/config", config), ("/v3/admin", admin_view)):
        for rule in (base, f"{base}/", f"{base}/<path:_rest>"):
            server.add_url_rule(
                rule, endpoint=f"groupscope_burrow:{rule}", view_func=view, methods=ALL_METHODS
            )
    server.add_url_rule("/burrow/admin", endpoint="groupscope_burrow:admin", view_func=admin)
