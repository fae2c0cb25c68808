"""The README's screenshots and the tool that takes them (collectors/demo/screenshots.py) agree: every
image the README shows is one the tool takes, every one it takes is shown, each is in docs/img/ and
small enough for the repository. (Taking them needs the demo: `python -m collectors.demo.screenshots
--demo --clusters 2`.)"""

from __future__ import annotations

import re
from pathlib import Path

from collectors.demo.screenshots import SHOTS

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"


def test_the_readme_shows_every_screenshot_the_tool_takes() -> None:
    shown = re.findall(r"!\[[^\]]+\]\(docs/img/([^)]+)\)", README.read_text())
    assert sorted(shown) == sorted(s.file for s in SHOTS)
    assert len(set(shown)) == len(shown)
    for name in shown:
        png = ROOT / "docs" / "img" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert png.stat().st_size < 400 * 1024, (name, png.stat().st_size)


def test_the_shots_cover_the_pages_the_readme_sells() -> None:
    """The fleet and topics of every cluster, a group with generations, a KIP-848 group, a group's
    members, the streams and share groups, the alerts, a what-if and a topic."""
    paths = {s.path for s in SHOTS}
    assert {"/", "/topics", "/alerts"} <= paths  # every cluster's
    for page in ("demo-storm", "demo-kip848", "demo-scaleout", "demo-streams", "demo-share"):
        assert "{c}/groups/" + page in paths
    assert "{c}/groups/demo-steady/whatif" in paths and "{c}/topics/demo-slow" in paths
