"""The fleet page (`/`: every cluster; `/clusters/<c>`: one cluster): counts by state (and by
cluster), groups in a rebalance storm, flapping and lagging (as the alert rules define them,
coordinator_model/statuses.py: the same groups the alerts raise those alerts for), and the grid of
every group.

The grid uses AG Grid's infinite row model: the browser asks for one block of rows at a time with
its sort and filter model, and the server answers from the fleet index in Redis (a ZRANGE for a
sort, filtered by state through the per-state index), so 50,000 groups page like 50. Several
clusters' pages are merged on the server in the sort's order (collectors/storage/clusters.py, merge_pages).

The cluster is one more filter of the grid (its `cluster` column): the URL's cluster sets it when the
grid is made (AG Grid's initialState, so the very first block is asked for that cluster only) and
locks it; on the all-clusters page the cluster box above the grid sets it."""

from __future__ import annotations

from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update

from dashboard.components import cluster_chips, empty_state, fmt_age, graph, stat, state_badge
from dashboard.data import DashboardData, Unavailable, cluster_filter, fleet_page, now_ms
from dashboard.figures import STATE_ORDER, fleet_state_figure
from dashboard.server_grid import register_server_grid, server_grid
from dashboard.urls import fleet_url, group_url, parse_path

TEXT_FILTER = {"filterOptions": ["contains"], "maxNumConditions": 1, "buttons": ["reset"]}
EQUALS_FILTER = {"filterOptions": ["equals"], "maxNumConditions": 4, "buttons": ["reset"]}

CLUSTER_COLUMN: dict[str, Any] = {
    "field": "cluster",
    "headerName": "Cluster",
    "filter": "agTextColumnFilter",
    "filterParams": EQUALS_FILTER,
    "sortable": False,
    "width": 120,
}

COLUMNS: list[dict[str, Any]] = [
    {
        "field": "name",
        "headerName": "Group",
        "cellRenderer": "GroupLink",
        "filter": "agTextColumnFilter",
        "filterParams": TEXT_FILTER,
        "flex": 2,
        "minWidth": 180,
    },
    {
        "field": "type",
        "headerName": "Type",
        "filter": "agTextColumnFilter",
        "filterParams": EQUALS_FILTER,
        "sortable": False,
        "width": 105,
    },
    {
        "field": "state",
        "headerName": "State",
        "filter": "agTextColumnFilter",
        "filterParams": EQUALS_FILTER,
        "width": 190,
        # a group known only from the Admin API's first answers while the collector starts
        "valueFormatter": {
            "function": "params.data && params.data.provisional ? "
            "params.value + ' (provisional)' : params.value"
        },
        "tooltipValueGetter": {
            "function": "params.data && params.data.provisional ? "
            "'From the Admin API while the collector starts: history and lag follow' : null"
        },
    },
    {"field": "members", "headerName": "Members", "type": "numericColumn", "width": 100},
    {"field": "gen_or_epoch", "headerName": "Gen / epoch", "sortable": False, "width": 115},
    {"field": "protocol", "headerName": "Protocol", "sortable": False, "width": 120},
    {
        "field": "lag",
        "headerName": "Lag (offsets)",
        "type": "numericColumn",
        "width": 130,
        "valueFormatter": {
            "function": "params.value == null ? '' : Number(params.value).toLocaleString('en-US')"
        },
    },
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "width": 105},
    {"field": "rebalances_1h", "headerName": "Rebalances 1 h", "type": "numericColumn", "width": 135},
    {
        "field": "last_change",
        "headerName": "Last change (UTC)",
        "width": 175,
        "valueFormatter": {"function": "groupscopeTime(params.value)"},
    },
]


def columns(cluster: str | None, multi: bool) -> list[dict[str, Any]]:
    """The grid's columns: the cluster column after the group's name, shown when there are several
    clusters; on one cluster's page its filter is the page's and cannot be changed."""
    col = {**CLUSTER_COLUMN, "hide": not multi}
    if cluster is not None:
        col.update(suppressHeaderMenuButton=True, suppressHeaderFilterButton=True)
    return [COLUMNS[0], col, *COLUMNS[1:]]


