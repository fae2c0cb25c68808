"""The dashboard's read-only JSON API (dashboard/api.py, docs/api.md) against the harness's real
Redis, through the dashboard's own Flask server: every endpoint's status and shape, the fleet's
filters, sort and paging as the fleet grid gives them, a 4xx with a message for every bad parameter
and unknown cluster, group or topic, and the dashboard's basic authentication over all of it.

The seeding helpers here (two clusters; a fleet; a group whose name holds '/'; a group with real
Burrow windows in its offsets hash; alerts) are shared with tests/test_api_burrow.py and
tests/test_api_openapi.py."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest

from collectors.config import Settings
from collectors.demo.servers.processes import free_port
from collectors.storage.alerts import Alert, AlertStore
from collectors.storage.clusters import ClusterRegistry, cluster_prefix
from collectors.storage.group_offsets import encode
from collectors.storage.group_parts import head_json
from collectors.storage.redis_store import RedisStore
from coordinator_model.document.types import (
    GenerationDoc,
    GroupDocument,
    LagDoc,
    MemberDoc,
    PartitionLag,
    TimelineSpan,
)
from coordinator_model.offsets import OffsetState, OffsetStore
from dashboard.app import create_app
from dashboard.data import DashboardData, fleet_page, topics_page

pytestmark = pytest.mark.servers

NOW = int(time.time() * 1000)
STATES = ["Stable", "Empty", "PreparingRebalance"]
SLASHED = "orders/eu ?#%"  # a group name needing every escape a URL has
T0 = 1_700_000_000_000  # the slashed group's history


# ---- seeding -----------------------------------------------------------------------------------------
def fleet_doc(i: int) -> dict[str, Any]:
    """Group g{i:02d}: one member owning partition 0 of topic t{i % 3}; every fifth a KIP-848 group,
    g07 a share group."""
    modern = i % 5 == 0
    lag = (i * 37) % 100
    topic = f"t{i % 3}"
    return GroupDocument(
        group=f"g{i:02d}",
        type="share" if i == 7 else "consumer" if modern else "classic",
        state=STATES[i % 3],
        protocol="range",
        generation=None if modern else i,
        group_epoch=i if modern else None,
        members=[
            MemberDoc(
                f"m{i}",
                client_id=f"c{i}",
                client_host="/10.0.0.9",
                assignment=[(topic, 0)],
                modern=modern,
                member_epoch=i if modern else None,
            )
        ],
        timeline=[TimelineSpan(STATES[i % 3], 1_000 + i)],
        lag=LagDoc(
            total=lag,
            max_seconds=lag / 10,
            status="OK",
            partitions=[
                PartitionLag(
                    topic, 0, 100, True, 100 + lag, lag, lag / 10, "OK" if lag == 0 else "WARN", f"m{i}"
                )
            ],
            members=[],
        ),
        as_of=NOW,
    ).to_json()


def slashed_doc() -> dict[str, Any]:
    """A group with a history: three states and two generations between T0 and T0 + 60 s."""
    members = [
        MemberDoc(
            "a-1", client_id="orders-a", client_host="/10.0.0.1", assignment=[("orders", 0), ("orders", 1)]
        ),
        MemberDoc("b-1", client_id="orders-b", client_host="/10.0.0.2", assignment=[("orders", 2)]),
    ]
    return GroupDocument(
        group=SLASHED,
        state="Stable",
        protocol_type="consumer",
        protocol="range",
        generation=2,
        leader="a-1",
        members=members,
        timeline=[
            TimelineSpan("Empty", T0, T0 + 10_000),
            TimelineSpan("PreparingRebalance", T0 + 10_000, T0 + 20_000),
            TimelineSpan("CompletingRebalance", T0 + 20_000, T0 + 21_000, inferred=True),
            TimelineSpan("Stable", T0 + 21_000, T0 + 40_000),
            TimelineSpan("PreparingRebalance", T0 + 40_000, T0 + 45_000),
            TimelineSpan("Stable", T0 + 45_000),
        ],
        generations=[
            GenerationDoc(1, T0 + 10_000, T0 + 40_000, T0 + 21_000, T0 + 21_000, 11_000, members=["a-1"]),
            GenerationDoc(2, T0 + 40_000, None, T0 + 45_000, T0 + 45_000, 5_000, members=["a-1", "b-1"]),
        ],
        lag=LagDoc(
            total=5,
            max_seconds=1.5,
            status="OK",
            partitions=[
                PartitionLag("orders", 0, 10, True, 12, 2, 1.5, "OK", "a-1"),
                PartitionLag("orders", 1, 20, True, 23, 3, 1.0, "OK", "a-1"),
                PartitionLag("orders", 2, None, False, 7, None, None, "NO_COMMIT", "b-1"),
            ],
        ),
        as_of=T0 + 60_000,
    ).to_json()


BURROW_GROUP = "payments"
BURROW_TOPIC = "pay"


def burrow_offsets(now: int) -> OffsetStore:
    """Real lag windows over 12 commit slots 5 s apart, ending 5 s before `now`: partition 0 lags more
    at every commit (WARN), 1 commits the same offset (STALL), 2 is caught up (OK), 3 stopped
    committing (STOP), 4 went back once (REWIND), 5 is owned but never committed (NO_COMMIT)."""
    st = OffsetStore()
    base = now - 60_000
    for k in range(12):
        t = base + k * 5_000
        ends = {0: 1000 + 30 * k, 1: 600 + k, 2: 300 + 10 * k, 3: 2000 + 50 * k, 4: 900 + 10 * k, 5: 50}
        for p, e in ends.items():
            st.end_offset((BURROW_TOPIC, p), t, e)
        commits = {0: 900 + 10 * k, 1: 500, 2: 300 + 10 * k, 4: 800 + 5 * k - (40 if k == 9 else 0)}
        if k < 4:
            commits[3] = 1900 + 10 * k
        for p, o in commits.items():
            st.commit((BURROW_TOPIC, p), OffsetState(o, t - 7, t))
    return st


def burrow_doc(now: int, st: OffsetStore) -> GroupDocument:
    members = [
        MemberDoc(
            "pay-1-uuid",
            client_id="pay-1",
            client_host="/10.1.0.1",
            assignment=[(BURROW_TOPIC, p) for p in range(3)],
        ),
        MemberDoc(
            "pay-2-uuid",
            client_id="pay-2",
            client_host="/10.1.0.2",
            assignment=[(BURROW_TOPIC, p) for p in range(3, 6)],
        ),
    ]
    doc = GroupDocument(
        group=BURROW_GROUP,
        state="Stable",
        protocol_type="consumer",
        protocol="range",
        generation=3,
        leader="pay-1-uuid",
        members=members,
        timeline=[TimelineSpan("Stable", now - 120_000)],
        as_of=now,
    )
    doc.offsets = st.rows()
    doc.lag = st.lag(now, doc.owners())
    return doc


def write_burrow_group(client: Any, cluster: str, now: int, apart: bool = False) -> GroupDocument:
    """The group as the live collector keeps it: its document (whole, or `apart`: the head, with its
    offsets and the log ends beside it, put together by every reader) and its offsets hash."""
    st = burrow_offsets(now)
    doc = burrow_doc(now, st)
    store = RedisStore(client, prefix=cluster_prefix(cluster))
    store.write_groups([doc], now)
    p = client.pipeline()
    store.offsets.queue_fields(p, BURROW_GROUP, {tp: encode(st, tp) for tp in st.committed})
    p.execute()
    if apart:
        import json

        client.set(store.group_key(BURROW_GROUP, "doc"), json.dumps(head_json(doc), separators=(",", ":")))
        store.log_ends.merge({tp: list(zip(h.ts, h.offsets, strict=True)) for tp, h in st.ends.items()})
    return doc


def fire(
    client: Any, cluster: str, group: str, rule: str, severity: str, since: int, resolved: bool = False
) -> None:
    store = AlertStore(client, prefix=cluster_prefix(cluster))
    p = client.pipeline()
    a = Alert(
        group,
        rule,
        "firing",
        severity,
        f"{group} {rule} on {cluster}",
        since,
        updated=since,
        evidence={"n": 1},
    )
    store.queue_fire(p, a)
    if resolved:
        a.state, a.until = "resolved", since + 1000
        store.queue_resolve(p, a)
    p.execute()


def seed(client: Any) -> None:
    """Cluster `default`: 30 groups and the slashed one; cluster `prod`: the Burrow group; alerts in
    both (one resolved)."""
    store = RedisStore(client)
    store.write_groups([fleet_doc(i) for i in range(30)], NOW)
    store.write_groups([slashed_doc()], NOW, as_of_ms=T0 + 60_000)
    store.heartbeat_collector(NOW - 3_000, batch_id=1)
    ClusterRegistry(client).register("prod", "prod-kafka:9092", NOW)
    write_burrow_group(client, "prod", NOW)
    fire(client, "default", "g03", "lagging", "warning", NOW - 5_000)
    fire(client, "default", "g04", "stalled", "critical", NOW - 9_000, resolved=True)
    fire(client, "prod", BURROW_GROUP, "stalled", "critical", NOW - 1_000)


@pytest.fixture()
def api(redis_client, redis_server):
    """The dashboard's Flask test client over the seeded Redis."""
    seed(redis_client)
    app = create_app(Settings(redis_url=redis_server.url), background_mode="celery")
    return app.server.test_client()


