"""The store's write side for groups: documents, fleet rows and indexes, history, summaries and lag
points, as the pipeline's sink writes them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import redis

from collectors.storage import json_text
from collectors.storage import summaries as _summary
from collectors.storage.fleet_rows import (
    SORT_KEYS,
    FleetRow,
    as_document,
    fleet_row,
    history_digest,
    provisional_row,
    row_text,
    sort_scores,
)
from collectors.storage.metric_lines import GROUP_FAMILIES, TASK_FAMILIES
from collectors.storage.store_keys import ALL_SUMMARY_KEYS, StoreKeys
from coordinator_model.document import GroupDocument

_dumps = json_text.standard

log = logging.getLogger(__name__)


class GroupWrites(StoreKeys):
    """RedisStore's writes of groups (collectors/storage/redis_store.py)."""

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
            rp.hmget(self.fleet_states_key, names)
            rp.hmget(self.key_of("fleet", "history"), names)
            rp.hmget(self.refreshed_key, names)
            rp.hmget(self.topics.of_groups_key(), names)
            if self.summaries:
                rp.hmget(self.facts_key, names)
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
                p.set(self.document_key(name), text if text is not None else _dumps(doc.to_json()))
            fleet[name] = row_text(row_json)
            states[name] = row.state
            types[name] = row.type or ""
            refreshed[name] = int(now_ms)
            scores[name] = sort_scores(row_json)
            if provisional:
                # the fleet row and the document only: a provisional document has no history, and
                # the topic pages and the alert rules wait for the pipeline's
                continue
            digest = history_digest(doc)
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
        p.hset(self.fleet_key, mapping=fleet)
        p.hset(self.fleet_states_key, mapping=states)
        p.hset(self.fleet_types_key, mapping=types)
        p.hset(self.refreshed_key, mapping=refreshed)
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
        mark, fleet = self.key_of("pipeline", "wrote"), self.fleet_key
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
                            if row is None or provisional_row(row)
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
        for family, lines in zip(GROUP_FAMILIES, s.metrics, strict=True):
            out[f"metrics:{family}"][name] = lines
        if s.tasks is not None:  # a streams group's (its entry "" while no task has a lag)
            for family, lines in zip(TASK_FAMILIES, s.tasks, strict=True):
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
        rows = self.r.hmget(self.fleet_key, names)
        fleet = {}
        for name, raw in zip(names, rows, strict=True):
            if raw:
                row = json.loads(raw)
                row["last_refreshed"] = int(refreshed[name])
                fleet[name] = row_text(row)
        if fleet:
            with self.r.pipeline(transaction=False) as p:
                p.hset(self.fleet_key, mapping=fleet)
                p.hset(self.refreshed_key, mapping={n: int(refreshed[n]) for n in fleet})
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
        of that length keeps two points at most, its peak and its newest (LAG_SLOT_SCRIPT): the
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
            keys = [self.lag_points_key(group), self.lag_index_key(group)]
            self._lag_slot(keys=keys, args=[slot, text, int(total), int(ts)], client=p)
        else:
            p.hset(self.lag_points_key(group), rid, text)
            p.zadd(self.lag_index_key(group), {rid: float(ts)})
        if own:
            p.execute()
