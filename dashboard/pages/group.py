"""The group page (`/clusters/<c>/groups/<name>`, or `/groups/<name>` for the cluster `default` or
the only one): what the group is doing now and what it has been doing. A group is (cluster, name):
the same name in another cluster is another group."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dash_ag_grid as dag
from dash import Dash, Input, Output, dcc, html

from dashboard import group_doc as gd
from dashboard.components import (
    LAG_METRICS,
    choice,
    cluster_label,
    empty_state,
    fmt_age,
    fmt_ms,
    graph,
    state_badge,
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
from dashboard.urls import fleet_url, parse_path, whatif_url

ACTIVITY = -1  # the default range: from the first event to a little after the last state change
RANGES = [
    ("around the last changes", ACTIVITY),
    ("15 min", 15 * 60_000),
    ("1 hour", 3_600_000),
    ("6 hours", 6 * 3_600_000),
    ("24 hours", 24 * 3_600_000),
    ("7 days", 7 * 24 * 3_600_000),
    ("all history", 0),
]

MEMBER_COLUMNS = [
    {"field": "member_id", "headerName": "Member id", "minWidth": 260, "flex": 2},
    {"field": "group_instance_id", "headerName": "Instance id", "width": 120},
    {"field": "client_id", "headerName": "Client id", "width": 120},
    {"field": "client_host", "headerName": "Host", "width": 120},
    {"field": "partitions", "headerName": "Partitions", "type": "numericColumn", "width": 110},
    {
        "field": "assignment",
        "headerName": "Assignment",
        "flex": 2,
        "minWidth": 200,
        "tooltipField": "assignment",
    },
    {"field": "lag", "headerName": "Lag (offsets)", "type": "numericColumn", "width": 125},
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "width": 95},
    {"field": "heartbeat_age_s", "headerName": "Heartbeat age (s)", "type": "numericColumn", "width": 150},
    {
        "field": "session_timeout_s",
        "headerName": "Session timeout (s)",
        "type": "numericColumn",
        "width": 160,
    },
    {
        "field": "heartbeat_ratio",
        "headerName": "Age / timeout",
        "type": "numericColumn",
        "width": 130,
        "cellStyle": {
            "styleConditions": [
                {"condition": "params.value >= 1", "style": {"backgroundColor": "#ffcdd2"}},
                {"condition": "params.value >= 0.5", "style": {"backgroundColor": "#fff3e0"}},
            ]
        },
    },
]
KIP848_COLUMNS = [
    {"field": "member_epoch", "headerName": "Member epoch", "type": "numericColumn", "width": 130},
    {"field": "state", "headerName": "Member state", "width": 140},
    {
        "field": "target",
        "headerName": "Target assignment",
        "flex": 2,
        "minWidth": 200,
        "tooltipField": "target",
    },
]
GEN_COLUMNS = [
    {"field": "generation", "headerName": "Gen / epoch", "width": 115, "sort": "desc"},
    {"field": "start", "headerName": "Started (UTC)", "width": 200},
    {"field": "duration", "headerName": "Rebalance took", "width": 130},
    {"field": "cause", "headerName": "Cause", "width": 210},
    {"field": "joined", "headerName": "Joined", "flex": 1, "minWidth": 150, "tooltipField": "joined"},
    {"field": "left", "headerName": "Left", "flex": 1, "minWidth": 150, "tooltipField": "left"},
    {"field": "protocol", "headerName": "Protocol", "width": 120},
    {
        "field": "reason",
        "headerName": "Broker's reason",
        "flex": 2,
        "minWidth": 200,
        "tooltipField": "reason",
    },
    {"field": "inferred", "headerName": "Inferred", "width": 150, "tooltipField": "inferred"},
]
PARTITION_COLUMNS = [
    {"field": "topic", "headerName": "Topic", "cellRenderer": "TopicLink", "flex": 1, "minWidth": 160},
    {"field": "partition", "headerName": "Partition", "type": "numericColumn", "width": 105},
    {"field": "committed", "headerName": "Committed offset", "type": "numericColumn", "width": 155},
    {"field": "log_end", "headerName": "Log-end offset", "type": "numericColumn", "width": 140},
    {"field": "lag", "headerName": "Lag (offsets)", "type": "numericColumn", "width": 125},
    {"field": "lag_seconds", "headerName": "Lag (s)", "type": "numericColumn", "width": 95},
    {"field": "status", "headerName": "Status", "width": 100},
    {"field": "member", "headerName": "Owner", "flex": 1, "minWidth": 200},
    {"field": "commit_time", "headerName": "Last commit (UTC)", "width": 200},
]


def _grid(id_: str, columns: list[dict[str, Any]], height: int = 300) -> dag.AgGrid:
    return dag.AgGrid(
        id=id_,
        columnDefs=columns,
        rowData=[],
        defaultColDef={"sortable": True, "resizable": True, "filter": True},
        dashGridOptions={"tooltipShowDelay": 300, "enableCellTextSelection": True, "animateRows": False},
        style={"height": f"{height}px"},
        className="ag-theme-alpine",
    )


def layout(name: str, cluster: str | None = None, multi: bool = False) -> html.Div:
    """`cluster`: the group's (resolved for a legacy URL), carried by every link; shown beside the
    name when there are several clusters."""
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
            html.Div(id="group-header", className="card"),
            html.Div(
                [
                    html.Span("Time range: ", style={"fontWeight": 600}),
                    dcc.Dropdown(
                        id="group-range",
                        options=[{"label": lbl, "value": v} for lbl, v in RANGES],
                        value=ACTIVITY,
                        clearable=False,
                        style={"width": "250px", "display": "inline-block", "verticalAlign": "middle"},
                    ),
                    html.Span(id="group-range-note", className="muted", style={"marginLeft": "12px"}),
                ],
                className="card",
            ),
            html.Div(graph("group-timeline"), className="card"),
            html.Div(
                [graph("group-generations"), _grid("group-generations-table", GEN_COLUMNS, 260)],
                className="card",
            ),
            html.Div(id="group-kip848", className="card", style={"display": "none"}),
            html.Div([html.H3("Members"), _grid("group-members", MEMBER_COLUMNS, 280)], className="card"),
            html.Div(graph("group-heatmap"), className="card"),
            html.Div(
                [
                    html.Div(
                        [
                            choice("group-lag-metric", LAG_METRICS, "lag"),
                            choice(
                                "group-lag-by",
                                [("per partition", "partition"), ("per member", "member")],
                                "partition",
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
                    _grid("group-partitions", PARTITION_COLUMNS, 300),
                ],
                className="card",
            ),
        ]
    )


def window(range_ms: int | None, doc: Mapping[str, Any], now: int) -> tuple[int | None, int, str]:
    """(since, until, note) for a range choice. A range that would show nothing (the group has been
    quiet longer than the range) is anchored to the group's newest data instead, and the note says so."""
    if not range_ms or range_ms == ACTIVITY:
        return None, now, ""
    latest = gd.latest_time(doc)
    if latest is not None and latest < now - range_ms:
        return (
            latest - range_ms,
            latest,
            f"Nothing happened in the last {_dur(range_ms)}; showing the {_dur(range_ms)} "
            f"up to the last activity at {fmt_ms(latest)}.",
        )
    return now - range_ms, now, ""


