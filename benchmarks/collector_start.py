"""The collector's start, phase by phase: how long `groupscope collect` takes from its process start to
its first micro-batch and its first group in Redis, and the peak memory of its process tree.

    .venv/bin/python benchmarks/collector_start.py                       # baseline vs shipped, 3 runs each
    .venv/bin/python benchmarks/collector_start.py --runs 5 --groups 200
    .venv/bin/python benchmarks/collector_start.py --variant heap768=spark.driver.memory=768m

Each run is a fresh process (as a collector is) that does what the collector does at start, with the
project's own code: RedisStore, topic_check.check_topics, spark_session.build_spark and
job.build_query (live mode, a new checkpoint, the Admin poller off), and times:

- python + imports: the interpreter and groupscope's pipeline modules (pyspark excluded)
- import pyspark:   `pyspark.sql`
- topic check:      check_topics against the broker
- SparkSession:     build_spark, i.e. SparkSession.builder.getOrCreate (the JVM's launch)
- register sources: job.register_sources (the Python data sources)
- load (schema):    the rest of job.raw_stream (DataSource.schema, in a Python worker)
- query start:      the rest of build_query (mapInArrow, applyInPandasWithState, writeStream.start)
- first batch:      from the start to the end of micro-batch 0 (query.lastProgress)
- first group:      from the start to the first group in Redis (`gs:fleet`)

then holds the query `--hold` seconds (later micro-batches, every worker started) and reports the
peak, over the whole run, of the process tree's RSS (driver + JVM + Python daemons and workers) and of
its PSS (proportional set size: a page shared by forked workers counted once), the JVM's own peak RSS,
the number of Python processes, and the CPU time the tree used in all (sampled every 0.25 s).

The benchmark starts its own Apache Kafka broker and redis-server (collectors/demo/servers) on free
loopback ports and commits `--groups` groups (AlterConsumerGroupOffsets, 10 partitions each) before
the first run, so micro-batch 0 has real rows. Variants run alternately in one run, since this
2-core machine is noisy; the table shows each phase's median (min-max) per variant. A variant is a
set of Spark settings given to the collector through GROUPSCOPE_SPARK_CONF, over build_spark's own;
`baseline` restores the settings before the start-up cuts (collectors/spark_session.py), `shipped` is
build_spark as it is. It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOPIC = "bench-start-topic"
PARTITIONS = 10

# Spark settings as they were before the start-up cuts: the daemon of pyspark, Spark's default driver
# heap (1g), no class-data-sharing archive.
BASELINE = {
    "spark.python.daemon.module": "pyspark.daemon",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-Xss16m",
}
VARIANTS: dict[str, dict[str, str]] = {"baseline": BASELINE, "shipped": {}}

PHASES = [
    ("python + imports", "imports"),
    ("import pyspark", "pyspark"),
    ("topic check", "topics"),
    ("SparkSession", "session"),
    ("register sources", "register"),
    ("load (schema)", "load"),
    ("query start", "start"),
    ("-> first batch done", "first_batch_at"),
    ("-> first group in Redis", "first_group_at"),
    ("batch 0 duration", "batch0"),
]


# ---- the collector's start, in its own process ---------------------------------------------------
def child(args: argparse.Namespace) -> None:
    """One collector start; prints one JSON line of phase times (seconds) on stdout."""
    spawned = args.spawned
    out: dict[str, Any] = {}
    t = time.time()
    out["imports"] = t - spawned  # the interpreter, this module
    import pyspark.sql  # noqa: F401

    out["pyspark"] = time.time() - t
    t = time.time()
    import redis

    from collectors.pipeline import job, topic_check
    from collectors.spark_session import build_spark
    from collectors.storage.redis_store import RedisStore

    out["imports"] += time.time() - t

    cfg = job.PipelineConfig(
        redis_url=args.redis,
        checkpoint_dir=tempfile.mkdtemp(prefix="gs-bench-start-ck-"),
        kafka={"bootstrap.servers": args.bootstrap},
        admin_enabled=False,
        trigger_interval_s=1.0,
    )
    t = time.time()
    store = RedisStore.from_url(cfg.redis_url, prefix=cfg.prefix, retention_ms=cfg.retention_ms)
    topics, _ = topic_check.check_topics(cfg, store)
    out["topics"] = time.time() - t

    t = time.time()
    spark = build_spark("local[*]", cfg.query_name, **{"spark.ui.showConsoleProgress": "false"})
    out["session"] = time.time() - t
    out["driver_memory"] = spark.conf.get("spark.driver.memory", "1g (default)")

    # time the pieces of build_query by wrapping the module's own functions
    register_sources, raw_stream = job.register_sources, job.raw_stream

    def timed_register(s: Any) -> None:
        t1 = time.time()
        register_sources(s)
        out.setdefault("register", time.time() - t1)

    def timed_raw(s: Any, c: Any, tp: list[str]) -> Any:
        t1 = time.time()
        df = raw_stream(s, c, tp)
        out["load"] = time.time() - t1 - out.get("register", 0.0)
        return df

    job.register_sources, job.raw_stream = timed_register, timed_raw  # type: ignore[assignment]
    t = time.time()
    query = job.build_query(spark, cfg, topics, store)
    out["start"] = time.time() - t - out["register"] - out["load"]

    r = redis.Redis.from_url(cfg.redis_url)
    deadline = time.time() + args.timeout
    while time.time() < deadline and ("first_batch_at" not in out or "first_group_at" not in out):
        prog = query.lastProgress
        if prog and "first_batch_at" not in out:
            out["first_batch_at"] = time.time() - spawned
            out["batch0"] = prog["durationMs"].get("triggerExecution", 0) / 1000
            out["batch0_rows"] = prog.get("numInputRows")
            out["batch0_ms"] = prog["durationMs"]
        if "first_group_at" not in out and r.hlen(f"{cfg.prefix}:fleet"):
            out["first_group_at"] = time.time() - spawned
        if query.exception():
            out["error"] = str(query.exception())[:500]
            break
        time.sleep(0.05)
    time.sleep(args.hold)
    out["batches"] = int((query.lastProgress or {}).get("batchId", -1)) + 1
    if args.procs:
        out["procs"] = [_cmdline(pid) for pid in _tree(os.getpid())]
    print(json.dumps(out), flush=True)
    query.stop()
    spark.stop()


# ---- memory of a process tree ----------------------------------------------------------------------
def _tree(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def _mem_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in KB, from /proc/PID/smaps_rollup."""
    rss = pss = 0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[-160:]
    except OSError:
        return ""


