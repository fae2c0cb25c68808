"""The dashboard's one time zone and its one way of writing a time.

Every time the dashboard shows, in a table, a sentence, a chart's axis or its hover, is written by
`fmt_time` in the display zone: the `dashboard_timezone` setting (GROUPSCOPE_DASHBOARD_TIMEZONE, an
IANA name, UTC by default), which `create_app` sets once per process. The zone is said once, in the
page header ("times in Europe/Paris"), and in the title of every chart's time axis ("time (UTC)");
the times themselves carry no zone, so a table stays narrow and a chart's axis stays a plain date
axis (Plotly draws zone-less times as they are written).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from collectors.config import check_timezone

DEFAULT_ZONE = "UTC"

_zone: ZoneInfo = ZoneInfo(DEFAULT_ZONE)


def set_display_zone(name: str) -> ZoneInfo:
    """Make `name` (an IANA time zone) the zone of every time shown; ValueError when unknown."""
    global _zone
    _zone = check_timezone(name)
    return _zone


def display_zone() -> ZoneInfo:
    return _zone


def zone_name(zone: ZoneInfo | None = None) -> str:
    """The zone's IANA name, as the page header and the axis titles say it."""
    return (zone or _zone).key


def fmt_time(
    ms: int | float | None, *, millis: bool = False, zone: ZoneInfo | None = None, missing: str = "-"
) -> str:
    """`ms` (milliseconds since the epoch) as "YYYY-MM-DD HH:MM:SS" (".mmm" added with `millis`, as the
    charts want it) in `zone`, else the display zone; `missing` when there is no time (None or 0)."""
    if not ms:
        return missing
    t = datetime.fromtimestamp(ms / 1000, tz=zone or _zone)
    if millis:
        return t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return t.strftime("%Y-%m-%d %H:%M:%S")


def time_axis_title(zone: ZoneInfo | None = None) -> str:
    """A chart's time axis title: "time (Europe/Paris)"."""
    return f"time ({zone_name(zone)})"


def time_header(label: str, zone: ZoneInfo | None = None) -> str:
    """A table column of times: "Started (Europe/Paris)"."""
    return f"{label} ({zone_name(zone)})"
