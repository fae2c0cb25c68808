"""The dashboard in headless Chromium, served the way users run it (`groupscope dashboard`: gunicorn
plus a Celery worker for the what-if computations) over the harness's real Redis, filled with what the
collector writes for the real Kafka 4.0 captures (coordinator-model documents through RedisStore, lag
history, the alert evaluator's alerts). Each test checks the numbers on screen against the documents
and saves a screenshot to test-artifacts/."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from browser.dashboard_driver import (
    chart_problems,
    chromium,
    grid_cells,
    grid_scroll,
    serve_in_thread,
    shoot,
    task_ids_said,
    text,
    unreadable_headers,
    wait_for,
)
from browser.dashboard_fill import CAPTURES, GROUPSCOPE, fill

from collectors.demo.servers.processes import RedisServer, free_port, wait_for_port
from dashboard.urls import group_url, topic_url, whatif_url

pytestmark = [pytest.mark.browser, pytest.mark.servers]

ODD_NAME = "team/α b?#%&=+"  # every character a URL treats specially, and a non-ASCII one
DB = 3  # a database of its own: other tests flush database 0 while ours is served
ZONE = "Europe/Paris"  # the dashboard's display time zone (dashboard_timezone)


@pytest.fixture(scope="module")
def served(redis_server: RedisServer) -> Iterator[dict[str, Any]]:
    """Redis database DB filled from the captures, and `groupscope dashboard` serving it."""
    import redis

    url = f"redis://{redis_server.host}:{redis_server.port}/{DB}"
    redis.Redis.from_url(url).flushdb()
    docs = {d["group"]: d for ds in fill(url).values() for d in ds}
    # A group whose name needs every kind of URL escaping (a copy of a KIP-848 group).
    from collectors.storage.redis_store import RedisStore

    odd = {**docs["k848-range-060433h"], "group": ODD_NAME}
    RedisStore(redis.Redis.from_url(url)).write_group(odd, int(time.time() * 1000), as_of_ms=odd["as_of"])
    docs[ODD_NAME] = odd
    # The alerts component's own evaluator writes the alerts the /alerts page shows.
    subprocess.run(
        [*GROUPSCOPE, "alerts", "evaluate", "--redis", url, "--no-notify"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    port = free_port()
    log = open(tempfile.mktemp(prefix="groupscope-dashboard-", suffix=".log"), "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [*GROUPSCOPE, "dashboard", "--redis", url, "--port", str(port), "--workers", "1", "--threads", "4"],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # a zone other than UTC, so the pages show that every time follows the setting
        env={**os.environ, "GROUPSCOPE_DASHBOARD_REFRESH_S": "5", "GROUPSCOPE_DASHBOARD_TIMEZONE": ZONE},
    )
    try:
        wait_for_port("127.0.0.1", port, 30, proc)
        yield {"base": f"http://127.0.0.1:{port}", "docs": docs, "url": url}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # gunicorn and its Celery worker
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(1400, 2000) as driver:
        yield driver


def plot_data(driver: Any, graph_id: str) -> list[dict[str, Any]]:
    """The traces plotly drew in a dcc.Graph (what the user sees, read back from the page)."""
    return driver.execute_script(
        "const el = document.querySelector(arguments[0] + ' .js-plotly-plot');"
        "return el && el.data ? el.data.map(t => ({name: t.name, x: t.x, y: t.y, z: t.z,"
        " pattern: t.marker && t.marker.pattern ? t.marker.pattern.shape : null})) : null;",
        f"#{graph_id}",
    )


def set_input(driver: Any, id_: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    el = driver.find_element(By.ID, id_)
    el.send_keys(Keys.CONTROL, "a")
    el.send_keys(Keys.DELETE)
    if value:
        el.send_keys(value)


def test_fleet_page_counts_grid_sorting_and_filtering(served, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    docs = served["docs"]
    browser.get(served["base"] + "/")
    wait_for(lambda: text(browser, "#fleet-total") == str(len(docs)), what="group count")
    states: dict[str, int] = {}
    for d in docs.values():
        states[d["state"]] = states.get(d["state"], 0) + 1
    for state, n in states.items():
        assert text(browser, f"#fleet-count-{state}") == str(n)
    # storms are counted as the alerts count them, now (coordinator_model/statuses.py): the same
    # groups the alert evaluator raised rebalance_storm for. The capture's storm (37 generations in
    # ~80 s) ended long ago, so neither counts it, and the empty box says what a storm is.
    from collectors.storage.alerts import AlertStore

    storms = [a for a in AlertStore.from_url(served["url"]).active() if a["rule"] == "rebalance_storm"]
    assert int(text(browser, "#fleet-storm-count")) == len(storms)
    if not storms:
        assert "unexplained rebalances within 600 s" in text(browser, "#fleet-storms")
    names = wait_for(lambda: (c := grid_cells(browser, "fleet-grid", "name")) and len(c) == len(docs) and c)
    assert names == sorted(docs)  # default order: by name, from the server
    row = names.index("storm-060433f")
    assert grid_cells(browser, "fleet-grid", "gen_or_epoch")[row] == docs["storm-060433f"]["generation"]
    assert grid_cells(browser, "fleet-grid", "rebalances_1h")[row] == len(
        docs["storm-060433f"]["generations"]
    )
    # sort by lag, descending (two clicks on the header): the lag-ramp group is first, with its lag
    header = browser.find_element(
        By.CSS_SELECTOR, "#fleet-grid .ag-header-cell[col-id='lag'] .ag-header-cell-label"
    )
    header.click()
    time.sleep(0.3)
    header.click()
    top = wait_for(lambda: (c := grid_cells(browser, "fleet-grid", "name")) and c[0] == "lag-060433j" and c)
    assert grid_cells(browser, "fleet-grid", "lag")[0] == docs["lag-060433j"]["lag"]["total"]
    # and the cell shows it formatted
    assert f"{docs['lag-060433j']['lag']['total']:,}" in text(browser, "#fleet-grid .ag-row[row-index='0']")
    assert len(top) == len(docs)
    shoot(browser, artifacts_dir, "fleet")
    # filter by name on the server
    search = browser.find_element(By.ID, "fleet-filter-name")
    search.send_keys("k848", Keys.ENTER)
    wait_for(lambda: text(browser, "#fleet-count") == "2 matching groups", what="filtered count")
    assert sorted(
        wait_for(lambda: (c := grid_cells(browser, "fleet-grid", "name")) and len(c) == 2 and c)
    ) == [
        "k848-range-060433h",
        "k848-uniform-060433h",
    ]
    assert set(grid_cells(browser, "fleet-grid", "type")) == {"consumer"}


def test_every_fleet_header_reads_whole(served, browser, artifacts_dir) -> None:
    """Issue 34: "Last change (Europe/Paris)" was cut at the grid's right edge, and a sorted column's
    header ended in "…". At the browser tests' window (1400 px), with a sort arrow and filter icons
    shown, every header of the fleet grid reads whole and no column is out of view."""
    browser.get(served["base"] + "/?state=Stable&type=consumer&sort=-members")
    wait_for(lambda: grid_cells(browser, "fleet-grid", "name"), what="rows")
    with contextlib.suppress(AssertionError):
        wait_for(lambda: unreadable_headers(browser, "fleet-grid") == [], what="readable headers")
    assert unreadable_headers(browser, "fleet-grid") == []
    # the longest header, wrapped under its column rather than cut
    assert header_name(browser, "fleet-grid", "last_change") == f"Last change ({ZONE})"
    scroll = browser.execute_script(
        "const v = document.querySelector('#fleet-grid .ag-center-cols-viewport');"
        "return [v.scrollWidth, v.clientWidth];"
    )
    assert scroll[0] <= scroll[1], f"the grid scrolls sideways: {scroll}"
    shoot(browser, artifacts_dir, "fleet-headers")
    # and the grid's headers follow a narrower window rather than clip: the columns shrink to
    # their minimum widths before the grid scrolls
    browser.set_window_size(1280, 2000)
    try:
        with contextlib.suppress(AssertionError):
            wait_for(lambda: unreadable_headers(browser, "fleet-grid") == [], what="readable at 1280 px")
        assert unreadable_headers(browser, "fleet-grid") == []
    finally:
        browser.set_window_size(1400, 2000)


def test_follow_a_link_to_the_storm_group(served, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    doc = served["docs"]["storm-060433f"]
    browser.get(served["base"] + "/")
    # from the grid: the capture's storm is long over, so the storms box (counted as the alerts count,
    # now) does not list it
    search = wait_for(lambda: browser.find_element(By.ID, "fleet-filter-name"), what="search box")
    search.send_keys("storm-060433f", Keys.ENTER)
    link = wait_for(lambda: browser.find_element(By.LINK_TEXT, "storm-060433f"), what="storm link")
    link.click()
    wait_for(lambda: browser.current_url.endswith("/groups/storm-060433f"), what="navigation")
    wait_for(lambda: text(browser, "#hdr-generation") == str(doc["generation"]), what="generation")
    assert text(browser, "#hdr-state") == doc["state"]
    assert text(browser, "#hdr-members") == "0"
    gens = wait_for(lambda: plot_data(browser, "group-generations"), what="generations chart")
    assert sum(len(t["x"]) for t in gens) == len(doc["generations"])
    assert {t["name"] for t in gens} == {g["cause"] for g in doc["generations"]}
    bands = wait_for(lambda: plot_data(browser, "group-timeline"), what="timeline")
    assert {t["name"] for t in bands} == {b["state"] for b in doc["timeline"]}
    assert sum(len(t["x"]) for t in bands) == len(doc["timeline"])
    shoot(browser, artifacts_dir, "group-storm")
    # the what-if link carries the name and leads to the group's what-if page
    link = browser.find_element(By.ID, "group-whatif-link")
    assert link.get_attribute("href").endswith(whatif_url(doc["group"]))
    link.click()
    wait_for(lambda: text(browser, "#whatif-group-name") == doc["group"], what="what-if page")
    wait_for(lambda: "0 members" in text(browser, "#wi-current-text"), what="starting point")


def _readable_headers(browser: Any, grid: str) -> None:
    """Every header of a grid reads whole (the grid may still be drawing: waited for a while, then
    the headers that do not read are what the assertion says)."""
    with contextlib.suppress(AssertionError):
        wait_for(lambda: unreadable_headers(browser, grid) == [], timeout=5, what=f"{grid}'s headers")
    problems = unreadable_headers(browser, grid)
    assert not problems, f"{grid}: {problems}"


def test_lagging_group_members_heatmap_and_lag_history(served, browser, artifacts_dir) -> None:
    doc = served["docs"]["lag-060433j"]
    browser.get(served["base"] + group_url(doc["group"]))
    total = doc["lag"]["total"]
    wait_for(lambda: text(browser, "#hdr-lag-offsets") == f"{total:,}", what="lag total")
    assert text(browser, "#hdr-state") == "Stable" and text(browser, "#hdr-protocol") == "range"
    members = wait_for(lambda: grid_cells(browser, "group-members", "member_id"), what="members")
    assert members == [m["member_id"] for m in doc["members"]]
    assert grid_cells(browser, "group-members", "partitions") == [4]
    assert grid_cells(browser, "group-members", "lag") == [total]
    heat = wait_for(lambda: plot_data(browser, "group-heatmap"), what="heatmap")
    cells = [v for row in heat[0]["z"] for v in row if v is not None]
    assert sorted(cells) == sorted(float(p["lag"]) for p in doc["lag"]["partitions"])
    lines = wait_for(lambda: plot_data(browser, "group-lag"), what="lag history")
    assert len(lines) == len(doc["lag"]["partitions"])
    # the last point of each partition's line is the document's lag for that partition
    last = {t["name"]: t["y"][-1] for t in lines}
    assert last == {f"{p['topic']}:{p['partition']}": float(p["lag"]) for p in doc["lag"]["partitions"]}
    # every table of the page reads whole: long headers wrap, none ends in "…"
    for grid in ("group-generations-table", "group-members", "group-partitions"):
        _readable_headers(browser, grid)
    shoot(browser, artifacts_dir, "group-lag-ramp")


def test_a_log_end_older_than_the_commit_reads_as_at_least_the_commit(served, browser, artifacts_dir) -> None:
    """Issue 34: a partition whose Admin-polled log end (read before the commit) is below its
    committed offset: the table shows "≥ <committed>" as its log end, the poller's reading in the
    tooltip, and the lag the document says (0)."""
    import copy

    import redis

    from collectors.storage.redis_store import RedisStore

    doc = copy.deepcopy(served["docs"]["lag-060433j"])
    doc["group"] = "lag-end-read-before-commit"
    first = doc["lag"]["partitions"][0]
    committed = first["committed"]
    first.update(end_offset=committed - 20, lag=0, lag_seconds=0.0)
    RedisStore(redis.Redis.from_url(served["url"])).write_group(
        doc, int(time.time() * 1000), as_of_ms=doc["as_of"]
    )
    served["docs"][doc["group"]] = doc  # what is served from now on (the topics pages count it)
    browser.get(served["base"] + group_url(doc["group"]))
    wait_for(lambda: grid_cells(browser, "group-partitions", "log_end"), what="partitions")
    row = [
        p["partition"] == first["partition"] and p["topic"] == first["topic"]
        for p in browser.execute_script(
            "const out = []; dash_ag_grid.getApi('group-partitions').forEachNodeAfterFilterAndSort("
            "n => out.push(n.data)); return out;"
        )
    ].index(True)
    cell = f"#group-partitions .ag-row[row-index='{row}'] .ag-cell[col-id='%s']"
    shown = wait_for(lambda: text(browser, cell % "log_end"), what="the log end's cell")
    assert shown == f"≥ {committed}"
    assert text(browser, cell % "committed") == str(committed)
    assert text(browser, cell % "lag") == "0"
    tip = browser.execute_script(
        "let t = null; dash_ag_grid.getApi('group-partitions').forEachNode(n => {"
        " if (n.rowIndex === arguments[0]) t = n.data; }); return [t.log_end_read, t.log_end_bound];",
        row,
    )
    assert tip == [committed - 20, True]
    # every other partition shows its log end as read
    others = grid_cells(browser, "group-partitions", "log_end_bound")
    assert sum(others) == 1
    browser.execute_script("document.querySelector('#group-partitions').scrollIntoView()")
    shoot(browser, artifacts_dir, "group-log-end-bound")


def many_generations(base: dict[str, Any], name: str, n: int) -> dict[str, Any]:
    """`base`'s document as group `name` with n generations, one a minute up to its last, of causes
    in turn and rebalances of 0.1 to 40 s: a group that has rebalanced for hours."""
    import copy

    doc = copy.deepcopy(base)
    doc["group"] = name
    last = base["generations"][-1]
    causes = ["member_joined", "member_left", "session_timeout", "poll_timeout", "metadata_change"]
    gens = []
    for i in range(n):
        start = last["start"] - (n - 1 - i) * 60_000
        took = 100 + (i * 7919) % 40_000
        g = copy.deepcopy(last)
        g.update(
            generation=i + 1,
            start=start,
            end=start + 59_000,
            stabilized=start + took,
            stable=start + took,
            duration_ms=took,
            cause="group_created" if i == 0 else causes[i % len(causes)],
            inferred=[],
        )
        gens.append(g)
    doc["generations"] = gens
    doc["generation"] = n
    return doc


def test_a_group_of_300_generations_keeps_its_generations_chart_readable(
    served, browser, artifacts_dir
) -> None:
    """Issue 34: a group of 300 generations, written through RedisStore as the collector writes one,
    has one bar per generation in its generations chart, and the chart reads: its axis labels
    thinned to a few, none over another, none cut at the chart's edge, the axis titles and the
    legend clear of them."""
    import redis

    from collectors.storage.redis_store import RedisStore

    doc = many_generations(served["docs"]["storm-060433f"], "gens-300", 300)
    RedisStore(redis.Redis.from_url(served["url"])).write_group(
        doc, int(time.time() * 1000), as_of_ms=doc["as_of"]
    )
    served["docs"][doc["group"]] = doc  # what is served from now on (the topics pages count it)
    browser.get(served["base"] + group_url(doc["group"]))
    bars = wait_for(lambda: plot_data(browser, "group-generations"), what="generations chart")
    assert sorted(x for t in bars for x in t["x"]) == list(range(1, 301))
    assert plot_layout(browser, "group-generations", "title.text") == "Generations (300)"
    browser.execute_script("document.querySelector('#group-generations').scrollIntoView()")
    with contextlib.suppress(AssertionError):
        wait_for(lambda: chart_problems(browser, "group-generations") == [], what="a readable chart")
    shoot(browser, artifacts_dir, "group-300-generations")
    # the chart alone, at full size, to look at its labels
    chart = browser.find_element("id", "group-generations")
    chart.screenshot(str(artifacts_dir / "dashboard-group-300-generations-chart.png"))
    assert chart_problems(browser, "group-generations") == []


def test_kip848_group_shows_epochs_and_member_states(served, browser, artifacts_dir) -> None:
    doc = served["docs"]["k848-uniform-060433h"]
    browser.get(served["base"] + group_url(doc["group"]))
    wait_for(lambda: text(browser, "#hdr-group-epoch") == str(doc["group_epoch"]), what="group epoch")
    assert text(browser, "#hdr-assignment-epoch") == str(doc["assignment_epoch"])
    assert "KIP-848" in text(browser, "#group-kip848")
    epochs = wait_for(lambda: grid_cells(browser, "group-members", "member_epoch"), what="member epochs")
    assert sorted(epochs) == sorted(m["member_epoch"] for m in doc["members"])
    shoot(browser, artifacts_dir, "group-kip848")


STREAMS_APP = "orders-enricher"
# The repartition topic's name as Kafka Streams makes it: among the longest a grid cell holds.
REPARTITION = f"{STREAMS_APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"


def wide_streams_doc(name: str, as_of: int) -> dict[str, Any]:
    """A Kafka Streams application's group, the widest members a streams group has: three
    subtopologies over 8 partitions (0 joins orders with customers, 1 reads a repartition topic, 2
    the orders again); three instances named as Kafka Streams names them when no client.id is set
    ("<application id>-<process UUID>-StreamThread-1-consumer"), each with active and standby tasks
    scattered over the subtopologies, the third warming up tasks and still reconciling towards
    other target tasks."""
    from coordinator_model.document.types import (
        GroupDocument,
        LagDoc,
        MemberDoc,
        PartitionLag,
        SubtopologyDoc,
        TasksDoc,
        TopologyDoc,
    )

    reads = {"0": ["orders", "customers"], "1": [REPARTITION], "2": ["orders"]}

    def ids(sub: str, parts: list[int]) -> list[str]:
        return [f"{sub}_{p}" for p in parts]

    def member(i: int, active: list[str], standby: list[str], **kw: Any) -> MemberDoc:
        process = f"{i}c9a7f4e-5b2d-4e1a-9f3c-0d8e7b6a5c4{i}"
        tasks = TasksDoc(active=active, standby=standby, warmup=kw.pop("warmup", []))
        return MemberDoc(
            f"Xq{i}vT2rSWOle9GA7MoeJA",
            client_id=f"{STREAMS_APP}-{process}-StreamThread-1-consumer",
            client_host=f"/10.240.17.{200 + i}",
            assignment=sorted(
                {(t, int(p)) for task in active for s, _, p in [task.partition("_")] for t in reads[s]}
            ),
            modern=True,
            member_epoch=kw.pop("epoch", 41),
            state=kw.pop("state", "stable"),
            tasks=tasks,
            target_tasks=kw.pop("target", tasks),
            process_id=process,
        )

    members = [
        member(
            1, ids("0", [0, 1, 2, 3]) + ids("1", [0, 2, 4, 6]) + ids("2", [0, 1, 2]), ids("0", [4, 5, 6, 7])
        ),
        member(
            2, ids("0", [4, 5, 6, 7]) + ids("1", [1, 3, 5, 7]) + ids("2", [3, 4, 5]), ids("0", [0, 1, 2, 3])
        ),
        member(
            3,
            ids("2", [6, 7]),
            ids("1", [0, 1]),
            warmup=ids("1", [5, 7]),
            target=TasksDoc(active=ids("1", [5, 7]) + ids("2", [6, 7]), standby=ids("1", [0, 1])),
            epoch=40,
            state="unrevoked_tasks",
        ),
    ]
    owner = {tp: m.member_id for m in members for tp in m.assignment}
    lag = [
        PartitionLag(
            t, p, 1_000 * p, True, 1_000 * p + 7 * p, 7 * p, round(0.4 * p, 3), "OK", owner.get((t, p))
        )
        for t in ("orders", "customers", REPARTITION)
        for p in range(8)
    ]
    doc = GroupDocument(
        group=name,
        type="streams",
        state="Reconciling",
        protocol_type="streams",
        group_epoch=41,
        assignment_epoch=41,
        members=members,
        lag=LagDoc(
            total=sum(x.lag or 0 for x in lag),
            max_seconds=max(x.lag_seconds or 0 for x in lag),
            partitions=lag,
        ),
        topology=TopologyDoc(
            2,
            [
                SubtopologyDoc(
                    "0", source_topics=["orders", "customers"], repartition_sink_topics=[REPARTITION]
                ),
                SubtopologyDoc("1", repartition_source_topics=[REPARTITION]),
                SubtopologyDoc("2", source_topics=["orders"]),
            ],
        ),
        sources=["describe", "offsets"],
        as_of=as_of,
    )
    return doc.to_json()


def test_a_streams_groups_members_fit_the_page(served, browser, artifacts_dir) -> None:
    """Issue 34: a streams group's members grid (member epoch and state, tasks, target tasks and
    process beside a consumer's columns) scrolled sideways at 1,400 px. For the widest members a
    streams group has (wide_streams_doc) it has no horizontal scrollbar; every header reads whole;
    tasks are said by subtopology in ranges (the whole of them: read back, they are the member's);
    a reconciled member's target says "same", the reconciling one's its own tasks; a process id is
    its first 8 digits, in the client id too; a cell shows all of its text but the member id and
    the 3-line client ids and assignments, whose tooltips have the whole."""
    import redis

    from collectors.storage.redis_store import RedisStore

    now = int(time.time() * 1000)
    doc = wide_streams_doc("streams-wide", now)
    RedisStore(redis.Redis.from_url(served["url"])).write_group(doc, now, as_of_ms=doc["as_of"])
    served["docs"][doc["group"]] = doc  # what is served from now on (the topics pages count it)
    browser.get(served["base"] + group_url(doc["group"]))
    wait_for(lambda: len(grid_cells(browser, "group-members", "member_id")) == 3, what="the members")
    browser.execute_script("document.querySelector('#group-members').scrollIntoView()")
    members = {m["member_id"]: m for m in doc["members"]}
    for mid, cell in zip(
        grid_cells(browser, "group-members", "member_id"),
        grid_cells(browser, "group-members", "tasks"),
        strict=True,
    ):
        had = members[mid]["tasks"]
        assert sorted(task_ids_said(cell)) == sorted(had["active"] + had["standby"] + had["warmup"]), cell
    shown = wait_for(lambda: shown_cells(browser, "group-members"), what="the members' cells")
    # a range's hyphen is a non-breaking one on screen (a wrapped cell never ends a line in "0:0-")
    assert "0:0\u20113" in shown[0]["tasks"]
    shown = [{k: v.replace("\u2011", "-") for k, v in r.items()} for r in shown]
    by_process = {r["process_id"]: r for r in shown}
    assert sorted(by_process) == sorted(m["process_id"][:8] + "…" for m in doc["members"])
    reconciling = by_process["3c9a7f4e…"]
    assert reconciling["target_tasks"] == "active 1:5,7 2:6-7; standby 1:0-1"
    assert reconciling["tasks"] == "active 2:6-7; standby 1:0-1; warm-up 1:5,7"
    assert [r["target_tasks"] for r in shown if r is not reconciling] == ["same", "same"]
    assert "partitions" not in shown[0]  # a streams member is given tasks; the Assignment says the rest
    # no scrolling sideways, with every column in view and every header whole
    wait_for(lambda: grid_scroll(browser, "group-members")[0] > 0, what="the grid drawn")
    scroll = grid_scroll(browser, "group-members")
    shoot(browser, artifacts_dir, "group-streams-members")
    browser.find_element("id", "group-members").screenshot(
        str(artifacts_dir / "dashboard-group-streams-members-grid.png")
    )
    assert scroll[0] <= scroll[1], f"the members grid scrolls sideways: {scroll}"
    _readable_headers(browser, "group-members")
    # a wrapped cell's text is all in view (its row grew to hold it), but for the clamped ones' (3
    # lines, the whole in the tooltip); no other cell is cut but the member id's (its tooltip has it)
    cut = browser.execute_script(
        "return [...document.querySelectorAll('#group-members .ag-center-cols-container .ag-cell')]"
        ".filter(c => c.scrollWidth > c.clientWidth + 1 || c.scrollHeight > c.clientHeight + 1)"
        ".map(c => c.getAttribute('col-id'));"
    )
    assert set(cut) <= {"member_id", "client_id", "assignment"}, cut
    tips = browser.execute_script(
        "return dash_ag_grid.getApi('group-members').getColumnDefs().map(c => [c.field, c.tooltipField]);"
    )
    tipped = {"member_id", "client_id", "assignment", "target_tasks", "process_id"}
    assert tipped <= {f for f, tip in tips if tip == f}, tips
    # the client id Kafka Streams made says the process id as the Process column does
    assert by_process["1c9a7f4e…"]["client_id"] == f"{STREAMS_APP}-1c9a7f4e…-StreamThread-1-consumer"


def shown_cells(driver: Any, grid_id: str) -> list[dict[str, str]]:
    """Each drawn row of a grid as shown: {column id: the cell's text}."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#' + arguments[0] + ' .ag-center-cols-container .ag-row')]"
        ".map(r => Object.fromEntries([...r.querySelectorAll('.ag-cell')]"
        ".map(c => [c.getAttribute('col-id'), c.innerText.trim()])));",
        grid_id,
    )


