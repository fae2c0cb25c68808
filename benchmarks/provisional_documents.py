"""Provisional documents at scale: the heads thread (collectors/pipeline/provisional_heads.py) alone,
with its own redis-server, given the Admin poller's first answers for N classic groups (4 members,
100 partitions each): how long until every group is shown (its describe), then with its committed
offsets; the thread's CPU and Redis's memory after.

    .venv/bin/python benchmarks/provisional_documents.py              # 10,000 groups
    .venv/bin/python benchmarks/provisional_documents.py --groups 2000

Figures go to stdout; no timing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.demo.servers.processes import RedisServer
from collectors.pipeline.provisional_heads import ProvisionalHeads
from collectors.storage.redis_store import RedisStore


def describe_line(group: str, topic: str, ts: int) -> dict:
    return {
        "ts": ts,
        "group": group,
        "type": "classic",
        "state": "Stable",
        "assignor": "range",
        "coordinator": {"id": 1},
        "simple": False,
        "members": [
            {
                "member_id": f"m{i}-{group}",
                "group_instance_id": None,
                "client_id": f"c{i}",
                "host": "/10.0.0.1",
                "assignment": [[topic, p] for p in range(i * 25, (i + 1) * 25)],
                "target_assignment": None,
            }
            for i in range(4)
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    args = ap.parse_args()
    ts = int(time.time() * 1000)
    names = [f"g{i:05d}" for i in range(args.groups)]
    lines = [describe_line(g, f"t{i % 10}", ts) for i, g in enumerate(names)]
    fetched = {g: [(f"t{i % 10}", p, 1000 + p) for p in range(100)] for i, g in enumerate(names)}
    server = RedisServer().start()
    try:
        RedisStore.from_url(server.url).forget_pipeline_writes()
        heads = ProvisionalHeads(lambda: RedisStore.from_url(server.url))
        t0, c0 = time.monotonic(), time.process_time()
        heads.start()
        heads.describes(lines)
        while heads.written < args.groups and heads.is_alive():
            time.sleep(0.05)
        t1 = time.monotonic()
        heads.committed(fetched)
        heads.done()
        heads.join()
        t2, c2 = time.monotonic(), time.process_time()
        used = RedisStore.from_url(server.url).r.info("memory")["used_memory"]
        print(f"{args.groups:,} groups of 100 partitions:")
        print(f"  every group shown (describes): {t1 - t0:.1f} s")
        print(f"  with its committed offsets:    {t2 - t0:.1f} s")
        print(f"  CPU: {c2 - c0:.1f} s; Redis used memory: {used / 1e6:.0f} MB")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
