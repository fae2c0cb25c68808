"""Screenshots of a running demo's dashboard for the README (docs/img/).

    python -m collectors.demo.screenshots --demo --clusters 2 --out docs/img
    # or, against a demo already running (`groupscope demo --no-browser` prints its URL):
    python -m collectors.demo.screenshots http://HOST:PORT/ --cluster east --out docs/img

With --demo it starts `groupscope demo --clusters N` itself, lets the workload run --warm-up seconds
(every scripted scenario through a cycle, so charts have history and alerts have fired), takes the
pages and stops the demo. Headless Chromium through Debian's chromedriver, at the browser tests'
1,400 px. Each page of `SHOTS` is taken once what it is there to show is on screen: its texts, its
charts drawn with data, its grids with rows (a page caught before its data arrived shows empty
charts). The fleet, topics and alerts pages show every cluster; a group's or topic's page is the
first cluster's (--cluster). PNGs are re-encoded with a reduced palette when they exceed --max-kb
and Pillow is there, so the repository stays small.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from collectors.demo.servers.chromium import headless_chromium

WIDTH = 1400  # the browser tests' window: the pages are laid out for it


def _wait_text(driver: Any, needles: tuple[str, ...], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = driver.page_source
        if all(n in body for n in needles):
            return True
        time.sleep(1.0)
    return False


def save_png(png: bytes, path: Path, max_kb: int) -> int:
    """Write `png`, quantised (fewer colours) when it is bigger than `max_kb`. Returns the size."""
    if len(png) > max_kb * 1024:
        try:
            from PIL import Image

            img = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=128)
            buf = io.BytesIO()
            img.save(buf, format="PNG", optimize=True)
            png = buf.getvalue()
        except ImportError:  # no Pillow: keep the original
            pass
    path.write_bytes(png)
    return len(png)


@dataclass(frozen=True)
class Shot:
    """A page to take. `path` is under the dashboard, "{c}" standing for the cluster's part of it
    ("/clusters/east", or "" on a demo of one cluster). It is taken once `needles` are in the page,
    every graph of `graphs` has drawn data, every grid of `rows` has at least that many rows, a
    row of `positive`'s grid has its field above 0 and `when` is true (waited for up to `patience` s:
    the demo's scenarios go round every 100 s), scrolled to `scroll_to` (None: the page's top), in a window
    `height` px high."""

    path: str
    file: str
    needles: tuple[str, ...]
    graphs: tuple[str, ...] = ()
    rows: tuple[tuple[str, int], ...] = ()
    positive: tuple[str, str] | None = None  # (grid id, field)
    when: str | None = None  # a JavaScript expression that must be true too
    patience: float = 60
    scroll_to: str | None = None
    height: int = 1500
    typed: tuple[tuple[str, str], ...] = ()  # (input id, text) typed in once the page shows
    press: str | None = None  # a button clicked after typing, then `ready` waited for to fill
    ready: str | None = None


# The pages the README shows, in its order: the fleet of every cluster; a classic group's rebalances
# (state timeline, generations and the broker's reasons); a KIP-848 group's epochs; a group's
# members; the Kafka Streams application (its topology, lag per task and members with their tasks,
# both instances in); the share group's lag (caught while it has some); the alerts; a what-if; the
# topics of every cluster and one topic, its lag growing.
SHOTS = (
    # not in the 5 s between two rounds of the scripted scenarios, when most of a cluster's groups
    # are Empty at once
    Shot(
        "/",
        "demo-fleet.png",
        ("demo-coop", "demo-kip848"),
        rows=(("fleet-grid", 11),),
        when="+((document.getElementById('fleet-count-Empty') || {}).innerText || 0) <= 2",
        patience=150,
        height=1100,
    ),
    Shot(
        "{c}/groups/demo-storm",
        "demo-group.png",
        ("demo-storm", "Generation"),
        graphs=("group-timeline", "group-generations"),
        # its members in: not in the seconds between two rounds, when the group is Empty
        rows=(("group-generations-table", 1), ("group-members", 2)),
        patience=150,
    ),
    Shot(
        "{c}/groups/demo-kip848",
        "demo-kip848.png",
        ("demo-kip848", "Epochs"),
        graphs=("group-timeline", "group-generations"),
        rows=(("group-members", 2),),
        patience=150,
    ),
    Shot(
        "{c}/groups/demo-scaleout",
        "demo-members.png",
        ("demo-scaleout", "Members"),
        graphs=("group-heatmap", "group-lag"),
        rows=(("group-members", 2), ("group-partitions", 1)),
        patience=150,
        scroll_to="group-members",
    ),
    Shot(
        "{c}/groups/demo-streams",
        "demo-streams.png",
        ("demo-streams", "Lag per task"),
        graphs=("group-heatmap",),
        rows=(("group-members", 2),),
        patience=150,
        scroll_to="group-kip848",
    ),
    Shot(
        "{c}/groups/demo-share",
        "demo-share.png",
        ("demo-share", "share-1", "share-2"),
        graphs=("group-heatmap", "group-lag"),
        rows=(("group-members", 2),),
        positive=("group-partitions", "lag"),
        patience=150,
        scroll_to="group-members",
    ),
    Shot("/alerts", "demo-alerts.png", ("demo-", "rebalance_storm"), height=1100),
    Shot(
        "{c}/groups/demo-steady/whatif",
        "demo-whatif.png",
        ("demo-steady", "Compare"),
        typed=(("wi-add_members", "1"),),
        press="wi-run",
        ready="wi-results",
        height=1650,  # down to the side-by-side partitions and lag per member
    ),
    Shot(
        "/topics", "demo-topics.png", ("demo-clicks", "demo-jobs"), rows=(("topics-grid", 10),), height=1100
    ),
    Shot(
        "{c}/topics/demo-slow",
        "demo-topic.png",
        ("demo-slow",),
        graphs=("topic-heatmap", "topic-lag"),
        rows=(("topic-groups", 1),),
        positive=("topic-groups", "lag"),
        patience=150,
        height=1300,  # down to the lag history's time axis and legend
    ),
)

# Whether each graph has drawn a trace with points, each grid has its rows (AG Grid's own count)
# and, when asked, a row of a grid has a field above 0 and the shot's own condition holds.
_READY_JS = """
const [graphs, rows, positive, when] = arguments;
const drawn = id => {
  const el = document.querySelector('#' + id + ' .js-plotly-plot');
  return !!(el && el.data && el.data.some(t => ['x', 'y', 'z'].some(k => t[k] && t[k].length)));
};
const api = id => { try { return dash_ag_grid.getApi(id); } catch (e) { return null; } };
const filled = ([id, n]) => { const a = api(id); return !!a && a.getDisplayedRowCount() >= n; };
const above = ([id, field]) => {
  const a = api(id); let yes = false;
  if (a) a.forEachNode(r => { if (r.data && r.data[field] > 0) yes = true; });
  return yes;
};
return graphs.every(drawn) && rows.every(filled) && (!positive || above(positive))
  && (!when || !!(new Function('return (' + when + ');'))());
