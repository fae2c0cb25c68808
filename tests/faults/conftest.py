"""The fault suite's bench: ONE `groupscope collect --all-clusters` process (its own process group, as
a user runs it) watching two clusters: `default`, the session's Apache Kafka broker, and `own`, a
broker of the suite's own (collectors/demo/servers, its data kept across restarts) that a test stops
and kills; over a small fleet of real groups on each that keep committing; writing to a redis-server
of the suite's own (with a password) that the tests flush, restart and fill. One Spark application
for both clusters (a query each): the broker faults need no second collector, and a cluster that is
down is seen not to hold up the other.

- The fleet: FLEET groups that commit every partition of a topic a few times a second through
  AlterConsumerGroupOffsets (real commits, written by the broker's group coordinator: Kafka refuses
  produces to __consumer_offsets), while a producer keeps the topic's log end ahead of them; and one
  classic group of real probed consumer processes (collectors/demo/worker.py), whose generations the
  coordinator writes as GroupMetadata records: the judge of "no generation lost or doubled".
- The collector connects as the SASL user `groupscope`, which holds exactly the ACLs docs/security.md
  asks for (tests/conftest.py ACL_GRANTS), so a test can refuse it a write with one DENY ACL without
  touching the shared broker's configuration or any other principal.
- Its heartbeat and broker-log topics are the suite's own (`groupscope.`-prefixed, so the ACLs above
  cover them): hostile records there reach no other test's collector. The Admin poller's topic is
  `groupscope.admin` (not a setting), shared with the session.
- `Bench.agrees()` is the check after each fault: the collector still runs; for every group the
  committed offsets in Redis equal the broker's (ListConsumerGroupOffsets); the probed group's
  generation rows are each of the coordinator's generations once; each partition's Burrow window holds
  every commit slot once; and no group the broker does not know appeared.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import SASL_USERS

from collectors.demo.servers.kafka import KafkaBroker
from collectors.demo.servers.processes import RedisServer
from collectors.process_death import die_with_parent
from collectors.storage.clusters import cluster_prefix
from collectors.storage.redis_store import RedisStore

if TYPE_CHECKING:
    from test_pipeline_live import Member

FLEET = 12  # groups that commit by AlterConsumerGroupOffsets, on the session's broker
OWN_FLEET = 4  # the same, on the suite's own broker
OWN = "own"  # that broker's cluster name
PARTITIONS = 4
ADMIN_POLL_S = 1.0  # the collector's Admin poll interval (GROUPSCOPE_ADMIN_POLL_INTERVAL_S)
SESSION_MS = 4000  # the probed members' session timeout
# The suite's Redis password: never to appear in anything the suite captured (the collector's log,
# the CLI's outputs); tests/secret_scan.py checks the broker's SASL passwords over the same outputs.
REDIS_PASSWORD = "faults-Redis-pw-" + uuid.uuid4().hex[:12]
USER = "groupscope"  # the collector's SASL principal


@dataclass
class PasswordRedis(RedisServer):
    """redis-server with `requirepass` from its first moment: a client never meets it open."""

    password: str = REDIS_PASSWORD

    def _spawn(self, argv: list[str], name: str) -> None:
        super()._spawn([*argv, "--requirepass", self.password], name)

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@{self.host}:{self.port}/0"


_MSG = 12_000  # a failure message's length: what the check saw, whole enough to tell why


def wait_until(check: Callable[[], Any], timeout_s: float, what: str, every: float = 0.5) -> Any:
    """check() until it returns True (or a truthy value that is not a report); its last answer is
    the failure's message."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as e:  # Redis restarting, a coordinator loading: asked again
            last = f"{type(e).__name__}: {e}"
        if last is True:
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not reached in {timeout_s:.0f} s; last: {str(last)[:_MSG]}")


