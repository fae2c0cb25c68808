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

import base64
import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from collectors.storage import group_parts, json_text, sorted_index
from collectors.storage import summaries as _summary
from collectors.storage.group_offsets import GroupOffsets
from collectors.storage.lag_schedule import LagSchedule
from collectors.storage.log_ends import LogEnds
from collectors.storage.topics import TopicIndex
from coordinator_model.document import DocumentError, GroupDocument

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
HOUR_MS = 3600 * 1000
FULL_HEADROOM_BYTES = 1024 * 1024  # memory_full: this close to maxmemory is full
# A lag point keeps its partitions and members this long, then its totals only (trim): per partition a
# 100-partition group's point is about 6 KB, its totals under 100 bytes (docs/redis-schema.md).
LAG_DETAIL_MS = 3 * HOUR_MS
LAG_COMPACT_WINDOW_MS = 15 * 60 * 1000

# The summary hashes (docs/redis-schema.md, "Summaries"), each `G` -> the group's summary, in the
# order the sink writes them: a head before the facts that carry its key (a write cut short leaves
# an old key, so the head is rebuilt next time, never a new key over an old head).
SUMMARY_KEYS = ("rules", "facts", *(f"metrics:{family}" for family in _summary.GROUP_FAMILIES))
# every group has those; a streams group has its tasks' too, written and removed with them
ALL_SUMMARY_KEYS = (*SUMMARY_KEYS, *(f"metrics:{family}" for family in _summary.TASK_FAMILIES))

SORT_KEYS = ("name", "state", "lag", "lag_seconds", "rebalance_rate", "members", "last_change")
# Scores of the state index: alphabetical, so sorting by state reads like sorting the column's text.
KNOWN_STATES = (
    "Assigning",
    "CompletingRebalance",
    "Dead",
    "Empty",
    "PreparingRebalance",
    "Reconciling",
    "Stable",
    "Unknown",
)

# Walk one index in order, keep the names that match a substring / type / state set, count them all
# and return the requested page. Runs on the server, so 50,000 names never cross the network.
_FILTER_SCRIPT = """
local index, types, states = KEYS[1], KEYS[2], KEYS[3]
local rev = ARGV[1] == '1'
local sub = ARGV[2]
local want_type = ARGV[3]
local offset = tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local want_states = {}
local any_state = true
for i = 6, #ARGV do want_states[ARGV[i]] = true; any_state = false end
local total = 0
local page = {}
local n = redis.call('ZCARD', index)
local chunk = 5000
local start = 0
while start < n do
  local names
  if rev then names = redis.call('ZRANGE', index, start, start + chunk - 1, 'REV')
  else names = redis.call('ZRANGE', index, start, start + chunk - 1) end
  for _, name in ipairs(names) do
    local ok = true
    if sub ~= '' and not string.find(string.lower(name), sub, 1, true) then ok = false end
    if ok and want_type ~= '' and redis.call('HGET', types, name) ~= want_type then ok = false end
    if ok and not any_state and not want_states[redis.call('HGET', states, name) or ''] then ok = false end
    if ok then
      if total >= offset and #page < limit then page[#page + 1] = name end
      total = total + 1
    end
  end
  start = start + chunk
end
return {total, page}
"""

