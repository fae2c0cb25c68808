"""Dashboard logic without a browser: URLs, the grid's server-side query, reading the model's group
documents (real ones, from the coordinator model on the Kafka 4.0 captures), figures, the what-if form
and the what-if engine link."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
import itertools

from browser.dashboard_fill import CAPTURES, model_docs, started_ms

from coordinator_model.document.types import Denied, GroupDocument, LagDoc, MemberDoc, PartitionLag
from dashboard import group_doc as gd
from dashboard import whatif_engine
from dashboard.data import grid_query
from dashboard.figures import assignment_heatmap, generations_figure, timeline_figure
from dashboard.pages.group import activity_view, lag_series, top_series, window
from dashboard.urls import Route, group_url, parse_path, topic_url, whatif_url
from dashboard.whatif_form import parse_form, parse_partitions


# ---- URLs ----------------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_any_group_name_survives_its_urls(name: str) -> None:
    assert parse_path(group_url(name)) == Route("group", name)
    assert parse_path(whatif_url(name)) == Route("whatif", name)
    assert group_url(name).count("/") == 2  # one path segment, whatever the name holds
    assert parse_path(topic_url(name)) == Route("topic", topic=name)


def test_routes() -> None:
    assert parse_path("/") == Route("fleet")
    assert parse_path(None) == Route("fleet")
    assert parse_path("/alerts") == Route("alerts")
    # what the browser's encodeURIComponent gives for 'a/b c?' (the grid's links)
    assert parse_path("/groups/a%2Fb%20c%3F") == Route("group", "a/b c?")
    assert parse_path("/groups/x/whatif") == Route("whatif", "x")
    assert parse_path("/groups/x/other").page == "not_found"
    assert parse_path("/nope").page == "not_found"
    assert parse_path("/topics") == Route("topics")
    assert parse_path("/topics/") == Route("topics")
    assert parse_path("/topics/orders.v2%2Fx") == Route("topic", topic="orders.v2/x")
    assert parse_path("/topics/a/b").page == "not_found"


# ---- the fleet grid's request -> RedisStore.list_groups query ------------------------------------------
def test_grid_query_translates_sort_filter_and_block() -> None:
    q = grid_query(
        {
            "startRow": 100,
            "endRow": 150,
            "sortModel": [{"colId": "lag", "sort": "desc"}],
            "filterModel": {
                "state": {
                    "filterType": "text",
                    "operator": "OR",
                    "conditions": [
                        {"filterType": "text", "type": "equals", "filter": "Stable"},
                        {"filterType": "text", "type": "equals", "filter": "Empty"},
                    ],
                },
                "name": {"filterType": "text", "type": "contains", "filter": "orders"},
                "type": {"filterType": "text", "type": "equals", "filter": "consumer"},
            },
        }
    )
    assert (q.sort_by, q.descending, q.offset, q.limit) == ("lag", True, 100, 50)
    assert q.states == ["Stable", "Empty"] and q.name_contains == "orders" and q.type_ == "consumer"
    # rebalances column sorts by the store's rebalance_rate index; an unsortable column by name
    assert grid_query({"sortModel": [{"colId": "rebalances_1h", "sort": "asc"}]}).sort_by == "rebalance_rate"
    assert grid_query({"sortModel": [{"colId": "protocol", "sort": "asc"}]}).sort_by == "name"
    assert grid_query(None).limit == 100 and grid_query({"startRow": 0, "endRow": 10**6}).limit == 1000


# ---- real documents from the coordinator model, read as the dashboard reads them -----------------------
@pytest.fixture(scope="module")
def storm() -> GroupDocument:
    return GroupDocument.from_json(model_docs(CAPTURES / "rebalance-storm")[0])


@pytest.fixture(scope="module")
def kip848() -> list[GroupDocument]:
    cap = CAPTURES / "kip848-lifecycle"
    return [GroupDocument.from_json(d) for d in model_docs(cap, started_ms(cap) + 50_000)]


@pytest.fixture(scope="module")
def lag_ramp() -> GroupDocument:
    cap = CAPTURES / "lag-ramp"
    return GroupDocument.from_json(model_docs(cap, started_ms(cap) + 35_000)[0])


def test_reads_a_real_storm_document(storm: GroupDocument) -> None:
    gens = storm.generations
    assert gens[-1].generation == storm.generation
    assert {g.cause for g in gens} >= {"member_joined", "member_left"}
    bands = storm.timeline
    assert bands[-1].state == storm.state == "Empty"
    assert all(a.start <= b.start for a, b in itertools.pairwise(bands))
    fig = generations_figure(gens, None, bands[-1].start + 1)
    assert sum(len(t.x) for t in fig.data) == len(gens)
    tl = timeline_figure(bands, None, bands[-1].start + 10_000, activity_view(bands, bands[-1].start + 10**7))
    assert {t.name for t in tl.data} == {b.state for b in bands}
    # the activity view ends near the last change, not at "now" three hours later
    assert tl.layout.xaxis.range is not None


def test_the_generations_chart_reads_at_300_generations_and_names_epochs_so() -> None:
    from coordinator_model.document.types import GenerationDoc

    gens = [
        GenerationDoc(
            generation=n,
            start=1_000 * n,
            duration_ms=50 + n,
            cause="member_joined" if n % 2 else "member_left",
        )
        for n in range(1, 301)
    ]
    fig = generations_figure(gens, None, 400_000)
    xs = sorted(x for t in fig.data for x in t.x)
    assert xs == list(range(1, 301))  # numbers on a linear axis: Plotly thins the ticks, none overlap
    assert fig.layout.xaxis.tickformat == "d" and fig.layout.xaxis.title.text == "generation"
    assert fig.layout.title.text.startswith("Generations (300)")
    assert "gen %{x}" in fig.data[0].hovertemplate
    epochs = generations_figure(gens[:3], None, 400_000, modern=True)
    assert (
        epochs.layout.title.text.startswith("Epochs (3)") and epochs.layout.xaxis.title.text == "group epoch"
    )
    assert "epoch %{x}" in epochs.data[0].hovertemplate and "gen " not in epochs.data[0].hovertemplate
    assert list(epochs.layout.xaxis.range) == [0.5, 12.5]  # room for 12 bars, not three wide ones


def test_reads_real_kip848_members_and_lag(kip848: list[GroupDocument]) -> None:
    for doc in kip848:
        assert doc.modern
        ms = doc.members
        assert len(ms) > 0
        assert all(m.member_epoch is not None and m.target_assignment is not None for m in ms)
        rows = gd.member_rows(doc, now_ms=doc.as_of)
        assert sum(r.partitions for r in rows) == sum(len(m.assignment) for m in ms)
        parts = doc.lag.partitions
        assert doc.lag.total is not None and sum(p.lag or 0 for p in parts) == doc.lag.total
        assert all(p.member_id for p in parts)  # every partition of a Stable group has an owner
        # the partitions table: one line per partition, its owner and its last commit
        table = gd.partition_rows(doc)
        assert [(r["topic"], r["partition"], r["member"]) for r in table] == [
            (p.topic, p.partition, p.member_id) for p in parts
        ]
        commits = {(o.topic, o.partition): o.commit_timestamp for o in doc.offsets}
        assert commits and all(r["commit_time"] == commits.get((r["topic"], r["partition"])) for r in table)
        fig = assignment_heatmap(ms, parts)
        z = fig["data"][0]["z"]
        assert len(z) == len(ms) and sum(v is not None for row in z for v in row) == len(parts)


def test_member_lag_sums_its_partitions(lag_ramp: GroupDocument) -> None:
    (row,) = gd.member_rows(lag_ramp, now_ms=lag_ramp.as_of)
    assert row.partitions == 4 and row.lag == lag_ramp.lag.total > 0
    assert row.lag_seconds == lag_ramp.lag.max_seconds
    assert row.heartbeat_age_s is not None and row.heartbeat_ratio is not None


def test_member_columns_leave_out_what_no_member_fills(lag_ramp: GroupDocument) -> None:
    """The heartbeat and instance-id columns show where a member has them (a probed classic group);
    a KIP-848 group without probes gets its epochs and target instead; a streams group its tasks,
    its target said in tasks only."""
    from test_alert_docs import wordcount_doc

    from dashboard.pages.group import member_columns

    def fields(doc: GroupDocument) -> list[str]:
        return [c["field"] for c in member_columns(doc, [r.__dict__ for r in gd.member_rows(doc, 0)])]

    probed = fields(lag_ramp)
    assert {"heartbeat_age_s", "session_timeout_s", "heartbeat_ratio"} <= set(probed)
    assert "group_instance_id" not in probed and "member_epoch" not in probed
    kip848 = GroupDocument(
        group="k", type="consumer", state="Stable", members=[MemberDoc("m1", client_id="c", modern=True)]
    )
    assert fields(kip848)[-3:] == ["member_epoch", "state", "target"] and "heartbeat_age_s" not in fields(
        kip848
    )
    streams = fields(wordcount_doc())
    assert streams[-5:] == ["member_epoch", "state", "tasks", "target_tasks", "process_id"]
    assert "target" not in streams and "heartbeat_ratio" not in streams
    assert "partitions" not in streams  # a streams member is given tasks: its Assignment says the rest


def test_a_streams_groups_member_columns_fit_the_page_at_1400_px() -> None:
    """Issue 34: a streams group's members grid scrolled sideways at 1,400 px (its columns' widths
    made ~1,700 px in the grid's ~1,320). Its columns' least widths, every one a member may fill but
    a static member's instance id (rare in Kafka Streams), add up to less than the grid."""
    from dashboard.pages.group import STREAMS_MEMBER_COLUMNS

    least = sum(
        c.get("minWidth") or c["width"] for c in STREAMS_MEMBER_COLUMNS if c["field"] != "group_instance_id"
    )
    assert least <= 1_300, least