# A KIP-848 application's consumers as a real deployment names them: a client id per service and
# pod, hosts in a cluster's pod network, a long topic.
K848_TOPIC = "payments.settlement.ledger-entries.v2"


def probed_kip848_doc(name: str, as_of: int) -> dict[str, Any]:
    """A KIP-848 group whose members the probe watches (heartbeat ages and session timeouts): four
    members with long client ids over 12 partitions of a long topic, one still reconciling towards
    another target; and its epochs, one of them the leave of a member the group no longer has."""
    from coordinator_model.document.types import (
        ClientDoc,
        GenerationDoc,
        GroupDocument,
        LagDoc,
        MemberDoc,
        PartitionLag,
        TimelineSpan,
    )

    def member(i: int, parts: list[int], **kw: Any) -> MemberDoc:
        assignment = [(K848_TOPIC, p) for p in parts]
        return MemberDoc(
            f"Xq{i}vT2rSWOle9GA7MoeJA",
            client_id=f"settlement-ledger-writer-7f9c{i}d5b8-x{i}q2z-consumer",
            client_host=f"/10.244.{i}.{100 + i}",
            session_timeout_ms=45_000,
            assignment=assignment,
            last_heartbeat=as_of - 2_000 * i,
            modern=True,
            member_epoch=kw.pop("epoch", 12),
            state=kw.pop("state", "stable"),
            target_assignment=kw.pop("target", assignment),
        )

    members = [
        member(1, [0, 1, 2]),
        member(2, [3, 4, 5]),
        member(3, [6, 7, 8]),
        member(
            4,
            [9, 10],
            epoch=11,
            state="unrevoked_partitions",
            target=[(K848_TOPIC, p) for p in (9, 10, 11)],
        ),
    ]
    gone = "Zz9vT2rSWOle9GA7MoeJA_"
    gens = [
        GenerationDoc(
            11,
            as_of - 60_000,
            end=as_of - 30_000,
            stable=as_of - 59_000,
            duration_ms=1_000,
            members_joined=[members[3].member_id],
            cause="member_joined",
            clients={members[3].member_id: ClientDoc(members[3].client_id, members[3].client_host)},
        ),
        GenerationDoc(
            12,
            as_of - 30_000,
            stable=as_of - 29_000,
            duration_ms=1_000,
            members_left=[gone],
            cause="member_left",
            clients={gone: ClientDoc("settlement-ledger-writer-old-pod", "/10.244.9.9")},
        ),
    ]
    owner = {tp: m.member_id for m in members for tp in m.assignment}
    lag = [
        PartitionLag(K848_TOPIC, p, 10_000 + p, True, 10_050 + p, 50, 1.5, "OK", owner.get((K848_TOPIC, p)))
        for p in range(12)
    ]
    doc = GroupDocument(
        group=name,
        type="consumer",
        state="Reconciling",
        protocol_type="consumer",
        protocol="uniform",
        group_epoch=12,
        assignment_epoch=12,
        members=members,
        generations=gens,
        timeline=[
            TimelineSpan("Reconciling", as_of - 60_000, as_of - 59_000),
            TimelineSpan("Stable", as_of - 59_000, as_of - 30_000),
            TimelineSpan("Reconciling", as_of - 30_000),
        ],
        lag=LagDoc(total=600, max_seconds=1.5, partitions=lag),
        sources=["describe", "heartbeats", "offsets"],
        as_of=as_of,
    )
    return doc.to_json()