def layout(cluster: str | None = None, multi: bool = False) -> html.Div:
    options: dict[str, Any] = {}
    if cluster is not None:
        options["initialState"] = {"filter": {"filterModel": {"cluster": cluster_filter([cluster])}}}
    grid = server_grid("fleet-grid", columns(cluster, multi), "row_id", **options)
    return html.Div(
        [
            html.H2(["Fleet", *([" · cluster ", html.Code(cluster, id="fleet-cluster")] if cluster else [])]),
            html.Div(id="fleet-summary", className="card"),
            html.Div(
                [
                    html.Div(graph("fleet-states"), className="card"),
                    html.Div(id="fleet-storms", className="card"),
                    html.Div(id="fleet-lagging", className="card"),
                ],
                className="row",
            ),
            html.Div(
                [
                    html.Div(
                        [
                            dcc.Dropdown(
                                id="fleet-filter-state",
                                options=[*STATE_ORDER, "Unknown"],
                                multi=True,
                                placeholder="Filter by state",
                            ),
                            dcc.Dropdown(
                                id="fleet-filter-type",
                                options=[
                                    {"label": "classic", "value": "classic"},
                                    {"label": "consumer (KIP-848)", "value": "consumer"},
                                    {"label": "share (KIP-932)", "value": "share"},
                                ],
                                placeholder="Any type",
                            ),
                            dcc.Dropdown(
                                id="fleet-filter-cluster",
                                options=[],
                                multi=True,
                                placeholder="Any cluster",
                                # the all-clusters page of several clusters only
                                style={} if cluster is None and multi else {"display": "none"},
                            ),
                            dcc.Input(
                                id="fleet-filter-name",
                                type="search",
                                placeholder="Group name contains…",
                                debounce=True,
                                style={"width": "300px", "minWidth": "0"},
                            ),
                            html.Span(id="fleet-count", className="muted"),
                        ],
                        className="filters",
                    ),
                    # keyed by the cluster: another cluster's page makes a new grid (initialState
                    # applies when a grid is made), not the old one with its rows
                    html.Div(grid, id={"fleet-grid-scope": cluster or ""}),
                ],
                className="card",
            ),
        ]
    )


def _top_list(
    title: str, rows: list[dict[str, Any]], fmt: str, count: int, hint: str, named: bool = False
) -> list[Any]:
    if not rows:
        return [html.H3(f"{title}: 0"), html.P(hint, className="muted")]
    items = [
        html.Li(
            [
                dcc.Link(r["name"], href=group_url(r["name"], r["cluster"])),
                " ",
                *([html.Span(f"({r['cluster']}) ", className="cluster-label")] if named else []),
                html.Span(fmt.format(**r), className="muted"),
            ]
        )
        for r in rows
    ]
    return [html.H3(f"{title}: {count}"), html.Ul(items)]


def _hint(verb: str, definition: str | None, rule: str) -> str:
    """What an empty list of a status says: its definition (coordinator_model/statuses.py)."""
    if definition is None:
        return f"The {rule} alert rule is off: no group is counted."
    return f"No group {verb} {definition} (the {rule} alert rule)."


