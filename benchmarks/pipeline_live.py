"""The live scenarios of benchmarks/pipeline.py (issue "A pipeline whose cost follows the commits"),
run against a `groupscope collect` that has caught up with the benchmark's fleet (N groups, group i on
the 100-partition topic `bench-topic-{i % 10}`):

- busy: every group behind its producers (a producer writes to every partition of the ten topics at
  a steady rate) and the fleet committing 10 partitions a group, a little behind the log ends, at a
  steady rate of groups a second, through several AdminClients in threads (one librdkafka Admin
  client commits only about 170 groups a second);
- quiet: the same groups lagging (the producer running), nothing committing but the probes.

Over a fixed window, each measures: commit -> Redis (a probe commit every few seconds to a random
group, a fresh offset, timed until `RedisStore.get_document` shows it), the CPU of the collector's
process tree in cores, Redis `used_memory` and its growth, the micro-batch durations of the
collector's progress log (GROUPSCOPE_PROGRESS_LOG).
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import random
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOPICS = [f"bench-topic-{i}" for i in range(10)]
PARTITIONS = 100
SHOW_TIMEOUT_S = 60.0  # a probe commit not in Redis by then "never showed"
BURST = 5  # messages produced to a partition at a time
PER_ADMIN_RATE = 120.0  # groups/s asked of one AdminClient (it tops out at about 170)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def group_name(i: int) -> str:
    return f"bench-group-{i:05d}"


def topic_of(i: int) -> str:
    return TOPICS[i % 10]


# ---- CPU of a process tree ---------------------------------------------------------------------------
def _proc_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, start time, utime + stime in clock ticks) of every process."""
    out = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                f = (p / "stat").read_text().rsplit(")", 1)[1].split()
                # after the command: [0] state (field 3), [1] ppid, [11] utime, [12] stime, [19] starttime
                out[int(p.name)] = (int(f[1]), int(f[19]), int(f[11]) + int(f[12]))
    return out