def test_a_probed_kip848_groups_members_fit_the_page(served, browser, artifacts_dir) -> None:
    """Issue 34: a KIP-848 group whose members are probed (the heartbeat columns beside its member
    epoch, state and target) had a members grid that scrolled sideways at 1,400 px. It has no
    horizontal scrollbar; every header reads whole; the member id is cut with the whole in its
    tooltip, client ids and assignments are clamped with theirs, hosts and states wrap; a reconciled
    member's target says "same". Its epochs say the member that left, and the one that joined, by
    client id and host, the member id in the tooltip."""
    import redis

    from collectors.storage.redis_store import RedisStore

    now = int(time.time() * 1000)
    # (a name the other tests' "k848" filters leave out: the group stays in the served Redis)
    doc = probed_kip848_doc("ledger-probed-wide", now)
    RedisStore(redis.Redis.from_url(served["url"])).write_group(doc, now, as_of_ms=doc["as_of"])
    served["docs"][doc["group"]] = doc  # what is served from now on (the topics pages count it)
    browser.get(served["base"] + group_url(doc["group"]))
    wait_for(lambda: len(grid_cells(browser, "group-members", "member_id")) == 4, what="the members")
    fields = browser.execute_script(
        "return dash_ag_grid.getApi('group-members').getColumnDefs().map(c => c.field);"
    )
    beats = {"heartbeat_age_s", "session_timeout_s", "heartbeat_ratio"}
    assert beats | {"member_epoch", "target"} <= set(fields)
    browser.execute_script("document.querySelector('#group-members').scrollIntoView()")
    wait_for(lambda: grid_scroll(browser, "group-members")[0] > 0, what="the grid drawn")
    shown = wait_for(lambda: shown_cells(browser, "group-members"), what="the members' cells")
    by_member = {r["member_id"]: r for r in shown}
    assert len(by_member) == 4
    targets = [r["target"] for r in shown]
    assert sorted(targets) == sorted(["same", "same", "same", f"{K848_TOPIC}: 9,10,11"]), targets
    scroll = grid_scroll(browser, "group-members")
    shoot(browser, artifacts_dir, "group-kip848-probed")
    browser.find_element("id", "group-members").screenshot(
        str(artifacts_dir / "dashboard-group-kip848-probed-members-grid.png")
    )
    assert scroll[0] <= scroll[1], f"the members grid scrolls sideways: {scroll}"
    _readable_headers(browser, "group-members")
    cut = browser.execute_script(
        "return [...document.querySelectorAll('#group-members .ag-center-cols-container .ag-cell')]"
        ".filter(c => c.scrollWidth > c.clientWidth + 1 || c.scrollHeight > c.clientHeight + 1)"
        ".map(c => c.getAttribute('col-id'));"
    )
    assert set(cut) <= {"member_id", "client_id", "assignment", "target"}, cut
    tips = browser.execute_script(
        "return dash_ag_grid.getApi('group-members').getColumnDefs().map(c => [c.field, c.tooltipField]);"
    )
    assert {"member_id", "client_id", "assignment", "target"} <= {f for f, tip in tips if tip == f}, tips
    # the epochs: who joined and who left, by client id and host; the member id in the tooltip
    left = wait_for(
        lambda: [x for x in grid_cells(browser, "group-generations-table", "left") if x], what="left"
    )
    assert left == ["settlement-ledger-writer-old-pod (/10.244.9.9)"]
    tip = grid_cells(browser, "group-generations-table", "left_whole")
    assert "member Zz9vT2rSWOle9GA7MoeJA_" in next(t for t in tip if t)
    joined = [x for x in grid_cells(browser, "group-generations-table", "joined") if x]
    assert joined == ["settlement-ledger-writer-7f9c4d5b8-x4q2z-consumer (/10.244.4.104)"]
    browser.execute_script("document.querySelector('#group-generations-table').scrollIntoView()")
    shoot(browser, artifacts_dir, "group-kip848-probed-epochs")