def _cpu_ticks(pid: int) -> int:
    """CPU time of a process and of its children it has waited for (utime, stime, cutime, cstime)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(x) for x in f[11:15])
    except (OSError, IndexError, ValueError):
        return 0


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class PeakTree(threading.Thread):
    """Peak RSS and PSS of a process tree, the JVM's peak RSS and the most Python processes seen."""

    def __init__(self, root: int, every_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.root, self.every_s = root, every_s
        self.rss = self.pss = self.jvm = 0
        self.pythons = 0
        self.ticks: dict[int, int] = {}  # pid -> CPU ticks at its last sample
        self._stop_evt = threading.Event()

    def run(self) -> None:
        while not self._stop_evt.is_set():
            rss = pss = pythons = 0
            for pid in _tree(self.root):
                r, p = _mem_kb(pid)
                rss, pss = rss + r, pss + p
                self.ticks[pid] = max(self.ticks.get(pid, 0), _cpu_ticks(pid))
                comm = _comm(pid)
                if comm == "java":
                    self.jvm = max(self.jvm, r)
                elif comm.startswith("python") and pid != self.root:
                    pythons += 1
            self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)
            self.pythons = max(self.pythons, pythons)
            self._stop_evt.wait(self.every_s)

    def stop(self) -> dict[str, float]:
        self._stop_evt.set()
        self.join(5)
        mb = 1024.0
        return {
            "rss_mb": self.rss / mb,
            "pss_mb": self.pss / mb,
            "jvm_mb": self.jvm / mb,
            "pythons": self.pythons,
            "cpu_s": sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK"),
        }


def run_once(
    name: str, conf: dict[str, str], bootstrap: str, redis_url: str, hold: float, procs: bool = False
) -> dict[str, Any]:
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    env = dict(os.environ)
    env["GROUPSCOPE_SPARK_CONF"] = ",".join(f"{k}={v}" for k, v in conf.items())
    argv = [sys.executable, __file__, "--child", "--bootstrap", bootstrap, "--redis", redis_url]
    argv += ["--hold", str(hold), "--spawned", repr(time.time())] + (["--procs"] if procs else [])
    with tempfile.NamedTemporaryFile(prefix=f"gs-bench-start-{name}-", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True
        )
        mem = PeakTree(proc.pid)
        mem.start()
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            peaks = mem.stop()
            proc.wait(120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # the collector, its JVM and Python workers
                proc.wait()
    try:
        row = json.loads(line)
    except ValueError:
        tail = Path(log.name).read_text(errors="replace")[-2000:]
        return {"error": f"no result (exit {proc.returncode}); log {log.name}:\n{tail}"}
    row.update(peaks)
    if proc.returncode:
        row["error"] = row.get("error") or f"exit {proc.returncode}, log {log.name}"
    else:
        os.unlink(log.name)
    return row


# ---- set-up ----------------------------------------------------------------------------------------
def commit_groups(bootstrap: str, groups: int) -> None:
    """`groups` groups with committed offsets on the 10 partitions of TOPIC, a few messages behind
    its log ends (a little lag), written by the broker's own group coordinator."""
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if TOPIC not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(60)
    p = Producer({"bootstrap.servers": bootstrap})
    for part in range(PARTITIONS):
        for _ in range(20):
            p.produce(TOPIC, b"groupscope-bench", partition=part)
    p.flush(60)
    futures = []
    for i in range(groups):
        g = f"bench-start-group-{i:04d}"
        tps = [TopicPartition(TOPIC, part, 10 + i % 10) for part in range(PARTITIONS)]
        futures.append(admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g])
    for f in futures:
        f.result(60)


