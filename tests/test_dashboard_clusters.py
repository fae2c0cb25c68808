"""The dashboard over several Kafka clusters in one Redis (each cluster's layout under its own prefix,
collectors/storage/clusters.py), against the harness's real Redis: URLs that carry the cluster (and
the legacy ones), the fleet grid merged across clusters page by page, the same group name in two
clusters with different members, alerts per cluster, and staleness named per cluster."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from browser.dashboard_fill import CAPTURES, model_docs, started_ms

from collectors.config import CLUSTER_NAME, Settings
from collectors.storage.clusters import ClusterRegistry, cluster_prefix
from collectors.storage.fleet_rows import KNOWN_STATES
from collectors.storage.redis_store import RedisStore
from coordinator_model.document.types import GroupDocument, LagDoc, MemberDoc, PartitionLag, TimelineSpan
from dashboard.app import create_app, health_outputs
from dashboard.data import DashboardData, Health, fleet_page, topics_page
from dashboard.pages import group as group_page
from dashboard.pages.group import group_outputs
from dashboard.pages.topic import topic_outputs
from dashboard.urls import (
    Route,
    alerts_url,
    fleet_url,
    group_url,
    parse_path,
    switch_cluster_url,
    topic_url,
    topics_url,
    whatif_url,
)

pytestmark = pytest.mark.servers

CLUSTERS = st.from_regex(CLUSTER_NAME, fullmatch=True)


# ---- URLs ------------------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=40), CLUSTERS)
def test_any_name_in_any_cluster_survives_its_urls(name: str, cluster: str) -> None:
    assert parse_path(group_url(name, cluster)) == Route("group", name, cluster=cluster)
    assert parse_path(whatif_url(name, cluster)) == Route("whatif", name, cluster=cluster)
    assert parse_path(topic_url(name, cluster)) == Route("topic", topic=name, cluster=cluster)
    assert parse_path(fleet_url(cluster)) == Route("fleet", cluster=cluster)
    assert parse_path(topics_url(cluster)) == Route("topics", cluster=cluster)
    assert parse_path(alerts_url(cluster)) == Route("alerts", cluster=cluster)
    # the cluster and the name are one path segment each, whatever they hold
    assert group_url(name, cluster).count("/") == 4 and whatif_url(name, cluster).count("/") == 5
    # without a cluster: the legacy URLs, as before clusters existed
    assert parse_path(group_url(name)) == Route("group", name)
    assert group_url(name, cluster).endswith(group_url(name))


def test_cluster_routes_and_legacy_urls() -> None:
    assert parse_path("/clusters/prod") == Route("fleet", cluster="prod")
    assert parse_path("/clusters/prod/") == Route("fleet", cluster="prod")
    assert parse_path("/clusters/prod/groups/a%2Fb") == Route("group", "a/b", cluster="prod")
    assert parse_path("/clusters/prod/groups/x/whatif") == Route("whatif", "x", cluster="prod")
    assert parse_path("/clusters/st.g-1/topics/t%2F1") == Route("topic", topic="t/1", cluster="st.g-1")
    assert parse_path("/clusters/prod/alerts") == Route("alerts", cluster="prod")
    # the old URLs mean no cluster in the URL (DashboardData.resolve: default or the only one)
    assert parse_path("/groups/x") == Route("group", "x") and parse_path("/groups/x").cluster is None
    assert parse_path("/topics/t") == Route("topic", topic="t")
    assert parse_path("/alerts") == Route("alerts")
    # not a cluster name (upper case, empty, a nested /clusters), or nothing behind it
    for bad in ("/clusters", "/clusters/Prod", "/clusters/-x", "/clusters/a/clusters/b", "/clusters/a/nope"):
        assert parse_path(bad).page == "not_found", bad
    # the switcher keeps the kind of list, and leaves a group for its cluster's fleet
    assert switch_cluster_url(parse_path("/clusters/a/topics/t"), "b") == "/clusters/b/topics"
    assert switch_cluster_url(parse_path("/alerts"), "b") == "/clusters/b/alerts"
    assert switch_cluster_url(parse_path("/clusters/a/groups/g"), "b") == "/clusters/b"
    assert switch_cluster_url(parse_path("/clusters/a/groups/g"), None) == "/"
    assert switch_cluster_url(parse_path("/clusters/a/topics"), None) == "/topics"


# ---- the merged fleet grid ---------------------------------------------------------------------------
# Names that sort differently by case, by accent and by byte, some in both clusters.
NAMES = ["a", "B", "b", "ab", "a b", "x/y", "é", "z", "Z9", "g:1", "{g}", "ü-1", "0", "orders"]
SORTS = {  # grid column -> (expected score of a generated group)
    "name": lambda g: 0,
    "lag": lambda g: g["lag"],
    "lag_seconds": lambda g: g["lag"] / 8,
    "members": lambda g: g["members"],
    "state": lambda g: KNOWN_STATES.index(g["state"]),
}


def _doc(name: str, state: str, lag: int, members: int) -> dict[str, Any]:
    """A classic group as the engine writes it: `members` members, partition 0 of `t` lagging."""
    return GroupDocument(
        group=name,
        state=state,
        generation=1,
        protocol="range",
        members=[MemberDoc(f"{name}-m{i}", assignment=[("t", i)]) for i in range(members)],
        timeline=[TimelineSpan(state, 1_000)],
        lag=LagDoc(
            total=lag,
            max_seconds=lag / 8,
            partitions=[
                PartitionLag(
                    "t", 0, lag=lag, lag_seconds=lag / 8, member_id=f"{name}-m0" if members else None
                )
            ],
        ),
    ).to_json()


GROUP = st.fixed_dictionaries(
    {
        "state": st.sampled_from(["Stable", "Empty", "PreparingRebalance"]),
        "lag": st.integers(0, 3),  # few values: many ties, broken by name then cluster
        "members": st.integers(0, 2),
    }
)
FLEET = st.dictionaries(st.sampled_from(NAMES), GROUP, max_size=len(NAMES))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    a=FLEET,
    b=FLEET,
    sort=st.sampled_from(sorted(SORTS)),
    descending=st.booleans(),
    start=st.integers(0, 30),
    size=st.integers(1, 12),
    name_filter=st.sampled_from([None, "b", "1"]),
    twins=st.sets(st.sampled_from(NAMES)),
)
def test_merged_pages_equal_sorting_the_union(
    redis_client, redis_server, a, b, sort, descending, start, size, name_filter, twins
) -> None:
    """Every block of the all-clusters grid is the block of the union of both clusters' groups,
    sorted by the column (ties by name, then cluster), with the sum of their totals."""
    # twins: the same group name with the same numbers in both clusters, tied but for the cluster
    b = {**b, **{n: a[n] for n in twins if n in a}}
    redis_client.flushdb()
    now = int(time.time() * 1000)
    fleets = {"a": a, "b": b}
    for cluster, groups in fleets.items():
        store = RedisStore(redis_client, prefix=cluster_prefix(cluster))
        for name, g in groups.items():
            store.write_group(_doc(name, g["state"], g["lag"], g["members"]), now)
    data = DashboardData(redis_server.url, clusters=["a", "b"], clusters_ttl_s=0)
    union = [
        (cluster, name, g)
        for cluster, groups in sorted(fleets.items())
        for name, g in groups.items()
        if name_filter is None or name_filter in name.lower()
    ]
    # stable sorts: by cluster first, then by (score, name) in the direction (ties keep cluster order)
    union.sort(key=lambda t: (SORTS[sort](t[2]), t[1]), reverse=descending)
    want = [(c, n) for c, n, _g in union[start : start + size]]
    req: dict[str, Any] = {
        "startRow": start,
        "endRow": start + size,
        "sortModel": [{"colId": sort, "sort": "desc" if descending else "asc"}],
        "filterModel": {"name": {"filterType": "text", "type": "contains", "filter": name_filter}}
        if name_filter
        else {},
    }
    page = fleet_page(data, req)
    assert [(r["cluster"], r["name"]) for r in page["rowData"]] == want
    assert page["rowCount"] == len(union)
    assert len({r["row_id"] for r in page["rowData"]}) == len(page["rowData"])
    # the cluster filter (what /clusters/b sets) reads one cluster only, as the single-cluster grid
    only_b = fleet_page(
        data,
        {**req, "filterModel": {**req["filterModel"], "cluster": {"filterType": "text", "filter": "b"}}},
    )
    want_b = [(c, n) for c, n, _g in union if c == "b"][start : start + size]
    assert [(r["cluster"], r["name"]) for r in only_b["rowData"]] == want_b
    # a name no cluster can have, typed in the column's filter, matches nothing
    bad = {**req, "filterModel": {"cluster": {"filterType": "text", "filter": "B!"}}}
    assert fleet_page(data, bad) == {"rowData": [], "rowCount": 0}


# ---- the same group in two clusters ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def k848() -> list[dict[str, Any]]:
    """The two KIP-848 groups of the real capture mid-run, three members each (different ones)."""
    cap = CAPTURES / "kip848-lifecycle"
    return model_docs(cap, started_ms(cap) + 50_000)


def _two_clusters(redis_client, k848: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`orders` in prod (k848-range's members) and in staging (k848-uniform's), both registered."""
    prod_doc = {**k848[0], "group": "orders"}
    staging_doc = {**k848[1], "group": "orders"}
    now = int(time.time() * 1000)
    registry = ClusterRegistry(redis_client)
    for cluster, doc in (("prod", prod_doc), ("staging", staging_doc)):
        store = RedisStore(redis_client, prefix=cluster_prefix(cluster))
        store.write_group(doc, now, as_of_ms=doc["as_of"])
        store.heartbeat_collector(now, batch_id=1, event_ms=now)
        registry.register(cluster, f"{cluster}:9092", now)
    return {"prod": prod_doc, "staging": staging_doc}


