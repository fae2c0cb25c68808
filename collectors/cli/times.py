"""Times given on the command line: ISO 8601 (`2026-11-28T10:00:00`, `2026-11-28T10:00:00+01:00`,
`2026-11-28`; without a zone the time is UTC) or relative to now (`now`, `-30s`, `-15m`, `-2h`, `-1d`,
`-1w`). Shared by every command that takes a time (`groupscope reset-offsets --to-datetime`)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

import click

_RELATIVE = re.compile(r"^-\s*(\d+)\s*([smhdw])$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
HELP = "ISO 8601 (no zone: UTC) or relative to now: now, -30s, -15m, -2h, -1d, -1w"


def parse_time(text: str, now_ms: int | None = None) -> int:
    """Epoch milliseconds of `text` (see the module's doc); ValueError saying what is accepted."""
    s = text.strip()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if s.lower() == "now":
        return now
    m = _RELATIVE.match(s.lower())
    if m:
        return now - int(m.group(1)) * _UNIT_MS[m.group(2)]
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"{text!r} is not a time: {HELP}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def iso_utc(ms: int) -> str:
    """`ms` as ISO 8601 in UTC with milliseconds: 2026-11-28T10:00:00.000Z."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def ago(ms: int | None, now_ms: int | None = None) -> str:
    """How long ago `ms` was: 42s, 15m, 3h, 2d ('-' when unknown)."""
    if not ms:
        return "-"
    now = int(time.time() * 1000) if now_ms is None else now_ms
    s = max(0.0, (now - ms) / 1000)
    if s < 120:
        return f"{s:.0f}s"
    if s < 7200:
        return f"{s / 60:.0f}m"
    return f"{s / 3600:.0f}h" if s < 172_800 else f"{s / 86400:.0f}d"


class TimeParam(click.ParamType):
    """A click parameter of type time: epoch milliseconds, or a clear usage error."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_time(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


TIME = TimeParam()