def _fmt(xs: list[float], unit: str) -> str:
    if not xs:
        return "-"
    med = statistics.median(xs)
    if unit == "MB":
        return f"{med:,.0f} ({min(xs):,.0f}-{max(xs):,.0f})"
    if unit == "n":
        return f"{med:.0f} ({min(xs):.0f}-{max(xs):.0f})"
    return f"{med:.2f} ({min(xs):.2f}-{max(xs):.2f})"


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    names = list(results)
    rows = [(label, key, "s") for label, key in PHASES]
    rows += [
        ("CPU, tree (s)", "cpu_s", "s"),
        ("peak RSS, tree", "rss_mb", "MB"),
        ("peak PSS, tree", "pss_mb", "MB"),
        ("peak RSS, JVM", "jvm_mb", "MB"),
        ("Python processes", "pythons", "n"),
        ("micro-batches", "batches", "n"),
    ]
    width = max(len(r[0]) for r in rows) + 2
    cols = [max(26, len(n) + 2) for n in names]
    head = "phase".ljust(width) + "".join(n.ljust(c) for n, c in zip(names, cols, strict=True))
    lines = [head, "-" * len(head)]
    for label, key, unit in rows:
        cells = []
        for n, c in zip(names, cols, strict=True):
            xs = [float(r[key]) for r in results[n] if isinstance(r.get(key), (int, float))]
            cells.append(_fmt(xs, unit).ljust(c))
        lines.append(label.ljust(width) + "".join(cells))
    return "\n".join(lines)


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """NAME (a known variant) or NAME=key=value;key=value: the baseline with these Spark settings."""
    name, _, rest = text.partition("=")
    if not rest:
        return name, VARIANTS[name]
    conf = dict(BASELINE)
    for item in filter(None, rest.split(";")):
        k, _, v = item.partition("=")
        conf[k.strip()] = v.strip()
    return name, conf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each variant, alternating")
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--hold", type=float, default=8.0, help="seconds the query runs after its first group")
    ap.add_argument(
        "--variant",
        action="append",
        help="baseline, shipped, or NAME=key=value;key=value (the baseline with these settings); "
        "default: baseline and shipped",
    )
    ap.add_argument(
        "--warmup", type=int, default=1, help="runs of 'shipped' (or the first variant) not counted"
    )
    ap.add_argument("--procs", action="store_true", help="list the collector's processes after each run")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--redis", help=argparse.SUPPRESS)
    ap.add_argument("--spawned", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=180.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return

    from collectors.demo.servers.kafka import KafkaBroker
    from collectors.demo.servers.processes import RedisServer

    variants = dict(parse_variant(v) for v in (args.variant or ["baseline", "shipped"]))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the servers and the collector
    redis_server = RedisServer().start()
    broker = KafkaBroker().start()
    try:
        commit_groups(broker.bootstrap_servers, args.groups)
        print(f"broker {broker.bootstrap_servers}, redis {redis_server.url}, {args.groups} groups committed")
        for name, conf in variants.items():
            print(f"  {name}: {conf or '(build_spark as shipped)'}")
        first = "shipped" if "shipped" in variants else next(iter(variants))
        for i in range(args.warmup):  # page cache, the shipped settings' class-data-sharing archive
            row = run_once(first, variants[first], broker.bootstrap_servers, redis_server.url, 0.0)
            print(f"warm-up {i + 1} {first}: first batch at {row.get('first_batch_at', '-')} s", flush=True)
        results: dict[str, list[dict[str, Any]]] = {n: [] for n in variants}
        for i in range(args.runs):
            for name, conf in variants.items():
                row = run_once(name, conf, broker.bootstrap_servers, redis_server.url, args.hold, args.procs)
                results[name].append(row)
                brief = {k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}
                print(f"run {i + 1} {name}: {json.dumps(brief)}", flush=True)
        print()
        print(f"median (min-max) of {args.runs} runs each, seconds unless said; '->' = since process start")
        print(table(results))
    finally:
        broker.stop()
        redis_server.stop()


if __name__ == "__main__":
    main()
