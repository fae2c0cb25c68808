"""The group page (`/clusters/<c>/groups/<name>`, or `/groups/<name>` for the cluster `default` or
the only one): what the group is doing now and what it has been doing. A group is (cluster, name):
the same name in another cluster is another group.

The time range and the lag chart's choices are in the page's URL (`?range=6h&metric=seconds&by=member`,
dashboard/urls.py), so a copied link opens the group over the same span."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dash_ag_grid as dag
from dash import Dash, Input, Output, State, dcc, html

from coordinator_model.document.types import DocumentError, GenerationDoc, GroupDocument, TimelineSpan
from coordinator_model.statuses import LABELS, GroupStatuses
from coordinator_model.streams.tasks import task_lags
from dashboard import group_doc as gd
from dashboard.components import (
    GRID_COLUMNS,
    LAG_METRICS,
    QUERY_STORE,
    WRAPPED,
    choice,
    cluster_label,
    empty_state,
    fmt_age,
    graph,
    query_store,
    state_badge,
    url_note,
    zoned_columns,
)
from dashboard.data import DashboardData, Unavailable, now_ms
from dashboard.figures import (
    _dur,
    assignment_heatmap,
    empty_figure,
    generations_figure,
    lag_over_time_figure,
    timeline_figure,
)
from dashboard.timefmt import fmt_time
from dashboard.urls import ACTIVITY, build_query, fleet_url, parse_path, parse_query, whatif_url

# ACTIVITY, the default range: from the first event to a little after the last state change. Each
# range has its word in the URL (dashboard/urls.py, GROUP_RANGES).
RANGES = [
    ("around the last changes", ACTIVITY),
    ("15 min", 15 * 60_000),
    ("1 hour", 3_600_000),
    ("6 hours", 6 * 3_600_000),
    ("24 hours", 24 * 3_600_000),
    ("7 days", 7 * 24 * 3_600_000),
    ("all history", 0),
]

# A classic group's members fit the grid at the browser tests' 1,400 px (headers wrap, GRID_COLUMNS;
# the columns no member fills are left out, member_columns); a KIP-848 or share group's
# (MODERN_MEMBER_COLUMNS) and a streams group's (STREAMS_MEMBER_COLUMNS) have columns of their own.
MEMBER_COLUMNS = [
    {"field": "member_id", "headerName": "Member id", "minWidth": 180, "flex": 2},
    {"field": "group_instance_id", "headerName": "Instance id", "width": 110},
    {"field": "client_id", "headerName": "Client id", "width": 110},
    {"field": "client_host", "headerName": "Host", "width": 110},
    {"field": "partitions", "headerName": "Partitions", "type": "numericColumn", "width": 110},
    {
        "field": "assignment",
        "headerName": "Assignment",
        "flex": 2,
        "minWidth": 160,
        "tooltipField": "assignment",
    },
    {"field": "lag", "headerName": "Lag (offsets)", "type": "numericColumn", "width": 110},
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "width": 80},
    {"field": "heartbeat_age_s", "headerName": "Heartbeat age (s)", "type": "numericColumn", "width": 115},
    {
        "field": "session_timeout_s",
        "headerName": "Session timeout (s)",
        "type": "numericColumn",
        "width": 100,
    },
    {
        "field": "heartbeat_ratio",
        "headerName": "Age / timeout",
        "type": "numericColumn",
        "width": 95,
        "cellStyle": {
            "styleConditions": [
                {"condition": "params.value >= 1", "style": {"backgroundColor": "#ffcdd2"}},
                {"condition": "params.value >= 0.5", "style": {"backgroundColor": "#fff3e0"}},
            ]
        },
    },
]


# A clamped cell (WRAPPED, to 3 lines) ends in "…", the whole in its tooltip: a Kafka Streams
# repartition topic's name alone takes 4 lines of the Assignment column, and a member's row is better
# seen whole beside the others.
def clamped(field: str) -> dict[str, Any]:
    return {"wrapText": True, "autoHeight": True, "cellClass": "gs-wrap gs-clamp", "tooltipField": field}


# How a streams member's process id ("1c9a7f4e…"), client id (holding the process id), tasks and
# target tasks ("same" as its tasks, when reconciled) are said: assets/dashAgGridFunctions.js.
SHORT_ID = {"function": "streamsProcessId(params)"}
CLIENT_ID = {"function": "streamsClientId(params)"}
SAME_AS_TASKS = {"function": "streamsTargetTasks(params)"}
TASKS = {"function": "streamsTasks(params)"}  # a range's hyphen non-breaking: "0:0-" never ends a line
# A KIP-848 or share member's target assignment said "same" when it is its assignment (reconciled),
# its host free to wrap after a dot: assets/dashAgGridFunctions.js.
SAME_AS_ASSIGNMENT = {"function": "sameAsAssignment(params)"}
HOST = {"function": "breakAtDots(params)"}
# A KIP-848 or share group's members: a consumer's columns and the member's epoch, state and target
# assignment. A KIP-848 group whose members are probed (the heartbeat columns) made at the consumer's
# widths a grid of ~1,600 px in the ~1,320 px the page has at 1,400 px, read only by scrolling it
# sideways. As the streams grid was (STREAMS_MEMBER_COLUMNS), each column here is the least its header
# needs to read whole; the minimums add up to 1,280 px with the heartbeat columns (1,380 with a
# static member's instance id). The member id (an opaque UUID: the client id and host say who it is)
# is cut, the whole in its tooltip; client ids and the assignments wrap to 3 lines, the whole in their
# tooltips; hosts and member states wrap. The count of partitions is left out: the Assignment beside
# it lists them, and the heatmap below counts them.
MODERN_MEMBER_COLUMNS = [
    {
        "field": "member_id",
        "headerName": "Member id",
        "flex": 1,
        "minWidth": 100,
        "tooltipField": "member_id",
    },
    {"field": "group_instance_id", "headerName": "Instance id", "width": 100, **WRAPPED},
    {"field": "client_id", "headerName": "Client id", "flex": 2, "minWidth": 120, **clamped("client_id")},
    # a host wraps after a dot ("/10.244.1." "101"), not inside a number (its last digit went to a line
    # of its own); the row is as tall already for its client id
    {
        "field": "client_host",
        "headerName": "Host",
        "width": 110,
        "valueFormatter": HOST,
        "tooltipField": "client_host",
        **WRAPPED,
    },
    {"field": "assignment", "headerName": "Assignment", "flex": 2, "minWidth": 130, **clamped("assignment")},
    {"field": "lag", "headerName": "Lag (offsets)", "type": "numericColumn", "width": 110},
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "width": 80},
    *[c for c in MEMBER_COLUMNS if c["field"] in ("heartbeat_age_s", "session_timeout_s", "heartbeat_ratio")],
    {"field": "member_epoch", "headerName": "Member epoch", "type": "numericColumn", "width": 100},
    # the longest state, "unrevoked_partitions", on two lines
    {"field": "state", "headerName": "Member state", "width": 100, **WRAPPED},
    {
        "field": "target",
        "headerName": "Target assignment",
        "flex": 1,
        "minWidth": 120,
        "valueFormatter": SAME_AS_ASSIGNMENT,
        **clamped("target"),
    },
]
# A streams member has, beyond a consumer's, its member epoch and state, its tasks, its target
# tasks and its process: at the consumer's widths they made a grid of ~1,700 px in the ~1,320 px the
# page has at 1,400 px, read only by scrolling it sideways. Here the columns' minimums add up to
# 1,270 px (1,370 with a static member's instance id, rare in Kafka Streams): each is the least its
# header needs to read whole beside its filter icon (a narrower one breaks "Member" or "(offsets)"
# in two). The member id is cut and the process id shortened, the whole of each in its tooltip;
# client ids and topic-partitions wrap to 3 lines, tasks (said compactly: group_doc.fmt_tasks) wrap.
# The count of partitions is left out: a streams member is given tasks, and the topic-partitions
# they read are the Assignment beside it.
STREAMS_MEMBER_COLUMNS = [
    {
        "field": "member_id",
        "headerName": "Member id",
        "flex": 1,
        "minWidth": 100,
        "tooltipField": "member_id",
    },
    {"field": "group_instance_id", "headerName": "Instance id", "width": 100, **WRAPPED},
    {
        "field": "client_id",
        "headerName": "Client id",
        "flex": 2,
        "minWidth": 140,
        "valueFormatter": CLIENT_ID,
        **clamped("client_id"),
    },
    {"field": "client_host", "headerName": "Host", "width": 140, **WRAPPED},
    {"field": "assignment", "headerName": "Assignment", "flex": 2, "minWidth": 150, **clamped("assignment")},
    {"field": "lag", "headerName": "Lag (offsets)", "type": "numericColumn", "width": 110},
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "width": 80},
    {"field": "member_epoch", "headerName": "Member epoch", "type": "numericColumn", "width": 100},
    {"field": "state", "headerName": "Member state", "width": 100, **WRAPPED},
    {"field": "tasks", "headerName": "Tasks", "flex": 2, "minWidth": 140, "valueFormatter": TASKS, **WRAPPED},
    {
        "field": "target_tasks",
        "headerName": "Target tasks",
        "flex": 1,
        "minWidth": 100,
        "valueFormatter": SAME_AS_TASKS,
        "tooltipField": "target_tasks",
        **WRAPPED,
    },
    {
        "field": "process_id",
        "headerName": "Process",
        "width": 110,
        "valueFormatter": SHORT_ID,
        "tooltipField": "process_id",
    },
]
# Columns only some groups' members fill (a static member's instance id; the heartbeat columns, from
# the probe's events): shown when a member has a value there, so a KIP-848 or streams group's own
# columns (epochs, target assignment, tasks) are not pushed past the grid's edge by empty ones.
HEARTBEAT_FIELDS = frozenset({"heartbeat_age_s", "session_timeout_s", "heartbeat_ratio"})
OPTIONAL_MEMBER_FIELDS = HEARTBEAT_FIELDS | {"group_instance_id"}


def member_columns(doc: GroupDocument, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The members grid's columns for this group and its member rows."""
    filled = {f for r in rows for f in OPTIONAL_MEMBER_FIELDS if r.get(f) not in (None, "")}

    def shown(columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [c for c in columns if c["field"] not in OPTIONAL_MEMBER_FIELDS or c["field"] in filled]

    if doc.type == "streams":
        # its target is said in tasks, what it is assigned by: not in partitions too. The heartbeat
        # columns (a probe's) stay the consumer's, after the lag, for a member that has them.
        beats = [c for c in MEMBER_COLUMNS if c["field"] in HEARTBEAT_FIELDS]
        at = next(i for i, c in enumerate(STREAMS_MEMBER_COLUMNS) if c["field"] == "lag_seconds") + 1
        return shown(STREAMS_MEMBER_COLUMNS[:at] + beats + STREAMS_MEMBER_COLUMNS[at:])
    return shown(MODERN_MEMBER_COLUMNS if doc.modern else MEMBER_COLUMNS)


# The widths add up to less than the page's grid at 1,280 px (a column past the grid's edge was read
# only by scrolling it sideways); a longer header wraps (GRID_COLUMNS).
GEN_COLUMNS = [
    {"field": "generation", "headerName": "Gen / epoch", "width": 125, "sort": "desc"},
    {"field": "start", "headerName": "Started", "width": 180},
    {"field": "duration", "headerName": "Rebalance took", "width": 120},
    {"field": "cause", "headerName": "Cause", "width": 155},
    # a KIP-848, share or streams member said by its client id and host, its id in the tooltip
    # (generation_rows); a classic member by its id, which starts with its client id
    {"field": "joined", "headerName": "Joined", "flex": 1, "minWidth": 120, "tooltipField": "joined_whole"},
    {"field": "left", "headerName": "Left", "flex": 1, "minWidth": 120, "tooltipField": "left_whole"},
    {"field": "protocol", "headerName": "Protocol", "width": 100},
    {
        "field": "reason",
        "headerName": "Broker's reason",
        "flex": 2,
        "minWidth": 160,
        "tooltipField": "reason",
    },
    {"field": "inferred", "headerName": "Inferred", "width": 110, "tooltipField": "inferred"},
]
PARTITION_COLUMNS = [
    {"field": "topic", "headerName": "Topic", "cellRenderer": "TopicLink", "flex": 1, "minWidth": 160},
    {"field": "partition", "headerName": "Partition", "type": "numericColumn", "width": 105},
    {"field": "committed", "headerName": "Committed offset", "type": "numericColumn", "width": 155},
    {
        "field": "log_end",
        "headerName": "Log-end offset",
        "type": "numericColumn",
        "width": 140,
        # raised to the committed offset when the poller's reading is older than the commit
        # (group_doc.shown_log_end): a lower bound, said so
        "valueFormatter": {
            "function": "params.data && params.data.log_end_bound ? '≥ ' + params.value : params.value"
        },
        "tooltipValueGetter": {
            "function": "params.data && params.data.log_end_bound ? 'The Admin poller last read '"
            " + params.data.log_end_read + ', before this commit: the log reaches at least the"
            " committed offset' : null"
        },
    },
    {"field": "lag", "headerName": "Lag (offsets)", "type": "numericColumn", "width": 125},
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "width": 95},
    {"field": "status", "headerName": "Status", "width": 100},
    {"field": "member", "headerName": "Owner", "flex": 1, "minWidth": 200},
    {"field": "commit_time", "headerName": "Last commit", "width": 220},
]


