"""The live fidelity check of tests/test_live_kafka.py with a fleet of other groups on the broker.

    .venv/bin/python benchmarks/fidelity_fleet.py                        # 10,000 other groups
    .venv/bin/python benchmarks/fidelity_fleet.py --other-groups 300     # a smoke run

What it does, in order:

1. starts its own Apache Kafka broker (collectors/demo/servers/kafka, the harness's settings: lowered
   group.min.session.timeout.ms / group.consumer.min.session.timeout.ms /
   group.consumer.min.heartbeat.interval.ms, so the lives' 3 s sessions are allowed; without the
   harness's SASL, TLS and ACLs, which the lives do not use), a redis-server, both on free loopback
   ports, and a SparkSession in local[2] (collectors/spark_session.build_spark, as tests/conftest.py);
2. makes --other-groups groups (bench-group-NNNNN) of --partitions committed partitions each, with
   real commits (benchmarks/pipeline.py's produce_backlog: AlterConsumerGroupOffsets, written by the
   broker's own group coordinator; the groups have no members);
3. starts ONE collector "out of the box": `__consumer_offsets` and the Admin API only, no broker log
   (the `nolog` collector of tests/test_live_kafka.py, same PipelineConfig, run the same way: a live
   pipeline in a thread of this process), and times its catch-up on that backlog: until every other
   group's document in Redis has its last commit;
4. with --commit-every S (default 300; 0: off) keeps the other groups committing lightly, each group
   about once every S seconds (10 partitions per commit), from then on until the end;
5. runs the six lives of tests/test_live_kafka.py side by side (make_lives: real consumer processes,
   classic range joins and a leave, cooperative-sticky, static restart, SIGKILL, poll stall past
   max.poll.interval.ms, KIP-848), then a last produce their members commit; the moment the broker
   says every member's last commit is in is the scenarios' end;
6. waits until the collector's documents in Redis are as of that moment (as the test's fixture does:
   `as_of` >= the end, then up to 20 s more for agreement) and reports how long after the end that
   took, or that it did not within --timeout seconds;
7. judges the documents the way tests/test_live_kafka.py does, with its own functions (`_report`,
   `scenario_table`, `sampled_states`, `generation_rows`, `exact_diffs`; the coordinator's log and
   the broker's DescribeConsumerGroups / ConsumerGroupDescribe / offsets are the judge, never an
   input), and prints per scenario: classic states right at moments sampled every 250 ms, causes of
   generations (KIP-848: group epochs), members, assignments and KIP-848 epochs right, against the
   thresholds (states >= 95%, causes >= 90%, members, assignments and epochs 100%); with the
   catch-up and after-end times and the collector's peak RSS (this process and its Spark JVM and
   Python workers; without the broker, redis-server and the members' processes);
8. saves what the collector read as a capture folder (the test's `save_artifacts`) and holds each
   scenario's document against `groupscope model FOLDER --json --at AS_OF` (the test's
   `replay_diffs`): live must equal replay.

The exit status is 0 when every threshold is met and live equals replay, 1 when not, 2 when the run
itself failed (a life did not go as planned, the collector died or did not catch up). The run takes
several minutes (the lives alone take a few); at 10,000 groups count 10-15 minutes on two cores.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import test_live_kafka as tlk  # noqa: E402
from pipeline import _children, _complete, produce_backlog  # noqa: E402

from collectors.demo.servers.kafka import KafkaBroker  # noqa: E402
from collectors.demo.servers.processes import RedisServer  # noqa: E402

THRESHOLDS = tlk.THRESHOLDS
AGREE_S = 20.0  # after the documents are as of the end, as long as the test's fixture gives them to agree


# ---- memory -------------------------------------------------------------------------------------------
def _rss_kb(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class CollectorMemory(threading.Thread):
    """Peak RSS of the collector: this process (the Spark driver, the pipeline's Python side) and its
    descendants (Spark's JVM, its Python workers), without the servers and the members this process
    also started."""

    def __init__(self, exclude: set[int], every_s: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.exclude, self.every_s, self.peak_mb = exclude, every_s, 0.0
        self._stop_evt = threading.Event()

    def sample(self) -> float:
        total, todo, seen = 0, [os.getpid()], set()
        while todo:
            pid = todo.pop()
            if pid in seen or pid in self.exclude:
                continue
            seen.add(pid)
            if pid != os.getpid() and "live_member.py" in _cmdline(pid):
                continue
            total += _rss_kb(pid)
            todo.extend(_children(pid))
        return total / 1024

    def run(self) -> None:
        while not self._stop_evt.is_set():
            self.peak_mb = max(self.peak_mb, self.sample())
            self._stop_evt.wait(self.every_s)

    def stop(self) -> float:
        self._stop_evt.set()
        self.join(10)
        return self.peak_mb


# ---- the other groups, committing lightly ----------------------------------------------------------------
class LightCommits(threading.Thread):
    """Each other group commits `partitions` (at most 10) partitions about once every `every_s`
    seconds, round robin, through AlterConsumerGroupOffsets (as benchmarks/pipeline.py's busy fleet,
    slower)."""

    def __init__(self, bootstrap: str, groups: int, partitions: int, every_s: float) -> None:
        super().__init__(daemon=True)
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.groups, self.width, self.every_s = groups, min(10, partitions), every_s
        self.commits = self.failed = 0
        self.t0 = time.monotonic()
        self._stop_evt = threading.Event()

    def run(self) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        pending: list[Any] = []
        offset = 1_000
        gap = self.every_s / max(1, self.groups)
        nxt = time.monotonic()
        while not self._stop_evt.is_set():
            offset += 1
            for i in range(self.groups):
                if self._stop_evt.is_set():
                    break
                g = f"bench-group-{i:05d}"
                tps = [TopicPartition(f"bench-topic-{i % 10}", p, offset) for p in range(self.width)]
                req = ConsumerGroupTopicPartitions(g, tps)
                pending.append(self.admin.alter_consumer_group_offsets([req], request_timeout=60)[g])
                self.commits += 1
                while len(pending) >= 100:
                    try:
                        pending.pop(0).result(60)
                    except Exception:
                        self.failed += 1
                nxt += gap
                if (wait := nxt - time.monotonic()) > 0:
                    self._stop_evt.wait(wait)
                else:
                    nxt = time.monotonic()  # behind: no burst to catch up
        for f in pending:
            with contextlib.suppress(Exception):
                f.result(30)

    def stop(self) -> str:
        self._stop_evt.set()
        self.join(60)
        dt = max(1e-3, time.monotonic() - self.t0)
        return (
            f"{self.commits:,} commits of {self.width} partitions in {dt:.0f} s "
            f"({self.commits / dt:.1f} commits/s, {self.failed} failed)"
        )


# ---- the lives, as the test's `live` fixture runs them ------------------------------------------------
def run_lives(
    bootstrap: str,
    broker: KafkaBroker,
    collector: tlk.Collector,
    lives: list[tlk.Life],
    plan: list,
    tmp: Path,
) -> tuple[dict[str, tlk.Truth], int, float, dict[str, float]]:
    """The lives side by side, the last batch, until the broker has every member's last commit; then
    what the broker says. Returns (truth per group, end in ms since the epoch, end in monotonic s,
    durations)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    steer = tlk.Lives(bootstrap, tmp)
    t0 = time.monotonic()

    tlk.play_lives(steer, plan)
    collector.check()
    lives_s = time.monotonic() - t0

    for life in lives:  # the last batch: live members consume it, committing up to their store limit
        for p in range(tlk.PARTITIONS):
            for i in range(tlk.LAST_BATCH):
                producer.produce(life.topic, value=f"{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    end = tlk.FIRST_BATCH + tlk.LAST_BATCH

    def committed_settled() -> bool:
        return all(
            row["committed"] == tlk.expected_committed(life, row["end_offset"]) and row["end_offset"] == end
            for life in lives
            for row in tlk.broker_lag(admin, life.group, life.topic).values()
        )

    tlk.wait_until(
        committed_settled,
        tlk.WAIT_S,
        lambda: (
            "the members' last commits: "
            + "; ".join(f"{life.group}: {tlk.broker_lag(admin, life.group, life.topic)}" for life in lives)
        ),
    )
    settled_at = int(time.time() * 1000)
    settled_mono = time.monotonic()
    lines = broker.coordinator_lines()
    truth = {
        life.group: tlk.Truth(
            describe=tlk.broker_describe(admin, life.group),
            lag=tlk.broker_lag(admin, life.group, life.topic),
            log=tlk.log_events(lines, life.group),
            k848=tlk.broker_k848(bootstrap, life.group) if life.kip848 else None,
        )
        for life in lives
    }
    return truth, settled_at, settled_mono, {"lives": lives_s, "to end": settled_mono - t0}


def threshold_table(rows: list[tuple[tlk.Life, dict[str, list[int]]]]) -> tuple[str, bool]:
    def cell(a: int, b: int) -> str:
        return f"{a}/{b} ({a / b:.0%})" if b else "-"

    keys = list(THRESHOLDS)
    head = f"{'scenario':<42}" + "".join(f"{k:<17}" for k in keys) + "thresholds"
    out = [head]
    all_ok = True
    for life, f in rows:
        missed = tlk.missed_thresholds(f)
        all_ok &= not missed
        verdict = "met" if not missed else "NOT met: " + ", ".join(missed)
        out.append(f"{life.title[:40]:<42}" + "".join(f"{cell(*f[k]):<17}" for k in keys) + verdict)
    out.append("thresholds: " + ", ".join(f"{k} >= {v:.0%}" for k, v in THRESHOLDS.items()))
    return "\n".join(out), all_ok


# ---- main -----------------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--other-groups", type=int, default=10_000, help="groups besides the lives' six (default 10000)"
    )
    ap.add_argument(
        "--partitions", type=int, default=10, help="committed partitions per other group, 1-100 (default 10)"
    )
    ap.add_argument(
        "--commit-every",
        type=float,
        default=300.0,
        help="after the catch-up, each other group commits again about every this many seconds "
        "(default 300; 0: the other groups stay idle)",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds to wait for the catch-up on the backlog, and again for the documents after the "
        "scenarios' end (default 600)",
    )
    args = ap.parse_args()
    if not 1 <= args.partitions <= 100:
        ap.error("--partitions must be between 1 and 100")

    from collectors.pipeline.job import PipelineConfig
    from collectors.spark_session import build_spark
    from collectors.storage.redis_store import RedisStore

    t_start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="gs-fidelity-fleet-"))
    run = f"live-{uuid.uuid4().hex[:6]}"
    broker = redis_server = spark = collector = committer = memory = None
    lives: list[tlk.Life] = []
    status = 2
    try:
        broker = KafkaBroker().start()
        redis_server = RedisServer().start()
        bootstrap = broker.bootstrap_servers
        overrides = {k: broker.properties()[k] for k in broker.properties() if "min." in k and "group" in k}
        print(f"broker {bootstrap} (Kafka {broker.version}; {overrides}), redis {redis_server.url}")
        print(f"run {run}, work folder {tmp}", flush=True)
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        spark = build_spark(
            "local[2]",
            "groupscope-fidelity-fleet",
            **{"spark.sql.warehouse.dir": str(tmp / "warehouse"), "spark.sql.shuffle.partitions": "2"},
        )

        # the other groups
        records = args.other_groups * args.partitions
        dt = produce_backlog(bootstrap, records, args.other_groups)
        print(
            f"other groups: {args.other_groups:,} groups x {args.partitions} partitions = {records:,} "
            f"commit records in {dt:.1f} s (AlterConsumerGroupOffsets)",
            flush=True,
        )

        # the lives' topics and first batch, as the test's fixture makes them
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap})
        plan = tlk.make_lives(run)
        lives = [life for life, _ in plan]
        topics = [NewTopic(life.topic, tlk.PARTITIONS, 1) for life in lives]
        topics.append(NewTopic(f"{run}.heartbeats", 1, 1))
        for f in admin.create_topics(topics).values():
            f.result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for life in lives:
            for p in range(tlk.PARTITIONS):
                for i in range(tlk.FIRST_BATCH):
                    producer.produce(life.topic, value=f"{i}".encode(), partition=p)
        assert producer.flush(30) == 0
        tlk.offsets_topic_ready(admin, [life.group for life in lives])

        # the collector: the test's `nolog` one
        url = redis_server.url.rsplit("/", 1)[0] + "/14"
        RedisStore.from_url(url).r.flushdb()
        cfg = PipelineConfig(
            redis_url=url,
            checkpoint_dir=str(tmp / "ckpt-nolog"),
            mode="live",
            kafka={"bootstrap.servers": bootstrap},
            heartbeat_topic=f"{run}.heartbeats",
            admin_topic=f"{run}.nolog.admin",
            broker_log_files=[],
            trigger_interval_s=0.5,
            tick_ms=1000,
            admin_poll_interval_s=2.0,
            allowed_lateness_ms=2000,
            redis_retry_s=60,
        )
        assert broker.proc is not None and redis_server.proc is not None
        memory = CollectorMemory({broker.proc.pid, redis_server.proc.pid})
        memory.start()
        collector = tlk.Collector("nolog", cfg, spark).start()
        t_col = time.monotonic()
        tlk.wait_until(collector.started, 240, "the collector to start")
        started_s = time.monotonic() - t_col
        names = [f"bench-group-{i:05d}" for i in range(args.other_groups)]
        last = {p: 10 + p for p in range(args.partitions)}  # produce_backlog's one round of commits
        pending = names
        r = collector.store.r
        caught_up_s = None
        while time.monotonic() - t_col < args.timeout:
            collector.check()
            pending = _complete(r, pending, last, cfg.prefix)
            if not pending:
                caught_up_s = time.monotonic() - t_col
                break
            time.sleep(0.5)
        if caught_up_s is None:
            print(
                f"catch-up: NOT done within {args.timeout:.0f} s: {len(pending):,} of "
                f"{args.other_groups:,} groups lack their last commit in Redis"
            )
            return 2
        print(
            f"catch-up: query started {started_s:.1f} s after the collector's start; every other group "
            f"in Redis with its last commit {caught_up_s:.1f} s after it "
            f"({caught_up_s - started_s:.1f} s after the query started)",
            flush=True,
        )
        if args.commit_every > 0 and args.other_groups:
            committer = LightCommits(bootstrap, args.other_groups, args.partitions, args.commit_every)
            committer.start()
            print(
                f"other groups commit again, each about every {args.commit_every:.0f} s "
                f"({args.other_groups / args.commit_every:.1f} commits/s)",
                flush=True,
            )

        # the six lives
        truth, settled_at, settled_mono, secs = run_lives(bootstrap, broker, collector, lives, plan, tmp)
        print(
            f"lives: {secs['lives']:.1f} s side by side; the broker had every member's last commit "
            f"{secs['to end']:.1f} s after they started (the scenarios' end)",
            flush=True,
        )

        # until the documents are as of the end (the test's `caught_up`), then agreement (its 20 s)
        def as_of_end() -> bool:
            return all(
                (doc := collector.document(life.group)) is not None
                and int(doc.get("as_of") or 0) >= settled_at
                for life in lives
            )

        try:
            tlk.wait_until(as_of_end, args.timeout, "documents as of the end")
            after_end_s = time.monotonic() - settled_mono
        except AssertionError:
            seen = {life.group: (collector.store.get_group(life.group) or {}).get("as_of") for life in lives}
            print(
                f"after the end: documents NOT as of it within {args.timeout:.0f} s "
                f"(end {settled_at}): {seen}"
            )
            return 2
        agreed_s = None
        with contextlib.suppress(AssertionError):
            tlk.wait_until(
                lambda: (
                    not any(
                        tlk.exact_diffs(
                            life, truth[life.group], collector.document(life.group), tlk.SOURCES["nolog"]
                        )
                        for life in lives
                    )
                ),
                AGREE_S,
                "agreement",
                every=1.0,
            )
            agreed_s = time.monotonic() - settled_mono
        docs = {"nolog": {life.group: collector.store.get_group(life.group) for life in lives}}
        peak = memory.stop()
        livrun = tlk.LiveRun(lives, truth, docs, settled_at, secs)
        print(
            f"after the end: every scenario's document as of the end {after_end_s:.1f} s after it; "
            + (
                "members, assignments, states, epochs and lag agree with the broker "
                f"{agreed_s:.1f} s after it"
                if agreed_s is not None
                else f"not all agreeing with the broker {AGREE_S:.0f} s later (differences below)"
            )
        )
        print(f"collector peak RSS: {peak:,.0f} MB (driver, Spark JVM, Python workers)")
        if committer is not None:
            print("other groups' light commits: " + committer.stop())
            committer = None

        # live equals replay: `groupscope model` over what the collector read, as of each document's time
        t_replay = time.monotonic()
        tlk.save_artifacts(tmp / "capture", bootstrap, {"nolog": cfg}, lives, truth, docs, [])
        replay = tlk.replay_diffs(tmp / "capture" / "nolog", docs["nolog"])
        print(
            f"live against replay ({time.monotonic() - t_replay:.1f} s): "
            + (
                f"every scenario's document equals `groupscope model {tmp / 'capture' / 'nolog'} --json`"
                if not replay
                else f"{len(replay)} of {len(lives)} documents differ from `groupscope model`:"
            )
        )
        for group, diffs in replay.items():
            print(f"  {group}:\n" + "\n".join(f"    {d}" for d in diffs[:15]))

        # the judge
        figures = tlk._report(livrun)["nolog"]
        print("\nagreement with the broker, all scenarios (matching / compared):")
        print("  " + ", ".join(f"{k} {a}/{b} ({a / b:.0%})" for k, (a, b) in figures.items() if b))
        print(
            f"\nper scenario (states every {tlk.SAMPLE_MS} ms; KIP-848 states are not logged by the broker):"
        )
        print(tlk.scenario_table(livrun))
        table, all_ok = threshold_table(tlk.per_scenario(livrun))
        print(f"\nper scenario against the thresholds, {args.other_groups:,} other groups on the broker:")
        print(table)
        print("\ngenerations (the coordinator log against the document):")
        for life in lives:
            rows = tlk.generation_rows(life, truth[life.group], docs["nolog"][life.group])
            print(f"  {life.group} ({life.title}):\n{tlk.fmt_rows(rows)}")
            for d in tlk.exact_diffs(
                life, truth[life.group], docs["nolog"][life.group], tlk.SOURCES["nolog"]
            ):
                print(f"    differs: {d}")
        print(
            f"\nsummary: {args.other_groups:,} other groups; catch-up {caught_up_s:.1f} s; documents as of "
            f"the scenarios' end {after_end_s:.1f} s after it; peak RSS {peak:,.0f} MB; thresholds "
            + ("met in every scenario" if all_ok else "NOT met in every scenario")
        )
        status = 0 if all_ok and not replay else 1
    except (RuntimeError, AssertionError, tlk.CollectorFailed) as e:
        print(f"\nthe run failed: {e}")
        status = 2
    finally:
        if committer is not None:
            committer.stop()
        if collector is not None:
            collector.stop.set()
        for life in lives:
            for m in [*life.members.values(), *life.gone]:
                with contextlib.suppress(Exception):
                    m.close()
        if collector is not None:
            collector.close()
            if collector.restarts:
                print(
                    f"collector restarted after Spark's worker start-up timed out: {len(collector.restarts)}"
                )
            if collector.error is not None:
                print(f"collector failed: {collector.error!r}")
        if memory is not None and memory.is_alive():
            memory.stop()
        if spark is not None:
            with contextlib.suppress(Exception):
                spark.stop()
        if broker is not None:
            broker.stop()
        if redis_server is not None:
            redis_server.stop()
        print(f"total {time.monotonic() - t_start:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
