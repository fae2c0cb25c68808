"""The what-if page (`/clusters/<c>/groups/<name>/whatif`, or `/groups/<name>/whatif` for the cluster
`default` or the only one): pick assignors and changes, see results side by side. It starts from the
group of its URL's cluster.

The computation runs as a Dash background callback (Celery in production) with a progress bar; form
problems come back as messages beside their fields.

The form is in the page's URL (`?assignor=range&assignor=sticky&add=3&partitions=orders%3D24`,
dashboard/urls.py, QUERY["whatif"]; FORM_URL names each field's parameter), written when Compare
is pressed: a link to a what-if opens the form filled in as it was and compares at once, so who
opens it sees the same results. A URL value that is no value of its field (an unknown assignor, a
count that is not a whole number) is left out and said in the note at the top; one that is, but
not for this group (a member it does not have, fewer partitions than a topic has), is put in its
field and the comparison says what is wrong beside it, as for a value typed in."""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
from dash import Dash, Input, Output, State, dcc, html, no_update

from coordinator_model.document.types import DocumentError, GroupDocument
from dashboard import whatif_engine
from dashboard.components import QUERY_STORE, cluster_label, empty_state, query_store, url_note
from dashboard.data import DashboardData, Unavailable
from dashboard.figures import assignment_heatmap, per_member_bars
from dashboard.urls import QUERY, build_query, group_url, parse_path, parse_query
from dashboard.whatif_form import parse_form, partition_counts

FIELDS = [
    "assignors",
    "add_members",
    "remove_members",
    "partitions",
    "subscription",
    "session_timeout_ms",
    "max_poll_interval_ms",
]


# The form's controls (wi-<key>), in the order the compute callback reads them, and the URL
# parameter of each.
FORM_URL: dict[str, str] = {
    "assignors": "assignor",
    "add_members": "add",
    "remove_members": "remove",
    "partitions": "partitions",
    "sub_member": "member",
    "sub_topics": "topics",
    "session_timeout_ms": "session.timeout.ms",
    "max_poll_interval_ms": "max.poll.interval.ms",
}
FORM_KEYS = list(FORM_URL)
_LISTS = ("assignors", "remove_members")  # the controls whose value is a list


def form_from_query(search: str | None) -> tuple[dict[str, Any], list[str]]:
    """The form's values a what-if URL gives (a control's own kind of value: a list for the
    checklist and the members to remove, text for the boxes, None for the member picked or for
    nothing said), and the URL's problems, for the note."""
    q = parse_query("whatif", search)
    values: dict[str, Any] = {}
    for key, param in FORM_URL.items():
        v = q.get(param)
        values[key] = list(v or []) if key in _LISTS else v
    return values, q.problems


def query_from_form(values: dict[str, Any]) -> str:
    """The what-if URL's query string for the form's values (the inverse of form_from_query). A
    value the URL would not take back (text that is no whole number in a number's box, a very long
    text) is left out: the link says what it can and opening it says nothing is wrong."""
    params = {p.key: p for p in QUERY["whatif"]}
    out: dict[str, Any] = {}
    for key, name in FORM_URL.items():
        p, v = params[name], values.get(key)
        if key in _LISTS:
            words = [str(w) for w in v or [] if w not in (None, "")]
            out[name] = [w for w in words if p.choices is None or w in p.choices]
            continue
        text = "" if v is None else str(v).strip()
        if text and len(text) <= p.max_len and (p.check is None or p.check(text)):
            out[name] = text
    return build_query("whatif", out)


def _field(label: str, control: Any, name: str, help_: str = "") -> list[Any]:
    return [
        html.Label(label, htmlFor=f"wi-{name}"),
        html.Div(
            [
                control,
                html.Div(help_, className="field-help"),
                html.Div(id=f"wi-err-{name}", className="field-error"),
            ]
        ),
    ]