class Collector:
    """`groupscope collect` in its own process group, settings from the environment, its output
    appended to `log`."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        exe = Path(sys.executable).with_name("groupscope")
        self.out = log.open("ab")
        self.proc = subprocess.Popen(
            [str(exe), "collect", "--all-clusters", "--no-progress", "--master", "local[2]"],
            env=env,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,  # a test run that dies (a crash) leaves no collector behind
        )

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL to the whole process group (driver, JVM, Python workers): a crash, the OOM killer."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self.out.close()

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(40)
        except subprocess.TimeoutExpired:
            self.kill()
        self.out.close()


class Committer:
    """Every fleet group commits every partition one offset further, over and over, while a producer
    keeps the log end ahead. `paused()` holds it between two rounds (a check compares a still
    picture); a round that fails (the broker down) is tried again, and `offset` only counts what the
    broker took."""

    def __init__(self, bootstrap: str, topic: str, groups: list[str], start: int) -> None:
        self.bootstrap, self.topic, self.groups = bootstrap, topic, groups
        self.offset = start
        self.rounds = 0
        self.failures = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="fleet-committer", daemon=True)

    def _admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def commit_all(self, admin: AdminClient, offset: int) -> None:
        tps = [TopicPartition(self.topic, p, offset) for p in range(PARTITIONS)]
        # one group a request (librdkafka's rule), all of them in flight at once
        futs = [
            admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)], request_timeout=10)[g]
            for g in self.groups
        ]
        for f in futs:
            res = f.result(15)
            bad = [tp for tp in res.topic_partitions if tp.error is not None]
            if bad:
                raise RuntimeError(f"commit refused: {bad[0].error}")

    def _run(self) -> None:
        admin = self._admin()
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20})
        while not self._stop.is_set():
            with self._lock:
                try:
                    for i in range(8):
                        producer.produce(self.topic, b"x", partition=i % PARTITIONS)
                    producer.flush(10)
                    self.commit_all(admin, self.offset + 1)
                    self.offset += 1
                    self.rounds += 1
                except Exception:  # the broker restarting: the same round again, with a new client
                    # (one that met the broker down kept failing its group requests after it was back)
                    self.failures += 1
                    admin = self._admin()
            self._stop.wait(0.3)

    def start(self) -> Committer:
        self._thread.start()
        return self

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        with self._lock:
            yield

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def broker_offsets(admin: AdminClient, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    """{group: {(topic, partition): committed}} as the broker answers now (OffsetFetch)."""
    out = {}
    for g in groups:
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=10)
        out[g] = {(tp.topic, tp.partition): tp.offset for tp in res[g].result(15).topic_partitions}
    return out


def shown_offsets(store: RedisStore, groups: list[str]) -> dict[str, dict[tuple[str, int], int] | None]:
    """{group: {(topic, partition): committed}} as a reader of the collector's Redis sees it."""
    out: dict[str, dict[tuple[str, int], int] | None] = {}
    for g in groups:
        doc = store.get_document(g)
        out[g] = None if doc is None else {(o.topic, o.partition): o.offset for o in doc.offsets}
    return out


def lag_wrong(admin: AdminClient, store: RedisStore, groups: list[str], topic: str) -> str | None:
    """Why some group's lag on `topic` is not the broker's (ListOffsets' log end minus the committed
    offset, with the log end Redis shows equal to the broker's), or None."""
    from confluent_kafka.admin import OffsetSpec

    futs = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)}, request_timeout=10
    )
    end = {tp.partition: f.result(15).offset for tp, f in futs.items()}
    for g in groups:
        doc = store.get_document(g)
        rows = {p.partition: p for p in (doc.lag.partitions if doc is not None else ()) if p.topic == topic}
        for p, e in end.items():
            r = rows.get(p)
            if r is None or r.end_offset != e or r.committed is None or r.lag != e - r.committed:
                shown = None if r is None else (r.committed, r.end_offset, r.lag)
                # what the reader put together, and from what (a failure seen once on a busy machine)
                seen = {
                    "offsets": None if doc is None else doc.offsets,
                    "lag": None if doc is None else doc.lag.partitions,
                    "fields": store.r.hgetall(store.group_key(g, "offsets")),
                    "head": store.r.get(store.group_key(g, "doc")),
                }
                return f"{g} {topic}-{p}: (committed, log end, lag) {shown}, the broker's log end {e}; {seen}"
    return None


