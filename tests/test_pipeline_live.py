"""The live pipeline against real Apache Kafka (the harness's `kafka_broker`) and a redis-server of its
own (so the test can restart it). A broker that goes away under the collector is the fault suite's
(tests/faults/: its own broker, stopped and killed).

Every `__consumer_offsets` record here is the coordinator's own: Kafka refuses a produce to that topic,
so groups are made the way they are in production, with AdminClient.alter_consumer_group_offsets and
with real consumer processes (`python -m collectors.demo.worker consumer`, a probed classic member in its
own OS process) that join, leave, and are SIGKILLed. What the collector writes to Redis is compared with
what the broker itself says: describe_consumer_groups (members and assignment), the GroupMetadata
records the coordinator wrote (every generation), list_consumer_group_offsets and ListOffsets (lag),
and the model rebuilt in one process from the very records the collector read.

Groups and topics are named per test, so the tests share the one broker with the rest of the suite.
"""

from __future__ import annotations

import base64
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from collectors.demo.servers.processes import RedisServer
from collectors.pipeline.job import PipelineConfig, run_pipeline
from collectors.pipeline.route import decode_one
from collectors.storage.redis_store import RedisStore

pytestmark = [pytest.mark.servers, pytest.mark.slow]

OFFSETS = "__consumer_offsets"
SESSION_MS = 4000  # the broker's minimum is lowered to 1 s; 4 s keeps a loaded machine from flapping


def wait_until(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            v = cond()
        except Exception as e:  # Redis restarting, key not there yet, coordinator loading
            v, last = None, e
        if v:
            return v
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last error: {last!r})")


class Running:
    """The live pipeline in a background thread, stopped on exit."""

    def __init__(self, cfg: PipelineConfig, spark: Any) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.query: Any = None

        def body() -> None:
            try:
                run_pipeline(cfg, spark, progress=False, stop_event=self.stop, on_started=self._started)
            except BaseException as e:  # surfaced by the test
                self.error = e

        self.thread = threading.Thread(target=body, daemon=True)

    def _started(self, q: Any) -> None:
        self.query = q

    def __enter__(self) -> Running:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive(), "pipeline did not stop"
        assert self.error is None, f"pipeline failed: {self.error!r}"


class Member:
    """One classic group member in its own OS process (the demo's probed consumer): `close()` sends
    LeaveGroup, `kill()` is a crash the broker only notices when the session times out."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str, hb_topic: str, logs: Path):
        argv = [sys.executable, "-m", "collectors.demo.worker", "consumer", "--bootstrap-servers", bootstrap]
        argv += ["--group", group, "--topic", topic, "--client-id", client_id, "--heartbeat-topic", hb_topic]
        argv += ["--session-timeout-ms", str(SESSION_MS), "--heartbeat-interval-ms", "500"]
        self.log = logs / f"{client_id}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)


@pytest.fixture()
def members(tmp_path: Path) -> Iterator[Callable[..., Member]]:
    """Start members with `members(bootstrap, group, topic, client_id, hb_topic)`; all killed at the end."""
    started: list[Member] = []

    def start(*args: str) -> Member:
        started.append(Member(*args, logs=tmp_path))
        return started[-1]

    yield start
    for m in started:
        m.kill()


@pytest.fixture()
def own_redis():
    server = RedisServer().start()
    yield server
    server.stop()


def uid() -> str:
    return uuid.uuid4().hex[:8]


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
        f.result(15)


def produce(bootstrap: str, topic: str, per_partition: int, partitions: int) -> None:
    """Records in multi-record batches (a real broker's ListOffsets counts every record of a batch)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for i in range(per_partition * partitions):
        p.produce(topic, value=b"x", partition=i % partitions)
    assert p.flush(15) == 0


def commit(admin: AdminClient, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets for a group without members (AlterConsumerGroupOffsets), retried while the group's
    coordinator is loading or moving (right after a broker start)."""
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])

    def once() -> bool:
        res = admin.alter_consumer_group_offsets([req], request_timeout=10)[group].result(15)
        return all(tp.error is None for tp in res.topic_partitions)

    wait_until(once, 60, f"offsets committed for {group}")


def described(admin: AdminClient, group: str) -> tuple[str, dict[str, list[list[Any]]]]:
    """The group's state and {member id: sorted assignment} as describe_consumer_groups has them."""
    d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    return d.state.name, {
        m.member_id: sorted([tp.topic, tp.partition] for tp in m.assignment.topic_partitions)
        for m in d.members
    }


def stable_with(admin: AdminClient, group: str, n: int) -> dict[str, list[list[Any]]]:
    def check() -> dict[str, list[list[Any]]] | None:
        state, ms = described(admin, group)
        return ms if state == "STABLE" and len(ms) == n and all(ms.values()) else None

    return wait_until(check, 90, f"{group} Stable with {n} members")


def committed_and_ends(admin: AdminClient, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    """{(topic, partition): (committed, log-end offset)} as the broker answers them now."""
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=10)
    committed = {(tp.topic, tp.partition): tp.offset for tp in res[group].result(15).topic_partitions}
    futs = admin.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in committed})
    return {
        (tp.topic, tp.partition): (committed[(tp.topic, tp.partition)], f.result(15).offset)
        for tp, f in futs.items()
    }


