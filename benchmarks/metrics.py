"""Benchmark: a Prometheus scrape of /metrics over 50,000 groups, as Prometheus makes it (HTTP, with and
without gzip), next to the scrape before summaries measured in the same run: the previous
collectors/exporter/scrape.py, kept below as `reference_registry` (every fleet row and every document
read and formatted by prometheus_client, served by prometheus_client's app, which gzips at level 9).

Fills a Redis (its own redis-server, or --redis URL, which is FLUSHED) like benchmarks/alerts.py (the
captures' documents through RedisStore, 1% storming, 4% lagging), runs one alert cycle (so firing
alerts are part of the scrape), then times each scrape --repeat times, alternating old and new, and
prints medians (and the in-process scrape's CPU time, which load on the machine inflates less). Also
the per-partition scrape (`metrics_per_partition`, off by default) once each.

Every series of the scrape has a `cluster` label. `--clusters N` adds N-1 more Kafka clusters holding
copies of the same groups (the keys a scrape reads, copied under `gs@benchN`, and registered), so one
scrape covers N x --groups series sets; the baseline knows no clusters and scrapes the first only.
`--no-baseline` skips the baseline (20 s a scrape).

    .venv/bin/python benchmarks/metrics.py [--groups 50000] [--repeat 5] [--clusters 1] [--no-baseline]
                                           [--redis URL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.core import GaugeMetricFamily  # noqa: E402

from collectors.alerts.evaluate import Evaluator  # noqa: E402
from collectors.demo.servers.processes import RedisServer, free_port  # noqa: E402
from collectors.exporter.scrape import MetricsSource  # noqa: E402
from collectors.exporter.server import start_metrics_server  # noqa: E402
from collectors.storage.alerts import AlertStore  # noqa: E402
from collectors.storage.clusters import ClusterRegistry, cluster_prefix  # noqa: E402
from collectors.storage.redis_store import RedisStore  # noqa: E402
from coordinator_model.alert_rules import parse_alert_config  # noqa: E402
from coordinator_model.document.types import GroupDocument  # noqa: E402


class ReferenceCollector:
    """The scrape before summaries, as collectors/exporter/scrape.py had it (the baseline)."""

    def __init__(self, client: Any, per_partition: bool = False, chunk: int = 1000) -> None:
        self.r = client
        self.data = RedisStore(client)
        self.alerts = AlertStore(client)
        self.per_partition = per_partition
        self.chunk = chunk

    def describe(self) -> list:
        return []

    def collect(self) -> list:
        g = GaugeMetricFamily
        groups = g("groupscope_groups", "Consumer groups per state", labels=["state"])
        state = g("groupscope_group_state", "1 for the group's current state", labels=["group", "state"])
        members = g("groupscope_group_members", "Members of the group", labels=["group"])
        generation = g(
            "groupscope_group_generation", "Classic generation, or KIP-848 group epoch", labels=["group"]
        )
        rebalances = g("groupscope_group_rebalances_1h", "Rebalances in the last hour", labels=["group"])
        lag = g("groupscope_group_lag_offsets", "Total lag in messages", labels=["group"])
        lag_s = g("groupscope_group_lag_seconds", "Worst partition lag in seconds", labels=["group"])
        tlag = g("groupscope_group_topic_lag_offsets", "Lag in messages per topic", labels=["group", "topic"])
        tlag_s = g(
            "groupscope_group_topic_lag_seconds", "Worst lag in seconds per topic", labels=["group", "topic"]
        )
        plag = g(
            "groupscope_partition_lag_offsets", "Lag in messages", labels=["group", "topic", "partition"]
        )
        plag_s = g(
            "groupscope_partition_lag_seconds", "Lag in seconds", labels=["group", "topic", "partition"]
        )
        firing = g("groupscope_alert_firing", "1 per firing alert", labels=["group", "rule", "severity"])
        active_rule = g("groupscope_alerts_active", "Firing alerts per rule", labels=["rule"])
        out = [groups, state, members, generation, rebalances, lag, lag_s, tlag, tlag_s]
        rows = self.r.hgetall(self.data.key_of("fleet"))
        per_state: dict[str, int] = {}
        names: list[str] = []
        for raw_name, raw in rows.items():
            name = raw_name.decode()
            row = json.loads(raw)
            names.append(name)
            st = str(row.get("state") or "Unknown")
            per_state[st] = per_state.get(st, 0) + 1
            state.add_metric([name, st], 1)
            members.add_metric([name], float(row.get("members") or 0))
            gen = row.get("generation") if row.get("generation") is not None else row.get("group_epoch")
            if gen is not None:
                generation.add_metric([name], float(gen))
            rebalances.add_metric([name], float(row.get("rebalances_1h") or 0))
            lag.add_metric([name], float(row.get("lag") or 0))
            lag_s.add_metric([name], float(row.get("lag_seconds") or 0))
        for st, n in sorted(per_state.items()):
            groups.add_metric([st], n)
        for i in range(0, len(names), self.chunk):
            chunk = names[i : i + self.chunk]
            for name, raw in zip(chunk, self.data.document_texts(chunk), strict=True):
                if not raw:
                    continue
                topics: dict[str, list[float]] = {}
                for p in GroupDocument.from_json(json.loads(raw)).lag.partitions:
                    t = topics.setdefault(p.topic, [0.0, 0.0])
                    t[0] += p.lag or 0
                    t[1] = max(t[1], p.lag_seconds or 0.0)
                    if self.per_partition:
                        plag.add_metric([name, p.topic, str(p.partition)], float(p.lag or 0))
                        plag_s.add_metric([name, p.topic, str(p.partition)], float(p.lag_seconds or 0))
                for topic, (off, sec) in sorted(topics.items()):
                    tlag.add_metric([name, topic], off)
                    tlag_s.add_metric([name, topic], sec)
        if self.per_partition:
            out += [plag, plag_s]
        per_rule: dict[str, int] = {}
        for a in self.alerts.active():
            firing.add_metric([a["group"], a["rule"], a.get("severity", "warning")], 1)
            per_rule[a["rule"]] = per_rule.get(a["rule"], 0) + 1
        for rule, n in sorted(per_rule.items()):
            active_rule.add_metric([rule], n)
        out += [firing, active_rule]
        errors = g("groupscope_scrape_errors", "1 when Redis could not be read for this scrape")
        errors.add_metric([], 0)
        return [*out, errors]


def reference_registry(client: Any, per_partition: bool = False) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ReferenceCollector(client, per_partition))  # type: ignore[arg-type]
    return registry


def http_get(port: int, gzip_ok: bool) -> tuple[float, int]:
    """(wall s, bytes on the wire) of one GET /metrics, as Prometheus sends it."""
    headers = {"Accept-Encoding": "gzip"} if gzip_ok else {}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as resp:
        body = resp.read()
    return time.perf_counter() - t, len(body)


def in_process(fn: Any) -> tuple[float, int, float]:
    """(wall s, bytes, CPU s) of one scrape in this process."""
    t, c = time.perf_counter(), time.process_time()
    body = fn()
    return time.perf_counter() - t, len(body), time.process_time() - c


def copy_cluster(client: Any, name: str) -> None:
    """Another cluster with the same groups: the keys a scrape reads of the cluster `default`, copied
    under the cluster's prefix (COPY, Redis 6.2 or later), and the cluster registered."""
    dst = cluster_prefix(name)
    keys = [b"gs:fleet", b"gs:fleet:state", *client.scan_iter("gs:summary:metrics:*", count=1000)]
    keys += [k for k in (b"gs:alerts:active", b"gs:alerts:cycle") if client.exists(k)]
    for key in keys:
        client.copy(key, dst.encode() + key[len(b"gs") :], replace=True)
    ClusterRegistry(client).register(name, None)