def test_a_kip848_groups_member_columns_fit_the_page_at_1400_px() -> None:
    """Issue 34: a KIP-848 group whose members are probed (the heartbeat columns beside its epochs,
    states and targets) scrolled sideways at 1,400 px (~1,600 px of columns in the grid's ~1,320).
    Its columns' least widths, the heartbeat ones included and a static member's instance id left out
    (as for a streams group's), add up to less than the grid; its member id is cut, with its tooltip."""
    from dashboard.pages.group import MODERN_MEMBER_COLUMNS, member_columns

    least = sum(
        c.get("minWidth") or c["width"] for c in MODERN_MEMBER_COLUMNS if c["field"] != "group_instance_id"
    )
    assert least <= 1_300, least
    probed = GroupDocument(
        group="k",
        type="consumer",
        members=[MemberDoc("m1", client_id="c", session_timeout_ms=45_000, last_heartbeat=1, modern=True)],
        as_of=2_000,
    )
    fields = [c["field"] for c in member_columns(probed, [r.__dict__ for r in gd.member_rows(probed, 0)])]
    assert {"heartbeat_age_s", "session_timeout_s", "heartbeat_ratio"} <= set(fields)
    assert fields[-3:] == ["member_epoch", "state", "target"] and "partitions" not in fields
    member_id = next(c for c in MODERN_MEMBER_COLUMNS if c["field"] == "member_id")
    assert member_id["tooltipField"] == "member_id" and "wrapText" not in member_id


