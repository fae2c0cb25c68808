"""Burrow's read-only v3 endpoints on the dashboard's server (dashboard/api_burrow.py), against the
harness's real Redis: the shapes held against Burrow's documented answers (its wiki's HTTP endpoint
pages, and the JSON names of its Go structs, core/protocol/evaluator.go and storage.go and
core/internal/httpserver/structs.go, which the wiki's examples predate), the messages its handlers
answer (core/internal/httpserver/kafka.go), the status of a group with real lag windows mapped from
groupscope's own evaluation of Burrow's rules, and the cluster, topic and consumer detail answers
against what was written to Redis."""

from __future__ import annotations

import time
from typing import Any

import pytest
from test_api import (
    BURROW_GROUP,
    BURROW_TOPIC,
    NOW,
    SLASHED,
    burrow_doc,
    burrow_offsets,
    seed,
    write_burrow_group,
)

from collectors.config import Settings
from collectors.storage.clusters import ClusterRegistry, cluster_prefix
from collectors.storage.redis_store import RedisStore
from coordinator_model.document.types import GroupDocument, LagDoc, MemberDoc, PartitionLag
from coordinator_model.offsets import OffsetStore
from dashboard.api_burrow import WINDOW, group_status
from dashboard.app import create_app

pytestmark = pytest.mark.servers

# Burrow's documented answers (github.com/linkedin/Burrow/wiki: "List Clusters", "List Consumers",
# "Consumer Group Status", "HTTP Endpoint" error responses), their field names and value types.
DOC_CLUSTER_LIST = {
    "error": False,
    "message": "cluster list returned",
    "clusters": ["clustername1", "clustername2"],
    "request": {"url": "/v3/kafka", "host": "responding.host.example.com"},
}
DOC_CONSUMER_LIST = {
    "error": False,
    "message": "consumer list returned",
    "consumers": ["group1", "group2"],
    "request": {"url": "/v3/kafka/clustername/consumer", "host": "responding.host.example.com"},
}
DOC_ERROR = {
    "error": True,
    "message": "cluster not found",
    "request": {"url": "/v3/kafka/nocluster/consumer", "host": "responding.host.example.com"},
}
DOC_PARTITION = {
    "complete": 1,
    "current_lag": 0,
    "end": {"lag": 25, "offset": 2542, "timestamp": 1511780580382},
    "owner": "",
    "partition": 0,
    "start": {"lag": 20, "offset": 2526, "timestamp": 1511200836090},
    "status": "WARN",
    "topic": "topicA",
}
DOC_STATUS = {
    "error": False,
    "message": "consumer group status returned",
    "status": {
        "cluster": "clustername",
        "group": "groupname",
        "status": "WARN",
        "complete": 1.0,
        "maxlag": DOC_PARTITION,
        "partitions": [DOC_PARTITION],
    },
    "request": {
        "url": "/v3/kafka/clustername/consumer/groupname/status",
        "host": "responding.host.example.com",
    },
}
# Burrow's wiki, "Get Topic Detail" (its message there, "broker topic offsets returned", is older than
# the one its server answers, "topic offsets returned", core/internal/httpserver/kafka.go)
DOC_TOPIC_DETAIL = {
    "error": False,
    "message": "topic offsets returned",
    "offsets": [2290903, 2898892, 3902933, 2328823],
    "request": {"url": "/v3/kafka/clustername/topic/topicname", "host": "responding.host.example.com"},
}
DOC_TOPIC_LIST = {
    "error": False,
    "message": "topic list returned",
    "topics": ["topicA", "topicB"],
    "request": {"url": "/v3/kafka/clustername/topic", "host": "responding.host.example.com"},
}
DOC_TOPIC_CONSUMERS = {
    "error": False,
    "message": "consumers of topic returned",
    "consumers": ["group1", "group2"],
    "request": {
        "url": "/v3/kafka/clustername/topic/topicname/consumers",
        "host": "responding.host.example.com",
    },
}
# httpResponseConfigModuleDetail with Burrow's kafka cluster module (structs.go), as its test of
# handleClusterDetail configures one (kafka_test.go)
DOC_CLUSTER_DETAIL = {
    "error": False,
    "message": "cluster module detail returned",
    "module": {
        "class-name": "kafka",
        "servers": ["kafka01.example.com:10251"],
        "client-profile": {
            "name": "test",
            "client-id": "testid",
            "kafka-version": "2.8.0",
            "tls": None,
            "sasl": None,
        },
        "topic-refresh": 60,
        "offset-refresh": 10,
    },
    "request": {"url": "/v3/kafka/clustername", "host": "responding.host.example.com"},
}
CLUSTER_MODULE_FIELDS = {"class-name", "servers", "client-profile", "topic-refresh", "offset-refresh"}
CLIENT_PROFILE_FIELDS = {"name", "client-id", "kafka-version", "tls", "sasl"}
# Burrow's consumer detail: ConsumerTopics (core/protocol/storage.go), per topic its partitions by
# number, each with its ring of offsets (null where a slot is not filled yet); the values of a Burrow
# answer published with mageddo/dockerized-database-servers (burrow.md), whose Burrow predates
# `observedAt` and `client_id`
DOC_CONSUMER_DETAIL = {
    "error": False,
    "message": "consumer detail returned",
    "topics": {
        "COFFEE_REQUEST": [
            {
                "offsets": [
                    {"offset": 4464, "timestamp": 1545510706476, "observedAt": 1545510706476, "lag": 4430}
                ],
                "owner": "/172.17.0.1",
                "client_id": "consumer-1",
                "current-lag": 4430,
            }
        ]
    },
    "request": {"url": "/v3/kafka/local/consumer/spring-kafka", "host": "typer-pc"},
}
CONSUMER_PARTITION_FIELDS = {"offsets", "owner", "client_id", "current-lag"}
# its topics map's keys are topic names: the shape is the map's (any topic) and each topic's list
DOC_DETAIL_PARTITIONS = DOC_CONSUMER_DETAIL["topics"]["COFFEE_REQUEST"]
DOC_DETAIL = {**DOC_CONSUMER_DETAIL, "topics": {}}
# Burrow's structs as its server marshals them today (core/protocol): the wiki's example predates
# partition_count, totallag, client_id and observedAt
STATUS_FIELDS = {
    "cluster",
    "group",
    "status",
    "complete",
    "partitions",
    "partition_count",
    "maxlag",
    "totallag",
}
PARTITION_FIELDS = {
    "topic",
    "partition",
    "owner",
    "client_id",
    "status",
    "start",
    "end",
    "current_lag",
    "complete",
}
OFFSET_FIELDS = {"offset", "timestamp", "observedAt", "lag"}
STATUSES = {"NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND"}


def kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


def same_shape(got: Any, documented: Any, where: str = "") -> None:
    """Every field of the documented answer is in ours, with a value of the same JSON type (objects
    and lists looked into)."""
    if isinstance(documented, dict):
        assert isinstance(got, dict), where
        for k, v in documented.items():
            assert k in got, f"{where}.{k} missing"
            if got[k] is not None:
                same_shape(got[k], v, f"{where}.{k}")
    elif isinstance(documented, list):
        assert isinstance(got, list), where
        for item in got:
            if item is not None:  # a Go pointer: a ring slot not filled, a partition with no offset
                same_shape(item, documented[0], f"{where}[]")
    else:
        assert kind(got) == kind(documented), f"{where}: {got!r} vs documented {documented!r}"


def check_status_answer(body: dict[str, Any], url: str) -> None:
    same_shape(body, DOC_STATUS)
    assert set(body) == {"error", "message", "status", "request"}
    assert body["error"] is False and body["message"] == "consumer status returned"
    assert body["request"]["url"] == url and body["request"]["host"]
    st = body["status"]
    assert set(st) == STATUS_FIELDS and st["status"] in STATUSES
    for p in st["partitions"] + ([st["maxlag"]] if st["maxlag"] else []):
        assert set(p) == PARTITION_FIELDS and p["status"] in STATUSES - {"NOTFOUND", "ERR"}
        for o in (p["start"], p["end"]):
            assert o is None or set(o) == OFFSET_FIELDS
        assert isinstance(p["current_lag"], int) and p["current_lag"] >= 0
        assert 0.0 <= p["complete"] <= 1.0


@pytest.fixture()
def burrow(redis_client, redis_server):
    seed(redis_client)
    app = create_app(Settings(redis_url=redis_server.url), background_mode="celery")
    return app.server.test_client()