def get(client: Any, url: str, status: int = 200) -> Any:
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.data[:400])
    assert r.mimetype == "application/json", (url, r.mimetype)
    return r.get_json()


def bad(client: Any, url: str, status: int, *words: str) -> str:
    """A 4xx whose body says what is wrong (naming each of `words`)."""
    body = get(client, url, status)
    assert body["status"] == status and body["error"] and body["message"], body
    for w in words:
        assert w in body["message"], (url, body["message"], w)
    return body["message"]


# ---- clusters ----------------------------------------------------------------------------------------
def test_index_and_clusters(api) -> None:
    idx = get(api, "/api/v1")
    assert idx["version"] == "v1" and "/api/v1/clusters/{cluster}/groups" in idx["endpoints"]
    assert get(api, "/api/v1/") == idx
    got = get(api, "/api/v1/clusters")["clusters"]
    assert [c["name"] for c in got] == ["default", "prod"]
    default, prod = got
    assert default["groups"] == 31 and default["groups_by_state"] == {
        "Stable": 11,
        "Empty": 10,
        "PreparingRebalance": 10,
    }
    assert default["topics"] == 4 and default["collector"]["ts"] == NOW - 3_000
    assert default["collector"]["age_s"] >= 3
    assert prod["bootstrap_servers"] == "prod-kafka:9092" and prod["registered_ms"] == NOW
    assert prod["groups"] == 1 and prod["collector"] is None and prod["sources"] == {}
    assert get(api, "/api/v1/clusters/prod") == prod
    bad(api, "/api/v1/clusters/staging", 404, "staging", "default, prod")
    bad(api, "/api/v1/clusters/Not%20A%20Name", 404, "Not A Name")