"""


def _ready(driver: Any, shot: Shot) -> bool:
    with contextlib.suppress(Exception):
        return bool(
            driver.execute_script(_READY_JS, list(shot.graphs), list(shot.rows), shot.positive, shot.when)
        )
    return False


def _wait_ready(driver: Any, shot: Shot) -> bool:
    """Wait for the shot's page to show what it is for, and to still show it 2 s later (the page
    refreshes every 5 s: a member that left, or a lag drained, would be gone from the picture)."""
    deadline = time.monotonic() + shot.patience
    while time.monotonic() < deadline:
        if _ready(driver, shot):
            time.sleep(2)  # the last chart's transitions, and a grid's column widths, settled
            if _ready(driver, shot):
                return True
        time.sleep(1.0)
    return False


def take(
    base_url: str,
    out_dir: Path,
    cluster: str | None = None,
    shots: tuple[Shot, ...] = SHOTS,
    max_kb: int = 400,
) -> list[Path]:
    """Take `shots` of the dashboard at `base_url`, a group's or topic's page in `cluster` (None: the
    demo's only one). A page that never shows what it is there for is said, and taken as it is."""
    out_dir.mkdir(parents=True, exist_ok=True)
    base = base_url.rstrip("/")
    root = "" if cluster is None else "/clusters/" + quote(cluster, safe="")
    driver, profile = headless_chromium(WIDTH, 1000, prefix="groupscope-shots-")
    saved: list[Path] = []
    try:
        for shot in shots:
            driver.set_window_size(WIDTH, shot.height)
            # asked again while it does not show: a page asked for while the dashboard's worker was
            # still starting can stay "Loading..." (its scripts refused), whatever the wait
            for _ in range(4):
                driver.get(base + shot.path.replace("{c}", root))
                if _wait_text(driver, shot.needles, 30):
                    break
            else:
                print(f"warning: {shot.path} did not show {', '.join(shot.needles)} in time")
            if not _wait_ready(driver, shot):
                print(
                    f"warning: {shot.path}: {shot.graphs} not drawn, or {shot.rows} {shot.positive} not shown"
                )
            if shot.typed or shot.press:
                _act(driver, shot)
            if shot.scroll_to:  # once the page is filled in: its cards move as they fill
                driver.execute_script(
                    "const el = document.getElementById(arguments[0]); if (el) el.scrollIntoView();",
                    shot.scroll_to,
                )
                time.sleep(1)
            path = out_dir / shot.file
            print(path, save_png(driver.get_screenshot_as_png(), path, max_kb), "bytes")
            saved.append(path)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return saved


def _act(driver: Any, shot: Shot) -> None:
    """Type into the shot's inputs, press its button, and wait (up to 60 s) for its result to fill."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    for element, text in shot.typed:
        box = driver.find_element(By.ID, element)
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(text)
    if shot.press:
        driver.find_element(By.ID, shot.press).click()
    if shot.ready:
        deadline = time.monotonic() + 60
        js = "const el = document.getElementById(arguments[0]); return el ? el.innerText.length : 0;"
        while time.monotonic() < deadline and (driver.execute_script(js, shot.ready) or 0) < 40:
            time.sleep(1)
        time.sleep(2)  # its charts drawn


@contextlib.contextmanager
def running_demo(clusters: int, warm_up_s: float) -> Any:
    """`groupscope demo --clusters N` started here, yielding its dashboard's URL once its workload has
    run `warm_up_s` seconds; stopped as Ctrl-C stops it (its whole process group killed if that
    does not end it)."""
    logs = tempfile.mkdtemp(prefix="groupscope-shots-demo-")
    argv = [sys.executable, "-m", "collectors.cli.main", "demo", "--no-browser", "--logs-dir", logs]
    argv += ["--clusters", str(clusters), "--duration", str(int(warm_up_s + 900))]
    out = open(Path(logs) / "demo.out", "w+")  # noqa: SIM115 (closed below, after the demo)
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = None
        deadline = time.monotonic() + 300
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(2)
            found = re.search(r"dashboard on (http://\S+)", (Path(logs) / "demo.out").read_text())
            url = found.group(1) if found else None
        if url is None:
            raise SystemExit(f"the demo did not start its dashboard (its output: {logs}/demo.out)")
        print(f"demo dashboard on {url}; its workload runs {warm_up_s:.0f} s before the pages are taken")
        time.sleep(warm_up_s)
        yield url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        out.close()
        print(f"demo stopped (its logs: {logs})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", nargs="?", help="the dashboard URL a running demo printed (or --demo)")
    ap.add_argument("--demo", action="store_true", help="start `groupscope demo` and stop it after")
    ap.add_argument("--clusters", type=int, default=2, help="--demo: its clusters (east, west, ...)")
    ap.add_argument("--warm-up", type=float, default=300, help="--demo: seconds it runs before the pages")
    ap.add_argument("--cluster", help="the cluster of the group and topic pages (default: --demo's first)")
    ap.add_argument("--out", default="docs/img")
    ap.add_argument("--max-kb", type=int, default=400)
    a = ap.parse_args()
    if a.demo == bool(a.url):
        ap.error("give the URL of a running demo, or --demo")
    if a.demo:
        from collectors.demo.scenarios import DEMO_CLUSTERS  # the names a demo of several clusters gives

        cluster = a.cluster or (None if a.clusters == 1 else DEMO_CLUSTERS[0])
        with running_demo(a.clusters, a.warm_up) as url:
            take(url, Path(a.out), cluster, max_kb=a.max_kb)
    else:
        take(a.url, Path(a.out), a.cluster, max_kb=a.max_kb)


if __name__ == "__main__":
    main()