def doc_members(doc: dict) -> dict[str, list[list[Any]]]:
    return {m["member_id"]: sorted(m["assignment"]) for m in doc["members"]}


def doc_lag(doc: dict) -> dict[tuple[str, int], tuple[int, int, int]]:
    """{(topic, partition): (committed, end offset, lag)} of the document's lag section."""
    return {
        (p["topic"], p["partition"]): (p["committed"], p["end_offset"], p["lag"])
        for p in (doc.get("lag") or {}).get("partitions") or []
    }


def offsets_partition(group: str, partitions: int = 50) -> int:
    """The `__consumer_offsets` partition of a group: Kafka's Utils.abs(groupId.hashCode()) % partitions
    (Java's String.hashCode over UTF-16 units; the test's group names are ASCII)."""
    h = 0
    for ch in group:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    h = h - 2**32 if h >= 2**31 else h
    return 0 if h == -(2**31) else abs(h) % partitions


Raw = tuple[str, int, int, int, bytes | None, bytes | None]  # topic, partition, offset, timestamp, key, value


def read_all(bootstrap: str, topics: dict[str, list[int] | None]) -> list[Raw]:
    """Every record now in the topics' partitions (None: all of them), read to the end of each."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=10).topics
    tps = [
        TopicPartition(t, p)
        for t, only in topics.items()
        if t in md
        for p in md[t].partitions
        if only is None or p in only
    ]
    if not tps:
        return []
    latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=10)
    ends = {(tp.topic, tp.partition): f.result(15).offset for tp, f in latest.items()}
    todo = {tp for tp, end in ends.items() if end > 0}
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uid()}",  # assign() only: this group never joins or commits
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.assign([TopicPartition(t, p, 0) for t, p in todo])
    out: list[Raw] = []
    deadline = time.monotonic() + 60
    while todo and time.monotonic() < deadline:
        for m in c.consume(10_000, timeout=0.5):
            if m.error():
                continue
            tp = (m.topic(), m.partition())
            out.append((tp[0], tp[1], m.offset(), m.timestamp()[1], m.key(), m.value()))
            if m.offset() + 1 >= ends[tp]:
                todo.discard(tp)
    c.close()
    assert not todo, f"could not read {sorted(todo)} to the end"
    return sorted(out, key=lambda r: (r[0], r[1], r[2]))


def evidence_of(bootstrap: str, kinds: dict[str, str], group: str) -> list[Any]:
    """The group's evidence in the topics {topic: kind}, decoded as the collector decodes it (of
    `__consumer_offsets`, only the group's own partition is read)."""
    parts = {t: ([offsets_partition(group)] if t == OFFSETS else None) for t in kinds}
    evs = []
    for topic, partition, offset, ts, key, value in read_all(bootstrap, parts):
        if group.encode() not in (key or b""):
            continue  # another group's record (every source keys its records by group)
        found = decode_one(kinds[topic], topic, partition, offset, ts, key, value)
        evs += [ev for g, _, _, ev in found if g == group]
    return evs