def test_a_streams_members_tasks_are_said_by_subtopology_in_ranges() -> None:
    """Kafka's task ids ("<subtopology>_<partition>") said compactly, each kind's by subtopology with
    its partitions as ranges, and read back (as the browser tests read a cell) to the same tasks."""
    from browser.dashboard_driver import task_ids_said

    from coordinator_model.document.types import TasksDoc

    active = [f"0_{p}" for p in range(12)] + ["1_3", "1_4", "1_7", "10_0", "2_9"]
    tasks = TasksDoc(active=active, standby=["2_0", "2_1", "2_3"], warmup=["1_5"])
    said = gd.fmt_tasks(tasks)
    assert said == "active 0:0-11 1:3-4,7 2:9 10:0; standby 2:0-1,3; warm-up 1:5"
    assert sorted(task_ids_said(said)) == sorted(active + tasks.standby + tasks.warmup)
    assert gd.fmt_tasks(TasksDoc()) == "none" and gd.fmt_tasks(None) is None
    # an id not of Kafka's form is said as it is
    assert gd.fmt_task_ids(["0_1", "odd"]) == "0:1 odd"


def test_header_says_what_is_denied_inferred_and_from_which_sources() -> None:
    from dashboard.pages.group import header

    doc = GroupDocument(
        group="g",
        type="consumer",
        state="Stable",
        group_epoch=7,
        assignment_epoch=6,
        lag=LagDoc(total=12_345, max_seconds=2.25),
        sources=["describe", "end_offsets"],
        inferred=["generation: no source"],
        denied={"offsets": Denied(since=1, error="GROUP_AUTHORIZATION_FAILED")},
    )
    text = str(header(GroupDocument.from_json(doc.to_json()), {"rebalances_1h": 2}, 10_000))
    assert "its committed offsets" in text and "offsets: GROUP_AUTHORIZATION_FAILED" in text
    assert "Inferred for lack of a source: generation: no source" in text
    assert "Sources: describe, end_offsets" in text
    assert "12,345" in text and "2.2" in text and "Group epoch" in text and "Generation'" not in text
    # a modern group's coordinator assigns: its assignor is named, and it has no leader
    assert "'Assignor'" in text and "'Leader'" not in text
    classic = str(header(GroupDocument(group="c", type="classic", state="Stable", leader="m-1"), None, 1))
    assert "'Leader'" in classic and "'Protocol'" in classic and "'Assignor'" not in classic


