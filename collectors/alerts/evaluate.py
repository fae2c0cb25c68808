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

A changed group is often only a lag refresh of a healthy group. Before judging it again the
evaluator compares the signature of what its rebalance rules read (the rule head's key, from the
facts; for a group without summaries, the fleet row and the current generation's row: state,
generation or epoch, start of the current state, member count, the generation as stored) with the
one it judged last; when that is unchanged, the group has no active alert, and no lag rule can count
its lag (the facts, or for a group without summaries its fleet row: total 0, or worst seconds below
every configured threshold, and not in a state group_empty alerts in with messages waiting), the
verdict cannot have changed and the group is not judged again.

`at_ms` evaluates as of a past moment: every group is judged from its document, with its
generations and timeline cut at that moment and its lag taken from the lag history point in force
then.

An `Evaluator` judges one Kafka cluster's groups (the layout under one prefix). `ClusterEvaluator`
runs a cycle over every cluster (the registry's, re-read each cycle, and the configured ones), each
with its own Evaluator, its own alerts and its own rules (`AlertConfig.for_cluster`); a cluster whose
data cannot be read or judged is reported and skipped, and never stops the others.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from collectors.alerts.clusters import cluster_names
from collectors.gc_pause import no_cyclic_gc
from collectors.storage.alerts import Alert, AlertStore, alert_id, cluster_of_prefix
from collectors.storage.clusters import BASE_PREFIX, cluster_prefix
from collectors.storage.redis_store import RedisStore
from collectors.storage.summaries import (
    Facts,
    PackedEvaluator,
    decode_facts,
    head_readable,
    quiet_lag_seconds,
    summaries_usable,
)
from coordinator_model.alert_rules import AlertConfig, Evaluation, Finding, evaluate_group
from coordinator_model.alert_rules.docview import GONE_STATES
from coordinator_model.document.types import DocumentError, GroupDocument, LagDoc, PartitionLag

log = logging.getLogger(__name__)

MAX_EVIDENCE_ITEMS = 50


@dataclass(frozen=True)
class Transition:
    """An alert that started firing or was resolved in this cycle: what the notifiers send."""

    event: str  # "firing" | "resolved"
    alert: dict[str, Any]


@dataclass
class CycleResult:
    now_ms: int
    groups_total: int = 0
    evaluated: int = 0
    fired: int = 0
    resolved: int = 0
    updated: int = 0
    active: int = 0
    trimmed: int = 0  # resolved alerts dropped from the history (older than the retention)
    skipped_quiet: int = 0  # changed groups whose verdict could not change: document not read
    bad_documents: int = 0  # groups whose stored value is not a group document: not judged
    duration_s: float = 0.0
    cpu_s: float = 0.0  # this process's CPU time: the cost without other load on the machine
    skipped_locked: bool = False
    transitions: list[Transition] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "transitions"}
        d["transitions"] = len(self.transitions)
        return d


def _now_ms() -> int:
    return int(time.time() * 1000)


