"""What the dashboard shows, without a browser: every time in one chosen zone (dashboard/timefmt.py,
the `dashboard_timezone` setting), the lag heatmaps' numbers and colour scale, and the pages' filters,
sort and time range in their URL's query string (dashboard/urls.py, parse_query and build_query)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.config import ConfigError, Settings, load_settings
from coordinator_model.document.types import GenerationDoc, MemberDoc, PartitionLag, TimelineSpan
from dashboard import timefmt
from dashboard.figures import (
    LAG_COLORBAR_TITLE,
    MAX_LABELLED_CELLS,
    assignment_heatmap,
    generations_figure,
    lag_over_time_figure,
    timeline_figure,
    topic_lag_heatmap,
)
from dashboard.urls import (
    FLEET_SORTS,
    FLEET_STATES,
    GROUP_RANGES,
    HISTORY_HELD,
    METRICS,
    QUERY,
    TOPIC_RANGES,
    TOPICS_SORTS,
    build_query,
    parse_path,
    parse_query,
)

# 2026-07-01 12:00:00.250 UTC: summer time in Paris (UTC+2) and New York (UTC-4)
SUMMER_MS = int(datetime(2026, 7, 1, 12, 0, tzinfo=UTC).timestamp() * 1000) + 250
# 2026-01-15 08:30:00 UTC: winter time in Paris (UTC+1)
WINTER_MS = int(datetime(2026, 1, 15, 8, 30, tzinfo=UTC).timestamp() * 1000)


@pytest.fixture()
def paris() -> Iterator[ZoneInfo]:
    """The display zone set to Europe/Paris for one test, UTC again after it."""
    zone = timefmt.set_display_zone("Europe/Paris")
    try:
        yield zone
    finally:
        timefmt.set_display_zone("UTC")


# ---- the time zone --------------------------------------------------------------------------------------
def test_the_setting_defaults_to_utc_and_refuses_an_unknown_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().dashboard_timezone == "UTC"
    assert load_settings(dashboard_timezone="America/New_York").dashboard_timezone == "America/New_York"
    monkeypatch.setenv("GROUPSCOPE_DASHBOARD_TIMEZONE", "Asia/Tokyo")
    assert load_settings().dashboard_timezone == "Asia/Tokyo"
    for bad in ("Mars/Olympus", "Europe", "../../etc/passwd", "", "UTC+2"):
        monkeypatch.setenv("GROUPSCOPE_DASHBOARD_TIMEZONE", bad)
        with pytest.raises(ConfigError, match="dashboard_timezone: unknown time zone") as e:
            load_settings()
        assert "Europe/Paris" in str(e.value)  # the error shows what a good value looks like


def test_one_function_writes_every_time_in_the_chosen_zone() -> None:
    assert timefmt.zone_name() == "UTC"
    assert timefmt.fmt_time(SUMMER_MS) == "2026-07-01 12:00:00"
    assert timefmt.fmt_time(SUMMER_MS, millis=True) == "2026-07-01 12:00:00.250"
    paris = ZoneInfo("Europe/Paris")
    assert timefmt.fmt_time(SUMMER_MS, zone=paris) == "2026-07-01 14:00:00"  # CEST, UTC+2
    assert timefmt.fmt_time(WINTER_MS, zone=paris) == "2026-01-15 09:30:00"  # CET, UTC+1
    assert timefmt.fmt_time(SUMMER_MS, zone=ZoneInfo("America/New_York")) == "2026-07-01 08:00:00"
    assert timefmt.fmt_time(None) == "-" and timefmt.fmt_time(0, missing="") == ""
    assert timefmt.time_header("Started", paris) == "Started (Europe/Paris)"
    assert timefmt.time_axis_title() == "time (UTC)"


def test_the_display_zone_is_set_once_and_refused_when_unknown(paris: ZoneInfo) -> None:
    assert timefmt.display_zone() == paris and timefmt.zone_name() == "Europe/Paris"
    assert timefmt.fmt_time(SUMMER_MS) == "2026-07-01 14:00:00"
    with pytest.raises(ValueError, match="unknown time zone 'Nowhere/Land'"):
        timefmt.set_display_zone("Nowhere/Land")
    assert timefmt.zone_name() == "Europe/Paris"  # a refused zone changes nothing


def test_charts_put_their_times_in_the_zone_and_name_it_on_the_axis(paris: ZoneInfo) -> None:
    lines = lag_over_time_figure({"orders:0": [(WINTER_MS, 5.0), (SUMMER_MS, 7.0)]}, "lag", "partition")
    assert lines.layout.xaxis.title.text == "time (Europe/Paris)"
    assert lines.layout.xaxis.type == "date"
    assert list(lines.data[0].x) == ["2026-01-15 09:30:00.000", "2026-07-01 14:00:00.250"]
    bands = [TimelineSpan("Stable", WINTER_MS, SUMMER_MS), TimelineSpan("Empty", SUMMER_MS, None)]
    tl = timeline_figure(bands, None, SUMMER_MS + 60_000, (WINTER_MS, SUMMER_MS))
    assert tl.layout.xaxis.title.text == "time (Europe/Paris)"
    assert tl.data[0].base[0] == "2026-01-15 09:30:00.000"
    assert tl.data[0].customdata[0][0] == "2026-01-15 09:30:00.000"  # the hover's "from"
    assert tuple(tl.layout.xaxis.range) == ("2026-01-15 09:30:00.000", "2026-07-01 14:00:00.250")
    gens = generations_figure(
        [GenerationDoc(generation=3, start=SUMMER_MS, duration_ms=1200)], None, SUMMER_MS
    )
    assert gens.data[0].customdata[0][0] == "2026-07-01 14:00:00.250"
    assert "(Europe/Paris)" in gens.data[0].hovertemplate  # the generation axis is no time axis


def test_tables_and_the_header_name_the_zone(paris: ZoneInfo) -> None:
    from dashboard.app import shell
    from dashboard.pages import alerts, fleet, group

    headers = {c["field"]: c["headerName"] for c in fleet.columns(None, False)}
    assert headers["last_change"] == "Last change (Europe/Paris)"
    rows = fleet.zoned_rows({"rowData": [{"last_change": SUMMER_MS}, {"last_change": None}], "rowCount": 2})
    assert [r["last_change"] for r in rows["rowData"]] == ["2026-07-01 14:00:00", ""]
    assert {c["field"]: c["headerName"] for c in alerts.columns(False)}["since"] == "Since (Europe/Paris)"
    assert alerts._row({"since": WINTER_MS, "until": "-"})["since"] == "2026-01-15 09:30:00"
    page = json.dumps(group.layout("g", None, False).to_plotly_json(), default=str)
    assert "Started (Europe/Paris)" in page and "Last commit (Europe/Paris)" in page
    assert "(UTC)" not in page
    assert group.generation_rows([GenerationDoc(generation=1, start=WINTER_MS)])[0]["start"] == (
        "2026-01-15 09:30:00"
    )
    assert "times in Europe/Paris" in json.dumps(shell(5.0).to_plotly_json(), default=str)


# ---- the lag heatmaps -----------------------------------------------------------------------------------
def _topic_rows(groups: int, partitions: int) -> dict[str, list[list[object]]]:
    return {
        f"g{i}": [[p, 100, 100 + 37 * p * (i + 1), 37 * p * (i + 1), 0.5, f"m{i}"] for p in range(partitions)]
        for i in range(groups)
    }


def test_topic_heatmap_writes_each_cells_lag_with_a_titled_scale_and_named_axes() -> None:
    rows = _topic_rows(3, 12)
    rows["g2"][0] = [0, None, 500, None, None, None]  # a lag not known yet: an empty cell
    fig = topic_lag_heatmap(["g0", "g1", "g2"], rows, "Lag per partition")
    trace = fig["data"][0]
    assert trace["texttemplate"] == "%{z:.3~s}"  # d3's SI format: 950, 1.2k, 12.3k, 4.56M
    assert trace["colorbar"]["title"]["text"] == LAG_COLORBAR_TITLE == "lag (offsets)"
    assert "dtick" not in trace["colorbar"]  # Plotly's own ticks (20k, 1M) for a large lag
    assert fig["layout"]["xaxis"]["title"]["text"] == "partition"
    assert fig["layout"]["yaxis"]["title"]["text"] == "group"
    assert trace["z"][2][0] is None and trace["z"][1][11] == 37 * 11 * 2
    # the hover still tells everything about a cell
    assert "%{text}" in trace["hovertemplate"] and "lag 814" in trace["text"][1][11]


def test_a_heatmap_too_big_to_read_keeps_its_hover_and_drops_the_numbers() -> None:
    groups = [f"g{i}" for i in range(10)]
    at_limit = topic_lag_heatmap(groups, _topic_rows(10, MAX_LABELLED_CELLS // 10), "t")
    assert at_limit["data"][0]["texttemplate"] == "%{z:.3~s}"
    big = topic_lag_heatmap(groups, _topic_rows(10, MAX_LABELLED_CELLS // 10 + 1), "t")
    assert big["data"][0]["texttemplate"] == ""
    assert big["data"][0]["hovertemplate"] and big["data"][0]["colorbar"]["title"]["text"] == "lag (offsets)"


def test_the_assignment_heatmap_has_the_same_numbers_scale_and_axis_names() -> None:
    members = [MemberDoc(member_id="m1", assignment=[("orders", 0), ("orders", 1)])]
    lag = [PartitionLag("orders", 0, lag=1500), PartitionLag("orders", 1, lag=0)]
    fig = assignment_heatmap(members, lag)
    trace = fig["data"][0]
    assert trace["texttemplate"] == "%{z:.3~s}" and trace["z"] == [[1500.0, 0.0]]
    assert trace["colorbar"]["title"]["text"] == "lag (offsets)"
    assert fig["layout"]["yaxis"]["title"]["text"] == "member"
    small = assignment_heatmap(members, [PartitionLag("orders", 0, lag=1)])
    assert small["data"][0]["colorbar"]["dtick"] == 1  # no tick at half an offset
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("partition")


# ---- the query string -----------------------------------------------------------------------------------
def test_a_fleet_query_round_trips() -> None:
    search = "?state=Stable&state=Empty&type=consumer&cluster=prod&name=orders%20v2&sort=-lag"
    q = parse_query("fleet", search)
    assert q.problems == []
    assert q.values == {
        "state": ["Stable", "Empty"],
        "type": "consumer",
        "cluster": ["prod"],
        "name": "orders v2",
        "sort": ("lag", "desc"),
    }
    assert build_query("fleet", q.values) == search
    # a comma-separated list reads as the repeated parameter; '+' as a space
    assert parse_query("fleet", "state=Stable,Empty&name=a+b").values == {
        "state": ["Stable", "Empty"],
        "name": "a b",
    }


def test_defaults_and_empty_values_make_a_bare_url() -> None:
    assert build_query("fleet", {}) == ""
    assert build_query("fleet", {"state": [], "name": "", "sort": ("name", "asc"), "type": None}) == ""
    assert build_query("group", {"range": -1, "metric": "lag", "by": "partition"}) == ""
    # the topic page's default span is the history held (issue 34: it was "last hour"); a span chosen
    # is carried
    assert build_query("topic", {"range": HISTORY_HELD, "metric": "lag"}) == ""
    assert build_query("topic", {"range": 3_600_000}) == "?range=1h"
    assert parse_query("topic", "?range=held").values == {"range": HISTORY_HELD}
    assert parse_query("fleet", "") == parse_query("fleet", None) == parse_query("fleet", "?name=")
    assert parse_query("alerts", "").values == {}


def test_group_and_topic_ranges_round_trip() -> None:
    q = parse_query("group", "?range=6h&metric=seconds&by=member")
    assert q.values == {"range": 6 * 3_600_000, "metric": "lag_seconds", "by": "member"} and not q.problems
    assert build_query("group", q.values) == "?range=6h&metric=seconds&by=member"
    assert parse_query("group", "?range=all").values == {"range": 0}  # "all history" is not the default
    assert build_query("group", {"range": 0}) == "?range=all"
    q = parse_query("topic", "?range=24h&metric=seconds")
    assert q.values == {"range": 24 * 3_600_000, "metric": "lag_seconds"}
    assert build_query("topic", q.values) == "?range=24h&metric=seconds"


def test_bad_values_are_left_out_and_said() -> None:
    q = parse_query(
        "fleet",
        "?state=Stable,Sleeping&type=streamy&sort=-protocol&cluster=Prod!&color=red&name=a&name=b&name="
        + "x" * 5,
    )
    assert q.values == {"state": ["Stable"], "name": "a"}
    said = "; ".join(q.problems)
    for words in (
        "state='Sleeping' is not a known state",
        "type='streamy' is not a known group type",
        "sort='-protocol' is not a known sort",
        "cluster='Prod!' is not a valid cluster name",
        "unknown parameter 'color'",
        "'name' given more than once",
    ):
        assert words in said
    assert parse_query("group", "?range=5y").problems == [
        "range='5y' is not a known time range (one of activity, 15m, 1h, 6h, 24h, 7d, all)"
    ]
    assert parse_query("topics", "?name=" + "x" * 201).problems == ["name is longer than 200 characters"]
    with pytest.raises(ValueError):
        build_query("group", {"range": 123})  # a value with no word: a bug, not a URL


@settings(max_examples=150, deadline=None)
@given(
    states=st.lists(st.sampled_from(FLEET_STATES), unique=True, max_size=4),
    name=st.text(max_size=40).filter(lambda s: (s.strip() == s and "," not in s) or s == ""),
    sort=st.sampled_from([None, *((c, d) for c in FLEET_SORTS for d in ("asc", "desc"))]),
)
def test_any_fleet_filter_round_trips(states: list[str], name: str, sort: tuple[str, str] | None) -> None:
    values = {"state": states, "name": name, "sort": sort}
    back = parse_query("fleet", build_query("fleet", values))
    assert back.problems == []
    want = {k: v for k, v in values.items() if v not in (None, "", []) and v != ("name", "asc")}
    assert back.values == want


def test_the_query_words_cover_every_choice_the_pages_offer() -> None:
    from dashboard.components import LAG_METRICS
    from dashboard.data import GRID_SORT, TOPIC_GRID_SORT
    from dashboard.figures import STATE_ORDER
    from dashboard.pages import fleet, group, topic

    assert {v for _, v in group.RANGES} == set(GROUP_RANGES.values())
    assert {v for _, v in topic.HISTORY_RANGES} == set(TOPIC_RANGES.values())
    assert {v for _, v in LAG_METRICS} == set(METRICS.values())
    assert set(FLEET_SORTS) == set(GRID_SORT) and set(TOPICS_SORTS) == set(TOPIC_GRID_SORT)
    assert (*STATE_ORDER, "Unknown") == FLEET_STATES and tuple(fleet.TYPE_LABELS) == tuple(
        QUERY["fleet"][1].choices or ()
    )


def test_the_grids_filter_and_sort_go_to_the_url_and_back() -> None:
    """The fleet grid's filter model (from the boxes or the column menus) and sort become the query,
    and the query's filter model is what the boxes would have set."""
    from dashboard.pages import fleet, topics

    fm = fleet.filter_model(["Stable", "Empty"], "share", "ord", ["prod", "staging"])
    sort = [{"colId": "members", "sort": "desc"}]
    values = fleet.query_values(fm, sort, "/")
    assert build_query("fleet", values) == (
        "?state=Stable&state=Empty&type=share&cluster=prod&cluster=staging&name=ord&sort=-members"
    )
    q = parse_query("fleet", build_query("fleet", values))
    assert fleet.filter_model(q.get("state"), q.get("type"), q.get("name"), q.get("cluster")) == fm
    # one cluster's page: its cluster is in its path, never in its query
    one = fleet.query_values(fleet.filter_model(None, None, None, ["prod"]), [], "/clusters/prod")
    assert build_query("fleet", one) == ""
    # a sort the URL cannot say (a column the server does not sort by) is left out
    assert fleet.query_values({}, [{"colId": "protocol", "sort": "asc"}], "/")["sort"] is None
    t = topics.query_values(topics.filter_model("k848", None), [{"colId": "lag", "sort": "desc"}], "/topics")
    assert build_query("topics", t) == "?name=k848&sort=-lag"