def _grid(id_: str, columns: list[dict[str, Any]], height: int = 300) -> dag.AgGrid:
    return dag.AgGrid(
        id=id_,
        columnDefs=columns,
        rowData=[],
        defaultColDef=GRID_COLUMNS,
        dashGridOptions={"tooltipShowDelay": 300, "enableCellTextSelection": True, "animateRows": False},
        style={"height": f"{height}px"},
        className="ag-theme-alpine",
    )


def layout(name: str, cluster: str | None = None, multi: bool = False, search: str | None = None) -> html.Div:
    """`cluster`: the group's (resolved for a legacy URL), carried by every link; shown beside the
    name when there are several clusters. `search`: the URL's query string, whose time range and lag
    chart choices the page opens with (a bad value is left out and said)."""
    q = parse_query("group", search)
    return html.Div(
        [
            html.Div(
                [
                    html.H2(["Group ", html.Code(name, id="group-name")], style={"display": "inline-block"}),
                    cluster_label(cluster if multi else None),
                    html.Span(" "),
                    dcc.Link(
                        "What-if →",
                        href=whatif_url(name, cluster),
                        id="group-whatif-link",
                        style={"marginLeft": "18px"},
                    ),
                    dcc.Link(
                        "← Fleet", href=fleet_url(cluster if multi else None), style={"marginLeft": "18px"}
                    ),
                ]
            ),
            url_note(q.problems),
            query_store(),
            html.Div(id="group-header", className="card"),
            html.Div(
                [
                    html.Span("Time range: ", style={"fontWeight": 600}),
                    dcc.Dropdown(
                        id="group-range",
                        options=[{"label": lbl, "value": v} for lbl, v in RANGES],
                        value=q.get("range", ACTIVITY),
                        clearable=False,
                        style={"width": "250px", "display": "inline-block", "verticalAlign": "middle"},
                    ),
                    html.Span(id="group-range-note", className="muted", style={"marginLeft": "12px"}),
                ],
                className="card",
            ),
            html.Div(graph("group-timeline"), className="card"),
            html.Div(
                [
                    graph("group-generations"),
                    _grid("group-generations-table", zoned_columns(GEN_COLUMNS, "start"), 260),
                ],
                className="card",
            ),
            html.Div(id="group-kip848", className="card", style={"display": "none"}),
            # no columns until the group's own come with its rows (member_columns): a column the grid
            # already had (Client id) kept drawing its cells without the formatter its new definition
            # brings, until the next refresh
            html.Div([html.H3("Members"), _grid("group-members", [], 280)], className="card"),
            html.Div(graph("group-heatmap"), className="card"),
            html.Div(
                [
                    html.Div(
                        [
                            choice("group-lag-metric", LAG_METRICS, q.get("metric", "lag")),
                            choice(
                                "group-lag-by",
                                [("per partition", "partition"), ("per member", "member")],
                                q.get("by", "partition"),
                            ),
                        ],
                        className="filters",
                    ),
                    graph("group-lag"),
                ],
                className="card",
            ),
            html.Div(
                [
                    html.H3("Committed offsets and lag per partition"),
                    _grid("group-partitions", zoned_columns(PARTITION_COLUMNS, "commit_time"), 300),
                ],
                className="card",
            ),
        ]
    )


