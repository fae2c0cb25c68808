"""Burrow's consumer endpoints on the dashboard's server (dashboard/api_burrow.py), against the
harness's real Redis: the shapes held against Burrow's documented answers (its wiki's HTTP endpoint
pages, and the JSON names of its Go structs, core/protocol/evaluator.go and storage.go, which the
wiki's examples predate), and the status of a group with real lag windows mapped from groupscope's
own evaluation of Burrow's rules."""

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
from collectors.storage.clusters import ClusterRegistry
from coordinator_model.document.types import GroupDocument, LagDoc, MemberDoc, PartitionLag
from coordinator_model.offsets import OffsetStore
from dashboard.api_burrow import group_status
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