def test_a_provisional_group_says_so_and_shows_no_lag(redis_client, redis_server) -> None:
    """The Admin poller's first answers while the collector starts: the group page says what it is
    and what follows; the fleet grid marks the row and leaves its lag blank rather than 0."""
    from collectors.storage.redis_store import RedisStore
    from coordinator_model.evidence import from_describe_json
    from coordinator_model.provisional import provisional_document
    from dashboard.data import DashboardData, fleet_page
    from dashboard.pages.fleet import COLUMNS
    from dashboard.pages.group import header

    line = {
        "ts": 1_000,
        "group": "g",
        "type": "classic",
        "state": "Stable",
        "assignor": "range",
        "members": [],
    }
    doc = provisional_document(from_describe_json(line))
    text = str(header(GroupDocument.from_json(doc.to_json()), None, 2_000))
    assert "group-provisional" in text and "the pipeline's first document of it replaces this one" in text
    assert "group-provisional" not in str(header(GroupDocument(group="g", state="Stable"), None, 2_000))
    store = RedisStore(redis_client)
    store.forget_pipeline_writes()
    assert store.write_provisional([doc], 1_000) == 1
    page = fleet_page(DashboardData(redis_server.url), {"startRow": 0, "endRow": 10})
    [row] = page["rowData"]
    assert (
        row["provisional"] and row["lag"] is None and row["lag_seconds"] is None and row["state"] == "Stable"
    )
    state_col = next(c for c in COLUMNS if c["field"] == "state")
    assert "(provisional)" in state_col["valueFormatter"]["function"]


def test_lag_series_per_partition_and_group_seconds() -> None:
    points = [
        {
            "ts": 2000,
            "lag": 30,
            "lag_seconds": 2.5,
            "partitions": {"t:0": 10, "t:1": 20},
            "members": {"m": 30},
        },
        {"ts": 1000, "lag": 3, "lag_seconds": 0.5, "partitions": {"t:0": 1, "t:1": 2}, "members": {"m": 3}},
    ]
    assert lag_series(points, "lag", "partition") == {
        "t:0": [(1000, 1.0), (2000, 10.0)],
        "t:1": [(1000, 2.0), (2000, 20.0)],
    }
    assert lag_series(points, "lag", "member") == {"m": [(1000, 3.0), (2000, 30.0)]}
    assert lag_series(points, "lag_seconds", "partition") == {
        "group (worst partition)": [(1000, 0.5), (2000, 2.5)]
    }


def test_time_window_anchors_to_last_activity(storm: GroupDocument) -> None:
    last = gd.latest_time(storm)
    since, until, note = window(3_600_000, storm, now=last + 10 * 3_600_000)
    assert (since, until) == (last - 3_600_000, last) and "last activity" in note
    since, until, note = window(3_600_000, storm, now=last + 60_000)
    assert until == last + 60_000 and note == ""


# ---- the what-if form -----------------------------------------------------------------------------------
def test_form_rejects_bad_values_field_by_field(lag_ramp: GroupDocument) -> None:
    req, errors = parse_form(
        {
            "assignors": [],
            "add_members": "three",
            "remove_members": ["nobody"],
            "partitions": "lag-data-060433j=2",
            "sub_member": None,
            "sub_topics": "x",
            "session_timeout_ms": "-5",
            "max_poll_interval_ms": "1.5",
        },
        lag_ramp,
    )
    assert req is None
    assert set(errors) == {
        "assignors",
        "add_members",
        "remove_members",
        "partitions",
        "subscription",
        "session_timeout_ms",
        "max_poll_interval_ms",
    }
    assert "whole number" in errors["add_members"] and "cannot reduce" in errors["partitions"]


def test_form_accepts_good_values(lag_ramp: GroupDocument) -> None:
    mid = lag_ramp.members[0].member_id
    req, errors = parse_form(
        {
            "assignors": ["range", "cooperative-sticky"],
            "add_members": " 2 ",
            "partitions": "lag-data-060433j=+4",
            "sub_member": mid,
            "sub_topics": "lag-data-060433j, other",
            "session_timeout_ms": "45000",
        },
        lag_ramp,
    )
    assert errors == {} and req is not None
    assert req.add_members == 2 and req.partitions == {"lag-data-060433j": 8}
    assert req.subscriptions == {mid: ["lag-data-060433j", "other"]} and req.session_timeout_ms == 45000


