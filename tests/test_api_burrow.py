"""Burrow's read-only v3 endpoints on the dashboard's server (dashboard/api_burrow.py), against the
harness's real Redis: the shapes held against Burrow's documented answers (its wiki's HTTP endpoint
pages, and the JSON names of its Go structs, core/protocol/evaluator.go and storage.go and
core/internal/httpserver/structs.go, which the wiki's examples predate), the messages its handlers
answer (core/internal/httpserver/kafka.go), the status of a group with real lag windows mapped from
groupscope's own evaluation of Burrow's rules, and the cluster, topic and consumer detail answers
against what was written to Redis."""

from __future__ import annotations

import json
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


# ---- Burrow's configuration and admin endpoints ---------------------------------------------------------
# The JSON names of Burrow's structs as its server marshals them today (core/internal/httpserver/
# structs.go, filled by config.go and coordinator.go's getLogLevel/setLogLevel): `group-allowlist`
# since Burrow 1.3.5 (it was `group-whitelist`), `extra-ca` and `noverify` on the http and email
# notifiers since 1.3.0.
CONFIG_MAIN_FIELDS = {"error", "message", "request", "general", "logging", "zookeeper", "httpserver"}
GENERAL_FIELDS = {"pidfile", "stdout-logfile", "access-control-allow-origin"}
LOGGING_FIELDS = {
    "filename",
    "max-size",
    "max-backups",
    "max-age",
    "use-local-time",
    "use-compression",
    "level",
}
ZOOKEEPER_FIELDS = {"servers", "timeout", "root-path"}
HTTPSERVER_FIELDS = {"address", "tls", "timeout"}
MODULE_LIST_FIELDS = {"error", "message", "request", "coordinator", "modules"}
MODULE_DETAIL_FIELDS = {"error", "message", "module", "request"}
STORAGE_FIELDS = {"class-name", "intervals", "min-distance", "group-allowlist", "expire-group"}
EVALUATOR_FIELDS = {"class-name", "expire-cache"}
CONSUMER_MODULE_FIELDS = {
    "class-name",
    "cluster",
    "servers",
    "group-allowlist",
    "zookeeper-path",
    "zookeeper-timeout",
    "client-profile",
    "offsets-topic",
    "start-latest",
}
NOTIFIER_NULL_FIELDS = {
    "class-name",
    "group-allowlist",
    "interval",
    "threshold",
    "template-open",
    "template-close",
    "extra",
    "send-close",
}
NOTIFIER_FIELDS = {
    "http": NOTIFIER_NULL_FIELDS
    | {
        "timeout",
        "keepalive",
        "url-open",
        "url-close",
        "method-open",
        "method-close",
        "extra-ca",
        "noverify",
    },
    "slack": NOTIFIER_NULL_FIELDS | {"timeout", "keepalive", "channel", "username", "icon-url", "icon-emoji"},
    "email": NOTIFIER_NULL_FIELDS
    | {"server", "port", "auth-type", "username", "from", "to", "extra-ca", "noverify"},
    "null": NOTIFIER_NULL_FIELDS,
}
LOGLEVEL_FIELDS = {"error", "message", "level", "request"}
SET_LOGLEVEL_FIELDS = {"error", "message", "request"}  # httpResponseError, `error` false
# Burrow's value types, a field of each kind (Go's zero values where groupscope has nothing of it)
DOC_CONFIG_MAIN = {
    "error": False,
    "message": "main config returned",
    "request": {"url": "/v3/config", "host": "responding.host.example.com"},
    "general": {"pidfile": "burrow.pid", "stdout-logfile": "burrow.out", "access-control-allow-origin": "*"},
    "logging": {
        "filename": "logs/burrow.log",
        "max-size": 100,
        "max-backups": 30,
        "max-age": 10,
        "use-local-time": False,
        "use-compression": True,
        "level": "info",
    },
    "zookeeper": {"servers": ["zkhost01.example.com:2181"], "timeout": 6, "root-path": "/burrow"},
    "httpserver": {},
}

