"""Plotly figures built from the group document and its history. Pure functions: data in, figure
out, so tests and the benchmark can call them without a server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from coordinator_model.document.types import GenerationDoc, MemberDoc, PartitionLag, TimelineSpan
from dashboard.group_doc import members_named
from dashboard.timefmt import fmt_time, time_axis_title, zone_name

# A small template of our own: plotly's stock ones are big, and validating one costs ~0.1 s per figure.
_AXIS = {"gridcolor": "#e8edf3", "zerolinecolor": "#e8edf3", "linecolor": "#cfd8dc", "automargin": True}
pio.templates["groupscope"] = go.layout.Template(
    layout={
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "font": {"family": "system-ui, sans-serif", "size": 12, "color": "#2a3f5f"},
        "xaxis": _AXIS,
        "yaxis": _AXIS,
        "colorway": ["#1565c0", "#ef6c00", "#2e7d32", "#c62828", "#6a1b9a", "#00838f", "#ad1457", "#5d4037"],
        "hoverlabel": {"align": "left"},
    }
)
pio.templates.default = "groupscope"

STATE_COLORS = {
    "Stable": "#2e7d32",
    "PreparingRebalance": "#ef6c00",
    "CompletingRebalance": "#f9a825",
    "Assigning": "#8e24aa",
    "Reconciling": "#1565c0",
    "Empty": "#9e9e9e",
    "Dead": "#212121",
}
STATE_ORDER = list(STATE_COLORS)
CAUSE_COLORS = {
    "group_created": "#1565c0",
    "member_joined": "#2e7d32",
    "member_left": "#6d4c41",
    "session_timeout": "#c62828",
    "poll_timeout": "#ad1457",
    "metadata_change": "#00838f",
    "leader_rejoin": "#f9a825",
    "unknown": "#757575",
}


def iso(ms: int | float | None) -> str | None:
    """A time as a chart takes it: in the display zone (dashboard/timefmt.py), to the millisecond;
    the chart's time axis is titled with the zone."""
    return fmt_time(ms, millis=True) if ms else None


def _layout(fig: go.Figure, title: str, height: int = 320, **kw: Any) -> go.Figure:
    """A chart's common look; `kw` adds to it or replaces a part (a chart's own `legend`)."""
    fig.update_layout(
        title={"text": title, "x": 0.01, "font": {"size": 15}},
        height=height,
        margin={"l": 10, "r": 10, "t": 40, "b": 30},
        template="groupscope",
        **{"legend": {"orientation": "h", "y": -0.2}, **kw},
    )
    return fig


def empty_figure(title: str, message: str, height: int = 220) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, font={"size": 14, "color": "#666"})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, title, height)


def timeline_figure(
    bands: Sequence[TimelineSpan], since: int | None, until: int, view: tuple[int, int] | None = None
) -> go.Figure:
    """Gantt-style state timeline: one row per state, a bar for each period spent in it. ``view``
    narrows the visible x range (the data still runs to ``until``, so zooming out shows it)."""
    shown = []
    for b in bands:
        end = b.end if b.end is not None else until
        if end < (since or end) or b.start > until:
            continue
        start = max(b.start, since) if since is not None else b.start
        shown.append((b.state, start, min(end, until), b))
    if not shown:
        return empty_figure("State timeline", "No state changes in this time range.")
    states = [s for s in STATE_ORDER if any(x[0] == s for x in shown)]
    states += sorted({x[0] for x in shown} - set(states))
    fig = go.Figure()
    for state in states:
        rows = [x for x in shown if x[0] == state]
        fig.add_trace(
            go.Bar(
                name=state,
                y=[state] * len(rows),
                base=[iso(x[1]) for x in rows],
                x=[max(x[2] - x[1], 1) for x in rows],
                orientation="h",
                marker_color=STATE_COLORS.get(state, "#546e7a"),
                # an inferred period (no source saw it begin) is hatched
                marker_pattern_shape=["/" if x[3].inferred else "" for x in rows],
                customdata=[
                    [
                        iso(x[3].start),
                        iso(x[3].end) if x[3].end else "now",
                        _dur(x[2] - x[1]),
                        "<br>inferred (no source saw it begin)" if x[3].inferred else "",
                    ]
                    for x in rows
                ],
                hovertemplate="<b>%{y}</b><br>from %{customdata[0]}<br>to %{customdata[1]}"
                "<br>%{customdata[2]}%{customdata[3]}<extra></extra>",
            )
        )
    fig.update_xaxes(type="date", title=time_axis_title())
    if view is not None:
        fig.update_xaxes(range=[iso(view[0]), iso(view[1])])
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(states)))
    return _layout(fig, "State timeline", 90 + 34 * len(states), barmode="overlay", showlegend=False)