# Trim one history series (hash of rows + sorted set of row ids by time) older than a cutoff. The
# newest row always stays: it is the state in force now, however long ago it began.
_TRIM_SERIES_SCRIPT = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1])
local last = redis.call('ZRANGE', KEYS[2], -1, -1)[1]
local gone = {}
for _, id in ipairs(ids) do if id ~= last then gone[#gone + 1] = id end end
for i = 1, #gone, 1000 do
  local j = math.min(i + 999, #gone)
  redis.call('HDEL', KEYS[1], unpack(gone, i, j))
  redis.call('ZREM', KEYS[2], unpack(gone, i, j))
end
return #gone
"""

# A lag point into its slot (write_lag_points with slot_ms): a slot keeps its peak (`SLOT:p`, the
# point of greatest lag) and its newest point (`SLOT:l`, when it is not the peak), each scored by its
# own time: thinned so, the chart keeps the spikes an ops engineer looks for and the value now.
_LAG_SLOT_SCRIPT = """
local peak_id, last_id = ARGV[1] .. ':p', ARGV[1] .. ':l'
local peak = redis.call('HGET', KEYS[1], peak_id)
local lag = tonumber(ARGV[3])
if peak then peak = cjson.decode(peak) end
if peak and tonumber(peak['ts']) == tonumber(ARGV[4]) then return 0 end  -- written again (a replay)
if (not peak) or lag > tonumber(peak['lag']) then
  redis.call('HSET', KEYS[1], peak_id, ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[4], peak_id)
  redis.call('HDEL', KEYS[1], last_id)
  redis.call('ZREM', KEYS[2], last_id)
else
  redis.call('HSET', KEYS[1], last_id, ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[4], last_id)
end
return 1
"""

# Lag points that crossed the detail horizon keep their totals only (trim, LAG_DETAIL_MS): ARGV[1..2]
# the window of point times to look at. A point already compacted has nothing left to strip.
_COMPACT_LAG_SCRIPT = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], ARGV[2])
local n = 0
for _, id in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[1], id)
  if raw and (string.find(raw, '"partitions":{"', 1, true) or string.find(raw, '"members":{"', 1, true)) then
    local point = cjson.decode(raw)
    redis.call('HSET', KEYS[1], id, cjson.encode({ts = point['ts'], lag = point['lag'],
      lag_seconds = point['lag_seconds'], partitions = {}, members = {}}))
    n = n + 1
  end
end
return n
"""

# Add a dead letter once per record position: a replayed batch finds the position already seen.
_DEAD_LETTER_SCRIPT = """
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], '*', 'position', ARGV[1], 'ts', ARGV[2], 'entry', ARGV[3])
return 1
"""


@dataclass(frozen=True)
class FleetRow:
    """One row of the fleet table (what `groupscope groups` and the dashboard's grid show)."""

    name: str
    type: str | None
    state: str
    members: int
    generation: int | None
    group_epoch: int | None
    protocol: str | None
    lag: int
    lag_seconds: float
    rebalances_1h: int
    last_change: int | None
    last_refreshed: int
    provisional: bool = False  # from the Admin API's first answers only (GroupDocument.provisional)

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        if not self.provisional:
            del d["provisional"]  # the rows of the pipeline's documents, as they always were
        return d


_dumps = json_text.standard


def _row_text(row: Mapping[str, Any]) -> str:
    """A fleet row's JSON (a flat object: its floats are its values)."""
    return json_text.dumps(row, finite=json_text.finite(row.values()))


def _provisional_row(row: bytes) -> bool:
    try:
        return bool(json.loads(row).get("provisional"))
    except (ValueError, AttributeError):
        return False


def fleet_row(doc: GroupDocument, now_ms: int) -> FleetRow:
    """The fleet row of a group document; `now_ms` ends the one-hour window of rebalances."""
    lag, lag_s = doc.lag.totals()
    return FleetRow(
        name=doc.group,
        type=doc.type,
        state=doc.state or "Unknown",
        members=len(doc.members),
        generation=doc.generation,
        group_epoch=doc.group_epoch,
        protocol=doc.protocol,
        lag=lag,
        lag_seconds=lag_s,
        rebalances_1h=sum(
            1 for g in doc.generations if g.start is not None and now_ms - HOUR_MS <= g.start <= now_ms
        ),
        last_change=doc.last_change(),
        last_refreshed=int(now_ms),
        provisional=doc.provisional,
    )


def as_document(doc: GroupDocument | Mapping[str, Any]) -> GroupDocument:
    """A document to write: typed as it is, or read from its JSON form (DocumentError if it is not one)."""
    return doc if isinstance(doc, GroupDocument) else GroupDocument.from_json(doc)


def sort_scores(row: Mapping[str, Any]) -> dict[str, float]:
    """A fleet row's (its JSON's) score in each fleet index (`gs:idx:SORT`); equal scores order by
    name."""
    state = row.get("state")
    return {
        "name": 0.0,
        "state": float(KNOWN_STATES.index(state)) if state in KNOWN_STATES else 99.0,
        "lag": float(row.get("lag") or 0),
        "lag_seconds": float(row.get("lag_seconds") or 0),
        "rebalance_rate": float(row.get("rebalances_1h") or 0),
        "members": float(row.get("members") or 0),
        "last_change": float(row.get("last_change") or 0),
    }


def _history_digest(doc: GroupDocument) -> str:
    """What the per-group timeline and generations keys are written from."""
    text = json_text.dumps([[t.to_json() for t in doc.timeline], [g.to_json() for g in doc.generations]])
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


class RedisStore:
    """groupscope's view of one Redis database. Thread-compatible: one instance per thread/process."""

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
        self._filter = client.register_script(_FILTER_SCRIPT)
        self._trim_series = client.register_script(_TRIM_SERIES_SCRIPT)
        self._dead_letter = client.register_script(_DEAD_LETTER_SCRIPT)
        self._lag_slot = client.register_script(_LAG_SLOT_SCRIPT)
        self._compact_lag = client.register_script(_COMPACT_LAG_SCRIPT)
        self.topics = TopicIndex(client, prefix, self._filter, self.group_key)
        self.offsets = GroupOffsets(client, lambda group: self.group_key(group, "offsets"))
        self.log_ends = LogEnds(client, prefix)
        self.lag_schedule = LagSchedule(client, prefix)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> RedisStore:
        return cls(redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5), **kw)

    # ---- key names (documented in docs/redis-schema.md) -------------------------------------------
    def key_of(self, *parts: str) -> str:
        return ":".join((self.p, *parts))

    def group_key(self, group: str, what: str) -> str:
        # Group names may contain ':'; braces keep the name one visible unit and a cluster hash tag.
        return f"{self.p}:group:{{{group}}}:{what}"

    def index_key(self, sort: str, state: str | None = None) -> str:
        return self.key_of("idx", sort) if state is None else self.key_of("idx", sort, "state", state)

    def summary_key(self, what: str) -> str:
        """A summary hash: `rules`, `facts` or `metrics:FAMILY` (docs/redis-schema.md)."""
        return self.key_of("summary", what)

    # ---- write side --------------------------------------------------------------------------------
    def pipeline(self) -> Any:
        return self.r.pipeline(transaction=False)

    def write_groups(
        self,
        docs: Iterable[GroupDocument | Mapping[str, Any]],
        now_ms: int,
        *,
        as_of_ms: int | None = None,
        pipe: Any = None,
    ) -> int:
        """Write each group's document, fleet row, indexes, timeline and generations.

        Idempotent: the same documents with the same times leave Redis exactly as it was. `now_ms` is
        when the collector refreshed the groups (wall clock); `as_of_ms` (default `now_ms`) ends the
        one-hour window of the rebalance rate (the evidence time on replay). Returns commands queued.
        """
        ref = as_of_ms if as_of_ms is not None else now_ms
        return self.write_many([(d, now_ms, ref) for d in docs], pipe=pipe)

    def write_many(
        self,
        items: Iterable[tuple[GroupDocument | Mapping[str, Any], int, int]],
        *,
        pipe: Any = None,
        texts: Iterable[str] | None = None,
        heads_stored: bool = False,
        provisional: bool = False,
    ) -> int:
        """`write_groups` with each document's own (now_ms, as_of_ms): one round trip to read the
        previous states and history digests, then the writes queued on `pipe` (or executed here).
        Returns commands queued. `texts`, when given, are the documents already serialised as this
        module does (the pipeline's model stage makes them so), stored as they are. `heads_stored`:
        the documents' own keys already hold them (the lag refresher's heads, put together with
        newer lag): everything else is written, not the document. `provisional`: the documents are
        the Admin API's first answers (`write_provisional`), not the pipeline's.

        The fleet-wide hashes and indexes get one command each for all the documents (a catch-up
        writes thousands of groups a batch, and per-group commands were most of the sink's time); a
        group's timeline and generations are rewritten only when their digest changed. The summaries
        (collectors/storage/summaries.py) go to fleet-wide hashes the same way; a group's rule head
        only when the key of what it is built from changed."""
        listed = [(as_document(d), now_ms, ref) for d, now_ms, ref in items]
        given = list(texts) if texts is not None else [None] * len(listed)
        kept = list(zip(listed, given, strict=True))
        if not kept:
            return 0
        items = [item for item, _ in kept]
        names = [d.group for d, _, _ in items]
        # The previous state tells which per-state indexes to leave; the digest, whether the history
        # changed. (A document repeated in `items` is written in turn; the last one is what stays.)
        # The old facts carry the key of each group's rule head: unchanged, the head is not rebuilt.
        with self.r.pipeline(transaction=False) as rp:
            if not provisional:
                # before the previous states are read: a provisional write that has not landed by
                # now sees this and stands down (`write_provisional`), so the states read here are
                # the last ones written
                rp.set(self.key_of("pipeline", "wrote"), "1")
            rp.hmget(self.key_of("fleet", "state"), names)
            rp.hmget(self.key_of("fleet", "history"), names)
            rp.hmget(self.key_of("refreshed"), names)
            rp.hmget(self.topics.of_groups_key(), names)
            if self.summaries:
                rp.hmget(self.summary_key("facts"), names)
            answers = rp.execute()
            old_states, old_digests, old_refreshed, old_topics, *old_facts = answers[
                0 if provisional else 1 :
            ]
        old_facts = old_facts[0] if old_facts else [None] * len(names)
        own = pipe is None
        p = self.pipeline() if own else pipe
        n0 = len(p)
        fleet: dict[str, str] = {}
        states: dict[str, str] = {}
        types: dict[str, str] = {}
        refreshed: dict[str, int] = {}
        digests: dict[str, str] = {}
        scores: dict[str, dict[str, float]] = {}
        left: dict[str, set[str]] = {}  # name -> per-state indexes it leaves
        current: dict[str, str | None] = {}
        summaries: dict[str, dict[str, str]] = {what: {} for what in ALL_SUMMARY_KEYS}
        known_facts: dict[str, _summary.Facts | None] = {}
        unsummarized: set[str] = set()
        topics_of: dict[str, str] = {}  # name -> JSON list of its topics now
        for (doc, now_ms, ref), text, name, old, old_digest, old_ref, old_fact, old_tops in zip(
            items,
            (t for _, t in kept),
            names,
            old_states,
            old_digests,
            old_refreshed,
            old_facts,
            old_topics,
            strict=True,
        ):
            # A refresh stamp never goes back: the model stage stamps a document with the group's
            # last evidence, and an unchanged Admin resend (touch_refreshed) may have come since.
            now_ms = max(int(now_ms), int(old_ref or 0))
            row = fleet_row(doc, ref)
            row = FleetRow(**{**row.__dict__, "last_refreshed": now_ms})
            row_json = row.to_json()
            prev = current.get(name, old.decode() if old else None)
            if prev and prev != row.state:
                left.setdefault(name, set()).add(prev)
            current[name] = row.state
            if not heads_stored:
                p.set(self.group_key(name, "doc"), text if text is not None else _dumps(doc.to_json()))
            fleet[name] = _row_text(row_json)
            states[name] = row.state
            types[name] = row.type or ""
            refreshed[name] = int(now_ms)
            scores[name] = sort_scores(row_json)
            if provisional:
                # the fleet row and the document only: a provisional document has no history, and
                # the topic pages and the alert rules wait for the pipeline's
                continue
            digest = _history_digest(doc)
            known = digests.get(name, old_digest.decode() if old_digest else None)
            if digest != known:
                self._queue_history(p, name, doc)
                digests[name] = digest
            was = topics_of.get(name) or (old_tops.decode() if old_tops else "[]")
            topics_of[name] = self.topics.queue_group(p, name, doc, json.loads(was))
            if self.summaries:
                if name not in known_facts:
                    known_facts[name] = _summary.decode_facts(old_fact)
                self._summarize(doc, row_json, digest, name, summaries, known_facts, unsummarized)
            else:
                unsummarized.add(name)
        # Summaries before the refresh stamps: a reader that sees a group's new stamp sees its new
        # summaries too.
        for what, values in summaries.items():
            if values:
                p.hset(self.summary_key(what), mapping=values)
        if unsummarized and not provisional:
            for what in ALL_SUMMARY_KEYS:
                p.hdel(self.summary_key(what), *unsummarized)
        p.hset(self.key_of("fleet"), mapping=fleet)
        p.hset(self.key_of("fleet", "state"), mapping=states)
        p.hset(self.key_of("fleet", "type"), mapping=types)
        p.hset(self.key_of("refreshed"), mapping=refreshed)
        if topics_of:
            p.hset(self.topics.of_groups_key(), mapping=topics_of)
        if digests:
            p.hset(self.key_of("fleet", "history"), mapping=digests)
        p.sadd(self.key_of("states"), *set(states.values()))
        leaving: dict[str, list[str]] = {}
        for name, gone in left.items():
            for state in gone - {current[name]}:
                leaving.setdefault(state, []).append(name)
        for state, who in leaving.items():
            for sort in SORT_KEYS:
                p.zrem(self.index_key(sort, state), *who)
        by_state: dict[str, list[str]] = {}
        for name, state in states.items():
            by_state.setdefault(state, []).append(name)
        for sort in SORT_KEYS:
            p.zadd(self.index_key(sort), {name: sc[sort] for name, sc in scores.items()})
            for state, who in by_state.items():
                p.zadd(self.index_key(sort, state), {name: scores[name][sort] for name in who})
        if own:
            # the topics' aggregates after their rows (a caller with its own pipeline flushes them
            # once for all its writes: store.topics.flush())
            self.topics.flush(p)
        queued = len(p) - n0
        if own:
            p.execute()
        return queued

    def forget_pipeline_writes(self) -> None:
        """A collector starts: provisional documents may be written until its pipeline writes."""
        self.r.delete(self.key_of("pipeline", "wrote"))

    def write_provisional(self, docs: Sequence[GroupDocument], now_ms: int, chunk: int = 500) -> int | None:
        """Write provisional documents (GroupDocument.provisional: the Admin API's first answers,
        while the pipeline starts) of the groups that have no document yet or only a provisional
        one; how many were written, or None once the pipeline has written anything (from then on its
        documents follow, and none is written here). Never over the pipeline's: from the check to
        the write, the fleet rows and the pipeline's mark are watched (a pipeline write in between
        makes the chunk read and try again), and the pipeline marks before it reads the states it
        leaves (`write_many`), so both never interleave."""
        written = 0
        mark, fleet = self.key_of("pipeline", "wrote"), self.key_of("fleet")
        for i in range(0, len(docs), chunk):
            part = docs[i : i + chunk]
            while True:
                with self.r.pipeline() as p:
                    try:
                        p.watch(mark, fleet)
                        if p.exists(mark):
                            return None
                        rows = p.hmget(fleet, [d.group for d in part])
                        mine = [
                            d
                            for d, row in zip(part, rows, strict=True)
                            if row is None or _provisional_row(row)
                        ]
                        if not mine:
                            break
                        p.multi()
                        self.write_many([(d, now_ms, now_ms) for d in mine], pipe=p, provisional=True)
                        self.topics.flush(p)
                        p.execute()
                        written += len(mine)
                        break
                    except redis.WatchError:
                        continue  # a write came in between: read again
        return written

    def write_group(
        self, doc: GroupDocument | Mapping[str, Any], now_ms: int, *, as_of_ms: int | None = None
    ) -> None:
        self.write_groups([doc], now_ms, as_of_ms=as_of_ms)

    def _summarize(
        self,
        doc: GroupDocument,
        row: Mapping[str, Any],
        digest: str,
        name: str,
        out: dict[str, dict[str, str]],
        known: dict[str, _summary.Facts | None],
        unsummarized: set[str],
    ) -> None:
        """Queue the group's summaries into `out`; its rule head only when the head's key changed
        since `known[name]`, the facts last written (in this batch, or stored)."""
        try:
            s = _summary.summarize(doc, row, digest, known[name])
            facts = s.facts_text()
        except Exception as e:  # a document the summaries cannot describe: its readers use the document
            # A value JSON or orjson cannot hold exactly is expected now and then; anything else is a bug.
            expected = isinstance(e, TypeError | ValueError | OverflowError)
            log.warning(
                "group %s: no summaries (%s); readers parse its document", name, e, exc_info=not expected
            )
            for values in out.values():
                values.pop(name, None)
            known[name] = None
            unsummarized.add(name)
            return
        unsummarized.discard(name)
        if s.head is not None:
            out["rules"][name] = s.head
        known[name] = s.facts
        out["facts"][name] = facts
        for family, lines in zip(_summary.GROUP_FAMILIES, s.metrics, strict=True):
            out[f"metrics:{family}"][name] = lines
        if s.tasks is not None:  # a streams group's (its entry "" while no task has a lag)
            for family, lines in zip(_summary.TASK_FAMILIES, s.tasks, strict=True):
                out[f"metrics:{family}"][name] = lines

    def _queue_history(self, p: Any, name: str, doc: GroupDocument) -> None:
        # The timeline and generations are the document's own history (the model keeps it within the
        # retention); the hashes and sorted sets below index it for range queries. Each is rewritten
        # whole through a temporary key and RENAME, so a reader never sees half a version, a row the
        # model revised (an inferred start moved to the broker's time) leaves no stale copy, and
        # writing the same document again leaves the same content.
        timeline = {}
        for i, t in enumerate(doc.timeline):
            # start first (range queries), then the position: states that begin in the same
            # millisecond keep the model's order
            timeline[f"{int(t.start):015d}:{i:05d}"] = (float(t.start), t.to_json())
        generations = {}
        for g in doc.generations:
            if g.generation is not None and g.start is not None:
                generations[str(g.generation)] = (float(g.start), g.to_json())
        for what, rows in (("timeline", timeline), ("generations", generations)):
            h, z = self.group_key(name, what), self.group_key(name, f"{what}:idx")
            if not rows:
                p.delete(h, z)
                continue
            th, tz = self.group_key(name, f"{what}:tmp"), self.group_key(name, f"{what}:idx:tmp")
            p.delete(th, tz)
            p.hset(th, mapping={rid: json_text.dumps(row) for rid, (_, row) in rows.items()})
            p.zadd(tz, {rid: score for rid, (score, _) in rows.items()})
            p.rename(th, h)
            p.rename(tz, z)

    def touch_refreshed(self, refreshed: Mapping[str, int]) -> None:
        """Mark groups refreshed at these times with their documents unchanged (the model stage saw
        only the Admin poller's unchanged resends): the `refreshed` hash and the fleet rows'
        `last_refreshed`. A group not in the fleet (removed meanwhile) is left out."""
        names = list(refreshed)
        rows = self.r.hmget(self.key_of("fleet"), names)
        fleet = {}
        for name, raw in zip(names, rows, strict=True):
            if raw:
                row = json.loads(raw)
                row["last_refreshed"] = int(refreshed[name])
                fleet[name] = _row_text(row)
        if fleet:
            with self.r.pipeline(transaction=False) as p:
                p.hset(self.key_of("fleet"), mapping=fleet)
                p.hset(self.key_of("refreshed"), mapping={n: int(refreshed[n]) for n in fleet})
                p.execute()

    def write_lag_points(
        self,
        group: str,
        ts: int,
        *,
        total: int,
        lag_seconds: float,
        partitions: Mapping[str, Any] | None = None,
        members: Mapping[str, Any] | None = None,
        pipe: Any = None,
        slot_ms: int | None = None,
    ) -> None:
        """One point of a group's lag history at `ts` (ms): totals plus per-partition ("topic:p") and
        per-member lag. Keyed by ts, so writing the same point twice keeps one; with `slot_ms`, a slot
        of that length keeps two points at most, its peak and its newest (_LAG_SLOT_SCRIPT): the
        pipeline writes a point at every document write, which for a group committing every second
        was a point a second, kept for the retention."""
        point = {
            "ts": int(ts),
            "lag": int(total),
            "lag_seconds": float(lag_seconds),
            "partitions": dict(partitions or {}),
            "members": dict(members or {}),
        }
        own = pipe is None
        p = self.pipeline() if own else pipe
        rid = str(int(ts))
        secs = [point["lag_seconds"]]
        for rows in (point["partitions"], point["members"]):
            secs.extend(v.get("lag_seconds") for v in rows.values() if isinstance(v, dict))
        text = json_text.dumps(point, finite=json_text.finite(secs))
        if slot_ms:
            slot = str(int(ts) - int(ts) % slot_ms)
            keys = [self.group_key(group, "lag"), self.group_key(group, "lag:idx")]
            self._lag_slot(keys=keys, args=[slot, text, int(total), int(ts)], client=p)
        else:
            p.hset(self.group_key(group, "lag"), rid, text)
            p.zadd(self.group_key(group, "lag:idx"), {rid: float(ts)})
        if own:
            p.execute()

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

    def trim(self, now_ms: int) -> int:
        """Drop history older than the retention (timelines, generations, lag points, dead letters),
        and groups that are Dead/Empty and were not refreshed within it. Returns rows removed."""
        cutoff = int(now_ms - self.retention_ms)
        removed = 0
        stale: list[str] = []
        cursor = 0
        while True:
            cursor, chunk = self.r.hscan(self.key_of("refreshed"), cursor, count=1000)
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
                keys = [self.group_key(name, "lag"), self.group_key(name, "lag:idx")]
                self._compact_lag(keys=keys, args=[horizon - LAG_COMPACT_WINDOW_MS, horizon], client=p)
            p.execute(raise_on_error=False)  # a point the script cannot read stays as it is
            stale += [n for n in names if int(chunk[n.encode()]) < cutoff]
            if cursor == 0:
                break
        states = self.r.hmget(self.key_of("fleet", "state"), stale) if stale else []
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
        if self.r.hlen(self.key_of("fleet")) <= self.r.hlen(self.topics.of_groups_key()):
            return 0
        done = 0
        cursor = 0
        while True:
            cursor, chunk = self.r.hscan(self.key_of("fleet"), cursor, count=batch)
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
        st = self.r.hget(self.key_of("fleet", "state"), name)
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

    # ---- read side ---------------------------------------------------------------------------------
    def list_groups(
        self,
        sort_by: str = "name",
        descending: bool = False,
        state: str | list[str] | None = None,
        name_contains: str | None = None,
        type_: str | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> tuple[int, list[dict[str, Any]]]:
        """(total matching, one page of fleet rows). Ties sort by name."""
        if sort_by not in SORT_KEYS:
            raise ValueError(f"sort_by must be one of {', '.join(SORT_KEYS)}, not {sort_by!r}")
        offset, limit = max(0, int(offset)), max(0, int(limit))
        states = [state] if isinstance(state, str) else list(state or [])
        if not name_contains and not type_ and len(states) <= 1:
            index = self.index_key(sort_by, states[0] if states else None)
            total, names = sorted_index.page(self.r, index, offset, limit, descending)
        else:
            index = self.index_key(sort_by, states[0] if len(states) == 1 else None)
            total, names = self._filter(
                keys=[index, self.key_of("fleet", "type"), self.key_of("fleet", "state")],
                args=[
                    "1" if descending else "0",
                    (name_contains or "").lower(),
                    type_ or "",
                    offset,
                    limit,
                    *(states if len(states) > 1 else []),
                ],
            )
            total = int(total)
        if not names:
            return total, []
        rows = self.r.hmget(self.key_of("fleet"), names)
        return total, [json.loads(r) for r in rows if r]

    def fleet_counts(self) -> dict[str, Any]:
        """Counts for the fleet header: total and by state. (Storms, flapping and lagging are the
        alert rules' statuses, coordinator_model/statuses.py, read by storage/fleet_statuses.py.)"""
        states = sorted(s.decode() for s in self.r.smembers(self.key_of("states")))
        p = self.pipeline()
        p.hlen(self.key_of("fleet"))
        for s in states:
            p.zcard(self.index_key("name", s))
        res = p.execute()
        by_state = {s: int(n) for s, n in zip(states, res[1 : 1 + len(states)], strict=True) if n}
        return {"total": int(res[0]), "by_state": by_state}

    def get_group(self, name: str) -> dict[str, Any] | None:
        """The group's document exactly as `groupscope model --json` prints it, or None."""
        raws, docs = self._put_together([name])
        if 0 in docs:
            return docs[0].to_json()
        return json.loads(raws[0]) if raws[0] else None

    def document_texts(self, names: list[str], now: int | None = None) -> list[bytes | None]:
        """The groups' documents as JSON (None: absent), each put together from its parts where the
        collector stores it so (group_parts.py); a stored value that is not JSON is handed back as it
        is, for the caller to say so."""
        raws, docs = self._put_together(names, now)
        for i, doc in docs.items():
            raws[i] = json_text.standard(doc.to_json()).encode()
        return raws

    def _put_together(
        self, names: list[str], now: int | None = None
    ) -> tuple[list[bytes | None], dict[int, GroupDocument]]:
        """The stored values of the groups' documents, and by position those stored in parts put
        together (a head that does not read as a document is left to the caller, as stored)."""
        if not names:
            return [], {}
        raws = list(self.r.mget([self.group_key(n, "doc") for n in names]))
        heads: dict[int, dict[str, Any]] = {}
        for i, raw in enumerate(raws):
            if raw and b'"offsets_apart":true' in raw:
                try:
                    d = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(d, dict) and group_parts.is_head(d):
                    heads[i] = d
        if not heads:
            return raws, {}
        stores = self.offsets.load([names[i] for i in heads])
        topics_of = {i: group_parts.topics_of(d, stores[names[i]]) for i, d in heads.items()}
        ends = self.log_ends.read(set().union(*topics_of.values()))
        docs: dict[int, GroupDocument] = {}
        for i, d in heads.items():
            mine = {tp: h for tp, h in ends.items() if tp[0] in topics_of[i]}
            try:
                docs[i] = group_parts.assemble(d, stores[names[i]], mine, now)
            except DocumentError:
                continue  # handed back as stored: the caller says it is not a document
        return raws, docs

    def get_document(self, name: str) -> GroupDocument | None:
        """The group's document, typed (DocumentError if what is stored is not one), or None."""
        raws, docs = self._put_together([name])
        if 0 in docs:
            return docs[0]
        return GroupDocument.from_json(json.loads(raws[0])) if raws[0] else None

    def get_row(self, name: str) -> dict[str, Any] | None:
        raw = self.r.hget(self.key_of("fleet"), name)
        return json.loads(raw) if raw else None

    def _series(self, group: str, what: str, since: int | None, until: int | None) -> list[dict[str, Any]]:
        ids = self.r.zrangebyscore(
            self.group_key(group, f"{what}:idx"),
            "-inf" if since is None else since,
            "+inf" if until is None else until,
        )
        if not ids:
            return []
        return [json.loads(v) for v in self.r.hmget(self.group_key(group, what), ids) if v]

    def get_timeline(self, name: str, since: int | None = None, until: int | None = None) -> list[dict]:
        """State intervals that start in [since, until] plus the one in force at `since`, by start."""
        rows = self._series(name, "timeline", None, until)
        if since is None:
            return rows
        return [t for t in rows if (t.get("end") is None or t["end"] >= since)]

    def get_generations(self, name: str, since: int | None = None, until: int | None = None) -> list[dict]:
        return self._series(name, "generations", since, until)

    def get_lag_history(self, name: str, since: int | None = None, until: int | None = None) -> list[dict]:
        return self._series(name, "lag", since, until)

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
        import redis

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
            vals = self.r.hmget(self.key_of("refreshed"), names)
            out["groups"] = {n: (int(v) if v else None) for n, v in zip(names, vals, strict=True)}
        return out
