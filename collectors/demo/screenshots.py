"""Screenshots of a running demo's dashboard for the README (docs/img/).

    groupscope demo --duration 240 --no-browser        # prints "dashboard on http://HOST:PORT/"
    python -m collectors.demo.screenshots http://HOST:PORT/ --out docs/img

Headless Chromium through Debian's chromedriver. Waits until the fleet page lists the demo's groups,
then saves demo-fleet.png (the fleet, 1400x1000), demo-group.png (the storm group's page) and
demo-kip848.png (the KIP-848 group's page), the group pages 1400x`--group-height` so their state
timeline and generations (epochs) are in the picture. PNGs are re-encoded with a reduced palette when
they exceed `--max-kb`, so the repository stays small.
"""

from __future__ import annotations

import argparse
import io
import shutil
import time
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


# (group, file) of the group pages to take
GROUP_PAGES = (("demo-storm", "demo-group.png"), ("demo-kip848", "demo-kip848.png"))


def take(
    base_url: str,
    out_dir: Path,
    groups: tuple[tuple[str, str], ...] = GROUP_PAGES,
    max_kb: int = 400,
    group_height: int = 1500,
) -> list[Path]:
    from urllib.parse import quote

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
        for group, name in groups:
            driver.get(f"{base}/groups/{quote(group, safe='')}")
            if not _wait_text(driver, [group, "Generation"], 60):
                print(f"warning: the page of {group} did not show its generations in time")
            time.sleep(5)  # charts render after the data callback
            path = out_dir / name
            print(path, save_png(driver.get_screenshot_as_png(), path, max_kb), "bytes")
            saved.append(path)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return saved


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