def _dur(ms: int | float | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def generations_figure(
    gens: Sequence[GenerationDoc],
    since: int | None,
    until: int,
    modern: bool = False,
    members: Mapping[str, MemberDoc] | None = None,
) -> go.Figure:
    """One bar per generation (a KIP-848 or share group's: per group epoch, and so named): how long its
    rebalance took, coloured by cause, details on hover. The axis is the generation number itself,
    whose ticks Plotly thins, so 10,000 generations read as well as 10 (as categories, 77 of them
    overlapped and most labels went). A KIP-848, share or streams group's joined and left members
    are said on hover by client id and host with their ids (group_doc.members_named; `members`: the
    group's present ones, for epochs that did not keep who theirs were)."""
    word, title = ("epoch", "Epochs") if modern else ("gen", "Generations")
    shown = [
        g
        for g in gens
        if g.start is None or ((since is None or (g.end or g.start) >= since) and g.start <= until)
    ]
    if not shown:
        return empty_figure(title, "No rebalance in this time range.")
    fig = go.Figure()
    causes = []
    for g in shown:
        if (g.cause or "unknown") not in causes:
            causes.append(g.cause or "unknown")
    for cause in causes:
        rows = [g for g in shown if (g.cause or "unknown") == cause]
        fig.add_trace(
            go.Bar(
                name=cause,
                x=[g.generation for g in rows],
                y=[(g.duration_ms or 0) / 1000 for g in rows],
                width=0.8,
                marker_color=CAUSE_COLORS.get(cause, "#546e7a"),
                customdata=[
                    [
                        iso(g.start),
                        _dur(g.duration_ms) if g.duration_ms is not None else "unknown",
                        _members_hover(g.members_joined, g, members if modern else None),
                        _members_hover(g.members_left, g, members if modern else None),
                        g.protocol or "-",
                        (g.reason or "")[:160] or "-",
                        ", ".join(g.inferred) or "-",
                    ]
                    for g in rows
                ],
                hovertemplate=f"<b>{word} %{{x}}</b> (" + cause + ")<br>started %{customdata[0]}"
                f" ({zone_name()})"
                "<br>rebalance took %{customdata[1]}<br>joined: %{customdata[2]}"
                "<br>left: %{customdata[3]}<br>protocol: %{customdata[4]}"
                "<br>reason: %{customdata[5]}<br>inferred: %{customdata[6]}<extra></extra>",
            )
        )
    numbers = [g.generation for g in shown if g.generation is not None]
    lo, hi = (min(numbers), max(numbers)) if numbers else (0, 0)
    # A few generations must not become a few very wide bars: keep room for at least 12.
    fig.update_xaxes(
        title="group epoch" if modern else "generation",
        tickformat="d",
        range=[lo - 0.5, max(hi, lo + 11) + 0.5],
    )
    fig.update_yaxes(title="rebalance duration (s)")
    # The causes' legend to the right of the bars, titled, not under them as on the other charts:
    # under them it lay over the axis title "generation" (seen with 300 generations, issue 34), and a
    # group with many causes would wrap it further down over the tick labels.
    return _layout(
        fig,
        f"{title} ({len(shown)})",
        320,
        barmode="overlay",
        legend={
            "orientation": "v",
            "x": 1.01,
            "xanchor": "left",
            "y": 1,
            "yanchor": "top",
            "title": {"text": "cause"},
        },
    )


def _members_hover(ids: Sequence[str], g: GenerationDoc, members: Mapping[str, MemberDoc] | None) -> str:
    """A generation's joined or left members on its bar's hover: a classic group's by id (it starts
    with the client id), a modern group's (`members` given) by client id and host with its id."""
    if not ids:
        return "-"
    if members is None:
        return ", ".join(ids)
    return members_named(ids, g, members)[1]


def _short(member_id: str, n: int = 28) -> str:
    return member_id if len(member_id) <= n else member_id[: n - 1] + "…"


def member_label(member_id: str, client_id: str | None, n: int = 28) -> str:
    """A member as a person reads it: a classic member's id starts with its client id already; a
    KIP-848, share or streams member's is an opaque UUID, so its client id leads, with the id's first
    characters to tell two members of one client apart."""
    if not client_id or member_id.startswith(client_id):
        return _short(member_id, n)
    return f"{_short(client_id, n - 8)} ({member_id[:6]}…)"


# A lag heatmap writes each cell's lag in it up to this many cells; past that the numbers would not
# fit in their cells, and the colour scale and the hover tell the lag.
MAX_LABELLED_CELLS = 400
# Each cell's lag as it is written in the cell: d3's SI format to 3 digits, trailing zeros trimmed
# (950, 1.2k, 12.3k, 4.56M).
CELL_TEXT = "%{z:.3~s}"
LAG_COLORBAR_TITLE = "lag (offsets)"


def _lag_heatmap(z: list[list[float | None]], hovertemplate: str) -> go.Heatmap:
    """A lag heatmap's trace (its arrays set after validation, by the caller): blue when caught up,
    red at the worst lag shown, empty where nothing is owned or known; each cell's lag written in
    it while there are few enough cells to read (MAX_LABELLED_CELLS), the hover always."""
    cells = len(z) * max((len(row) for row in z), default=0)
    small = cells <= 5_000  # cell gaps slow big ones down
    zmax = max([v for row in z for v in row if v is not None] + [1.0])
    colorbar: dict[str, Any] = {"title": {"text": LAG_COLORBAR_TITLE, "side": "right"}}
    if zmax <= 5:
        colorbar["dtick"] = 1  # whole offsets: no tick at half an offset
    return go.Heatmap(
        colorscale=[[0, "#90caf9"], [0.35, "#ffe082"], [1, "#c62828"]],
        zmin=0,
        zmax=zmax,
        colorbar=colorbar,
        texttemplate=CELL_TEXT if cells <= MAX_LABELLED_CELLS else "",
        textfont={"size": 11},
        hoverongaps=False,
        xgap=1 if small else 0,
        ygap=1 if small else 0,
        hovertemplate=hovertemplate,
    )


def assignment_heatmap(
    members: Sequence[MemberDoc],
    lag: Sequence[PartitionLag],
    title: str = "Assignment (member × partition, colour = lag)",
    assignment: Mapping[str, Sequence[tuple[str, int]]] | None = None,
    height: int | None = None,
) -> go.Figure | dict[str, Any]:
    """Member x partition matrix; a cell is filled where the member owns the partition, coloured by
    the partition's lag in offsets. ``assignment`` overrides the members' current one (what-if).

    Returned as a plain figure dict: plotly's validation of 100 x 1,000 cells costs a second, and the
    arrays are ours, already valid."""
    assign = (
        {k: list(v) for k, v in assignment.items()}
        if assignment is not None
        else {m.member_id: list(m.assignment) for m in members}
    )
    tps = sorted({tuple(tp) for v in assign.values() for tp in v} | {(r.topic, r.partition) for r in lag})
    if not assign or not tps:
        return empty_figure(title, "No members or partitions to show.")
    lag_by = {(r.topic, r.partition): r.lag for r in lag}
    col = {tp: i for i, tp in enumerate(tps)}
    ids = list(assign)
    clients = {m.member_id: m.client_id for m in members}
    z: list[list[float | None]] = [[None] * len(tps) for _ in ids]
    for i, mid in enumerate(ids):
        for tp in assign[mid]:
            tp = (tp[0], int(tp[1]))
            if tp in col:
                z[i][col[tp]] = float(lag_by.get(tp) or 0)
    fig = go.Figure(_lag_heatmap(z, "member %{y}<br>partition %{x}<br>lag %{z}<extra></extra>"))
    labelled = len(tps) <= 60
    # Room below the cells for the slanted partition names (about 4.5 px of height per character at
    # -45°): without it they were cut off and the axis title sat on them, and a two-member chart's
    # cells and colour bar were squeezed to a strip.
    label_room = min(220, int(4.5 * max(len(f"{t}-{p}") for t, p in tps))) if labelled else 0
    fig.update_xaxes(
        title={"text": "partition (topic-partition)", "standoff": 8},
        showticklabels=labelled,
        tickangle=-45,
        type="category",
        automargin=True,
    )
    # Full member ids on the axis (truncated ones could collide and merge rows), short tick labels.
    fig.update_yaxes(
        title="member",
        showticklabels=len(ids) <= 60,
        autorange="reversed",
        type="category",
        tickmode="array",
        tickvals=ids if len(ids) <= 60 else None,
        ticktext=[member_label(m, clients.get(m)) for m in ids] if len(ids) <= 60 else None,
    )
    out = _layout(fig, title, height or max(240, min(160 + 24 * len(ids), 700)) + label_room).to_plotly_json()
    out["data"][0].update(z=z, x=[f"{t}-{p}" for t, p in tps], y=ids)
    return out


def lag_over_time_figure(
    series: Mapping[str, Sequence[tuple[int, float | None]]], metric: str, by: str
) -> go.Figure:
    """Lines of lag (offsets or seconds, or committed offsets) over time, one per partition/member."""
    label = {"lag": "lag (offsets)", "lag_seconds": "lag (seconds)", "committed": "committed offset"}[metric]
    title = f"{label.capitalize()} over time, per {by}"
    if not series:
        return empty_figure(title, "No lag history in this time range.")
    fig = go.Figure()
    for name, points in sorted(series.items()):
        fig.add_trace(
            go.Scattergl(
                name=_short(name, 40),
                x=[iso(t) for t, _ in points],
                y=[v for _, v in points],
                mode="lines",
                hovertemplate=f"{name}<br>%{{x}}<br>{label} %{{y}}<extra></extra>",
            )
        )
    fig.update_xaxes(type="date", title=time_axis_title())
    fig.update_yaxes(title=label, rangemode="tozero")
    return _layout(fig, title, 340, showlegend=len(series) <= 20)


def per_member_bars(
    rows: Sequence[tuple[str, int, float]], title: str, value_label: str = "lag"
) -> go.Figure:
    """Partitions and lag per member (what-if results)."""
    if not rows:
        return empty_figure(title, "No members.")
    fig = go.Figure()
    # Shortened names can coincide (members of one client id): Plotly would stack them in one
    # category, so each keeps a number when it does; the whole member id is on hover.
    names: list[str] = []
    for r in rows:
        short = _short(r[0], 20)
        names.append(short if short not in names else f"{short} #{len(names) + 1}")
    full = [r[0] for r in rows]
    hover = "%{customdata}<br>%{fullData.name}: %{y:,}<extra></extra>"
    fig.add_trace(
        go.Bar(
            name="partitions",
            x=names,
            y=[r[1] for r in rows],
            marker_color="#1565c0",
            offsetgroup="a",
            customdata=full,
            hovertemplate=hover,
        )
    )
    fig.add_trace(
        go.Bar(
            name=value_label,
            x=names,
            y=[r[2] for r in rows],
            marker_color="#ef6c00",
            yaxis="y2",
            offsetgroup="b",
            customdata=full,
            hovertemplate=hover,
        )
    )
    fig.update_layout(
        # partitions are counted: whole ticks only (1 partition a member read 0, 0.2, ... 1)
        yaxis={"title": "partitions", "rangemode": "tozero", **_whole_ticks(max(r[1] for r in rows))},
        # its own ticks, not the partitions axis' (an overlaying axis follows them by default)
        yaxis2={
            "title": value_label,
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "tickmode": "auto",
            "rangemode": "tozero",
        },
        barmode="group",
    )
    return _layout(fig, title, 300)


def _whole_ticks(top: int) -> dict[str, Any]:
    """Axis settings for a count: a tick per unit up to 10, else Plotly's own, shown as integers."""
    return {"dtick": 1, "tickformat": ",d"} if top <= 10 else {"tickformat": ",d"}


def fleet_state_figure(counts: Mapping[str, int]) -> go.Figure:
    states = [s for s in STATE_ORDER if counts.get(s)] + sorted(set(counts) - set(STATE_ORDER))
    if not states:
        return empty_figure("Groups by state", "No groups yet.")
    fig = go.Figure(
        go.Bar(
            x=[counts[s] for s in states],
            y=states,
            orientation="h",
            marker_color=[STATE_COLORS.get(s, "#546e7a") for s in states],
            text=[counts[s] for s in states],
            textposition="auto",
        )
    )
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, "Groups by state", 60 + 32 * len(states), showlegend=False)


