"""Issue 32: a source topic deleted and created again (or a partition whose log was truncated below
the checkpoint) is read again from its log start, not ignored until it passes the old offsets."""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException, Uuid
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from collectors.pipeline.kafka_source import (
    KafkaStreamReader,
    Watermarks,
    count_between,
    plan_end,
    range_start,
)

OPTS = {"subscribe": "hb,admin", "kafka.bootstrap.servers": "x:1"}


def _ranges(start: dict, end: dict) -> list[tuple[str, int, int, int]]:
    r = KafkaStreamReader(None, OPTS)
    return sorted(rg for part in r.partitions(start, end) for rg in part.ranges)


def _resets(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


# ---- plan_end, count_between, partitions -----------------------------------------------------------


def test_a_partition_below_its_start_is_read_again_from_0_and_logged_once(caplog):
    start = {"hb": {"0": 100, "1": 50}}
    latest = {"hb": {"0": 30, "1": 80}}  # partition 0 recreated/truncated, partition 1 went on
    warned: set = set()
    with caplog.at_level(logging.WARNING, logger="groupscope.kafka_source"):
        end = plan_end(start, latest, None, warned=warned)
        assert plan_end(start, latest, None, warned=warned) == end  # planned again: not logged again
    assert end == {"hb": {"0": 30, "1": 80}}
    assert count_between(start, end) == 30 + 30  # not 0 - 70 + 30, nor max(0, -70) + 30
    assert _ranges(start, end) == [("hb", 0, 0, 30), ("hb", 1, 50, 80)]
    (msg,) = _resets(caplog)
    assert "hb [0]" in msg and "30" in msg and "100" in msg


def test_an_empty_recreated_topic_moves_the_checkpoint_back_to_0_and_reads_on_from_there():
    start = {"hb": {"0": 100}, "admin": {"0": 7}}
    end = plan_end(start, {"hb": {"0": 0}, "admin": {"0": 7}}, 1000)
    assert end == {"hb": {"0": 0}, "admin": {"0": 7}}  # != start: the batch records the reset
    assert count_between(start, end) == 0 and _ranges(start, end) == []
    # the next records of the new topic, from its first one
    end2 = plan_end(end, {"hb": {"0": 5}, "admin": {"0": 7}}, 1000)
    assert _ranges(end, end2) == [("hb", 0, 0, 5)]


def test_a_reset_partition_takes_its_fair_share_of_a_capped_batch():
    start = {"hb": {"0": 100, "1": 0}}
    latest = {"hb": {"0": 40, "1": 1000}}
    end = plan_end(start, latest, 20)
    assert end == {"hb": {"0": 10, "1": 10}}
    assert count_between(start, end) == 20
    assert _ranges(start, end) == [("hb", 0, 0, 10), ("hb", 1, 0, 10)]
    # the next batch reads on from 10: the new topic's records are neither skipped nor read twice
    end2 = plan_end(end, latest, None)
    assert _ranges(end, end2) == [("hb", 0, 10, 40), ("hb", 1, 10, 1000)]


def test_a_reset_partition_left_no_budget_still_records_the_reset():
    # the first topic takes the whole budget; the reset partition of the other is planned at 0
    start = {"offs": {"0": 0}, "hb": {"0": 100}}
    end = plan_end(start, {"offs": {"0": 1000}, "hb": {"0": 50}}, 5, ("offs",))
    assert end == {"offs": {"0": 5}, "hb": {"0": 0}}
    assert _ranges(start, end) == [("offs", 0, 0, 5)]


def test_a_topic_that_lost_partitions_or_an_unknown_log_end_keeps_its_offsets():
    start = {"hb": {"0": 100, "1": 60, "2": 9}}
    # partition 2 is gone (the topic was recreated with 2 partitions); an end of -1 is no answer
    end = plan_end(start, {"hb": {"0": 120, "1": -1}}, None)
    assert end == {"hb": {"0": 120, "1": 60, "2": 9}}
    assert _ranges(start, end) == [("hb", 0, 100, 120)]
    # when it is back (partitions added again) below its old offset, it is read from 0
    end2 = plan_end(end, {"hb": {"0": 120, "1": 60, "2": 3}}, None)
    assert _ranges(end, end2) == [("hb", 2, 0, 3)]


def test_a_recreated_topic_already_past_the_old_offset_is_read_from_0_over_two_batches(caplog):
    start = {"hb": {"0": 100, "1": 0}, "admin": {"0": 5}}
    latest = {"hb": {"0": 150, "1": 20}, "admin": {"0": 8}}
    with caplog.at_level(logging.WARNING, logger="groupscope.kafka_source"):
        end = plan_end(start, latest, None, recreated={"hb"})
    # below the start, so that the offsets alone say "from 0" (also replayed from the offset log)
    assert end == {"hb": {"0": 99, "1": 20}, "admin": {"0": 8}}
    assert _ranges(start, end) == [("admin", 0, 5, 8), ("hb", 0, 0, 99), ("hb", 1, 0, 20)]
    assert count_between(start, end) == 99 + 20 + 3
    end2 = plan_end(end, latest, None)  # the id is known now: the rest of the new topic
    assert _ranges(end, end2) == [("hb", 0, 99, 150)]
    (msg,) = _resets(caplog)  # partition 1 started at 0: nothing to reset there
    assert "hb [0]" in msg and "topic id" in msg
    # a partition at offset 1 of a recreated topic: one batch reads nothing, the next from 0
    end = plan_end({"hb": {"0": 1}}, {"hb": {"0": 9}}, None, recreated={"hb"})
    assert end == {"hb": {"0": 0}} and _ranges({"hb": {"0": 1}}, end) == []


offsets_st = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.dictionaries(st.sampled_from([str(i) for i in range(5)]), st.integers(0, 1000), min_size=1),
    min_size=1,
)


