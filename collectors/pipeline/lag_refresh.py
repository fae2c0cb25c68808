"""The collector's lag refresher: a lagging group's lag numbers (its fleet row, summaries, topic rows
and lag history) brought up to the cluster's log ends, without its engine and outside Spark.

Live, a group's lag moves with the log ends alone: producers write, the ends move, nothing arrives
for the group. Readers of one group (its page, the CLI, the API) put its lag together from its
offsets and the log ends when they read it (storage/group_parts.py); what is stored per group for the
fleet (the row the fleet page sorts by, the lag alerts' summaries, the topic rows, the lag history)
is brought up to date here, each lagging group once every LAG_REFRESH_MS at its own phase of it.

The schedule is a sorted set in Redis (storage/lag_schedule.py) that the model stage feeds. This
runs in the driver, as a thread, and spends at most `cpu_share` of a core: when a fleet is too large
for every group to be refreshed every LAG_REFRESH_MS within it, a round takes longer (the groups
longest due first) and the collector says so (`{prefix}:collector:lag_refresh`, `behind_s`), rather
than slowing the commits behind it. It once ran inside the model stage, where a refresh rewrote the
bucket's whole state and moved its timeout: a quiet lagging fleet of 10,000 groups kept the stateful
operator busy with nothing but lag.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator_model.document import GroupDocument

log = logging.getLogger("groupscope.lag_refresh")

# How often a lagging group's lag numbers are brought up to the log ends when nothing else happens to
# it: its fleet row, summaries and lag point follow its lag at most this far behind (more when the
# refresher is over its CPU share).
LAG_REFRESH_MS = 60_000


def lag_phase(group: str, at: int) -> int:
    """The first moment after `at` at the group's own phase of LAG_REFRESH_MS (from its name): each
    group's lag numbers come due once per interval, the fleet's spread evenly over it rather than all
    at once after a catch-up or a burst."""
    phase = zlib.crc32(group.encode("utf-8", "surrogatepass")) % LAG_REFRESH_MS
    due = at - at % LAG_REFRESH_MS + phase
    return due if due > at else due + LAG_REFRESH_MS


def lag_moves(doc: GroupDocument) -> bool:
    """Whether a document's lag may move with the log ends alone: it lags, or a committed
    partition's log end is not known yet (a Redis that lost the ends gets them again within a poll)."""
    lag = doc.lag
    return bool(lag.total or lag.max_seconds) or any(p.has_commit and p.lag is None for p in lag.partitions)


def next_lag_due(doc: GroupDocument, at: int, stop_at: int | None) -> int:
    """When a group's lag numbers are next due (0: never by themselves): its next phase while its lag
    may move with the log ends, or sooner when a lagging partition turns STOP then."""
    due = lag_phase(doc.group, at) if lag_moves(doc) else 0
    if stop_at is not None:
        due = min(due, stop_at) if due else stop_at
    return due


@dataclass
class Refreshed:
    """A group brought up to the log ends: its whole document, the text its key is to hold (none for a
    head: kept as stored), whether that is a head (kept in parts) or a whole document of before the
    parts, and when a lagging partition of it turns STOP next."""

    group: str
    doc: GroupDocument
    text: str
    head: bool
    stop_at: int | None = None


def moved_on(
    store: Any, ends_of: Callable[[set[str]], dict], groups: list[str], at: int, bad: list[str] | None = None
) -> list[Refreshed]:
    """These groups brought up to the log ends at `at`: the head as stored, its committed offsets
    and the log ends put together (storage/group_parts.py), as the engine would render them; a whole
    document stored before the parts has its own lag moved on (offsets.lag.moved_on). A group whose
    head is not in Redis (flushed, or deleted) is left out; one whose stored head cannot be read or
    put together is left out too, logged and added to `bad` (one such group must not stop the
    refresh of the others). `ends_of` gives the histories of topics, only read here."""
    from collectors.pipeline.sink import read_document
    from collectors.storage import group_parts
    from collectors.storage.json_text import dumps_document
    from coordinator_model.offsets.lag import moved_on as lag_moved_on

    def failed(group: str, e: Exception) -> None:
        log.warning("lag refresh of group %r: %s", group, e)
        if bad is not None:
            bad.append(group)

    texts = store.r.mget([store.group_key(g, "doc") for g in groups])
    heads: dict[str, Any] = {}
    for g, raw in zip(groups, texts, strict=True):
        if raw is None:
            continue
        try:
            heads[g] = read_document(raw.decode())
        except Exception as e:  # a value someone else wrote there
            failed(g, e)
    apart = [g for g, d in heads.items() if isinstance(d, dict) and group_parts.is_head(d)]
    offsets = store.offsets.load(apart) if apart else {}
    topics: set[str] = set()
    for g, d in list(heads.items()):
        try:
            topics |= (
                group_parts.topics_of(d, offsets[g])
                if g in offsets
                else {p["topic"] for p in (d.get("lag") or {}).get("partitions") or ()}
            )
        except Exception as e:
            failed(g, e)
            del heads[g]
    ends = ends_of(topics)
    out = []
    for group, d in heads.items():
        try:
            if group in offsets:
                doc = group_parts.assemble(d, offsets[group], ends, at, with_offsets=False)
                # (its key keeps the head as stored: no text to write)
                out.append(Refreshed(group, doc, "", True, offsets[group].next_stop(at)))
                continue
            doc = GroupDocument.from_json(d)
            doc.lag = lag_moved_on(doc.lag, ends, at)
            doc.as_of = max(int(doc.as_of or 0), at)
            out.append(Refreshed(group, doc, dumps_document(doc.to_json()), False))
        except Exception as e:
            failed(group, e)
    return out


