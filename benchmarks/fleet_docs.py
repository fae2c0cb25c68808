"""A fleet of model documents for the alert and metrics benchmarks: three kinds of real documents
(steady, storm, lagging) rebuilt from the stored captures, copied to as many groups as asked and
shifted so that 'now' is the same for all."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import redis

from collectors.capture import read_capture
from collectors.storage.redis_store import RedisStore
from coordinator_model.rebuild import rebuild

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "tests" / "fixtures" / "real-kafka-4.0"


def templates() -> dict[str, tuple[dict, int]]:
    """Model documents of three kinds, as of a moment inside their capture."""
    out = {}
    for kind, scenario, offset_s in (
        ("steady", "classic-range-lifecycle", 30),
        ("storm", "rebalance-storm", 60),
        ("lagging", "lag-ramp", 85),
    ):
        cap = read_capture(CAPTURES / scenario)
        lo = min(e.ts for e in cap.evidence)
        at = lo + offset_s * 1000
        doc = next(iter(rebuild(cap.evidence, at_ms=at).values())).document_json(at)
        out[kind] = (doc, at)
    return out


def kind_of(i: int) -> str:
    return "storm" if i % 100 == 0 else ("lagging" if i % 25 == 1 else "steady")


def group_doc(tpl: dict[str, tuple[dict, int]], i: int, now: int) -> dict:
    doc, at = tpl[kind_of(i)]
    d = _shift(doc, now - at)
    d["group"] = f"bench-{kind_of(i)}-{i:06d}"
    return d


def fill(client: redis.Redis, n: int, tpl: dict[str, tuple[dict, int]]) -> int:
    """Write n groups (1% storm, 4% lagging, the rest steady), shifted so that 'now' is the same for all."""
    store = RedisStore(client)
    now = int(time.time() * 1000)
    batch = []
    for i in range(n):
        batch.append(group_doc(tpl, i, now))
        if len(batch) == 1000:
            store.write_groups(batch, now)
            batch = []
    if batch:
        store.write_groups(batch, now)
    return now


def _shift(doc: dict, delta: int) -> dict:
    d = copy.deepcopy(doc)
    for t in d.get("timeline") or []:
        for k in ("start", "end"):
            if t.get(k) is not None:
                t[k] += delta
    for g in d.get("generations") or []:
        for k in ("start", "end"):
            if g.get(k) is not None:
                g[k] += delta
    return d