def layout(name: str, cluster: str | None = None, multi: bool = False, search: str | None = None) -> html.Div:
    """`search`: the URL's query string, the form's values the page opens with (FORM_URL); with
    any, the comparison runs as soon as the group is read (init)."""
    form, problems = form_from_query(search)
    said = [v for v in form.values() if v not in (None, [], "")]
    # the members the URL names are options of their dropdowns from the start (init adds the
    # group's): a dropdown shows only a value it has as an option
    named = list(
        dict.fromkeys([*form["remove_members"], *([form["sub_member"]] if form["sub_member"] else [])])
    )
    return html.Div(
        [
            # what init needs from the URL: the assignors it gives (None: the group's default ones),
            # the member ids it names, and whether to compare at once
            dcc.Store(
                id="wi-url",
                data={"assignors": form["assignors"] or None, "members": named, "run": bool(said)},
            ),
            dcc.Store(id="wi-autorun"),
            query_store(),
            html.Div(
                [
                    html.H2(
                        ["What if… ", html.Code(name, id="whatif-group-name")],
                        style={"display": "inline-block"},
                    ),
                    cluster_label(cluster if multi else None),
                    dcc.Link(
                        "← back to the group", href=group_url(name, cluster), style={"marginLeft": "18px"}
                    ),
                ]
            ),
            url_note(problems),
            html.Div(id="wi-current", className="card"),
            html.Div(
                [
                    html.Div(
                        [
                            *_field(
                                "Assignors",
                                dcc.Checklist(
                                    id="wi-assignors",
                                    options=whatif_engine.assignor_options(),
                                    value=[],
                                    inline=True,
                                ),
                                "assignors",
                                "Compared side by side; the group's current one is preselected.",
                            ),
                            *_field(
                                "Add members",
                                dcc.Input(
                                    id="wi-add_members",
                                    type="text",
                                    value=form["add_members"] or "",
                                    placeholder="0",
                                    style={"width": "200px"},
                                ),
                                "add_members",
                                "New members subscribe like the group's first member.",
                            ),
                            *_field(
                                "Remove members",
                                dcc.Dropdown(
                                    id="wi-remove_members",
                                    multi=True,
                                    options=named,
                                    value=form["remove_members"],
                                    style={"maxWidth": "660px"},
                                ),
                                "remove_members",
                            ),
                            *_field(
                                "Partitions",
                                dcc.Input(
                                    id="wi-partitions",
                                    type="text",
                                    value=form["partitions"] or "",
                                    placeholder="orders=24, clicks=+4",
                                    style={"width": "320px"},
                                ),
                                "partitions",
                                "topic=COUNT sets the count, topic=+N adds N partitions.",
                            ),
                            *_field(
                                "Change a subscription",
                                html.Div(
                                    [
                                        dcc.Dropdown(
                                            id="wi-sub_member",
                                            options=named,
                                            value=form["sub_member"],
                                            placeholder="member",
                                            style={"width": "320px"},
                                        ),
                                        dcc.Input(
                                            id="wi-sub_topics",
                                            type="text",
                                            value=form["sub_topics"] or "",
                                            placeholder="topic-a, topic-b",
                                            style={"width": "320px"},
                                        ),
                                    ],
                                    style={"display": "flex", "gap": "8px", "alignItems": "center"},
                                ),
                                "subscription",
                            ),
                            *_field(
                                "session.timeout.ms",
                                dcc.Input(
                                    id="wi-session_timeout_ms",
                                    type="text",
                                    value=form["session_timeout_ms"] or "",
                                    placeholder="e.g. 45000",
                                    style={"width": "200px"},
                                ),
                                "session_timeout_ms",
                                "Counts the recorded session-timeout rebalances this would have avoided.",
                            ),
                            *_field(
                                "max.poll.interval.ms",
                                dcc.Input(
                                    id="wi-max_poll_interval_ms",
                                    type="text",
                                    value=form["max_poll_interval_ms"] or "",
                                    placeholder="e.g. 300000",
                                    style={"width": "200px"},
                                ),
                                "max_poll_interval_ms",
                                "Counts the recorded poll-timeout rebalances this would have avoided.",
                            ),
                        ],
                        className="form-grid",
                    ),
                    html.Div(
                        [
                            html.Button("Compare", id="wi-run", n_clicks=0, className="primary"),
                            html.Progress(
                                id="wi-progress",
                                value="0",
                                max="1",
                                style={"visibility": "hidden", "marginLeft": "14px"},
                            ),
                            html.Span(id="wi-status", className="muted", style={"marginLeft": "10px"}),
                        ],
                        style={"marginTop": "14px"},
                    ),
                ],
                className="card",
            ),
            html.Div(id="wi-results"),
        ]
    )