def test_cluster_and_consumer_lists_hold_burrows_shapes(burrow) -> None:
    r = burrow.get("/v3/kafka")
    assert r.status_code == 200
    body = r.get_json()
    same_shape(body, DOC_CLUSTER_LIST)
    assert set(body) == set(DOC_CLUSTER_LIST) and body["clusters"] == ["default", "prod"]
    assert body["message"] == "cluster list returned" and body["request"]["url"] == "/v3/kafka"
    body = burrow.get("/v3/kafka/default/consumer").get_json()
    same_shape(body, DOC_CONSUMER_LIST)
    assert set(body) == set(DOC_CONSUMER_LIST) and body["message"] == "consumer list returned"
    # every group but the share group (Burrow knows groups that commit offsets), by name
    assert body["consumers"] == sorted([f"g{i:02d}" for i in range(30) if i != 7] + [SLASHED])
    assert burrow.get("/v3/kafka/prod/consumer").get_json()["consumers"] == [BURROW_GROUP]
    r = burrow.get("/v3/kafka/nocluster/consumer")
    assert r.status_code == 404
    same_shape(r.get_json(), DOC_ERROR)
    assert r.get_json()["message"] == "cluster not found" and set(r.get_json()) == set(DOC_ERROR)
    # Burrow's health check, and its answer to a URL it does not serve
    assert burrow.get("/burrow/admin").data == b"GOOD"
    r = burrow.get("/v3/kafka/prod/consumer/payments/offsets")
    assert r.status_code == 404 and r.get_json() == {
        "error": True,
        "message": "invalid request type",
        "result": {},
    }


def test_lag_and_status_of_a_group_with_real_windows(burrow) -> None:
    url = f"/v3/kafka/prod/consumer/{BURROW_GROUP}/lag"
    r = burrow.get(url)
    assert r.status_code == 200
    body = r.get_json()
    check_status_answer(body, url)
    st = body["status"]
    assert st["cluster"] == "prod" and st["group"] == BURROW_GROUP
    parts = {p["partition"]: p for p in st["partitions"]}
    assert [p["topic"] for p in st["partitions"]] == [BURROW_TOPIC] * 6
    assert {n: p["status"] for n, p in parts.items()} == {
        0: "WARN",
        1: "STALL",
        2: "OK",
        3: "STOP",
        4: "REWIND",
        5: "OK",  # owned, never committed: listed with no offsets, as Burrow lists it
    }
    # the group is its worst partition's status, capped at ERR; as groupscope's own document says
    assert st["status"] == "ERR"
    doc = burrow.get(f"/api/v1/clusters/prod/groups/{BURROW_GROUP}").get_json()["document"]
    assert doc["lag"]["status"] == "ERR"
    # start and end: the oldest and newest slot of the partition's window in the offsets hash
    window = burrow_offsets(NOW).windows[(BURROW_TOPIC, 0)].samples
    assert parts[0]["start"] == {
        "offset": window[0].offset,
        "timestamp": window[0].ts,
        "observedAt": window[0].ts,
        "lag": window[0].lag,
    }
    assert parts[0]["end"]["offset"] == window[-1].offset == 1010 and parts[0]["end"]["lag"] == 320
    assert parts[0]["start"]["lag"] < parts[0]["end"]["lag"]  # lag grew: WARN
    assert parts[1]["start"]["offset"] == parts[1]["end"]["offset"] == 500  # STALL
    assert parts[5]["start"] is None and parts[5]["end"] is None and parts[5]["current_lag"] == 0
    # complete: the window's slots out of Burrow's 10; the group's, its complete partitions' share
    assert {n: p["complete"] for n, p in parts.items()} == {0: 1.0, 1: 1.0, 2: 1.0, 3: 0.4, 4: 1.0, 5: 0.0}
    assert st["complete"] == pytest.approx(4 / 6)
    # current lag from the document, totals, the worst partition
    lags = {p["partition"]: p["lag"] or 0 for p in doc["lag"]["partitions"]}
    assert {n: p["current_lag"] for n, p in parts.items()} == lags
    assert st["totallag"] == sum(lags.values()) == doc["lag"]["total"]
    assert (
        st["partition_count"] == 6
        and st["maxlag"] == parts[3]
        and parts[3]["current_lag"] == max(lags.values())
    )
    # the owner is the member's client host, as Burrow has it, with its client id
    assert (parts[0]["owner"], parts[0]["client_id"]) == ("/10.1.0.1", "pay-1")
    assert (parts[5]["owner"], parts[5]["client_id"]) == ("/10.1.0.2", "pay-2")
    # /status: the same, with only the partitions that are not OK
    url = f"/v3/kafka/prod/consumer/{BURROW_GROUP}/status"
    status = burrow.get(url).get_json()
    check_status_answer(status, url)
    assert [p["partition"] for p in status["status"]["partitions"]] == [0, 1, 3, 4]
    assert {k: v for k, v in status["status"].items() if k != "partitions"} == {
        k: v for k, v in st.items() if k != "partitions"
    }


