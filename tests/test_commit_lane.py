"""The commit lane (collectors/pipeline/commit_lane.py): commits to partitions a group holds reach
Redis as they arrive, without a micro-batch, and the lane and the first stage never overwrite what
the other wrote (group_offsets.queue_swaps)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from collectors.pipeline import known_commits
from collectors.pipeline.commit_lane import CommitLane, offsets_json
from collectors.pipeline.job import caught_up_end
from collectors.pipeline.known_commits import KnownCommits
from collectors.pipeline.route import route_arrow
from collectors.pipeline.rows import RAW_SCHEMA, arrow_schema
from collectors.pipeline.sink import SinkConfig
from collectors.storage.group_offsets import encode, moved_of, stored
from collectors.storage.redis_store import RedisStore
from coordinator_model.offsets import OffsetState, OffsetStore

OFFSETS_TOPIC = "__consumer_offsets"


def _field(offset: int, log_offset: int, ts: int = 1_700_000_000_000) -> bytes:
    s = OffsetStore()
    s.committed[("orders", 0)] = OffsetState(offset, ts, ts, log_offset)
    out = encode(s, ("orders", 0))
    assert out is not None
    return out


def _store(url: str) -> tuple[RedisStore, SinkConfig]:
    prefix = f"lane{uuid.uuid4().hex[:8]}"
    return RedisStore.from_url(url, prefix=prefix), SinkConfig(url, prefix)


def _held(store: RedisStore, group: str) -> dict[tuple[str, int], OffsetState]:
    raw = store.r.hgetall(store.group_key(group, "offsets"))
    return stored(
        {(k.decode().rpartition(":")[0], int(k.decode().rpartition(":")[2])): v for k, v in raw.items()}
    ).committed


@pytest.mark.servers
def test_a_swap_writes_only_a_field_that_still_holds_what_was_read(redis_server) -> None:
    store, _ = _store(redis_server.url)
    tp = ("orders", 0)
    first, second, third = _field(1, 10), _field(2, 20), _field(3, 30)
    store.r.hset(store.group_key("g", "offsets"), "orders:0", first)
    with store.r.pipeline(transaction=False) as p:
        store.offsets.queue_swaps(p, "g", {tp: (first, second)})
        store.offsets.queue_swaps(p, "g", {tp: (first, third)})  # read before the write above
        answers = p.execute()
    assert [moved_of(a) for a in answers] == [set(), {tp}]
    assert store.r.hget(store.group_key("g", "offsets"), "orders:0") == second
    with store.r.pipeline(transaction=False) as p:
        store.offsets.queue_swaps(p, "g", {tp: (second, None)})
        assert [moved_of(a) for a in p.execute()] == [set()]
    assert store.r.hget(store.group_key("g", "offsets"), "orders:0") is None


def _commit_batch(group: str, rows: list[tuple[int, int, int]]) -> Any:
    """A raw batch of OffsetCommit records of `orders` 0: (log offset, committed offset, time)."""
    import pyarrow as pa

    from collectors.codec import records as r
    from collectors.codec.encoder import encode_key, encode_value

    key = encode_key(r.OffsetCommitKey(group=group, topic="orders", partition=0))
    cols: dict[str, list[Any]] = {
        k: [] for k in ("topic", "partition", "offset", "timestamp", "key", "value")
    }
    for log_offset, offset, ts in rows:
        value = encode_value(1, r.OffsetCommitValue(offset=offset, commit_timestamp=ts), 3)
        for c, v in zip(cols, (OFFSETS_TOPIC, 0, log_offset, ts, key, value), strict=True):
            cols[c].append(v)
    return pa.RecordBatch.from_pydict(cols, schema=arrow_schema(RAW_SCHEMA))


@pytest.mark.servers
def test_a_field_the_other_writer_moved_meanwhile_is_read_again_not_overwritten(
    redis_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first stage reads a partition, the lane writes a later commit to it, then the first stage
    writes: its older result must not replace the lane's (before the swap, the committed offset
    went back until the partition's next commit)."""
    store, sink = _store(redis_server.url)
    now = int(time.time() * 1000)
    store.r.hset(store.group_key("g", "offsets"), "orders:0", _field(1, 10, now - 60_000))
    lane_wrote = _field(9, 500, now)
    real = known_commits.commit_known
    calls: list[int] = []

    def and_meanwhile(*args: Any) -> Any:
        out = real(*args)
        if not calls:  # the lane's write, between this writer's read and its write
            store.r.hset(store.group_key("g", "offsets"), "orders:0", lane_wrote)
        calls.append(1)
        return out

    monkeypatch.setattr(known_commits, "commit_known", and_meanwhile)
    batch = _commit_batch("g", [(100, 5, now - 1000)])
    left = sum(
        b.num_rows for b in route_arrow(iter([batch]), {OFFSETS_TOPIC: "offsets"}, known=KnownCommits(sink))
    )
    assert len(calls) == 2, "read again after the swap was refused"
    assert left == 0, "the run is taken: the stored partition already holds it"
    assert store.r.hget(store.group_key("g", "offsets"), "orders:0") == lane_wrote
    assert _held(store, "g")[("orders", 0)].offset == 9