def test_the_topic_pages_range_follows_the_data_held(served, browser, artifacts_dir) -> None:
    """Issue 34: the topic page's lag history opened on "last hour" over a few minutes of data. It
    opens on all the history held (up to a day), its title saying how much that is, with a bare URL;
    a range chosen goes to the URL, and the URL's range comes back with the page."""
    import redis

    from collectors.storage.redis_store import RedisStore
    from dashboard.pages.topic import HELD_UP_TO_MS, held_span

    topic = "lag-data-060433j"  # the lag-ramp group's: the captures' lag history is its
    readers = sorted(_topics_of(served["docs"])[topic])
    index = RedisStore(redis.Redis.from_url(served["url"])).topics
    history = index.lag_history(topic, readers, HELD_UP_TO_MS)
    times = [t for points in history.values() for t, _, _ in points]
    assert times and max(times) - min(times) < 3_600_000  # a capture of a few minutes
    page = served["base"] + topic_url(topic)
    browser.get(page)
    wait_for(lambda: "all the history held" in text(browser, "#topic-lag-range"), what="the default span")
    title = wait_for(lambda: plot_layout(browser, "topic-lag", "title.text"), what="the lag chart")
    assert title.endswith(": " + held_span(history)) and held_span(history).startswith("all "), title
    assert browser.current_url == page  # the default: a bare URL
    lines = wait_for(lambda: plot_data(browser, "topic-lag"), what="lag history")
    assert sorted(t["name"] for t in lines) == sorted(history)
    shoot(browser, artifacts_dir, "topic-range-held")
    choose(browser, "topic-lag-range", "last hour")
    wait_for(lambda: browser.current_url == page + "?range=1h", what="the chosen span in the URL")
    wait_for(
        lambda: ": all" not in (plot_layout(browser, "topic-lag", "title.text") or ": all"), what="title"
    )
    browser.get(page + "?range=15m")
    wait_for(lambda: "last 15 min" in text(browser, "#topic-lag-range"), what="the URL's span")
    choose(browser, "topic-lag-range", "all the history held")
    wait_for(lambda: browser.current_url == page, what="back to the default: a bare URL")