# Secrets the alerting configuration, the registry and the settings below hold: none may be answered.
SECRETS = (
    "w3bhook-tok",
    "h3ader-tok",
    "sl4ck-tok",
    "m4il-pw",
    "s3cr3tpw",
    "b3arer-tok",
    "kafk4-pw",
    "hunter2",
)
ALERTS_YAML = """
groups:
  allow: ["pay.ments", "re:^orders-"]
notify:
  resolved: true
  timeout_s: 4
notifiers:
  - name: hook
    type: webhook
    url: https://hooks.example.com/notify?token=w3bhook-tok
    headers: {Authorization: "Bearer h3ader-tok"}
    timeout_s: 2.5
  - name: chat
    type: slack
    url: https://hooks.slack.com/services/T000/B000/sl4ck-tok
    channel: "#kafka"
  - name: mail
    type: email
    host: smtp.example.com
    port: 587
    starttls: true
    username: alerts
    password: m4il-pw
    from: groupscope@example.com
    to: [ops@example.com, kafka@example.com]
    events: [firing]
    min_severity: critical
  - name: am
    type: alertmanager
    url: http://am:s3cr3tpw@alertmanager:9093/prefix/
    verify_tls: false
    ca_file: /etc/ssl/private-ca.pem
    resend_s: 30
    labels: {team: kafka}
  - name: am-token
    type: alertmanager
    url: https://alertmanager.example.com
    bearer_token: b3arer-tok
"""


@pytest.fixture()
def root_level():
    """The root logger's level (this process's, which /v3/admin/loglevel reads and sets), put back."""
    import logging

    root = logging.getLogger()
    before = root.level
    yield root
    root.setLevel(before)


@pytest.fixture()
def configured(redis_client, redis_server, tmp_path):
    """A dashboard whose settings and alerting configuration hold secrets: a Redis URL with a
    password (the data read through the harness's Redis), the notifiers of ALERTS_YAML, a cluster
    registered with a password in its bootstrap server, and `prod` configured with its own offsets
    topic."""
    from collectors.alerts.config import load_alert_config
    from dashboard.data import DashboardData

    seed(redis_client)
    ClusterRegistry(redis_client).register("leaky", "SSL://gs:kafk4-pw@k1:9093,k2:9093", NOW)
    alerts = tmp_path / "alerts.yaml"
    alerts.write_text(ALERTS_YAML)
    settings = Settings(
        redis_url="redis://:hunter2@redis.example.com:6379/0",
        alerts_file=str(alerts),
        clusters={"prod": {"bootstrap_servers": "prod-kafka:9092", "offsets_topic": "__prod_offsets"}},
        dashboard_host="0.0.0.0",
        dashboard_port=8123,
        retention_s=86_400,
        alerts_interval_s=2.5,
        allow_open_bind=True,
    )
    data = DashboardData(redis_server.url, alert_config=load_alert_config(settings))
    return create_app(settings, data=data, background_mode="celery").server.test_client()


def module_answer(client: Any, url: str, message: str, fields: set[str]) -> dict[str, Any]:
    """Burrow's httpResponseConfigModuleDetail: its fields, message, and the module's fields."""
    r = client.get(url)
    assert r.status_code == 200, (url, r.data[:300])
    body = r.get_json()
    assert set(body) == MODULE_DETAIL_FIELDS and body["error"] is False, url
    assert body["message"] == message and body["request"]["url"] == url and body["request"]["host"], url
    assert set(body["module"]) == fields, (url, set(body["module"]) ^ fields)
    return body["module"]


def module_names(client: Any, coordinator: str) -> list[str]:
    url = f"/v3/config/{coordinator}"
    r = client.get(url)
    assert r.status_code == 200, url
    body = r.get_json()
    assert set(body) == MODULE_LIST_FIELDS and body["error"] is False, url
    assert body["message"] == "module list returned" and body["coordinator"] == coordinator, url
    assert body["request"]["url"] == url and body["request"]["host"]
    return body["modules"]