def broker_generations(bootstrap: str, group: str) -> dict[int, dict[str, list[list[Any]]]]:
    """{generation: {member id: sorted assignment}} of every GroupMetadata record with members that the
    coordinator wrote for the group (the last one of each generation)."""
    from coordinator_model.evidence import GroupMetadataSnapshot

    out: dict[int, dict[str, list[list[Any]]]] = {}
    for ev in evidence_of(bootstrap, {OFFSETS: "offsets"}, group):
        if isinstance(ev, GroupMetadataSnapshot) and ev.members:
            out[ev.generation] = {m.member_id: sorted([t, p] for t, p in m.assignment) for m in ev.members}
    return out


def expected_document(evidence: list[Any], group: str, at_ms: int | None = None) -> dict:
    """What the model makes of the same evidence in one process (up to `at_ms`, timers run to it)."""
    from coordinator_model.rebuild import rebuild

    return rebuild(evidence, at_ms=at_ms)[group].document_json()


def live_cfg(redis_url: str, bootstrap: str, checkpoint: str, u: str, **kw: Any) -> PipelineConfig:
    return PipelineConfig(
        redis_url=redis_url,
        checkpoint_dir=checkpoint,
        mode="live",
        kafka={"bootstrap.servers": bootstrap},
        heartbeat_topic=kw.pop("heartbeat_topic", f"hb-{u}"),
        admin_topic=f"admin-{u}",  # this collector's own: the test reads back what it polled
        trigger_interval_s=0.5,
        tick_ms=1000,
        admin_poll_interval_s=2.0,
        redis_retry_s=120,
        **kw,
    )


def no_dead_letters_of(store: RedisStore, u: str) -> bool:
    """None of the dead letters is a record of this test (the collector reads every group of the shared
    broker, and other tests' records are theirs to judge)."""
    for d in store.dead_letters(1000):
        raw = b"".join(base64.b64decode(d.get(k) or "") for k in ("key", "value"))
        if u.encode() in raw:
            return False
    return True


