"""The store's upkeep: history past the retention trimmed, groups deleted, the topic index filled in."""

from __future__ import annotations

import json
import logging

from collectors.storage.fleet_rows import (
    HOUR_MS,
    SORT_KEYS,
)
from collectors.storage.store_keys import ALL_SUMMARY_KEYS, StoreKeys
from coordinator_model.document import DocumentError, GroupDocument

# A lag point keeps its partitions and members this long, then its totals only (trim): per partition a
# 100-partition group's point is about 6 KB, its totals under 100 bytes (docs/redis-schema.md).
LAG_DETAIL_MS = 3 * HOUR_MS
LAG_COMPACT_WINDOW_MS = 15 * 60 * 1000

log = logging.getLogger(__name__)


class Upkeep(StoreKeys):
    """RedisStore's upkeep (collectors/storage/redis_store.py)."""

    def trim(self, now_ms: int) -> int:
        """Drop history older than the retention (timelines, generations, lag points, dead letters),
        and groups that are Dead/Empty and were not refreshed within it. Returns rows removed."""
        cutoff = int(now_ms - self.retention_ms)
        removed = 0
        stale: list[str] = []
        cursor = 0
        while True:
            cursor, chunk = self.r.hscan(self.refreshed_key, cursor, count=1000)
            names = [n.decode() for n in chunk]
            p = self.pipeline()
            for name in names:
                for what in ("timeline", "generations", "lag"):
                    self._trim_series(
                        keys=[self.group_key(name, what), self.group_key(name, f"{what}:idx")],
                        args=[cutoff],
                        client=p,
                    )
            removed += sum(int(x or 0) for x in p.execute())
            for name in names:
                # points that crossed the detail horizon since the last trims (the collector trims
                # every minute; the window allows for missed ones) keep their totals only
                horizon = int(now_ms - LAG_DETAIL_MS)
                keys = [self.lag_points_key(name), self.lag_index_key(name)]
                self._compact_lag(keys=keys, args=[horizon - LAG_COMPACT_WINDOW_MS, horizon], client=p)
            p.execute(raise_on_error=False)  # a point the script cannot read stays as it is
            stale += [n for n in names if int(chunk[n.encode()]) < cutoff]
            if cursor == 0:
                break
        states = self.r.hmget(self.fleet_states_key, stale) if stale else []
        for name, st in zip(stale, states, strict=True):
            if st and st.decode() in ("Dead", "Empty"):
                self.delete_group(name)
                removed += 1
        # Dead letters: the seen-set by record time; the stream itself is capped by length (MAXLEN), as
        # its ids are wall-clock times while retention runs on evidence time (replays of old captures).
        removed += int(self.r.zremrangebyscore(self.key_of("deadletters", "seen"), "-inf", f"({cutoff}"))
        return removed

    def backfill_topics(self, batch: int = 500) -> int:
        """Put the groups written before the topic index existed (or by a writer without it) into it,
        from their stored documents; the collector runs this once at start. Returns how many groups.
        Cheap when there is nothing to do: two HLENs."""
        if self.r.hlen(self.fleet_key) <= self.r.hlen(self.topics.of_groups_key()):
            return 0
        done = 0
        cursor = 0
        while True:
            cursor, chunk = self.r.hscan(self.fleet_key, cursor, count=batch)
            names = [n.decode() for n in chunk]
            known = self.r.hmget(self.topics.of_groups_key(), names) if names else []
            missing = [n for n, k in zip(names, known, strict=True) if k is None]
            if missing:
                p = self.pipeline()
                docs = self.document_texts(missing)
                for name, raw in zip(missing, docs, strict=True):
                    if not raw:
                        continue
                    try:
                        doc = GroupDocument.from_json(json.loads(raw))
                    except (ValueError, DocumentError) as e:  # never a crash: the rest still gets indexed
                        log.warning("group %s: stored document unreadable, not indexed by topic: %s", name, e)
                        continue
                    p.hset(self.topics.of_groups_key(), name, self.topics.queue_group(p, name, doc, []))
                    done += 1
                self.topics.flush(p)
                p.execute()
            if cursor == 0:
                return done

    def delete_group(self, name: str) -> None:
        st = self.r.hget(self.fleet_states_key, name)
        tops = self.r.hget(self.topics.of_groups_key(), name)
        p = self.pipeline()
        self.topics.forget_group(p, name, json.loads(tops) if tops else [])
        self.topics.flush(p)
        for sort in SORT_KEYS:
            p.zrem(self.index_key(sort), name)
            if st:
                p.zrem(self.index_key(sort, st.decode()), name)
        for h in ("fleet", "fleet:state", "fleet:type", "fleet:history", "refreshed"):
            p.hdel(self.key_of(*h.split(":")), name)
        for what in ALL_SUMMARY_KEYS:
            p.hdel(self.summary_key(what), name)
        for what in (
            "doc",
            "offsets",
            "timeline",
            "timeline:idx",
            "generations",
            "generations:idx",
            "lag",
            "lag:idx",
        ):
            p.delete(self.group_key(name, what))
        p.execute()