def test_main_config_is_burrows_config_main(burrow, root_level) -> None:
    from collectors.endpoints import DASHBOARD_TIMEOUT_S

    root_level.setLevel("WARNING")
    r = burrow.get("/v3/config")
    body = check_answer(r, DOC_CONFIG_MAIN, "/v3/config")
    assert set(body) == CONFIG_MAIN_FIELDS
    assert set(body["general"]) == GENERAL_FIELDS and set(body["logging"]) == LOGGING_FIELDS
    assert set(body["zookeeper"]) == ZOOKEEPER_FIELDS
    assert list(body["httpserver"]) == ["default"] and set(body["httpserver"]["default"]) == HTTPSERVER_FIELDS
    # no pid file, log file, CORS header or ZooKeeper: Burrow's zero values
    assert body["general"] == {"pidfile": "", "stdout-logfile": "", "access-control-allow-origin": ""}
    assert body["zookeeper"] == {"servers": [], "timeout": 0, "root-path": ""}
    assert body["logging"] == {
        "filename": "",
        "max-size": 0,
        "max-backups": 0,
        "max-age": 0,
        "use-local-time": False,
        "use-compression": False,
        "level": "warn",  # this process's level, in zap's word
    }
    # the dashboard's address (the settings' defaults here) and gunicorn's worker timeout
    assert body["httpserver"]["default"] == {
        "address": "127.0.0.1:8050",
        "tls": "",
        "timeout": DASHBOARD_TIMEOUT_S,
    }
    assert burrow.head("/v3/config").status_code == 200


def test_storage_evaluator_and_cluster_modules(burrow, redis_client) -> None:
    write_sparse_group(redis_client)
    assert module_names(burrow, "storage") == ["default"]
    storage = module_answer(
        burrow, "/v3/config/storage/default", "storage module detail returned", STORAGE_FIELDS
    )
    # groupscope's Redis: the lag window's 10 slots, commits within 1 s sharing one, the retention
    assert storage == {
        "class-name": "redis",
        "intervals": WINDOW,
        "min-distance": 1,
        "group-allowlist": "",
        "expire-group": 7 * 24 * 3600,
    }
    assert WINDOW == 10
    assert module_names(burrow, "evaluator") == ["default"]
    evaluator = module_answer(
        burrow, "/v3/config/evaluator/default", "evaluator module detail returned", EVALUATOR_FIELDS
    )
    assert evaluator == {"class-name": "groupscope", "expire-cache": 0}
    # the cluster modules: the clusters /v3/kafka lists, each answered as /v3/kafka/{cluster}
    clusters = burrow.get("/v3/kafka").get_json()["clusters"]
    assert module_names(burrow, "cluster") == clusters == ["default", "gaps", "prod"]
    for c in clusters:
        url = f"/v3/config/cluster/{c}"
        body = check_answer(burrow.get(url), DOC_CLUSTER_DETAIL, url)
        assert body["module"] == burrow.get(f"/v3/kafka/{c}").get_json()["module"]
        assert set(body["module"]) == CLUSTER_MODULE_FIELDS
    check_error(burrow, "/v3/config/cluster/nocluster", "cluster module not found")


def test_one_consumer_module_per_cluster(burrow, redis_client) -> None:
    write_sparse_group(redis_client)
    assert module_names(burrow, "consumer") == ["default", "gaps", "prod"]
    message = "consumer module detail returned"
    prod = module_answer(burrow, "/v3/config/consumer/prod", message, CONSUMER_MODULE_FIELDS)
    assert set(prod["client-profile"]) == CLIENT_PROFILE_FIELDS
    assert prod == {
        "class-name": "kafka",
        "cluster": "prod",
        "servers": ["prod-kafka:9092"],  # as its collector registered them
        "group-allowlist": "",
        "zookeeper-path": "",
        "zookeeper-timeout": 0,
        "client-profile": burrow.get("/v3/kafka/prod").get_json()["module"]["client-profile"],
        "offsets-topic": "__consumer_offsets",
        "start-latest": False,  # the collector reads the offsets topic from its earliest offset
    }
    gaps = module_answer(burrow, "/v3/config/consumer/gaps", message, CONSUMER_MODULE_FIELDS)
    assert gaps["servers"] == ["kafka-a:9092", "kafka-b:9093"] and gaps["cluster"] == "gaps"
    default = module_answer(burrow, "/v3/config/consumer/default", message, CONSUMER_MODULE_FIELDS)
    assert default["servers"] == []  # no collector registered it