def current_summary(doc: GroupDocument) -> list[Any]:
    ms = doc.members
    counts = partition_counts(doc)
    lag, _ = doc.lag.totals()
    return [
        html.H3("Starting point: the group now"),
        html.Div(
            f"{len(ms)} member{'' if len(ms) == 1 else 's'} · protocol {doc.protocol or '-'} · "
            f"{sum(counts.values())} partitions on {len(counts)} topic(s) "
            f"({', '.join(f'{t}: {n}' for t, n in sorted(counts.items()))}) · lag {lag:,} offsets",
            id="wi-current-text",
        ),
        html.Div(
            [
                html.Div(
                    [
                        html.B(m.member_id),
                        f" subscribes to {', '.join(sorted(m.subscription)) or '-'}; "
                        f"owns {len(m.assignment)}",
                    ],
                    className="muted",
                )
                for m in ms[:12]
            ]
            + ([html.Div(f"… and {len(ms) - 12} more", className="muted")] if len(ms) > 12 else [])
        ),
    ]


def result_card(r: whatif_engine.AssignorResult, doc: GroupDocument) -> html.Div:
    if r.error:
        return html.Div([html.H3(r.assignor), html.Div(r.error, className="field-error")], className="card")
    lag = doc.lag.partitions
    per_member = [(m.member, m.partitions, m.lag) for m in r.members]
    moved_rows = [
        {"partition": f"{t}-{p}", "from": a or "(unassigned)", "to": b or "(unassigned)"}
        for (t, p), a, b in r.moves
    ]
    return html.Div(
        [
            html.H3(r.assignor, className="wi-result-title"),
            html.Div(
                [
                    html.Div(
                        f"Partitions per member: min {r.min_partitions}, max {r.max_partitions} "
                        f"(spread {r.max_partitions - r.min_partitions})"
                    ),
                    html.Div(
                        f"Lag per member: min {r.min_lag:,}, max {r.max_lag:,} "
                        f"(spread {r.max_lag - r.min_lag:,})"
                    ),
                    html.Div(f"Partitions that move: {len(r.moves)}", className="wi-moves"),
                    html.Div(f"Members that lose partitions: {', '.join(r.losing) or 'none'}"),
                    html.Div(f"Rebalance cost: {r.cost}", className="wi-cost"),
                ],
                className="muted",
            ),
            dcc.Graph(
                figure=assignment_heatmap(
                    [], lag, f"{r.assignor}: assignment", assignment=r.assignment, height=320
                ),
                config={"displaylogo": False},
            ),
            dcc.Graph(
                figure=per_member_bars(per_member, f"{r.assignor}: partitions and lag per member"),
                config={"displaylogo": False},
            ),
            html.Details(
                [
                    html.Summary(f"What moves ({len(moved_rows)})"),
                    dag.AgGrid(
                        columnDefs=[
                            {"field": "partition"},
                            {"field": "from", "flex": 1},
                            {"field": "to", "flex": 1},
                        ],
                        rowData=moved_rows,
                        className="ag-theme-alpine",
                        style={"height": "220px"},
                    ),
                ]
            ),
        ],
        className="card wi-result",
    )