def test_the_collectors_parts_layout_answers_as_the_whole_document(redis_client, redis_server) -> None:
    """Live, the collector stores a group's head apart from its offsets and the log ends; the answer
    put together from them is the one of the whole document."""
    now = int(time.time() * 1000)
    write_burrow_group(redis_client, "whole", now)
    write_burrow_group(redis_client, "apart", now, apart=True)
    for c in ("whole", "apart"):
        ClusterRegistry(redis_client).register(c, None, now)
    assert b'"offsets_apart":true' in redis_client.get(f"gs@apart:group:{{{BURROW_GROUP}}}:doc")
    client = create_app(Settings(redis_url=redis_server.url), background_mode="celery").server.test_client()
    whole = client.get(f"/v3/kafka/whole/consumer/{BURROW_GROUP}/lag").get_json()["status"]
    apart = client.get(f"/v3/kafka/apart/consumer/{BURROW_GROUP}/lag").get_json()["status"]
    assert apart == {**whole, "cluster": "apart"} and whole["status"] == "ERR"


def test_an_unknown_cluster_or_group_is_burrows_notfound(burrow) -> None:
    for url in (
        "/v3/kafka/prod/consumer/nope/status",
        "/v3/kafka/prod/consumer/nope/lag",
        "/v3/kafka/nocluster/consumer/payments/status",
        "/v3/kafka/default/consumer/g07/lag",  # a share group: Burrow knows none
    ):
        r = burrow.get(url)
        assert r.status_code == 404, url
        body = r.get_json()
        check_status_answer(body, url)
        cluster, group = url.split("/")[3], url.split("/")[5]
        assert body["status"] == {
            "cluster": cluster,
            "group": group,
            "status": "NOTFOUND",
            "complete": 1.0,
            "partitions": [],
            "partition_count": 0,
            "maxlag": None,
            "totallag": 0,
        }
    r = burrow.delete(f"/v3/kafka/prod/consumer/{BURROW_GROUP}")
    assert r.status_code == 405 and r.get_json()["error"] is True and "read-only" in r.get_json()["message"]


def test_a_document_stored_whole_knows_one_commit_per_partition(burrow) -> None:
    """A group written whole (a replay) has no window in Redis: its committed offset is the window's
    only slot; a partition it owns but never committed is listed with no offsets."""
    url = "/v3/kafka/default/consumer/orders%2Feu%20%3F%23%25/lag"
    body = burrow.get(url).get_json()
    check_status_answer(body, "/v3/kafka/default/consumer/orders/eu ?#%/lag")
    st = body["status"]
    assert st["group"] == SLASHED and st["status"] == "OK" and st["complete"] == 0.0
    p0, p1, p2 = st["partitions"]
    assert p0["start"] == p0["end"] and p0["end"]["offset"] == 10 and p0["end"]["lag"] == 2
    assert p0["complete"] == 0.1 and p0["owner"] == "/10.0.0.1" and p0["client_id"] == "orders-a"
    assert (p2["status"], p2["start"], p2["end"], p2["current_lag"], p2["complete"]) == (
        "OK",
        None,
        None,
        0,
        0.0,
    )
    assert st["totallag"] == 5 and st["maxlag"] == p1


# ---- cluster, topic and consumer detail ---------------------------------------------------------------
SPARSE = "sparse-reader"


