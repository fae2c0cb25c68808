"""Debian's Chromium, headless, driven through chromedriver with selenium: one place for the flags
that the browser tests, the dashboard benchmark and the README screenshots all need.

The background-networking flags matter on machines with no outside network: without them Chromium
keeps trying (and failing) to reach its update and sync services. selenium is a dev dependency, so
it is imported only when a browser is asked for.
"""

from __future__ import annotations

import tempfile
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # tests run as root in CI
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def headless_chromium(
    width: int = 1400, height: int = 1000, prefix: str = "groupscope-chromium-"
) -> tuple[Any, str]:
    """A selenium driver for a fresh headless Chromium, and its profile directory (the caller quits
    the driver and may remove the directory)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS:
        opts.add_argument(flag)
    profile = tempfile.mkdtemp(prefix=prefix)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_window_size(width, height)
    return driver, profile
