"""The Dash application: a shell (navigation, freshness, live-refresh controls, banner) around six
pages routed by URL, so any view can be shared as a link:

    /                        the fleet (every cluster)
    /groups/<name>           one group (name percent-encoded as one path segment)
    /groups/<name>/whatif    the what-if engine on that group
    /alerts                  active alerts and their history
    /topics                  every topic groups read, with their worst lag
    /topics/<name>           the groups of one topic, their lag per partition and over time

and the same under /clusters/<cluster> for one Kafka cluster (/clusters/<cluster> is its fleet); the
URLs without a cluster are every cluster's lists, and a group or topic of the cluster `default` (or
of the only cluster). A header dropdown switches cluster. A page's filters, sort and time range
are in its URL's query string (dashboard/urls.py, QUERY), so a copied URL opens the page as it was,
and the browser's Back and Forward show the page as the URL they reach says (route).

Every time is shown in one zone, the `dashboard_timezone` setting (UTC by default), said once in the
header ("times in UTC") and on every chart's time axis (dashboard/timefmt.py).

The same server answers the read-only JSON API (/api/v1/...) and Burrow's endpoints (/v3/kafka/...,
/v3/config/..., /v3/admin/loglevel), dashboard/api.py, dashboard/api_burrow.py and docs/api.md,
behind the same authentication.

The app only reads group data from Redis (through collectors.storage.redis_store.RedisStore). Celery uses the
same Redis as broker and result store for the what-if page's background callbacks.
"""

from __future__ import annotations

from typing import Any

from dash import ClientsideFunction, Dash, Input, Output, State, ctx, dcc, html, no_update
from flask import Response, request

from collectors.config import Settings, load_settings
from collectors.endpoints import CHALLENGE, basic_auth_ok
from dashboard import api, api_burrow, background
from dashboard.components import QUERY_STORE, empty_state, fmt_age
from dashboard.data import DashboardData, Health, Unavailable
from dashboard.pages import alerts, fleet, group, topic, topics, whatif
from dashboard.timefmt import fmt_time, set_display_zone, zone_name
from dashboard.urls import (
    Route,
    alerts_url,
    fleet_url,
    parse_path,
    switch_cluster_href,
    topics_url,
)

REFRESH_CHOICES = [2, 5, 10, 30, 60]
OFFSETS_TOPIC = "__consumer_offsets"  # its source status is kept under the topic's name
ALL_CLUSTERS = "*"  # the switcher's "All clusters" (no cluster name can be "*")
SHOWN = "url-shown"


def shell(refresh_s: float, zone: str | None = None) -> html.Div:
    """The page around every view; `zone`: the display time zone's name, said in the header."""
    choices = sorted({*REFRESH_CHOICES, int(refresh_s)})
    return html.Div(
        [
            dcc.Location(id="url", refresh=False),
            # the URL (path and query) the page shown stands for, and how many pages were drawn: a
            # query that changes to another one (Back, Forward, a link) draws the page again (route)
            dcc.Store(id=SHOWN),
            dcc.Store(id="nav-to"),  # where the cluster switcher goes (app.py, switcher)
            dcc.Interval(id="tick", interval=int(refresh_s * 1000)),
            html.Header(
                [
                    dcc.Link("groupscope", href="/", className="brand"),
                    dcc.Link("Fleet", href="/", id="nav-fleet"),
                    dcc.Link("Topics", href="/topics", id="nav-topics"),
                    dcc.Link("Alerts", href="/alerts", id="nav-alerts"),
                    dcc.Dropdown(
                        id="cluster-switch",
                        options=[{"label": "All clusters", "value": ALL_CLUSTERS}],
                        value=ALL_CLUSTERS,
                        clearable=False,
                        searchable=False,
                        className="cluster-select",
                        # shown once there is more than one cluster (the callback below)
                        style={"display": "none"},
                    ),
                    html.Span(className="spacer"),
                    html.Span(
                        f"times in {zone or zone_name()}",
                        id="time-zone",
                        className="freshness",
                        title="Every time on these pages is in this zone (the dashboard_timezone setting)",
                    ),
                    html.Span(id="freshness", className="freshness"),
                    html.Span("refresh", className="freshness"),
                    dcc.Dropdown(
                        id="refresh-every",
                        options=[{"label": f"every {s} s", "value": s} for s in choices],
                        value=int(refresh_s),
                        clearable=False,
                        searchable=False,
                        className="refresh-select",
                        style={"backgroundColor": "#fff", "borderRadius": "4px", "color": "#222"},
                    ),
                    html.Button("Pause", id="pause", n_clicks=0, title="Pause or resume live refresh"),
                ],
                className="topbar",
            ),
            html.Div(id="banner"),
            html.Main(id="page"),
        ]
    )


