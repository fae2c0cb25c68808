"""The OpenAPI 3.1 document of the dashboard's HTTP API (dashboard/api.py) and of its Burrow
endpoints (dashboard/api_burrow.py), served at /api/v1/openapi.json.

Its schemas list every field each answer carries (tests/test_api_openapi.py checks the real answers
against them: required fields, types, and no field the document does not name), so a field added to
an answer without a word here fails a test."""

from __future__ import annotations

from typing import Any

from collectors.storage.fleet_rows import KNOWN_STATES
from collectors.storage.topics import TOPIC_SORT_KEYS
from dashboard.data import GRID_SORT

Schema = dict[str, Any]

INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
STR: Schema = {"type": "string"}
BOOL: Schema = {"type": "boolean"}


def nullable(s: Schema) -> Schema:
    if "$ref" in s:
        return {"anyOf": [s, {"type": "null"}]}
    return {**s, "type": [s["type"], "null"]}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def obj(props: dict[str, Schema], optional: tuple[str, ...] = (), desc: str | None = None) -> Schema:
    """An object whose every property is required but the `optional` ones."""
    s: Schema = {
        "type": "object",
        "required": [k for k in props if k not in optional],
        "properties": props,
    }
    if desc:
        s["description"] = desc
    return s


def desc(s: Schema, text: str) -> Schema:
    return {**s, "description": text}


def burrow_answer(field: str, schema: Schema) -> Schema:
    """A Burrow answer: its `error` and `message`, the one field it carries, its `request`."""
    return obj({"error": BOOL, "message": STR, field: schema, "request": ref("BurrowRequest")})


TP: Schema = {
    "type": "array",
    "description": "A topic-partition: [topic, partition].",
    "prefixItems": [STR, INT],
    "minItems": 2,
    "maxItems": 2,
}
PARTITION_STATUSES = ["OK", "WARN", "STOP", "STALL", "REWIND", "NO_COMMIT", "UNKNOWN", None]
BURROW_PARTITION_STATUSES = ["OK", "WARN", "STOP", "STALL", "REWIND"]
BURROW_GROUP_STATUSES = ["NOTFOUND", "OK", "WARN", "ERR"]
BURROW_OWNER = desc(STR, "The owning member's client host ('' when none).")
PROVISIONAL = (
    "Present and true while the group is known only from the Admin API's first answers (state, members, "
    "committed offsets), before the pipeline's first document of it, which replaces it."
)