def write_sparse_group(client: Any) -> None:
    """Cluster `gaps` (two bootstrap servers registered): a group reading partitions 0, 2 and 3 of
    topic `sparse` and not 1; it owns 2 without a commit, and the log end of 3 is not known."""
    ClusterRegistry(client).register("gaps", "kafka-a:9092, kafka-b:9093", NOW)
    doc = GroupDocument(
        SPARSE,
        state="Stable",
        protocol_type="consumer",
        members=[MemberDoc("s-1", client_id="sparse-1", client_host="/10.2.0.1", assignment=[("sparse", 2)])],
        lag=LagDoc(
            partitions=[
                PartitionLag("sparse", 0, 5, True, 9, 4, 0.5, "OK", None),
                PartitionLag("sparse", 2, None, False, 30, None, None, "NO_COMMIT", "s-1"),
                PartitionLag("sparse", 3, 7, True, None, None, None, "UNKNOWN", None),
            ]
        ),
        as_of=NOW,
    )
    RedisStore(client, prefix=cluster_prefix("gaps")).write_groups([doc], NOW)


def check_answer(r: Any, documented: dict[str, Any], url: str, status: int = 200) -> dict[str, Any]:
    """Burrow's answer: its status code, the documented fields and no others, its request block."""
    assert r.status_code == status, url
    body = r.get_json()
    same_shape(body, documented)
    assert set(body) == set(documented), url
    assert body["error"] is documented["error"] and body["message"] == documented["message"], url
    assert body["request"]["url"] == url and body["request"]["host"], url
    return body


def check_error(burrow: Any, url: str, message: str) -> None:
    """A 404 in Burrow's error shape, with the message its handler answers."""
    r = burrow.get(url)
    body = check_answer(r, {**DOC_ERROR, "message": message}, url, 404)
    assert body["error"] is True


def test_cluster_detail_is_burrows_kafka_cluster_module(burrow, redis_client) -> None:
    write_sparse_group(redis_client)
    body = check_answer(burrow.get("/v3/kafka/prod"), DOC_CLUSTER_DETAIL, "/v3/kafka/prod")
    module = body["module"]
    assert set(module) == CLUSTER_MODULE_FIELDS and set(module["client-profile"]) == CLIENT_PROFILE_FIELDS
    # the bootstrap servers its collector registered (seed: prod-kafka:9092), split as Burrow's list
    assert module["class-name"] == "kafka" and module["servers"] == ["prod-kafka:9092"]
    gaps = burrow.get("/v3/kafka/gaps").get_json()["module"]
    assert gaps["servers"] == ["kafka-a:9092", "kafka-b:9093"]
    # the collector's default Admin API poll (5 s) as both refresh intervals, in Burrow's seconds
    assert (module["topic-refresh"], module["offset-refresh"]) == (5, 5)
    assert module["client-profile"] == {
        "name": "",
        "client-id": "groupscope",
        "kafka-version": "",
        "tls": None,
        "sasl": None,
    }
    # `default` holds data but no collector registered it: no servers known
    assert burrow.get("/v3/kafka/default").get_json()["module"]["servers"] == []
    check_error(burrow, "/v3/kafka/nocluster", "cluster module not found")


def test_topic_list_and_topic_offsets(burrow, redis_client) -> None:
    write_sparse_group(redis_client)
    body = check_answer(burrow.get("/v3/kafka/default/topic"), DOC_TOPIC_LIST, "/v3/kafka/default/topic")
    # the topics the cluster's groups read, by name (a share group's too: a topic is the cluster's)
    assert body["topics"] == ["orders", "t0", "t1", "t2"]
    assert burrow.get("/v3/kafka/prod/topic").get_json()["topics"] == ["pay"]
    assert burrow.get("/v3/kafka/gaps/topic").get_json()["topics"] == ["sparse"]
    check_error(burrow, "/v3/kafka/nocluster/topic", "cluster not found")

    # the log-end offsets, indexed by partition: as the slashed group's document has them
    url = "/v3/kafka/default/topic/orders"
    body = check_answer(burrow.get(url), DOC_TOPIC_DETAIL, url)
    assert body["offsets"] == [12, 23, 7]
    # the payments group's, from its real windows: each partition's newest log end
    doc = burrow_doc(NOW, burrow_offsets(NOW))
    ends = {p.partition: p.end_offset for p in doc.lag.partitions}
    offsets = burrow.get(f"/v3/kafka/prod/topic/{BURROW_TOPIC}").get_json()["offsets"]
    assert offsets == [ends[n] for n in range(6)] == [1330, 611, 410, 2550, 1010, 50]
    # several groups read t1's partition 0: the newest (highest) log end any of them holds
    t1 = burrow.get("/v3/kafka/default/topic/t1").get_json()["offsets"]
    assert t1 == [max(100 + (i * 37) % 100 for i in range(30) if i % 3 == 1)]
    # a partition no group has a log end for is null, and the others keep their index
    assert burrow.get("/v3/kafka/gaps/topic/sparse").get_json()["offsets"] == [9, None, 30, None]
    for url in (
        "/v3/kafka/default/topic/nope",
        "/v3/kafka/prod/topic/orders",
        "/v3/kafka/nocluster/topic/orders",
    ):
        check_error(burrow, url, "cluster or topic not found")


