"""When each lagging group's lag numbers are next brought up to the log ends (docs/redis-schema.md,
"Lag refresh"): `{prefix}:lag:due`, a sorted set of group names scored by that moment (epoch ms).

The model stage puts a group in when its lag may move with the log ends alone (a commit, or a
document whose partitions lag) and takes it out when it no longer can; the collector's lag refresher
(collectors/pipeline/lag_refresh.py) takes the groups that are due, refreshes them and puts them back
at their next moment. The schedule lives in Redis, not in Spark's state: a refresh then rewrites no
bucket of the stateful operator, and a bucket's timeout does not follow its groups' lag.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class LagSchedule:
    def __init__(self, client: Any, prefix: str) -> None:
        self.r = client
        self.p = prefix

    def key(self) -> str:
        return f"{self.p}:lag:due"

    # ---- the model stage --------------------------------------------------------------------------
    def queue_sooner(self, p: Any, due: Mapping[str, int]) -> None:
        """Queue on pipeline `p`: each group due at its time, or sooner if it already is (a group not
        in the schedule is put in)."""
        if due:
            p.zadd(self.key(), {g: int(t) for g, t in due.items()}, lt=True)

    def queue_forget(self, p: Any, groups: Iterable[str]) -> None:
        names = list(groups)
        if names:
            p.zrem(self.key(), *names)

    # ---- the refresher ----------------------------------------------------------------------------
    def due(self, now_ms: int, limit: int) -> list[str]:
        """Up to `limit` groups due by `now_ms`, the longest due first."""
        return [
            m.decode() if isinstance(m, bytes) else m
            for m in self.r.zrangebyscore(self.key(), "-inf", now_ms, start=0, num=limit)
        ]

    def next_due(self) -> int | None:
        first = self.r.zrange(self.key(), 0, 0, withscores=True)
        return int(first[0][1]) if first else None

    def reschedule(self, due: Mapping[str, int], gone: Iterable[str]) -> None:
        """After a refresh: each group at its next time (only if still in the schedule: the model stage
        may have taken it out meanwhile), and `gone` out of it."""
        with self.r.pipeline(transaction=False) as p:
            if due:
                p.zadd(self.key(), {g: int(t) for g, t in due.items()}, xx=True)
            self.queue_forget(p, gone)
            p.execute()

    def size(self) -> int:
        return int(self.r.zcard(self.key()))