def dash_callback(
    app: Any,
    outputs: list[tuple[str, str]],
    inputs: list[tuple[str, str, Any]],
    state: list[tuple[str, str, Any]] | None = None,
) -> dict:
    """POST one callback to Dash's endpoint, as the browser does; {output id: {property: value}}.
    The route callback (`page.children`) is given an empty query string and no page shown before,
    as when a URL is first opened."""
    if state is None and outputs == [("page", "children")]:
        outputs = [("page", "children"), ("url-shown", "data")]
        inputs = [*inputs, ("url", "search", "")]
        state = [("url-shown", "data", None)]
    names = [f"{i}.{p}" for i, p in outputs]
    body = {
        "output": ".." + "...".join(names) + ".." if len(outputs) > 1 else names[0],
        "outputs": [{"id": i, "property": p} for i, p in outputs]
        if len(outputs) > 1
        else {"id": outputs[0][0], "property": outputs[0][1]},
        "inputs": [{"id": i, "property": p, "value": v} for i, p, v in inputs],
        "changedPropIds": [f"{inputs[0][0]}.{inputs[0][1]}"],
        "state": [{"id": i, "property": p, "value": v} for i, p, v in state or []],
    }
    resp = app.server.test_client().post("/_dash-update-component", json=body)
    assert resp.status_code == 200, resp.data[:800]
    return json.loads(resp.data)["response"]