def _chunks(items: list[str], n: int) -> Iterator[list[str]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


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


class Evaluator:
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
        # False reads every group's document (the path before summaries; benchmarks and tests
        # compare the two). A configuration the summaries cannot serve reads documents too.
        self.use_summaries = summaries and summaries_usable(config)
        self.packed = PackedEvaluator(config)
        self._lock_ttl_ms = 60_000

    def _signatures(self, groups: list[str]) -> tuple[list[str | None], list[dict[str, Any] | None]]:
        """Per group: the signature of what the rebalance rules read, and the fleet row."""
        rows: list[dict[str, Any] | None] = []
        for raw in self.r.hmget(self.data.key_of("fleet"), groups):
            try:
                rows.append(json.loads(raw) if raw else None)
            except ValueError:
                rows.append(None)
        pipe = self.r.pipeline(transaction=False)
        for g, row in zip(groups, rows, strict=True):
            gen = (
                None
                if row is None
                else (row.get("generation") if row.get("generation") is not None else row.get("group_epoch"))
            )
            pipe.hget(self.data.group_key(g, "generations"), str(gen))
        sigs: list[str | None] = []
        for row, gen_raw in zip(rows, pipe.execute(), strict=True):
            if row is None:
                sigs.append(None)
                continue
            head = (
                row.get("state"),
                row.get("generation"),
                row.get("group_epoch"),
                row.get("last_change"),
                row.get("members"),
            )
            sigs.append(f"{head}|{zlib.crc32(gen_raw or b'')}")
        return sigs, rows

    @staticmethod
    def _doc_signature(doc: GroupDocument) -> str:
        """The signature `_signatures` computes from Redis, computed from the document itself (the
        fleet row and the generation row are derived from it by collectors/storage/redis_store.py). Were the
        two ever to differ, the group would only be re-read more often, never judged less."""
        gen = doc.generation if doc.generation is not None else doc.group_epoch
        gen_raw = b""
        for g in reversed(doc.generations):
            if g.generation == gen and g.start is not None:
                gen_raw = json.dumps(g.to_json(), separators=(",", ":"), sort_keys=True, default=str).encode()
                break
        head = (
            doc.state or "Unknown",
            doc.generation,
            doc.group_epoch,
            doc.last_change(),
            len(doc.members),
        )
        return f"{head}|{zlib.crc32(gen_raw)}"

    def _lag_quiet(self, row: dict[str, Any]) -> bool:
        lag = row.get("lag") or 0
        if lag == 0:
            return True
        if row.get("state") in GONE_STATES:
            return False  # messages wait for a group nobody consumes: group_empty may fire
        return float(row.get("lag_seconds") or 0.0) < self.quiet_seconds

    def _facts_quiet(self, facts: Facts, now: int) -> bool:
        """Whether a change of lag alone cannot change the verdict of a group with these facts: no
        lag rule can count a row, and group_empty (which sums the lag waiting) cannot apply."""
        silence = self.packed.silence
        return silence.lag(facts) and (not facts.lagging or silence.empty(facts, now))

    def _skip_quiet(
        self, groups: list[str], refreshed: dict[str, str], result: CycleResult, now: int
    ) -> list[str]:
        """Mark the quiet groups as judged and return the others (to be read and evaluated)."""
        out: list[str] = []
        for chunk in _chunks(groups, self.chunk):
            pipe = self.r.pipeline(transaction=False)
            pipe.hmget(self.alerts.key_of("sig"), chunk)
            pipe.hmget(self.data.summary_key("facts"), chunk)
            old, facts = pipe.execute()
            if not self.use_summaries:
                facts = [None] * len(chunk)
            quiet: dict[str, str] = {}
            # Never judged (a cold start): nothing to compare with, read them. With summary facts the
            # signature is the key of the group's rule head; without, it comes from the fleet row.
            known: list[tuple[str, str]] = []
            for g, prev, raw in zip(chunk, old, facts, strict=True):
                if prev is None:
                    out.append(g)
                    continue
                f = decode_facts(raw)
                if f is None:
                    known.append((g, prev.decode()))
                elif f.key == prev.decode() and self._facts_quiet(f, now):
                    quiet[g] = refreshed[g]
                else:
                    out.append(g)
            if known:
                sigs, rows = self._signatures([g for g, _ in known])
                for (g, prev), sig, row in zip(known, sigs, rows, strict=True):
                    if sig is not None and row is not None and prev == sig and self._lag_quiet(row):
                        quiet[g] = refreshed[g]
                    else:
                        out.append(g)
            if quiet:
                self.r.hset(self.alerts.key_of("seen"), mapping=quiet)
                result.skipped_quiet += len(quiet)
        return out

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
        now = at_ms if historic else (now_ms if now_ms is not None else _now_ms())
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
        self.r.set(self.alerts.key_of("cycle"), json.dumps({**result.summary(), "wall_ms": _now_ms()}))
        return result

    def _cycle(self, result: CycleResult, now: int, historic: bool, full: bool) -> None:
        refreshed = {k.decode(): v.decode() for k, v in self.r.hgetall(self.data.key_of("refreshed")).items()}
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
        for chunk in _chunks(todo, self.chunk):
            self._chunk(chunk, refreshed, active, now, historic, result)
            self.r.pexpire(self.alerts.key_of("lock"), self._lock_ttl_ms)
        if gone and not historic:
            pipe = self.r.pipeline(transaction=False)
            for g in gone:
                for alert in active[g].values():
                    self._resolve(pipe, alert, now, result, reason="group no longer in Redis")
                pipe.zrem(self.alerts.key_of("recheck"), g)
                pipe.hdel(self.alerts.key_of("seen"), g)
                pipe.hdel(self.alerts.key_of("sig"), g)
            pipe.execute()
        result.active = self.r.hlen(self.alerts.key_of("active"))
        # Resolved alerts older than the retention go, at most every ten minutes (whoever gets there).
        if (
            not historic
            and self.history_retention_ms is not None
            and self.r.set(self.alerts.key_of("trimmed"), now, nx=True, px=600_000)
        ):
            result.trimmed = self.alerts.trim(now - self.history_retention_ms)

    def _inputs(self, groups: list[str], now: int, historic: bool, result: CycleResult) -> list[_Input]:
        """Each group's summaries, or its document when it has none (written by an older collector),
        when the cycle replays a past moment, or when summaries are off."""
        if historic or not self.use_summaries:
            return [_doc_input(d) for d in self._docs(groups, now, historic, result)]
        pipe = self.r.pipeline(transaction=False)
        pipe.hmget(self.data.summary_key("facts"), groups)
        pipe.hmget(self.data.summary_key("rules"), groups)
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
            idx = self.data.group_key(g, "lag:idx")
            pipe.zrevrangebyscore(idx, "+inf", "-inf", start=0, num=1, withscores=True)
            pipe.zrevrangebyscore(idx, at_ms, "-inf", start=0, num=1)
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
            pipe.hget(self.data.group_key(groups[i], "lag"), field_id)
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
            pipe.hdel(self.alerts.key_of("seen"), *groups)
            pipe.hdel(self.alerts.key_of("sig"), *groups)
        else:
            pipe.hset(self.alerts.key_of("seen"), mapping={g: refreshed[g] for g in groups})
            # The signature judged: the rule head's key, or for a document the one _signatures
            # computes from its fleet row.
            known = {
                g: x.facts.key if x.facts is not None else self._doc_signature(x.doc)  # type: ignore[arg-type]
                for g, x in zip(groups, inputs, strict=True)
                if x.facts is not None or x.doc is not None
            }
            if known:
                pipe.hset(self.alerts.key_of("sig"), mapping=known)
            if rechecks:
                pipe.zadd(self.alerts.key_of("recheck"), rechecks)
            if no_recheck:
                pipe.zrem(self.alerts.key_of("recheck"), *no_recheck)
        if fires:
            # An episode already recorded and resolved (a replay of a moment judged before) is not
            # fired again: its id is the same, and the history keeps its end.
            ids = [alert_id(self.cluster, f.group, f.rule, min(f.since, now)) for f in fires]
            known = self.r.hmget(self.alerts.key_of("log"), ids)
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


@dataclass
class FleetResult:
    """One cycle over every cluster: each cluster's result, and the clusters that failed."""

    now_ms: int
    cycles: dict[str, CycleResult] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # cluster -> why its cycle failed

    @property
    def transitions(self) -> list[Transition]:
        return [t for c in self.cycles.values() for t in c.transitions]

    @property
    def locked(self) -> list[str]:
        """Clusters whose cycle was skipped because another one held their lock."""
        return [name for name, c in self.cycles.items() if c.skipped_locked]

    def total(self, what: str) -> int:
        return sum(int(getattr(c, what)) for c in self.cycles.values())

    def summary(self) -> dict[str, Any]:
        totals = (
            "groups_total",
            "evaluated",
            "fired",
            "resolved",
            "updated",
            "active",
            "skipped_quiet",
            "bad_documents",
        )
        return {
            "now_ms": self.now_ms,
            **{k: self.total(k) for k in totals},
            "transitions": len(self.transitions),
            "clusters": {name: c.summary() for name, c in self.cycles.items()},
            "errors": dict(self.errors),
        }


class ClusterEvaluator:
    """Evaluation cycles over every Kafka cluster in one Redis.

    The clusters are those of the registry (each collector registers its cluster when it starts)
    and the configured ones, read again every cycle, so a cluster whose collector starts after the
    worker is judged from its first cycle on. Each cluster keeps its own Evaluator (its caches and
    its resolved rules) and its own alerts, lock and bookkeeping under its prefix."""

    def __init__(
        self,
        client: Any,
        config: AlertConfig,
        configured: Iterable[str] = (),
        base: str = BASE_PREFIX,
        only: str | None = None,
        **evaluator_kw: Any,
    ) -> None:
        self.r = client
        self.config = config
        self.configured = list(configured)
        self.base = base
        self.only = only  # one cluster (`alerts evaluate --cluster`), else all
        self.evaluator_kw = evaluator_kw
        self._evaluators: dict[str, Evaluator] = {}

    def cluster_names(self) -> list[str]:
        if self.only is not None:
            return [self.only]
        return cluster_names(self.r, self.configured, self.base)

    def evaluator(self, name: str) -> Evaluator:
        ev = self._evaluators.get(name)
        if ev is None:
            ev = Evaluator(
                self.r,
                self.config.for_cluster(name),
                prefix=cluster_prefix(name, self.base),
                cluster=name,
                **self.evaluator_kw,
            )
            self._evaluators[name] = ev
        return ev

    def run_cycle(
        self,
        now_ms: int | None = None,
        at_ms: int | None = None,
        full: bool = False,
        lock_ttl_ms: int = 60_000,
    ) -> FleetResult:
        """One cycle per cluster (see Evaluator.run_cycle), one after the other. Without `now_ms`
        each cluster's cycle takes the clock when it starts, as a single cluster's does."""
        out = FleetResult(
            now_ms=at_ms if at_ms is not None else (now_ms if now_ms is not None else _now_ms())
        )
        for name in self.cluster_names():  # the registry: a Redis it cannot read fails the cycle
            try:
                out.cycles[name] = self.evaluator(name).run_cycle(
                    now_ms=now_ms, at_ms=at_ms, full=full, lock_ttl_ms=lock_ttl_ms
                )
            except Exception as e:  # one cluster's broken data must not stop the others' evaluation
                log.error("cluster %s: evaluation cycle failed; the other clusters go on", name, exc_info=e)
                out.errors[name] = f"{type(e).__name__}: {e}"
                # Its evaluator may hold half-read state; the next cycle starts it afresh.
                self._evaluators.pop(name, None)
        return out