def topic_lag_heatmap(
    groups: Sequence[str], partitions: Mapping[str, Sequence[Sequence[Any]]], title: str
) -> go.Figure | dict[str, Any]:
    """Partition x group matrix of one topic: a cell per partition the group commits to or owns,
    coloured by its lag in offsets (grey where the lag is not known yet). ``partitions`` is the topic
    index's rows per group: [partition, committed, end offset, lag, lag seconds, member]."""
    parts = sorted({int(r[0]) for g in groups for r in partitions.get(g, [])})
    if not groups or not parts:
        return empty_figure(title, "No partitions of this topic are committed to or assigned.")
    col = {p: i for i, p in enumerate(parts)}
    z: list[list[float | None]] = [[None] * len(parts) for _ in groups]
    text: list[list[str]] = [[""] * len(parts) for _ in groups]
    for i, g in enumerate(groups):
        for p, committed, end, lag, secs, member in partitions.get(g, []):
            j = col[int(p)]
            z[i][j] = float(lag) if lag is not None else None
            known = "unknown" if lag is None else f"{lag}" + ("" if secs is None else f" ({secs:.1f} s)")
            text[i][j] = (
                f"committed {'-' if committed is None else committed}, end {'-' if end is None else end}"
                f"<br>lag {known}<br>owner {member or 'none'}"
            )
    fig = go.Figure(_lag_heatmap(z, "group %{y}<br>partition %{x}<br>%{text}<extra></extra>"))
    fig.update_xaxes(title="partition", type="category", showticklabels=len(parts) <= 120)
    fig.update_yaxes(
        title="group",
        autorange="reversed",
        type="category",
        showticklabels=len(groups) <= 60,
        tickmode="array",
        tickvals=list(groups) if len(groups) <= 60 else None,
        ticktext=[_short(g, 32) for g in groups] if len(groups) <= 60 else None,
    )
    out = _layout(fig, title, max(240, min(160 + 22 * len(groups), 900))).to_plotly_json()
    # plotly's validation of 200 x 1,000 cells costs seconds; the arrays are ours, already valid
    out["data"][0].update(z=z, text=text, x=[str(p) for p in parts], y=list(groups))
    return out