def register(app: Dash, data: DashboardData) -> None:
    @app.callback(
        Output("fleet-summary", "children"),
        Output("fleet-states", "figure"),
        Output("fleet-storms", "children"),
        Output("fleet-lagging", "children"),
        Input("tick", "n_intervals"),
        Input("url", "pathname"),
    )
    def summary(_n: int | None, path: str | None) -> tuple[Any, Any, Any, Any]:
        cluster = parse_path(path).cluster
        try:
            # storms, flapping and lagging: the alert rules' statuses, with the five groups furthest
            # into each (over the clusters shown)
            counts = data.fleet_counts(cluster)
        except Unavailable as e:
            msg = empty_state("Redis is unreachable", str(e), "The page retries on every refresh.")
            return msg, fleet_state_figure({}), "", ""
        named = len(counts["by_cluster"]) > 1
        if not counts["total"]:
            collect = (
                f"groupscope collect --cluster {cluster} --redis URL"
                if cluster not in (None, "default")
                else "groupscope collect --bootstrap-servers HOST:9092 --redis URL"
            )
            msg = empty_state(
                "No groups yet" if cluster is None else f"No groups in cluster {cluster} yet",
                html.Span(
                    [
                        "Is the collector running? Start it with ",
                        html.Code(collect),
                        ", or load a capture with ",
                        html.Code("groupscope replay CAPTURE_DIR --redis URL"),
                        ".",
                    ]
                ),
                "Groups appear here as soon as the collector has written them to Redis.",
            )
            return msg, fleet_state_figure({}), "", ""
        by_state = counts["by_state"]
        chips = [cluster_chips(counts["by_cluster"], fleet_url, "fleet-clusters")] if named else []
        cards = html.Div(
            [
                stat("groups", f"{counts['total']:,}", id_="fleet-total"),
                *chips,
                *[
                    html.Div(
                        [
                            html.Div(f"{by_state[s]:,}", className="stat-value", id=f"fleet-count-{s}"),
                            state_badge(s),
                        ],
                        className="stat",
                    )
                    for s in sorted(by_state, key=lambda s: STATE_ORDER.index(s) if s in STATE_ORDER else 99)
                ],
                stat("in a rebalance storm", counts["storms"], id_="fleet-storm-count"),
                stat("flapping", counts["flapping"], id_="fleet-flapping-count"),
                stat("lagging", counts["lagging"], id_="fleet-lagging-count"),
            ],
            className="stats",
        )
        defs = counts["definitions"]
        storm_box = _top_list(
            "Rebalance storms",
            counts["top"]["storm"],
            "{summary}",
            counts["storms"],
            _hint("had", defs["storm"], "rebalance_storm"),
            named,
        )
        lag_box = _top_list(
            "Lagging",
            counts["top"]["lagging"],
            "{summary}",
            counts["lagging"],
            _hint("has", defs["lagging"], "lag"),
            named,
        )
        return cards, fleet_state_figure(by_state), storm_box, lag_box

    register_server_grid(app, "fleet-grid", "fleet-count", lambda req: fleet_page(data, req), "groups")

    @app.callback(
        Output("fleet-filter-cluster", "options"),
        Input("url", "pathname"),
        Input("tick", "n_intervals"),
        State("fleet-filter-cluster", "options"),
    )
    def cluster_options(_path: str | None, _n: int | None, shown: Any) -> Any:
        try:
            names = data.cluster_names()
        except Unavailable:
            return no_update
        return no_update if names == shown else names  # an open menu stays open

    # The external filter controls write the grid's filter model; the grid then asks for rows again.
    @app.callback(
        Output("fleet-grid", "filterModel"),
        Input("fleet-filter-state", "value"),
        Input("fleet-filter-type", "value"),
        Input("fleet-filter-name", "value"),
        Input("fleet-filter-cluster", "value"),
        State("url", "pathname"),
        prevent_initial_call=True,
    )
    def filters(
        states: list[str] | None,
        type_: str | None,
        name: str | None,
        clusters: list[str] | None,
        path: str | None,
    ) -> dict[str, Any]:
        fm: dict[str, Any] = {}
        # one cluster's page keeps its cluster whatever else is filtered
        url_cluster = parse_path(path).cluster
        chosen = [url_cluster] if url_cluster is not None else clusters
        if chosen:
            fm["cluster"] = cluster_filter(chosen)
        if states:
            conds = [{"filterType": "text", "type": "equals", "filter": s} for s in states]
            fm["state"] = (
                conds[0] if len(conds) == 1 else {"filterType": "text", "operator": "OR", "conditions": conds}
            )
        if type_:
            fm["type"] = {"filterType": "text", "type": "equals", "filter": type_}
        if name:
            fm["name"] = {"filterType": "text", "type": "contains", "filter": name}
        return fm


def freshness_text(age_s: float | None) -> str:
    return f"collector: {fmt_age(age_s)}" if age_s is not None else "collector: no heartbeat"


__all__ = ["layout", "now_ms", "register"]
