"""What a committing, lagging group costs the collector's first two stages, in one process, with a real
redis-server: the route stage and the model stage (model_state) as the live pipeline runs them, on
rounds where every group commits 10 of its partitions and the log ends move, next to the same
rounds with the group kept whole (every commit through its engine, an end-offsets line per group:
the layout before the parts) measured in the same run. In parts, the first stage commits what
partitions a group already holds (known_commits.py), as live.

    .venv/bin/python benchmarks/commit_path.py                 # 3,000 groups x 50 partitions, 5 rounds
    .venv/bin/python benchmarks/commit_path.py --groups 1000 --rounds 3

Spark's own costs (the shuffle, the state store, Arrow between the JVM and Python) are not in these
figures: benchmarks/pipeline.py measures the whole collector. Figures go to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

T0 = 1_800_000_000_000
KINDS = {"__consumer_offsets": "offsets", "groupscope.admin": "admin"}
COLUMNS = ["topic", "partition", "offset", "timestamp", "key", "value"]


class Fleet:
    """Raw records of a fleet of groups, each on topic `topic-{i % 10}`, as the sources give them."""

    def __init__(self, groups: int, partitions: int) -> None:
        self.groups = [f"g{i:05d}" for i in range(groups)]
        self.partitions = partitions
        self.log = 0

    def commits(self, parts: range, at: int, offset: int) -> Any:
        import pandas as pd

        from collectors.codec import records as r
        from collectors.codec.encoder import encode_key, encode_value

        rows = []
        for i, g in enumerate(self.groups):
            for p in parts:
                key = encode_key(r.OffsetCommitKey(g, f"topic-{i % 10}", p))
                value = encode_value(1, r.OffsetCommitValue(offset=offset, commit_timestamp=at), 3)
                rows.append(("__consumer_offsets", 0, self.log, at + p, key, value))
                self.log += 1
        return pd.DataFrame(rows, columns=COLUMNS)

    def ends(self, at: int, end: int, per_group: bool) -> Any:
        """The Admin poller's log-end offsets: a line per topic (the layout in parts), or a line per
        group (the layout before)."""
        import pandas as pd

        rows = []
        if per_group:
            lines = [
                (
                    g,
                    {
                        "group": g,
                        "ts": at,
                        "end_offsets": [[f"topic-{i % 10}", p, end] for p in range(self.partitions)],
                    },
                )
                for i, g in enumerate(self.groups)
            ]
        else:
            topics = sorted({f"topic-{i % 10}" for i in range(len(self.groups))})
            lines = [
                ("", {"group": "", "ts": at, "end_offsets": [[t, p, end] for p in range(self.partitions)]})
                for t in topics
            ]
        for key, line in lines:
            rows.append(("groupscope.admin", 0, self.log, at, key.encode(), json.dumps(line).encode()))
            self.log += 1
        return pd.DataFrame(rows, columns=COLUMNS)

    def clock(self, at: int) -> Any:
        import pandas as pd

        value = json.dumps({"ts": at, "clock": True}).encode()
        return pd.DataFrame([("groupscope.admin", 0, 0, at, b"", value)], columns=COLUMNS)


class Stages:
    """The route and model stages of one pipeline, every bucket in turn, with Spark's GroupState
    played by a dict (tests/test_pipeline_watermark.BucketState)."""

    def __init__(self, redis_url: str, prefix: str, parts: bool, buckets: int = 256) -> None:
        from collectors.pipeline import model_state
        from collectors.pipeline.known_commits import KnownCommits
        from collectors.pipeline.sink import SinkConfig

        self.now = T0
        self.model_state = model_state
        sink = SinkConfig(redis_url, prefix, live=True, redis_retry_s=5)
        self.update = model_state.make_update(
            True, 7 * 24 * 3600 * 1000, 5000, 5000, sink=sink, shared_ends=parts
        )
        self.parts, self.buckets, self.states = parts, buckets, {}
        # in parts, as live: the first stage commits runs to partitions a group already holds
        # (known_commits.py), and only the rest reach the model stage
        self.known = KnownCommits(sink) if parts else None

    def run(self, raw: Any) -> tuple[float, float]:
        """Both stages over `raw`; the CPU seconds of the route stage and of the model stage."""
        import pandas as pd

        from collectors.pipeline.route import decode_batches
        from tests.test_pipeline_watermark import BucketState

        self.model_state._now_ms = lambda: self.now
        t0 = time.process_time()
        routed = pd.concat(
            list(decode_batches(iter([raw]), KINDS, self.buckets, ends_apart=self.parts, known=self.known))
        )
        t1 = time.process_time()
        for bucket, rows in routed.groupby("bucket"):
            state = self.states.setdefault(int(bucket), BucketState())
            for _ in self.update((int(bucket),), iter([rows.reset_index(drop=True)]), state):
                pass
        return t1 - t0, time.process_time() - t1


def measure(
    redis_url: str, prefix: str, parts: bool, groups: int, partitions: int, rounds: int
) -> tuple[tuple[float, float], list[float]]:
    """The catch-up of every partition (route and model stage CPU seconds), then the CPU seconds per
    group of each round after it."""
    import pandas as pd

    fleet = Fleet(groups, partitions)
    stages = Stages(redis_url, prefix, parts)
    # a catch-up's batch reads to the log ends: its clock record (kafka_source.clock_row) is past
    # every commit, so the watermark lets them all through at once
    stages.now = T0 + 20_000
    catchup = stages.run(
        pd.concat(
            [
                fleet.ends(T0, 100, not parts),
                fleet.commits(range(partitions), T0 + 10, 50),
                fleet.clock(T0 + 20_000),
            ]
        )
    )
    out = []
    for k in range(1, rounds + 1):
        at = T0 + 20_000 + k * 5_000
        stages.now = at + 500
        raw = pd.concat(
            [
                fleet.ends(at - 100, 100 + 50 * k, not parts),
                fleet.commits(range(10), at, 50 + 10 * k),
                fleet.clock(at),
            ]
        )
        t0 = time.process_time()
        stages.run(raw)
        out.append((time.process_time() - t0) / groups)
    return catchup, out


def main() -> None:
    import statistics

    from collectors.demo.servers.processes import RedisServer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=3000)
    ap.add_argument("--partitions", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--parts-only", action="store_true", help="only the in-parts layout (as live)")
    args = ap.parse_args()
    server = RedisServer().start()
    try:
        rows, catchups = [], []
        layouts = (("whole group (the layout before)", False), ("in parts (commit path)", True))
        if args.parts_only:
            layouts = layouts[1:]
        for name, parts in layouts:
            (route_s, model_s), per_group = measure(
                server.url, f"bench-{int(parts)}", parts, args.groups, args.partitions, args.rounds
            )
            catchups.append((name, route_s, model_s))
            rows.append(
                (name, statistics.median(per_group) * 1000, min(per_group) * 1000, max(per_group) * 1000)
            )
        head = f"{args.groups:,} groups x {args.partitions} partitions"
        records = args.groups * args.partitions
        print(f"\n{head}: the catch-up of {records:,} commits, one batch, CPU seconds\n")
        print("| layout | route stage (s) | model stage (s) |")
        print("|---|---:|---:|")
        for name, route_s, model_s in catchups:
            print(f"| {name} | {route_s:.1f} | {model_s:.1f} |")
        print(f"\n{head}; each round: every group commits 10 partitions")
        print("and the log ends move; CPU of the route and model stages per group and round\n")
        print("| layout | median ms/group | min | max |")
        print("|---|---:|---:|---:|")
        for name, med, lo, hi in rows:
            print(f"| {name} | {med:.2f} | {lo:.2f} | {hi:.2f} |")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