GROUP_OUTPUTS = list(group_page.VIEW_OUTPUTS)


# what the what-if page's start from its URL sets: the group's current assignment, the members to
# remove and to change, the assignors chosen, and whether to compare at once
WHATIF_INIT = [
    ("wi-current", "children"),
    ("wi-remove_members", "options"),
    ("wi-sub_member", "options"),
    ("wi-assignors", "value"),
    ("wi-autorun", "data"),
]


def test_the_same_group_name_in_two_clusters_is_two_groups(redis_client, redis_server, k848) -> None:
    docs = _two_clusters(redis_client, k848)
    app = create_app(Settings(redis_url=redis_server.url), background_mode="celery")
    for cluster, doc in docs.items():
        out = dash_callback(
            app,
            GROUP_OUTPUTS,
            [
                ("tick", "n_intervals", 1),
                ("group-range", "value", -1),
                ("url", "pathname", group_url("orders", cluster)),
            ],
        )
        members = {m["member_id"] for m in out["group-members"]["rowData"]}
        assert members == {m["member_id"] for m in doc["members"]} and len(members) == 3, cluster
        # the committed-offsets rows link their topics inside the group's cluster
        assert {r["cluster"] for r in out["group-partitions"]["rowData"]} == {cluster}
    assert not {m["member_id"] for m in docs["prod"]["members"]} & {
        m["member_id"] for m in docs["staging"]["members"]
    }
    # the route's layout: the what-if link carries the cluster, the name shows its cluster
    page = dash_callback(app, [("page", "children")], [("url", "pathname", group_url("orders", "staging"))])
    text = json.dumps(page)
    assert whatif_url("orders", "staging") in text and '"page-cluster"' in text
    # the legacy URL means the cluster default, which has no such group here
    data = DashboardData(redis_server.url, clusters=["default"])
    assert "No group named 'orders' in cluster default" in str(group_outputs(data, "orders", -1)[0])
    # the fleet lists both, one row each, under their clusters; each cluster's page only its own
    rows = fleet_page(data, {"startRow": 0, "endRow": 50})["rowData"]
    assert [(r["cluster"], r["name"], r["members"]) for r in rows] == [
        ("prod", "orders", 3),
        ("staging", "orders", 3),
    ]
    assert len({r["row_id"] for r in rows}) == 2
    # topics: a topic of each cluster, each listing its cluster's group
    topics = topics_page(data, {"startRow": 0, "endRow": 50})["rowData"]
    assert {r["cluster"] for r in topics} == {"prod", "staging"}
    for cluster in docs:
        topic = next(r["name"] for r in topics if r["cluster"] == cluster)
        _header, groups, _heat, _lines = topic_outputs(data, topic, "lag", 3_600_000, cluster)
        assert [(g["group"], g["cluster"]) for g in groups] == [("orders", cluster)]
    # the what-if page's starting point is its URL's cluster's group
    for cluster, doc in docs.items():
        init = dash_callback(
            app,
            WHATIF_INIT,
            [("url", "pathname", whatif_url("orders", cluster))],
            [("wi-url", "data", {"assignors": None, "members": [], "run": False})],
        )
        assert set(init["wi-remove_members"]["options"]) == {m["member_id"] for m in doc["members"]}
        assert init["wi-assignors"]["value"] and "wi-autorun" not in init  # the defaults; no run
    # a what-if URL's form: its assignors, its member ids kept as choices (the comparison says one
    # is not the group's), and the comparison run at once
    init = dash_callback(
        app,
        WHATIF_INIT,
        [("url", "pathname", whatif_url("orders", "prod"))],
        [("wi-url", "data", {"assignors": ["sticky"], "members": ["nobody"], "run": True})],
    )
    ids = [m["member_id"] for m in docs["prod"]["members"]]
    assert init["wi-remove_members"]["options"] == [*ids, "nobody"]
    assert init["wi-assignors"]["value"] == ["sticky"] and init["wi-autorun"]["data"] == 1