def main() -> None:
    from benchmarks.fleet_docs import fill, templates

    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--redis", default=None, help="Redis URL to use (FLUSHED); default: start one")
    ap.add_argument("--clusters", type=int, default=1, help="Kafka clusters, each with --groups groups")
    ap.add_argument("--no-baseline", action="store_true", help="Skip the scrape before summaries")
    args = ap.parse_args()
    server = None
    url = args.redis
    if url is None:
        server = RedisServer().start()
        url = server.url
    try:
        client = redis.Redis.from_url(url, socket_timeout=120)
        client.flushdb()
        now = fill(client, args.groups, templates())
        Evaluator(client, parse_alert_config(None)).run_cycle(now_ms=now)
        print(f"filled {args.groups} groups; {len(AlertStore(client).active())} alerts firing")
        for i in range(1, args.clusters):
            copy_cluster(client, f"bench{i}")
        if args.clusters > 1:
            print(f"{args.clusters} clusters of {args.groups} groups each (the baseline scrapes the first)")
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times include it)")
        from prometheus_client import start_http_server

        new_port, old_port = free_port(), free_port()
        new_server, _ = start_metrics_server(new_port, url, addr="127.0.0.1")
        old_server, _ = start_http_server(old_port, addr="127.0.0.1", registry=reference_registry(client))
        cases = {
            "in process": (
                lambda: in_process(MetricsSource(client).render),
                lambda: in_process(lambda: generate_latest(reference_registry(client))),
            ),
            "HTTP, gzip": (lambda: http_get(new_port, True), lambda: http_get(old_port, True)),
            "HTTP, plain": (lambda: http_get(new_port, False), lambda: http_get(old_port, False)),
        }
        paths = ("new",) if args.no_baseline else ("new", "old")
        figures: dict[str, dict[str, list[tuple[Any, ...]]]] = {c: {"new": [], "old": []} for c in cases}
        for i in range(args.repeat):
            for case, (new, old) in cases.items():
                pair = (("new", new), ("old", old)) if i % 2 == 0 else (("old", old), ("new", new))
                for which, fn in pair:
                    if which in paths:
                        figures[case][which].append(fn())
            print(
                f"run {i + 1}: "
                + ", ".join(
                    f"{case} {v['new'][-1][0] * 1000:.0f} ms"
                    + (f" (before {v['old'][-1][0] * 1000:.0f} ms)" if v["old"] else "")
                    for case, v in figures.items()
                ),
                flush=True,
            )
        new_server.shutdown()
        old_server.shutdown()
        groups = args.groups * args.clusters
        print(f"\nmedians of {args.repeat}, {groups} groups in {args.clusters} cluster(s): wall ms (bytes)")
        print(f"{'scrape':14} {'summaries':>24} {'before':>24}")
        for case, v in figures.items():
            cols = [
                f"{statistics.median(x[0] for x in v[w]) * 1000:8.0f} ({v[w][-1][1] / 1e6:5.1f} MB)"
                if v[w]
                else "-"
                for w in ("new", "old")
            ]
            print(f"{case:14} {cols[0]:>24} {cols[1]:>24}")
        cpu = [
            f"{statistics.median(x[2] for x in figures['in process'][w]) * 1000:8.0f}"
            if figures["in process"][w]
            else "-"
            for w in ("new", "old")
        ]
        print(f"{'in process CPU':14} {cpu[0]:>24} {cpu[1]:>24}")
        new_pp = in_process(MetricsSource(client, per_partition=True).render)
        if args.no_baseline:
            print(
                f"{'per partition':14} {new_pp[0] * 1000:8.0f} ({new_pp[1] / 1e6:5.1f} MB)   "
                "(from the documents)"
            )
        else:
            old_pp = in_process(lambda: generate_latest(reference_registry(client, per_partition=True)))
            print(
                f"{'per partition':14} {new_pp[0] * 1000:8.0f} ({new_pp[1] / 1e6:5.1f} MB) "
                f"{old_pp[0] * 1000:14.0f} ({old_pp[1] / 1e6:5.1f} MB)   (from the documents, once each)"
            )
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