# ---- the fleet ---------------------------------------------------------------------------------------
def test_groups_are_filtered_sorted_and_paged_like_the_fleet_grid(api, redis_server) -> None:
    page = get(api, "/api/v1/clusters/default/groups?sort=lag&order=desc&state=Stable&limit=5")
    assert page["total"] == 11 and page["offset"] == 0 and page["limit"] == 5
    assert page["sort"] == "lag" and page["order"] == "desc"
    rows = page["groups"]
    assert len(rows) == 5 and all(r["state"] == "Stable" and r["cluster"] == "default" for r in rows)
    lags = [r["lag"] for r in rows]
    assert lags == sorted(lags, reverse=True)
    # the next page continues where this one ended
    nxt = get(api, "/api/v1/clusters/default/groups?sort=lag&order=desc&state=Stable&limit=5&offset=5")[
        "groups"
    ]
    assert nxt[0]["lag"] <= lags[-1] and not {r["name"] for r in nxt} & {r["name"] for r in rows}
    # the same rows, in the same order, as the fleet page's grid asks for them
    grid = fleet_page(
        DashboardData(redis_server.url),
        {
            "startRow": 5,
            "endRow": 10,
            "sortModel": [{"colId": "lag", "sort": "desc"}],
            "filterModel": {
                "state": {"filterType": "text", "type": "equals", "filter": "Stable"},
                "cluster": {"filterType": "text", "type": "equals", "filter": "default"},
            },
        },
    )
    assert [r["name"] for r in grid["rowData"]] == [r["name"] for r in nxt] and grid["rowCount"] == 11
    # several states (repeated or comma-separated, any case), type and name filters
    two = get(api, "/api/v1/clusters/default/groups?state=stable&state=EMPTY&limit=100")
    assert two["total"] == 21 and {r["state"] for r in two["groups"]} == {"Stable", "Empty"}
    assert get(api, "/api/v1/clusters/default/groups?state=Stable,Empty&limit=0") == {
        **two,
        "limit": 0,
        "groups": [],
    }
    modern = get(api, "/api/v1/clusters/default/groups?type=consumer")["groups"]
    assert [r["name"] for r in modern] == [f"g{i:02d}" for i in range(0, 30, 5)]
    named = get(api, "/api/v1/clusters/default/groups?name=G1&sort=members")
    assert named["total"] == 10 and {r["name"] for r in named["groups"]} == {f"g1{i}" for i in range(10)}
    slashed = get(api, "/api/v1/clusters/default/groups?name=orders%2F")["groups"]
    assert [r["name"] for r in slashed] == [SLASHED]
    # each sort key of the grid
    for key in ("name", "state", "lag", "lag_seconds", "rebalances_1h", "members", "last_change"):
        got = get(api, f"/api/v1/clusters/default/groups?sort={key}&limit=1000")
        assert got["total"] == 31 and len(got["groups"]) == 31, key
    # one cluster's groups only
    assert [r["name"] for r in get(api, "/api/v1/clusters/prod/groups")["groups"]] == [BURROW_GROUP]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("sort=size", ("sort", "size", "lag")),
        ("sort=rebalance_rate", ("sort", "rebalances_1h")),
        ("order=up", ("order", "asc")),
        ("limit=5000", ("limit", "1000")),
        ("limit=-1", ("limit",)),
        ("limit=ten", ("limit", "integer")),
        ("offset=-3", ("offset",)),
        ("offset=1.5", ("offset", "integer")),
        ("state=Rebalancing", ("state", "Rebalancing", "Stable")),
        ("type=streams", ("type", "classic")),
        ("sortby=lag", ("unknown", "sortby")),
        ("limit=5&limit=6", ("limit", "more than once")),
        ("name=" + "x" * 300, ("name", "256")),
    ],
)
def test_a_bad_fleet_parameter_is_a_400_that_says_which(api, query: str, words: tuple[str, ...]) -> None:
    bad(api, f"/api/v1/clusters/default/groups?{query}", 400, *words)


