"""Small layout helpers shared by the pages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dash import dcc, html

from dashboard.figures import STATE_COLORS


def fmt_ms(ms: int | float | None) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def fmt_age(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h ago"
    return f"{seconds / 86400:.1f} days ago"


def state_badge(state: str | None) -> html.Span:
    s = state or "Unknown"
    return html.Span(s, className="badge", style={"background": STATE_COLORS.get(s, "#546e7a")})


def stat(label: str, value: Any, id_: str | None = None, href: str | None = None) -> html.Div:
    body: Any = html.Div(str(value), className="stat-value", **({"id": id_} if id_ else {}))
    if href:
        body = dcc.Link(body, href=href)
    return html.Div([body, html.Div(label, className="stat-label")], className="stat")


def empty_state(title: str, *lines: Any) -> html.Div:
    return html.Div([html.H3(title), *[html.P(x) for x in lines]], className="empty-state")


def graph(id_: str, **kw: Any) -> dcc.Graph:
    return dcc.Graph(id=id_, config={"displaylogo": False}, **kw)


def choice(id_: str, options: list[tuple[str, Any]], value: Any, width: int = 220) -> dcc.Dropdown:
    """A small dropdown of fixed choices (label, value): no clearing, no typing."""
    return dcc.Dropdown(
        id=id_,
        clearable=False,
        searchable=False,
        style={"width": f"{width}px"},
        options=[{"label": lbl, "value": v} for lbl, v in options],
        value=value,
    )


# Lag charts: in offsets or in seconds.
LAG_METRICS = [("lag in offsets", "lag"), ("lag in seconds", "lag_seconds")]
