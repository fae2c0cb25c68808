"""Several clusters: what one collector per cluster costs, measured against real Apache Kafka brokers.

    .venv/bin/python benchmarks/clusters.py     # 2 brokers, 1,000 groups x 20 partitions each
    .venv/bin/python benchmarks/clusters.py --groups 2000 --partitions 50

It starts two embedded brokers (collectors/demo/servers/kafka) and a redis-server, and writes the same
shape of backlog on each with real commits (AlterConsumerGroupOffsets). Then:
- baseline: one `groupscope collect --cluster east` alone, until every group of east is in Redis
  with its last commit: time, peak RSS of its process tree, RSS once idle;
- side by side: `collect --cluster east` and `collect --cluster west` started together (fresh
  checkpoints, Redis emptied), until both clusters are complete: time, each tree's peak and idle RSS
  and their sum;
- shared: one `collect --all-clusters` (one Spark application, a query per cluster), the same.
The figures printed are the ones docs/running-on-a-cluster.md ("Several clusters") cites.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.pipeline import PeakMemory, _complete, produce_backlog, stop_process_group, tree_rss_mb
from collectors.demo.servers.kafka import KafkaBroker
from collectors.demo.servers.processes import RedisServer
from collectors.storage.clusters import cluster_prefix


class ClusterCollector:
    """`groupscope collect --cluster NAME` (or `--all-clusters` when `name` is "all"), the clusters
    configured in the environment as a user would."""

    def __init__(self, name: str, clusters: dict[str, str], redis_url: str) -> None:
        env = dict(os.environ, GROUPSCOPE_REDIS_URL=redis_url)
        env.pop("GROUPSCOPE_BOOTSTRAP_SERVERS", None)
        for n, bs in clusters.items():
            env[f"GROUPSCOPE_CLUSTERS__{n.upper()}__BOOTSTRAP_SERVERS"] = bs
        env["GROUPSCOPE_CHECKPOINT_DIR"] = tempfile.mkdtemp(prefix="gs-bench-clusters-")
        self.log = tempfile.NamedTemporaryFile(prefix=f"gs-bench-{name}-", suffix=".log", delete=False)  # noqa: SIM115
        exe = Path(sys.executable).with_name("groupscope")
        self.proc = subprocess.Popen(
            [
                str(exe),
                "collect",
                *(["--all-clusters"] if name == "all" else ["--cluster", name, "--no-progress"]),
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.mem = PeakMemory(self.proc.pid)
        self.mem.start()

    def stop(self) -> None:
        stop_process_group(self.proc)


def run(
    clusters: dict[str, str],
    which: list[str],
    redis_url: str,
    groups: int,
    last: dict[int, int],
    processes: list[str] | None = None,
) -> dict:
    """Collectors `processes` (cluster names, or "all" for one --all-clusters process; default one
    per cluster of `which`) until every cluster of `which` is complete."""
    import redis

    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    names = [f"bench-group-{i:05d}" for i in range(groups)]
    t0 = time.monotonic()
    cols = {n: ClusterCollector(n, clusters, redis_url) for n in (processes or which)}
    pending = {n: list(names) for n in which}
    done: dict[str, float] = {}
    try:
        while len(done) < len(which) and time.monotonic() - t0 < 1200:
            for n in which:
                if n in done:
                    continue
                if r.hlen(f"{cluster_prefix(n)}:fleet") >= groups:
                    pending[n] = _complete(r, pending[n], last, cluster_prefix(n))
                    if not pending[n]:
                        done[n] = time.monotonic() - t0
            if any(c.proc.poll() is not None for c in cols.values()):
                raise SystemExit("a collector exited: " + ", ".join(c.log.name for c in cols.values()))
            time.sleep(0.5)
        time.sleep(20)  # idle: the live micro-batches and the Admin poller at rest
        idle = {n: tree_rss_mb(c.proc.pid) for n, c in cols.items()}
    finally:
        for c in cols.values():
            c.stop()
    peaks = {n: c.mem.stop() for n, c in cols.items()}
    return {"done_s": done, "peak_mb": peaks, "idle_mb": idle}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=20, help="committed partitions per group (<= 100)")
    args = ap.parse_args()
    per_group = min(100, args.partitions)
    redis_srv = RedisServer().start()
    brokers = {n: KafkaBroker().start() for n in ("east", "west")}
    try:
        clusters = {n: b.bootstrap_servers for n, b in brokers.items()}
        for n, bs in clusters.items():
            s = produce_backlog(bs, args.groups * per_group, args.groups)
            print(f"backlog on {n}: {args.groups:,} groups x {per_group} partitions in {s:.1f} s", flush=True)
        last = {p: 10 + p for p in range(per_group)}
        print("| run | process | caught up | peak RSS | idle RSS |", flush=True)
        print("|---|---|---|---|---|", flush=True)
        # the shared application first: the newest code path, and its failure should come early
        shared = _report(
            "two clusters, one --all-clusters process",
            run(clusters, ["east", "west"], redis_srv.url, args.groups, last, processes=["all"]),
        )
        one = _report(
            "one cluster, one collector (baseline)", run(clusters, ["east"], redis_srv.url, args.groups, last)
        )
        two = _report(
            "two clusters, a collector process each",
            run(clusters, ["east", "west"], redis_srv.url, args.groups, last),
        )
    finally:
        for b in brokers.values():
            b.stop()
        redis_srv.stop()
    for label, res in (
        ("two clusters, a collector process each", two),
        ("two clusters, one --all-clusters process", shared),
    ):
        peak, idle = sum(res["peak_mb"].values()), sum(res["idle_mb"].values())
        print(
            f"{label}: {peak:,.0f} MB peak and {idle:,.0f} MB idle in all, slowest catch-up "
            f"{max(res['done_s'].values(), default=float('nan')):.1f} s "
            f"(baseline: {one['done_s'].get('east', float('nan')):.1f} s, {one['peak_mb']['east']:,.0f} MB)"
        )


def _report(label: str, res: dict) -> dict:
    done = ", ".join(f"{n} {t:.1f} s" for n, t in sorted(res["done_s"].items())) or "-"
    for n in res["peak_mb"]:
        print(
            f"| {label} | {n} | {done} | {res['peak_mb'][n]:,.0f} MB | {res['idle_mb'][n]:,.0f} MB |",
            flush=True,
        )
    return res


if __name__ == "__main__":
    main()