@settings(max_examples=300, deadline=None)
@given(
    start=offsets_st,
    latest=offsets_st,
    limit=st.one_of(st.none(), st.integers(1, 900)),
    first=st.sampled_from([(), ("a",)]),
    recreated=st.sets(st.sampled_from(["a", "b", "c"])),
)
def test_any_start_and_latest_plan_a_sane_batch(start, latest, limit, first, recreated):
    end = plan_end(start, latest, limit, first, frozenset(recreated))
    ranges = _ranges(start, end)
    assert all(o >= 0 for ps in end.values() for o in ps.values())
    assert all(0 <= lo < hi for _, _, lo, hi in ranges)
    assert count_between(start, end) == sum(hi - lo for _, _, lo, hi in ranges) >= 0
    if limit is not None:
        assert count_between(start, end) <= limit + (limit // 10 if first else 0)
    for t, ps in latest.items():
        for p, hi in ps.items():
            lo = start.get(t, {}).get(p, 0)
            e = end[t][p]
            assert e <= max(lo, hi)
            if lo > 0 and (hi < lo or t in recreated):
                # read from 0 (in part when capped): the planned end is below the start
                assert e < lo and e <= hi and range_start(start, t, p, e) == 0
                if limit is None:
                    assert e == (hi if hi < lo else lo - 1)
            else:
                assert e >= lo and range_start(start, t, p, e) == lo
                if limit is None:
                    assert e == max(lo, hi)


@settings(max_examples=200, deadline=None)
@given(
    start=offsets_st,
    latest=offsets_st,
    limit=st.integers(40, 400),
    recreated=st.sets(st.sampled_from(["a", "b", "c"])),
)
def test_batches_from_any_start_read_each_record_once_up_to_latest(start, latest, limit, recreated):
    """Planning batch after batch against fixed log ends: every record a partition holds that the
    old checkpoint had not read (all of a reset partition) is read once, none twice, none skipped."""
    read: dict[tuple[str, int], list[int]] = {}
    cur, ids_changed = start, frozenset(recreated)
    for _ in range(1000):  # at most 15 partitions of 1,000 records, 40 a batch
        end = plan_end(cur, latest, limit, (), ids_changed)
        if end == cur:
            break
        for t, p, lo, hi in _ranges(cur, end):
            read.setdefault((t, p), []).extend(range(lo, hi))
        cur, ids_changed = end, frozenset()  # the new ids are known after the first planning
    else:
        raise AssertionError("the plannings never reached the log ends")
    for t, ps in latest.items():
        for p, hi in ps.items():
            lo = start.get(t, {}).get(p, 0)
            reset = lo > 0 and (hi < lo or t in recreated)
            want = list(range(0 if reset else lo, hi))
            assert sorted(read.get((t, int(p)), [])) == want


# ---- topic ids ---------------------------------------------------------------------------------------


def _done(value=None, error: BaseException | None = None) -> Future:
    f: Future = Future()
    if error is not None:
        f.set_exception(error)
    else:
        f.set_result(value)
    return f


class FakeAdmin:
    """The AdminClient calls Watermarks makes, answered from `ends` (topic -> log end per partition)
    and `ids` (topic -> topic id, None for the zero id of a broker without topic ids)."""

    def __init__(self, ends: dict[str, list[int]], ids: dict[str, Uuid | None]) -> None:
        self.ends, self.ids = ends, ids
        self.described: list[list[str]] = []
        self.fail_describe = False

    def poll(self, timeout: float) -> int:
        return 0

    def list_topics(self, timeout: float) -> SimpleNamespace:
        tm = {
            t: SimpleNamespace(error=None, partitions=dict.fromkeys(range(len(e))))
            for t, e in self.ends.items()
        }
        return SimpleNamespace(topics=tm)

    def list_offsets(self, req: dict, request_timeout: float, **_kw: object) -> dict:
        return {tp: _done(SimpleNamespace(offset=self.ends[tp.topic][tp.partition])) for tp in req}

    def describe_topics(self, topics, request_timeout: float) -> dict[str, Future]:
        self.described.append(list(topics.topic_names))
        if self.fail_describe:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        out = {}
        for t in topics.topic_names:
            if t not in self.ids:
                out[t] = _done(error=KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
            else:
                out[t] = _done(SimpleNamespace(name=t, topic_id=self.ids[t] or Uuid(0, 0)))
        return out


def _reader(admin: FakeAdmin, **opts: str) -> KafkaStreamReader:
    r = KafkaStreamReader(None, {**OPTS, **opts})
    r._wm = Watermarks(r.conf)
    r._wm._admin = admin
    return r


def test_watermarks_describe_topic_ids_and_leave_out_unknown_ones():
    admin = FakeAdmin({}, {"hb": Uuid(11, 12), "admin": None})
    wm = Watermarks({"bootstrap.servers": "x:1"})
    wm._admin = admin
    assert wm.topic_ids(["hb", "admin", "gone"]) == {"hb": str(Uuid(11, 12))}
    assert admin.described == [["hb", "admin", "gone"]]


def test_a_topic_whose_id_changes_between_plannings_is_read_from_0(caplog):
    admin = FakeAdmin({"hb": [150, 20], "admin": [3]}, {"hb": Uuid(1, 1), "admin": Uuid(2, 2)})
    r = _reader(admin)
    start = {"hb": {"0": 100, "1": 20}, "admin": {"0": 3}}
    end = r.latestOffset(start, ReadAllAvailable())
    assert r.partitions(start, end) and _ranges(start, end) == [("hb", 0, 100, 150)]
    # hb is deleted and created again, and is past the old offsets at the next planning
    admin.ends["hb"], admin.ids["hb"] = [400, 30], Uuid(7, 7)
    with caplog.at_level(logging.WARNING, logger="groupscope.kafka_source"):
        end2 = r.latestOffset(end, ReadAllAvailable())
        assert _ranges(end, end2) == [("hb", 0, 0, 149), ("hb", 1, 0, 19)]
        end3 = r.latestOffset(end2, ReadAllAvailable())  # the new id is known: no reset again
        assert _ranges(end2, end3) == [("hb", 0, 149, 400), ("hb", 1, 19, 30)]
    assert sum("was recreated" in m for m in _resets(caplog)) == 1
    assert sum("hb [0]" in m for m in _resets(caplog)) == 1
    # once per planning, the subscribed topics only
    assert admin.described == [["hb", "admin"]] * 3


def test_a_topic_missing_for_a_while_keeps_its_last_id():
    admin = FakeAdmin({"hb": [50], "admin": [0]}, {"hb": Uuid(1, 1), "admin": Uuid(2, 2)})
    r = _reader(admin)
    start = {"hb": {"0": 40}, "admin": {"0": 0}}
    end = r.latestOffset(start, ReadMaxRows(1000))
    del admin.ends["hb"], admin.ids["hb"]  # deleted
    assert r.latestOffset(end, ReadMaxRows(1000)) == end  # nothing new: no batch
    admin.ends["hb"], admin.ids["hb"] = [80], Uuid(3, 3)  # created again, past 50 already
    end2 = r.latestOffset(end, ReadMaxRows(1000))
    assert _ranges(end, end2) == [("hb", 0, 0, 49)]


def test_when_ids_cannot_be_described_the_offsets_alone_still_find_a_reset():
    admin = FakeAdmin({"hb": [10], "admin": [0]}, {"hb": Uuid(1, 1)})
    admin.fail_describe = True
    r = _reader(admin)
    start = {"hb": {"0": 40}, "admin": {"0": 0}}
    end = r.latestOffset(start, ReadAllAvailable())  # no error
    assert _ranges(start, end) == [("hb", 0, 0, 10)]
    # and a Watermarks stand-in without topic_ids at all (as other tests use) plans as before
    r2 = KafkaStreamReader(None, OPTS)
    r2._wm = SimpleNamespace(offsets=lambda topics, which: {"hb": {"0": 10}, "admin": {"0": 0}})
    assert r2.latestOffset(start, ReadAllAvailable()) == {"hb": {"0": 10}, "admin": {"0": 0}}


# ---- on the real broker --------------------------------------------------------------------------


def _produce(bs: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bs})
    for v in values:
        p.produce(topic, value=v)
    assert p.flush(30) == 0


def _read(reader: KafkaStreamReader, start: dict, end: dict) -> list[bytes]:
    out: list[bytes] = []
    for part in reader.partitions(start, end):
        for batch in reader.read(part):
            out.extend(v for v in batch.column("value").to_pylist() if v is not None)
    return out


@pytest.mark.servers
def test_a_topic_deleted_and_created_again_is_read_from_its_start_on_the_broker(kafka_broker) -> None:
    """A heartbeat topic deleted while the collector reads it, and created again with fewer records
    than the old offset, then with more: the reader's planning and its read tasks (as Spark calls
    them, without Spark) read the new topic's every record, none of the old."""
    from confluent_kafka.admin import AdminClient, NewTopic

    bs = kafka_broker.bootstrap_servers
    topic = f"hb-recreated-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": bs})

    def create() -> None:
        deadline = time.monotonic() + 60
        while True:  # a topic just deleted may still be going away
            try:
                admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
                return
            except KafkaException:
                assert time.monotonic() < deadline, "the topic could not be created again"
                time.sleep(0.5)

    create()
    _produce(bs, topic, [b"old-%d" % i for i in range(20)])
    reader = KafkaStreamReader(None, {"subscribe": topic, "kafka.bootstrap.servers": bs})
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert _read(reader, start, end) == [b"old-%d" % i for i in range(20)]

    admin.delete_topics([topic])[topic].result(30)
    create()
    _produce(bs, topic, [b"new-%d" % i for i in range(5)])
    start, end = end, reader.latestOffset(end, ReadAllAvailable())
    assert _read(reader, start, end) == [b"new-%d" % i for i in range(5)]

    # and once more, the new topic already past the old offset when it is first looked at
    admin.delete_topics([topic])[topic].result(30)
    create()
    _produce(bs, topic, [b"newer-%d" % i for i in range(30)])
    got: list[bytes] = []
    for _ in range(3):  # read up to below the old start, then on from there
        start, end = end, reader.latestOffset(end, ReadAllAvailable())
        got += _read(reader, start, end)
    assert got == [b"newer-%d" % i for i in range(30)]
    reader.stop()