def test_legacy_urls_read_the_only_cluster(redis_client, redis_server, k848) -> None:
    """With exactly one cluster (not named default), /groups/<g> is that cluster's group."""
    doc = {**k848[0], "group": "orders"}
    RedisStore(redis_client, prefix=cluster_prefix("prod")).write_group(doc, int(time.time() * 1000))
    ClusterRegistry(redis_client).register("prod", "prod:9092")
    data = DashboardData(redis_server.url, clusters=[])
    assert data.cluster_names() == ["prod"] and data.resolve(None) == "prod"
    out = group_outputs(data, "orders", -1)
    assert {m["member_id"] for m in out[7]} == {m["member_id"] for m in doc["members"]}
    # and a configured cluster appears, empty, before its collector ever ran
    data = DashboardData(redis_server.url, clusters=["default", "qa"])
    assert data.cluster_names() == ["default", "prod", "qa"] and data.resolve(None) == "default"


def test_alerts_of_every_cluster_carry_their_cluster(redis_client, redis_server) -> None:
    from collectors.storage.alerts import Alert, AlertStore

    now = int(time.time() * 1000)
    for i, cluster in enumerate(("prod", "staging")):
        store = AlertStore(redis_client, prefix=cluster_prefix(cluster))
        p = redis_client.pipeline()
        store.queue_fire(
            p, Alert("orders", "lagging", "firing", "warning", f"{cluster} lags", now - i * 1000)
        )
        p.execute()
        ClusterRegistry(redis_client).register(cluster, None, now)
    data = DashboardData(redis_server.url, clusters=[])
    active, history = data.alerts()
    assert [(a["cluster"], a["group"], a["summary"]) for a in active] == [
        ("prod", "orders", "prod lags"),
        ("staging", "orders", "staging lags"),
    ]
    assert {a["cluster"] for a in history} == {"prod", "staging"}
    active, _ = data.alerts("staging")
    assert [a["summary"] for a in active] == ["staging lags"]
    # whether alerts are set up at all: an evaluation cycle ran (`groupscope worker`) for the cluster
    assert not data.alerts_evaluated("staging")
    from collectors.alerts.evaluate import Evaluator
    from coordinator_model.alert_rules import parse_alert_config

    Evaluator(redis_client, parse_alert_config(None), prefix=cluster_prefix("staging")).run_cycle(now_ms=now)
    assert data.alerts_evaluated("staging") and data.alerts_evaluated() and not data.alerts_evaluated("prod")
    # the page: a cluster column and rows whose group links carry it
    app = create_app(Settings(redis_url=redis_server.url), background_mode="celery")
    out = dash_callback(
        app,
        [("alerts-body", "children"), ("alerts-active", "rowData"), ("alerts-history", "rowData")],
        [("tick", "n_intervals", 1), ("url", "pathname", "/clusters/prod/alerts")],
    )
    assert [(r["cluster"], r["group"]) for r in out["alerts-active"]["rowData"]] == [("prod", "orders")]