def test_an_unknown_module_is_burrows_404(burrow) -> None:
    for coordinator in ("storage", "evaluator", "consumer", "notifier"):
        check_error(burrow, f"/v3/config/{coordinator}/nope", f"{coordinator} module not found")
    check_error(burrow, "/v3/config/consumer/nocluster", "consumer module not found")
    # URLs Burrow does not serve: its catch-all
    for url in ("/v3/config/storage/default/more", "/v3/config/tls", "/v3/admin", "/v3/admin/nope"):
        r = burrow.get(url)
        assert r.status_code == 404, url
        assert r.get_json() == {"error": True, "message": "invalid request type", "result": {}}, url
    # no notifier configured: none listed
    assert module_names(burrow, "notifier") == []


def test_methods_other_than_get_are_refused(burrow) -> None:
    for method in ("post", "put", "patch", "delete"):
        for url in ("/v3/config", "/v3/config/storage/default", f"/v3/kafka/prod/consumer/{BURROW_GROUP}"):
            r = getattr(burrow, method)(url)
            assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD", (method, url)
            assert r.get_json()["error"] is True and "read-only" in r.get_json()["message"]
        if method != "post":
            r = getattr(burrow, method)("/v3/admin/loglevel")
            assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD, POST", method


def test_notifiers_are_alertings_own_in_burrows_classes_without_a_secret(configured) -> None:
    names = module_names(configured, "notifier")
    assert names == ["am", "am-token", "chat", "hook", "mail"]
    message = "notifier module detail returned"
    allow = r"^pay\.ments$|(?:^orders-)"  # the alerts' group allow list as one regular expression

    def notifier(name: str, cls: str) -> dict[str, Any]:
        return module_answer(configured, f"/v3/config/notifier/{name}", message, NOTIFIER_FIELDS[cls])

    assert notifier("hook", "http") == {
        "class-name": "http",
        "group-allowlist": allow,
        "interval": 3,  # the worker's evaluation interval (2.5 s), in Burrow's whole seconds
        "threshold": 2,
        "timeout": 3,
        "keepalive": 0,
        "url-open": "https://hooks.example.com/notify?token=***",
        "url-close": "https://hooks.example.com/notify?token=***",
        "method-open": "POST",
        "method-close": "POST",
        "template-open": "",
        "template-close": "",
        "extra": {},  # its headers are never said
        "send-close": True,
        "extra-ca": "",
        "noverify": "",
    }
    assert notifier("chat", "slack") == {
        "class-name": "slack",
        "group-allowlist": allow,
        "interval": 3,
        "threshold": 2,
        "timeout": 4,  # alerting's notify.timeout_s
        "keepalive": 0,
        "template-open": "",
        "template-close": "",
        "extra": {},
        "send-close": True,
        "channel": "#kafka",
        "username": "groupscope",
        "icon-url": "",
        "icon-emoji": "",
    }
    assert notifier("mail", "email") == {
        "class-name": "email",
        "group-allowlist": allow,
        "interval": 3,
        "threshold": 3,  # critical alerts only: Burrow's ERR
        "template-open": "",
        "template-close": "",
        "extra": {},
        "send-close": False,  # firing only
        "server": "smtp.example.com",
        "port": 587,
        "auth-type": "plain",
        "username": "alerts",
        "from": "groupscope@example.com",
        "to": "ops@example.com,kafka@example.com",
        "extra-ca": "",
        "noverify": "",
    }
    am = notifier("am", "http")
    assert am["url-open"] == am["url-close"] == "http://***@alertmanager:9093/prefix/api/v2/alerts"
    assert (am["interval"], am["extra"], am["extra-ca"], am["noverify"]) == (
        30,  # re-posted every resend_s while it fires
        {"team": "kafka"},
        "/etc/ssl/private-ca.pem",
        "true",
    )
    assert notifier("am-token", "http")["url-open"] == "https://alertmanager.example.com/api/v2/alerts"
    # no secret in any answer of the configuration endpoints, nor in the cluster details
    urls = ["/v3/config", "/v3/admin/loglevel"]
    for coordinator in ("storage", "evaluator", "cluster", "consumer", "notifier"):
        urls += [f"/v3/config/{coordinator}"]
        urls += [f"/v3/config/{coordinator}/{n}" for n in module_names(configured, coordinator)]
    urls += [f"/v3/kafka/{c}" for c in module_names(configured, "cluster")]
    for url in urls:
        r = configured.get(url)
        assert r.status_code == 200, url
        for secret in SECRETS:
            assert secret not in r.get_data(as_text=True), (url, secret)
    # the registered server's password masked, its host and port kept
    leaky = configured.get("/v3/config/consumer/leaky").get_json()["module"]
    assert leaky["servers"] == ["SSL://***@k1:9093", "k2:9093"]


