"""The topic page (`/clusters/<c>/topics/<name>`, or `/topics/<name>` for the cluster `default` or
the only one): every group of that cluster that reads the topic, its state, the members that
own the topic's partitions and its lag, as a table (with links to the group's page and what-if), a
partition x group heatmap of lag and each group's lag over time. The lag history's span and metric
are in the page's URL (`?range=6h&metric=seconds`, dashboard/urls.py); by default the span is the
history held (up to a day), said in the chart's title, and the bare URL says so."""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
from dash import Dash, Input, Output, State, dcc, html

from collectors.storage.topics import owners
from dashboard.components import (
    GRID_COLUMNS,
    LAG_METRICS,
    QUERY_STORE,
    choice,
    cluster_label,
    empty_state,
    graph,
    query_store,
    stat,
    url_note,
)
from dashboard.data import DashboardData, Unavailable
from dashboard.figures import _dur, empty_figure, lag_over_time_figure, topic_lag_heatmap
from dashboard.urls import HISTORY_HELD, build_query, parse_path, parse_query, topics_url

HEATMAP_GROUPS = 60  # the worst groups drawn in the heatmap (the table lists all of them)
HISTORY_GROUPS = 10  # the worst groups drawn in the lag history
# The span of lag history drawn, ending at the newest point known (now, on a live cluster). The
# default is the history held, however short ("last hour" sat over 50 s of a new cluster's data, issue
# 34), up to the longest preset's: a cluster watched for a week opens on its last day.
HELD_UP_TO_MS = 24 * 3_600_000
HISTORY_RANGES = [
    ("all the history held", HISTORY_HELD),
    ("last 15 min", 15 * 60_000),
    ("last hour", 3_600_000),
    ("last 6 hours", 6 * 3_600_000),
    ("last 24 hours", 24 * 3_600_000),
]

GROUP_COLUMNS: list[dict[str, Any]] = [
    {"field": "group", "headerName": "Group", "cellRenderer": "GroupLink", "flex": 2, "minWidth": 200},
    {"field": "state", "headerName": "State", "width": 160},
    {"field": "type", "headerName": "Type", "width": 100},
    {"field": "partitions", "headerName": "Partitions", "type": "numericColumn", "width": 110},
    {
        "field": "lag",
        "headerName": "Lag (offsets)",
        "type": "numericColumn",
        "width": 140,
        "valueFormatter": {"function": "Number(params.value).toLocaleString('en-US')"},
    },
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "width": 105},
    {
        "field": "owners",
        "headerName": "Members owning its partitions",
        "flex": 3,
        "minWidth": 240,
        "tooltipField": "owners",
    },
    # a link to the group's what-if page, under a header that says so (it had none); nothing to sort
    # or filter by
    {
        "field": "whatif",
        "headerName": "What-if",
        "cellRenderer": "WhatifLink",
        "width": 90,
        "sortable": False,
        "filter": False,
    },
]


def layout(name: str, cluster: str | None = None, multi: bool = False, search: str | None = None) -> html.Div:
    """`search`: the URL's query string, whose lag history span and metric the page opens with."""
    q = parse_query("topic", search)
    return html.Div(
        [
            html.Div(
                [
                    html.H2(["Topic ", html.Code(name, id="topic-name")], style={"display": "inline-block"}),
                    cluster_label(cluster if multi else None),
                    dcc.Link(
                        "← Topics", href=topics_url(cluster if multi else None), style={"marginLeft": "18px"}
                    ),
                ]
            ),
            url_note(q.problems),
            query_store(),
            html.Div(id="topic-header", className="card"),
            html.Div(
                [
                    html.H3("Groups reading this topic"),
                    dag.AgGrid(
                        id="topic-groups",
                        columnDefs=GROUP_COLUMNS,
                        rowData=[],
                        defaultColDef=GRID_COLUMNS,
                        dashGridOptions={
                            "tooltipShowDelay": 300,
                            "enableCellTextSelection": True,
                            "animateRows": False,
                            "getRowId": {"function": "params.data.group"},  # one cluster's groups
                        },
                        style={"height": "320px"},
                        className="ag-theme-alpine",
                    ),
                ],
                className="card",
            ),
            html.Div(graph("topic-heatmap"), className="card"),
            html.Div(
                [
                    html.Div(
                        [
                            choice("topic-lag-metric", LAG_METRICS, q.get("metric", "lag")),
                            choice(
                                "topic-lag-range", HISTORY_RANGES, q.get("range", HISTORY_HELD), width=200
                            ),
                        ],
                        className="filters",
                    ),
                    graph("topic-lag"),
                ],
                className="card",
            ),
        ]
    )