def test_live_collector_follows_real_groups_across_restarts(
    spark, kafka_broker, own_redis, members, tmp_path
):
    """Two real groups on the shared broker: one made by AlterConsumerGroupOffsets (commits only, no
    members) and one of probed consumer processes that join, leave gracefully and crash. The collector
    is stopped and started again from its checkpoint in the middle (members come and go meanwhile),
    a member is SIGKILLed and left for the broker to expire, and Redis is restarted under the
    collector. At each step Redis agrees with the broker; across the restart no generation or timeline
    row is lost or repeated."""
    bootstrap = kafka_broker.bootstrap_servers
    u = uid()
    data, hb_topic = f"data-{u}", f"hb-{u}"
    committed_group, live_group = f"alter-{u}", f"live-{u}"
    create_topics(bootstrap, {data: 4, hb_topic: 2})
    produce(bootstrap, data, per_partition=10, partitions=4)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    commit(admin, committed_group, {(data, 0): 3, (data, 1): 7})
    members(bootstrap, live_group, data, "c1", hb_topic)
    stable_with(admin, live_group, 1)
    c2 = members(bootstrap, live_group, data, "c2", hb_topic)
    stable_with(admin, live_group, 2)

    store = RedisStore.from_url(own_redis.url)
    cfg = live_cfg(own_redis.url, bootstrap, str(tmp_path / "ckpt"), u)
    kinds = {OFFSETS: "offsets", cfg.admin_topic: "admin", hb_topic: "heartbeat"}

    def matches_broker(group: str) -> dict | None:
        """The group's document in Redis when it agrees with the broker now: members and assignment as
        described, generation as the coordinator's last GroupMetadata record, lag = end - committed."""
        doc = store.get_group(group)
        if doc is None:
            return None
        state, described_members = described(admin, group)
        gens = broker_generations(bootstrap, group)
        want_lag = {tp: (c, e, e - c) for tp, (c, e) in committed_and_ends(admin, group).items()}
        ok = (
            doc_members(doc) == described_members
            and doc_lag(doc) == want_lag
            and (not gens or doc["generation"] == max(gens))
            and (state != "STABLE" or doc["state"] == "Stable")
        )
        return doc if ok else None

    with Running(cfg, spark):
        doc = wait_until(lambda: matches_broker(committed_group), 300, "the committed-only group")
        assert doc["members"] == [] and doc["state"] == "Empty"
        assert doc_lag(doc) == {(data, 0): (3, 10, 7), (data, 1): (7, 10, 3)}
        doc = wait_until(lambda: matches_broker(live_group), 180, "the live group as the broker has it")
        assert len(doc["members"]) == 2
        assert store.freshness()["sources"][OFFSETS]["ok"] is True
    gens1 = store.get_generations(live_group)
    assert [g["generation"] for g in gens1 if g["assignment"]] == sorted(
        broker_generations(bootstrap, live_group)
    )

    # While the collector is down: a third member joins, the second leaves gracefully, a commit is made.
    c3 = members(bootstrap, live_group, data, "c3", hb_topic)
    stable_with(admin, live_group, 3)
    c2.close()
    stable_with(admin, live_group, 2)
    commit(admin, committed_group, {(data, 0): 5})

    with Running(cfg, spark):
        doc = wait_until(lambda: matches_broker(live_group), 240, "the live group after the restart")
        wait_until(lambda: matches_broker(committed_group), 60, "the new commit after the restart")
        assert doc_lag(store.get_group(committed_group))[(data, 0)] == (5, 10, 5)
        # The history rows are the document's, every generation the coordinator wrote is there once
        # with its members' assignment, and the first run's rows are as they were.
        gens, timeline = store.get_generations(live_group), store.get_timeline(live_group)
        doc = store.get_group(live_group)
        assert gens == [g for g in doc["generations"] if g["start"] is not None]
        assert timeline == [t for t in doc["timeline"] if t["start"] is not None]
        numbers = [g["generation"] for g in doc["generations"]]
        assert numbers == sorted(set(numbers)), numbers
        shown = {g["generation"]: {m: sorted(a) for m, a in g["assignment"].items()} for g in gens}
        written = broker_generations(bootstrap, live_group)
        assert len(written) >= 4  # c1 joined, c2 joined, c3 joined, c2 left
        assert {n: shown.get(n) for n in written} == written
        assert gens[: len(gens1) - 1] == gens1[:-1]  # closed in the first run: unchanged
        reopened = next(g for g in gens if g["generation"] == gens1[-1]["generation"])
        keep = ("start", "members", "assignment", "leader", "protocol", "cause")
        assert {k: reopened[k] for k in keep} == {k: gens1[-1][k] for k in keep}
        # ... and equal to what the model makes of the very records the collector read, in one process
        want = expected_document(evidence_of(bootstrap, kinds, live_group), live_group, doc["as_of"])
        assert doc["generations"] == want["generations"]
        assert doc["timeline"] == want["timeline"]

        # A member crashes: the broker expires it after its session timeout and rebalances the group;
        # nothing else happens, and the collector shows the new generation and why it came.
        before = {g["generation"] for g in store.get_group(live_group)["generations"]}
        crashed = set(doc_members(doc))
        c3.kill()
        survivors = stable_with(admin, live_group, 1)
        crashed -= set(survivors)
        doc = wait_until(lambda: matches_broker(live_group), 120, "the generation after the expiry")
        new = [g for g in doc["generations"] if g["generation"] not in before]
        assert [g["generation"] for g in new] == [max(broker_generations(bootstrap, live_group))]
        assert set(new[0]["members_left"]) == crashed and len(crashed) == 1
        assert new[0]["cause"] == "session_timeout", new[0]
        assert no_dead_letters_of(store, u)

        # Redis restarts under the running collector: the sink retries, later batches land.
        port = own_redis.port
        own_redis.stop()
        commit(admin, committed_group, {(data, 1): 9})
        time.sleep(3)  # batches run against a dead Redis: the sink retries with backoff
        restarted = RedisServer(port=port).start()
        try:
            store = RedisStore.from_url(restarted.url)
            doc = wait_until(lambda: matches_broker(committed_group), 240, "a batch after Redis came back")
            assert doc_lag(doc) == {(data, 0): (5, 10, 5), (data, 1): (9, 10, 1)}
            wait_until(lambda: store.freshness()["collector"], 10, "collector heartbeat again")
        finally:
            own_redis.proc = restarted.proc  # the fixture stops it
            own_redis.workdir, own_redis._own_dir = restarted.workdir, restarted._own_dir