def test_consumers_of_a_topic(burrow) -> None:
    url = "/v3/kafka/default/topic/t1/consumers"
    body = check_answer(burrow.get(url), DOC_TOPIC_CONSUMERS, url)
    # every group reading it but the share group g07, by name
    assert body["consumers"] == [f"g{i:02d}" for i in range(30) if i % 3 == 1 and i != 7]
    assert burrow.get("/v3/kafka/default/topic/orders/consumers").get_json()["consumers"] == [SLASHED]
    assert burrow.get(f"/v3/kafka/prod/topic/{BURROW_TOPIC}/consumers").get_json()["consumers"] == [
        BURROW_GROUP
    ]
    # a topic no group reads: Burrow answers no consumers (its storage lists the groups reading it)
    url = "/v3/kafka/prod/topic/nope/consumers"
    assert check_answer(burrow.get(url), DOC_TOPIC_CONSUMERS, url)["consumers"] == []
    check_error(burrow, "/v3/kafka/nocluster/topic/t1/consumers", "cluster not found")


def check_detail(body: dict[str, Any]) -> None:
    for topic, parts in body["topics"].items():
        same_shape(parts, DOC_DETAIL_PARTITIONS, topic)
        for p in parts:
            assert set(p) == CONSUMER_PARTITION_FIELDS, topic
            assert len(p["offsets"]) in (0, WINDOW) and isinstance(p["current-lag"], int)
            for o in p["offsets"]:
                assert o is None or set(o) == OFFSET_FIELDS
            filled = [o for o in p["offsets"] if o is not None]
            # the ring from its oldest slot: the slots not filled yet first
            assert p["offsets"][len(p["offsets"]) - len(filled) :] == filled


def test_consumer_detail_is_the_groups_offset_rings(burrow) -> None:
    url = f"/v3/kafka/prod/consumer/{BURROW_GROUP}"
    body = check_answer(burrow.get(url), DOC_DETAIL, url)
    check_detail(body)
    parts = body["topics"][BURROW_TOPIC]
    assert list(body["topics"]) == [BURROW_TOPIC] and len(parts) == 6
    # each partition's ring: its window's slots in the offsets hash, oldest first, after the nulls
    windows = burrow_offsets(NOW).windows
    for n, p in enumerate(parts):
        window = windows[(BURROW_TOPIC, n)].samples if (BURROW_TOPIC, n) in windows else []
        expected = [{"offset": s.offset, "timestamp": s.ts, "observedAt": s.ts, "lag": s.lag} for s in window]
        assert p["offsets"] == [None] * (WINDOW - len(window)) + expected, n
    assert [sum(o is not None for o in p["offsets"]) for p in parts] == [10, 10, 10, 4, 10, 0]
    assert parts[0]["offsets"][-1]["offset"] == 1010 and parts[0]["offsets"][-1]["lag"] == 320
    # the same partitions, owners and lags as the group's status; its ring's ends are start and end
    lag = burrow.get(f"/v3/kafka/prod/consumer/{BURROW_GROUP}/lag").get_json()["status"]["partitions"]
    for p, st in zip(parts, lag, strict=True):
        assert (p["owner"], p["client_id"], p["current-lag"]) == (
            st["owner"],
            st["client_id"],
            st["current_lag"],
        )
        filled = [o for o in p["offsets"] if o is not None]
        assert (filled[0] if filled else None, filled[-1] if filled else None) == (st["start"], st["end"])
    # owned, never committed: Burrow's ring made for its owner, empty
    assert parts[5] == {
        "offsets": [None] * WINDOW,
        "owner": "/10.1.0.2",
        "client_id": "pay-2",
        "current-lag": 0,
    }


