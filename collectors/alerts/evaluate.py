"""One evaluation cycle: read the groups from Redis, run the rules, move alerts through their lifecycle.

Fast at fleet scale because a quiet group is not re-read: the collector stamps each group it writes
in `gs:refreshed`; the evaluator remembers the stamp it judged (`gs:alerts:seen`) and re-reads only
groups whose stamp moved, plus groups whose findings may change with time alone (a sliding window, a
growing duration), which the rules announce through `recheck_at` (`gs:alerts:recheck`). Groups are
read 1,000 per round trip, and all writes of a chunk go in one pipeline.

Live cycles read the sink's summaries (collectors/storage/summaries.py) instead of documents: the rule
head (state, timeline, generations, already parsed) and facts about the rest. With the facts the
rules that cannot return anything are left out; a group whose lag rules must look at its partitions
(it lags, or it is Empty with messages waiting), or that has no summaries (written by an older
collector), is judged from its document, read with one MGET per chunk.

`at_ms` evaluates as of a past moment: every group is judged from its document, with its
generations and timeline cut at that moment and its lag taken from the lag history point in force
then.

Groups whose verdict cannot have changed are left out first (quiet_groups.py); every cluster of
one Redis is judged by cluster_cycle.py.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from collectors.alerts.cycle_results import CycleResult, Transition, wall_clock_ms
from collectors.alerts.quiet_groups import QuietGroups, chunks
from collectors.alerts.summary_rules import PackedEvaluator, quiet_lag_seconds, summaries_usable
from collectors.gc_pause import no_cyclic_gc
from collectors.storage.alerts import Alert, AlertStore, alert_id, cluster_of_prefix
from collectors.storage.redis_store import RedisStore
from collectors.storage.summaries import Facts, decode_facts, head_readable
from coordinator_model.alert_rules import AlertConfig, Evaluation, Finding, evaluate_group
from coordinator_model.document.types import DocumentError, GroupDocument, LagDoc, PartitionLag

log = logging.getLogger(__name__)

MAX_EVIDENCE_ITEMS = 50


def _trim_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in evidence.items():
        if isinstance(v, list) and len(v) > MAX_EVIDENCE_ITEMS:
            out[k] = v[-MAX_EVIDENCE_ITEMS:]
            out[f"{k}_truncated"] = len(v) - MAX_EVIDENCE_ITEMS
        else:
            out[k] = v
    return out


def lag_from_point(point: dict[str, Any]) -> LagDoc:
    """A lag-history point (docs/redis-schema.md: `{"ts", "lag", "lag_seconds", "partitions":
    {"topic:p": {"lag", "lag_seconds", "committed"}}}`, or in the older shape a bare lag in offsets
    per partition) as a document's lag. A point has no status. Without seconds per partition (the
    older shape) the group's worst seconds go to the partition with the largest lag."""
    rows: list[PartitionLag] = []
    for key, value in (point.get("partitions") or {}).items():
        topic, _, part = key.rpartition(":")
        if isinstance(value, dict):
            committed = value.get("committed")
            row = PartitionLag(
                topic,
                int(part),
                committed=committed,
                has_commit=committed is not None,
                lag=value.get("lag"),
                lag_seconds=value.get("lag_seconds"),
            )
        else:
            row = PartitionLag(topic, int(part), lag=value)
        rows.append(row)
    if rows and all(r.lag_seconds is None for r in rows):
        max(rows, key=lambda r: r.lag or 0).lag_seconds = point.get("lag_seconds")
    return LagDoc(total=point.get("lag"), max_seconds=point.get("lag_seconds"), partitions=rows)


@dataclass
class _Input:
    """What one group is judged from: its summaries (facts and rule head), or its document (`bad`:
    the value stored as its document is not one)."""

    facts: Facts | None = None
    head: bytes | None = None
    doc: GroupDocument | None = None
    bad: DocumentError | None = None


def _doc_input(doc: GroupDocument | DocumentError | None, facts: Facts | None = None) -> _Input:
    if isinstance(doc, DocumentError):
        return _Input(facts=facts, bad=doc)
    return _Input(facts=facts, doc=doc)


