"""A grid paged, sorted and filtered on the server (the fleet's groups, the topics): AG Grid's
infinite row model asks for one block of rows at a time with its sort and filter model, a callback
answers from Redis's sorted-set indexes, and every live tick re-reads the blocks in view without
losing the page or the scroll position."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dash_ag_grid as dag
from dash import ClientsideFunction, Dash, Input, Output, State, no_update

from dashboard.data import Unavailable


def server_grid(id_: str, columns: list[dict[str, Any]], row_id: str, **options: Any) -> dag.AgGrid:
    """The grid: 50 rows a page (25 to 500), blocks of 50, at most two requests in flight."""
    return dag.AgGrid(
        id=id_,
        columnDefs=columns,
        defaultColDef={"sortable": True, "resizable": True, "suppressHeaderMenuButton": False},
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