@pytest.mark.servers
def test_records_of_a_transaction_open_at_planning_are_read_once_it_commits(kafka_broker) -> None:
    """A batch planned while a transaction is open (offsets committed in a transaction, as Kafka
    Streams with exactly-once does) ends at the last stable offset, where the read tasks' consumers
    stop: the transaction's records are read by a later batch once it commits, not passed over."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bs = kafka_broker.bootstrap_servers
    topic = f"txn-planned-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    _produce(bs, topic, [b"before"])
    txn = Producer({"bootstrap.servers": bs, "transactional.id": topic})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, value=b"in-txn")
    txn.flush(30)
    _produce(bs, topic, [b"after-open"])  # not transactional, but behind the open transaction
    reader = KafkaStreamReader(None, {"subscribe": topic, "kafka.bootstrap.servers": bs})
    start = {topic: {"0": 0}}
    end = reader.latestOffset(start, ReadAllAvailable())
    assert _read(reader, start, end) == [b"before"]
    txn.commit_transaction(30)
    got, deadline = [], time.monotonic() + 30
    while len(got) < 2 and time.monotonic() < deadline:  # the commit markers are written a moment later
        start, end = end, reader.latestOffset(end, ReadAllAvailable())
        got += _read(reader, start, end)
        time.sleep(0.2)
    assert got == [b"in-txn", b"after-open"]
    reader.stop()
