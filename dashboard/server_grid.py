"""A grid paged, sorted and filtered on the server (the fleet's groups, the topics): AG Grid's
infinite row model asks for one block of rows at a time with its sort and filter model, a callback
answers from Redis's sorted-set indexes, and every live tick re-reads the blocks in view without
losing the page or the scroll position."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dash_ag_grid as dag
from dash import ClientsideFunction, Dash, Input, Output, State, dcc, no_update

from dashboard.components import QUERY_STORE
from dashboard.data import Unavailable
from dashboard.urls import build_query


def server_grid(id_: str, columns: list[dict[str, Any]], row_id: str, **options: Any) -> dag.AgGrid:
    """The grid: 50 rows a page (25 to 500), blocks of 50, at most two requests in flight."""
    return dag.AgGrid(
        id=id_,
        columnDefs=columns,
        # a header longer than its column wraps to a second line, the header row growing to fit,
        # rather than end in "…" (the fleet's "Last change (Europe/Paris)")
        defaultColDef={
            "sortable": True,
            "resizable": True,
            "suppressHeaderMenuButton": False,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        rowModelType="infinite",
        dashGridOptions={
            "pagination": True,
            "paginationPageSize": 50,
            "paginationPageSizeSelector": [25, 50, 100, 500],
            "cacheBlockSize": 50,
            "maxBlocksInCache": 20,
            "rowBuffer": 0,
            "maxConcurrentDatasourceRequests": 2,
            "infiniteInitialRowCount": 1,
            "getRowId": {"function": f"params.data.{row_id}"},
            **options,
        },
        style={"height": "620px"},
        className="ag-theme-alpine",
    )


def register_server_grid(
    app: Dash,
    grid_id: str,
    count_id: str,
    page: Callable[[Mapping[str, Any] | None], dict[str, Any]],
    noun: str,
) -> None:
    """The grid's rows callback (`page(request)` -> getRowsResponse; its count shown in `count_id`
    as "N matching <noun>") and its live refresh."""

    @app.callback(
        Output(grid_id, "getRowsResponse"),
        Output(count_id, "children"),
        Input(grid_id, "getRowsRequest"),
        prevent_initial_call=True,
    )
    def rows(request: dict[str, Any] | None) -> tuple[Any, Any]:
        if not request:
            return no_update, no_update
        try:
            resp = page(request)
        except Unavailable:
            return {"rowData": [], "rowCount": 0}, "Redis is unreachable"
        return resp, f"{resp['rowCount']:,} matching {noun}"

    app.clientside_callback(
        ClientsideFunction(namespace="groupscope", function_name="refreshGrid"),
        Output(grid_id, "id"),
        Input("tick", "n_intervals"),
        State(grid_id, "id"),
        prevent_initial_call=True,
    )


# ---- the grid's filters and sort in the page's URL -----------------------------------------------------
def text_filter(words: list[str], type_: str = "equals") -> dict[str, Any] | None:
    """A column's filter model entry keeping rows whose value is (`type_`: or contains) any of
    `words`; None for no filter."""
    conds = [{"filterType": "text", "type": type_, "filter": w} for w in words]
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else {"filterType": "text", "operator": "OR", "conditions": conds}


def filter_words(model: Mapping[str, Any] | None, column: str, type_: str = "equals") -> list[str]:
    """The words of one column's filter (one condition, or an OR of several) of type `type_`: the
    inverse of text_filter. Anything else the column's filter menu allows (an AND) gives none."""
    entry = (model or {}).get(column)
    if not isinstance(entry, Mapping):
        return []
    if "conditions" in entry:
        if entry.get("operator") != "OR":
            return []
        conds = entry["conditions"]
    else:
        conds = [entry]
    return [
        str(c["filter"])
        for c in conds
        if isinstance(c, Mapping) and c.get("type") == type_ and c.get("filter") not in (None, "")
    ]


def grid_sort(sort_model: Any) -> tuple[str, str] | None:
    """The (column, "asc" | "desc") a grid sorts by (the first of its sort model), or None."""
    if isinstance(sort_model, list) and sort_model and isinstance(sort_model[0], Mapping):
        col, how = sort_model[0].get("colId"), sort_model[0].get("sort")
        if isinstance(col, str) and how in ("asc", "desc"):
            return col, how
    return None


def initial_state(
    filter_model: Mapping[str, Any], sort: tuple[str, str] | None, columns: list[dict[str, Any]]
) -> dict[str, Any]:
    """AG Grid's initialState (in dashGridOptions) of a grid made with this filter and sort, so its
    first block is already asked for them (a page opened from a shared URL). A sort in the initial
    state makes AG Grid apply a whole column state, which shows every column not said hidden there
    and gives every column not sized there its default fixed width (flex lost: the columns no
    longer fit the grid, the last ones out of view): `columns`' hidden ones and sizes are said
    again."""
    state: dict[str, Any] = {}
    if filter_model:
        state["filter"] = {"filterModel": dict(filter_model)}
    if sort is not None:
        state["sort"] = {"sortModel": [{"colId": sort[0], "sort": sort[1]}]}
        state["columnVisibility"] = {"hiddenColIds": [c["field"] for c in columns if c.get("hide")]}
        sizes = [
            {"colId": c["field"], **{k: c[k] for k in ("flex", "width") if k in c}}
            for c in columns
            if "flex" in c or "width" in c
        ]
        if sizes:
            state["columnSizing"] = {"columnSizingModel": sizes}
    return {"initialState": state} if state else {}


def url_store(grid_id: str) -> dcc.Store:
    """Holds the filter and sort of the grid's last block request (register_grid_url); in the page's
    layout beside the grid."""
    return dcc.Store(id=f"{grid_id}-url-state")


def register_grid_url(
    app: Dash,
    grid_id: str,
    page: str,
    values: Callable[[Mapping[str, Any], Any, str | None], Mapping[str, Any]],
) -> None:
    """Keep the page's query string (dashboard/urls.py, `page`'s parameters) in step with the grid's
    filter and sort, whichever control changed them: each block request's filter and sort go to the
    url_store (in the browser, only when they changed: scrolling and the live tick ask for blocks
    too), and from there `values(filter_model, sort_model, pathname)` to the page's query store,
    which app.py copies to the URL."""
    store = f"{grid_id}-url-state"
    app.clientside_callback(
        ClientsideFunction(namespace="groupscope", function_name="gridUrlState"),
        Output(store, "data"),
        Input(grid_id, "getRowsRequest"),
        State(store, "data"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output(QUERY_STORE, "data", allow_duplicate=True),
        Input(store, "data"),
        State("url", "pathname"),
        prevent_initial_call=True,
    )
    def to_url(state: Mapping[str, Any] | None, path: str | None) -> Any:
        if not state:
            return no_update
        search = build_query(page, values(state.get("filterModel") or {}, state.get("sortModel"), path))
        # the grid's first filter and sort are the URL's it was made from: restated, not a change
        return {"path": path, "search": search, "replace": bool(state.get("first"))}