def topic_outputs(
    data: DashboardData, name: str, metric: str, range_ms: int, cluster: str | None = None
) -> tuple[Any, Any, Any, Any]:
    """(header, group rows, heatmap, lag history) of one topic of `cluster` (None: a legacy URL's,
    DashboardData.resolve); an unknown topic is explained. `range_ms` HISTORY_HELD: the lag history
    held, up to HELD_UP_TO_MS, its span said in the chart's title."""
    title = "Lag per partition (partition × group)"
    history_title = "Lag over time"
    try:
        cluster = data.resolve(cluster)
        view = data.topic(name, cluster)
        if view is None:
            where = "" if len(data.cluster_names()) <= 1 else f" in cluster {cluster}"
            return (
                empty_state(
                    f"No group reads a topic named {name!r}{where}",
                    "A topic shows here once a group commits to it or is assigned one of its partitions.",
                    dcc.Link("All topics", href="/topics"),
                ),
                [],
                empty_figure(title, "No groups."),
                empty_figure(history_title, "No groups."),
            )
        worst = [g["group"] for g in view.groups[:HISTORY_GROUPS]]
        span = HELD_UP_TO_MS if range_ms == HISTORY_HELD else range_ms
        history = data.topic_lag_history(name, worst, span, cluster)
    except Unavailable as e:
        msg = empty_state("Redis is unreachable", str(e), "The page retries on every refresh.")
        return msg, [], empty_figure(title, "Redis is unreachable."), empty_figure(history_title, "")
    t = view.row
    header = html.Div(
        [
            stat("partitions", f"{t.partitions:,}", id_="topic-partitions"),
            stat("end offsets", f"{t.end_offsets:,}"),
            stat("groups", f"{t.groups:,}", id_="topic-groups-count"),
            stat("worst lag (offsets)", f"{t.lag:,}", id_="topic-lag-total"),
            stat("worst lag (s)", f"{t.lag_seconds:,.1f}"),
            stat("rebalancing now", t.rebalancing, id_="topic-rebalancing"),
        ],
        className="stats",
    )
    rows = [
        {
            "group": g["group"],
            "state": g.get("state"),
            "type": g.get("type"),
            "partitions": g.get("partitions"),
            "lag": g.get("lag"),
            "lag_seconds": round(float(g.get("lag_seconds") or 0), 1),
            "owners": ", ".join(owners(g)) or "none (no member owns its partitions)",
            "whatif": g["group"],
            "cluster": cluster,  # the group and what-if links carry it
        }
        for g in view.groups
    ]
    shown = [g["group"] for g in view.groups[:HEATMAP_GROUPS]]
    if len(view.groups) > HEATMAP_GROUPS:
        title += f": the {HEATMAP_GROUPS} groups furthest behind of {len(view.groups)}"
    heatmap = topic_lag_heatmap(shown, view.partitions, title)
    series = {
        g: [(ts, secs if metric == "lag_seconds" else lag) for ts, lag, secs in points]
        for g, points in history.items()
    }
    lines = lag_over_time_figure(series, metric, "group")
    if len(view.groups) > HISTORY_GROUPS:
        lines.update_layout(title_text=lines.layout.title.text + f" (the {HISTORY_GROUPS} furthest behind)")
    if range_ms == HISTORY_HELD and history:
        lines.update_layout(title_text=lines.layout.title.text + f": {held_span(history)}")
    return header, rows, heatmap, lines


def held_span(history: dict[str, list[tuple[int, int, float]]]) -> str:
    """How much lag history the chart draws when it draws all that is held: "all 52.0 s held", "all
    3.5 h held"; "the last 24.0 h" when it reads as far back as it may (there may be more before);
    "one moment held" for points all at one time."""
    times = [t for points in history.values() for t, _, _ in points]
    span = max(times) - min(times)
    if span == 0:
        return "one moment held"
    if span >= HELD_UP_TO_MS - 60_000:
        return f"the last {_dur(HELD_UP_TO_MS)}"
    return f"all {_dur(span)} held"


def register(app: Dash, data: DashboardData) -> None:
    @app.callback(
        Output("topic-header", "children"),
        Output("topic-groups", "rowData"),
        Output("topic-heatmap", "figure"),
        Output("topic-lag", "figure"),
        Output("topic-groups", "style"),
        Input("url", "pathname"),
        Input("tick", "n_intervals"),
        Input("topic-lag-metric", "value"),
        Input("topic-lag-range", "value"),
    )
    def render(pathname: str | None, _n: int | None, metric: str, range_ms: int) -> tuple[Any, ...]:
        route = parse_path(pathname)
        out = topic_outputs(
            data, route.topic or "", metric or "lag", int(range_ms or HISTORY_HELD), route.cluster
        )
        # as tall as its rows, up to ten of them (then it scrolls)
        return (*out, {"height": f"{60 + 42 * min(max(len(out[1]), 1), 10)}px"})

    @app.callback(
        Output(QUERY_STORE, "data", allow_duplicate=True),
        Input("topic-lag-metric", "value"),
        Input("topic-lag-range", "value"),
        State("url", "pathname"),
        prevent_initial_call=True,
    )
    def to_url(metric: str | None, range_ms: int | None, path: str | None) -> Any:
        """The lag history's metric and span into the URL, so a copied link keeps them."""
        return {"path": path, "search": build_query("topic", {"metric": metric, "range": range_ms})}