def register(app: Dash, data: DashboardData) -> None:
    @app.callback(
        Output("wi-current", "children"),
        Output("wi-remove_members", "options"),
        Output("wi-sub_member", "options"),
        Output("wi-assignors", "value"),
        Output("wi-autorun", "data"),
        Input("url", "pathname"),
        State("wi-url", "data"),
    )
    def init(pathname: str | None, url: Any = None) -> tuple[Any, Any, Any, Any, Any]:
        """The group's summary and members; the URL's assignors or the group's default ones; and,
        for a URL that says a what-if, the signal to compare it at once (after the assignors are
        set, so the comparison reads them)."""
        url = url if isinstance(url, dict) else {}
        named = [m for m in url.get("members") or [] if isinstance(m, str)]
        r = parse_path(pathname)
        name = r.group or ""
        try:
            doc = data.group(name, r.cluster)
        except Unavailable as e:
            return empty_state("Redis is unreachable", str(e)), named, named, [], no_update
        except DocumentError as e:
            msg = empty_state(f"The stored document of group {name!r} cannot be read", str(e))
            return msg, named, named, [], no_update
        if doc is None:
            return empty_state(f"No group named {name!r} in Redis"), named, named, [], no_update
        # the URL's member ids that are not the group's stay choices, so they show in their
        # dropdown and the comparison says they are not members
        ids = list(dict.fromkeys([m.member_id for m in doc.members] + named))
        assignors = url.get("assignors") or whatif_engine.default_assignors(doc)
        return current_summary(doc), ids, ids, assignors, (1 if url.get("run") else no_update)

    states = [State(f"wi-{f}", "value") for f in FORM_KEYS]

    @app.callback(
        Output(QUERY_STORE, "data", allow_duplicate=True),
        Input("wi-run", "n_clicks"),
        State("url", "pathname"),
        *states,
        prevent_initial_call=True,
    )
    def to_url(clicks: int | None, path: str | None, *vals: Any) -> Any:
        """The form compared into the URL, so the comparison can be shared as a link."""
        if not clicks:
            return no_update
        return {"path": path, "search": query_from_form(dict(zip(FORM_KEYS, vals, strict=True)))}

    @app.callback(
        Output("wi-results", "children"),
        Output("wi-status", "children"),
        *[Output(f"wi-err-{f}", "children") for f in FIELDS],
        Input("wi-run", "n_clicks"),
        Input("wi-autorun", "data"),
        State("url", "pathname"),
        *states,
        background=True,
        progress=[Output("wi-progress", "value"), Output("wi-progress", "max")],
        running=[
            (Output("wi-run", "disabled"), True, False),
            (
                Output("wi-progress", "style"),
                {"visibility": "visible", "marginLeft": "14px"},
                {"visibility": "hidden", "marginLeft": "14px"},
            ),
        ],
        prevent_initial_call=True,
    )
    def compute(
        set_progress: Any, _clicks: int, _auto: Any, pathname: str | None, *vals: Any
    ) -> tuple[Any, ...]:
        values = dict(zip(FORM_KEYS, vals, strict=True))
        r = parse_path(pathname)
        return compute_outputs(
            data, r.group or "", values, lambda i, n: set_progress((str(i), str(n))), r.cluster
        )


def compute_outputs(
    data: DashboardData, name: str, values: dict[str, Any], progress: Any, cluster: str | None = None
) -> tuple[Any, ...]:
    """The comparison for the group `name` of `cluster` (None: a legacy URL's, DashboardData.resolve)."""
    no_errors = [None] * len(FIELDS)
    try:
        doc = data.group(name, cluster)
    except Unavailable as e:
        return html.Div(str(e), className="field-error"), "Redis is unreachable", *no_errors
    except DocumentError as e:
        status = "The group's stored document cannot be read."
        return html.Div(str(e), className="field-error"), status, *no_errors
    if doc is None:
        return None, f"No group named {name!r}", *no_errors
    req, errors = parse_form(values, doc)
    if req is None:
        return None, "Fix the fields marked in red.", *[errors.get(f) for f in FIELDS]
    out = whatif_engine.run(doc, req, progress)
    if out.error:
        return html.Div(out.error, className="field-error"), "The what-if engine could not run.", *no_errors
    cards = [result_card(r, doc) for r in out.results]
    extra: list[Any] = []
    if out.avoided is not None:
        extra.append(html.Div(out.avoided, className="card", id="wi-avoided"))
    return (
        html.Div([*extra, html.Div(cards, className="side-by-side")]),
        f"Compared {len(out.results)} assignor(s).",
        *no_errors,
    )