def described(admin: AdminClient, group: str) -> tuple[str, dict[str, list[list[Any]]]]:
    from test_pipeline_live import described as of_broker

    return of_broker(admin, group)


def broker_generation_numbers(bootstrap: str, group: str) -> list[int]:
    """Every generation with members the coordinator wrote for the group (its GroupMetadata records
    in __consumer_offsets, read to their end)."""
    from test_pipeline_live import broker_generations

    return sorted(broker_generations(bootstrap, group))


def windows_once(store: RedisStore, groups: list[str]) -> str | None:
    """Why some partition's Burrow window holds a commit slot twice or out of order, or None."""
    offsets = store.offsets.load(groups)
    for g in groups:
        for tp, w in offsets[g].windows.items():
            ts = [s.ts for s in w.samples]
            if ts != sorted(set(ts)):
                return f"{g} {tp}: slots {ts}"
            if [s.offset for s in w.samples] != sorted(s.offset for s in w.samples):
                return f"{g} {tp}: offsets {[s.offset for s in w.samples]}"
    return None


class Bench:
    """The suite's servers, fleet and collector; what each test may break and what it checks."""

    def __init__(self, kafka_broker: Any, tmp: Path) -> None:
        self.kafka = kafka_broker
        self.bootstrap = kafka_broker.bootstrap_servers  # the tests' own (super user) listener
        self.tmp = tmp
        self.u = uuid.uuid4().hex[:8]
        u = self.u
        self.topic = f"faults-{u}"
        self.live_topic = f"faults-{u}-live-data"
        self.hb_topic = f"groupscope.heartbeats-faults-{u}"
        self.log_topic = f"groupscope.broker-log-faults-{u}"
        self.fleet = [f"faults-{u}-{i:02d}" for i in range(FLEET)]
        self.live_group = f"faults-{u}-live"
        self.groups = [*self.fleet, self.live_group]
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self.own_topic = f"own-faults-{u}"
        self.own_fleet = [f"own-faults-{u}-{i}" for i in range(OWN_FLEET)]
        self.own_broker: KafkaBroker | None = None
        self.own_committer: Committer | None = None
        self.log = tmp / "collector.log"
        self.outputs: dict[str, str] = {}  # every CLI output the suite captured, for the secret scan
        self.members: list[Member] = []
        self.timings: dict[str, float] = {}
        self.redis: PasswordRedis | None = None
        self.collector: Collector | None = None
        self.committer: Committer | None = None
        self.checkpoint = tempfile.mkdtemp(prefix="gs-faults-ck-", dir=tmp)  # collect@CLUSTER in it

    # -- setup -----------------------------------------------------------------------------------
    def start(self) -> Bench:
        topics = {self.topic: PARTITIONS, self.live_topic: 4, self.hb_topic: 3, self.log_topic: 1}
        for f in self.admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
            f.result(15)
        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20})
        for i in range(200):
            p.produce(self.topic, b"x", partition=i % PARTITIONS)
        for i in range(40):  # every member of three holds a partition with records
            p.produce(self.live_topic, b"x", partition=i % 4)
        assert p.flush(15) == 0
        self.committer = Committer(self.bootstrap, self.topic, self.fleet, 10)
        self.committer.commit_all(self.admin, 10)
        self.add_member("c1")
        # fewer offsets-topic partitions than Kafka's 50: each start loads them all before it answers
        workdir = self.tmp / "own-broker"
        workdir.mkdir()
        self.own_broker = KafkaBroker(
            workdir=workdir, heap="512m", config={"offsets.topic.num.partitions": "5"}
        ).start()
        own_admin = AdminClient({"bootstrap.servers": self.own_broker.bootstrap_servers})
        own_admin.create_topics([NewTopic(self.own_topic, PARTITIONS, 1)])[self.own_topic].result(15)
        self.own_committer = Committer(self.own_broker.bootstrap_servers, self.own_topic, self.own_fleet, 0)
        self.own_committer.commit_all(own_admin, 0)
        self.redis = PasswordRedis().start()
        self.collector = Collector(self.env(), self.log)
        self.committer.start()
        self.own_committer.start()
        return self

    @property
    def store(self) -> RedisStore:
        assert self.redis is not None
        return RedisStore.from_url(self.redis.url)

    @property
    def own_store(self) -> RedisStore:
        assert self.redis is not None
        return RedisStore.from_url(self.redis.url, prefix=cluster_prefix(OWN))

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            GROUPSCOPE_BOOTSTRAP_SERVERS=self.kafka.sasl_bootstrap_servers,
            GROUPSCOPE_KAFKA=json.dumps(
                {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "SCRAM-SHA-256",
                    "sasl.username": USER,
                    "sasl.password": SASL_USERS[USER],
                }
            ),
            GROUPSCOPE_REDIS_URL=self.redis.url if self.redis else "",
            GROUPSCOPE_HEARTBEAT_TOPIC=self.hb_topic,
            GROUPSCOPE_BROKER_LOG_TOPIC=self.log_topic,
            GROUPSCOPE_CLUSTERS__OWN__BOOTSTRAP_SERVERS=self.own_broker.bootstrap_servers
            if self.own_broker
            else "",
            GROUPSCOPE_CHECKPOINT_DIR=self.checkpoint,
            GROUPSCOPE_ADMIN_POLL_INTERVAL_S=str(ADMIN_POLL_S),
            GROUPSCOPE_TRIGGER_INTERVAL_S="0.5",
            GROUPSCOPE_PROGRESS_LOG=str(self.tmp / "progress.jsonl"),  # each micro-batch, to diagnose
        )
        return env

    def add_member(self, client_id: str) -> Member:
        # one classic member in its own OS process (the demo's probed consumer), as the live pipeline's
        # tests run them: `close()` leaves the group (LeaveGroup)
        from test_pipeline_live import Member

        m = Member(self.bootstrap, self.live_group, self.live_topic, client_id, self.hb_topic, self.tmp)
        self.members.append(m)
        return m

    def stable_with(self, n: int) -> None:
        from test_pipeline_live import stable_with

        stable_with(self.admin, self.live_group, n)

    # -- the check after each fault ----------------------------------------------------------------
    def own_disagreement(self) -> str | None:
        """Why Redis does not agree with the suite's own broker now, or None."""
        assert self.own_broker is not None
        admin = AdminClient({"bootstrap.servers": self.own_broker.bootstrap_servers})
        broker, shown = broker_offsets(admin, self.own_fleet), shown_offsets(self.own_store, self.own_fleet)
        wrong = {g: (broker[g], shown[g]) for g in self.own_fleet if broker[g] != shown[g]}
        if wrong:
            return f"cluster {OWN}: offsets differ (broker, Redis): {dict(list(wrong.items())[:2])}"
        return windows_once(self.own_store, self.own_fleet)

    def disagreement(self, own: bool = True) -> str | None:
        """Why Redis does not agree with the brokers now (the session's; the suite's own too unless
        `own` is False), or None."""
        assert self.collector is not None
        if not self.collector.running:
            return f"the collector exited with status {self.collector.proc.returncode}"
        if own and (why := self.own_disagreement()):
            return why
        broker = broker_offsets(self.admin, self.groups)
        shown = shown_offsets(self.store, self.groups)
        wrong = {g: (broker[g], shown[g]) for g in self.groups if broker[g] != shown[g]}
        if wrong:
            return f"{len(wrong)} groups' offsets differ (broker, Redis): {dict(list(wrong.items())[:2])}"
        want = broker_generation_numbers(self.bootstrap, self.live_group)
        rows = self.store.get_generations(self.live_group)
        numbers = [g["generation"] for g in rows]
        if numbers != sorted(set(numbers)):
            return f"generation rows doubled or out of order: {numbers}"
        held = [g["generation"] for g in rows if g["assignment"]]
        if held != want:
            return f"generations with an assignment {held}, the coordinator wrote {want}"
        doc = self.store.get_document(self.live_group)
        if doc is None or [g.generation for g in doc.generations if g.start is not None] != numbers:
            return "the document's generations are not its rows'"
        _, members = described(self.admin, self.live_group)
        if {m.member_id for m in doc.members} != set(members):
            return f"members {[m.member_id[:40] for m in doc.members]}, the broker has {list(members)}"
        if why := windows_once(self.store, self.fleet):
            return why
        if why := lag_wrong(self.admin, self.store, self.fleet, self.topic):
            return why
        _, rows_u = self.store.list_groups(name_contains=f"faults-{self.u}", limit=1000)
        extra = sorted({r["name"] for r in rows_u} - set(self.groups))
        if extra:
            return f"groups the broker does not know: {[e[:60] for e in extra]}"
        return None

    def agrees(self, timeout_s: float, what: str, own: bool = True) -> float:
        """Wait (the fleets held still) until Redis agrees with the brokers (the suite's own too
        unless `own` is False: it is down); seconds it took."""
        assert self.committer is not None and self.own_committer is not None
        t0 = time.monotonic()
        with contextlib.ExitStack() as held:
            held.enter_context(self.committer.paused())
            if own:
                held.enter_context(self.own_committer.paused())
            try:
                wait_until(lambda: self.disagreement(own) or True, timeout_s, what)
            except AssertionError as e:
                raise AssertionError(f"{e}\n{self.diagnosis()}") from None
        return time.monotonic() - t0

    def diagnosis(self) -> str:
        """What the collector was doing when a check failed: each query's last micro-batch (its
        progress log) and the collector's last lines of its own (not Spark's "falling behind")."""
        last: dict[str, Any] = {}
        progress = self.tmp / "progress.jsonl"
        if progress.exists():
            for line in progress.read_text(errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    d = json.loads(line)
                    last[str(d.get("query"))] = {k: d.get(k) for k in ("batch", "at", "rows")}
        said = [
            line
            for line in self.log.read_text(errors="replace").splitlines()
            if line.startswith("groupscope:") or (" WARN " in line and "falling behind" not in line)
        ]
        return f"last micro-batch of each query: {last}\ncollector's last lines:\n" + "\n".join(said[-25:])

    # -- outputs ----------------------------------------------------------------------------------
    def cli(self, name: str, *args: str, redis_url: str | None = None) -> subprocess.CompletedProcess:
        """A groupscope command as a user runs it, its output kept for the secret scan."""
        exe = Path(sys.executable).with_name("groupscope")
        env = dict(os.environ, GROUPSCOPE_REDIS_URL=redis_url or (self.redis.url if self.redis else ""))
        proc = subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=60)
        self.outputs[name] = proc.stdout + proc.stderr
        return proc

    def stop(self) -> None:
        for c in (self.committer, self.own_committer):
            if c is not None:
                c.stop()
        if self.collector is not None and self.collector.running:
            self.collector.stop()
        for m in self.members:
            if m.proc.poll() is None:
                m.proc.kill()
                m.proc.wait(10)
        if self.redis is not None:
            self.redis.stop()
        if self.own_broker is not None:
            self.own_broker.stop()


@pytest.fixture(scope="package")
def bench(kafka_broker: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    tmp = tmp_path_factory.mktemp("faults")
    b = Bench(kafka_broker, tmp).start()
    try:
        yield b
    finally:
        b.stop()
        if b.log.exists():
            text = b.log.read_text(errors="replace")
            print(f"--- collector log (last 4000 of {len(text)} characters) ---\n{text[-4000:]}")
        shutil.rmtree(b.checkpoint, ignore_errors=True)
