"""The Dash application: a shell (navigation, freshness, live-refresh controls, banner) around six
pages routed by URL, so any view can be shared as a link:

    /                        the fleet
    /groups/<name>           one group (name percent-encoded as one path segment)
    /groups/<name>/whatif    the what-if engine on that group
    /alerts                  active alerts and their history
    /topics                  every topic groups read, with their worst lag
    /topics/<name>           the groups of one topic, their lag per partition and over time

The app only reads group data from Redis (through collectors.storage.redis_store.RedisStore). Celery uses the
same Redis as broker and result store for the what-if page's background callbacks.
"""

from __future__ import annotations

import base64
import hmac
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from flask import Response, request

from collectors.config import Settings, load_settings
from dashboard import background
from dashboard.components import empty_state, fmt_age, fmt_ms
from dashboard.data import DashboardData
from dashboard.pages import alerts, fleet, group, topic, topics, whatif
from dashboard.urls import parse_path

REFRESH_CHOICES = [2, 5, 10, 30, 60]
OFFSETS_TOPIC = "__consumer_offsets"  # its source status is kept under the topic's name


def shell(refresh_s: float) -> html.Div:
    choices = sorted({*REFRESH_CHOICES, int(refresh_s)})
    return html.Div(
        [
            dcc.Location(id="url", refresh=False),
            dcc.Interval(id="tick", interval=int(refresh_s * 1000)),
            html.Header(
                [
                    dcc.Link("groupscope", href="/", className="brand"),
                    dcc.Link("Fleet", href="/", id="nav-fleet"),
                    dcc.Link("Topics", href="/topics", id="nav-topics"),
                    dcc.Link("Alerts", href="/alerts", id="nav-alerts"),
                    html.Span(className="spacer"),
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
    data = data or DashboardData(settings.redis_url)
    manager = background.make_manager(settings.redis_url, background_mode)
    app = Dash(
        __name__,
        title="groupscope",
        suppress_callback_exceptions=True,
        background_callback_manager=manager,
        update_title=None,
    )
    app.layout = shell(settings.dashboard_refresh_s)
    app.groupscope_data = data  # type: ignore[attr-defined] - for tests and the benchmark
    behind_s = behind_after_s(settings)

    @app.callback(Output("page", "children"), Input("url", "pathname"))
    def route(pathname: str | None) -> Any:
        r = parse_path(pathname)
        if r.page == "fleet":
            return fleet.layout()
        if r.page == "group":
            return group.layout(r.group or "")
        if r.page == "whatif":
            return whatif.layout(r.group or "")
        if r.page == "alerts":
            return alerts.layout()
        if r.page == "topics":
            return topics.layout()
        if r.page == "topic":
            return topic.layout(r.topic or "")
        return empty_state(
            "Page not found",
            html.Span(["Nothing at ", html.Code(pathname or ""), "."]),
            dcc.Link("Back to the fleet", href="/"),
        )

    @app.callback(
        Output("freshness", "children"),
        Output("banner", "children"),
        Output("banner", "className"),
        Input("tick", "n_intervals"),
        Input("url", "pathname"),
    )
    def health(_n: int | None, _path: str | None) -> tuple[Any, Any, str]:
        h = data.health()
        if not h.reachable:
            return (
                "Redis unreachable",
                f"Redis is unreachable: {h.error}. Retrying on every refresh.",
                "banner error",
            )
        if h.collector_age_s is None:
            return (
                "collector: no heartbeat",
                html.Span(
                    [
                        "No collector has written to this Redis yet: is it running? ",
                        html.Code("groupscope collect --bootstrap-servers HOST:9092"),
                    ]
                ),
                "banner warn",
            )
        text = f"data from {fmt_age(h.collector_age_s)}"
        if h.event_ms:
            text += f" · evidence up to {fmt_ms(h.event_ms)}"
        bad = [f"{k}: {v.get('detail')}" for k, v in (h.sources or {}).items() if not v.get("ok")]
        if h.collector_age_s > behind_s:
            msg = (
                f"The collector is behind: its last batch was {fmt_age(h.collector_age_s)}. "
                "Data may be stale."
            )
            return text, msg, "banner warn"
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
            return text, html.Span(msg, id="banner-offsets"), "banner warn"
        if bad:
            return text, "Some sources are unavailable: " + "; ".join(bad), "banner warn"
        return text, None, ""

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
    group.register(app, data)
    whatif.register(app, data)
    alerts.register(app, data)
    topics.register(app, data)
    topic.register(app, data)
    if settings.dashboard_user and settings.dashboard_password:
        add_basic_auth(app, settings.dashboard_user, settings.dashboard_password)
    return app


def add_basic_auth(app: Dash, user: str, password: str) -> None:
    """HTTP basic authentication on every route (pages, assets and callbacks)."""
    expected = base64.b64encode(f"{user}:{password}".encode()).decode()

    @app.server.before_request
    def _check() -> Response | None:
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic ") and hmac.compare_digest(header[6:].strip(), expected):
            return None
        return Response("Authentication required", 401, {"WWW-Authenticate": 'Basic realm="groupscope"'})