# ---- a group -----------------------------------------------------------------------------------------
def test_the_group_document_is_what_the_cli_prints(api, redis_client) -> None:
    url = "/api/v1/clusters/default/groups/orders%2Feu%20%3F%23%25"
    got = get(api, url)
    assert got["cluster"] == "default" and got["last_refreshed"] == NOW
    # the JSON `groupscope group NAME --json` prints (RedisStore.get_group)
    assert got["document"] == RedisStore(redis_client).get_group(SLASHED)
    doc = got["document"]
    assert doc["state"] == "Stable" and [m["member_id"] for m in doc["members"]] == ["a-1", "b-1"]
    assert doc["members"][0]["assignment"] == [["orders", 0], ["orders", 1]]
    assert [p["status"] for p in doc["lag"]["partitions"]] == ["OK", "OK", "NO_COMMIT"]
    # a group of the other cluster, and unknown ones
    assert get(api, f"/api/v1/clusters/prod/groups/{BURROW_GROUP}")["document"]["lag"]["status"] == "ERR"
    bad(api, "/api/v1/clusters/default/groups/nope", 404, "nope", "default")
    bad(api, f"/api/v1/clusters/default/groups/{BURROW_GROUP}", 404, BURROW_GROUP)
    bad(api, "/api/v1/clusters/qa/groups/g01", 404, "qa")
    bad(api, "/api/v1/clusters/default/groups/g01?verbose=1", 400, "verbose")
    # a trailing slash is the same URL; an empty segment or an unknown path is a 404 that says so
    assert get(api, url + "/") == got
    bad(api, "/api/v1/clusters/default/groups//timeline", 404, "empty")
    bad(api, "/api/v1/clusters/default/groups/g01/members", 404, "openapi.json")


