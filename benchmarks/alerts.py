"""Benchmark: alert evaluation cycles over 50,000 groups in Redis, and a /metrics scrape, each on the
sink's summaries (collectors/storage/summaries.py) and, as the baseline measured in the same run, on the
documents (the path before summaries: `Evaluator(summaries=False)`, and a prometheus_client registry
reading fleet rows and documents).

Fills a Redis (its own redis-server on a free port, or --redis URL, which is FLUSHED) with N group
documents built from the real captures' model output (renamed copies: mostly steady groups with lag,
1% in a rebalance storm, 4% lagging), written through RedisStore as the sink writes them, then per
round and per path (the two paths back to back, their order alternating between rounds):
  - cold: every group new to the evaluator (its bookkeeping cleared): all read and judged,
  - quiet: nothing changed: only the refresh stamps are compared,
  - all refreshed: the collector stamped every group again, same documents (quiet groups not read),
  - 5% refreshed: the same for 5% of the groups,
  - 5% changed: 2,500 documents rewritten through the store with a new rebalance each (a new
    generation and timeline spans), so none of them can be skipped,
  - full: every group re-judged with the alerts already in place,
then a scrape both ways, and what the summaries cost the sink per document.
Prints medians over the rounds (--rounds, default 3).

    .venv/bin/python benchmarks/alerts.py [--groups 50000] [--rounds 3] [--redis URL]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from prometheus_client import generate_latest  # noqa: E402

from benchmarks.fleet_docs import fill, group_doc, templates  # noqa: E402
from benchmarks.metrics import reference_registry  # noqa: E402
from collectors.alerts.evaluate import Evaluator  # noqa: E402
from collectors.demo.servers.processes import RedisServer  # noqa: E402
from collectors.exporter.scrape import MetricsSource  # noqa: E402
from collectors.storage.redis_store import RedisStore  # noqa: E402
from coordinator_model.alert_rules import parse_alert_config  # noqa: E402

PATHS = ("summaries", "documents")


def rebalanced(doc: dict, t: int) -> dict:
    """The document after one more rebalance at t (a member joined): a new generation and the
    PreparingRebalance, CompletingRebalance and Stable spans it went through."""
    d = copy.deepcopy(doc)
    gens = d.setdefault("generations", [])
    last = gens[-1] if gens else {}
    n = int(last.get("generation") or 0) + 1
    if last and last.get("end") is None:
        last["end"] = t
    joined = f"bench-{n}-0a1b2c3d-0000-4000-8000-000000000000"
    gens.append({**last, "generation": n, "start": t, "end": None, "cause": "member_joined"})
    gens[-1].update({"members_joined": [joined], "members_left": [], "duration_ms": 40})
    tl = d.setdefault("timeline", [])
    if tl and tl[-1].get("end") is None:
        tl[-1]["end"] = t
    tl += [
        {"state": "PreparingRebalance", "start": t, "end": t + 30, "inferred": False},
        {"state": "CompletingRebalance", "start": t + 30, "end": t + 40, "inferred": False},
        {"state": "Stable", "start": t + 40, "end": None, "inferred": False},
    ]
    d["generation"], d["state"] = n, "Stable"
    return d


def _redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def reset_alerts(client: redis.Redis) -> None:
    """Forget every alert and the evaluator's bookkeeping: the next cycle is a cold one."""
    keys = list(client.scan_iter("gs:alerts:*", count=10_000))
    for i in range(0, len(keys), 10_000):
        client.delete(*keys[i : i + 10_000])


def run_path(
    client: redis.Redis, path: str, tpl: dict, now: int, run: int
) -> dict[str, tuple[float, float, int]]:
    """The cycles of one path (the run-th of the benchmark: each starts later than the one before, so
    no cycle is judged before documents an earlier run wrote): label -> (wall s, evaluator CPU s,
    groups evaluated)."""
    reset_alerts(client)
    ev = Evaluator(client, parse_alert_config(None), summaries=path == "summaries")
    store = RedisStore(client)
    names = [k.decode() for k in client.hkeys(store.key_of("refreshed"))]
    out: dict[str, tuple[float, float, int]] = {}

    def cycle(label: str, at: int, full: bool = False) -> None:
        r = ev.run_cycle(now_ms=at, full=full)
        out[label] = (r.duration_s, r.cpu_s, r.evaluated)

    def restamp(share: list[str], stamp: int) -> None:
        pipe = client.pipeline(transaction=False)
        for name in share:
            pipe.hset(store.key_of("refreshed"), name, stamp)
        pipe.execute()

    base = now + run * 100_000
    cycle("cold", base)
    cycle("quiet", base + 5_000)
    restamp(names, base + 10_000)  # an Admin API poll moved every lag a little
    cycle("all refreshed", base + 10_000)
    restamp(names[::20], base + 12_000)
    cycle("5% refreshed", base + 12_000)
    # 5% of the groups rebalanced: their documents rewritten through the store, as the sink does
    changed = [int(name.rsplit("-", 1)[1]) for name in names[1::20]]
    docs = [rebalanced(group_doc(tpl, i, now), base + 13_000) for i in changed]
    for i in range(0, len(docs), 500):
        store.write_groups(docs[i : i + 500], base + 14_000)
    cycle("5% changed", base + 14_000)
    cycle("full (warm)", base + 15_000, full=True)
    return out


