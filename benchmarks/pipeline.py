"""Pipeline benchmark against a real Apache Kafka broker: the catch-up of a `__consumer_offsets`
backlog by `groupscope collect` as shipped (Admin poller on), next to a plain single-process
confluent-kafka read of the same backlog in the same run; then, live, the time from a commit to its
lag in Redis with the whole fleet in the pipeline.

    .venv/bin/python benchmarks/pipeline.py                      # 1,000,000 records, 10,000 groups, 3 runs
    .venv/bin/python benchmarks/pipeline.py --records 200000 --groups 2000 --runs 1
    .venv/bin/python benchmarks/pipeline.py --bootstrap-servers host:9092 --redis redis://...

Catch-up, per run: a fresh `groupscope collect` process (new checkpoint, Redis emptied, the internal
admin topic deleted, as on a first start) until every group is in Redis with its last commit; the
time to the first group, and until every group is shown with its last commits (the Admin poller's
provisional documents while Spark starts count: collectors/pipeline/provisional_heads.py); the
peak RSS of the collector's whole process tree (driver, JVM, Python workers). The ratio printed is
catch-up time / plain-read time (issue target: at most 3).

Without --bootstrap-servers / --redis it starts its own Apache Kafka broker (collectors/demo/servers/kafka)
and redis-server. Kafka refuses a produce to `__consumer_offsets`, so the backlog is made of real
commits: AlterConsumerGroupOffsets requests, one group and up to 100 partitions each, many in flight,
written by the broker's own group coordinator (the groups have no members, as Burrow's benchmarks'
do not need any). Figures go to stdout; the run takes several minutes.

Live scenarios (issue "A pipeline whose cost follows the commits"; benchmarks/pipeline_live.py), after
the catch-up, with the collector that caught up still running:

    .venv/bin/python benchmarks/pipeline.py --scenarios busy,quiet        # no catch-up table
    .venv/bin/python benchmarks/pipeline.py --records 50000 --groups 500 --runs 1 \
        --scenarios busy,quiet --live-seconds 60
    .venv/bin/python benchmarks/pipeline.py --scenarios busy --commit-rate 1000 --produce-rate 3000

`--scenarios` picks among `catchup` (the table above and the two live latency lines after it),
`busy` and `quiet` (default: all three). Without `catchup`, one collector is started and waited for
as a catch-up run does (Redis emptied, fresh checkpoint), its time printed, and no plain read.
A producer first brings every partition of the ten topics above every committed offset, then
writes `--produce-rate` small messages a second over their 1,000 partitions, so every group lags.
- busy: the fleet commits 10 partitions a group, a little behind the log ends, at `--commit-rate`
  groups a second (default: groups / 10, i.e. 1,000/s at 10,000 groups, each group every 10 s),
  through several AdminClients in threads (one commits only about 170 groups a second);
- quiet: nothing commits but the probes.
Each runs `--warmup-seconds` of its load, then a window of `--live-seconds` in which a probe commit
goes every `--probe-every` seconds to a random group (a fresh offset on one partition), timed until
`RedisStore.get_document` shows it (60 s at most). A row per scenario: the commit rate reached,
commit -> Redis p50/p95/max and the probes that never showed, the CPU of the collector's process
tree (and of the broker, redis-server and the benchmark process itself) in cores over the window,
Redis used_memory at its start and end and the growth per minute, and the micro-batches the
collector logged in it (GROUPSCOPE_PROGRESS_LOG: count, median and max duration).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.pipeline_live import LiveSetup, run_live
from collectors.demo.servers.kafka import KafkaBroker
from collectors.demo.servers.processes import RedisServer

TOPIC = "__consumer_offsets"
STATE_STORES = {
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
}


# ---- memory -----------------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(p.name))
    return out


def tree_rss_mb(root: int) -> float:
    """RSS of a process and all its descendants (driver, JVM, Python workers), in MB."""
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        todo.extend(_children(pid))
    return total / 1024


class PeakMemory(threading.Thread):
    def __init__(self, root: int, every_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.root, self.every_s, self.peak = root, every_s, 0.0
        self._stop_evt = threading.Event()

    def run(self) -> None:
        while not self._stop_evt.is_set():
            self.peak = max(self.peak, tree_rss_mb(self.root))
            self._stop_evt.wait(self.every_s)

    def stop(self) -> float:
        self._stop_evt.set()
        self.join(5)
        return self.peak


# ---- backlog -----------------------------------------------------------------------------------------
def produce_backlog(bootstrap: str, records: int, groups: int, in_flight: int = 200) -> float:
    """`records` OffsetCommit records in all, `groups` groups: each AlterConsumerGroupOffsets request
    commits one group's offsets on up to 100 partitions of its topic (ten 100-partition topics)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"bench-topic-{i}" for i in range(10)]
    missing = [t for t in topics if t not in admin.list_topics(timeout=10).topics]
    for f in admin.create_topics([NewTopic(t, 100, 1) for t in missing]).values() if missing else []:
        f.result(60)
    per_group = max(1, -(-records // groups))
    t0 = time.monotonic()
    pending: list = []
    n = 0

    def send(req: Any, tries: int = 0) -> None:
        fut = admin.alter_consumer_group_offsets([req], request_timeout=60)[req.group_id]
        pending.append((req, tries, fut))

    def settle(item: tuple) -> None:
        # A commit the broker answered with a partition error (its coordinator still loading, just
        # after the broker started) resolves without raising: it is sent again, or the backlog would
        # silently lack that group and the catch-up would wait for it until its timeout.
        req, tries, fut = item
        done = fut.result(120)
        failed = [tp for tp in done.topic_partitions if tp.error is not None]
        if failed:
            if tries >= 10:
                raise RuntimeError(f"commit of {req.group_id} failed: {failed[0].error}")
            time.sleep(0.5)
            send(req, tries + 1)

    for round_ in range(-(-per_group // 100)):
        for i in range(groups):
            width = min(100, per_group - round_ * 100, records - n)
            if width <= 0:
                break
            g = f"bench-group-{i:05d}"
            tps = [TopicPartition(topics[i % 10], p, 10 * (round_ + 1) + p) for p in range(width)]
            send(ConsumerGroupTopicPartitions(g, tps))
            n += width
            if len(pending) >= in_flight:
                settle(pending.pop(0))
    while pending:
        settle(pending.pop(0))
    return time.monotonic() - t0


def plain_read(bootstrap: str) -> tuple[int, float]:
    """The baseline: one process, one confluent-kafka Consumer, every partition from the start."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-plain",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    parts = sorted(c.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions)
    highs = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in parts}
    todo = {p for p, h in highs.items() if h > 0}
    c.assign([TopicPartition(TOPIC, p, 0) for p in todo])
    n = 0
    t0 = time.monotonic()
    while todo:
        for m in c.consume(10000, timeout=1.0):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    todo.discard(m.partition())
                continue
            n += 1
            if m.offset() >= highs[m.partition()] - 1:
                todo.discard(m.partition())
    dt = time.monotonic() - t0
    c.close()
    return n, dt


def _reset_admin_topic(bootstrap: str, topic: str = "groupscope.admin") -> None:
    """Delete the collector's internal admin topic: a first start has none (an earlier run's lines
    would be read again from the earliest offset)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        return
    admin.delete_topics([topic])[topic].result(30)
    for _ in range(120):
        if topic not in admin.list_topics(timeout=10).topics:
            break
        time.sleep(0.5)
    time.sleep(2)  # the deletion reaches the broker's metadata cache


def _complete(
    r: Any, names: list[str], last: dict[str, int], prefix: str = "gs", provisional_ok: bool = False
) -> list[str]:
    """The groups among `names` whose committed offsets in Redis (under a cluster's `prefix`) do not
    have every expected last commit yet (`last`: partition -> last committed offset, the same for
    every benchmark group), in the pipeline's document (`provisional_ok`: or in the provisional one
    the Admin poller's first answers made while Spark starts). Read through the collector's own
    reader (RedisStore.document_texts), which puts a group stored in parts back together."""
    import json

    from collectors.storage.redis_store import RedisStore

    store = RedisStore(r, prefix=prefix)
    missing = []
    for i in range(0, len(names), 500):
        chunk = names[i : i + 500]
        for g, raw in zip(chunk, store.document_texts(chunk), strict=True):
            doc = json.loads(raw) if raw else {}
            if doc.get("provisional") and not provisional_ok:
                doc = {}
            offs = {o["partition"]: o["offset"] for o in doc.get("offsets") or []}
            if any(offs.get(part) != off for part, off in last.items()):
                missing.append(g)
    return missing


def _pipeline_rows(r: Any, names: list[str], prefix: str = "gs") -> list[str]:
    """The groups among `names` whose fleet row is the pipeline's (not a provisional one): the cheap
    test before `_complete` reads and puts together a group's whole document. Read for all 10,000
    groups four times a second, the documents cost the benchmark half a core during the catch-up it
    was timing, on the collector's two cores."""
    rows = r.hmget(f"{prefix}:fleet", names)
    return [g for g, row in zip(names, rows, strict=True) if row is not None and b'"provisional"' not in row]


class Collector:
    """`groupscope collect` as a user runs it (its own process, settings from the environment)."""

    def __init__(self, bootstrap: str, redis_url: str) -> None:
        env = dict(os.environ)
        env.update(GROUPSCOPE_BOOTSTRAP_SERVERS=bootstrap, GROUPSCOPE_REDIS_URL=redis_url)
        self.log = tempfile.NamedTemporaryFile(prefix="gs-bench-collect-", suffix=".log", delete=False)  # noqa: SIM115
        # one JSON line per micro-batch (the live scenarios read the durations)
        self.progress_log = self.log.name[: -len(".log")] + "-progress.jsonl"
        env["GROUPSCOPE_PROGRESS_LOG"] = self.progress_log
        exe = Path(sys.executable).with_name("groupscope")
        argv = [str(exe), "collect", "--checkpoint", tempfile.mkdtemp(prefix="gs-bench-ck-"), "--no-progress"]
        self.proc = subprocess.Popen(
            argv, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def stop(self) -> None:
        stop_process_group(self.proc)


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM to a collector's process group (its JVM and Python workers), SIGKILL after 30 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def collect_catch_up(
    bootstrap: str, redis_url: str, groups: int, per_group: int, timeout_s: float = 900
) -> dict:
    """A fresh `groupscope collect` until every group is in Redis with its last commit."""
    import redis

    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    _reset_admin_topic(bootstrap)
    names = [f"bench-group-{i:05d}" for i in range(groups)]
    rounds = -(-per_group // 100)
    last = {part: 10 * rounds + part for part in range(min(100, per_group))}
    t0 = time.monotonic()
    col = Collector(bootstrap, redis_url)
    mem = PeakMemory(col.proc.pid)
    mem.start()
    first = view = done = None
    pending = unseen = names
    try:
        while time.monotonic() - t0 < timeout_s and col.proc.poll() is None:
            n = r.hlen("gs:fleet")
            if n and first is None:
                first = time.monotonic() - t0
            if n >= groups:
                if view is None:
                    # every group visible with its last commits, the provisional documents included
                    unseen = _complete(r, unseen, last, provisional_ok=True)
                    if not unseen:
                        view = time.monotonic() - t0
                written = set(_pipeline_rows(r, pending))
                pending = [g for g in pending if g not in written] + _complete(
                    r, [g for g in pending if g in written], last
                )
                if not pending:
                    done = time.monotonic() - t0
                    view = view if view is not None else done
                    break
            time.sleep(0.25)
    finally:
        peak = mem.stop()
    return {
        "collector": col,
        "first_s": first,
        "view_s": view,
        "all_s": done,
        "peak_mb": peak,
        "missing": len(pending),
    }


def live_latency(
    bootstrap: str, redis_url: str, samples: int, busy_groups: int = 0
) -> tuple[list[float], float]:
    """With a collector running over the whole fleet: commit (AlterConsumerGroupOffsets) to one
    group -> its document in Redis shows the committed offset. With `busy_groups`, that many other
    groups commit 10 partitions each, as fast as the broker takes them (about every 5 s each at
    10,000 groups), meanwhile; returns the latencies and the background commit rate."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    from collectors.storage.redis_store import RedisStore

    store = RedisStore.from_url(redis_url)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    stop = threading.Event()
    busy = {"commits": 0, "t0": time.monotonic()}

    def background() -> None:
        pending: list = []
        offset = 1_000
        while not stop.is_set():
            offset += 1
            for i in range(busy_groups):
                if stop.is_set():
                    break
                g = f"bench-group-{i:05d}"
                tps = [TopicPartition(f"bench-topic-{i % 10}", p, offset) for p in range(10)]
                pending.append(admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g])
                busy["commits"] += 10
                if len(pending) >= 200:
                    with contextlib.suppress(Exception):
                        pending.pop(0).result(60)
                # about every 5 s per group: no faster than that
                time.sleep(max(0.0, 5.0 / max(1, busy_groups) - 0.0001))

    thread = threading.Thread(target=background, daemon=True)
    if busy_groups:
        thread.start()
        time.sleep(10)
    group = "bench-live-group"
    lat: list[float] = []
    for i in range(samples):
        offset = 1000 + i + int(time.time()) % 100_000 * 100
        t0 = time.monotonic()
        req = ConsumerGroupTopicPartitions(group, [TopicPartition("bench-topic-0", 0, offset)])
        admin.alter_consumer_group_offsets([req])[group].result(10)
        while time.monotonic() - t0 < 60:
            doc = store.get_group(group)
            if doc and any(o["offset"] == offset for o in doc["offsets"]):
                lat.append(time.monotonic() - t0)
                break
            time.sleep(0.01)
        time.sleep(0.5)
    stop.set()
    rate = busy["commits"] / max(1e-3, time.monotonic() - busy["t0"])
    return lat, rate


def _latencies(lat: list[float], tried: int) -> str:
    """The latencies measured, and how many of the commits tried never showed within the minute."""
    missed = tried - len(lat)
    if not lat:
        return f"none of {tried} commits showed within 60 s"
    med, p95 = statistics.median(lat), _p95(lat)
    text = f"over {len(lat)} commits: median {med:.2f} s, p95 {p95:.2f} s, max {max(lat):.2f} s"
    return text + (f"; {missed} of {tried} never showed within 60 s" if missed else "")


def _p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * len(xs)) - 1)]


SCENARIOS = ("catchup", "busy", "quiet")


def _scenarios(text: str) -> list[str]:
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    unknown = sorted(set(chosen) - set(SCENARIOS))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"scenarios are among {', '.join(SCENARIOS)}, not {text!r}")
    return [x for x in SCENARIOS if x in chosen]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3, help="catch-up runs (each against a fresh plain read)")
    ap.add_argument("--bootstrap-servers", default=None)
    ap.add_argument("--redis", default=None)
    ap.add_argument("--latency-samples", type=int, default=30)
    ap.add_argument("--no-busy", action="store_true", help="skip the live latency with the fleet committing")
    ap.add_argument(
        "--scenarios",
        type=_scenarios,
        default=list(SCENARIOS),
        help="among catchup,busy,quiet (default: all)",
    )
    ap.add_argument("--live-seconds", type=float, default=120, help="busy/quiet: the measured window")
    ap.add_argument("--warmup-seconds", type=float, default=15, help="busy/quiet: load before the window")
    ap.add_argument(
        "--commit-rate", type=float, default=None, help="busy: groups committing a second (default groups/10)"
    )
    ap.add_argument("--produce-rate", type=float, default=2000, help="busy/quiet: messages produced a second")
    ap.add_argument("--probe-every", type=float, default=3, help="busy/quiet: seconds between probe commits")
    args = ap.parse_args()
    live = [x for x in args.scenarios if x != "catchup"]

    broker = redis_server = None
    col = None
    try:
        bootstrap = args.bootstrap_servers
        if not bootstrap:
            broker = KafkaBroker().start()
            bootstrap = broker.bootstrap_servers
        redis_url = args.redis
        if not redis_url:
            redis_server = RedisServer().start()
            redis_url = redis_server.url
        print(f"backlog: {args.records:,} OffsetCommit records, {args.groups:,} groups, 50 partitions")
        dt = produce_backlog(bootstrap, args.records, args.groups)
        print(f"  committed in {dt:.1f} s ({args.records / dt:,.0f} records/s, AlterConsumerGroupOffsets)")
        per_group = max(1, -(-args.records // args.groups))
        print()
        if "catchup" in args.scenarios:
            print(
                "| run | plain read (s) | groupscope collect (s) | ratio | first group (s) "
                "| every group with its offsets shown (s) | peak RSS (MB) |"
            )
            print("|---:|---:|---:|---:|---:|---:|---:|")
            for run in range(1, args.runs + 1):
                if col is not None:
                    col.stop()
                _, dt_plain = plain_read(bootstrap)
                res = collect_catch_up(bootstrap, redis_url, args.groups, per_group)
                col = res["collector"]
                total = res["all_s"]
                ratio = f"{total / dt_plain:.1f}" if total else "-"
                shown = f"{total:.1f}" if total else f"not done ({res['missing']:,} groups missing)"
                first = f"{res['first_s']:.1f}" if res["first_s"] else "-"
                view = f"{res['view_s']:.1f}" if res["view_s"] else "-"
                peak = f"{res['peak_mb']:,.0f}"
                print(
                    f"| {run} | {dt_plain:.1f} | {shown} | {ratio} | {first} | {view} | {peak} |", flush=True
                )
            print()
            # live, with the last run's collector and the whole fleet in it
            time.sleep(15)
            lat, _ = live_latency(bootstrap, redis_url, args.latency_samples)
            shown = _latencies(lat, args.latency_samples)
            print(f"live, {args.groups:,} idle groups: commit -> lag in Redis: {shown}")
            if not args.no_busy:
                lat, rate = live_latency(bootstrap, redis_url, args.latency_samples, busy_groups=args.groups)
                print(
                    f"live, {args.groups:,} groups committing 10 partitions each ({rate:,.0f} commits/s "
                    f"reached): commit -> lag in Redis: {_latencies(lat, args.latency_samples)}"
                )
            print()
        if live:
            if col is None:  # a collector as a catch-up run starts it, caught up
                res = collect_catch_up(bootstrap, redis_url, args.groups, per_group)
                col = res["collector"]
                shown = (
                    f"{res['all_s']:.1f} s"
                    if res["all_s"]
                    else f"not done ({res['missing']:,} groups missing)"
                )
                peak = f"peak RSS {res['peak_mb']:,.0f} MB"
                print(f"collector for the live scenarios: caught up in {shown}, {peak}", flush=True)
            others = {}
            if broker is not None and broker.proc is not None:
                others["broker"] = broker.proc.pid
            if redis_server is not None and getattr(redis_server, "proc", None) is not None:
                others["redis"] = redis_server.proc.pid
            setup = LiveSetup(
                bootstrap=bootstrap,
                redis_url=redis_url,
                groups=args.groups,
                collector_pid=col.proc.pid,
                progress_log=col.progress_log,
                live_s=args.live_seconds,
                warmup_s=args.warmup_seconds,
                probe_every_s=args.probe_every,
                commit_rate=args.commit_rate or max(1.0, args.groups / 10),
                cpu_others=others,
            )
            run_live(live, setup, args.produce_rate, lambda: col.proc.poll() is None)
            if col.proc.poll() is not None:
                print(f"- the collector exited with status {col.proc.returncode}; its log: {col.log.name}")
    finally:
        if col is not None:
            col.stop()
        if broker:
            broker.stop()
        if redis_server:
            redis_server.stop()


if __name__ == "__main__":
    main()