def activity_view(bands: list[gd.Band], now: int, latest: int | None = None) -> tuple[int, int] | None:
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


def header(doc: Mapping[str, Any], row: Mapping[str, Any] | None, now: int) -> list[Any]:
    kip = gd.is_kip848(doc)
    lag, lag_s = gd.totals(doc)
    pairs: list[tuple[str, Any]] = [("State", state_badge(doc.get("state"))), ("Type", doc.get("type"))]
    if kip:
        pairs += [("Group epoch", doc.get("group_epoch")), ("Assignment epoch", doc.get("assignment_epoch"))]
    else:
        pairs += [("Generation", doc.get("generation"))]
    pairs += [
        ("Protocol type", doc.get("protocol_type")),
        ("Protocol", doc.get("protocol")),
        ("Leader", doc.get("leader")),
        ("Coordinator partition", doc.get("coordinator_partition")),
        ("Members", len(doc.get("members") or [])),
        ("Lag offsets", f"{lag:,}" if lag is not None else None),
        ("Lag seconds", f"{lag_s:.1f}" if lag_s is not None else None),
        ("Rebalances 1 h", (row or {}).get("rebalances_1h")),
    ]
    refreshed = (row or {}).get("last_refreshed")
    notes: list[Any] = [
        html.Div(
            f"Refreshed {fmt_age((now - refreshed) / 1000)} ({fmt_ms(refreshed)})" if refreshed else "",
            className="muted",
        )
    ]
    denied = doc.get("denied") or {}
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
        why = "; ".join(f"{k}: {v.get('error')}" for k, v in sorted(denied.items()))
        notes.append(
            html.Div(
                f"The cluster does not allow groupscope to read {what} of this group ({why}). "
                "Shown is what the other sources tell; docs/security.md lists the ACLs.",
                className="banner warn",
                id="group-denied",
            )
        )
    inferred = doc.get("inferred")
    if inferred:
        text = ", ".join(map(str, inferred)) if isinstance(inferred, list) else str(inferred)
        notes.append(html.Div(f"Inferred for lack of a source: {text}", className="inferred"))
    sources = doc.get("sources")
    if sources:
        text = (
            ", ".join(sources)
            if isinstance(sources, list)
            else ", ".join(k for k, v in dict(sources).items() if v)
        )
        notes.append(html.Div(f"Sources: {text}", className="muted"))
    return [_kv(pairs), *notes]