def scrape(client: redis.Redis, path: str) -> tuple[float, float, int]:
    """(wall s, CPU s, bytes) of one scrape: the text the WSGI app serves, or the baseline (the scrape
    before summaries: fleet rows and documents, formatted by prometheus_client; benchmarks/metrics.py)."""
    t, c = time.perf_counter(), time.process_time()
    if path == "summaries":
        body = MetricsSource(client).render()
    else:
        body = generate_latest(reference_registry(client))
    return time.perf_counter() - t, time.process_time() - c, len(body)


def sink_cost(client: redis.Redis, tpl: dict, now: int, n: int = 5000) -> dict[str, float]:
    """CPU per document of RedisStore.write_many as the sink calls it (documents with their text),
    with and without summaries: a refresh (lag moved, history unchanged) and a rebalance (history
    changed, the rule head rebuilt). Written under another prefix, removed afterwards."""
    docs = [group_doc(tpl, i, now) for i in range(n)]
    for i, d in enumerate(docs):
        d["group"] = f"sinkbench-{i:06d}"
    out: dict[str, float] = {}
    for summaries in (False, True):
        store = RedisStore(client, prefix="sinkbench", summaries=summaries)
        client.delete(*list(client.scan_iter("sinkbench:*", count=10_000)) or ["sinkbench:none"])
        for label, batch in (
            ("first", docs),
            ("refresh", [_lag_moved(d) for d in docs]),
            ("rebalance", [rebalanced(d, now + 1_000) for d in docs]),
        ):
            texts = [json.dumps(d, separators=(",", ":"), sort_keys=True) for d in batch]
            c = time.process_time()
            for i in range(0, n, 200):
                pipe = store.pipeline()
                items = [(d, now + 2_000, now + 2_000) for d in batch[i : i + 200]]
                store.write_many(items, pipe=pipe, texts=texts[i : i + 200])
                pipe.execute()
            out[f"{label} {'with' if summaries else 'without'}"] = (time.process_time() - c) / n
    keys = list(client.scan_iter("sinkbench:*", count=10_000))
    for i in range(0, len(keys), 10_000):
        client.delete(*keys[i : i + 10_000])
    return out


def _lag_moved(doc: dict) -> dict:
    d = copy.deepcopy(doc)
    for p in (d.get("lag") or {}).get("partitions") or []:
        if isinstance(p.get("lag"), int):
            p["lag"] += 3
            p["end_offset"] = (p.get("end_offset") or 0) + 3
    return d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
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
        print(
            f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times include it)"
        )
        cycles: dict[str, dict[str, list[tuple[float, float, int]]]] = {p: {} for p in PATHS}
        scrapes: dict[str, list[tuple[float, float, int]]] = {p: [] for p in PATHS}
        sink: dict[str, list[float]] = {}
        run = 0
        for rnd in range(args.rounds):
            order = PATHS if rnd % 2 == 0 else PATHS[::-1]
            for path in order:
                r0 = _redis_cpu(client)
                for label, figures in run_path(client, path, tpl, now, run).items():
                    cycles[path].setdefault(label, []).append(figures)
                run += 1
                print(
                    f"round {rnd + 1} {path:9}: "
                    + ", ".join(
                        f"{k} {v[-1][0] * 1000:.0f} ms ({v[-1][1] * 1000:.0f} CPU, {v[-1][2]} judged)"
                        for k, v in cycles[path].items()
                    )
                    + f"; redis-server CPU {(_redis_cpu(client) - r0):.1f} s",
                    flush=True,
                )
            for path in order:
                scrapes[path].append(scrape(client, path))
            print(
                f"round {rnd + 1} scrape: "
                + ", ".join(
                    f"{p} {scrapes[p][-1][0] * 1000:.0f} ms ({scrapes[p][-1][1] * 1000:.0f} CPU)"
                    for p in PATHS
                ),
                flush=True,
            )
            for label, cpu in sink_cost(client, tpl, now).items():
                sink.setdefault(label, []).append(cpu)

        def med(values: list[float]) -> float:
            return statistics.median(values)

        print(f"\nmedians of {args.rounds} round(s), {args.groups} groups; wall ms (evaluator CPU ms)")
        print(f"{'cycle':14} {'summaries':>22} {'documents (before)':>22}   groups judged")
        for label in cycles["summaries"]:
            cols = []
            for path in PATHS:
                runs = cycles[path][label]
                cols.append(
                    f"{med([r[0] for r in runs]) * 1000:8.0f} ({med([r[1] for r in runs]) * 1000:6.0f})"
                )
            judged = "/".join(str(int(med([r[2] for r in cycles[p][label]]))) for p in PATHS)
            print(f"{label:14} {cols[0]:>22} {cols[1]:>22}   {judged}")
        cols = [
            f"{med([s[0] for s in scrapes[p]]) * 1000:8.0f} ({med([s[1] for s in scrapes[p]]) * 1000:6.0f})"
            for p in PATHS
        ]
        size = scrapes["summaries"][-1][2]
        print(f"{'/metrics':14} {cols[0]:>22} {cols[1]:>22}   {size / 1e6:.1f} MB of text")
        print("\nsink: RedisStore.write_many CPU per document (the sink's call, documents with their text)")
        for label in ("first", "refresh", "rebalance"):
            without, with_ = med(sink[f"{label} without"]), med(sink[f"{label} with"])
            print(
                f"  {label:10} without summaries {without * 1e6:6.0f} us, with {with_ * 1e6:6.0f} us "
                f"(+{(with_ - without) * 1e6:.0f} us)"
            )
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