def tree_ticks(root: int, table: dict[int, tuple[int, int, int]] | None = None) -> dict[tuple[int, int], int]:
    """(pid, start time) -> CPU ticks so far, for `root` and every live descendant."""
    table = _proc_table() if table is None else table
    kids: dict[int, list[int]] = collections.defaultdict(list)
    for pid, (ppid, _, _) in table.items():
        kids[ppid].append(pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            _, start, ticks = table[pid]
            out[(pid, start)] = ticks
            todo.extend(kids.get(pid, ()))
    return out


class TreeCpu(threading.Thread):
    """CPU seconds of process trees over a window: the live trees are sampled every `every_s` and the
    deltas summed per process (a child that exits takes its time to its parent's cutime/cstime, which
    nobody reads here; what it spent since its last sample, at most `every_s`, is lost)."""

    def __init__(self, roots: dict[str, int], every_s: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.roots, self.every_s = roots, every_s
        self._stop_evt = threading.Event()
        self.first: dict[str, dict[tuple[int, int], int]] = {}
        self.last: dict[str, dict[tuple[int, int], int]] = {n: {} for n in roots}
        self._sample(first=True)
        self.t0 = time.monotonic()

    def _sample(self, first: bool = False) -> None:
        table = _proc_table()
        for name, root in self.roots.items():
            now = tree_ticks(root, table)
            if first:
                self.first[name] = dict(now)
            self.last[name].update(now)

    def run(self) -> None:
        while not self._stop_evt.wait(self.every_s):
            self._sample()

    def stop(self) -> dict[str, float]:
        """Cores used by each tree over the window (CPU seconds / wall seconds)."""
        self._stop_evt.set()
        self.join(5)
        self._sample()
        wall = max(1e-3, time.monotonic() - self.t0)
        out = {}
        for name in self.roots:
            first = self.first[name]
            ticks = sum(t - first.get(k, 0) for k, t in self.last[name].items())
            out[name] = ticks / CLK_TCK / wall
        return out


# ---- load: the producer and the committers -------------------------------------------------------------
def log_ends(bootstrap: str) -> dict[tuple[str, int], int]:
    """The log-end offset of every partition of the ten topics."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    req = {TopicPartition(t, p): OffsetSpec.latest() for t in TOPICS for p in range(PARTITIONS)}
    res = admin.list_offsets(req, request_timeout=30)
    return {(tp.topic, tp.partition): f.result(60).offset for tp, f in res.items()}


def max_committed(bootstrap: str, groups: int) -> int:
    """The highest committed offset of the first groups (one per topic; the benchmark's commits go
    round the fleet in order, so they have the highest)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    top = 0
    for i in range(min(10, groups)):
        g = group_name(i)
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=30)[g]
        top = max([top, *(tp.offset for tp in res.result(60).topic_partitions)])
    return top


class LogProducer(threading.Thread):
    """Small messages to every partition of the ten topics, round-robin (BURST at a time: at 2,000/s
    over 1,000 partitions each gets 5 every 2.5 s), at `rate` a second in all;
    bounded by `max_s` seconds and `max_messages`. `ends` follows each partition's log end (this is
    its only writer) as deliveries are confirmed."""

    def __init__(self, bootstrap: str, rate: float, max_s: float, max_messages: int) -> None:
        from confluent_kafka import Producer

        super().__init__(daemon=True)
        self.rate, self.max_s, self.max_messages = rate, max_s, max_messages
        self.p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
        self.ends = log_ends(bootstrap)
        self.delivered = self.failed = 0
        self._stop_evt = threading.Event()
        self._keys = sorted(self.ends)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed += 1
            return
        self.delivered += 1
        key = (msg.topic(), msg.partition())
        self.ends[key] = max(self.ends[key], msg.offset() + 1)

    def _produce(self, key: tuple[str, int]) -> None:
        while True:
            try:
                self.p.produce(key[0], b"groupscope-bench", partition=key[1], on_delivery=self._on_delivery)
                return
            except BufferError:
                self.p.poll(0.05)

    def prefill(self, end: int) -> int:
        """Every partition's log end to at least `end`, as fast as the broker takes it."""
        n = 0
        for key in self._keys:
            for _ in range(max(0, end - self.ends[key])):
                self._produce(key)
                n += 1
                if n % 10_000 == 0:
                    self.p.poll(0)
        self.p.flush(120)
        return n

    def run(self) -> None:
        """`BURST` messages to one partition at a time, round the partitions: librdkafka sends a
        ProduceRequest per partition, and one message each (2,000 requests a second at 2,000
        messages/s) had the embedded broker time requests out on a shared 2-core machine."""
        t0 = time.monotonic()
        tick, sent, i = 0.05, 0, 0
        while not self._stop_evt.is_set() and sent < self.max_messages and time.monotonic() - t0 < self.max_s:
            due = min(self.max_messages, int((time.monotonic() - t0 + tick) * self.rate))
            while sent + BURST <= due:
                key = self._keys[i % len(self._keys)]
                for _ in range(BURST):
                    self._produce(key)
                i += 1
                sent += BURST
            self.p.poll(0)
            self._stop_evt.wait(tick)
        self.p.flush(30)

    def stop(self) -> None:
        self._stop_evt.set()
        self.join(60)


@dataclass
class Fleet:
    """What the committers and the probes share: the groups a probe has reserved (the committers
    leave them alone), each group's commits in flight, the offset last sent per group/partition."""

    n: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    reserved: set[str] = field(default_factory=set)
    inflight: collections.Counter = field(default_factory=collections.Counter)
    last_sent: dict[tuple[str, int], int] = field(default_factory=dict)
    done: int = 0  # group commits acknowledged by the broker
    errors: int = 0


class Committers:
    """The fleet committing: `rate` groups a second in all, 10 partitions a group (the next block of
    10 of its 100 at each of its commits), each a little behind its log end, through
    ceil(rate / PER_ADMIN_RATE) AdminClients, each in its own thread with its share of the groups."""

    def __init__(self, bootstrap: str, fleet: Fleet, ends: dict[tuple[str, int], int], rate: float) -> None:
        self.fleet, self.ends, self.rate = fleet, ends, rate
        self.n_clients = max(1, min(fleet.n, math.ceil(rate / PER_ADMIN_RATE)))
        self._stop_evt = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(bootstrap, k), daemon=True)
            for k in range(self.n_clients)
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        self._stop_evt.set()
        for t in self.threads:
            t.join(60)

    def _done(self, g: str, fut: Any) -> None:
        with self.fleet.lock:
            self.fleet.inflight[g] -= 1
            if fut.exception() is None:
                self.fleet.done += 1
            else:
                self.fleet.errors += 1

    def _run(self, bootstrap: str, k: int) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": bootstrap})
        mine = list(range(k, self.fleet.n, self.n_clients))
        interval = self.n_clients / self.rate
        rng = random.Random(k)
        pending: collections.deque = collections.deque()
        j, next_t = 0, time.monotonic()
        while not self._stop_evt.is_set():
            now = time.monotonic()
            if now < next_t:
                self._stop_evt.wait(next_t - now)
                continue
            next_t = max(next_t + interval, now - 1.0)  # behind by more than a second: do not burst
            i = mine[j % len(mine)]
            block = (j // len(mine)) % 10
            j += 1
            g, topic = group_name(i), topic_of(i)
            tps = []
            for p in range(block * 10, block * 10 + 10):
                off = max(0, self.ends[(topic, p)] - rng.randint(5, 50))
                tps.append(TopicPartition(topic, p, off))
            with self.fleet.lock:
                if g in self.fleet.reserved:
                    continue
                self.fleet.inflight[g] += 1
                for tp in tps:
                    self.fleet.last_sent[(g, tp.partition)] = tp.offset
            req = ConsumerGroupTopicPartitions(g, tps)
            try:
                fut = admin.alter_consumer_group_offsets([req], request_timeout=30)[g]
            except Exception:  # not sent at all
                with self.fleet.lock:
                    self.fleet.inflight[g] -= 1
                    self.fleet.errors += 1
                continue
            fut.add_done_callback(lambda f, g=g: self._done(g, f))
            pending.append(fut)
            while pending and (pending[0].done() or len(pending) > 100):
                with contextlib.suppress(Exception):
                    pending.popleft().result(60)


# ---- commit -> Redis -------------------------------------------------------------------------------------
@dataclass
class Probe:
    group: str
    topic: str
    partition: int
    offset: int
    t0: float


class Probes:
    """A probe commit every `every_s` to a random group of the fleet (one partition, a fresh offset a
    little behind its log end), sent while `sending`; each timed from just before its commit request
    until `RedisStore.get_document(group).offsets` shows that offset, or for SHOW_TIMEOUT_S."""

    def __init__(
        self, bootstrap: str, redis_url: str, fleet: Fleet, ends: dict[tuple[str, int], int], every_s: float
    ) -> None:
        self.bootstrap, self.redis_url, self.fleet, self.ends = bootstrap, redis_url, fleet, ends
        self.every_s = every_s
        self.sent = 0
        self.latencies: list[float] = []
        self.missed = 0
        self.errors: collections.Counter = collections.Counter()  # what went wrong, how often
        self._pending: list[Probe] = []
        self._lock = threading.Lock()
        self._sending = threading.Event()
        self._stop_evt = threading.Event()
        self._sender = threading.Thread(target=self._send_loop, daemon=True)
        self._watcher = threading.Thread(target=self._watch_loop, daemon=True)

    def start(self) -> None:
        self._sending.set()
        self._sender.start()
        self._watcher.start()

    def stop_sending(self) -> None:
        self._sending.clear()
        self._sender.join(60)

    def drain(self) -> None:
        """Until every probe sent has shown or timed out."""
        deadline = time.monotonic() + SHOW_TIMEOUT_S + 15
        while time.monotonic() < deadline and self._watcher.is_alive():
            with self._lock:
                if not self._pending:
                    break
            time.sleep(0.1)
        self._stop_evt.set()
        self._watcher.join(10)
        with self._lock:  # left over only when the watcher died
            self.missed += len(self._pending)
            self._pending.clear()

    def _release(self, group: str) -> None:
        with self.fleet.lock:
            self.fleet.reserved.discard(group)

    def _send_loop(self) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import AdminClient

        from collectors.storage.redis_store import RedisStore

        store = RedisStore.from_url(self.redis_url)
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        rng = random.Random()
        next_t = time.monotonic()
        while self._sending.is_set():
            now = time.monotonic()
            if now < next_t:
                time.sleep(min(0.2, next_t - now))
                continue
            next_t = now + self.every_s
            i = rng.randrange(self.fleet.n)
            g, topic, part = group_name(i), topic_of(i), rng.randrange(PARTITIONS)
            with self.fleet.lock:
                if g in self.fleet.reserved:
                    continue
                self.fleet.reserved.add(g)
            deadline = time.monotonic() + 10  # the committers' commits of g already sent land first
            while time.monotonic() < deadline:
                with self.fleet.lock:
                    if not self.fleet.inflight[g]:
                        break
                time.sleep(0.01)
            shown = None
            try:
                doc = store.get_document(g)
                shown = next(
                    (
                        o.offset
                        for o in (doc.offsets if doc else [])
                        if (o.topic, o.partition) == (topic, part)
                    ),
                    None,
                )
            except Exception as e:  # the reader failing is a figure too
                self.errors[f"get_document: {type(e).__name__}: {e}"[:160]] += 1
            avoid = {shown, self.fleet.last_sent.get((g, part))}
            offset = max(0, self.ends[(topic, part)] - 1 - rng.randint(0, 20))
            while offset in avoid:
                offset += 1
            req = ConsumerGroupTopicPartitions(g, [TopicPartition(topic, part, offset)])
            t0 = time.monotonic()
            try:
                admin.alter_consumer_group_offsets([req], request_timeout=30)[g].result(60)
            except Exception as e:
                self.errors[f"commit: {type(e).__name__}: {e}"[:160]] += 1
                self._release(g)
                continue
            self.sent += 1
            with self._lock:
                self._pending.append(Probe(g, topic, part, offset, t0))

    def _watch_loop(self) -> None:
        from collectors.storage.redis_store import RedisStore

        store = RedisStore.from_url(self.redis_url)
        while not self._stop_evt.is_set():
            with self._lock:
                pending = list(self._pending)
            for pr in pending:
                now = time.monotonic()
                try:
                    doc = store.get_document(pr.group)
                except Exception as e:
                    self.errors[f"get_document: {type(e).__name__}: {e}"[:160]] += 1
                    doc = None
                seen = doc is not None and any(
                    (o.topic, o.partition, o.offset) == (pr.topic, pr.partition, pr.offset)
                    for o in doc.offsets
                )
                if seen or now - pr.t0 > SHOW_TIMEOUT_S:
                    if seen:
                        self.latencies.append(now - pr.t0)
                    else:
                        self.missed += 1
                    with self._lock:
                        self._pending.remove(pr)
                    self._release(pr.group)
            time.sleep(0.05)


# ---- Redis memory, micro-batches ---------------------------------------------------------------------------
def redis_used_memory(redis_url: str) -> int:
    import redis

    return int(redis.Redis.from_url(redis_url).info("memory")["used_memory"])


def _size(path: str | None) -> int:
    try:
        return os.path.getsize(path) if path else 0
    except OSError:
        return 0


def batch_durations(path: str | None, start: int, end: int) -> list[float]:
    """The durations (s) of the micro-batches the collector's progress log has between two sizes."""
    if not path:
        return []
    out = []
    with contextlib.suppress(OSError), open(path, "rb") as f:
        f.seek(start)
        for line in f.read(max(0, end - start)).splitlines():
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                ms = (json.loads(line).get("ms") or {}).get("triggerExecution")
                if ms is not None:
                    out.append(ms / 1000)
    return out


# ---- a scenario -------------------------------------------------------------------------------------------
@dataclass
class LiveSetup:
    bootstrap: str
    redis_url: str
    groups: int
    collector_pid: int
    progress_log: str | None
    live_s: float
    warmup_s: float
    probe_every_s: float
    commit_rate: float
    cpu_others: dict[str, int]  # more process trees whose CPU goes into the row (name -> root pid)


def run_scenario(name: str, s: LiveSetup, producer: LogProducer) -> dict[str, Any]:
    """`busy` or `quiet` over a window of `s.live_s` seconds after `s.warmup_s` of the same load."""
    fleet = Fleet(s.groups)
    committers = Committers(s.bootstrap, fleet, producer.ends, s.commit_rate) if name == "busy" else None
    if committers:
        committers.start()
    time.sleep(s.warmup_s)
    # the window
    probes = Probes(s.bootstrap, s.redis_url, fleet, producer.ends, s.probe_every_s)
    cpu = TreeCpu({"collector": s.collector_pid, **s.cpu_others})
    cpu.start()
    load0 = time.process_time()  # this process alone (its children include the broker and the collector)
    mem0, log0 = redis_used_memory(s.redis_url), _size(s.progress_log)
    done0, produced0, failed0, t0 = fleet.done, producer.delivered, producer.failed, time.monotonic()
    probes.start()
    time.sleep(s.live_s)
    wall = time.monotonic() - t0
    cores = cpu.stop()
    cores["load"] = (time.process_time() - load0) / wall
    mem1, log1 = redis_used_memory(s.redis_url), _size(s.progress_log)
    done1, produced1 = fleet.done, producer.delivered
    probes.stop_sending()
    probes.drain()  # the load still on, for the probes sent at the window's end
    if committers:
        committers.stop()
    return {
        "scenario": name,
        "window_s": wall,
        "groups": s.groups,
        "commit_target": s.commit_rate if committers else 0.0,
        "commit_clients": committers.n_clients if committers else 0,
        "commit_rate": (done1 - done0) / wall,
        "commit_errors": fleet.errors,
        "produce_rate": (produced1 - produced0) / wall,
        "produce_failed": producer.failed - failed0,
        "probes": probes,
        "cores": cores,
        "mem0": mem0,
        "mem1": mem1,
        "batches": batch_durations(s.progress_log, log0, log1),
    }


def _p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * len(xs)) - 1)]