def health_outputs(healths: list[Health], behind_s: float, multi: bool) -> tuple[Any, Any, str]:
    """(freshness text, banner, banner class) for the clusters a page shows. With one cluster known
    the banner reads as before clusters existed; with several, each message names its cluster and
    only the clusters with a problem are named."""
    if healths and not healths[0].reachable:
        return (
            "Redis unreachable",
            f"Redis is unreachable: {healths[0].error}. Retrying on every refresh.",
            "banner error",
        )
    text = " · ".join(_freshness(h, multi and len(healths) > 1) for h in healths)
    if healths and healths[0].redis_full:
        return (
            text,
            f"Redis is full ({healths[0].redis_full}): it refuses the collector's writes, and the "
            "collector waits, retrying, so what you see stops here. Raise maxmemory or free memory "
            "(docs/redis-schema.md says what each key costs).",
            "banner error",
        )
    found = [(h, w) for h in healths if (w := _warning(h, behind_s, multi)) is not None]
    if not found:
        return text, None, ""
    if not multi:
        kind, msg = found[0][1]
        return text, html.Span(msg, id="banner-offsets") if kind == "offsets" else msg, "banner warn"
    lines = [
        html.Div([f"Cluster {h.cluster}: ", msg], className=f"banner-line banner-{kind}", title=h.cluster)
        for h, (kind, msg) in found
    ]
    return text, lines, "banner warn"


def _freshness(h: Health, named: bool) -> str:
    if h.collector_age_s is None:
        text = "collector: no heartbeat"
    else:
        text = f"data from {fmt_age(h.collector_age_s)}"
        if h.event_ms and not named:
            text += f" · evidence up to {fmt_time(h.event_ms)}"
    return f"{h.cluster}: {text}" if named else text


def _warning(h: Health, behind_s: float, named: bool = False) -> tuple[str, Any] | None:
    """(kind, message) of what is wrong with one cluster's data, or None. `named`: the message
    follows "Cluster NAME: "."""
    if h.collector_age_s is None:
        if not named:
            return "no-collector", html.Span(
                [
                    "No collector has written to this Redis yet: is it running? ",
                    html.Code("groupscope collect --bootstrap-servers HOST:9092"),
                ]
            )
        return "no-collector", html.Span(
            [
                "no collector has written its data yet: is it running? ",
                html.Code(f"groupscope collect --cluster {h.cluster}"),
            ]
        )
    bad = [f"{k}: {v.get('detail')}" for k, v in (h.sources or {}).items() if not v.get("ok")]
    if h.collector_age_s > behind_s:
        the = "the" if named else "The"
        return "behind", (
            f"{the} collector is behind: its last batch was {fmt_age(h.collector_age_s)}. Data may be stale."
        )
    offsets = (h.sources or {}).get(OFFSETS_TOPIC)
    if offsets is not None and not offsets.get("ok"):
        # the Admin-API-only mode (docs/security.md): say on every page what that costs
        others = [b for b in bad if not b.startswith(OFFSETS_TOPIC + ":")]
        msg = (
            "History since groupscope started; offsets topic not readable "
            f"({offsets.get('detail')}): groups, members, assignments, lag and timelines come from "
            "the Admin API, polled since then."
        )
        if others:
            msg += " Also unavailable: " + "; ".join(others)
        return "offsets", msg
    if bad:
        return "sources", "Some sources are unavailable: " + "; ".join(bad)
    return None


def behind_after_s(settings: Settings) -> float:
    """How old the collector's heartbeat may get before the banner says it is behind."""
    return max(30.0, 10 * settings.trigger_interval_s, 3 * settings.admin_poll_interval_s)