def window(range_ms: int | None, doc: GroupDocument | None, now: int) -> tuple[int | None, int, str]:
    """(since, until, note) for a range choice. A range that would show nothing (the group has been
    quiet longer than the range) is anchored to the group's newest data instead, and the note says so."""
    if not range_ms or range_ms == ACTIVITY:
        return None, now, ""
    latest = gd.latest_time(doc) if doc is not None else None
    if latest is not None and latest < now - range_ms:
        return (
            latest - range_ms,
            latest,
            f"Nothing happened in the last {_dur(range_ms)}; showing the {_dur(range_ms)} "
            f"up to the last activity at {fmt_time(latest)}.",
        )
    return now - range_ms, now, ""


def activity_view(bands: list[TimelineSpan], now: int, latest: int | None = None) -> tuple[int, int] | None:
    """x range from the first state change to a little after the last evidence (``latest``: the last
    change, heartbeat or generation end); the current state's bar still runs on to now, zoom out to
    see it. None when the group has no history yet."""
    if not bands:
        return None
    first = bands[0].start
    last = max([b.start for b in bands] + ([latest] if latest else []))
    pad = max((last - first) // 8, 5_000)
    return first - pad // 4, min(last + pad, now) if now > first else last + pad


def _kv(pairs: list[tuple[str, Any]]) -> html.Dl:
    items: list[Any] = []
    for k, v in pairs:
        items += [
            html.Dt(k),
            html.Dd(v if v not in (None, "") else "-", id=f"hdr-{k.lower().replace(' ', '-')}"),
        ]
    return html.Dl(items, className="kv")


def status_text(statuses: GroupStatuses | None) -> str | None:
    """The group's statuses as the alert rules define them (coordinator_model/statuses.py), each
    with its rule's summary: "in a rebalance storm (7 rebalances in the last 600 s ...); lagging (...)"."""
    if statuses is None:
        return None
    if not statuses.found:
        return "no storm, no flapping, not lagging"
    return "; ".join(f"{LABELS[s]} ({statuses.found[s].summary})" for s in statuses.names)


def header(
    doc: GroupDocument, row: Mapping[str, Any] | None, now: int, statuses: GroupStatuses | None = None
) -> list[Any]:
    lag, lag_s = doc.lag.total, doc.lag.max_seconds
    pairs: list[tuple[str, Any]] = [("State", state_badge(doc.state)), ("Type", doc.type)]
    if doc.modern:
        pairs += [("Group epoch", doc.group_epoch), ("Assignment epoch", doc.assignment_epoch)]
    else:
        pairs += [("Generation", doc.generation)]
    pairs += [("Protocol type", doc.protocol_type)]
    # a modern group's (KIP-848, share, streams) coordinator assigns itself, with the assignor named
    # here; it has no leader member, as a classic group has
    pairs += (
        [("Assignor", doc.protocol)] if doc.modern else [("Protocol", doc.protocol), ("Leader", doc.leader)]
    )
    pairs += [
        ("Coordinator partition", doc.coordinator_partition),
        ("Members", len(doc.members)),
        ("Lag offsets", f"{lag:,}" if lag is not None else None),
        ("Lag seconds", f"{lag_s:.1f}" if lag_s is not None else None),
        ("Rebalances 1 h", (row or {}).get("rebalances_1h")),
        ("Status", status_text(statuses)),
    ]
    refreshed = (row or {}).get("last_refreshed")
    notes: list[Any] = [
        html.Div(
            f"Refreshed {fmt_age((now - refreshed) / 1000)} ({fmt_time(refreshed)})" if refreshed else "",
            className="muted",
        )
    ]
    if doc.provisional:
        notes.append(
            html.Div(
                "Provisional: this group is shown from the Admin API's first answers while the "
                "collector starts (state, members, committed offsets). Its history, generations and lag "
                "follow when the pipeline's first document of it replaces this one.",
                className="banner warn",
                id="group-provisional",
            )
        )
    denied = doc.denied
    if denied:
        # an ACL withholds part of the group: say what is missing and why, before anything else
        what = " and ".join(
            {
                "describe": "its description (members, assignment, state)",
                "offsets": "its committed offsets",
                "end_offsets": "the end offsets of some of its topics (so their lag)",
            }.get(k, k)
            for k in sorted(denied)
        )
        why = "; ".join(f"{k}: {v.error}" for k, v in sorted(denied.items()))
        notes.append(
            html.Div(
                f"The cluster does not allow groupscope to read {what} of this group ({why}). "
                "Shown is what the other sources tell; docs/security.md lists the ACLs.",
                className="banner warn",
                id="group-denied",
            )
        )
    if doc.inferred:
        text = ", ".join(doc.inferred)
        notes.append(html.Div(f"Inferred for lack of a source: {text}", className="inferred"))
    if doc.sources:
        notes.append(html.Div(f"Sources: {', '.join(doc.sources)}", className="muted"))
    return [_kv(pairs), *notes]


def kip848_card(doc: GroupDocument) -> tuple[list[Any], dict[str, str]]:
    if not doc.modern:
        return [], {"display": "none"}
    ms = doc.members
    states: dict[str, int] = {}
    for m in ms:
        states[m.state or "unknown"] = states.get(m.state or "unknown", 0) + 1
    differ = [
        m for m in ms if m.target_assignment is not None and set(m.target_assignment) != set(m.assignment)
    ]
    pending = sum(len(m.pending_revocation) for m in ms)
    title = {
        "share": "KIP-932 share group: epochs",
        "streams": "KIP-1071 streams group: epochs and topology",
    }.get(doc.type, "KIP-848 reconciliation")
    body = [
        html.H3(title),
        _kv(
            [
                ("Group epoch", doc.group_epoch),
                ("Assignment epoch", doc.assignment_epoch),
                ("Member states", ", ".join(f"{k}: {v}" for k, v in sorted(states.items())) or "-"),
                ("Members off target", len(differ)),
                ("Pending revocation", pending),
            ]
        ),
        html.P(
            "The members table shows each member's epoch, state and target assignment "
            "next to its current one.",
            className="muted",
        ),
    ]
    if doc.type == "streams":
        body += topology_rows(doc) + task_rows(doc)
    return body, {}


def task_rows(doc: GroupDocument) -> list[Any]:
    """A streams group's lag per active task (coordinator_model/streams/tasks.py): what its
    application's operator reads it by, with the member that runs each."""
    tasks = task_lags(doc)
    if not tasks:
        return []
    head = html.Tr(
        [html.Th(x) for x in ("Task", "Run by", "Reads")]
        + [html.Th(x, className="num") for x in ("Lag (offsets)", "Lag (s)")]
    )
    rows = [
        html.Tr(
            [
                html.Td(t.task),
                html.Td(t.client_id or t.member_id or "no member", title=t.member_id or ""),
                html.Td(gd.fmt_tps(t.partitions) or "-"),
                html.Td("-" if t.lag is None else f"{t.lag:,}", className="num"),
                html.Td("-" if t.lag_seconds is None else f"{t.lag_seconds:.1f}", className="num"),
            ]
        )
        for t in tasks
    ]
    return [
        html.H4("Lag per task"),
        html.Table([html.Thead(head), html.Tbody(rows)], className="gs-table", id="group-tasks"),
    ]


def topology_rows(doc: GroupDocument) -> list[Any]:
    """A streams group's topology: each subtopology's topics (what it reads, writes for
    repartitioning, and its state stores' changelogs)."""
    topo = doc.topology
    if topo is None:
        return [html.P("No topology yet: no member has brought one.", className="muted")]
    if topo.subtopologies is None:
        return [
            html.P(
                f"Topology epoch {topo.epoch}: not ready (source topics missing or wrongly partitioned).",
                className="muted",
            )
        ]
    rows = [
        html.Tr(
            [
                html.Td(st.id),
                html.Td(", ".join(st.source_topics + st.repartition_source_topics) or "-"),
                html.Td(", ".join(st.repartition_sink_topics) or "-"),
                html.Td(", ".join(st.changelog_topics) or "-"),
            ]
        )
        for st in topo.subtopologies
    ]
    head = html.Tr([html.Th(x) for x in ("Subtopology", "Reads", "Repartitions to", "Changelogs")])
    return [
        html.H4(f"Topology (epoch {topo.epoch})"),
        html.Table([html.Thead(head), html.Tbody(rows)], className="gs-table", id="group-topology"),
    ]


def heatmap(doc: GroupDocument) -> Any:
    """The current assignment; for a group with no members now, the last generation's assignment
    (what the members had before the group emptied), said so in the title."""
    lag = doc.lag.partitions
    if doc.members:
        return assignment_heatmap(doc.members, lag)
    for g in reversed(doc.generations):
        if any(g.assignment.values()):
            title = f"Last assignment: generation {g.generation}, before the group emptied (colour = lag now)"
            return assignment_heatmap([], lag, title, assignment=g.assignment)
    return assignment_heatmap([], lag)


def generation_rows(gens: list[GenerationDoc], doc: GroupDocument | None = None) -> list[dict[str, Any]]:
    """The generations table's rows. A KIP-848, share or streams group's (`doc` modern) say the
    members who joined and left by client id and host (gd.members_named), the whole in the tooltip;
    a classic group's by member id, which says its client id already."""
    members = doc.member_by_id() if doc is not None and doc.modern else None
    rows = []
    for g in gens:
        if members is not None:
            joined, joined_whole = gd.members_named(g.members_joined, g, members)
            left, left_whole = gd.members_named(g.members_left, g, members)
        else:
            joined = joined_whole = ", ".join(g.members_joined)
            left = left_whole = ", ".join(g.members_left)
        rows.append(
            {
                "generation": g.generation,
                "start": fmt_time(g.start),
                "duration": _dur(g.duration_ms) if g.duration_ms is not None else "unknown",
                # a cause no source stated is marked (the broker's log states it; else it is inferred)
                "cause": (g.cause or "unknown") + (" (inferred)" if "cause" in g.inferred else ""),
                "joined": joined,
                "joined_whole": joined_whole,
                "left": left,
                "left_whole": left_whole,
                "protocol": g.protocol,
                "reason": g.reason,
                "inferred": ", ".join(g.inferred),
            }
        )
    return rows


def partition_rows(doc: GroupDocument) -> list[dict[str, Any]]:
    out = gd.partition_rows(doc)
    for d in out:
        d["commit_time"] = fmt_time(d["commit_time"]) if d["commit_time"] else None
        if d["committed"] is None:
            d["committed"] = "no commit"
    return out


def lag_series(
    points: list[Mapping[str, Any]], metric: str, by: str
) -> dict[str, list[tuple[int, float | None]]]:
    """Series per partition ("topic:p") or member from the lag history points in Redis
    (RedisStore.write_lag_points). A value in a point is either a number (lag in offsets) or a
    mapping with lag / lag_seconds / committed (collectors/pipeline/sink.py, lag_point)."""
    out: dict[str, list[tuple[int, float | None]]] = {}
    key = "partitions" if by == "partition" else "members"
    for p in sorted(points, key=lambda p: p.get("ts") or 0):
        ts = p.get("ts")
        if ts is None:
            continue
        for name, v in (p.get(key) or {}).items():
            if isinstance(v, Mapping):
                val = v.get(metric)
            else:
                val = v if metric == "lag" else None
            if val is not None:
                out.setdefault(str(name), []).append((int(ts), float(val)))
    if not out and metric in ("lag", "lag_seconds"):
        # The history keeps seconds only for the group (its worst partition): show that line.
        label = "group (worst partition)" if metric == "lag_seconds" else "group total"
        pts = [
            (int(p["ts"]), float(p[metric]))
            for p in points
            if p.get("ts") is not None and p.get(metric) is not None
        ]
        if pts:
            out[label] = sorted(pts)
    return out


MAX_LINES = 20


def top_series(
    series: dict[str, list[tuple[int, float | None]]], by: str, n: int = MAX_LINES
) -> dict[str, list[tuple[int, float | None]]]:
    """The n series with the highest latest value, and the rest summed into one line: a thousand
    partition lines help nobody and make the browser crawl."""
    if len(series) <= n:
        return series
    ranked = sorted(series, key=lambda k: (series[k][-1][1] or 0) if series[k] else 0, reverse=True)
    keep, rest = ranked[:n], ranked[n:]
    out = {k: series[k] for k in keep}
    total: dict[int, float] = {}
    for k in rest:
        for ts, v in series[k]:
            total[ts] = total.get(ts, 0.0) + (v or 0.0)
    out[f"other {len(rest)} {by}s (sum)"] = sorted(total.items())
    return out


# The group view's outputs, in the order its refresh callback returns them (the tests and the
# dashboard benchmark call that callback by these).
VIEW_OUTPUTS: tuple[tuple[str, str], ...] = (
    ("group-header", "children"),
    ("group-range-note", "children"),
    ("group-timeline", "figure"),
    ("group-generations", "figure"),
    ("group-generations-table", "rowData"),
    ("group-kip848", "children"),
    ("group-kip848", "style"),
    ("group-members", "rowData"),
    ("group-members", "columnDefs"),
    ("group-heatmap", "figure"),
    ("group-partitions", "rowData"),
)


def register(app: Dash, data: DashboardData, behind_s: float | None = None) -> None:
    @app.callback(
        *(Output(component, prop) for component, prop in VIEW_OUTPUTS),
        Input("tick", "n_intervals"),
        Input("group-range", "value"),
        Input("url", "pathname"),
    )
    def refresh(_n: int | None, range_ms: int | None, pathname: str | None) -> tuple[Any, ...]:
        r = parse_path(pathname)
        return group_outputs(data, r.group or "", range_ms, r.cluster, behind_s)

    @app.callback(
        Output("group-lag", "figure"),
        Input("tick", "n_intervals"),
        Input("group-range", "value"),
        Input("group-lag-metric", "value"),
        Input("group-lag-by", "value"),
        Input("url", "pathname"),
    )
    def lag_chart(_n: int | None, range_ms: int | None, metric: str, by: str, pathname: str | None) -> Any:
        r = parse_path(pathname)
        name = r.group or ""
        try:
            doc = data.group(name, r.cluster)
            since, until, _ = window(range_ms, doc, now_ms())
            points = data.lag_history(name, since, until, r.cluster)
        except (Unavailable, DocumentError) as e:
            return empty_figure("Lag over time", str(e))
        return lag_over_time_figure(top_series(lag_series(points, metric, by), by), metric, by)

    @app.callback(
        Output(QUERY_STORE, "data", allow_duplicate=True),
        Input("group-range", "value"),
        Input("group-lag-metric", "value"),
        Input("group-lag-by", "value"),
        State("url", "pathname"),
        prevent_initial_call=True,
    )
    def to_url(range_ms: int | None, metric: str | None, by: str | None, path: str | None) -> Any:
        """The time range and the lag chart's choices into the URL, so a copied link keeps them."""
        return {"path": path, "search": build_query("group", {"range": range_ms, "metric": metric, "by": by})}


def stale_note(data: DashboardData, cluster: str, behind_s: float | None) -> html.Div | None:
    """Said on the group page when its cluster's collector is behind or never wrote (the banner
    names the cluster too): the group is as that cluster's collector last saw it."""
    if behind_s is None:
        return None
    h = data.health(cluster)
    if not h.reachable:
        return None
    if h.collector_age_s is None:
        why = f"no collector has written cluster {cluster}'s data yet"
    elif h.collector_age_s > behind_s:
        why = f"cluster {cluster}'s collector is behind (its last batch was {fmt_age(h.collector_age_s)})"
    else:
        return None
    return html.Div(f"This group may be stale: {why}.", className="banner warn", id="group-stale")


def group_outputs(
    data: DashboardData,
    name: str,
    range_ms: int | None,
    cluster: str | None = None,
    behind_s: float | None = None,
) -> tuple[Any, ...]:
    """Everything the group page shows except the lag chart (separate so its radio buttons are cheap).
    `cluster`: the URL's (None: a legacy URL's, DashboardData.resolve)."""
    now = now_ms()
    try:
        cluster = data.resolve(cluster)
        doc = data.group(name, cluster)
        row = data.fleet_row(name, cluster) if doc else None
    except Unavailable as e:
        msg = empty_state("Redis is unreachable", str(e), "The page retries on every refresh.")
        blank = empty_figure("", "No data")
        return msg, "", blank, blank, [], [], {"display": "none"}, [], MEMBER_COLUMNS, blank, []
    except DocumentError as e:
        msg = empty_state(
            f"The stored document of group {name!r} cannot be read",
            str(e),
            "It is shown again once the collector writes the group anew.",
        )
        blank = empty_figure("", "No data")
        return msg, "", blank, blank, [], [], {"display": "none"}, [], MEMBER_COLUMNS, blank, []
    if doc is None:
        where = "in Redis" if len(_known(data)) <= 1 else f"in cluster {cluster}"
        msg = empty_state(
            f"No group named {name!r} {where}",
            "It may not exist, may have been deleted and trimmed, or the collector has not seen it yet.",
        )
        blank = empty_figure("", "No data")
        return msg, "", blank, blank, [], [], {"display": "none"}, [], MEMBER_COLUMNS, blank, []
    since, until, note = window(range_ms, doc, now)
    # a range reads the group's history in Redis for that range; what cannot be read: the document's own
    bands: list[TimelineSpan] | None = None
    gens: list[GenerationDoc] | None = None
    stale = None
    try:
        if since is not None:
            bands = data.timeline(name, since, until, cluster)
            gens = data.generations(name, None, until, cluster)
        stale = stale_note(data, cluster, behind_s)
    except (Unavailable, DocumentError):
        bands = gens = stale = None
    bands = bands or doc.timeline
    gens = gens or doc.generations
    if since is not None:
        gens = [g for g in gens if g.start is None or (g.end or g.start) >= since]
    kip_body, kip_style = kip848_card(doc)
    members = [r.__dict__ for r in gd.member_rows(doc, now)]
    columns = member_columns(doc, members)
    try:
        statuses: GroupStatuses | None = data.group_statuses(doc, cluster, now)
    except (Unavailable, DocumentError):
        statuses = None
    head = header(doc, row, now, statuses)
    return (
        [stale, *head] if stale is not None else head,
        note,
        timeline_figure(
            bands,
            since,
            max(until, max((b.end or b.start for b in bands), default=until)),
            activity_view(bands, now, gd.latest_time(doc)) if range_ms == ACTIVITY else None,
        ),
        generations_figure(gens, since, until, modern=doc.modern, members=doc.member_by_id()),
        generation_rows(gens, doc),
        kip_body,
        kip_style,
        members,
        columns,
        heatmap(doc),
        [{**r, "cluster": cluster} for r in partition_rows(doc)],  # the topic links carry it
    )


def _known(data: DashboardData) -> list[str]:
    try:
        return data.cluster_names()
    except Unavailable:
        return []