def test_a_stored_value_that_is_not_a_document_is_a_500_with_a_message(api, redis_client) -> None:
    store = RedisStore(redis_client)
    redis_client.set(store.group_key("broken", "doc"), '{"group": "broken", "members": [{"client_id": "x"}]}')
    msg = bad(api, "/api/v1/clusters/default/groups/broken", 500, "broken", "malformed document")
    assert "cannot be read" in msg


def test_timeline_and_generations_over_a_time_range(api) -> None:
    base = "/api/v1/clusters/default/groups/orders%2Feu%20%3F%23%25"
    whole = get(api, base + "/timeline")
    assert whole["group"] == SLASHED and whole["since"] is None and whole["until"] is None
    assert [s["state"] for s in whole["timeline"]] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "PreparingRebalance",
        "Stable",
    ]
    # the spans in force at some moment of [since, until]
    part = get(api, f"{base}/timeline?since={T0 + 15_000}&until={T0 + 30_000}")
    assert part["since"] == T0 + 15_000 and part["until"] == T0 + 30_000
    assert [(s["state"], s["start"]) for s in part["timeline"]] == [
        ("PreparingRebalance", T0 + 10_000),
        ("CompletingRebalance", T0 + 20_000),
        ("Stable", T0 + 21_000),
    ]
    assert part["timeline"][1]["inferred"] is True
    late = get(api, f"{base}/timeline?since={T0 + 50_000}")["timeline"]
    assert [(s["state"], s["end"]) for s in late] == [("Stable", None)]
    gens = get(api, base + "/generations")["generations"]
    assert [g["generation"] for g in gens] == [1, 2] and gens[1]["members"] == ["a-1", "b-1"]
    assert [g["generation"] for g in get(api, f"{base}/generations?until={T0 + 39_000}")["generations"]] == [
        1
    ]
    # generation 2 is still in force long after it began
    assert [g["generation"] for g in get(api, f"{base}/generations?since={T0 + 50_000}")["generations"]] == [
        2
    ]
    bad(api, f"{base}/timeline?since={T0 + 2}&until={T0 + 1}", 400, "since", "until")
    bad(api, f"{base}/generations?since=yesterday", 400, "since", "integer")
    bad(api, f"{base}/timeline?from=1", 400, "from")
    bad(api, "/api/v1/clusters/default/groups/nope/timeline", 404, "nope")
    bad(api, "/api/v1/clusters/default/groups/nope/generations", 404, "nope")


# ---- topics ------------------------------------------------------------------------------------------
def test_topics_are_filtered_sorted_and_paged_like_the_topics_grid(api, redis_server) -> None:
    page = get(api, "/api/v1/clusters/default/topics?sort=lag&order=desc&limit=2")
    assert page["total"] == 4 and len(page["topics"]) == 2
    grid = topics_page(
        DashboardData(redis_server.url),
        {
            "startRow": 0,
            "endRow": 2,
            "sortModel": [{"colId": "lag", "sort": "desc"}],
            "filterModel": {"cluster": {"filterType": "text", "type": "equals", "filter": "default"}},
        },
    )
    assert [t["name"] for t in page["topics"]] == [r["name"] for r in grid["rowData"]]
    assert {k: v for k, v in grid["rowData"][0].items() if k not in ("cluster", "row_id")} == {
        **page["topics"][0],
        "lag_seconds": round(page["topics"][0]["lag_seconds"], 1),
    }
    assert [t["name"] for t in get(api, "/api/v1/clusters/default/topics?name=T1")["topics"]] == ["t1"]
    assert get(api, "/api/v1/clusters/default/topics?offset=3")["topics"][0]["name"] == "t2"
    bad(api, "/api/v1/clusters/default/topics?sort=size", 400, "sort", "partitions")
    bad(api, "/api/v1/clusters/default/topics?state=Stable", 400, "state")
    bad(api, "/api/v1/clusters/nope/topics", 404, "nope")


