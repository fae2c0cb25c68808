"""The dashboard's reads against the harness's real Redis: the fleet grid's server-side paging,
sorting and filtering through RedisStore, the group page's outputs, health when Redis is down, and
basic authentication."""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from browser.dashboard_fill import CAPTURES, model_docs

from collectors.config import Settings
from collectors.demo.servers.processes import free_port
from collectors.storage.redis_store import RedisStore
from coordinator_model.document.types import GroupDocument, LagDoc, MemberDoc, PartitionLag, TimelineSpan
from dashboard.app import create_app
from dashboard.data import DashboardData, fleet_page, topics_page
from dashboard.pages.group import group_outputs
from dashboard.pages.topic import topic_outputs
from dashboard.pages.whatif import compute_outputs

pytestmark = pytest.mark.servers


def _doc(i: int, state: str, lag: int, topic: str = "t") -> dict:
    """A group of one member owning partition 0 of `topic`, as the engine writes it; every fifth a
    KIP-848 consumer group (epochs, no generation)."""
    modern = i % 5 == 0
    return GroupDocument(
        group=f"g{i:04d}",
        type="consumer" if modern else "classic",
        state=state,
        protocol="range",
        generation=None if modern else i,
        group_epoch=i if modern else None,
        assignment_epoch=i if modern else None,
        members=[
            MemberDoc(f"m{i}", assignment=[(topic, 0)], modern=modern, member_epoch=i if modern else None)
        ],
        timeline=[TimelineSpan(state, 1_000 + i)],
        lag=LagDoc(
            total=lag,
            max_seconds=lag / 10,
            partitions=[PartitionLag(topic, 0, lag=lag, lag_seconds=lag / 10, member_id=f"m{i}")],
        ),
    ).to_json()


@pytest.fixture()
def fleet(redis_client, redis_server) -> DashboardData:
    store = RedisStore(redis_client)
    states = ["Stable", "Empty", "PreparingRebalance"]
    store.write_groups([_doc(i, states[i % 3], (i * 37) % 1000) for i in range(300)], int(time.time() * 1000))
    return DashboardData(redis_server.url)


def test_grid_pages_sorted_and_filtered_on_the_server(fleet: DashboardData) -> None:
    req = {
        "startRow": 0,
        "endRow": 50,
        "sortModel": [{"colId": "lag", "sort": "desc"}],
        "filterModel": {"state": {"filterType": "text", "type": "equals", "filter": "Stable"}},
    }
    page = fleet_page(fleet, req)
    rows = page["rowData"]
    assert page["rowCount"] == 100 and len(rows) == 50
    assert all(r["state"] == "Stable" for r in rows)
    lags = [r["lag"] for r in rows]
    assert lags == sorted(lags, reverse=True) and lags[0] == max((i * 37) % 1000 for i in range(0, 300, 3))
    # the next block continues where the first ended
    nxt = fleet_page(fleet, {**req, "startRow": 50, "endRow": 100})["rowData"]
    assert nxt[0]["lag"] <= lags[-1] and not {r["name"] for r in nxt} & {r["name"] for r in rows}
    # KIP-848 groups show their group epoch in the generation column
    assert all(r["gen_or_epoch"] == r["group_epoch"] for r in rows if r["type"] == "consumer")


def test_grid_name_and_type_filters(fleet: DashboardData) -> None:
    page = fleet_page(
        fleet,
        {
            "startRow": 0,
            "endRow": 100,
            "filterModel": {
                "name": {"filterType": "text", "type": "contains", "filter": "g01"},
                "type": {"filterType": "text", "type": "equals", "filter": "consumer"},
            },
        },
    )
    names = [r["name"] for r in page["rowData"]]
    assert names == sorted(f"g{i:04d}" for i in range(100, 200) if i % 5 == 0)
    assert page["rowCount"] == len(names) == 20


def test_group_outputs_from_a_real_capture(redis_client, redis_server) -> None:
    doc = model_docs(CAPTURES / "classic-range-lifecycle")[0]
    RedisStore(redis_client).write_group(doc, int(time.time() * 1000), as_of_ms=doc["as_of"])
    data = DashboardData(redis_server.url)
    out = group_outputs(data, doc["group"], -1)
    header, _note, timeline, gens_fig, gens_rows = out[:5]
    assert len(gens_rows) == len(doc["generations"]) and gens_rows[0]["generation"] == 1
    assert sum(len(t.x) for t in gens_fig.data) == len(doc["generations"])
    assert {t.name for t in timeline.data} == {b["state"] for b in doc["timeline"]}
    assert "Empty" in str(header) and str(doc["generation"]) in str(header)
    # an unknown group is an explanation, not an error
    missing = group_outputs(data, "no such group", -1)
    assert "No group named" in str(missing[0])


