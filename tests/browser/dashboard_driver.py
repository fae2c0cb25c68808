"""Driving the dashboard in headless Chromium: waiting for the live page, reading its text and its
grids (through AG Grid's own API), screenshots, and a dashboard served on a thread of the test."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def wait_for(fn: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            last = fn()
            if last:
                return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last value {last!r})")


def text(driver: Any, css: str) -> str:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    # Dash re-renders on every refresh: an element found a moment ago may be replaced before it is
    # read. Find it again then (a few times), rather than fail on the page's own liveliness.
    for _ in range(4):
        try:
            return driver.find_element(By.CSS_SELECTOR, css).text
        except StaleElementReferenceException:
            time.sleep(0.1)
    return driver.find_element(By.CSS_SELECTOR, css).text


def grid_cells(driver: Any, grid_id: str, col: str) -> list[Any]:
    """One column of every row the grid holds, in row order, through AG Grid's own API (the DOM only
    has the rows in view)."""
    return driver.execute_script(
        "const api = dash_ag_grid.getApi(arguments[0]); const out = [];"
        "api.forEachNode(n => { if (n.data) out.push(n.data[arguments[1]]); });"
        "return out;",
        grid_id,
        col,
    )


def unreadable_headers(driver: Any, grid_id: str) -> list[str]:
    """The headers of a grid's shown columns a user cannot read whole, each with why: its text cut
    (an ellipsis, wrapped lines beyond the header's height, a word broken over two lines), its cell
    reaching past the grid's
    visible edge, or not drawn at all (AG Grid draws only the columns in view: one to the right
    of a scrolled grid). Empty when every header reads."""
    return driver.execute_script(
        r"""
        const api = dash_ag_grid.getApi(arguments[0]);
        const root = document.getElementById(arguments[0]).querySelector('.ag-root-wrapper');
        const edge = root.querySelector('.ag-header').getBoundingClientRect();
        const out = [];
        for (const col of api.getAllDisplayedColumns()) {
          const name = col.getColDef().headerName;
          const cell = root.querySelector(`.ag-header-cell[col-id="${col.getColId()}"]`);
          if (!cell) { out.push(name + ': not drawn (out of view)'); continue; }
          const box = cell.getBoundingClientRect();
          if (box.left < edge.left - 1 || box.right > edge.right + 1) {
            out.push(name + ': past the edge of the grid'); continue;
          }
          const label = cell.querySelector('.ag-header-cell-text');
          if (label.scrollWidth > label.clientWidth + 1 || label.scrollHeight > label.clientHeight + 1) {
            out.push(name + ': text cut'); continue;
          }
          const text = label.getBoundingClientRect();
          if (text.right > box.right + 1 || text.bottom > box.bottom + 1) {
            out.push(name + ': text cut'); continue;
          }
          // a header may wrap between its words, not inside one ("Memb" over "ers")
          const pen = document.createElement('canvas').getContext('2d');
          pen.font = getComputedStyle(label).font;
          const long = name.split(/\s+/).find(w => pen.measureText(w).width > label.clientWidth + 0.5);
          if (long) { out.push(name + ': "' + long + '" broken over two lines'); }
        }
        return out;
        """,
        grid_id,
    )


def chart_problems(driver: Any, graph_id: str, most_labels: int = 30) -> list[str]:
    """What keeps a drawn Plotly chart (a dcc.Graph's) from reading, each said in a few words: an
    axis with no tick labels, or more than `most_labels` (not thinned), two tick labels overlapping,
    a label, axis title or the legend cut at the chart's edge, an axis title or the legend over the
    tick labels. Empty when the chart reads."""
    return driver.execute_script(
        r"""
        const root = document.querySelector('#' + arguments[0] + ' .js-plotly-plot');
        const most = arguments[1];
        const edge = root.querySelector('.main-svg').getBoundingClientRect();
        const shown = sel => [...root.querySelectorAll(sel)]
          .filter(e => e.textContent.trim() !== '' && e.getBoundingClientRect().width > 0)
          .map(e => ({t: e.textContent.trim(), r: e.getBoundingClientRect()}));
        const over = (a, b) => a.r.left < b.r.right - 1 && b.r.left < a.r.right - 1
          && a.r.top < b.r.bottom - 1 && b.r.top < a.r.bottom - 1;
        const out = [];
        const ticks = {x: shown('.xtick text'), y: shown('.ytick text')};
        for (const [axis, labels] of Object.entries(ticks)) {
          if (labels.length === 0) { out.push(axis + ' axis: no labels'); }
          if (labels.length > most) { out.push(axis + ' axis: ' + labels.length + ' labels, not thinned'); }
          for (let i = 0; i < labels.length; i++) {
            for (let j = i + 1; j < labels.length; j++) {
              if (over(labels[i], labels[j])) {
                out.push(axis + ' labels ' + labels[i].t + ' and ' + labels[j].t + ' overlap');
              }
            }
          }
        }
        const titles = shown('.g-xtitle text, .g-ytitle text, .gtitle');
        const legend = shown('.legend .traces text');
        for (const e of [...ticks.x, ...ticks.y, ...titles, ...legend]) {
          if (e.r.left < edge.left - 1 || e.r.right > edge.right + 1 || e.r.top < edge.top - 1
              || e.r.bottom > edge.bottom + 1) {
            out.push("'" + e.t + "' cut at the chart's edge");
          }
        }
        for (const e of [...titles, ...legend]) {
          for (const l of [...ticks.x, ...ticks.y]) {
            if (over(e, l)) { out.push("'" + e.t + "' over the label " + l.t); }
          }
        }
        for (let i = 0; i < legend.length; i++) {
          for (const t of titles) {
            if (over(legend[i], t)) { out.push("legend '" + legend[i].t + "' over '" + t.t + "'"); }
          }
        }
        return out;
        """,
        graph_id,
        most_labels,
    )


def shoot(driver: Any, artifacts_dir: Path, name: str) -> Path:
    path = artifacts_dir / f"dashboard-{name}.png"
    driver.save_screenshot(str(path))
    return path


def serve_in_thread(redis_url: str, **settings: Any) -> tuple[str, Any]:
    """The dashboard app on a werkzeug thread (for tests that need a dashboard of their own)."""
    import logging
    import threading

    from werkzeug.serving import make_server

    from collectors.config import Settings
    from collectors.demo.servers.processes import free_port
    from dashboard.app import create_app

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    conf = Settings(redis_url=redis_url, **{"dashboard_refresh_s": 2, **settings})
    app = create_app(conf, background_mode="celery")
    port = free_port()
    server = make_server("127.0.0.1", port, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{port}", server


@contextlib.contextmanager
def chromium(width: int, height: int) -> Iterator[Any]:
    """A headless Chromium of that window size for a module's browser tests, closed after them."""
    import shutil

    from collectors.demo.servers.chromium import headless_chromium

    driver, profile = headless_chromium(width, height)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def task_ids_said(cell: str | None) -> list[str]:
    """The task ids ("<subtopology>_<partition>") a members grid's tasks cell says, of every kind:
    "active 0:0-2 1:5; standby 2:0,3" -> 0_0 0_1 0_2 1_5 2_0 2_3 (the inverse of
    dashboard.group_doc.fmt_tasks, written apart from it so a test reads the cell as a user would)."""
    ids: list[str] = []
    for said in (cell or "").split(";"):
        for word in said.split()[1:]:  # after the kind (active, standby, warm-up)
            sub, _, parts = word.rpartition(":")
            for part in parts.split(","):
                first, _, last = part.partition("-")
                ids += [f"{sub}_{p}" for p in range(int(first), int(last or first) + 1)]
    return ids


def grid_scroll(driver: Any, grid_id: str) -> list[int]:
    """[scrollWidth, clientWidth] of a grid's viewport of columns: the first above the second is a
    grid read only by scrolling it sideways."""
    return driver.execute_script(
        "const v = document.querySelector('#' + arguments[0] + ' .ag-center-cols-viewport');"
        "return [v.scrollWidth, v.clientWidth];",
        grid_id,
    )
