"""Small layout helpers shared by the pages."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from dash import dcc, html

from dashboard.figures import STATE_COLORS
from dashboard.timefmt import time_header


def zoned_columns(columns: Iterable[dict[str, Any]], *fields: str) -> list[dict[str, Any]]:
    """Grid columns with the display zone in the header of each column of times (`fields`):
    "Started" becomes "Started (Europe/Paris)". Made when a page's layout is, after create_app has
    chosen the zone."""
    return [
        {**c, "headerName": time_header(c["headerName"])} if c.get("field") in fields else c for c in columns
    ]


# Every client-side grid's columns: sorted, resized and filtered by the user, and a header longer than
# its column wraps onto a second line (the header row growing to fit) instead of ending in "…"
# ("Rebalance timeout", "Lag (offsets)"): the fleet's server-side grid does the same (server_grid.py).
GRID_COLUMNS = {
    "sortable": True,
    "resizable": True,
    "filter": True,
    "wrapHeaderText": True,
    "autoHeaderHeight": True,
}

# A grid cell whose long value wraps onto more lines, the row growing to hold it, rather than being
# cut (the look of it: assets/style.css, gs-wrap).
WRAPPED = {"wrapText": True, "autoHeight": True, "cellClass": "gs-wrap"}

QUERY_STORE = "page-query"


def query_store() -> dcc.Store:
    """Where a page puts the query string its controls want in the URL, with the path it is for
    ({"path": ..., "search": ...}); the app copies it to the URL only while that path is shown, so
    an answer that comes back after the user went to another page changes nothing (app.py)."""
    return dcc.Store(id=QUERY_STORE)


def url_note(problems: list[str]) -> html.Div | None:
    """What a page left out of its URL's query string (bad values are ignored, never fatal)."""
    if not problems:
        return None
    return html.Div(
        ["Ignored in this page's URL: ", "; ".join(problems), "."],
        className="banner warn",
        id="url-note",
    )


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
