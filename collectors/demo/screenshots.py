"""Screenshots of a running demo's dashboard for the README (docs/img/).

    groupscope demo --duration 240 --no-browser        # prints "dashboard on http://HOST:PORT/"
    python -m collectors.demo.screenshots http://HOST:PORT/ --out docs/img

Headless Chromium through Debian's chromedriver. Waits until the fleet page lists the demo's groups,
then saves demo-fleet.png (the fleet, 1400x1000) and each page of `SHOTS` (a classic group's
rebalances, a KIP-848 group's epochs, a group's members, the streams and share groups, the alerts,
a what-if, a topic), 1400x`--group-height` so a group's state timeline and generations (epochs) are
in the picture. PNGs are re-encoded with a reduced palette when
they exceed `--max-kb`, so the repository stays small.
"""

from __future__ import annotations

import argparse
import io
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.demo.servers.chromium import headless_chromium


def browser() -> tuple[Any, str]:
    return headless_chromium(1400, 1000, prefix="groupscope-shots-")


def _wait_text(driver: Any, needles: list[str], timeout_s: float) -> bool:
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
    """A page to take: its path under the dashboard, the file, the texts it must show first, and the
    element to scroll to (None: the page's top)."""

    path: str
    file: str
    needles: tuple[str, ...]
    scroll_to: str | None = None
    typed: tuple[tuple[str, str], ...] = ()  # (input id, text) typed in once the page shows
    press: str | None = None  # a button clicked after typing, then `ready` waited for to fill
    ready: str | None = None


# The pages the README shows: a classic group's rebalances, a KIP-848 group's epochs, a Kafka
# Streams application's tasks and topology, a share group's lag, a group's members, the alerts and
# a what-if reassignment.
SHOTS = (
    Shot("/groups/demo-storm", "demo-group.png", ("demo-storm", "Generation")),
    Shot("/groups/demo-kip848", "demo-kip848.png", ("demo-kip848", "Epochs")),
    Shot("/groups/demo-scaleout", "demo-members.png", ("demo-scaleout", "Members"), "group-members"),
    Shot("/groups/demo-streams", "demo-streams.png", ("demo-streams", "Lag per task"), "group-kip848"),
    Shot("/groups/demo-share", "demo-share.png", ("demo-share", "share", "Epochs")),
    Shot("/alerts", "demo-alerts.png", ("demo-",)),
    Shot(
        "/groups/demo-steady/whatif",
        "demo-whatif.png",
        ("demo-steady", "Compare"),
        typed=(("wi-add_members", "1"),),
        press="wi-run",
        ready="wi-results",
    ),
    Shot("/topics/demo-slow", "demo-topic.png", ("demo-slow",)),
)


def take(
    base_url: str,
    out_dir: Path,
    shots: tuple[Shot, ...] = SHOTS,
    max_kb: int = 400,
    group_height: int = 1500,
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    base = base_url.rstrip("/")
    driver, profile = browser()
    saved: list[Path] = []
    try:
        driver.get(base + "/")
        if not _wait_text(driver, ["demo-steady", "demo-storm", "demo-crash", "demo-kip848"], 120):
            raise SystemExit("the fleet page never listed the demo groups")
        time.sleep(3)  # let the grid and counters settle
        path = out_dir / "demo-fleet.png"
        print(path, save_png(driver.get_screenshot_as_png(), path, max_kb), "bytes")
        saved.append(path)
        driver.set_window_size(1400, group_height)
        for shot in shots:
            driver.get(base + shot.path)
            if not _wait_text(driver, list(shot.needles), 60):
                print(f"warning: {shot.path} did not show {', '.join(shot.needles)} in time")
            time.sleep(5)  # charts render after the data callback
            if shot.typed or shot.press:
                _act(driver, shot)
            if shot.scroll_to:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", help="the dashboard URL the demo printed")
    ap.add_argument("--out", default="docs/img")
    ap.add_argument("--max-kb", type=int, default=400)
    ap.add_argument("--group-height", type=int, default=1500, help="window height for the group pages")
    a = ap.parse_args()
    take(a.url, Path(a.out), max_kb=a.max_kb, group_height=a.group_height)


if __name__ == "__main__":
    main()
