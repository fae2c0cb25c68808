"""Small layout helpers shared by the pages."""

from __future__ import annotations

from collections.abc import Callable
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


def cluster_chips(counts: dict[str, int], url: Callable[[str], str], id_: str) -> html.Div:
    """Each cluster's count as a chip linking to that cluster's page ("prod 120 · staging 40")."""
    chips: list[Any] = []
    for i, (name, n) in enumerate(counts.items()):
        if i:
            chips.append(html.Span(" · ", className="muted"))
        chips.append(
            dcc.Link(
                [html.Span(name, className="chip-name"), " ", html.B(f"{n:,}")],
                href=url(name),
                className="chip",
                title=f"Only cluster {name}",
            )
        )
    return html.Div(
        [html.Div(chips, id=id_), html.Div("by cluster", className="stat-label")], className="stat"
    )


def cluster_label(cluster: str | None) -> Any:
    """A group or topic page's cluster, beside its name."""
    if cluster is None:
        return ""
    return html.Span(["cluster ", html.B(cluster, id="page-cluster")], className="cluster-label")


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
