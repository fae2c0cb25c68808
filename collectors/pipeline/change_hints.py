"""Which groups the offsets topic just showed changing: a hint the first stage leaves in Redis for
the Admin poller, so that it describes them fast (admin_hot.py) without waiting for its next full
poll to notice.

A GroupMetadata record (a classic group's new generation, or its going Empty) or a KIP-848 group's
epoch record says the group is moving; the next rebalance often follows (a cooperative group's
second round, the next member of a storm, a member coming back). The first stage reads those records
a micro-batch after the coordinator wrote them (the model stage sees them only after the event-time
lateness), and only records written within RECENT_MS of being read count: a catch-up's backlog is
history, not motion.

A hint, never the truth: when Redis cannot be written or read, the poller's own signals (a describe
in motion or changed, a state change in ListGroups) are all there is, as before.

Redis sorted set `<prefix>:pipeline:changed`: group -> time of its latest such record (ms).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from collectors.pipeline.wake_hints import PipelineHints, forget_hint_clients

log = logging.getLogger("groupscope.pipeline")

RECENT_MS = 10_000  # a record older than this when read is history (a backlog), not motion
KEEP_MS = 60_000  # hints older than this are dropped
# the key versions of records that mean a group is moving: GroupMetadata (classic), and the group
# epoch and assignment epoch records of a KIP-848 group (3, 6), a share group (11, 12) and a streams
# group (17, 20). A modern group can take a new epoch and stay Stable (a streams member leaves, its
# tasks go to the others at once): nothing in ListGroups moves, and without the hint the epoch was
# only seen, merged with the next one, at that next change or the minute's resend.
MOVING_KEYS = frozenset(v.to_bytes(2, "big") for v in (2, 3, 6, 11, 12, 17, 20))

RETRY_S = 10.0  # after Redis failed to answer, the hints are not read again for this long
_FAILED: dict[tuple[str, str], float] = {}  # (url, prefix) -> when reading last failed (monotonic)


@dataclass(frozen=True)
class ChangeHints(PipelineHints):
    NAME: ClassVar[str] = "changed"

    def note(self, groups: dict[str, int]) -> None:
        """`groups` (group -> record time) were seen changing; never raises."""
        if not groups:
            return
        try:
            self._client().zadd(self.key, {g: int(ts) for g, ts in groups.items()}, gt=True)
        except Exception as e:
            log.debug("change hints not written: %s", e)

    def since(self, after_ms: int) -> list[tuple[str, int]]:
        """(group, record time) of the hints newer than `after_ms`, oldest first; [] when Redis cannot
        be read. Drops hints older than KEEP_MS."""
        where = (self.redis_url, self.prefix)
        if time.monotonic() - _FAILED.get(where, -RETRY_S) < RETRY_S:
            return []  # a Redis that does not answer is not waited on at every fast poll
        try:
            c = self._client()
            c.zremrangebyscore(self.key, "-inf", int(time.time() * 1000) - KEEP_MS)
            got = c.zrangebyscore(self.key, f"({int(after_ms)}", "+inf", withscores=True)
        except Exception as e:
            log.debug("change hints not read: %s", e)
            _FAILED[where] = time.monotonic()
            return []
        _FAILED.pop(where, None)
        return [(g.decode() if isinstance(g, bytes) else str(g), int(ts)) for g, ts in got]


def moving_groups(rows: dict[str, list[Any]], now_ms: int) -> dict[str, int]:
    """The groups of routed rows (ROUTED_COLUMNS) whose record says they are moving and was written
    within RECENT_MS of `now_ms`: group -> the record's time."""
    out: dict[str, int] = {}
    for group, kind, key, ts in zip(rows["group"], rows["kind"], rows["key"], rows["ts"], strict=True):
        moving = kind == "offsets" and group and key is not None and key[:2] in MOVING_KEYS
        if moving and now_ms - int(ts) <= RECENT_MS:
            out[group] = max(out.get(group, 0), int(ts))
    return out


def forget_clients() -> None:
    """Close the cached clients and forget failures (tests)."""
    forget_hint_clients()
    _FAILED.clear()
