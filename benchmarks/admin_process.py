"""The Admin poller in a child process (collectors/pipeline/admin_process.py) against the same poller
as a thread of the caller (what the collector ran before): how long from its start to its first
poll's status in Redis, to its first describe line on the admin topic, and what the child costs in
memory (its RSS a few polls in). Each run is a fresh poller on its own admin topic, the two kinds
alternated, over N classic groups with committed offsets on the benchmark's own broker and Redis.

    .venv/bin/python benchmarks/admin_process.py              # 200 groups, 3 runs of each
    .venv/bin/python benchmarks/admin_process.py --groups 2000 --runs 5

Figures go to stdout; no timing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.demo.servers.kafka import KafkaBroker
from collectors.demo.servers.processes import RedisServer
from collectors.pipeline.admin_poller import AdminPoller
from collectors.pipeline.admin_process import AdminProcess
from collectors.pipeline.job import PipelineConfig
from collectors.storage.redis_store import RedisStore


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def first_line_at(bootstrap: str, topic: str, deadline: float) -> float | None:
    """When (time.monotonic) the first record of `topic` was read."""
    conf = {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False}
    c = Consumer(conf)
    c.assign([TopicPartition(topic, 0, 0)])
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                return time.monotonic()
        return None
    finally:
        c.close()


def run(kind: str, bootstrap: str, redis_url: str, groups: int) -> dict[str, float]:
    u = uuid.uuid4().hex[:8]
    admin_topic = f"bench-admin-{u}"
    client = AdminClient({"bootstrap.servers": bootstrap})
    client.create_topics([NewTopic(admin_topic, 1, 1)])[admin_topic].result(30)
    cfg = PipelineConfig(
        redis_url=redis_url,
        checkpoint_dir=tempfile.mkdtemp(prefix="bench-admin-"),
        cluster=f"b{u}",
        kafka={"bootstrap.servers": bootstrap},
        admin_topic=admin_topic,
        admin_poll_interval_s=1.0,
    )
    store = RedisStore.from_url(redis_url, prefix=cfg.prefix)
    t0 = time.monotonic()
    if kind == "child":
        poller: AdminProcess | AdminPoller = AdminProcess(cfg, store, offsets_readable=True)
    else:
        poller = AdminPoller(cfg, store, offsets_readable=True)
    poller.start()
    out: dict[str, float] = {}
    try:
        line_at = first_line_at(bootstrap, admin_topic, t0 + 60)
        out["first line (s)"] = (line_at - t0) if line_at else float("nan")
        while time.monotonic() - t0 < 60:
            if (store.freshness()["sources"].get("admin") or {}).get("ok"):
                out["first poll's status (s)"] = time.monotonic() - t0
                break
            time.sleep(0.02)
        time.sleep(3)  # a few polls in
        if isinstance(poller, AdminProcess) and poller.proc is not None:
            out["child RSS (MB)"] = rss_mb(poller.proc.pid)
    finally:
        poller.stop()
        poller.join(30)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        broker = KafkaBroker(workdir=Path(work)).start()
        redis = RedisServer().start()
        try:
            bs = broker.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bs})
            admin.create_topics([NewTopic("bench-data", 10, 1)])["bench-data"].result(30)
            tps = [TopicPartition("bench-data", p, 1) for p in range(10)]
            for i in range(args.groups):
                g = f"bench-g{i:05d}"
                admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g].result(30)
            figures: dict[str, dict[str, list[float]]] = {"thread": {}, "child": {}}
            for _ in range(args.runs):
                for kind in ("thread", "child"):
                    for k, v in run(kind, bs, redis.url, args.groups).items():
                        figures[kind].setdefault(k, []).append(v)
        finally:
            redis.stop()
            broker.stop()
    print(f"Admin poller, {args.groups} groups, {args.runs} runs of each (alternated): median (min-max)")
    print("| poller | " + " | ".join(sorted({k for f in figures.values() for k in f})) + " |")
    keys = sorted({k for f in figures.values() for k in f})
    print("|---|" + "---:|" * len(keys))
    for kind, f in figures.items():
        cells = [
            f"{statistics.median(f[k]):.2f} ({min(f[k]):.2f}-{max(f[k]):.2f})" if k in f else "-"
            for k in keys
        ]
        print(f"| {kind} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