def test_a_page_opened_from_a_url_has_its_filters_and_says_what_it_ignored() -> None:
    from dashboard.pages import fleet, group, topic, topics

    page = fleet.layout(
        None, True, "?state=Stable&sort=-lag&cluster=prod&cluster=qa&type=zzz", ["prod", "staging"]
    )
    found = {c.id: c for c in _walk(page) if isinstance(getattr(c, "id", None), str)}
    assert found["fleet-filter-state"].value == ["Stable"]
    assert found["fleet-filter-cluster"].value == ["prod"]
    opts = found["fleet-grid"].dashGridOptions["initialState"]
    assert opts["sort"] == {"sortModel": [{"colId": "lag", "sort": "desc"}]}
    assert set(opts["filter"]["filterModel"]) == {"state", "cluster"}
    assert opts["columnVisibility"] == {"hiddenColIds": []}  # several clusters: their column shows
    # and the columns keep flexing to the grid's width (else AG Grid gives each its default fixed
    # width under the sort, and the last ones go out of view: issue 34, "Last change" cut)
    sizing = {c["colId"]: c for c in opts["columnSizing"]["columnSizingModel"]}
    assert set(sizing) == {c["field"] for c in fleet.columns(None, True)}
    assert all(c.get("flex") for c in sizing.values())
    one = {
        c.id: c
        for c in _walk(fleet.layout(None, False, "?sort=lag"))
        if isinstance(getattr(c, "id", None), str)
    }
    # one cluster: its column stays hidden under the sort (AG Grid shows what the state does not hide)
    assert one["fleet-grid"].dashGridOptions["initialState"]["columnVisibility"] == {
        "hiddenColIds": ["cluster"]
    }
    note = str(found["url-note"].children)
    assert "type='zzz'" in note and "cluster=qa" in note and "prod" in note
    # a group's range and lag choices; no note when the URL is good
    found = {
        c.id: c
        for c in _walk(group.layout("g", None, False, "?range=24h&by=member"))
        if isinstance(getattr(c, "id", None), str)
    }
    assert found["group-range"].value == 24 * 3_600_000 and found["group-lag-by"].value == "member"
    assert "url-note" not in found
    found = {
        c.id: c
        for c in _walk(topic.layout("t", None, False, "?range=6h&metric=seconds"))
        if isinstance(getattr(c, "id", None), str)
    }
    assert (
        found["topic-lag-range"].value == 6 * 3_600_000 and found["topic-lag-metric"].value == "lag_seconds"
    )
    found = {
        c.id: c
        for c in _walk(topics.layout(None, False, "?name=k848&sort=bogus"))
        if isinstance(getattr(c, "id", None), str)
    }
    assert found["topics-filter-name"].value == "k848" and "sort='bogus'" in str(found["url-note"].children)