def table_header(others: list[str]) -> str:
    extra = "".join(f" {n} CPU (cores) |" for n in others)
    cols = (
        "| scenario | window (s) | group commits/s target / reached | msgs produced/s | probes "
        "| commit -> Redis p50 / p95 / max (s) | never showed (60 s) | collector CPU (cores) |"
        f"{extra} load CPU (cores) | Redis used_memory start -> end (MB) | Redis growth (MB/min) "
        "| micro-batches: n, median / max (s) |"
    )
    return cols + "\n|" + "---|" * cols.count(" |")


def table_row(row: dict[str, Any], others: list[str]) -> str:
    pr: Probes = row["probes"]
    lat = pr.latencies
    shown = f"{statistics.median(lat):.2f} / {_p95(lat):.2f} / {max(lat):.2f}" if lat else "-"
    commits = (
        f"{row['commit_target']:,.0f} / {row['commit_rate']:,.0f} ({row['commit_clients']} AdminClient"
        f"{'s' if row['commit_clients'] > 1 else ''})"
        if row["commit_target"]
        else "0 (probes only)"
    )
    c = row["cores"]
    extra = "".join(f" {c[n]:.2f} |" for n in others)
    mb0, mb1 = row["mem0"] / 2**20, row["mem1"] / 2**20
    growth = (mb1 - mb0) / (row["window_s"] / 60)
    b = row["batches"]
    batches = f"{len(b)}, {statistics.median(b):.1f} / {max(b):.1f}" if b else "-"
    return (
        f"| {row['scenario']} | {row['window_s']:.0f} | {commits} | {row['produce_rate']:,.0f} | {pr.sent} "
        f"| {shown} | {pr.missed} | {c['collector']:.2f} |{extra} {c['load']:.2f} | {mb0:,.1f} -> {mb1:,.1f} "
        f"| {growth:+.2f} | {batches} |"
    )


