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
locks it; on the all-clusters page the cluster box above the grid sets it.

The filters and the sort are in the page's URL (`/?state=Stable&type=consumer&name=orders&sort=-lag`,
dashboard/urls.py): a copied URL opens the grid filtered and sorted as it was, and the boxes above it
show that filter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update

from dashboard.components import (
    cluster_chips,
    empty_state,
    fmt_age,
    graph,
    query_store,
    stat,
    state_badge,
    url_note,
    zoned_columns,
)
from dashboard.data import DashboardData, Unavailable, cluster_filter, fleet_page, now_ms
from dashboard.figures import STATE_ORDER, fleet_state_figure
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
from dashboard.timefmt import fmt_time
from dashboard.urls import (
    FLEET_SORTS,
    FLEET_STATES,
    FLEET_TYPES,
    fleet_url,
    group_url,
    parse_path,
    parse_query,
)

TEXT_FILTER = {"filterOptions": ["contains"], "maxNumConditions": 1, "buttons": ["reset"]}
EQUALS_FILTER = {"filterOptions": ["equals"], "maxNumConditions": 4, "buttons": ["reset"]}

# Every column flexes to the grid's width from a minimum width, and a header that does not fit its
# column wraps onto a second line (server_grid.py: wrapHeaderText, autoHeaderHeight) rather than end
# in "…": at the browser tests' 1400-pixel window every header reads whole, with its sort arrow and
# filter icon shown, with or without the cluster column. The minimums add up to 1,200 px (1,310 with
# the cluster column) against the grid's ~1,320; each is what its cells need ("CompletingRebalance",
# a time "YYYY-MM-DD HH:MM:SS"), the header's words wrapping where it is longer.
CLUSTER_COLUMN: dict[str, Any] = {
    "field": "cluster",
    "headerName": "Cluster",
    "filter": "agTextColumnFilter",
    "filterParams": EQUALS_FILTER,
    "sortable": False,
    "minWidth": 110,
    "flex": 1,
}

COLUMNS: list[dict[str, Any]] = [
    {
        "field": "name",
        "headerName": "Group",
        "cellRenderer": "GroupLink",
        "filter": "agTextColumnFilter",
        "filterParams": TEXT_FILTER,
        "flex": 3,
        "minWidth": 170,
    },
    {
        "field": "type",
        "headerName": "Type",
        "filter": "agTextColumnFilter",
        "filterParams": EQUALS_FILTER,
        "sortable": False,
        "minWidth": 100,
        "flex": 1,
    },
    {
        "field": "state",
        "headerName": "State",
        "filter": "agTextColumnFilter",
        "filterParams": EQUALS_FILTER,
        "minWidth": 170,
        "flex": 1,
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
    {"field": "members", "headerName": "Members", "type": "numericColumn", "minWidth": 120, "flex": 1},
    {"field": "gen_or_epoch", "headerName": "Gen / epoch", "sortable": False, "minWidth": 85, "flex": 1},
    {"field": "protocol", "headerName": "Protocol", "sortable": False, "minWidth": 95, "flex": 1},
    {
        "field": "lag",
        "headerName": "Lag (offsets)",
        "type": "numericColumn",
        "minWidth": 95,
        "flex": 1,
        "valueFormatter": {
            "function": "params.value == null ? '' : Number(params.value).toLocaleString('en-US')"
        },
    },
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "minWidth": 80, "flex": 1},
    {
        "field": "rebalances_1h",
        "headerName": "Rebalances 1 h",
        "type": "numericColumn",
        "minWidth": 110,
        "flex": 1,
    },
    # written on the server in the display zone (dashboard/timefmt.py), named in the header: the
    # zone's name wraps under "Last change"
    {"field": "last_change", "headerName": "Last change", "minWidth": 175, "flex": 1},
]
TYPE_LABELS = {
    "classic": "classic",
    "consumer": "consumer (KIP-848)",
    "share": "share (KIP-932)",
    "streams": "streams (KIP-1071)",
}


def columns(cluster: str | None, multi: bool) -> list[dict[str, Any]]:
    """The grid's columns: the cluster column after the group's name, shown when there are several
    clusters; on one cluster's page its filter is the page's and cannot be changed."""
    col = {**CLUSTER_COLUMN, "hide": not multi}
    if cluster is not None:
        col.update(suppressHeaderMenuButton=True, suppressHeaderFilterButton=True)
    return zoned_columns([COLUMNS[0], col, *COLUMNS[1:]], "last_change")