@pytest.mark.parametrize(
    ("text", "error"),
    [("t=", "give a count"), ("t", "topic=COUNT"), ("bad topic!=3", "not a valid topic"), ("t=+x", "whole")],
)
def test_partition_field_errors(text: str, error: str) -> None:
    parts, err = parse_partitions(text, {"t": 4})
    assert parts == {} and err is not None and error in err


# ---- the what-if engine through the page's adapter -----------------------------------------------------
def test_whatif_runs_every_picked_assignor_with_progress(kip848: list[GroupDocument]) -> None:
    doc = kip848[0]
    req, errors = parse_form(
        {"assignors": ["range", "roundrobin", "cooperative-sticky"], "add_members": "3"}, doc
    )
    assert req is not None, errors
    seen: list[tuple[int, int]] = []
    out = whatif_engine.run(doc, req, lambda i, n: seen.append((i, n)))
    assert out.error is None and [r.assignor for r in out.results] == [
        "range",
        "roundrobin",
        "cooperative-sticky",
    ]
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    n_parts = len(doc.lag.partitions)
    for r in out.results:
        assert len(r.members) == len(doc.members) + 3
        assert sum(m.partitions for m in r.members) == n_parts  # every partition assigned exactly once
        assert r.max_partitions - r.min_partitions <= 1
    # six partitions over six members: an eager assignor moves the ones it gives to the new members
    assert len(out.results[0].moves) >= 3


def test_whatif_engine_rejection_is_a_message(kip848: list[GroupDocument]) -> None:
    doc = kip848[0]
    mid = doc.members[0].member_id
    # the form accepts a topic name the engine has no partition count for; the engine says so
    req, _ = parse_form({"assignors": ["range"], "sub_member": mid, "sub_topics": "unknown-topic"}, doc)
    assert req is not None
    out = whatif_engine.run(doc, req, lambda i, n: None)
    assert out.error and "unknown-topic" in out.error


def test_lag_chart_keeps_the_top_lines_and_sums_the_rest() -> None:
    series = {f"t:{p}": [(1000, float(p)), (2000, float(p * 2))] for p in range(50)}
    top = top_series(series, "partition", n=5)
    assert list(top)[:5] == ["t:49", "t:48", "t:47", "t:46", "t:45"]
    assert top["other 45 partitions (sum)"] == [
        (1000, float(sum(range(45)))),
        (2000, float(2 * sum(range(45)))),
    ]
    assert top_series({"a": [(1, 1.0)]}, "member") == {"a": [(1, 1.0)]}


def test_heatmap_rows_never_merge_on_truncated_ids() -> None:
    prefix = "consumer-with-a-very-long-client-id-"
    ms = [MemberDoc(member_id=f"{prefix}{i}", assignment=[("t", i)]) for i in range(3)]
    fig = assignment_heatmap(ms, [PartitionLag("t", i, lag=i) for i in range(3)])
    assert fig["data"][0]["y"] == [m.member_id for m in ms]
    assert fig["data"][0]["z"] == [[0.0, None, None], [None, 1.0, None], [None, None, 2.0]]


def test_empty_group_heatmap_shows_the_last_assignment(storm: GroupDocument) -> None:
    from dashboard.pages.group import heatmap

    assert storm.members == []
    last = next(g for g in reversed(storm.generations) if g.assignment)
    fig = heatmap(storm)
    assert f"generation {last.generation}" in fig["layout"]["title"]["text"]
    assert fig["data"][0]["y"] == list(last.assignment)


def test_inferred_states_are_hatched_and_inferred_causes_marked() -> None:
    """A group seen only through its commits and the Admin API: what no source saw is shown so."""
    from collectors.capture import read_capture
    from coordinator_model.rebuild import rebuild
    from dashboard.pages.group import generation_rows

    evs = read_capture(CAPTURES / "classic-range-lifecycle").evidence
    seen = [e for e in evs if e.source in ("offsets", "describe", "end_offsets")]
    doc = next(
        GroupDocument.from_json(e.document_json()) for e in rebuild(seen).values() if e.type == "classic"
    )
    bands = doc.timeline
    assert any(b.inferred for b in bands) and any(not b.inferred for b in bands)
    fig = timeline_figure(bands, None, bands[-1].start + 1000)
    shapes = {
        (t.name, shape) for t in fig.data for shape in (t.marker.pattern.shape or ()) if t.marker.pattern
    }
    by_state = {(b.state, "/" if b.inferred else "") for b in bands}
    assert shapes == by_state
    rows = generation_rows(doc.generations)
    marked = [r for r, g in zip(rows, doc.generations, strict=True) if "cause" in g.inferred]
    assert marked and all(r["cause"].endswith(" (inferred)") for r in marked)
    assert all(not r["cause"].endswith("(inferred)") for r in rows if r not in marked)


