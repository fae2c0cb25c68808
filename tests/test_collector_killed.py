"""A collector SIGKILLed mid-batch, while its groups commit, and started again on its checkpoint:
nothing is lost and nothing is doubled.

`groupscope collect` runs as a user runs it (its own process group: driver, JVM, Python workers) on
the harness's real Apache Kafka broker. Forty groups commit to every partition of a topic a few
times a second through AdminClient.alter_consumer_group_offsets (real commits, written by the
broker's group coordinator) while producers keep writing, so every group lags. Live, most of those
commits are applied in the first stage, straight to the partitions' fields in Redis, before Spark
commits the micro-batch (collectors/pipeline/known_commits.py): a kill between the two makes the
next start read the same records again. Then the commits stop, and for every group and partition
what the collector shows is held against the broker:
- the committed offset equals the broker's OffsetFetch (ListConsumerGroupOffsets);
- the lag equals ListOffsets(latest) minus that offset;
- the partition's Burrow window holds each commit slot once (times strictly increasing), as a
  collector never killed would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from collectors.demo.servers.processes import RedisServer
from collectors.storage.redis_store import RedisStore

pytestmark = [pytest.mark.servers, pytest.mark.slow]

GROUPS = 40
PARTITIONS = 4


class Collector:
    """`groupscope collect` in its own process group, settings from the environment."""

    def __init__(self, bootstrap: str, redis_url: str, checkpoint: str, log: Path) -> None:
        env = dict(os.environ)
        env.update(
            GROUPSCOPE_BOOTSTRAP_SERVERS=bootstrap,
            GROUPSCOPE_REDIS_URL=redis_url,
            GROUPSCOPE_ADMIN_POLL_INTERVAL_S="1",
            GROUPSCOPE_TRIGGER_INTERVAL_S="0.5",
        )
        exe = Path(sys.executable).with_name("groupscope")
        self.out = log.open("ab")
        self.proc = subprocess.Popen(
            [str(exe), "collect", "--checkpoint", checkpoint, "--no-progress"],
            env=env,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        """SIGKILL to the whole process group, as a crash or the OOM killer leaves it."""
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


def _alter(admin: AdminClient, groups: list[str], topic: str, offset: int) -> None:
    tps = [TopicPartition(topic, p, offset) for p in range(PARTITIONS)]
    # one group a request (librdkafka's rule), all of them in flight at once
    futs = [admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g] for g in groups]
    for f in futs:
        f.result(15)


def _broker_view(admin: AdminClient, groups: list[str], topic: str) -> dict[str, dict[int, tuple[int, int]]]:
    """{group: {partition: (committed, log end)}} as the broker answers now."""
    ends = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)}, request_timeout=15
    )
    end = {tp.partition: f.result(15).offset for tp, f in ends.items()}
    out = {}
    for g in groups:
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=15)
        committed = {tp.partition: tp.offset for tp in res[g].result(15).topic_partitions}
        out[g] = {p: (committed.get(p, -1), end[p]) for p in range(PARTITIONS)}
    return out


def _shown(store: RedisStore, groups: list[str], topic: str) -> dict[str, dict[int, tuple[Any, Any, Any]]]:
    """{group: {partition: (committed, log end, lag)}} as a reader of the collector's Redis sees it."""
    out = {}
    for g in groups:
        doc = store.get_document(g)
        parts = {}
        if doc is not None:
            for p in doc.lag.partitions:
                if p.topic == topic:
                    parts[p.partition] = (p.committed, p.end_offset, p.lag)
        out[g] = parts
    return out


def _wait(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last is True:
            return
        time.sleep(1)
    raise AssertionError(f"{what} not reached in {timeout_s:.0f} s; last: {str(last)[:2000]}")


def test_a_collector_killed_mid_batch_loses_and_doubles_nothing(kafka_broker, tmp_path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    u = uuid.uuid4().hex[:8]
    topic = f"killed-{u}"
    groups = [f"killed-{u}-{i:02d}" for i in range(GROUPS)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        f.result(15)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})

    def produce(n: int) -> None:
        for i in range(n):
            producer.produce(topic, b"x", partition=i % PARTITIONS)
        producer.flush(15)

    produce(400)
    _alter(admin, groups, topic, 10)
    redis_server = RedisServer().start()
    checkpoint = tempfile.mkdtemp(prefix="gs-killed-ck-", dir=tmp_path)
    log = tmp_path / "collector.log"
    store = RedisStore.from_url(redis_server.url)
    collector = Collector(bootstrap, redis_server.url, checkpoint, log)
    stop = threading.Event()
    committed = {"offset": 10}

    def commit_and_produce() -> None:
        # every group commits every partition, ever further, and the producers keep ahead of them
        while not stop.is_set():
            nxt = committed["offset"] + 1
            produce(8)
            _alter(admin, groups, topic, nxt)
            committed["offset"] = nxt
            time.sleep(0.2)

    try:

        def all_caught_up() -> Any:
            shown = _shown(store, groups, topic)
            late = [
                g
                for g in groups
                if {p: c for p, (c, _, _) in shown[g].items()} != dict.fromkeys(range(PARTITIONS), 10)
            ]
            return True if not late else late[:5]

        _wait(all_caught_up, 240, "every group in Redis with its commits")
        worker = threading.Thread(target=commit_and_produce, daemon=True)
        worker.start()
        time.sleep(12)  # the collector busy with the fleet's commits, mid-batch somewhere
        collector.kill()
        time.sleep(4)  # commits go on while it is down
        collector = Collector(bootstrap, redis_server.url, checkpoint, log)
        time.sleep(15)
        stop.set()
        worker.join(30)
        assert committed["offset"] > 20, "the fleet hardly committed"

        def same_as_broker() -> Any:
            broker = _broker_view(admin, groups, topic)
            shown = _shown(store, groups, topic)
            wrong = {
                g: (broker[g], shown[g])
                for g in groups
                if {p: (c, e, e - c) for p, (c, e) in broker[g].items()} != shown[g]
            }
            return True if not wrong else dict(list(wrong.items())[:3])

        _wait(same_as_broker, 180, "every partition's offset and lag as the broker has them")
        # each commit slot of each partition's Burrow window once: a run applied twice would have
        # put a slot back or repeated one
        offsets = store.offsets.load(groups)
        for g in groups:
            for tp, w in offsets[g].windows.items():
                ts = [s.ts for s in w.samples]
                assert ts == sorted(set(ts)), (g, tp, w.samples)
                assert [s.offset for s in w.samples] == sorted(s.offset for s in w.samples), (g, tp)
    finally:
        stop.set()
        collector.stop()
        redis_server.stop()
        if log.exists():
            print(log.read_text(errors="replace")[-4000:])
