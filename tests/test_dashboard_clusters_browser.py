"""The dashboard of two Kafka clusters in headless Chromium, over the harness's real Redis: `prod` and
`staging`, each written as its collector writes it (RedisStore under the cluster's prefix, the
cluster registry, a heartbeat; staging's five minutes old), from the coordinator model's documents
of the real Kafka 4.0 captures. A group `orders` is in both clusters with different members. Checks
the fleet of both (cluster column, counts by cluster, the banner naming only staging), the header's
switcher taking you to one cluster, and each cluster's `orders` page with its own members; saves
screenshots to test-artifacts/."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from browser.dashboard_driver import (
    chromium,
    grid_cells,
    serve_in_thread,
    shoot,
    text,
    unreadable_headers,
    wait_for,
)
from browser.dashboard_fill import CAPTURES, model_docs, started_ms

from collectors.demo.servers.processes import RedisServer
from dashboard.urls import group_url

pytestmark = [pytest.mark.browser, pytest.mark.servers]

DB = 6  # a database of its own: other tests flush database 0, the single-cluster browser tests use 3-4


@pytest.fixture(scope="module")
def two_clusters(redis_server: RedisServer) -> Iterator[dict[str, Any]]:
    import redis

    from collectors.storage.alerts import Alert, AlertStore
    from collectors.storage.clusters import ClusterRegistry, cluster_prefix
    from collectors.storage.redis_store import RedisStore

    url = f"redis://{redis_server.host}:{redis_server.port}/{DB}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    cap = CAPTURES / "kip848-lifecycle"
    k848 = {d["group"]: d for d in model_docs(cap, started_ms(cap) + 50_000)}
    crl = model_docs(CAPTURES / "classic-range-lifecycle")[0]
    docs = {
        "prod": {
            "orders": {**k848["k848-range-060433h"], "group": "orders"},
            "k848-uniform-060433h": k848["k848-uniform-060433h"],
            crl["group"]: crl,
        },
        "staging": {
            "orders": {**k848["k848-uniform-060433h"], "group": "orders"},
            "payments": {**crl, "group": "payments"},
        },
    }
    now = int(time.time() * 1000)
    registry = ClusterRegistry(client)
    for cluster, groups in docs.items():
        store = RedisStore(client, prefix=cluster_prefix(cluster))
        for d in groups.values():
            store.write_group(d, now, as_of_ms=d.get("as_of"))
        beat = now if cluster == "prod" else now - 300_000
        store.heartbeat_collector(beat, batch_id=1, event_ms=beat)
        registry.register(cluster, f"{cluster}-kafka:9092", now)
        # one alert each, in the cluster's own alert store
        alerts = AlertStore(client, prefix=cluster_prefix(cluster))
        pipe = client.pipeline()
        alerts.queue_fire(
            pipe, Alert("orders", "lagging", "firing", "warning", f"{cluster}: orders lags", now)
        )
        pipe.execute()
    # prod's collector keeps beating, as a live one does; staging's stopped five minutes ago
    stop = threading.Event()

    def beat() -> None:
        prod = RedisStore(redis.Redis.from_url(url), prefix=cluster_prefix("prod"))
        while not stop.wait(2.0):
            t = int(time.time() * 1000)
            prod.heartbeat_collector(t, batch_id=2, event_ms=t)

    beating = threading.Thread(target=beat, daemon=True)
    beating.start()
    base, server = serve_in_thread(url)
    try:
        yield {"base": base, "docs": docs}
    finally:
        server.shutdown()
        stop.set()
        beating.join(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(1400, 1300) as driver:
        yield driver


def rows(driver: Any, n: int) -> list[tuple[str, str]]:
    """The fleet grid's (cluster, name) rows, once it holds n of them."""

    def got() -> list[tuple[str, str]] | None:
        names = grid_cells(driver, "fleet-grid", "name")
        clusters = grid_cells(driver, "fleet-grid", "cluster")
        return list(zip(clusters, names, strict=True)) if len(names) == n else None

    return wait_for(got, what=f"{n} rows")


