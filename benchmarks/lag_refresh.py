"""What the lag refresher (collectors/pipeline/lag_refresh.py) costs a lagging group: the fleet of
commit_path.py caught up, then every group committing all of its partitions in 9 rounds 5 s apart
while the log ends move (so each partition's Burrow window fills), then the log ends move on; one
`LagRefresher.run_once` brings every group up to them. CPU of that call per group, with a real
redis-server, in one process (no Spark).

    .venv/bin/python benchmarks/lag_refresh.py                    # 2,000 groups x 100 partitions
    .venv/bin/python benchmarks/lag_refresh.py --groups 500 --runs 3

At 10,000 lagging groups, each refreshed once a minute (LAG_REFRESH_MS), x ms a group is x/6 of a
core; the refresher spends at most its `cpu_share` (0.2) and falls behind beyond it. Figures go to
stdout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def measure(groups: int, partitions: int) -> float:
    """CPU ms per group of one refresh of a fleet whose windows are full."""
    import pandas as pd
    from commit_path import T0, Fleet, Stages

    from collectors.demo.servers.processes import RedisServer
    from collectors.pipeline.lag_refresh import LagRefresher

    server = RedisServer().start()
    try:
        fleet = Fleet(groups, partitions)
        stages = Stages(server.url, "lr", True)
        stages.now = T0 + 20_000
        first = [fleet.ends(T0, 100, False), fleet.commits(range(partitions), T0 + 10, 50)]
        stages.run(pd.concat([*first, fleet.clock(T0 + 20_000)]))
        for k in range(1, 10):  # the windows fill: a commit of every partition each 5 s, the ends moving
            at = T0 + 20_000 + k * 5_000
            stages.now = at + 500
            stages.run(
                pd.concat(
                    [
                        fleet.ends(at - 100, 100 + 50 * k, False),
                        fleet.commits(range(partitions), at, 50 + 10 * k),
                        fleet.clock(at),
                    ]
                )
            )
        at = T0 + 90_000
        stages.run(pd.concat([fleet.ends(at, 2_200, False), fleet.clock(at)]))  # the ends move on
        refresher = LagRefresher(server.url, "lr", 7 * 24 * 3600 * 1000, clock=lambda: T0 + 200_000)
        t0 = time.process_time()
        n = refresher.run_once(now_ms=T0 + 200_000, budget_s=10_000)
        spent = time.process_time() - t0
        assert n == groups, (n, groups)
        return 1000 * spent / n
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [measure(args.groups, args.partitions) for _ in range(args.runs)]
    head = f"{args.groups:,} lagging groups x {args.partitions} partitions"
    print(f"\n{head}, windows full: one refresh each\n")
    print("| ms per group (each run) | median | cores at 10,000 groups a minute |")
    print("|---|---:|---:|")
    med = statistics.median(runs)
    print(f"| {', '.join(f'{x:.2f}' for x in runs)} | {med:.2f} | {med * 10_000 / 60_000:.2f} |")


if __name__ == "__main__":
    main()