def test_out_of_the_box_group_marks_what_was_inferred(served, browser, artifacts_dir) -> None:
    """A group rebuilt from the offsets topic and the Admin API alone (no broker log, no probe), as
    `groupscope collect` sees a cluster out of the box: the periods no source saw begin are hatched on
    the timeline and the causes it inferred are marked in the generations table."""
    import redis

    from collectors.capture import read_capture
    from collectors.storage.redis_store import RedisStore
    from coordinator_model.rebuild import rebuild

    evs = read_capture(CAPTURES / "classic-range-lifecycle").evidence
    seen = [e for e in evs if e.source in ("offsets", "describe", "end_offsets")]
    doc = next(e.document_json() for e in rebuild(seen).values() if e.type == "classic")
    doc["group"] = "crl-out-of-the-box"
    RedisStore(redis.Redis.from_url(served["url"])).write_group(
        doc, int(time.time() * 1000), as_of_ms=doc["as_of"]
    )
    served["docs"][doc["group"]] = doc  # what is served from now on (the topics pages count it)
    browser.get(served["base"] + group_url(doc["group"]))
    bands = wait_for(lambda: plot_data(browser, "group-timeline"), what="timeline")
    hatched = sum(shape == "/" for t in bands for shape in t["pattern"] or [])
    assert hatched == sum(1 for b in doc["timeline"] if b["inferred"]) > 0
    causes = wait_for(lambda: grid_cells(browser, "group-generations-table", "cause"), what="causes")
    inferred = [g for g in doc["generations"] if "cause" in g["inferred"]]
    assert inferred and sum(c.endswith(" (inferred)") for c in causes) == len(inferred)
    shoot(browser, artifacts_dir, "group-out-of-the-box")


def test_whatif_form_bad_values_then_side_by_side_results(served, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By

    doc = served["docs"]["lag-060433j"]
    browser.get(served["base"] + whatif_url(doc["group"]))
    wait_for(lambda: "1 member ·" in text(browser, "#wi-current-text"), what="starting point")
    set_input(browser, "wi-add_members", "lots")
    set_input(browser, "wi-partitions", "lag-data-060433j=2")
    set_input(browser, "wi-session_timeout_ms", "-1")
    browser.find_element(By.ID, "wi-run").click()
    wait_for(lambda: "whole number" in text(browser, "#wi-err-add_members"), timeout=30, what="field error")
    assert "cannot reduce" in text(browser, "#wi-err-partitions")
    assert "between" in text(browser, "#wi-err-session_timeout_ms")
    assert "Traceback" not in browser.page_source
    shoot(browser, artifacts_dir, "whatif-errors")
    set_input(browser, "wi-add_members", "3")
    set_input(browser, "wi-partitions", "")
    set_input(browser, "wi-session_timeout_ms", "30000")
    browser.find_element(By.ID, "wi-run").click()
    wait_for(lambda: text(browser, "#wi-status").startswith("Compared"), timeout=30, what="results")
    assert text(browser, "#wi-err-add_members") == ""
    titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".wi-result-title")]
    assert titles == ["range", "cooperative-sticky"]  # the group's assignor first, then the usual alternative
    moves = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".wi-moves")]
    # 4 partitions, 1 member + 3 new: range (eager) hands 3 to the newcomers; so does cooperative-sticky
    assert moves == ["Partitions that move: 3", "Partitions that move: 3"]
    assert "would have avoided" in text(browser, "#wi-avoided")
    shoot(browser, artifacts_dir, "whatif-results")