def test_the_cluster_switcher_keeps_a_lists_filters_and_drops_a_groups_range() -> None:
    from dashboard.urls import switch_cluster_href

    fleet = parse_path("/")
    assert switch_cluster_href(fleet, "prod", "?state=Stable&cluster=staging&sort=-lag") == (
        "/clusters/prod?state=Stable&sort=-lag"  # the switcher chose the cluster: no cluster filter
    )
    assert switch_cluster_href(parse_path("/clusters/prod/topics"), None, "?name=k&x=1") == "/topics?name=k"
    assert switch_cluster_href(parse_path("/clusters/prod/groups/g"), "qa", "?range=6h") == "/clusters/qa"
    assert switch_cluster_href(parse_path("/topics/t"), "qa", "?range=6h") == "/clusters/qa/topics"
    assert switch_cluster_href(parse_path("/alerts"), "qa", None) == "/clusters/qa/alerts"


def test_paths_stay_as_they_were_with_a_query() -> None:
    assert parse_path("/groups/a%2Fb?range=6h").group == "a/b"
    assert parse_path("/clusters/prod/topics?sort=-lag").page == "topics"


def _walk(component: object) -> Iterator[object]:
    yield component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and hasattr(child, "to_plotly_json"):
            yield from _walk(child)


def test_a_whatif_form_round_trips_through_its_url() -> None:
    """Issue 34: the what-if form in its URL. Every field's value comes back from the query string
    it is written to (a member id with a comma included); what the URL would not take back is not
    written; a URL's bad values are said and its good ones open the form, to be compared at once."""
    from dashboard.pages import whatif

    values = {
        "assignors": ["range", "sticky"],
        "add_members": "3",
        "remove_members": ["c-1,odd", "c 2"],
        "partitions": "orders=24, clicks=+4",
        "sub_member": "c-3/α",
        "sub_topics": "a, b",
        "session_timeout_ms": "45000",
        "max_poll_interval_ms": None,
    }
    search = whatif.query_from_form(values)
    assert search.startswith("?assignor=range&assignor=sticky&add=3&remove=")
    assert whatif.form_from_query(search) == (values, [])
    assert whatif.query_from_form({"add_members": "lots", "assignors": ["bogus"], "partitions": " "}) == ""
    page = whatif.layout("g", None, False, "?assignor=bogus&add=lots&remove=x&session.timeout.ms=1e3&y=1")
    found = {c.id: c for c in _walk(page) if isinstance(getattr(c, "id", None), str)}
    assert found["wi-url"].data == {"assignors": None, "members": ["x"], "run": True}
    assert found["wi-remove_members"].value == ["x"] and found["wi-remove_members"].options == ["x"]
    assert found["wi-add_members"].value == "" and found["wi-session_timeout_ms"].value == ""
    note = str(found["url-note"].children)
    for said in ("assignor='bogus'", "add='lots'", "session.timeout.ms='1e3'", "unknown parameter 'y'"):
        assert said in note
    # a bare what-if URL neither notes nor compares
    found = {c.id: c for c in _walk(whatif.layout("g")) if isinstance(getattr(c, "id", None), str)}
    assert "url-note" not in found and found["wi-url"].data["run"] is False