class Evaluator(QuietGroups):
    def __init__(
        self,
        client: Any,
        config: AlertConfig,
        prefix: str = "gs",
        chunk: int = 1000,
        history_retention_ms: int | None = 7 * 24 * 3600 * 1000,
        summaries: bool = True,
        cluster: str | None = None,
    ) -> None:
        self.r = client
        self.history_retention_ms = history_retention_ms
        self.config = config
        self.cluster = cluster or cluster_of_prefix(prefix)
        self.data = RedisStore(client, prefix=prefix)
        self.alerts = AlertStore(client, prefix=prefix, cluster=self.cluster)
        self.chunk = chunk
        self.quiet_seconds = quiet_lag_seconds(config)
        # False reads every group's document (the path summaries spare; benchmarks and tests
        # compare the two). A configuration the summaries cannot serve reads documents too.
        self.use_summaries = summaries and summaries_usable(config)
        self.packed = PackedEvaluator(config)
        self._lock_ttl_ms = 60_000

    def run_cycle(
        self,
        now_ms: int | None = None,
        at_ms: int | None = None,
        full: bool = False,
        lock_ttl_ms: int = 60_000,
    ) -> CycleResult:
        """Evaluate once. `at_ms` replays a past moment (every group judged); `full` re-judges every
        group now. Holds a Redis lock so overlapping beats skip instead of doubling work; the lock is
        renewed after every chunk, so a long cycle keeps it and a crashed one frees it within the TTL."""
        t0, c0 = time.perf_counter(), time.process_time()
        historic = at_ms is not None
        now = at_ms if historic else (now_ms if now_ms is not None else wall_clock_ms())
        assert now is not None
        result = CycleResult(now_ms=now)
        token = uuid.uuid4().hex
        if not self.alerts.acquire_lock(lock_ttl_ms, token):
            result.skipped_locked = True
            return result
        self._lock_ttl_ms = lock_ttl_ms
        # Decoding thousands of documents allocates millions of objects (the cyclic collector, set
        # off again and again, was 40% of a cold cycle); they hold no cycles
        try:
            with no_cyclic_gc():
                self._cycle(result, now, historic, full or historic)
        finally:
            self.alerts.release_lock(token)
        result.duration_s = time.perf_counter() - t0
        result.cpu_s = time.process_time() - c0
        self.r.set(self.alerts.cycle_key, json.dumps({**result.summary(), "wall_ms": wall_clock_ms()}))
        return result

    def _cycle(self, result: CycleResult, now: int, historic: bool, full: bool) -> None:
        refreshed = {k.decode(): v.decode() for k, v in self.r.hgetall(self.data.refreshed_key).items()}
        result.groups_total = len(refreshed)
        active = self.alerts.active_by_group()
        if full:
            todo = list(refreshed)
        else:
            seen = self.alerts.seen()
            due = set(self.alerts.due(now))
            changed = [g for g, stamp in refreshed.items() if seen.get(g) != stamp and g not in due]
            # A group with an alert or a pending time condition is always read; the others only
            # when their signature or their lag says the verdict may have changed.
            must = [g for g in changed if g in active]
            maybe = [g for g in changed if g not in active]
            todo = [
                *(g for g in due if g in refreshed),
                *must,
                *self._skip_quiet(maybe, refreshed, result, now),
            ]
        # Groups the collector no longer keeps (trimmed, deleted): their alerts end.
        gone = [g for g in active if g not in refreshed]
        for chunk in chunks(todo, self.chunk):
            self._chunk(chunk, refreshed, active, now, historic, result)
            self.r.pexpire(self.alerts.lock_key, self._lock_ttl_ms)
        if gone and not historic:
            pipe = self.r.pipeline(transaction=False)
            for g in gone:
                for alert in active[g].values():
                    self._resolve(pipe, alert, now, result, reason="group no longer in Redis")
                pipe.zrem(self.alerts.recheck_key, g)
                pipe.hdel(self.alerts.seen_key, g)
                pipe.hdel(self.alerts.signatures_key, g)
            pipe.execute()
        result.active = self.r.hlen(self.alerts.active_key)
        # Resolved alerts older than the retention go, at most every ten minutes (whoever gets there).
        if (
            not historic
            and self.history_retention_ms is not None
            and self.r.set(self.alerts.trimmed_key, now, nx=True, px=600_000)
        ):
            result.trimmed = self.alerts.trim(now - self.history_retention_ms)

    def _inputs(self, groups: list[str], now: int, historic: bool, result: CycleResult) -> list[_Input]:
        """Each group's summaries, or its document when it has none (written by an older collector),
        when the cycle replays a past moment, or when summaries are off."""
        if historic or not self.use_summaries:
            return [_doc_input(d) for d in self._docs(groups, now, historic, result)]
        pipe = self.r.pipeline(transaction=False)
        pipe.hmget(self.data.facts_key, groups)
        pipe.hmget(self.data.rule_heads_key, groups)
        facts, heads = pipe.execute()
        inputs = [
            _Input(f, head) if (f := decode_facts(raw)) is not None and head_readable(head) else _Input()
            for raw, head in zip(facts, heads, strict=True)
        ]
        self._fill_docs(groups, inputs, [i for i, x in enumerate(inputs) if x.facts is None], now, result)
        return inputs

    def _fill_docs(
        self, groups: list[str], inputs: list[_Input], which: list[int], now: int, result: CycleResult
    ) -> None:
        """Read the documents of inputs[i] for i in `which` (keeping their facts: the signature)."""
        if which:
            docs = self._docs([groups[i] for i in which], now, False, result)
            for i, d in zip(which, docs, strict=True):
                inputs[i] = _doc_input(d, inputs[i].facts)

    def _evaluations(
        self, groups: list[str], inputs: list[_Input], now: int, result: CycleResult
    ) -> list[Evaluation | BaseException | None]:
        """Each group's evaluation (None: nothing to judge, the group is gone; an exception: its
        evaluation failed). From the summaries where they suffice, else from the document: groups
        whose lag rules must look at rows are read in one MGET after the others are judged."""
        out: list[Evaluation | BaseException | None] = [None] * len(groups)
        need_doc: list[int] = []
        for i, (g, x) in enumerate(zip(groups, inputs, strict=True)):
            try:
                if x.bad is not None:
                    out[i] = x.bad
                elif x.doc is not None:
                    out[i] = evaluate_group(x.doc, now, self.config)
                elif x.facts is not None and x.head is not None:
                    ev = self.packed.evaluate(g, x.facts, x.head, now)
                    if ev is None:
                        need_doc.append(i)
                    out[i] = ev
            except Exception as e:  # one malformed document must not stop the fleet's evaluation
                out[i] = e
        self._fill_docs(groups, inputs, need_doc, now, result)
        for i in need_doc:
            x = inputs[i]
            try:
                if x.bad is not None:
                    out[i] = x.bad
                else:
                    out[i] = evaluate_group(x.doc, now, self.config) if x.doc is not None else None
            except Exception as e:
                out[i] = e
        return out

    def _docs(
        self, groups: list[str], now: int, historic: bool, result: CycleResult
    ) -> list[GroupDocument | DocumentError | None]:
        """The groups' documents (None: absent). A value that is not a group document (not JSON,
        or DocumentError) is counted in `result.bad_documents`; the group is not judged and its
        alerts are left as they are."""
        # One MGET per chunk: a thousand GETs in a pipeline cost more in redis-py than the JSON.
        raws = self.data.document_texts(list(groups))
        docs: list[GroupDocument | DocumentError | None] = []
        for raw in raws:
            doc: GroupDocument | DocumentError | None = None
            if raw:
                try:
                    doc = GroupDocument.from_json(json.loads(raw))
                except DocumentError as e:
                    doc = e
                except ValueError as e:  # not JSON (or not UTF-8)
                    doc = DocumentError(f"not JSON: {e}")
            if isinstance(doc, DocumentError):
                result.bad_documents += 1
            docs.append(doc)
        if historic:
            self._lag_as_of(groups, docs, now)
        return docs

    def _lag_as_of(
        self, groups: list[str], docs: list[GroupDocument | DocumentError | None], at_ms: int
    ) -> None:
        """Replace each document's lag by the history point in force at at_ms when the document is
        newer than at_ms (its latest lag point is after at_ms)."""
        pipe = self.r.pipeline(transaction=False)
        for g in groups:
            lag_index = self.data.lag_index_key(g)
            pipe.zrevrangebyscore(lag_index, "+inf", "-inf", start=0, num=1, withscores=True)
            pipe.zrevrangebyscore(lag_index, at_ms, "-inf", start=0, num=1)
        res = pipe.execute()
        fetch: list[tuple[int, str]] = []
        for i in range(len(groups)):
            newest, at = res[2 * i], res[2 * i + 1]
            doc = docs[i]
            if not isinstance(doc, GroupDocument) or not newest or newest[0][1] <= at_ms:
                continue  # no history, or the document is not newer than at_ms: its lag stands
            if not at:
                doc.lag = LagDoc()  # nothing known yet then
                continue
            fetch.append((i, at[0].decode()))
        if not fetch:
            return
        pipe = self.r.pipeline(transaction=False)
        for i, field_id in fetch:
            pipe.hget(self.data.lag_points_key(groups[i]), field_id)
        for (i, _), raw in zip(fetch, pipe.execute(), strict=True):
            doc = docs[i]
            if raw and isinstance(doc, GroupDocument):
                doc.lag = lag_from_point(json.loads(raw))

    def _chunk(
        self,
        groups: list[str],
        refreshed: dict[str, str],
        active: dict[str, dict[str, Alert]],
        now: int,
        historic: bool,
        result: CycleResult,
    ) -> None:
        inputs = self._inputs(groups, now, historic, result)
        evaluations = self._evaluations(groups, inputs, now, result)
        fires: list[Finding] = []
        rechecks: dict[str, int] = {}
        no_recheck: list[str] = []
        pipe = self.r.pipeline(transaction=False)
        for g, ev in zip(groups, evaluations, strict=True):
            current = active.get(g, {})
            findings: dict[str, Finding] = {}
            recheck = None
            if isinstance(ev, DocumentError):
                log.warning("group %s: not judged, its alerts are left as they are: %s", g, ev)
                continue
            if isinstance(ev, BaseException):
                log.error("group %s: rule evaluation failed; its alerts are left as they are", g, exc_info=ev)
                continue
            if ev is not None:
                findings = {f.rule: f for f in ev.findings}
                recheck = ev.recheck_at
            result.evaluated += 1
            for rule, f in findings.items():
                alert = current.get(rule)
                if alert is not None and alert.updated > now:
                    continue  # already judged at a later moment (an older --at replay): leave it
                if alert is None:
                    fires.append(f)
                else:
                    alert.severity, alert.summary = f.severity, f.summary
                    alert.evidence = _trim_evidence(f.evidence)
                    alert.updated = now
                    self.alerts.queue_update(pipe, alert)
                    result.updated += 1
            for rule, alert in current.items():
                if rule not in findings and alert.updated <= now:
                    self._resolve(pipe, alert, now, result)
            if recheck is not None:
                rechecks[g] = recheck
            else:
                no_recheck.append(g)
        # Bookkeeping for the whole chunk in a few commands.
        if historic:
            # the live evaluator re-judges them next cycle
            pipe.hdel(self.alerts.seen_key, *groups)
            pipe.hdel(self.alerts.signatures_key, *groups)
        else:
            pipe.hset(self.alerts.seen_key, mapping={g: refreshed[g] for g in groups})
            # The signature judged: the rule head's key, or for a document the one _signatures
            # computes from its fleet row.
            known = {
                g: x.facts.key if x.facts is not None else self._doc_signature(x.doc)  # type: ignore[arg-type]
                for g, x in zip(groups, inputs, strict=True)
                if x.facts is not None or x.doc is not None
            }
            if known:
                pipe.hset(self.alerts.signatures_key, mapping=known)
            if rechecks:
                pipe.zadd(self.alerts.recheck_key, rechecks)
            if no_recheck:
                pipe.zrem(self.alerts.recheck_key, *no_recheck)
        if fires:
            # An episode already recorded and resolved (a replay of a moment judged before) is not
            # fired again: its id is the same, and the history keeps its end.
            ids = [alert_id(self.cluster, f.group, f.rule, min(f.since, now)) for f in fires]
            known = self.r.hmget(self.alerts.log_key, ids)
            for f, raw in zip(fires, known, strict=True):
                if raw is None or json.loads(raw).get("state") == "firing":
                    self._fire(pipe, f, now, result)
        pipe.execute()

    def _fire(self, pipe: Any, f: Finding, now: int, result: CycleResult) -> None:
        alert = Alert(
            group=f.group,
            rule=f.rule,
            state="firing",
            severity=f.severity,
            summary=f.summary,
            since=min(f.since, now),
            until=None,
            updated=now,
            evidence=_trim_evidence(f.evidence),
            cluster=self.cluster,
        )
        self.alerts.queue_fire(pipe, alert)
        result.fired += 1
        result.transitions.append(Transition("firing", alert.to_json()))

    def _resolve(
        self, pipe: Any, alert: Alert, now: int, result: CycleResult, reason: str | None = None
    ) -> None:
        alert.state = "resolved"
        alert.until = now
        alert.updated = now
        if reason:
            alert.evidence = {**alert.evidence, "resolved_because": reason}
        self.alerts.queue_resolve(pipe, alert)
        result.resolved += 1
        result.transitions.append(Transition("resolved", alert.to_json()))