def notes(row: dict[str, Any]) -> list[str]:
    """What went wrong in a scenario, to print under the table."""
    out = []
    if row["produce_failed"]:
        out.append(f"{row['scenario']}: {row['produce_failed']:,} messages not delivered in the window")
    if row["commit_errors"]:
        out.append(f"{row['scenario']}: {row['commit_errors']:,} background group commits failed")
    for what, n in row["probes"].errors.most_common(5):
        out.append(f"{row['scenario']}: probe {what} ({n}x)")
    return out


def run_live(
    scenarios: list[str], s: LiveSetup, produce_rate: float, collector_alive: Any
) -> list[dict[str, Any]]:
    """The producer (its log ends first brought above every committed offset, so every group lags),
    then each scenario in turn; prints the table."""
    drain = SHOW_TIMEOUT_S + 10
    max_s = len(scenarios) * (s.warmup_s + s.live_s + drain) + 60
    producer = LogProducer(s.bootstrap, produce_rate, max_s, int(produce_rate * max_s))
    top = max([max_committed(s.bootstrap, s.groups), *producer.ends.values()])
    t0 = time.monotonic()
    n = producer.prefill(top + 100)
    print(
        f"live: {n:,} messages first (every partition's log end to {top + 100:,}, above every commit) in "
        f"{time.monotonic() - t0:.1f} s; then {produce_rate:,.0f} messages/s over the 1,000 partitions",
        flush=True,
    )
    producer.start()
    others = list(s.cpu_others)
    rows = []
    try:
        for name in scenarios:
            if not collector_alive():
                print(f"live {name}: skipped, the collector is not running")
                continue
            rows.append(run_scenario(name, s, producer))
            print(f"  {name} done", flush=True)
    finally:
        producer.stop()
    print()
    print(table_header(others))
    for row in rows:
        print(table_row(row, others))
    for row in rows:
        for line in notes(row):
            print(f"- {line}")
    return rows