def test_the_lane_starts_where_a_batch_read_the_offsets_topic_to_its_end() -> None:
    end = {OFFSETS_TOPIC: {"0": 7, "1": 3}, "groupscope.heartbeats": {"0": 1}}
    caught = {"sources": [{"endOffset": end, "latestOffset": {OFFSETS_TOPIC: {"0": 7, "1": 3}}}]}
    capped = {"sources": [{"endOffset": end, "latestOffset": {OFFSETS_TOPIC: {"0": 9, "1": 3}}}]}
    assert caught_up_end(caught, OFFSETS_TOPIC) == end
    assert caught_up_end(capped, OFFSETS_TOPIC) is None
    assert offsets_json('{"t": {"0": 1}}') == {"t": {"0": 1}}  # a progress may give them as JSON text
    lane = CommitLane({}, OFFSETS_TOPIC, None, 16)
    lane.start_at({"other": {"0": 1}})
    assert not lane._start.is_set()
    lane.start_at(end)
    lane.start_at({OFFSETS_TOPIC: {"0": 99}})  # later calls change nothing
    assert lane._positions == {0: 7, 1: 3}


def _wait(cond: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Live:
    """A topic, a group holding some of its partitions in Redis, and where the lane is to start."""

    bs: str
    admin: Any
    topic: str
    group: str
    store: RedisStore
    sink: SinkConfig
    start: dict

    def commit(self, offsets: dict[int, int]) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        req = ConsumerGroupTopicPartitions(
            self.group, [TopicPartition(self.topic, p, o) for p, o in offsets.items()]
        )
        self.admin.alter_consumer_group_offsets([req])[self.group].result(30)

    def lane(self) -> CommitLane:
        lane = CommitLane({"bootstrap.servers": self.bs}, OFFSETS_TOPIC, self.sink, 16)
        lane.start()
        return lane


def _live(kafka_broker: Any, redis_server: Any, partitions: int, held: tuple[int, ...], name: str) -> Live:
    """`held` of the topic's partitions stored for the group (as the model stage writes a group's
    first commits, before any log offset), the lane's start the offsets topic's ends now."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from collectors.pipeline.kafka_source import Watermarks

    bs = kafka_broker.bootstrap_servers
    topic, group = f"lane-{uuid.uuid4().hex[:8]}", f"lane-{name}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    # the offsets topic exists once a group has committed (a fresh broker has none yet)
    first = ConsumerGroupTopicPartitions(f"{group}-first", [TopicPartition(topic, 0, 0)])
    admin.alter_consumer_group_offsets([first])[f"{group}-first"].result(30)
    store, sink = _store(redis_server.url)
    for p in held:
        s = OffsetStore()
        s.committed[(topic, p)] = OffsetState(0, 1, 1, -1)
        store.r.hset(store.group_key(group, "offsets"), f"{topic}:{p}", encode(s, (topic, p)))
    wm = Watermarks({"bootstrap.servers": bs})
    try:
        start = wm.offsets([OFFSETS_TOPIC], "latest")
    finally:
        wm.close()
    return Live(bs, admin, topic, group, store, sink, start)


@pytest.mark.servers
def test_a_real_commit_to_a_held_partition_reaches_redis_through_the_lane(kafka_broker, redis_server) -> None:
    """A real broker's commits: those to partitions the group holds in Redis are applied by the lane
    alone (no Spark runs here), within a second or so; one to a partition it does not hold is left for
    the model stage."""
    live = _live(kafka_broker, redis_server, 3, (0, 1), "held")
    lane = live.lane()
    try:
        lane.start_at(live.start)
        asked = time.monotonic()
        live.commit({p: 5 + p for p in range(3)})
        topic = live.topic
        got = _wait(
            lambda: (
                (h := _held(live.store, live.group))
                and all(h[(topic, p)].offset == 5 + p for p in (0, 1))
                and h
            ),
            30,
            "the lane's writes",
        )
        took = time.monotonic() - asked
    finally:
        lane.stop()
        lane.join(10)
    assert not lane.is_alive()
    assert (topic, 2) not in got, "a partition the group does not hold is the model stage's"
    assert got[(topic, 0)].log_offset >= 0 and lane.records >= 1
    print(f"commit -> Redis through the lane: {took:.2f} s")


@pytest.mark.servers
def test_a_lane_far_behind_goes_on_from_the_log_ends(kafka_broker, redis_server, monkeypatch) -> None:
    """Started far behind (here: six commits behind), the lane skips to the log ends, which the
    micro-batches read anyway, and applies what comes after."""
    from collectors.pipeline import commit_lane

    monkeypatch.setattr(commit_lane, "MAX_BEHIND", 2)
    monkeypatch.setattr(commit_lane, "LOOK_EVERY_S", 0.0)
    monkeypatch.setattr(commit_lane, "READ_ROWS", 1)  # a record at a time: its fetches see the ends first
    live = _live(kafka_broker, redis_server, 2, (0, 1), "behind")
    for i in range(3):  # a backlog of 6 records past where the lane starts
        live.commit({0: i, 1: i})
    lane = live.lane()
    try:
        lane.start_at(live.start)
        _wait(lambda: lane.skipped >= 3, 30, "the lane to skip its backlog")
        time.sleep(0.5)
        live.commit({0: 10, 1: 11})
        topic = live.topic
        got = _wait(
            lambda: (
                (h := _held(live.store, live.group))
                and all(h[(topic, p)].offset == 10 + p for p in (0, 1))
                and h
            ),
            30,
            "the commit after the skip",
        )
    finally:
        lane.stop()
        lane.join(10)
    assert got[(topic, 0)].offset == 10


def test_a_lane_steps_aside_while_the_offsets_topic_is_busy() -> None:
    """Above MAX_RATE records a second the micro-batches carry the commits alone; below it the lane
    applies them again."""
    from collectors.pipeline import commit_lane

    lane = CommitLane({}, OFFSETS_TOPIC, None, 16)
    lane._step_aside_if_busy(commit_lane.MAX_RATE * 5)
    assert lane.aside
    lane._step_aside_if_busy(commit_lane.MAX_RATE / 100)
    assert not lane.aside


@pytest.mark.servers
def test_a_lane_aside_reads_on_and_applies_nothing(kafka_broker, redis_server, monkeypatch) -> None:
    """Aside, the lane only moves its positions on: the commit is left to the micro-batches."""
    from collectors.pipeline import commit_lane

    monkeypatch.setattr(commit_lane, "MAX_RATE", -1)  # any rate is too busy
    monkeypatch.setattr(commit_lane, "LOOK_EVERY_S", 0.0)
    live = _live(kafka_broker, redis_server, 1, (0,), "aside")
    lane = live.lane()
    try:
        lane.start_at(live.start)
        _wait(lambda: lane.aside, 10, "the lane to step aside")
        live.commit({0: 7})
        _wait(lambda: lane.records >= 1, 30, "the lane to read the commit")
    finally:
        lane.stop()
        lane.join(10)
    assert _held(live.store, live.group)[(live.topic, 0)].offset == 0, "left to the micro-batches"