def schemas() -> dict[str, Schema]:
    refresh = desc(INT, "Seconds: the collector's default Admin API poll.")
    return {
        "Error": obj(
            {
                "error": desc(
                    STR, "bad_request, not_found, method_not_allowed, internal_error or unavailable"
                ),
                "message": desc(STR, "What was wrong, in words."),
                "status": desc(INT, "The HTTP status, again."),
            }
        ),
        "Index": obj({"version": STR, "openapi": STR, "endpoints": array(STR)}),
        "Cluster": obj(
            {
                "name": STR,
                "configured": desc(BOOL, "Named in the dashboard's configuration."),
                "bootstrap_servers": desc(nullable(STR), "As its collector last registered them."),
                "registered_ms": desc(nullable(INT), "When a collector last registered the cluster."),
                "groups": desc(INT, "Groups kept for the cluster."),
                "groups_by_state": {"type": "object", "additionalProperties": INT},
                "storms": desc(INT, "Groups with at least 10 rebalances in the last hour."),
                "lagging": desc(INT, "Groups more than 60 s behind."),
                "topics": desc(INT, "Topics its groups read."),
                "collector": desc(
                    {
                        **obj({"ts": INT, "age_s": nullable(NUM), "event_ms": nullable(INT)}),
                        "type": ["object", "null"],
                    },
                    "The collector's last heartbeat (null: none yet).",
                ),
                "sources": desc(
                    {"type": "object", "additionalProperties": {"type": "object"}},
                    "Each evidence source's status, as the collector last wrote it.",
                ),
            }
        ),
        "ClusterList": obj({"clusters": array(ref("Cluster"))}),
        "FleetRow": obj(
            {
                "cluster": STR,
                "name": STR,
                "type": nullable(STR),
                "state": STR,
                "members": INT,
                "generation": nullable(INT),
                "group_epoch": nullable(INT),
                "protocol": nullable(STR),
                "lag": desc(INT, "Offsets, summed over the partitions whose lag is known."),
                "lag_seconds": desc(NUM, "The worst partition's lag in seconds."),
                "rebalances_1h": INT,
                "last_change": desc(nullable(INT), "When the group last changed state (epoch ms)."),
                "last_refreshed": desc(INT, "When the collector last refreshed the group (epoch ms)."),
                "provisional": desc(BOOL, PROVISIONAL),
            },
            optional=("provisional",),
        ),
        "GroupPage": obj(
            {
                "cluster": STR,
                "total": desc(INT, "Groups matching the filters, over every page."),
                "offset": INT,
                "limit": INT,
                "sort": {"type": "string", "enum": list(GRID_SORT)},
                "order": {"type": "string", "enum": ["asc", "desc"]},
                "groups": array(ref("FleetRow")),
            }
        ),
        "Member": obj(
            {
                "member_id": STR,
                "group_instance_id": nullable(STR),
                "client_id": nullable(STR),
                "client_host": nullable(STR),
                "session_timeout_ms": nullable(INT),
                "rebalance_timeout_ms": nullable(INT),
                "subscription": array(STR),
                "assignment": array(TP),
                "last_heartbeat": nullable(INT),
                "member_epoch": nullable(INT),
                "state": nullable(STR),
                "pending_revocation": array(TP),
                "target_assignment": {"type": ["array", "null"], "items": TP},
                "tasks": ref("Tasks"),
                "target_tasks": nullable(ref("Tasks")),
                "process_id": nullable(STR),
            },
            optional=(
                "member_epoch",
                "state",
                "pending_revocation",
                "target_assignment",
                "tasks",
                "target_tasks",
                "process_id",
            ),
            desc="A member now. member_epoch to target_assignment: a KIP-848, KIP-932 or KIP-1071 member's "
            "only; tasks, target_tasks and process_id: a KIP-1071 streams group member's only.",
        ),
        "Tasks": obj(
            {"active": array(STR), "standby": array(STR), "warmup": array(STR)},
            desc='A streams member\'s tasks, each "<subtopology>_<partition>".',
        ),
        "Subtopology": obj(
            {
                "id": STR,
                "source_topics": array(STR),
                "repartition_source_topics": array(STR),
                "repartition_sink_topics": array(STR),
                "changelog_topics": array(STR),
            }
        ),
        "Topology": obj(
            {
                "epoch": nullable(INT),
                "subtopologies": {"type": ["array", "null"], "items": ref("Subtopology")},
            },
            desc="A streams group's topology; subtopologies null while it is not ready (NotReady).",
        ),
        "CommittedOffset": obj(
            {
                "topic": STR,
                "partition": INT,
                "offset": INT,
                "commit_timestamp": nullable(INT),
                "metadata": nullable(STR),
                "leader_epoch": nullable(INT),
            }
        ),
        "TimelineSpan": obj(
            {"state": STR, "start": INT, "end": nullable(INT), "inferred": BOOL},
            desc="The group was in `state` from `start` to `end` (null: still is), epoch ms.",
        ),
        "Generation": obj(
            {
                "generation": nullable(INT),
                "start": nullable(INT),
                "end": nullable(INT),
                "stabilized": nullable(INT),
                "stable": nullable(INT),
                "duration_ms": nullable(INT),
                "in_progress_ms": INT,
                "overdue": BOOL,
                "members": array(STR),
                "members_joined": array(STR),
                "members_left": array(STR),
                "assignment": {"type": "object", "additionalProperties": array(TP)},
                "protocol": nullable(STR),
                "leader": nullable(STR),
                "cause": nullable(STR),
                "reason": nullable(STR),
                "empty": BOOL,
                "inferred": array(STR),
                "member_id": nullable(STR),
                "gap_ms": nullable(INT),
                "clients": desc(
                    {"type": "object", "additionalProperties": ref("Client")},
                    "A KIP-848, share or streams epoch's: who each member it names (joined, left) was, "
                    "by member id, where known (kept after the member left).",
                ),
            },
            optional=("in_progress_ms", "overdue", "clients"),
            desc="A classic group's generation or a KIP-848/932 group's epoch.",
        ),
        "PartitionLag": obj(
            {
                "topic": STR,
                "partition": INT,
                "committed": nullable(INT),
                "has_commit": BOOL,
                "end_offset": nullable(INT),
                "lag": nullable(INT),
                "lag_seconds": nullable(NUM),
                "status": desc(
                    {"type": ["string", "null"], "enum": PARTITION_STATUSES},
                    "Burrow's evaluation (OK, WARN, STOP, STALL, REWIND), or NO_COMMIT / UNKNOWN.",
                ),
                "member_id": nullable(STR),
            }
        ),
        "MemberLag": obj({"member_id": STR, "lag": INT, "lag_seconds": NUM}),
        "Lag": obj(
            {
                "total": nullable(INT),
                "max_seconds": nullable(NUM),
                "status": desc(nullable(STR), "Burrow's group status: OK, WARN or ERR."),
                "partitions": array(ref("PartitionLag")),
                "members": array(ref("MemberLag")),
            }
        ),
        "Conflict": obj(
            {"kind": STR, "first": nullable(INT), "last": nullable(INT), "count": INT, "note": STR}
        ),
        "Denied": obj({"since": nullable(INT), "error": nullable(STR)}),
        "Client": obj({"client_id": nullable(STR), "client_host": nullable(STR)}),
        "Coordinator": obj(
            {"id": INT, "host": STR, "port": INT},
            desc="The group's coordinator broker, as the Admin API's last describe named it.",
        ),
        "GroupDocument": obj(
            {
                "group": STR,
                "type": {"type": "string", "enum": ["classic", "consumer", "share", "streams"]},
                "state": nullable(STR),
                "protocol_type": nullable(STR),
                "protocol": nullable(STR),
                "generation": nullable(INT),
                "group_epoch": nullable(INT),
                "assignment_epoch": nullable(INT),
                "leader": nullable(STR),
                "coordinator_partition": nullable(INT),
                "simple": BOOL,
                "members": array(ref("Member")),
                "offsets": array(ref("CommittedOffset")),
                "timeline": array(ref("TimelineSpan")),
                "generations": array(ref("Generation")),
                "lag": ref("Lag"),
                "sources": array(STR),
                "inferred": array(STR),
                "conflicts": array(ref("Conflict")),
                "denied": {"type": "object", "additionalProperties": ref("Denied")},
                "as_of": nullable(INT),
                "topology": ref("Topology"),
                "coordinator": ref("Coordinator"),
                "provisional": desc(BOOL, PROVISIONAL),
            },
            optional=("denied", "topology", "coordinator", "provisional"),
            desc="The JSON `groupscope group NAME --json` prints (docs/coordinator-model.md).",
        ),
        "GroupResponse": obj(
            {
                "cluster": STR,
                "document": ref("GroupDocument"),
                "last_refreshed": desc(nullable(INT), "When the collector last refreshed it (epoch ms)."),
                "tasks": desc(
                    array(ref("TaskLag")),
                    "A streams group's lag per active task, as its application reads it (the group "
                    "page's 'Lag per task'); [] for any other group, or a streams group with no topology.",
                ),
            }
        ),
        "TaskLag": obj(
            {
                "task": desc(STR, "The task id as Kafka prints it: <subtopology>_<partition>."),
                "member_id": desc(nullable(STR), "The member running it (null: no member holds it now)."),
                "client_id": nullable(STR),
                "partitions": desc(array(TP), "The topic-partitions it reads: source and repartition."),
                "lag": desc(nullable(INT), "The sum of their lags in offsets (null: none known)."),
                "lag_seconds": desc(nullable(NUM), "The worst of their lags in seconds."),
            }
        ),
        "TimelineResponse": obj(
            {
                "cluster": STR,
                "group": STR,
                "since": nullable(INT),
                "until": nullable(INT),
                "timeline": array(ref("TimelineSpan")),
            }
        ),
        "GenerationsResponse": obj(
            {
                "cluster": STR,
                "group": STR,
                "since": nullable(INT),
                "until": nullable(INT),
                "generations": array(ref("Generation")),
            }
        ),
        "TopicRow": obj(
            {
                "name": STR,
                "partitions": INT,
                "end_offsets": INT,
                "groups": INT,
                "lag": desc(INT, "The worst group's lag on the topic, in offsets."),
                "lag_seconds": desc(NUM, "The worst partition's lag in seconds, over every group."),
                "rebalancing": desc(INT, "Groups reading the topic that are rebalancing now."),
            }
        ),
        "TopicPage": obj(
            {
                "cluster": STR,
                "total": INT,
                "offset": INT,
                "limit": INT,
                "sort": {"type": "string", "enum": list(TOPIC_SORT_KEYS)},
                "order": {"type": "string", "enum": ["asc", "desc"]},
                "topics": array(ref("TopicRow")),
            }
        ),
        "TopicGroup": obj(
            {
                "group": STR,
                "type": nullable(STR),
                "state": STR,
                "lag": INT,
                "lag_seconds": NUM,
                "partitions": INT,
                "topic_partitions": INT,
                "end_offsets": INT,
                "members": array(STR),
                "clients": array(STR),
                "rebalancing": BOOL,
            }
        ),
        "TopicPartition": obj(
            {
                "partition": INT,
                "committed": nullable(INT),
                "end_offset": nullable(INT),
                "lag": nullable(INT),
                "lag_seconds": nullable(NUM),
                "member_id": nullable(STR),
            }
        ),
        "TopicDetail": obj(
            {
                "cluster": STR,
                "topic": ref("TopicRow"),
                "groups": array(ref("TopicGroup")),
                "partitions": {
                    "type": "object",
                    "description": "Per group, its partitions of the topic.",
                    "additionalProperties": array(ref("TopicPartition")),
                },
            }
        ),
        "Alert": obj(
            {
                "id": STR,
                "cluster": STR,
                "group": STR,
                "rule": STR,
                "state": {"type": "string", "enum": ["firing"]},
                "severity": STR,
                "summary": STR,
                "since": INT,
                "until": nullable(INT),
                "updated": INT,
                "evidence": {"type": "object", "description": "The rule's evidence (docs/alerts.md)."},
            }
        ),
        "AlertList": obj({"count": INT, "alerts": array(ref("Alert"))}),
        # ---- Burrow (linkedin/Burrow core/protocol, core/internal/httpserver) ----
        "BurrowRequest": obj({"url": STR, "host": STR}),
        "BurrowError": obj({"error": BOOL, "message": STR, "request": ref("BurrowRequest")}),
        "BurrowClusterList": burrow_answer("clusters", array(STR)),
        "BurrowClientProfile": obj(
            {
                "name": STR,
                "client-id": STR,
                "kafka-version": desc(STR, "'': groupscope negotiates each request's version."),
                "tls": desc({"type": "null"}, "No TLS profile is said (null)."),
                "sasl": desc({"type": "null"}, "No SASL profile is said (null)."),
            },
            desc="Burrow's httpResponseClientProfile: the client id groupscope's Kafka connections give.",
        ),
        "BurrowClusterModule": obj(
            {
                "class-name": {"type": "string", "enum": ["kafka"]},
                "servers": desc(array(STR), "The bootstrap servers its collector registered ([]: none)."),
                "client-profile": ref("BurrowClientProfile"),
                "topic-refresh": refresh,
                "offset-refresh": refresh,
            },
            desc="The cluster as Burrow's kafka cluster module (httpResponseConfigModuleCluster).",
        ),
        "BurrowClusterDetail": burrow_answer("module", ref("BurrowClusterModule")),
        "BurrowTopicList": burrow_answer("topics", desc(array(STR), "The topics its groups read, by name.")),
        "BurrowTopicOffsets": burrow_answer(
            "offsets",
            desc(
                array(nullable(INT)),
                "The log-end offset per partition, indexed by partition number (null: no group has it).",
            ),
        ),
        "BurrowConsumerList": burrow_answer("consumers", array(STR)),
        "BurrowOffsetRing": obj(
            {
                "offsets": desc(
                    array(nullable(ref("BurrowOffset"))),
                    "The window's commits, oldest first, the slots not filled yet null and first; "
                    "[] for a partition the group neither commits to nor owns.",
                ),
                "owner": BURROW_OWNER,
                "client_id": STR,
                "current-lag": INT,
            },
            desc="A partition of the group (Burrow's ConsumerPartition).",
        ),
        "BurrowConsumerDetail": burrow_answer(
            "topics",
            {
                "type": "object",
                "description": "Per topic, the group's partitions indexed by partition number.",
                "additionalProperties": array(ref("BurrowOffsetRing")),
            },
        ),
        "BurrowOffset": obj(
            {"offset": INT, "timestamp": INT, "observedAt": INT, "lag": nullable(INT)},
            desc="A commit of the partition's window (Burrow's ConsumerOffset).",
        ),
        "BurrowPartition": obj(
            {
                "topic": STR,
                "partition": INT,
                "owner": BURROW_OWNER,
                "client_id": STR,
                "status": {"type": "string", "enum": BURROW_PARTITION_STATUSES},
                "start": nullable(ref("BurrowOffset")),
                "end": nullable(ref("BurrowOffset")),
                "current_lag": INT,
                "complete": NUM,
            }
        ),
        "BurrowGroupStatus": obj(
            {
                "cluster": STR,
                "group": STR,
                "status": {"type": "string", "enum": BURROW_GROUP_STATUSES},
                "complete": NUM,
                "partitions": array(ref("BurrowPartition")),
                "partition_count": INT,
                "maxlag": nullable(ref("BurrowPartition")),
                "totallag": INT,
            }
        ),
        "BurrowStatusResponse": burrow_answer("status", ref("BurrowGroupStatus")),
    }


