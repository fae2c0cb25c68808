"""The topics page (`/topics`: every cluster's, with a cluster column; `/clusters/<c>/topics`: one
cluster's): every topic a group commits to or is assigned, with the groups that read it, the worst
lag and the groups rebalancing now. A topic is (cluster, name): the same name in two clusters is two
rows, merged in the sort's order like the fleet grid (collectors/storage/clusters.py, merge_pages).

Like the fleet grid, AG Grid's infinite row model asks for one block at a time and the server answers
from the topic index in Redis (collectors/storage/topics.py: a ZRANGE on the sort key's index and an
HMGET of the rows), so 10,000 topics page like 10.

The name filter and the sort are in the page's URL (`/topics?name=orders&sort=-lag`, dashboard/urls.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dash import Dash, Input, Output, State, dcc, html

from dashboard.components import cluster_chips, empty_state, query_store, stat, url_note
from dashboard.data import DashboardData, Unavailable, cluster_filter, topics_page
from dashboard.server_grid import (
    filter_words,
    grid_sort,
    initial_state,
    register_grid_url,
    register_server_grid,
    server_grid,
    text_filter,
    url_store,
)
from dashboard.urls import TOPICS_SORTS, parse_path, parse_query, topics_url

NUMBER = {"function": "params.value == null ? '' : Number(params.value).toLocaleString('en-US')"}

COLUMNS: list[dict[str, Any]] = [
    {
        "field": "name",
        "headerName": "Topic",
        "cellRenderer": "TopicLink",
        "filter": "agTextColumnFilter",
        "filterParams": {"filterOptions": ["contains"], "maxNumConditions": 1, "buttons": ["reset"]},
        "flex": 2,
        "minWidth": 200,
    },
    {
        "field": "cluster",
        "headerName": "Cluster",
        "filter": "agTextColumnFilter",
        "filterParams": {"filterOptions": ["equals"], "maxNumConditions": 4, "buttons": ["reset"]},
        "sortable": False,
        "width": 120,
    },
    {"field": "partitions", "headerName": "Partitions", "type": "numericColumn", "width": 115},
    {
        "field": "end_offsets",
        "headerName": "End offsets",
        "type": "numericColumn",
        "width": 150,
        "sortable": False,
        "valueFormatter": NUMBER,
        "headerTooltip": "Sum of the log-end offsets of its partitions, as the groups last saw them",
    },
    {"field": "groups", "headerName": "Groups", "type": "numericColumn", "width": 100},
    {
        "field": "lag",
        "headerName": "Worst lag (offsets)",
        "type": "numericColumn",
        "width": 170,
        "valueFormatter": NUMBER,
        "headerTooltip": "The lag of the group furthest behind on this topic, over its partitions",
    },
    {
        "field": "lag_seconds",
        "headerName": "Worst lag (s)",
        "type": "numericColumn",
        "width": 135,
        "headerTooltip": "The oldest uncommitted data any group has on this topic, in seconds",
    },
    {
        "field": "rebalancing",
        "headerName": "Rebalancing now",
        "type": "numericColumn",
        "width": 150,
        "cellStyle": {"styleConditions": [{"condition": "params.value > 0", "style": {"color": "#ef6c00"}}]},
    },
]


def columns(cluster: str | None, multi: bool) -> list[dict[str, Any]]:
    """The cluster column shows when there are several clusters; one cluster's page locks its filter."""
    out = []
    for c in COLUMNS:
        if c["field"] == "cluster":
            c = {**c, "hide": not multi}
            if cluster is not None:
                c.update(suppressHeaderMenuButton=True, suppressHeaderFilterButton=True)
        out.append(c)
    return out


def filter_model(name: str | None, cluster: str | None) -> dict[str, Any]:
    """The grid's filter model: the name box's, and one cluster's page's cluster."""
    fm: dict[str, Any] = {}
    if cluster is not None:
        fm["cluster"] = cluster_filter([cluster])
    if name:
        fm["name"] = text_filter([name], "contains")
    return fm


def query_values(fm: Mapping[str, Any], sort_model: Any, _path: str | None) -> dict[str, Any]:
    """The URL's query values (QUERY["topics"]) for the grid's filter and sort."""
    names = filter_words(fm, "name", "contains")
    sort = grid_sort(sort_model)
    return {
        "name": names[0] if len(names) == 1 else None,
        "sort": sort if sort is not None and sort[0] in TOPICS_SORTS else None,
    }


def layout(cluster: str | None = None, multi: bool = False, search: str | None = None) -> html.Div:
    """`search`: the URL's query string, whose name filter and sort the page opens with."""
    q = parse_query("topics", search)
    name = q.get("name")
    # the URL's cluster and name are the grid's filter from its first block on (see pages/fleet.py)
    cols = columns(cluster, multi)
    options: dict[str, Any] = {
        "tooltipShowDelay": 300,
        **initial_state(filter_model(name, cluster), q.get("sort"), cols),
    }
    grid = server_grid("topics-grid", cols, "row_id", **options)
    return html.Div(
        [
            html.H2(
                ["Topics", *([" · cluster ", html.Code(cluster, id="topics-cluster")] if cluster else [])]
            ),
            url_note(q.problems),
            html.Div(id="topics-summary", className="card"),
            html.Div(
                [
                    html.Div(
                        [
                            dcc.Input(
                                id="topics-filter-name",
                                type="search",
                                placeholder="Topic name contains…",
                                value=name,
                                debounce=True,
                                style={"width": "300px", "minWidth": "0"},
                            ),
                            html.Span(id="topics-count", className="muted"),
                        ],
                        className="filters",
                    ),
                    html.Div(grid, id={"topics-grid-scope": cluster or ""}),
                    url_store("topics-grid"),
                    query_store(),
                ],
                className="card",
            ),
        ]
    )


def register(app: Dash, data: DashboardData) -> None:
    @app.callback(
        Output("topics-summary", "children"),
        Input("tick", "n_intervals"),
        Input("url", "pathname"),
    )
    def summary(_n: int | None, path: str | None) -> Any:
        cluster = parse_path(path).cluster
        try:
            counts = data.topic_counts(cluster)
        except Unavailable as e:
            return empty_state("Redis is unreachable", str(e), "The page retries on every refresh.")
        if not counts["total"]:
            return empty_state(
                "No topics yet",
                "Topics appear here when the collector writes a group that commits to or is assigned one.",
                html.Span(
                    [
                        "Data written before this page existed fills in as each group is written again; ",
                        html.Code("groupscope collect"),
                        " rewrites every group when it starts.",
                    ]
                ),
            )
        named = len(counts["by_cluster"]) > 1
        return html.Div(
            [
                stat("topics read by groups", f"{counts['total']:,}", id_="topics-total"),
                *([cluster_chips(counts["by_cluster"], topics_url, "topics-clusters")] if named else []),
                stat("with a group rebalancing", f"{counts['rebalancing']:,}", id_="topics-rebalancing"),
                stat("with lag", f"{counts['lagging']:,}", id_="topics-lagging"),
            ],
            className="stats",
        )

    register_server_grid(app, "topics-grid", "topics-count", lambda req: topics_page(data, req), "topics")
    register_grid_url(app, "topics-grid", "topics", query_values)

    @app.callback(
        Output("topics-grid", "filterModel"),
        Input("topics-filter-name", "value"),
        State("url", "pathname"),
        prevent_initial_call=True,
    )
    def filters(name: str | None, path: str | None) -> dict[str, Any]:
        return filter_model(name, parse_path(path).cluster)  # one cluster's page keeps its cluster