def create_app(
    settings: Settings | None = None,
    *,
    data: DashboardData | None = None,
    background_mode: str = "auto",
) -> Dash:
    """Build the app. ``background_mode``: "celery" (what-if jobs on Celery workers), "diskcache"
    (local subprocesses, for a single machine without a worker) or "auto" (Celery, the default)."""
    settings = settings or load_settings()
    # the zone of every time shown, chosen once (Settings refuses an unknown one)
    set_display_zone(settings.dashboard_timezone)
    if data is None:
        from collectors.alerts.config import load_alert_config

        # The configured clusters are shown even before their collector writes; the alert rules
        # (the worker's) define what the pages call a storm, flapping and lagging.
        data = DashboardData(
            settings.redis_url,
            clusters=settings.configured_clusters(),
            alert_config=load_alert_config(settings),
        )
    manager = background.make_manager(settings.redis_url, background_mode)
    app = Dash(
        __name__,
        title="groupscope",
        suppress_callback_exceptions=True,
        background_callback_manager=manager,
        update_title=None,
    )
    app.layout = shell(settings.dashboard_refresh_s, settings.dashboard_timezone)
    app.groupscope_data = data  # type: ignore[attr-defined] - for tests and the benchmark
    behind_s = behind_after_s(settings)

    @app.callback(
        Output("page", "children"),
        Output(SHOWN, "data"),
        Input("url", "pathname"),
        Input("url", "search"),
        State(SHOWN, "data"),
    )
    def route(pathname: str | None, search: str | None = None, shown: Any = None) -> Any:
        """The page of `pathname`, opened with the filters, sort and time range of `search` (its
        query string). The pages keep the URL in step with their controls (toUrl, which says so in
        SHOWN): a URL that differs from SHOWN's was not written by the page shown but reached by
        the browser's Back or Forward (or a link to the same page with another query), and the
        page is drawn again from it, as when it was first opened."""
        want = {"path": pathname or "/", "search": search or ""}
        if isinstance(shown, dict) and {k: shown.get(k) for k in want} == want:
            return no_update, no_update
        drawn = (shown.get("drawn", 0) if isinstance(shown, dict) else 0) + 1
        # a new id each time: React makes the page's components anew (a grid reads its filter and
        # sort only when made) rather than keep the old ones under the same ids
        return html.Div(page(pathname, search), id={"view": drawn}), {**want, "drawn": drawn}

    def page(pathname: str | None, search: str | None) -> Any:
        r = parse_path(pathname)
        try:
            known = data.cluster_names()
        except Unavailable:
            known = []  # the pages say Redis is unreachable themselves
        if r.cluster is not None and known and r.cluster not in known:
            return empty_state(
                f"No cluster named {r.cluster!r}",
                "Known clusters: " + ", ".join(known) + ".",
                dcc.Link("Back to the fleet", href="/"),
            )
        multi = len(known) > 1
        if r.page == "fleet":
            return fleet.layout(r.cluster, multi, search, known)
        if r.page == "group":
            return group.layout(r.group or "", _resolved(r), multi, search)
        if r.page == "whatif":
            return whatif.layout(r.group or "", _resolved(r), multi, search)
        if r.page == "alerts":
            return alerts.layout(r.cluster, multi)
        if r.page == "topics":
            return topics.layout(r.cluster, multi, search)
        if r.page == "topic":
            return topic.layout(r.topic or "", _resolved(r), multi, search)
        return empty_state(
            "Page not found",
            html.Span(["Nothing at ", html.Code(pathname or ""), "."]),
            dcc.Link("Back to the fleet", href="/"),
        )

    def _resolved(r: Route) -> str | None:
        """A group or topic page's cluster (a legacy URL's: `default` or the only one), for the
        links it builds; None when Redis cannot say (the page says Redis is unreachable)."""
        try:
            return data.resolve(r.cluster)
        except Unavailable:
            return r.cluster

    def page_cluster(r: Route) -> str | None:
        """The cluster a page is about (None: every cluster): the list pages' URL cluster, a group
        or topic page's resolved one."""
        return _resolved(r) if r.page in ("group", "whatif", "topic") else r.cluster

    @app.callback(
        Output("freshness", "children"),
        Output("banner", "children"),
        Output("banner", "className"),
        Input("tick", "n_intervals"),
        Input("url", "pathname"),
    )
    def health(_n: int | None, path: str | None) -> tuple[Any, Any, str]:
        r = parse_path(path)
        healths = data.healths(page_cluster(r))
        try:
            multi = len(data.cluster_names()) > 1
        except Unavailable:
            multi = False
        return health_outputs(healths, behind_s, multi)

    @app.callback(
        Output("nav-to", "data"),
        Output("cluster-switch", "value"),
        Output("cluster-switch", "options"),
        Output("cluster-switch", "style"),
        Output("nav-fleet", "href"),
        Output("nav-topics", "href"),
        Output("nav-alerts", "href"),
        Input("url", "pathname"),
        Input("cluster-switch", "value"),
        Input("tick", "n_intervals"),
        State("cluster-switch", "options"),
        State("cluster-switch", "style"),
        State("url", "search"),
    )
    def switcher(
        path: str | None,
        chosen: str | None,
        _n: int | None,
        shown: Any,
        shown_style: Any,
        search: str | None = None,
    ) -> tuple[Any, ...]:
        """The header's cluster switcher: shows the URL's cluster, and choosing one goes to that
        cluster's URL, with the query the list it goes to can take (switch_cluster_href; the browser
        goes there as a link does, `navigate`). The live tick only adds a new cluster: unchanged
        options are not sent again, so an open menu stays open."""
        r = parse_path(path)
        try:
            names = data.cluster_names()
        except Unavailable:
            names = []
        current = page_cluster(r)
        value = ALL_CLUSTERS if current is None else current
        options = [{"label": "All clusters", "value": ALL_CLUSTERS}] + [
            {"label": c, "value": c} for c in names
        ]
        style = {} if len(names) > 1 else {"display": "none"}
        opts = no_update if options == shown else options
        look = no_update if style == shown_style else style
        if ctx.triggered_id == "cluster-switch" and chosen and chosen != value:
            target = None if chosen == ALL_CLUSTERS else chosen
            nav = (fleet_url(target), topics_url(target), alerts_url(target))
            return {"href": switch_cluster_href(r, target, search)}, chosen, opts, look, *nav
        if ctx.triggered_id == "tick":
            nav = (no_update,) * 3
        else:
            nav = (fleet_url(current), topics_url(current), alerts_url(current))
        return no_update, (no_update if chosen == value else value), opts, look, *nav

    app.clientside_callback(
        ClientsideFunction(namespace="groupscope", function_name="navigate"),
        Output("nav-to", "id"),
        Input("nav-to", "data"),
        prevent_initial_call=True,
    )

    # A page's filters, sort and time range into its URL (the pages put them in their query store):
    # in the browser, and only while the page they are for is shown. A user's change adds a history
    # entry (Back returns to the page as it was); the page restating the URL it was opened with
    # (`replace`: a bad parameter left out) replaces the entry, else Back would come back to the
    # entry it just left, be restated, and never get further. Said in SHOWN, so route knows the
    # page wrote it.
    app.clientside_callback(
        ClientsideFunction(namespace="groupscope", function_name="toUrl"),
        Output("url", "search"),
        Output(SHOWN, "data", allow_duplicate=True),
        Input(QUERY_STORE, "data"),
        State(SHOWN, "data"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output("tick", "disabled"),
        Output("pause", "children"),
        Input("pause", "n_clicks"),
        State("tick", "disabled"),
        prevent_initial_call=True,
    )
    def pause(_clicks: int, disabled: bool | None) -> tuple[bool, str]:
        paused = not disabled
        return paused, ("Resume" if paused else "Pause")

    @app.callback(Output("tick", "interval"), Input("refresh-every", "value"), prevent_initial_call=True)
    def every(seconds: int | None) -> Any:
        return int(seconds * 1000) if seconds else no_update

    fleet.register(app, data)
    group.register(app, data, behind_s)
    whatif.register(app, data)
    alerts.register(app, data)
    topics.register(app, data)
    topic.register(app, data)
    api.register(app.server, data)  # the JSON API (docs/api.md)
    api_burrow.register(app.server, data, settings)  # and Burrow's endpoints
    auth = settings.basic_auth()  # Settings refuses user without password and the reverse
    if auth is not None:
        add_basic_auth(app, *auth)
    return app


def add_basic_auth(app: Dash, user: str, password: str) -> None:
    """HTTP basic authentication on every route (pages, assets and callbacks)."""
    if not user or not password:
        raise ValueError("basic authentication needs both a user and a password")

    @app.server.before_request
    def _check() -> Response | None:
        if basic_auth_ok(request.headers.get("Authorization"), user, password):
            return None
        return Response("Authentication required", 401, dict([CHALLENGE]))