def test_consumer_detail_of_a_document_stored_whole_and_of_a_sparse_group(burrow, redis_client) -> None:
    write_sparse_group(redis_client)
    # stored whole: the one commit the document knows, at its commit time
    body = burrow.get("/v3/kafka/default/consumer/orders%2Feu%20%3F%23%25").get_json()
    check_detail(body)
    p0, p1, p2 = body["topics"]["orders"]
    assert p0["offsets"][:-1] == [None] * (WINDOW - 1) and p0["current-lag"] == 2
    assert {k: p0["offsets"][-1][k] for k in ("offset", "lag")} == {"offset": 10, "lag": 2}
    assert (p0["owner"], p0["client_id"], p1["offsets"][-1]["offset"], p1["current-lag"]) == (
        "/10.0.0.1",
        "orders-a",
        20,
        3,
    )
    assert p2 == {"offsets": [None] * WINDOW, "owner": "/10.0.0.2", "client_id": "orders-b", "current-lag": 0}
    # partition 1 of `sparse`, which the group neither commits to nor owns: as Burrow lists one
    url = f"/v3/kafka/gaps/consumer/{SPARSE}"
    body = check_answer(burrow.get(url), DOC_DETAIL, url)
    check_detail(body)
    s0, s1, s2, s3 = body["topics"]["sparse"]
    assert s0["offsets"][-1] == {"offset": 5, "timestamp": NOW, "observedAt": NOW, "lag": 4}
    assert s0["current-lag"] == 4 and s0["owner"] == ""
    assert s1 == {"offsets": [], "owner": "", "client_id": "", "current-lag": 0}
    assert s2 == {"offsets": [None] * WINDOW, "owner": "/10.2.0.1", "client_id": "sparse-1", "current-lag": 0}
    assert s3["offsets"][-1]["lag"] is None and s3["current-lag"] == 0


def test_consumer_detail_of_an_unknown_cluster_or_group_is_a_404(burrow) -> None:
    for url in (
        "/v3/kafka/prod/consumer/nope",
        "/v3/kafka/nocluster/consumer/payments",
        "/v3/kafka/default/consumer/g07",  # a share group: Burrow knows none
        f"/v3/kafka/default/consumer/{BURROW_GROUP}",  # a group of another cluster
    ):
        check_error(burrow, url, "cluster or consumer not found")


def _doc(statuses: list[str | None]) -> GroupDocument:
    return GroupDocument(
        "g",
        members=[
            MemberDoc(
                "m", client_host="/h", client_id="c", assignment=[("t", i) for i in range(len(statuses))]
            )
        ],
        lag=LagDoc(
            partitions=[
                PartitionLag(
                    "t",
                    i,
                    5 if s != "NO_COMMIT" else None,
                    s != "NO_COMMIT",
                    9,
                    4 if s != "OK" else 0,
                    1.0,
                    s,
                    "m",
                )
                for i, s in enumerate(statuses)
            ]
        ),
    )


@pytest.mark.parametrize(
    ("statuses", "group", "said"),
    [
        (["OK", "OK"], "OK", ["OK", "OK"]),
        (["OK", "WARN"], "WARN", ["OK", "WARN"]),
        (["WARN", "STOP"], "ERR", ["WARN", "STOP"]),
        (["STALL"], "ERR", ["STALL"]),
        (["REWIND", "WARN"], "ERR", ["REWIND", "WARN"]),
        # groupscope's statuses Burrow has no word for: what Burrow says of a partition it cannot judge
        (["NO_COMMIT", "UNKNOWN", None], "OK", ["OK", "OK", "OK"]),
        (["UNKNOWN", "WARN"], "WARN", ["OK", "WARN"]),
        ([], "OK", []),
    ],
)
def test_each_groupscope_status_is_said_as_burrow_would(statuses, group: str, said: list[str]) -> None:
    st = group_status("c", _doc(statuses), OffsetStore())
    assert [p["status"] for p in st["partitions"]] == said and st["status"] == group
    if not statuses:  # Burrow's evaluator on a group with no partitions
        assert (st["complete"], st["maxlag"], st["totallag"], st["partition_count"]) == (0.0, None, 0, 0)


def test_burrows_status_agrees_with_the_documents_group_status() -> None:
    """groupscope's group status (lag.group_status over the evaluated partitions) and the one said
    here from the partitions agree, for the windows of the seeded group at any later moment."""
    st = burrow_offsets(NOW)
    for later in (0, 5_000, 60_000, 3_600_000):
        doc = burrow_doc(NOW + later, st)
        assert group_status("prod", doc, st)["status"] == doc.lag.status, later
