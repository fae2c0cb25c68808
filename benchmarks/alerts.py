"""Benchmark: one alert evaluation cycle over 50,000 groups in Redis, and a /metrics scrape.

Fills a Redis (its own redis-server on a free port, or --redis URL, which is FLUSHED) with N group
documents built from the real captures' model output (renamed copies: mostly steady groups with lag,
some in a rebalance storm, some lagging), then times:
  - a cold cycle (every group new to the evaluator: all documents read and judged),
  - a quiet cycle (nothing changed: only the refresh stamps are compared),
  - a cycle after the collector refreshed every group (same documents: quiet groups are not read),
  - a cycle after it refreshed 5% of them,
  - a full Prometheus scrape (per group and topic).

    .venv/bin/python benchmarks/alerts.py [--groups 50000] [--redis URL]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from prometheus_client import generate_latest  # noqa: E402

from collectors.alerts.evaluate import Evaluator  # noqa: E402
from collectors.alerts.metrics import make_registry  # noqa: E402
from collectors.capture import read_capture  # noqa: E402
from collectors.local_servers import RedisServer  # noqa: E402
from collectors.redis_store import RedisStore  # noqa: E402
from coordinator_model.alerting import parse_alert_config  # noqa: E402
from coordinator_model.engine import rebuild  # noqa: E402

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
        doc = next(iter(rebuild(cap.evidence, at_ms=at).values())).document(at)
        out[kind] = (doc, at)
    return out


def fill(client: redis.Redis, n: int, tpl: dict[str, tuple[dict, int]]) -> int:
    """Write n groups (1% storm, 4% lagging, the rest steady), shifted so that 'now' is the same for all."""
    store = RedisStore(client)
    now = int(time.time() * 1000)
    batch = []
    for i in range(n):
        kind = "storm" if i % 100 == 0 else ("lagging" if i % 25 == 1 else "steady")
        doc, at = tpl[kind]
        d = _shift(doc, now - at)
        d["group"] = f"bench-{kind}-{i:06d}"
        batch.append(d)
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


def _redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=50_000)
    ap.add_argument("--redis", default=None, help="Redis URL to use (FLUSHED); default: start one")
    args = ap.parse_args()
    server = None
    url = args.redis
    if url is None:
        server = RedisServer().start()
        url = server.url
    try:
        client = redis.Redis.from_url(url, socket_timeout=120)
        client.flushdb()
        tpl = templates()
        sizes = {k: len(json.dumps(d)) for k, (d, _) in tpl.items()}
        t = time.perf_counter()
        now = fill(client, args.groups, tpl)
        print(f"filled {args.groups} groups in {time.perf_counter() - t:.1f} s (document bytes: {sizes})")
        print(f"redis used memory: {client.info('memory')['used_memory_human']}")
        ev = Evaluator(client, parse_alert_config(None))
        print(
            f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times include it)"
        )

        def report(label: str, r, extra: str = "") -> None:
            redis_cpu = _redis_cpu(client) - report.redis_cpu  # type: ignore[attr-defined]
            report.redis_cpu += redis_cpu  # type: ignore[attr-defined]
            print(
                f"{label:13} wall {r.duration_s * 1000:8.0f} ms | evaluator CPU {r.cpu_s * 1000:7.0f} ms + "
                f"redis-server CPU {redis_cpu * 1000:6.0f} ms | evaluated {r.evaluated:6d}, fired {r.fired}, "
                f"updated {r.updated}{extra}"
            )

        report.redis_cpu = _redis_cpu(client)  # type: ignore[attr-defined]
        r = ev.run_cycle(now_ms=now)
        report("cold cycle", r, f" ({r.evaluated / max(r.cpu_s, 1e-9):,.0f} groups per CPU-second)")
        r = ev.run_cycle(now_ms=now + 5_000)
        report("quiet cycle", r)
        store = RedisStore(client)
        names = [k.decode() for k in client.hkeys(store.k("refreshed"))]

        def refresh(share: list[str], stamp: int) -> None:
            pipe = client.pipeline(transaction=False)
            for name in share:
                pipe.hset(store.k("refreshed"), name, stamp)
            pipe.execute()

        # the collector refreshed every group (an Admin API poll moved every lag a little)
        refresh(names, now + 10_000)
        report.redis_cpu = _redis_cpu(client)  # type: ignore[attr-defined]
        r = ev.run_cycle(now_ms=now + 10_000)
        report("all refreshed", r, f", {r.skipped_quiet} quiet groups not read")
        refresh(names[::20], now + 12_000)
        report.redis_cpu = _redis_cpu(client)  # type: ignore[attr-defined]
        r = ev.run_cycle(now_ms=now + 12_000)
        report("5% refreshed", r, f", {r.skipped_quiet} quiet groups not read")
        r = ev.run_cycle(now_ms=now + 15_000, full=True)
        report("full (warm)", r)

        reg = make_registry(url)
        t, c = time.perf_counter(), time.process_time()
        body = generate_latest(reg)
        scrape_cpu = time.process_time() - c
        lines = body.count(b"\n")
        print(
            f"/metrics scrape: wall {(time.perf_counter() - t) * 1000:8.0f} ms, "
            f"CPU {scrape_cpu * 1000:.0f} ms, "
            f"{len(body) / 1e6:.1f} MB, "
            f"{lines} lines"
        )
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