def filter_model(
    states: list[str] | None, type_: str | None, name: str | None, clusters: list[str] | None
) -> dict[str, Any]:
    """The grid's filter model for the boxes above it (and the URL's cluster, as `clusters`)."""
    fm: dict[str, Any] = {}
    if clusters:
        fm["cluster"] = cluster_filter(clusters)
    if states:
        fm["state"] = text_filter(states)
    if type_:
        fm["type"] = text_filter([type_])
    if name:
        fm["name"] = text_filter([name], "contains")
    return fm


def query_values(fm: Mapping[str, Any], sort_model: Any, path: str | None) -> dict[str, Any]:
    """The URL's query values (dashboard/urls.py, QUERY["fleet"]) for the grid's filter and sort,
    whichever control set them: the inverse of filter_model. One cluster's page has its cluster in
    its path, not in its query."""
    types = filter_words(fm, "type")
    names = filter_words(fm, "name", "contains")
    sort = grid_sort(sort_model)
    return {
        "state": [s for s in filter_words(fm, "state") if s in FLEET_STATES],
        "type": types[0] if len(types) == 1 and types[0] in FLEET_TYPES else None,
        "cluster": filter_words(fm, "cluster") if parse_path(path).cluster is None else [],
        "name": names[0] if len(names) == 1 else None,
        "sort": sort if sort is not None and sort[0] in FLEET_SORTS else None,
    }


def layout(
    cluster: str | None = None, multi: bool = False, search: str | None = None, known: list[str] | None = None
) -> html.Div:
    """`search`: the URL's query string, whose filters and sort the page opens with (a bad value is
    left out and said); `known`: the clusters a `cluster=` of the query may name."""
    q = parse_query("fleet", search)
    problems = list(q.problems)
    clusters: list[str] = q.get("cluster") or []
    if clusters and cluster is not None:
        problems.append(f"cluster= is for the all-clusters page (this page is cluster {cluster}'s)")
        clusters = []
    elif clusters and known:
        unknown = [c for c in clusters if c not in known]
        if unknown:
            problems.append(f"cluster={','.join(unknown)} is not a known cluster (known: {', '.join(known)})")
            clusters = [c for c in clusters if c in known]
    states, type_, name = q.get("state"), q.get("type"), q.get("name")
    fm = filter_model(states, type_, name, [cluster] if cluster is not None else clusters)
    cols = columns(cluster, multi)
    grid = server_grid("fleet-grid", cols, "row_id", **initial_state(fm, q.get("sort"), cols))
    return html.Div(
        [
            html.H2(["Fleet", *([" · cluster ", html.Code(cluster, id="fleet-cluster")] if cluster else [])]),
            url_note(problems),
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
                                options=list(FLEET_STATES),
                                value=states,
                                multi=True,
                                placeholder="Filter by state",
                            ),
                            dcc.Dropdown(
                                id="fleet-filter-type",
                                options=[{"label": lbl, "value": v} for v, lbl in TYPE_LABELS.items()],
                                value=type_,
                                placeholder="Any type",
                            ),
                            dcc.Dropdown(
                                id="fleet-filter-cluster",
                                # the URL's clusters shown at once (the live tick brings the rest)
                                options=list(clusters),
                                value=clusters or None,
                                multi=True,
                                placeholder="Any cluster",
                                # the all-clusters page of several clusters only
                                style={} if cluster is None and multi else {"display": "none"},
                            ),
                            dcc.Input(
                                id="fleet-filter-name",
                                type="search",
                                placeholder="Group name contains…",
                                value=name,
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
                    url_store("fleet-grid"),
                    query_store(),
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

    register_server_grid(
        app, "fleet-grid", "fleet-count", lambda req: zoned_rows(fleet_page(data, req)), "groups"
    )
    register_grid_url(app, "fleet-grid", "fleet", query_values)

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
        # one cluster's page keeps its cluster whatever else is filtered
        url_cluster = parse_path(path).cluster
        return filter_model(states, type_, name, [url_cluster] if url_cluster is not None else clusters)


def zoned_rows(resp: dict[str, Any]) -> dict[str, Any]:
    """A block of the grid with each group's last change written in the display zone (the grid
    sorts on the server, so the cell can be text)."""
    for row in resp.get("rowData") or []:
        row["last_change"] = fmt_time(row.get("last_change"), missing="")
    return resp


def freshness_text(age_s: float | None) -> str:
    return f"collector: {fmt_age(age_s)}" if age_s is not None else "collector: no heartbeat"


__all__ = ["layout", "now_ms", "register"]
