"""Which groups of one cluster are in a rebalance storm, flapping or lagging at a moment: the
statuses of coordinator_model/statuses.py (each one alert rule, with the alert configuration's
parameters) found over the whole fleet in Redis. The fleet page, `groupscope groups` and the
Prometheus metrics count and list groups with this, so their numbers are the alerts' numbers.

Fast at fleet scale as the alert cycle is, from the sink's summaries (collectors/storage/summaries.py):
one HGETALL of the facts says which groups had a generation within the rules' look-back (only those
can storm or flap; their rule heads are read, already parsed) and keeps each group's lag rows reduced
to those that decide the lag rule, so no document is read for either. A group without summaries
(written by an older collector, or one they cannot describe) is judged from its document.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from collectors.alerts.summary_rules import PackedEvaluator
from collectors.storage.redis_store import RedisStore
from collectors.storage.summaries import Facts, decode_facts
from coordinator_model.alert_rules import AlertConfig, Finding
from coordinator_model.document.types import DocumentError
from coordinator_model.statuses import STATUSES, group_statuses

log = logging.getLogger(__name__)


def top_key(status: str, f: Finding) -> tuple[float, ...]:
    """Sort key putting first the group furthest into its status: most rebalances, most joins, most
    seconds behind (then the earliest start, the most messages behind)."""
    ev = f.evidence
    if status == "storm":
        return (-float(ev.get("rebalances") or 0), float(f.since))
    if status == "flapping":
        clients = ev.get("clients") or {}
        return (-float(max((c.get("joins") or 0 for c in clients.values()), default=0)), float(f.since))
    return (-float(ev.get("max_lag_seconds") or 0), -float(ev.get("lag") or 0))


@dataclass
class FleetStatuses:
    """status -> group -> the rule's finding, for one cluster at `now_ms`."""

    now_ms: int
    groups: dict[str, dict[str, Finding]] = field(default_factory=lambda: {s: {} for s in STATUSES})
    from_documents: int = 0  # groups judged from their document (no usable summaries)

    def count(self, status: str) -> int:
        return len(self.groups.get(status, {}))

    def counts(self) -> dict[str, int]:
        return {s: self.count(s) for s in STATUSES}

    def top(self, status: str, n: int = 5) -> list[tuple[str, Finding]]:
        """The n groups furthest into the status (`top_key`), then by name."""
        found = self.groups.get(status, {})
        return sorted(found.items(), key=lambda kv: (*top_key(status, kv[1]), kv[0]))[:n]


def read_statuses(
    store: RedisStore,
    config: AlertConfig,
    now_ms: int,
    *,
    statuses: Iterable[str] = STATUSES,
    summaries: bool = True,
    chunk: int = 1000,
) -> FleetStatuses:
    """Every group of `store`'s cluster in each of `statuses` at `now_ms`, under `config` (the
    cluster's own: `AlertConfig.for_cluster`). `summaries=False` judges every group from its
    document (tests hold the two equal)."""
    wanted = tuple(s for s in STATUSES if s in set(statuses))
    out = FleetStatuses(now_ms, {s: {} for s in wanted})
    r = store.r
    pipe = r.pipeline(transaction=False)
    pipe.hkeys(store.fleet_key)
    if summaries:
        pipe.hgetall(store.facts_key)
    names_raw, *facts_raw = pipe.execute()
    stored: dict[bytes, bytes] = facts_raw[0] if facts_raw else {}
    packed = PackedEvaluator(config)
    need_doc: list[str] = []
    with_facts: list[tuple[str, Facts]] = []
    for raw in names_raw:
        name = raw.decode()
        f = decode_facts(stored.get(raw)) if summaries else None
        if f is None:
            need_doc.append(name)
        else:
            with_facts.append((name, f))
    heads: dict[str, bytes | None] = {}
    want_head = [name for name, f in with_facts if packed.needs_head(name, f, now_ms, wanted)]
    for i in range(0, len(want_head), chunk):
        part = want_head[i : i + chunk]
        heads.update(zip(part, r.hmget(store.rule_heads_key, part), strict=True))
    for name, f in with_facts:
        found = packed.statuses(name, f, heads.get(name), now_ms, wanted)
        if found is None:
            need_doc.append(name)
            continue
        for status, finding in found.items():
            out.groups[status][name] = finding
    out.from_documents = len(need_doc)
    for i in range(0, len(need_doc), chunk):
        part = need_doc[i : i + chunk]
        for name, text in zip(part, store.document_texts(part), strict=True):
            if not text:
                continue  # deleted since the fleet was listed
            try:
                doc: Any = json.loads(text)
                judged = group_statuses(doc, now_ms, config, wanted)
            except (ValueError, DocumentError) as e:  # one bad document never hides the others
                log.warning("group %s: not a group document, no status: %s", name, e)
                continue
            for status, finding in judged.found.items():
                out.groups[status][name] = finding
    return out