def test_a_whatif_is_a_link_that_reopens_with_its_inputs(served, browser, artifacts_dir) -> None:
    """Issue 34: Compare puts the form in the URL; that URL, opened afresh, fills the form in the same
    and compares at once; a URL with bad values says what it left out at the top of the page and the
    comparison marks what does not fit the group beside its field, never a traceback."""
    from urllib.parse import quote

    from selenium.webdriver.common.by import By

    doc = served["docs"]["lag-060433j"]
    page = served["base"] + whatif_url(doc["group"])
    browser.get(page)
    wait_for(lambda: "1 member ·" in text(browser, "#wi-current-text"), what="starting point")
    assert text(browser, "#wi-status") == ""  # a bare what-if URL does not compare by itself
    set_input(browser, "wi-add_members", "3")
    set_input(browser, "wi-session_timeout_ms", "30000")
    browser.find_element(By.ID, "wi-run").click()
    wait_for(lambda: text(browser, "#wi-status").startswith("Compared"), timeout=30, what="results")
    want = "?assignor=range&assignor=cooperative-sticky&add=3&session.timeout.ms=30000"
    link = wait_for(lambda: browser.current_url == page + want and browser.current_url, what="URL")

    def checked() -> list[str]:
        boxes = browser.find_elements(By.CSS_SELECTOR, "#wi-assignors input[type='checkbox']")
        return [b.get_attribute("value") for b in boxes if b.is_selected()]

    # the link, opened afresh: the same inputs, compared without a click
    browser.get("about:blank")
    browser.get(link)
    wait_for(lambda: text(browser, "#wi-status").startswith("Compared 2"), timeout=30, what="compared")
    assert browser.find_element(By.ID, "wi-add_members").get_attribute("value") == "3"
    assert browser.find_element(By.ID, "wi-session_timeout_ms").get_attribute("value") == "30000"
    assert checked() == ["range", "cooperative-sticky"]
    titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".wi-result-title")]
    assert titles == ["range", "cooperative-sticky"]
    moves = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".wi-moves")]
    assert moves == ["Partitions that move: 3", "Partitions that move: 3"]
    assert "url-note" not in browser.page_source and browser.current_url == link
    shoot(browser, artifacts_dir, "whatif-from-url")
    # bad values: those that are no value of their field are left out and said; those the group
    # refutes (a member it does not have, fewer partitions than its topic has) are marked by the form
    bad = (
        "?assignor=sticky&assignor=bogus&add=lots&remove=nobody"
        f"&partitions={quote('lag-data-060433j=2', safe='')}&session.timeout.ms=12&colour=red"
    )
    browser.get(page + bad)
    wait_for(
        lambda: "not a member" in text(browser, "#wi-err-remove_members"), timeout=30, what="field errors"
    )
    note = text(browser, "#url-note")
    assert "assignor='bogus' is not a known assignor" in note and "add='lots'" in note
    assert "unknown parameter 'colour'" in note
    assert "'nobody' is not a member of this group" in text(browser, "#wi-err-remove_members")
    assert "cannot reduce" in text(browser, "#wi-err-partitions")
    assert "between" in text(browser, "#wi-err-session_timeout_ms")
    assert text(browser, "#wi-status") == "Fix the fields marked in red."
    assert (
        checked() == ["sticky"] and browser.find_element(By.ID, "wi-add_members").get_attribute("value") == ""
    )
    assert "Traceback" not in browser.page_source
    shoot(browser, artifacts_dir, "whatif-bad-url")


