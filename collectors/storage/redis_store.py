"""The Redis layout groupscope keeps, with its write side (the pipeline's sink) and its read side
(the CLI, the dashboard and the alerts). docs/redis-schema.md documents every key.

Design choices, and why:
- The current document of a group is stored verbatim (the JSON `groupscope model --json` prints for
  that group), so `groupscope group NAME --json` is a plain read and can never disagree with the model.
- The fleet table is one hash of small JSON rows plus one sorted set per sort key (and one per sort key
  and state), so a page of 50,000 groups sorted by lag and filtered by state is a ZRANGE: O(log N + page).
  Only the name-substring and type filters walk an index, inside one Lua call on the server.
- History (timeline, generations, lag points, dead letters) is keyed by the row's own identity (start
  time and state, generation number, timestamp, record position), never by arrival order, so a batch
  replayed after a failure rewrites the same fields and adds nothing.
- Every write goes through a non-transactional pipeline; the caller decides when to execute it, so the
  sink can send ~1000 commands per round trip.
- Next to each document the sink keeps compact summaries of it (collectors/storage/summaries.py): what
  the alert rules read, already parsed, and what a Prometheus scrape reads, so neither parses 50,000
  documents. They are derived from the document alone, written in the same pipeline, and removed
  with the group.
"""

from __future__ import annotations

from typing import Any

import redis

from collectors.storage.collector_status import CollectorStatus
from collectors.storage.group_offsets import GroupOffsets
from collectors.storage.group_reads import GroupReads
from collectors.storage.group_writes import GroupWrites
from collectors.storage.lag_schedule import LagSchedule
from collectors.storage.log_ends import LogEnds
from collectors.storage.lua_scripts import (
    COMPACT_LAG_SCRIPT,
    DEAD_LETTER_SCRIPT,
    FILTER_SCRIPT,
    LAG_SLOT_SCRIPT,
    TRIM_SERIES_SCRIPT,
)
from collectors.storage.topics import TopicIndex
from collectors.storage.upkeep import Upkeep

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000


class RedisStore(GroupWrites, GroupReads, Upkeep, CollectorStatus):
    """groupscope's view of one Redis database. Thread-compatible: one instance per thread/process.
    Its key names are in store_keys.py; what it does, by side, in group_writes.py, group_reads.py,
    upkeep.py and collector_status.py."""

    def __init__(
        self,
        client: Any,
        prefix: str = "gs",
        retention_ms: int = DEFAULT_RETENTION_MS,
        dead_letter_max: int = 100_000,
        summaries: bool = True,
    ) -> None:
        self.r = client
        self.p = prefix
        self.retention_ms = retention_ms
        self.dead_letter_max = dead_letter_max
        # Off only to measure or test the readers' document path: a writer without summaries removes
        # the ones of the groups it writes, so a reader never takes an old summary for a new document.
        self.summaries = summaries
        self._filter = client.register_script(FILTER_SCRIPT)
        self._trim_series = client.register_script(TRIM_SERIES_SCRIPT)
        self._dead_letter = client.register_script(DEAD_LETTER_SCRIPT)
        self._lag_slot = client.register_script(LAG_SLOT_SCRIPT)
        self._compact_lag = client.register_script(COMPACT_LAG_SCRIPT)
        self.topics = TopicIndex(client, prefix, self._filter, self.group_key)
        self.offsets = GroupOffsets(client, lambda group: self.group_key(group, "offsets"))
        self.log_ends = LogEnds(client, prefix)
        self.lag_schedule = LagSchedule(client, prefix)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> RedisStore:
        return cls(redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5), **kw)