# ---- staleness per cluster ------------------------------------------------------------------------------
def test_the_banner_names_only_the_stale_cluster(redis_client, redis_server, k848) -> None:
    _two_clusters(redis_client, k848)
    now = int(time.time() * 1000)
    RedisStore(redis_client, prefix=cluster_prefix("staging")).heartbeat_collector(now - 120_000, batch_id=2)
    app = create_app(Settings(redis_url=redis_server.url), background_mode="celery")
    outs = [("freshness", "children"), ("banner", "children"), ("banner", "className")]

    def banner(path: str) -> tuple[str, str, str]:
        got = dash_callback(app, outs, [("tick", "n_intervals", 1), ("url", "pathname", path)])
        return (
            json.dumps(got["freshness"]["children"]),
            json.dumps(got.get("banner", {}).get("children")),
            got.get("banner", {}).get("className", ""),
        )

    fresh, text, cls = banner("/")
    assert "Cluster staging: " in text and "the collector is behind: its last batch was 2 min ago" in text
    assert "prod" not in text and cls == "banner warn"
    assert "prod: data from" in fresh and "staging: data from 2 min ago" in fresh
    # prod's own pages are not marked; staging's are, and its group page says so
    assert banner("/clusters/prod")[1] == "null" and banner(group_url("orders", "prod"))[1] == "null"
    assert "Cluster staging" in banner(group_url("orders", "staging"))[1]
    data = DashboardData(redis_server.url, clusters=[])
    stale = str(group_outputs(data, "orders", -1, "staging", behind_s=30.0)[0])
    assert "This group may be stale" in stale and "cluster staging's collector is behind" in stale
    assert "may be stale" not in str(group_outputs(data, "orders", -1, "prod", behind_s=30.0)[0])
    # a configured cluster whose collector never ran is named with the command that starts it
    quiet = create_app(
        Settings(redis_url=redis_server.url, clusters={"qa": {"bootstrap_servers": "qa:9092"}}),
        background_mode="celery",
    )
    got = dash_callback(quiet, outs, [("tick", "n_intervals", 1), ("url", "pathname", "/")])
    text = json.dumps(got["banner"]["children"])
    assert "Cluster qa: " in text and "groupscope collect --cluster qa" in text


def test_one_cluster_banner_reads_as_before() -> None:
    """With one cluster known, no cluster is named: the messages of the single-cluster dashboard."""
    behind = Health(reachable=True, collector_age_s=300.0, sources={}, cluster="default")
    text, msg, cls = health_outputs([behind], 30.0, multi=False)
    assert msg == "The collector is behind: its last batch was 5 min ago. Data may be stale."
    assert text == "data from 5 min ago" and cls == "banner warn"
    fine = Health(reachable=True, collector_age_s=3.0, sources={}, cluster="default")
    assert health_outputs([fine], 30.0, multi=False) == ("data from 3 s ago", None, "")
    down = Health(reachable=False, error="boom")
    assert health_outputs([down], 30.0, multi=True)[2] == "banner error"