def test_malformed_record_is_counted_and_set_aside(spark, kafka_broker, own_redis, tmp_path):
    """A malformed record is counted as a dead letter and set aside, and everything around it goes
    through; never a crash. Kafka refuses a produce to its own `__consumer_offsets`, so the collector's
    offsets topic (`PipelineConfig.offsets_topic`) is pointed at an ordinary topic holding byte-exact
    copies of a real group's records (read back from `__consumer_offsets`, timestamps kept) with a
    malformed record among them; a heartbeat that is not JSON goes to its heartbeat topic. The collector
    catches up (available-now) without the Admin poller, so its document is the model's of the copied
    records alone; a second catch-up from the checkpoint reads the rest and replays nothing."""
    bootstrap = kafka_broker.bootstrap_servers
    u = uid()
    data, copies, hb_topic, group = f"data-{u}", f"offsets-copy-{u}", f"hb-{u}", f"copied-{u}"
    create_topics(bootstrap, {data: 2, copies: 1, hb_topic: 1})
    produce(bootstrap, data, per_partition=5, partitions=2)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # A real classic group: a member joins, consumes, commits and leaves; then an admin commit.
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,  # the commits are the two below
        }
    )
    c.subscribe([data])
    wait_until(lambda: c.poll(0.2) is not None and c.assignment(), 60, "the member's assignment")
    c.commit(offsets=[TopicPartition(data, 0, 2), TopicPartition(data, 1, 4)], asynchronous=False)
    c.close()
    commit(admin, group, {(data, 0): 5})
    originals = read_all(bootstrap, {OFFSETS: [offsets_partition(group)]})
    originals = [r for r in originals if r[4] is not None and group.encode() in r[4]]
    assert len(originals) >= 5  # GroupMetadata of generations 0, 1 and Empty, and the commits

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    half = len(originals) // 2
    for *_, ts, key, value in originals[:half]:
        p.produce(copies, key=key, value=value, timestamp=ts)
    bad_key, bad_value = b"\x00\x01\x00\x05bad", b"\x00\x03\xff\xff"  # a string longer than its key
    p.produce(copies, key=bad_key, value=bad_value)
    p.produce(hb_topic, key=group.encode(), value=b"{not json")
    assert p.flush(15) == 0

    store = RedisStore.from_url(own_redis.url)
    cfg = live_cfg(
        own_redis.url,
        bootstrap,
        str(tmp_path / "ckpt"),
        u,
        offsets_topic=copies,
        admin_enabled=False,
        available_now=True,
    )

    def expected() -> dict:
        """The model of the copies as they are in the topic now, the malformed one left out."""
        from collectors.capture import offsets_line_to_evidence

        lines = [
            {"partition": part, "offset": off, "timestamp": ts, "key": b64(k), "value": b64(v)}
            for _, part, off, ts, k, v in read_all(bootstrap, {copies: None})
            if k != bad_key
        ]
        return expected_document([offsets_line_to_evidence(o) for o in lines], group)

    run_pipeline(cfg, spark, progress=False)
    dead = {d["position"] for d in store.dead_letters()}
    assert dead == {f"{copies}/0@{half}", f"{hb_topic}/0@0"}
    assert store.get_group(group) == expected()

    for *_, ts, key, value in originals[half:]:
        p.produce(copies, key=key, value=value, timestamp=ts)
    assert p.flush(15) == 0
    run_pipeline(cfg, spark, progress=False)
    doc = store.get_group(group)
    assert doc == expected()
    shown = {(o["topic"], o["partition"]): o["offset"] for o in doc["offsets"]}
    assert shown == {tp: c for tp, (c, _) in committed_and_ends(admin, group).items()}
    assert shown == {(data, 0): 5, (data, 1): 4}
    assert len(store.dead_letters()) == 2  # the second catch-up read nothing twice


def b64(b: bytes | None) -> str | None:
    return base64.b64encode(b).decode() if b is not None else None