def test_fleet_of_both_clusters(two_clusters, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By

    docs = two_clusters["docs"]
    browser.get(two_clusters["base"] + "/")
    wait_for(lambda: text(browser, "#fleet-total") == "5", what="group count")
    assert text(browser, "#fleet-clusters") == "prod 3 · staging 2"
    # by name, the same name tied by cluster; the cluster column is shown
    want = sorted((c, g) for c, groups in docs.items() for g in groups)
    assert rows(browser, 5) == sorted(want, key=lambda t: (t[1], t[0]))
    header = browser.find_element(By.CSS_SELECTOR, "#fleet-grid .ag-header-cell[col-id='cluster']")
    assert header.is_displayed() and header.text == "Cluster"
    # with the cluster column too, every header reads whole and none is out of view (issue 34)
    assert unreadable_headers(browser, "fleet-grid") == []
    # only staging's collector is behind, and only staging is named
    banner = wait_for(lambda: text(browser, "#banner"), what="banner")
    assert banner.startswith("Cluster staging: the collector is behind") and "prod" not in banner
    assert "staging: data from 5 min ago" in text(browser, "#freshness")
    shoot(browser, artifacts_dir, "clusters-fleet")
    # the cluster filter above the grid: staging's rows only
    box = browser.find_element(By.ID, "fleet-filter-cluster")
    box.click()
    wait_for(lambda: _option(browser, "staging"), what="filter option").click()
    wait_for(lambda: text(browser, "#fleet-count") == "2 matching groups", what="filtered")
    assert rows(browser, 2) == [("staging", "orders"), ("staging", "payments")]


def _option(driver: Any, label: str) -> Any:
    """A visible option of an open dcc.Dropdown, by its label."""
    from selenium.webdriver.common.by import By

    for el in driver.find_elements(By.CSS_SELECTOR, "[role='option']"):
        if el.is_displayed() and el.text.strip() == label:
            return el
    return None


def test_the_switcher_takes_you_to_one_cluster(two_clusters, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By

    browser.get(two_clusters["base"] + "/")
    wait_for(lambda: text(browser, "#fleet-total") == "5", what="group count")
    switch = browser.find_element(By.ID, "cluster-switch")
    assert "All clusters" in switch.text
    switch.click()
    wait_for(lambda: _option(browser, "prod"), what="switcher option").click()
    wait_for(lambda: browser.current_url.endswith("/clusters/prod"), what="navigation")
    wait_for(lambda: text(browser, "#fleet-total") == "3", what="prod's count")
    assert rows(browser, 3) == sorted(("prod", g) for g in two_clusters["docs"]["prod"])
    assert "prod" in text(browser, "#cluster-switch") and text(browser, "#fleet-cluster") == "prod"
    # prod's collector is fine: no banner on prod's pages
    wait_for(lambda: text(browser, "#banner") == "", what="no banner")
    # the navigation stays in the cluster
    assert browser.find_element(By.ID, "nav-topics").get_attribute("href").endswith("/clusters/prod/topics")
    shoot(browser, artifacts_dir, "clusters-switched-prod")
    # a legacy URL of the all-clusters list shows every cluster again
    browser.get(two_clusters["base"] + "/topics")
    wait_for(lambda: "All clusters" in text(browser, "#cluster-switch"), what="all clusters")
    # a filtered fleet URL: the switch keeps its name filter and sort, not its cluster filter
    browser.get(two_clusters["base"] + "/?cluster=staging&name=ord&sort=-lag")
    wait_for(lambda: text(browser, "#fleet-count") == "1 matching groups", what="staging's orders")
    browser.find_element(By.ID, "cluster-switch").click()
    wait_for(lambda: _option(browser, "prod"), what="switcher option").click()
    wait_for(lambda: browser.current_url.endswith("/clusters/prod?name=ord&sort=-lag"), what="kept query")
    wait_for(lambda: rows(browser, 1) == [("prod", "orders")], what="prod's orders")
    assert browser.find_element(By.ID, "fleet-filter-name").get_attribute("value") == "ord"
    assert not browser.find_elements(By.ID, "url-note")


def test_a_group_url_per_cluster_shows_that_clusters_members(two_clusters, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By

    docs = two_clusters["docs"]
    for cluster in ("prod", "staging"):
        browser.get(two_clusters["base"] + group_url("orders", cluster))
        want = sorted(m["member_id"] for m in docs[cluster]["orders"]["members"])
        got = wait_for(
            lambda: (c := grid_cells(browser, "group-members", "member_id")) and len(c) == 3 and sorted(c),
            what=f"{cluster}'s members",
        )
        assert got == want
        assert text(browser, "#page-cluster") == cluster
        assert (
            browser.find_element(By.ID, "group-whatif-link")
            .get_attribute("href")
            .endswith(f"/clusters/{cluster}/groups/orders/whatif")
        )
        stale = browser.find_elements(By.ID, "group-stale")
        assert bool(stale) == (cluster == "staging")
        shoot(browser, artifacts_dir, f"clusters-group-{cluster}")
    assert "This group may be stale" in text(browser, "#group-stale")
    # a fleet row's link goes to its own cluster's group
    browser.get(two_clusters["base"] + "/")
    wait_for(lambda: text(browser, "#fleet-total") == "5", what="group count")
    rows(browser, 5)
    links = wait_for(
        lambda: [
            a
            for a in browser.find_elements(By.CSS_SELECTOR, "#fleet-grid a.group-link")
            if a.text == "orders"
        ],
        what="orders links",
    )
    assert [a.get_attribute("href").split("/", 3)[-1] for a in links] == [
        "clusters/prod/groups/orders",
        "clusters/staging/groups/orders",
    ]
    links[1].click()
    wait_for(lambda: browser.current_url.endswith("/clusters/staging/groups/orders"), what="navigation")
    wait_for(lambda: text(browser, "#page-cluster") == "staging", what="staging's page")


def test_topics_and_alerts_of_both_clusters(two_clusters, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By

    from collectors.storage.topics import cut_by_topic
    from coordinator_model.document.types import GroupDocument

    docs = two_clusters["docs"]
    # (topic, cluster), each once: two groups of a cluster may read one topic
    want = sorted(
        {
            (topic, cluster)
            for cluster, groups in docs.items()
            for d in groups.values()
            for topic in cut_by_topic(GroupDocument.from_json(d))
        }
    )
    browser.get(two_clusters["base"] + "/topics")
    wait_for(lambda: text(browser, "#topics-total") == str(len(want)), what="topic count")
    got = wait_for(
        lambda: (n := grid_cells(browser, "topics-grid", "name")) and len(n) == len(want) and n, what="rows"
    )
    assert list(zip(got, grid_cells(browser, "topics-grid", "cluster"), strict=True)) == want
    shoot(browser, artifacts_dir, "clusters-topics")
    # the switcher keeps you on the topics, of one cluster
    browser.find_element(By.ID, "cluster-switch").click()
    wait_for(lambda: _option(browser, "staging"), what="switcher option").click()
    wait_for(lambda: browser.current_url.endswith("/clusters/staging/topics"), what="navigation")
    staging = [t for t, c in want if c == "staging"]
    wait_for(lambda: grid_cells(browser, "topics-grid", "name") == staging, what="staging's topics")
    # a topic link stays in its cluster
    browser.find_element(By.CSS_SELECTOR, "#topics-grid a.topic-link").click()
    wait_for(lambda: "/clusters/staging/topics/" in browser.current_url, what="topic page")
    wait_for(lambda: grid_cells(browser, "topic-groups", "cluster") not in (None, []), what="topic groups")
    assert set(grid_cells(browser, "topic-groups", "cluster")) == {"staging"}
    # alerts: each cluster's, with the cluster column
    browser.get(two_clusters["base"] + "/alerts")
    wait_for(lambda: text(browser, "#alerts-summary").startswith("2 active"), what="alerts")
    assert sorted(grid_cells(browser, "alerts-active", "cluster")) == ["prod", "staging"]
    # a minute on, the live prod is still unmarked and staging still named
    banner = text(browser, "#banner")
    assert banner.startswith("Cluster staging: the collector is behind") and "prod" not in banner
    shoot(browser, artifacts_dir, "clusters-alerts")