def test_the_settings_say_the_address_retention_and_offsets_topic(configured) -> None:
    main = configured.get("/v3/config").get_json()
    assert main["httpserver"] == {"default": {"address": "0.0.0.0:8123", "tls": "", "timeout": 60}}
    storage = configured.get("/v3/config/storage/default").get_json()["module"]
    assert storage["expire-group"] == 86_400
    # prod's own offsets topic; the others the top-level one
    assert (
        configured.get("/v3/config/consumer/prod").get_json()["module"]["offsets-topic"] == "__prod_offsets"
    )
    assert configured.get("/v3/config/consumer/default").get_json()["module"]["offsets-topic"] == (
        "__consumer_offsets"
    )


def test_a_kind_no_burrow_class_sends_as_is_a_null_notifier() -> None:
    from coordinator_model.alert_rules import parse_alert_config
    from dashboard.api_burrow import notifier_module

    module = notifier_module({"name": "pager", "type": "pagerduty"}, parse_alert_config(None), Settings())
    assert set(module) == NOTIFIER_FIELDS["null"] and module["class-name"] == "null"
    assert module["send-close"] is True and module["group-allowlist"] == ""


def log_level(client: Any) -> str:
    r = client.get("/v3/admin/loglevel")
    assert r.status_code == 200
    body = r.get_json()
    assert set(body) == LOGLEVEL_FIELDS and body["error"] is False and body["message"] == "log level returned"
    assert body["request"] == {"url": "/v3/admin/loglevel", "host": body["request"]["host"]}
    return body["level"]


def set_level(client: Any, body: str | bytes, status: int = 200, **headers: str) -> dict[str, Any]:
    r = client.post("/v3/admin/loglevel", data=body, headers=headers)
    assert r.status_code == status, (body, r.data[:300])
    return r.get_json()