def kip848_card(doc: Mapping[str, Any]) -> tuple[list[Any], dict[str, str]]:
    if not gd.is_kip848(doc):
        return [], {"display": "none"}
    ms = gd.members(doc)
    states: dict[str, int] = {}
    for m in ms:
        states[m.state or "unknown"] = states.get(m.state or "unknown", 0) + 1
    differ = [m for m in ms if m.target_assignment is not None and m.target_assignment != m.assignment]
    pending = sum(len(m.pending_revocation) for m in ms)
    body = [
        html.H3("KIP-932 share group: epochs" if doc.get("type") == "share" else "KIP-848 reconciliation"),
        _kv(
            [
                ("Group epoch", doc.get("group_epoch")),
                ("Assignment epoch", doc.get("assignment_epoch")),
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
    return body, {}


def heatmap(doc: Mapping[str, Any]) -> Any:
    """The current assignment; for a group with no members now, the last generation's assignment
    (what the members had before the group emptied), said so in the title."""
    ms = gd.members(doc)
    lag = gd.partition_lag(doc)
    if ms:
        return assignment_heatmap(ms, lag)
    for g in reversed(gd.generations(doc)):
        if isinstance(g.assignment, Mapping) and any(g.assignment.values()):
            assign = {str(m): gd.tp_list(tps) for m, tps in g.assignment.items()}
            title = f"Last assignment: generation {g.generation}, before the group emptied (colour = lag now)"
            return assignment_heatmap([], lag, title, assignment=assign)
    return assignment_heatmap([], lag)


def generation_rows(gens: list[gd.Generation]) -> list[dict[str, Any]]:
    return [
        {
            "generation": g.generation,
            "start": fmt_ms(g.start),
            "duration": _dur(g.duration_ms) if g.duration_ms is not None else "unknown",
            # a cause no source stated is marked (the broker's log states it; else it is inferred)
            "cause": (g.cause or "unknown") + (" (inferred)" if "cause" in g.inferred else ""),
            "joined": ", ".join(g.members_joined),
            "left": ", ".join(g.members_left),
            "protocol": g.protocol,
            "reason": g.reason,
            "inferred": ", ".join(g.inferred),
        }
        for g in gens
    ]


def partition_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in gd.partition_lag(doc):
        d = dict(r.__dict__)
        d["commit_time"] = fmt_ms(r.commit_time) if r.commit_time else None
        d["committed"] = r.committed if r.committed is not None else "no commit"
        out.append(d)
    return out


def lag_series(
    points: list[Mapping[str, Any]], metric: str, by: str
) -> dict[str, list[tuple[int, float | None]]]:
    """Series per partition ("topic:p") or member from the lag history points in Redis. A value in a
    point is either a number (lag in offsets) or a mapping with lag / lag_seconds / committed."""
    out: dict[str, list[tuple[int, float | None]]] = {}
    key = "partitions" if by == "partition" else "members"
    for p in sorted(points, key=lambda p: p.get("ts") or 0):
        ts = p.get("ts")
        if ts is None:
            continue
        for name, v in (p.get(key) or {}).items():
            if isinstance(v, Mapping):
                val = v.get(metric)
                if val is None and metric == "committed":
                    val = v.get("committed_offset")
                if val is None and metric == "lag":
                    val = v.get("lag_offsets")
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
            doc = data.group(name, r.cluster) or {}
            since, until, _ = window(range_ms, doc, now_ms())
            points = data.lag_history(name, since, until, r.cluster)
        except Unavailable as e:
            return empty_figure("Lag over time", str(e))
        return lag_over_time_figure(top_series(lag_series(points, metric, by), by), metric, by)


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
    if doc is None:
        where = "in Redis" if len(_known(data)) <= 1 else f"in cluster {cluster}"
        msg = empty_state(
            f"No group named {name!r} {where}",
            "It may not exist, may have been deleted and trimmed, or the collector has not seen it yet.",
        )
        blank = empty_figure("", "No data")
        return msg, "", blank, blank, [], [], {"display": "none"}, [], MEMBER_COLUMNS, blank, []
    since, until, note = window(range_ms, doc, now)
    try:
        bands_raw = data.timeline(name, since, until, cluster) if since is not None else None
        gens_raw = data.generations(name, None, until, cluster) if since is not None else None
        stale = stale_note(data, cluster, behind_s)
    except Unavailable:
        bands_raw = gens_raw = stale = None
    bands = gd.timeline({"timeline": bands_raw}) if bands_raw else gd.timeline(doc)
    gens = gd.generations({"generations": gens_raw}) if gens_raw else gd.generations(doc)
    if since is not None:
        gens = [g for g in gens if g.start is None or (g.end or g.start) >= since]
    kip_body, kip_style = kip848_card(doc)
    columns = MEMBER_COLUMNS + (KIP848_COLUMNS if gd.is_kip848(doc) else [])
    return (
        [stale, *header(doc, row, now)] if stale is not None else header(doc, row, now),
        note,
        timeline_figure(
            bands,
            since,
            max(until, max((b.end or b.start for b in bands), default=until)),
            activity_view(bands, now, gd.latest_time(doc)) if range_ms == ACTIVITY else None,
        ),
        generations_figure(gens, since, until),
        generation_rows(gens),
        kip_body,
        kip_style,
        [r.__dict__ for r in gd.member_rows(doc, now)],
        columns,
        heatmap(doc),
        [{**r, "cluster": cluster} for r in partition_rows(doc)],  # the topic links carry it
    )


def _known(data: DashboardData) -> list[str]:
    try:
        return data.cluster_names()
    except Unavailable:
        return []