def _json(schema: Schema, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json(ref("Error"), description)


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": STR, "description": description}


def _query(name: str, schema: Schema, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


CLUSTER = _path_param("cluster", "A cluster's name, as /api/v1/clusters lists it.")
GROUP = _path_param("group", "A group's name, percent-encoded as one path segment ('/' as %2F).")
TOPIC = _path_param("topic", "A topic's name, percent-encoded as one path segment.")
ORDER = _query("order", {"type": "string", "enum": ["asc", "desc"], "default": "asc"}, "Sort order.")
OFFSET = _query("offset", {"type": "integer", "minimum": 0, "default": 0}, "Rows to skip.")
LIMIT = _query(
    "limit",
    {"type": "integer", "minimum": 0, "maximum": 1000, "default": 100},
    "Rows to return (0: the total only).",
)
NAME = _query("name", STR, "Only names containing this (case-insensitive).")
SINCE = _query(
    "since", {"type": "integer", "minimum": 0}, "Start of the range, epoch ms (default: the oldest)."
)
UNTIL = _query("until", {"type": "integer", "minimum": 0}, "End of the range, epoch ms (default: now).")

UNAUTHORIZED = {"$ref": "#/components/responses/Unauthorized"}
UNAVAILABLE = _error("Redis cannot be reached.")
BURROW_UNAVAILABLE = _json(ref("BurrowError"), "Redis cannot be reached.")
BURROW_500 = _json(ref("BurrowError"), "What is stored for the group is not a group document.")


def _get(
    summary: str,
    ok: dict[str, Any],
    params: list[dict[str, Any]] | None = None,
    errors: dict[str, Any] | None = None,
    tag: str = "groupscope",
    redis: bool = True,
) -> dict[str, Any]:
    """A GET; `redis`: it reads Redis, so it answers 503 when Redis cannot be reached."""
    responses = {"200": ok, **(errors or {}), "401": UNAUTHORIZED}
    if redis:
        responses["503"] = UNAVAILABLE if tag == "groupscope" else BURROW_UNAVAILABLE
    op: dict[str, Any] = {"summary": summary, "tags": [tag], "responses": responses}
    if params:
        op["parameters"] = params
    return {"get": op}


def paths() -> dict[str, Any]:
    bad = {"400": _error("A query parameter is unknown, repeated or out of range.")}
    no_cluster = {"404": _error("No such cluster.")}
    no_group = {"404": _error("No such cluster or group.")}
    bad_history = _error("What is stored of the group's history cannot be read.")
    burrow_status = _json(ref("BurrowStatusResponse"), "The group's status (Burrow's ConsumerGroupStatus).")
    burrow_404 = _json(ref("BurrowStatusResponse"), "No such cluster or group: its status is NOTFOUND.")
    burrow_no_cluster = {"404": _json(ref("BurrowError"), "No such cluster: 'cluster not found'.")}
    return {
        "/api/v1": _get(
            "What the API offers.", _json(ref("Index"), "The API's version and endpoints."), redis=False
        ),
        "/api/v1/openapi.json": _get(
            "This document.", _json({"type": "object"}, "The OpenAPI document."), redis=False
        ),
        "/api/v1/clusters": _get(
            "Every cluster this Redis holds or the dashboard is configured with.",
            _json(ref("ClusterList"), "The clusters, `default` first, then by name."),
        ),
        "/api/v1/clusters/{cluster}": _get(
            "One cluster: counts and freshness.", _json(ref("Cluster"), "The cluster."), [CLUSTER], no_cluster
        ),
        "/api/v1/clusters/{cluster}/groups": _get(
            "The cluster's groups, filtered, sorted and paged as the fleet page's grid.",
            _json(ref("GroupPage"), "One page of fleet rows."),
            [
                CLUSTER,
                _query("sort", {"type": "string", "enum": list(GRID_SORT), "default": "name"}, "Sort key."),
                ORDER,
                _query(
                    "state",
                    {"type": "array", "items": {"type": "string", "enum": list(KNOWN_STATES)}},
                    "Only groups in these states: repeated (state=Stable&state=Empty) or comma-separated.",
                ),
                _query(
                    "type", {"type": "string", "enum": ["classic", "consumer", "share"]}, "Only this type."
                ),
                NAME,
                OFFSET,
                LIMIT,
            ],
            {**bad, **no_cluster},
        ),
        "/api/v1/clusters/{cluster}/groups/{group}": _get(
            "The group's document: state, members and assignment, offsets, lag per partition and member.",
            _json(ref("GroupResponse"), "The group's document."),
            [CLUSTER, GROUP],
            {**no_group, "500": _error("What is stored for the group is not a group document.")},
        ),
        "/api/v1/clusters/{cluster}/groups/{group}/timeline": _get(
            "The group's states over a time range: the spans in force at some moment of [since, until].",
            _json(ref("TimelineResponse"), "The state spans, by start."),
            [CLUSTER, GROUP, SINCE, UNTIL],
            {**bad, **no_group, "500": bad_history},
        ),
        "/api/v1/clusters/{cluster}/groups/{group}/generations": _get(
            "The group's generations (epochs) in force at some moment of [since, until].",
            _json(ref("GenerationsResponse"), "The generations, by start."),
            [CLUSTER, GROUP, SINCE, UNTIL],
            {**bad, **no_group, "500": bad_history},
        ),
        "/api/v1/clusters/{cluster}/topics": _get(
            "The topics the cluster's groups read, filtered, sorted and paged as the topics page's grid.",
            _json(ref("TopicPage"), "One page of topic rows."),
            [
                CLUSTER,
                _query(
                    "sort", {"type": "string", "enum": list(TOPIC_SORT_KEYS), "default": "name"}, "Sort key."
                ),
                ORDER,
                NAME,
                OFFSET,
                LIMIT,
            ],
            {**bad, **no_cluster},
        ),
        "/api/v1/clusters/{cluster}/topics/{topic}": _get(
            "One topic: its aggregate, each group reading it (worst lag first) and their partitions.",
            _json(ref("TopicDetail"), "The topic."),
            [CLUSTER, TOPIC],
            {"404": _error("No such cluster, or no group reads the topic.")},
        ),
        "/api/v1/alerts": _get(
            "The alerts firing now, newest first.",
            _json(ref("AlertList"), "The firing alerts."),
            [
                _query("cluster", STR, "Only this cluster's."),
                _query("group", STR, "Only this group's."),
                _query("rule", STR, "Only this rule's."),
                _query("severity", STR, "Only this severity (warning, critical)."),
            ],
            {**bad, "404": _error("No such cluster.")},
        ),
        "/v3/kafka": _get(
            "Burrow: list the clusters.",
            _json(ref("BurrowClusterList"), "Burrow's cluster list."),
            tag="burrow",
        ),
        "/v3/kafka/{cluster}": _get(
            "Burrow: the cluster, as Burrow's kafka cluster module.",
            _json(ref("BurrowClusterDetail"), "Burrow's cluster module detail."),
            [CLUSTER],
            {"404": _json(ref("BurrowError"), "No such cluster: 'cluster module not found'.")},
            tag="burrow",
        ),
        "/v3/kafka/{cluster}/topic": _get(
            "Burrow: list the topics the cluster's groups read.",
            _json(ref("BurrowTopicList"), "Burrow's topic list."),
            [CLUSTER],
            burrow_no_cluster,
            tag="burrow",
        ),
        "/v3/kafka/{cluster}/topic/{topic}": _get(
            "Burrow: the topic's log-end offset per partition.",
            _json(ref("BurrowTopicOffsets"), "Burrow's topic offsets."),
            [CLUSTER, TOPIC],
            {
                "404": _json(
                    ref("BurrowError"),
                    "No such cluster, or no group of it reads the topic: 'cluster or topic not found'.",
                )
            },
            tag="burrow",
        ),
        "/v3/kafka/{cluster}/topic/{topic}/consumers": _get(
            "Burrow: list the groups reading the topic (share groups left out; none for a topic no "
            "group reads).",
            _json(ref("BurrowConsumerList"), "Burrow's consumers of the topic."),
            [CLUSTER, TOPIC],
            burrow_no_cluster,
            tag="burrow",
        ),
        "/v3/kafka/{cluster}/consumer": _get(
            "Burrow: list the cluster's consumer groups (every group but share groups).",
            _json(ref("BurrowConsumerList"), "Burrow's consumer list."),
            [CLUSTER],
            burrow_no_cluster,
            tag="burrow",
        ),
        "/v3/kafka/{cluster}/consumer/{group}": _get(
            "Burrow: the group's offset rings, per topic and partition.",
            _json(ref("BurrowConsumerDetail"), "Burrow's consumer detail (its ConsumerTopics)."),
            [CLUSTER, GROUP],
            {
                "404": _json(
                    ref("BurrowError"),
                    "No such cluster or group (or a share group): 'cluster or consumer not found'.",
                ),
                "500": BURROW_500,
            },
            tag="burrow",
        ),
        "/v3/kafka/{cluster}/consumer/{group}/status": _get(
            "Burrow: the group's status, with only its partitions that are not OK.",
            burrow_status,
            [CLUSTER, GROUP],
            {"404": burrow_404, "500": BURROW_500},
            tag="burrow",
        ),
        "/v3/kafka/{cluster}/consumer/{group}/lag": _get(
            "Burrow: the group's status with every partition.",
            burrow_status,
            [CLUSTER, GROUP],
            {"404": burrow_404, "500": BURROW_500},
            tag="burrow",
        ),
        "/burrow/admin": _get(
            "Burrow's health check.",
            {"description": "GOOD", "content": {"text/plain": {"schema": STR}}},
            tag="burrow",
            redis=False,
        ),
    }


def spec() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "groupscope",
            "version": "1",
            "description": (
                "The dashboard's read-only HTTP API (docs/api.md): JSON, versioned under /api/v1, "
                "and Burrow's cluster, topic and consumer endpoints under /v3/kafka. Every method "
                "but GET (and HEAD) answers 405. When the dashboard has basic authentication "
                "(dashboard_user and dashboard_password), every endpoint needs it."
            ),
        },
        "servers": [{"url": "/"}],
        "tags": [
            {"name": "groupscope", "description": "groupscope's own API, version 1."},
            {
                "name": "burrow",
                "description": "linkedin/Burrow's HTTP API v3: its cluster, topic and consumer endpoints.",
            },
        ],
        "paths": paths(),
        "components": {
            "schemas": schemas(),
            "responses": {
                "Unauthorized": {
                    "description": "Basic authentication is on and the request has no valid credentials "
                    "(the dashboard's own answer, with its WWW-Authenticate challenge).",
                    "content": {"text/html": {"schema": STR}},
                }
            },
            "securitySchemes": {"basicAuth": {"type": "http", "scheme": "basic"}},
        },
        "security": [{"basicAuth": []}, {}],
    }