def test_topics_grid_pages_on_the_server_and_the_topic_page_outputs(redis_client, redis_server) -> None:
    store = RedisStore(redis_client)
    # 30 groups over 10 topics: group i reads topic t{i % 10}
    docs = [_doc(i, "Stable", i, topic=f"t{i % 10}") for i in range(30)]
    store.write_groups(docs, int(time.time() * 1000))
    data = DashboardData(redis_server.url)
    req = {"startRow": 2, "endRow": 5, "sortModel": [{"colId": "lag", "sort": "desc"}], "filterModel": {}}
    page = topics_page(data, req)
    assert page["rowCount"] == 10 and [r["name"] for r in page["rowData"]] == ["t7", "t6", "t5"]
    assert page["rowData"][0]["lag"] == 27 and page["rowData"][0]["groups"] == 3
    req = {"startRow": 0, "endRow": 50, "filterModel": {"name": {"filterType": "text", "filter": "t1"}}}
    assert [r["name"] for r in topics_page(data, req)["rowData"]] == ["t1"]
    # an unsortable column falls back to name order
    req = {"startRow": 0, "endRow": 3, "sortModel": [{"colId": "end_offsets", "sort": "desc"}]}
    assert [r["name"] for r in topics_page(data, req)["rowData"]] == ["t0", "t1", "t2"]
    header, rows, heat, _lines = topic_outputs(data, "t3", "lag", 3_600_000)
    assert [r["group"] for r in rows] == ["g0023", "g0013", "g0003"]  # worst lag first
    values = {getattr(c.children[0], "id", None): c.children[0].children for c in header.children}
    assert values["topic-groups-count"] == "3" and values["topic-lag-total"] == "23"
    assert heat["data"][0]["y"] == ["g0023", "g0013", "g0003"]
    missing = topic_outputs(data, "nope", "lag", 3_600_000)
    assert "No group reads a topic named 'nope'" in str(missing[0]) and missing[1] == []


def test_a_stored_value_that_is_not_a_document_is_a_message(redis_client, redis_server) -> None:
    """The group and what-if pages say the stored document cannot be read; nothing crashes."""
    store = RedisStore(redis_client)
    good = _doc(1, "Stable", 5)
    bad = {**good, "group": "broken", "members": [{"client_id": "no member id"}]}
    redis_client.set(store.group_key("broken", "doc"), json.dumps(bad))
    data = DashboardData(redis_server.url)
    out = group_outputs(data, "broken", 3_600_000)
    assert "The stored document of group 'broken' cannot be read" in str(out[0])
    assert "malformed document" in str(out[0]) and out[7] == [] and out[10] == []
    results, status, *errors = compute_outputs(data, "broken", {"assignors": ["range"]}, lambda i, n: None)
    assert "cannot be read" in status and "malformed document" in str(results) and not any(errors)
    # the lag chart's callback, through Dash: a figure that says so
    app = create_app(Settings(redis_url=redis_server.url), background_mode="celery")
    body = {
        "output": "group-lag.figure",
        "outputs": {"id": "group-lag", "property": "figure"},
        "inputs": [
            {"id": "tick", "property": "n_intervals", "value": 1},
            {"id": "group-range", "property": "value", "value": 3_600_000},
            {"id": "group-lag-metric", "property": "value", "value": "lag"},
            {"id": "group-lag-by", "property": "value", "value": "partition"},
            {"id": "url", "property": "pathname", "value": "/groups/broken"},
        ],
        "changedPropIds": ["tick.n_intervals"],
        "state": [],
    }
    resp = app.server.test_client().post("/_dash-update-component", json=body)
    assert resp.status_code == 200 and b"malformed document" in resp.data


def test_health_when_redis_is_unreachable() -> None:
    data = DashboardData(f"redis://:secret@127.0.0.1:{free_port()}/0", timeout_s=0.5)
    h = data.health()
    assert not h.reachable and "unreachable" in (h.error or "") and "secret" not in (h.error or "")


def test_health_reports_the_collector_heartbeat(redis_client, redis_server) -> None:
    RedisStore(redis_client).heartbeat_collector(int(time.time() * 1000) - 120_000, batch_id=7)
    h = DashboardData(redis_server.url).health()
    assert h.reachable and h.collector_age_s is not None and 119 <= h.collector_age_s < 200


def test_basic_auth_guards_every_route(redis_server) -> None:
    app = create_app(
        Settings(redis_url=redis_server.url, dashboard_user="ops", dashboard_password="s3cret"),
        background_mode="celery",
    )
    client = app.server.test_client()
    assert client.get("/").status_code == 401
    assert client.get("/_dash-layout").status_code == 401
    bad = base64.b64encode(b"ops:wrong").decode()
    assert client.get("/", headers={"Authorization": f"Basic {bad}"}).status_code == 401
    good = base64.b64encode(b"ops:s3cret").decode()
    assert client.get("/", headers={"Authorization": f"Basic {good}"}).status_code == 200
    # without credentials configured the dashboard is open
    open_app = create_app(Settings(redis_url=redis_server.url), background_mode="celery")
    assert open_app.server.test_client().get("/groups/x%2Fy").status_code == 200


def test_a_full_redis_is_said_on_every_page(redis_server, redis_client) -> None:
    """Redis at maxmemory with a policy that evicts nothing refuses the collector's writes (it waits,
    retrying): nothing the collector could write says so, so the dashboard asks Redis and says it in
    the banner, and says nothing once there is room again."""
    from collectors.storage.redis_store import RedisStore
    from dashboard.app import health_outputs
    from dashboard.data import DashboardData

    RedisStore(redis_client).heartbeat_collector(int(time.time() * 1000), batch_id=1, mode="live")
    data = DashboardData(redis_server.url)
    assert data.healths()[0].redis_full is None
    used = int(redis_client.info("memory")["used_memory"])
    policy = redis_client.config_get("maxmemory-policy")["maxmemory-policy"]
    try:
        redis_client.config_set("maxmemory-policy", "noeviction")
        redis_client.config_set("maxmemory", str(used))
        with pytest.raises(Exception, match="maxmemory"):  # OOM: what the collector meets
            redis_client.set("gs:probe", "x" * 100_000)
        [h] = data.healths()
        assert h.redis_full and "maxmemory" in h.redis_full and "noeviction" in h.redis_full
        _, banner, kind = health_outputs([h], 60.0, multi=False)
        assert kind == "banner error" and "Redis is full" in banner
    finally:
        redis_client.config_set("maxmemory", "0")
        redis_client.config_set("maxmemory-policy", policy)
    assert data.healths()[0].redis_full is None