def test_per_member_bars_keep_members_apart_and_count_whole_partitions() -> None:
    """Members whose shortened names coincide stay two bars (Plotly would stack one category); the
    whole member id is on hover; a count axis shows whole partitions."""
    from dashboard.figures import per_member_bars

    rows = [
        ("consumer-orders-1-0b9e1c2a-aaaa", 1, 120.0),
        ("consumer-orders-1-0b9e1c2a-bbbb", 1, 80.0),
        ("whatif-member-0", 2, 0.0),
    ]
    fig = per_member_bars(rows, "t")
    parts, lag = fig.data
    assert len(set(parts.x)) == 3 and list(parts.x) == list(lag.x)
    assert list(parts.customdata) == [r[0] for r in rows]
    assert fig.layout.yaxis.dtick == 1 and fig.layout.yaxis.tickformat == ",d"


def test_a_member_is_labelled_by_its_client_where_its_id_does_not_say() -> None:
    from dashboard.figures import member_label

    # classic: the id starts with the client id
    assert member_label("consumer-1-3f2a9c1e-aaaa", "consumer-1") == "consumer-1-3f2a9c1e-aaaa"
    # KIP-848, share, streams: an opaque id, led by the client id
    label = member_label("gZh6TfiXRZ6dfsH2wuJq_A", "streams-1-StreamThread-1-consumer")
    assert label.startswith("streams-1-StreamThr") and label.endswith("(gZh6Tf…)"), label
    assert member_label("gZh6TfiXRZ6dfsH2wuJq_A", None) == "gZh6TfiXRZ6dfsH2wuJq_A"


def test_a_log_end_read_before_the_commit_is_shown_as_at_least_the_commit() -> None:
    """Issue 34: the Admin poller's log end (100) older than the commit (120): the row read "end 100,
    committed 120" beside a lag of 0. The table shows the log end as at least the commit, marked as
    a lower bound with the poller's reading kept; the lag is the model's, untouched."""
    doc = GroupDocument(
        group="g",
        state="Stable",
        lag=LagDoc(
            total=5,
            partitions=[
                PartitionLag("t", 0, committed=120, has_commit=True, end_offset=100, lag=0),
                PartitionLag("t", 1, committed=95, has_commit=True, end_offset=100, lag=5),
                PartitionLag("t", 2, committed=None, end_offset=100),
                PartitionLag("t", 3, committed=7, has_commit=True, end_offset=None),
            ],
        ),
    )
    rows = {r["partition"]: r for r in gd.partition_rows(doc)}
    assert (rows[0]["log_end"], rows[0]["log_end_bound"], rows[0]["log_end_read"]) == (120, True, 100)
    assert rows[0]["lag"] == 0 and rows[0]["committed"] == 120
    assert (rows[1]["log_end"], rows[1]["log_end_bound"], rows[1]["lag"]) == (100, False, 5)
    assert (rows[2]["log_end"], rows[2]["log_end_bound"]) == (100, False)  # no commit: as read
    assert (rows[3]["log_end"], rows[3]["log_end_bound"]) == (None, False)  # not read: unknown
    assert gd.shown_log_end(120, 120) == (120, False)


def test_a_heartbeats_age_is_as_of_the_document_not_the_page_clock(lag_ramp: GroupDocument) -> None:
    """Live, the model runs a few seconds behind the clock: a member that beat a second before the
    document's moment is a second old, however late the page is drawn (it read 1.2-2 times a 6 s
    session timeout on the demo's healthy members)."""
    import dataclasses

    doc = dataclasses.replace(
        lag_ramp,
        members=[dataclasses.replace(m, last_heartbeat=lag_ramp.as_of - 1_000) for m in lag_ramp.members],
    )
    (row,) = gd.member_rows(doc, now_ms=lag_ramp.as_of + 9_000)
    assert row.heartbeat_age_s == 1.0
