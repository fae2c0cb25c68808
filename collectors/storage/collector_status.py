"""What the collector says of itself in Redis: its heartbeat, the sources' health, the data epoch,
the lag refresher's state, the dead letters, and whether Redis is full."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

import redis

from collectors.storage import json_text
from collectors.storage.store_keys import StoreKeys

SCHEMA_VERSION = "1"
FULL_HEADROOM_BYTES = 1024 * 1024  # memory_full: this close to maxmemory is full

_dumps = json_text.standard

log = logging.getLogger(__name__)


class CollectorStatus(StoreKeys):
    """RedisStore's collector status (collectors/storage/redis_store.py)."""

    def add_dead_letter(
        self,
        raw: Mapping[str, Any] | bytes | None,
        position: str,
        error: str,
        ts: int | None = None,
        *,
        source: str = "__consumer_offsets",
        pipe: Any = None,
    ) -> None:
        """A record that failed to decode: raw bytes (base64), where it came from and why.

        `raw` is bytes or a mapping like {"key": bytes, "value": bytes|None}; `position` identifies the
        record (e.g. "__consumer_offsets/7@1234" or "broker.log:88"), so a replay adds it once."""
        ts = int(ts if ts is not None else time.time() * 1000)
        if isinstance(raw, bytes | bytearray):
            raw_j: dict[str, Any] = {"raw": base64.b64encode(bytes(raw)).decode()}
        elif isinstance(raw, Mapping):
            raw_j = {
                k: (base64.b64encode(bytes(v)).decode() if isinstance(v, bytes | bytearray) else v)
                for k, v in raw.items()
            }
        else:
            raw_j = {}
        entry = {"source": source, "position": position, "error": error, "ts": ts, **raw_j}
        self._dead_letter(
            keys=[self.key_of("deadletters"), self.key_of("deadletters", "seen")],
            args=[position, ts, _dumps(entry), self.dead_letter_max],
            client=pipe if pipe is not None else self.r,
        )

    def set_source_status(self, source: str, ok: bool, detail: str, now_ms: int, *, pipe: Any = None) -> None:
        """Per-source health (offsets topic, heartbeats, broker log, admin API); `since` is kept while
        the status does not change, so the UI can say "unreadable since ..."."""
        key = self.key_of("sources")
        prev_raw = self.r.hget(key, source) if pipe is None else None
        since = int(now_ms)
        if prev_raw:
            prev = json.loads(prev_raw)
            if prev.get("ok") == ok and prev.get("detail") == detail:
                since = prev.get("since", since)
        val = {"ok": bool(ok), "detail": detail, "since": since, "updated": int(now_ms)}
        (pipe if pipe is not None else self.r).hset(key, source, _dumps(val))

    # ---- the data epoch -----------------------------------------------------------------------------
    # A value the collector sets when it finds none: gone, Redis lost what the collector wrote (flushed,
    # restarted without persistence, evicted), and everything is sent and rewritten again.
    def data_epoch(self) -> str | None:
        raw = self.r.get(self.key_of("collector", "epoch"))
        return raw.decode() if raw else None

    def new_data_epoch(self) -> str:
        """Set a new epoch (the wall clock in ms: it differs from any the collector's checkpoint
        remembers) and return it."""
        epoch = str(int(time.time() * 1000))
        self.r.set(self.key_of("collector", "epoch"), epoch)
        return epoch

    def heartbeat_collector(
        self, now_ms: int, *, batch_id: int | None = None, event_ms: int | None = None, **extra: Any
    ) -> None:
        """The collector is alive: wall-clock time of its last batch and the evidence time it reached."""
        val = {"ts": int(now_ms), "batch_id": batch_id, "event_ms": event_ms, **extra}
        self.r.set(self.key_of("collector", "heartbeat"), _dumps(val))
        self.r.set(self.key_of("schema"), SCHEMA_VERSION)

    def note_lag_refresh(self, now_ms: int, behind_ms: int, refreshed: int) -> None:
        """The lag refresher's state (collectors/pipeline/lag_refresh.py): how far behind its schedule
        it runs (0: every lagging group refreshed on time), groups refreshed since it started, and
        how many are in its schedule."""
        val = {
            "ts": int(now_ms),
            "behind_s": round(behind_ms / 1000, 1),
            "refreshed": int(refreshed),
            "scheduled": self.lag_schedule.size(),
        }
        self.r.set(self.key_of("collector", "lag_refresh"), _dumps(val))

    def dead_letters(self, n: int = 100) -> list[dict[str, Any]]:
        """The newest n dead letters, newest first."""
        out = []
        for _id, fields in self.r.xrevrange(self.key_of("deadletters"), count=n):
            out.append(json.loads(fields[b"entry"]))
        return out

    def memory_full(self) -> str | None:
        """Why Redis refuses writes for want of memory, or None: `maxmemory` set, the policy one that
        evicts nothing (noeviction, or a volatile-* policy with no key to evict), and used memory at
        it. The collector then waits, retrying (sink.with_retry), and writes nothing: nothing it
        could write says so, so readers ask Redis itself."""

        try:
            info = self.r.info("memory")
        except redis.ResponseError:  # INFO not allowed to this user (an ACL): not known, not full
            return None
        limit, used = int(info.get("maxmemory") or 0), int(info.get("used_memory") or 0)
        policy = str(info.get("maxmemory_policy") or "")
        # used memory swings by the clients' buffers (a refused write's query buffer is counted, then
        # freed), so "at the limit" has room for them: a batch of documents does not fit in it either
        headroom = max(limit * 0.02, FULL_HEADROOM_BYTES)
        if not limit or used < limit - headroom or policy.startswith("allkeys-"):
            return None
        mb = 1024 * 1024
        return f"used {used / mb:,.0f} MB of maxmemory {limit / mb:,.0f} MB (policy {policy})"

    def freshness(self, groups: Iterable[str] | None = None) -> dict[str, Any]:
        """Last collector heartbeat (and how old it is), per-source status, and last refresh per group
        (only the groups asked for, or none: the fleet rows carry `last_refreshed` too)."""
        hb = self.r.get(self.key_of("collector", "heartbeat"))
        sources = {k.decode(): json.loads(v) for k, v in self.r.hgetall(self.key_of("sources")).items()}
        out: dict[str, Any] = {
            "collector": json.loads(hb) if hb else None,
            "collector_age_ms": None,
            "sources": sources,
            "groups": {},
        }
        if out["collector"]:
            out["collector_age_ms"] = int(time.time() * 1000) - int(out["collector"]["ts"])
        if groups:
            names = list(groups)
            vals = self.r.hmget(self.refreshed_key, names)
            out["groups"] = {n: (int(v) if v else None) for n, v in zip(names, vals, strict=True)}
        return out