def test_the_log_level_round_trip(burrow, root_level) -> None:
    import logging

    root_level.setLevel(logging.WARNING)
    assert log_level(burrow) == "warn"
    for asked, level, said in (
        ("debug", logging.DEBUG, "debug"),
        ("INFO", logging.INFO, "info"),
        ("trace", logging.DEBUG, "debug"),
        ("Warning", logging.WARNING, "warn"),
        ("warn", logging.WARNING, "warn"),
        ("error", logging.ERROR, "error"),
        ("fatal", logging.CRITICAL, "fatal"),
    ):
        body = set_level(burrow, json.dumps({"level": asked}))
        assert set(body) == SET_LOGLEVEL_FIELDS and body["error"] is False, asked
        assert body["message"] == "set log level" and body["request"]["url"] == "/v3/admin/loglevel"
        # this process's logging really runs at it: the dashboard's loggers inherit it
        assert root_level.level == level, asked
        assert logging.getLogger("groupscope.dashboard").getEffectiveLevel() == level
        assert logging.getLogger("collectors.storage.redis_store").isEnabledFor(level)
        assert not logging.getLogger("collectors.storage.redis_store").isEnabledFor(level - 1)
        assert log_level(burrow) == said and burrow.get("/v3/config").get_json()["logging"]["level"] == said
    # read as Burrow's json.Decoder reads the body: the key case aside, what follows the value unread
    set_level(burrow, '{"LEVEL": "info", "other": 1} and then anything')
    assert root_level.level == logging.INFO


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ("", 400, "could not decode message body"),
        ("level=debug", 400, "could not decode message body"),
        ('["debug"]', 400, "could not decode message body"),
        ('{"level": 10}', 400, "could not decode message body"),
        ('{"level": "debug"', 400, "could not decode message body"),
        (b"\xff\xfe", 400, "could not decode message body"),
        ('{"level": "loud"}', 404, "unknown log level"),
        ('{"level": ""}', 404, "unknown log level"),
        ("{}", 404, "unknown log level"),
        ("null", 404, "unknown log level"),
    ],
)
def test_a_bad_log_level_body_changes_nothing(burrow, root_level, body, status: int, message: str) -> None:
    import logging

    root_level.setLevel(logging.ERROR)
    answered = set_level(burrow, body, status)
    assert answered["error"] is True and answered["message"] == message
    assert (
        set(answered) == {"error", "message", "request"}
        and answered["request"]["url"] == "/v3/admin/loglevel"
    )
    assert root_level.level == logging.ERROR and log_level(burrow) == "error"


def test_a_cross_site_browser_post_is_refused(burrow, root_level) -> None:
    import logging

    root_level.setLevel(logging.ERROR)
    debug = json.dumps({"level": "debug"})
    body = set_level(burrow, debug, 403, Origin="https://evil.example")
    assert body["error"] is True and "cross-site" in body["message"]
    set_level(burrow, debug, 403, **{"Sec-Fetch-Site": "cross-site"})
    assert root_level.level == logging.ERROR
    # the dashboard's own page (its origin) and a script (no Origin) may
    set_level(burrow, debug, 200, Origin="http://localhost")
    assert root_level.level == logging.DEBUG
    set_level(burrow, json.dumps({"level": "error"}))
    assert root_level.level == logging.ERROR


def test_basic_auth_guards_the_configuration_and_admin_endpoints(
    redis_client, redis_server, root_level
) -> None:
    import base64
    import logging

    seed(redis_client)
    app = create_app(
        Settings(redis_url=redis_server.url, dashboard_user="ops", dashboard_password="s3cret"),
        background_mode="celery",
    )
    client = app.server.test_client()
    good = {"Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()}
    wrong = {"Authorization": "Basic " + base64.b64encode(b"ops:wrong").decode()}
    urls = ["/v3/config", "/v3/config/storage", "/v3/config/storage/default", "/v3/config/evaluator/default"]
    urls += ["/v3/config/cluster/prod", "/v3/config/consumer", "/v3/config/consumer/prod"]
    urls += ["/v3/config/notifier", "/v3/admin/loglevel"]
    for url in urls:
        r = client.get(url)
        assert r.status_code == 401 and "Basic" in r.headers["WWW-Authenticate"], url
        assert client.get(url, headers=wrong).status_code == 401, url
        r = client.get(url, headers=good)
        assert r.status_code == 200 and "s3cret" not in r.get_data(as_text=True), url
    # the one endpoint that changes something: refused without credentials, nothing changed
    root_level.setLevel(logging.ERROR)
    debug = json.dumps({"level": "debug"})
    for headers in ({}, wrong):
        assert client.post("/v3/admin/loglevel", data=debug, headers=headers).status_code == 401
    assert root_level.level == logging.ERROR
    assert client.post("/v3/admin/loglevel", data=debug, headers=good).status_code == 200
    assert root_level.level == logging.DEBUG