def test_odd_group_name_round_trips_through_urls(served, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(served["base"] + "/")
    search = wait_for(lambda: browser.find_element(By.ID, "fleet-filter-name"), what="search box")
    search.send_keys("team/", Keys.ENTER)
    link = wait_for(lambda: browser.find_element(By.LINK_TEXT, ODD_NAME), what="odd link")
    link.click()
    wait_for(lambda: text(browser, "#group-name") == ODD_NAME, what="odd group page")
    wait_for(lambda: text(browser, "#hdr-members") == "3", what="members count")
    browser.get(served["base"] + whatif_url(ODD_NAME))
    wait_for(
        lambda: (
            text(browser, "#whatif-group-name") == ODD_NAME
            and "3 members" in text(browser, "#wi-current-text")
        )
    )
    shoot(browser, artifacts_dir, "group-odd-name")


def _topics_of(docs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{topic: {group: its TopicGroup}} as the sink cuts the served documents."""
    from collectors.storage.topics import cut_by_topic
    from coordinator_model.document.types import GroupDocument

    out: dict[str, dict[str, Any]] = {}
    for d in docs.values():
        for topic, cut in cut_by_topic(GroupDocument.from_json(d)).items():
            out.setdefault(topic, {})[d["group"]] = cut.row
    return out


def test_topics_page_lists_every_topic_sorted_and_filtered(served, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    topics = _topics_of(served["docs"])
    browser.get(served["base"] + "/")
    wait_for(lambda: browser.find_element(By.ID, "nav-topics"), what="navigation bar").click()
    wait_for(lambda: browser.current_url.endswith("/topics"), what="navigation")
    wait_for(lambda: text(browser, "#topics-total") == str(len(topics)), what="topic count")
    names = wait_for(
        lambda: (c := grid_cells(browser, "topics-grid", "name")) and len(c) == len(topics) and c, what="rows"
    )
    assert names == sorted(topics)
    groups = dict(zip(names, grid_cells(browser, "topics-grid", "groups"), strict=True))
    assert groups == {t: len(g) for t, g in topics.items()}
    # worst lag first (two clicks on the header): the lag-ramp group's topic, with its lag
    worst = max(topics, key=lambda t: max(r.lag for r in topics[t].values()))
    header = browser.find_element(
        By.CSS_SELECTOR, "#topics-grid .ag-header-cell[col-id='lag'] .ag-header-cell-label"
    )
    header.click()
    time.sleep(0.3)
    header.click()
    wait_for(lambda: grid_cells(browser, "topics-grid", "name")[0] == worst, what="sorted by lag")
    lags = grid_cells(browser, "topics-grid", "lag")
    assert lags == sorted(lags, reverse=True) and lags[0] == max(r.lag for r in topics[worst].values())
    shoot(browser, artifacts_dir, "topics")
    search = browser.find_element(By.ID, "topics-filter-name")
    search.send_keys("k848", Keys.ENTER)
    wait_for(lambda: text(browser, "#topics-count") == "1 matching topics", what="filtered count")
    assert grid_cells(browser, "topics-grid", "name") == ["k848-data-060433h"]


def test_topic_page_groups_heatmap_history_and_links(served, browser, artifacts_dir) -> None:
    from selenium.webdriver.common.by import By

    docs = served["docs"]
    topics = _topics_of(docs)
    # a topic read by three groups, one of them with a name that needs every escape
    topic = "k848-data-060433h"
    readers = topics[topic]
    assert ODD_NAME in readers and len(readers) == 3
    browser.get(served["base"] + "/topics")
    link = wait_for(lambda: browser.find_element(By.LINK_TEXT, topic), what="topic link")
    link.click()
    wait_for(lambda: browser.current_url.endswith(topic_url(topic)), what="navigation")
    wait_for(lambda: text(browser, "#topic-groups-count") == "3", what="group count")
    rows = wait_for(lambda: (c := grid_cells(browser, "topic-groups", "group")) and len(c) == 3 and c)
    assert set(rows) == set(readers)
    assert grid_cells(browser, "topic-groups", "lag") == [readers[g].lag for g in rows]
    assert grid_cells(browser, "topic-groups", "state") == [docs[g]["state"] for g in rows]
    owners = grid_cells(browser, "topic-groups", "owners")
    for g, o in zip(rows, owners, strict=True):
        assert all((m.get("client_id") or m["member_id"]) in o for m in docs[g]["members"])
    heat = wait_for(lambda: plot_data(browser, "topic-heatmap"), what="heatmap")
    assert heat[0]["y"] == rows
    _readable_headers(browser, "topic-groups")
    for g, zrow in zip(rows, heat[0]["z"], strict=True):
        want = sorted(float(p["lag"]) for p in docs[g]["lag"]["partitions"] if p["topic"] == topic)
        assert sorted(v for v in zrow if v is not None) == want
    shoot(browser, artifacts_dir, "topic-k848")
    # the odd name's links: its group page and its what-if page
    browser.find_element(By.CSS_SELECTOR, f"#topic-groups a.group-link[title='{ODD_NAME}']").click()
    wait_for(lambda: text(browser, "#group-name") == ODD_NAME, what="odd group page")
    browser.back()
    wait_for(lambda: text(browser, "#topic-groups-count") == "3", what="back on the topic")
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#topic-groups a.whatif-link"), what="what-if")
    browser.find_element(
        By.CSS_SELECTOR, f"#topic-groups a.whatif-link[title='What-if reassignment of {ODD_NAME}']"
    ).click()
    wait_for(lambda: text(browser, "#whatif-group-name") == ODD_NAME, what="odd what-if page")
    # the lag-ramp group's topic: its lag history comes from the group's own points
    lag_doc = docs["lag-060433j"]
    browser.get(served["base"] + topic_url("lag-data-060433j"))
    lines = wait_for(lambda: plot_data(browser, "topic-lag"), what="lag history")
    assert [t["name"] for t in lines] == ["lag-060433j"] and len(lines[0]["x"]) > 3
    assert lines[0]["y"][-1] == lag_doc["lag"]["total"]
    shoot(browser, artifacts_dir, "topic-lag-ramp")


def plot_layout(driver: Any, graph_id: str, path: str) -> Any:
    """One value of the layout plotly drew in a dcc.Graph, by its dotted path ("xaxis.title.text")."""
    return driver.execute_script(
        "const el = document.querySelector(arguments[0] + ' .js-plotly-plot');"
        "return el && el._fullLayout ? arguments[1].split('.').reduce((o, k) => o && o[k], el._fullLayout)"
        " : null;",
        f"#{graph_id}",
        path,
    )


def header_name(driver: Any, grid_id: str, field: str) -> str:
    """A grid column's header, through AG Grid's API (the DOM holds only the columns in view)."""
    return driver.execute_script(
        "return dash_ag_grid.getApi(arguments[0]).getColumnDef(arguments[1]).headerName;", grid_id, field
    )


def test_a_shared_url_restores_the_filters_sort_and_time_range(served, browser, artifacts_dir) -> None:
    """A fleet URL with filters, a sort and one bad parameter opens filtered and sorted, says what it
    ignored and keeps the URL in step when a filter changes; a group URL opens over its time range;
    every time is in the zone the dashboard is set to, named once in the header and on the axes."""
    from urllib.parse import quote

    from selenium.webdriver.common.keys import Keys

    docs = served["docs"]
    k848 = sorted(
        (d for d in docs.values() if "k848" in d["group"]), key=lambda d: (-len(d["members"]), d["group"])
    )
    browser.get(served["base"] + "/?type=consumer&name=k848&sort=-members&color=red")
    wait_for(lambda: text(browser, "#fleet-count") == f"{len(k848)} matching groups", what="filtered count")
    names = wait_for(lambda: (c := grid_cells(browser, "fleet-grid", "name")) and len(c) == len(k848) and c)
    members = grid_cells(browser, "fleet-grid", "members")
    assert members == sorted(members, reverse=True) and sorted(names) == sorted(d["group"] for d in k848)
    assert set(grid_cells(browser, "fleet-grid", "type")) == {"consumer"}
    # the boxes above the grid show the URL's filter, the note what was left out
    assert browser.find_element("id", "fleet-filter-name").get_attribute("value") == "k848"
    assert "consumer (KIP-848)" in text(browser, "#fleet-filter-type")
    assert "unknown parameter 'color'" in text(browser, "#url-note")
    # the grid sorts by members, descending (its header's arrow), as the URL says
    sorted_by = browser.execute_script(
        "return dash_ag_grid.getApi('fleet-grid').getColumnState().filter(c => c.sort)"
        ".map(c => [c.colId, c.sort]);"
    )
    assert sorted_by == [["members", "desc"]]
    # and the sort did not show the cluster column (one cluster here)
    hidden = browser.execute_script(
        "return dash_ag_grid.getApi('fleet-grid').getColumnState().filter(c => c.hide).map(c => c.colId);"
    )
    assert hidden == ["cluster"]
    # the URL now says the filter the grid has, without the bad parameter
    wait_for(
        lambda: browser.current_url.endswith("/?type=consumer&name=k848&sort=-members"), what="clean URL"
    )
    assert text(browser, "#time-zone") == f"times in {ZONE}"
    last = grid_cells(browser, "fleet-grid", "last_change")
    assert all(len(v) == 19 for v in last)  # "YYYY-MM-DD HH:MM:SS", written in the zone on the server
    assert header_name(browser, "fleet-grid", "last_change") == "Last change (Europe/Paris)"
    shoot(browser, artifacts_dir, "fleet-from-url")
    # a filter changed on the page goes to the URL
    search = browser.find_element("id", "fleet-filter-name")
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys("uniform", Keys.ENTER)
    wait_for(lambda: "name=uniform" in browser.current_url, what="URL follows the filter")
    wait_for(lambda: grid_cells(browser, "fleet-grid", "name") == ["k848-uniform-060433h"], what="refiltered")
    # the group page over the URL's range, its lag lines per member; the time axis names the zone
    doc = docs["lag-060433j"]
    browser.get(served["base"] + group_url(doc["group"]) + "?range=6h&by=member&metric=bogus")
    wait_for(lambda: "6 hours" in text(browser, "#group-range"), what="range from the URL")
    assert "per member" in text(browser, "#group-lag-by")
    assert "metric='bogus'" in text(browser, "#url-note")
    wait_for(lambda: plot_layout(browser, "group-lag", "xaxis.title.text") == f"time ({ZONE})", what="axis")
    lines = wait_for(lambda: plot_data(browser, "group-lag"), what="lag per member")
    assert [t["name"] for t in lines] == [
        m["member_id"][:39] + "…" if len(m["member_id"]) > 40 else m["member_id"] for m in doc["members"]
    ]
    assert plot_layout(browser, "group-timeline", "xaxis.title.text") == f"time ({ZONE})"
    assert header_name(browser, "group-generations-table", "start") == "Started (Europe/Paris)"
    # the topic page: the lag history's span from the URL, a heatmap with its numbers and its scale
    topic = "k848-data-060433h"
    browser.get(served["base"] + topic_url(topic) + "?range=6h")
    wait_for(lambda: "last 6 hours" in text(browser, "#topic-lag-range"), what="topic range")
    wait_for(lambda: plot_layout(browser, "topic-heatmap", "yaxis.title.text") == "group", what="heatmap")
    heat = browser.execute_script(
        "const t = document.querySelector('#topic-heatmap .js-plotly-plot')._fullData[0];"
        "return [t.texttemplate, t.colorbar.title.text];"
    )
    assert heat == ["%{z:.3~s}", "lag (offsets)"]
    shoot(browser, artifacts_dir, "topic-from-url")
    assert quote(topic) in browser.current_url and browser.current_url.endswith("?range=6h")


def choose(driver: Any, dropdown_id: str, label: str) -> None:
    """Pick `label` in a dcc.Dropdown, as a user does: open it, click the option."""
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, dropdown_id).click()

    def option() -> Any:
        for el in driver.find_elements(By.CSS_SELECTOR, "[role='option']"):
            if el.is_displayed() and el.text.strip() == label:
                return el
        return None

    wait_for(option, what=f"option {label!r} of {dropdown_id}").click()


def test_back_and_forward_reapply_the_urls_filters_and_range(served, browser, artifacts_dir) -> None:
    """Issue 34: Back and Forward change the address, and the page follows it: the fleet's filter
    boxes and grid, the group page's time range and lag choices, the topics grid's filter and a
    topic page's lag history span are those of the URL gone back or
    forward to, not the last ones shown. The page restating a URL it was opened with (a bad
    parameter left out) adds no history entry, so Back goes past it."""
    from selenium.webdriver.common.keys import Keys

    docs = served["docs"]
    k848 = sorted(d for d in docs if d.startswith("k848"))
    base = served["base"]
    browser.get(base + "/?name=k848&color=red")
    wait_for(lambda: sorted(grid_cells(browser, "fleet-grid", "name")) == k848, what="k848 rows")
    wait_for(lambda: browser.current_url == base + "/?name=k848", what="the bad parameter left out")
    search = browser.find_element("id", "fleet-filter-name")
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys("uniform", Keys.ENTER)
    wait_for(lambda: browser.current_url == base + "/?name=uniform", what="URL follows the filter")
    wait_for(lambda: grid_cells(browser, "fleet-grid", "name") == ["k848-uniform-060433h"], what="one row")
    choose(browser, "fleet-filter-type", "consumer (KIP-848)")
    wait_for(lambda: browser.current_url == base + "/?type=consumer&name=uniform", what="type in the URL")

    def fleet_shows(name: str, type_: str, rows: list[str]) -> bool:
        box = browser.find_element("id", "fleet-filter-name").get_attribute("value") or ""
        shown_type = text(browser, "#fleet-filter-type")
        return (
            box == name
            and (type_ in shown_type if type_ else "Any type" in shown_type)
            and sorted(grid_cells(browser, "fleet-grid", "name")) == rows
        )

    browser.back()
    wait_for(lambda: browser.current_url == base + "/?name=uniform", what="back: URL")
    wait_for(lambda: fleet_shows("uniform", "", ["k848-uniform-060433h"]), what="back: name filter only")
    browser.back()
    wait_for(lambda: browser.current_url == base + "/?name=k848", what="back again: URL")
    wait_for(lambda: fleet_shows("k848", "", k848), what="back again: the first filter")
    assert "url-note" not in browser.page_source  # the entry with color=red was replaced, not kept
    shoot(browser, artifacts_dir, "fleet-back")
    browser.forward()
    browser.forward()
    wait_for(lambda: browser.current_url == base + "/?type=consumer&name=uniform", what="forward: URL")
    wait_for(lambda: fleet_shows("uniform", "KIP-848", ["k848-uniform-060433h"]), what="forward: both")
    # a link to the same page with another query: the Fleet link shows the whole fleet again
    browser.find_element("id", "nav-fleet").click()
    wait_for(lambda: browser.current_url == base + "/", what="the fleet link")
    wait_for(lambda: fleet_shows("", "", sorted(docs)), what="the whole fleet")
    # the group page: its time range and lag line choice
    doc = docs["lag-060433j"]
    page = base + group_url(doc["group"])
    browser.get(page)
    wait_for(lambda: "around the last changes" in text(browser, "#group-range"), what="default range")
    choose(browser, "group-range", "6 hours")
    wait_for(lambda: browser.current_url == page + "?range=6h", what="range in the URL")
    choose(browser, "group-lag-by", "per member")
    wait_for(lambda: browser.current_url == page + "?range=6h&by=member", what="lag line in the URL")
    browser.back()
    wait_for(lambda: browser.current_url == page + "?range=6h", what="back: URL")
    wait_for(lambda: "per partition" in text(browser, "#group-lag-by"), what="back: per partition")
    assert "6 hours" in text(browser, "#group-range")
    lines = wait_for(lambda: plot_data(browser, "group-lag"), what="lag per partition")
    assert len(lines) == len(doc["lag"]["partitions"])
    browser.back()
    wait_for(lambda: "around the last changes" in text(browser, "#group-range"), what="back: range")
    assert browser.current_url == page
    browser.forward()
    wait_for(lambda: "6 hours" in text(browser, "#group-range"), what="forward: range")
    assert "per partition" in text(browser, "#group-lag-by")
    shoot(browser, artifacts_dir, "group-forward")
    # the topics grid's name filter, and a topic page's lag history span
    browser.get(base + "/topics?name=k848")
    wait_for(lambda: grid_cells(browser, "topics-grid", "name") == ["k848-data-060433h"], what="k848 topic")
    search = browser.find_element("id", "topics-filter-name")
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys("lag-data", Keys.ENTER)
    wait_for(lambda: browser.current_url == base + "/topics?name=lag-data", what="topics URL")
    wait_for(lambda: grid_cells(browser, "topics-grid", "name") == ["lag-data-060433j"], what="lag topic")
    browser.back()
    wait_for(lambda: grid_cells(browser, "topics-grid", "name") == ["k848-data-060433h"], what="back: k848")
    assert browser.find_element("id", "topics-filter-name").get_attribute("value") == "k848"
    topic = base + topic_url("k848-data-060433h")
    browser.get(topic)
    wait_for(lambda: "all the history held" in text(browser, "#topic-lag-range"), what="topic's default span")
    choose(browser, "topic-lag-range", "last 6 hours")
    wait_for(lambda: browser.current_url == topic + "?range=6h", what="span in the URL")
    browser.back()
    wait_for(
        lambda: "all the history held" in text(browser, "#topic-lag-range"), what="back: the default span"
    )
    assert browser.current_url == topic


def test_alerts_page_lists_the_evaluators_alerts(served, browser, artifacts_dir) -> None:
    import redis
    from selenium.webdriver.common.by import By

    from collectors.storage.alerts import AlertStore

    active = AlertStore(redis.Redis.from_url(served["url"])).active()
    browser.get(served["base"] + "/alerts")
    wait_for(lambda: text(browser, "#alerts-summary").startswith(f"{len(active)} active"), what="alerts")
    groups = wait_for(
        lambda: (c := grid_cells(browser, "alerts-active", "group")) and len(c) == len(active) and c
    )
    assert sorted(groups) == sorted(a["group"] for a in active)
    for grid in ("alerts-active", "alerts-history"):
        _readable_headers(browser, grid)
    shoot(browser, artifacts_dir, "alerts")
    # live refresh can be paused and resumed
    pause = browser.find_element(By.ID, "pause")
    pause.click()
    wait_for(lambda: pause.text == "Resume", what="paused")
    pause.click()
    wait_for(lambda: pause.text == "Pause", what="resumed")


def test_banner_when_redis_goes_away_and_recovery(browser, artifacts_dir) -> None:
    """A dashboard on a Redis of its own: empty state, then Redis stops (banner), then comes back."""
    own = RedisServer().start()
    try:
        base, server = serve_in_thread(own.url)
        browser.get(base + "/")
        wait_for(lambda: "No groups yet" in text(browser, "#fleet-summary"), what="empty state")
        assert "groupscope collect" in text(browser, "#fleet-summary")
        shoot(browser, artifacts_dir, "fleet-empty")
        port_r = own.port
        own.stop()
        wait_for(lambda: "Redis is unreachable" in text(browser, "#banner"), what="banner")
        shoot(browser, artifacts_dir, "redis-down")
        own = RedisServer(port=port_r).start()
        wait_for(lambda: "unreachable" not in text(browser, "#banner"), timeout=20, what="recovery")
        server.shutdown()
    finally:
        own.stop()


@pytest.mark.slow
def test_real_pipeline_replay_on_screen(redis_server, spark, served, browser, artifacts_dir) -> None:
    """`groupscope replay`'s pipeline (Spark, the stateful model, the Redis sink) over the
    rebalance-storm capture, shown by the dashboard: the same state, generation and rebalance history
    as the coordinator model gives for the capture."""
    import redis

    from collectors.pipeline.job import PipelineConfig, run_pipeline, temp_checkpoint

    url = f"redis://{redis_server.host}:{redis_server.port}/{DB + 1}"
    redis.Redis.from_url(url).flushdb()
    cfg = PipelineConfig(
        redis_url=url,
        checkpoint_dir=temp_checkpoint(),
        mode="replay",
        capture_dir=str(Path(__file__).parent / "fixtures" / "real-kafka-4.0" / "rebalance-storm"),
    )
    run_pipeline(cfg, spark, progress=False)
    model = served["docs"]["storm-060433f"]
    base, server = serve_in_thread(url)
    try:
        browser.get(base + "/")
        wait_for(lambda: text(browser, "#fleet-total") == "1", what="one group")
        # a replayed storm of long ago: not a storm now, as for the alerts (coordinator_model/statuses.py)
        assert text(browser, "#fleet-storm-count") == "0"
        browser.get(base + group_url("storm-060433f"))
        wait_for(lambda: text(browser, "#hdr-generation") == str(model["generation"]), what="generation")
        assert text(browser, "#hdr-state") == model["state"]
        gens = wait_for(lambda: plot_data(browser, "group-generations"), what="generations chart")
        assert sum(len(t["x"]) for t in gens) == len(model["generations"])
        shoot(browser, artifacts_dir, "pipeline-storm")
    finally:
        server.shutdown()