def test_a_topic_its_groups_and_their_partitions(api) -> None:
    got = get(api, "/api/v1/clusters/default/topics/orders")
    assert got["topic"]["name"] == "orders" and got["topic"]["groups"] == 1
    assert [g["group"] for g in got["groups"]] == [SLASHED]
    assert got["partitions"][SLASHED] == [
        {"partition": 0, "committed": 10, "end_offset": 12, "lag": 2, "lag_seconds": 1.5, "member_id": "a-1"},
        {"partition": 1, "committed": 20, "end_offset": 23, "lag": 3, "lag_seconds": 1.0, "member_id": "a-1"},
        {
            "partition": 2,
            "committed": None,
            "end_offset": 7,
            "lag": None,
            "lag_seconds": None,
            "member_id": "b-1",
        },
    ]
    t1 = get(api, "/api/v1/clusters/default/topics/t1")
    lags = [(g["lag_seconds"], g["lag"]) for g in t1["groups"]]
    assert lags == sorted(lags, reverse=True) and set(t1["partitions"]) == {g["group"] for g in t1["groups"]}
    bad(api, "/api/v1/clusters/default/topics/nope", 404, "nope")
    bad(api, "/api/v1/clusters/prod/topics/orders", 404, "orders", "prod")


# ---- alerts ------------------------------------------------------------------------------------------
def test_alerts_firing_now(api) -> None:
    got = get(api, "/api/v1/alerts")
    assert got["count"] == 2
    assert [(a["cluster"], a["group"], a["rule"]) for a in got["alerts"]] == [
        ("prod", BURROW_GROUP, "stalled"),
        ("default", "g03", "lagging"),
    ]  # newest first; the resolved one is not firing
    assert all(a["state"] == "firing" and a["until"] is None for a in got["alerts"])
    assert get(api, "/api/v1/alerts?cluster=default")["alerts"][0]["id"] == f"g03|lagging|{NOW - 5_000}"
    assert (
        get(api, "/api/v1/alerts?severity=critical")["alerts"][0]["id"]
        == f"prod/{BURROW_GROUP}|stalled|{NOW - 1_000}"
    )
    assert get(api, "/api/v1/alerts?group=g03&rule=lagging")["count"] == 1
    assert get(api, "/api/v1/alerts?group=g04") == {"count": 0, "alerts": []}
    bad(api, "/api/v1/alerts?cluster=nope", 404, "nope")
    bad(api, "/api/v1/alerts?state=resolved", 400, "state")


# ---- methods, authentication, Redis down -------------------------------------------------------------
def test_the_api_is_read_only(api) -> None:
    for method in ("post", "put", "patch", "delete"):
        r = getattr(api, method)("/api/v1/clusters/default/groups/g01")
        assert r.status_code == 405 and "read-only" in r.get_json()["message"]
        assert r.headers["Allow"] == "GET, HEAD"
    assert api.head("/api/v1/clusters").status_code == 200


def test_basic_auth_guards_the_api_and_burrows_endpoints(redis_client, redis_server) -> None:
    seed(redis_client)
    app = create_app(
        Settings(redis_url=redis_server.url, dashboard_user="ops", dashboard_password="s3cret"),
        background_mode="celery",
    )
    client = app.server.test_client()
    urls = [
        "/api/v1",
        "/api/v1/openapi.json",
        "/api/v1/clusters",
        "/api/v1/clusters/default/groups",
        "/api/v1/clusters/default/groups/g01",
        "/api/v1/alerts",
        "/v3/kafka",
        f"/v3/kafka/prod/consumer/{BURROW_GROUP}/lag",
        "/burrow/admin",
    ]
    wrong = base64.b64encode(b"ops:wrong").decode()
    good = base64.b64encode(b"ops:s3cret").decode()
    for url in urls:
        r = client.get(url)
        assert r.status_code == 401 and "Basic" in r.headers["WWW-Authenticate"], url
        assert client.get(url, headers={"Authorization": f"Basic {wrong}"}).status_code == 401, url
        assert client.get(url, headers={"Authorization": f"Basic {good}"}).status_code == 200, url
    assert client.delete("/api/v1/alerts").status_code == 401  # authentication comes first


def test_redis_unreachable_is_a_503_with_a_message(redis_server) -> None:
    data = DashboardData(f"redis://:secret@127.0.0.1:{free_port()}/0", timeout_s=0.5)
    app = create_app(Settings(redis_url=redis_server.url), data=data, background_mode="celery")
    client = app.server.test_client()
    for url in ("/api/v1/clusters", "/api/v1/clusters/default/groups", "/api/v1/alerts"):
        msg = bad(client, url, 503, "unreachable")
        assert "secret" not in msg
    r = client.get("/v3/kafka/default/consumer")
    assert r.status_code == 503 and r.get_json()["error"] is True