class LagRefresher(threading.Thread):
    """Refresh the lagging groups of one cluster as they come due (see the module docstring)."""

    def __init__(
        self,
        redis_url: str,
        prefix: str,
        retention_ms: int,
        lateness_ms: int = 5000,
        cpu_share: float = 0.2,
        chunk: int = 16,
        clock: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(name=f"lag-refresher {prefix}", daemon=True)
        self.redis_url, self.prefix, self.retention_ms = redis_url, prefix, retention_ms
        self.lateness_ms = lateness_ms  # the log ends are observed up to this far behind the clock
        self.cpu_share = cpu_share
        self.chunk = chunk
        self.clock = clock or (lambda: int(time.time() * 1000))
        self._halt = threading.Event()
        self._store: Any = None
        self._ends: Any = None
        self.refreshed = 0
        self.behind_ms = 0  # how long the longest-due group waited past its time, at the last round
        self._topics_flushed = 0.0
        self._noted = 0.0

    def stop(self) -> None:
        self._halt.set()

    def _open(self) -> Any:
        if self._store is None:
            from collectors.storage.log_ends import LogEnds, LogEndsCache
            from collectors.storage.redis_store import RedisStore

            self._store = RedisStore.from_url(
                self.redis_url, prefix=self.prefix, retention_ms=self.retention_ms
            )
            self._ends = LogEndsCache(LogEnds(self._store.r, self.prefix))
        return self._store

    def run_once(self, now_ms: int | None = None, budget_s: float = 1.0) -> int:
        """Refresh groups due by `now_ms` (default: the clock less the lateness) for at most about
        `budget_s` of CPU; returns how many were refreshed."""
        from collectors.gc_pause import no_cyclic_gc

        store = self._open()
        at = (self.clock() - self.lateness_ms) if now_ms is None else now_ms
        t0 = time.thread_time()
        done = 0
        while time.thread_time() - t0 < budget_s and not self._halt.is_set():
            due = store.lag_schedule.due(at, self.chunk)
            if not due:
                self.behind_ms = 0
                break
            first = store.lag_schedule.next_due()  # the longest due: `due`'s first
            self.behind_ms = max(0, at - (first if first is not None else at))
            bad: list[str] = []
            # a round's heads, offsets, windows, documents and rows (a lagging 100-partition group is
            # about 1,500 objects, none in a cycle) are kept out of the cyclic collector's way: its
            # passes walked the driver's every object (gc_pause.py)
            with no_cyclic_gc():
                nxt, found = self._round(store, due, at, bad)
            for g in bad:  # tried again a phase later, not ahead of every other group at once
                nxt[g] = lag_phase(g, at)
            gone = set(due) - set(nxt)  # caught up, or no head in Redis: the model stage puts it back
            store.lag_schedule.reschedule(nxt, gone)
            done += found
        if store.topics.touched and (time.monotonic() - self._topics_flushed >= 5 or not done):
            # the topics' aggregates, at most every 5 s: each is a walk over all its groups' rows
            store.topics.flush()
            self._topics_flushed = time.monotonic()
        self.refreshed += done
        return done

    def _round(self, store: Any, due: list[str], at: int, bad: list[str]) -> tuple[dict[str, int], int]:
        """Bring `due` up to the log ends at `at` and write what follows their lag: when each is next
        due, and how many were refreshed (a group whose head could not be read is added to `bad`)."""
        from collectors.pipeline.sink import DocWriter

        found = moved_on(store, lambda topics: self._ends.histories(topics, copy=False), due, at, bad)
        # a head as stored, with newer lag: its key is not written again; a whole document of
        # before the parts is, with its lag moved on
        heads, wholes = DocWriter(store, heads_stored=True), DocWriter(store)
        nxt: dict[str, int] = {}
        for r in found:
            # refresh stamp 0: the stored one stands (stamps never go back, RedisStore.write_many).
            # Moving a group's lag on with the log ends brings no news from its cluster; stamped
            # here, a group of a cluster that went away read as fresh once a minute, where the pages
            # must show how stale it is.
            (heads if r.head else wholes).add(r.doc, int(r.doc.as_of or 0), 0, r.text)
            when = next_lag_due(r.doc, at, r.stop_at)
            if when:
                nxt[r.group] = when
        heads.flush()
        wholes.flush()
        return nxt, len(found)

    def run(self) -> None:
        """Rounds of at most a second of work, each followed by a rest that keeps the thread's CPU
        within `cpu_share` of a core; a second's rest when nothing is due."""
        while not self._halt.is_set():
            t0 = time.thread_time()
            try:
                n = self.run_once()
            except Exception as e:  # Redis away or a bad head: said, and tried again after a rest
                log.warning("lag refresh: %s", e)
                self._store = None
                self._halt.wait(5)
                continue
            spent = time.thread_time() - t0
            if time.monotonic() - self._noted >= 5:
                self._noted = time.monotonic()
                try:
                    self._store.note_lag_refresh(self.clock(), self.behind_ms, self.refreshed)
                except Exception as e:
                    log.debug("lag refresh: its state not noted (%s)", e)
            rest = spent * (1 / max(0.01, self.cpu_share) - 1) if n else 1.0
            self._halt.wait(max(0.05, rest))
