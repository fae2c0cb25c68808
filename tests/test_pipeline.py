"""The collectors pipeline: offset planning, decoding with dead letters, capture ordering, and the
replay of every capture through Spark into Redis, compared with `groupscope model`."""

from __future__ import annotations

import base64
import json
import time

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import CAPTURES, capture_dirs
from hypothesis import given, settings
from hypothesis import strategies as st
from json_strategies import json_values

from collectors.cli.main import cli
from collectors.pipeline.capture_source import load_capture
from collectors.pipeline.job import PipelineConfig, _records_behind, run_pipeline
from collectors.pipeline.kafka_source import (
    KafkaStreamReader,
    clock_row,
    count_between,
    kafka_conf_from_options,
    pack_ranges,
    plan_end,
)
from collectors.pipeline.route import DEAD_BUCKET, DEAD_LETTER_KEY, TICK_TOPIC, bucket_of, decode_batches
from collectors.pipeline.sink import lag_point
from collectors.storage.redis_store import RedisStore

offsets_st = st.dictionaries(
    st.sampled_from(["a", "b"]),
    st.dictionaries(st.sampled_from([str(i) for i in range(6)]), st.integers(0, 1000), min_size=1),
    min_size=1,
)


@settings(max_examples=150, deadline=None)
@given(
    start=offsets_st, grow=st.lists(st.integers(0, 500), min_size=12, max_size=12), limit=st.integers(1, 900)
)
def test_plan_end_respects_limit_and_never_goes_back(start, grow, limit):
    latest = {
        t: {p: o + grow[i % len(grow)] for i, (p, o) in enumerate(ps.items())} for t, ps in start.items()
    }
    latest.setdefault("c", {})["0"] = 40  # a partition first seen now starts at 0
    available = count_between(start, latest)
    for first in ((), ("c",), tuple(start)[:1]):
        end = plan_end(start, latest, limit, first)
        rest = {t: ps for t, ps in latest.items() if t not in first}
        if first:  # the other topics get a tenth of the limit on top of what is left
            allowance = min(limit // 10, count_between(start, rest))
            assert min(limit, available) <= count_between(start, end) <= min(limit + allowance, available)
        else:
            assert count_between(start, end) == min(limit, available)
        for t, ps in end.items():
            for p, o in ps.items():
                assert start.get(t, {}).get(p, 0) <= o <= latest[t][p]
        if first and count_between(start, end) < available:
            # the first topics are read whole before the others get anything
            firsts = {t: ps for t, ps in latest.items() if t in first}
            if count_between(start, {t: end[t] for t in firsts}) < count_between(start, firsts):
                # the first topics took the whole limit: the others had their allowance only
                assert count_between(start, {t: end[t] for t in rest}) == allowance
    assert plan_end(start, latest, None) == {t: dict(ps) for t, ps in latest.items()}


def test_plan_end_shares_the_budget_between_partitions():
    start = {"t": {"0": 0, "1": 0, "2": 0}}
    latest = {"t": {"0": 1000, "1": 5, "2": 1000}}
    assert plan_end(start, latest, 105) == {"t": {"0": 50, "1": 5, "2": 50}}
    # no new data: the end is the start, so no partition is planned
    assert plan_end(latest, latest, 10) == latest
    # the offsets topic's backlog first: the Admin lines wait for what it leaves
    start = {"offs": {"0": 0, "1": 0}, "admin": {"0": 0}}
    latest = {"offs": {"0": 60, "1": 30}, "admin": {"0": 100}}
    assert plan_end(start, latest, 100, ("offs",)) == {"offs": {"0": 60, "1": 30}, "admin": {"0": 10}}
    assert plan_end(start, latest, 50, ("offs",)) == {"offs": {"0": 25, "1": 25}, "admin": {"0": 5}}
    # a backlog as big as the limit still leaves the Admin lines their tenth of it
    latest = {"offs": {"0": 500, "1": 500}, "admin": {"0": 80}}
    assert plan_end(start, latest, 1000, ("offs",)) == {"offs": {"0": 500, "1": 500}, "admin": {"0": 80}}


def test_read_tasks_pack_ranges_evenly_and_split_big_ones():
    ranges = [("t", p, 0, n) for p, n in enumerate([10, 10, 10, 10, 500, 30])]
    tasks = pack_ranges(ranges, tasks=3, split_rows=200)
    covered = sorted(r for task in tasks for r in task.ranges)
    assert covered == sorted(
        [r for r in ranges if r[1] != 4] + [("t", 4, 0, 200), ("t", 4, 200, 400), ("t", 4, 400, 500)]
    )
    assert max(t.records for t in tasks) <= 200
    assert len(pack_ranges([("t", 0, 0, 5), ("t", 1, 0, 5)], tasks=8, split_rows=100)) == 2
    assert pack_ranges([], 4, 100) == []
    # 1,050 records need 5 tasks of at most 250: 6 (three whole waves of 2), not 5 (a lone last one)
    even = pack_ranges([("t", p, 0, 21) for p in range(50)], tasks=2, split_rows=250)
    assert len(even) == 6 and max(t.records for t in even) - min(t.records for t in even) <= 21


class _Latest:
    """Stands in for the reader's Watermarks: the log ends it is told."""

    def __init__(self, latest: dict) -> None:
        self.latest = latest

    def offsets(self, topics: list[str], which: str) -> dict:
        return self.latest


def test_a_batch_read_to_the_log_ends_carries_a_clock_of_when_they_were_asked():
    from pyspark.sql.streaming.datasource import ReadMaxRows

    opts = {"subscribe": "offs,admin", "kafka.bootstrap.servers": "x:1", "clockRows": "true"}
    r = KafkaStreamReader(None, opts)
    start = {"offs": {"0": 0, "1": 0}, "admin": {"0": 0}}
    r._wm = _Latest({"offs": {"0": 40, "1": 30}, "admin": {"0": 5}})
    before = int(time.time() * 1000)
    end = r.latestOffset(start, ReadMaxRows(1000))
    parts = r.partitions(start, end)
    clocks = [p.clock_ms for p in parts if p.clock_ms is not None]
    assert len(clocks) == 1 and before <= clocks[0] <= int(time.time() * 1000)
    assert parts[0].clock_ms == clocks[0]
    # a capped batch does not reach the log ends: no clock (its records may be older than the rest)
    end = r.latestOffset(start, ReadMaxRows(20))
    assert all(p.clock_ms is None for p in r.partitions(start, end))
    # nor without the option (a one-off catch-up runs no timers)
    r2 = KafkaStreamReader(None, {**opts, "clockRows": "false"})
    r2._wm = r._wm
    end = r2.latestOffset(start, ReadMaxRows(1000))
    assert all(p.clock_ms is None for p in r2.partitions(start, end))


def test_a_clock_row_reaches_every_bucket_as_the_admin_pollers_clock_does():
    raw = clock_row(1_700_000_000_123)
    rows = [tuple(raw[c][0] for c in ("topic", "partition", "offset", "timestamp", "key", "value"))]
    (out,) = list(decode_batches(iter([_raw(rows)]), {"__consumer_offsets": "offsets"}, buckets=8))
    assert sorted(out["bucket"]) == list(range(8))
    assert out["group"].isna().all() and set(out["ts"]) == {1_700_000_000_123}
    assert set(out["error"].dropna()) == set()


def test_kafka_settings_pass_through_untouched():
    opts = {"kafka.bootstrap.servers": "h:9093", "kafka.sasl.mechanism": "SCRAM-SHA-512", "subscribe": "x"}
    assert kafka_conf_from_options(opts) == {"bootstrap.servers": "h:9093", "sasl.mechanism": "SCRAM-SHA-512"}


def _raw(rows):
    return pd.DataFrame(rows, columns=["topic", "partition", "offset", "timestamp", "key", "value"])


def test_routing_keys_rows_by_group_and_dead_letters_what_cannot_be_routed():
    good = json.loads((CAPTURES / "classic-range-lifecycle" / "offsets.jsonl").read_text().splitlines()[1])
    key, value = base64.b64decode(good["key"]), base64.b64decode(good["value"])
    hb = (CAPTURES / "classic-range-lifecycle" / "heartbeats.jsonl").read_text().splitlines()[0].encode()
    kinds = {"__consumer_offsets": "offsets", "hb": "heartbeat"}
    rows = [
        ("__consumer_offsets", 25, 1, 5, key, value),
        ("__consumer_offsets", 25, 2, 6, key, value[:9]),  # truncated value: found when decoded, stage 2
        ("__consumer_offsets", 25, 3, 7, b"\x00", None),  # key too short: cannot even be routed
        ("hb", 0, 0, 8, None, hb),
        ("hb", 0, 1, 9, None, b"{not json"),
        ("hb", 0, 2, 10, None, b'{"ts": 1}'),  # JSON, but not a heartbeat event
        ("elsewhere", 0, 0, 11, None, b"x"),
    ]
    (out,) = list(decode_batches(iter([_raw(rows)]), kinds, buckets=16))
    g = "crl-060433a"
    assert list(out["group"]) == [g, g, DEAD_LETTER_KEY, g, *[DEAD_LETTER_KEY] * 3]
    assert set(out[out["group"] == g]["bucket"]) == {bucket_of(g, 16)}
    dead = out[out["group"] == DEAD_LETTER_KEY]
    assert set(dead["bucket"]) == {DEAD_BUCKET}
    assert list(dead["offset"]) == [3, 1, 2, 0]
    assert all(dead["error"].str.len() > 0) and "byte" in dead["error"].iloc[0]
    assert bytes(out["value"].iloc[1]) == value[:9]  # raw bytes travel on, for a dead letter later
    assert 0 <= bucket_of("any", 7) < 7 and bucket_of("any", 7) == bucket_of("any", 7)


@pytest.mark.servers
def test_replay_sends_bad_lines_to_dead_letters_and_goes_on(spark, redis_server, redis_client, tmp_path):
    cap = tmp_path / "bad-capture"
    cap.mkdir()
    good = (CAPTURES / "lag-ramp" / "offsets.jsonl").read_text().splitlines()
    bad_value = json.loads(good[1])
    bad_value["value"], bad_value["offset"] = bad_value["value"][:12], 9999
    (cap / "offsets.jsonl").write_text("\n".join([*good[:5], json.dumps(bad_value), *good[5:8]]) + "\n")
    (cap / "heartbeats.jsonl").write_text("{not json\n")
    cfg = PipelineConfig(
        redis_url=redis_server.url, checkpoint_dir=str(tmp_path / "ck"), mode="replay", capture_dir=str(cap)
    )
    run_pipeline(cfg, spark, progress=False)
    store = RedisStore(redis_client)
    dead = {d["position"]: d for d in store.dead_letters()}
    assert set(dead) == {f"__consumer_offsets/{bad_value['partition']}@9999", "heartbeats.jsonl/0@1"}
    assert base64.b64decode(
        dead[f"__consumer_offsets/{bad_value['partition']}@9999"]["value"]
    ) == base64.b64decode(bad_value["value"])
    want = _model_docs(cap)
    assert list(want) == ["lag-060433j"]
    assert store.get_group("lag-060433j") == want["lag-060433j"]  # the good records all went through


def test_capture_rows_follow_the_model_order_and_end_with_ticks():
    from collectors.capture import read_capture
    from coordinator_model.evidence_order import sort_evidence

    cap = CAPTURES / "lag-ramp"
    rows = load_capture(str(cap))
    ticks = [r for _, r in rows if r[0] == TICK_TOPIC]
    evidence = sort_evidence(read_capture(cap).evidence)
    assert [t[4].decode() for t in ticks] == sorted({e.group for e in evidence if e.group})
    assert all(t[3] == max(e.ts for e in evidence) for t in ticks)
    ts = [ts for ts, r in rows if r[0] != TICK_TOPIC]
    assert ts == sorted(ts)
    assert len([r for _, r in rows if r[0] == "__consumer_offsets"]) == 363


def test_lag_point_and_progress_helpers():
    from coordinator_model.document import GroupDocument

    raw = {
        "group": "g",
        "lag": {
            "total": 7,
            "max_seconds": 2.5,
            "partitions": [
                {
                    "topic": "t",
                    "partition": 1,
                    "committed": 3,
                    "end_offset": 10,
                    "lag": 7,
                    "lag_seconds": 2.5,
                },
                {"topic": "t", "partition": 2, "committed": None, "lag": None, "lag_seconds": None},
            ],
            "members": [{"member_id": "m", "lag": 7, "lag_seconds": 2.5}],
        },
    }
    assert lag_point(GroupDocument.from_json(raw)) == (
        7,
        2.5,
        {
            "t:1": {"lag": 7, "lag_seconds": 2.5, "committed": 3},
            "t:2": {"lag": None, "lag_seconds": None, "committed": None},
        },
        {"m": {"lag": 7, "lag_seconds": 2.5}},
    )
    prog = {"sources": [{"endOffset": '{"t": {"0": 5, "1": 5}}', "latestOffset": {"t": {"0": 10, "1": 10}}}]}
    assert _records_behind(prog) == (10, 20)


def _model_docs(cap) -> dict[str, dict]:
    res = CliRunner().invoke(cli, ["model", str(cap), "--json"])
    assert res.exit_code == 0, res.output
    return {d["group"]: d for d in json.loads(res.stdout)["groups"]}


@pytest.mark.servers
@pytest.mark.slow
def test_replay_of_every_capture_gives_what_groupscope_model_prints(
    spark, redis_server, redis_client, tmp_path
):
    """`groupscope group NAME --json` after the replay pipeline == `groupscope model --json` for every
    group of every capture. rebalance-storm is replayed in batches of 300 rows, to show that splitting
    the evidence into micro-batches changes nothing."""
    store = RedisStore(redis_client)
    for cap in capture_dirs():
        cfg = PipelineConfig(
            redis_url=redis_server.url,
            checkpoint_dir=str(tmp_path / cap.name),
            mode="replay",
            capture_dir=str(cap),
            max_records_per_batch=300 if cap.name == "rebalance-storm" else None,
        )
        res = run_pipeline(cfg, spark, progress=False)
        if cap.name == "rebalance-storm":
            assert res.batches >= 5
        for name, want in _model_docs(cap).items():
            out = CliRunner().invoke(cli, ["group", name, "--json", "--redis", redis_server.url])
            assert out.exit_code == 0, out.output
            assert json.loads(out.stdout) == want, f"{cap.name}: {name}"
            # history rows are the document's, each once
            assert len(store.get_generations(name)) == len([g for g in want["generations"] if g["start"]])
            assert len(store.get_timeline(name)) == len(want["timeline"])
    total, rows = store.list_groups(limit=1000)
    assert total == sum(len(_model_docs(c)) for c in capture_dirs()) == len(rows)
    out = CliRunner().invoke(cli, ["groups", "--json", "--redis", redis_server.url])
    assert json.loads(out.stdout)["total"] == total


def test_capture_reader_paces_replay_at_speed():
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from collectors.pipeline.capture_source import CaptureStreamReader

    cap = str(CAPTURES / "lag-ramp")  # about 99 s of evidence
    total = len(load_capture(cap))
    fast = CaptureStreamReader({"path": cap})
    start = fast.initialOffset()
    assert fast.latestOffset(start, ReadAllAvailable()) == {"capture": {"0": total}}
    assert fast.latestOffset(start, ReadMaxRows(100)) == {"capture": {"0": 100}}
    paced = CaptureStreamReader({"path": cap, "speed": "10"})
    first = paced.latestOffset(start, ReadAllAvailable())["capture"]["0"]
    time.sleep(1.0)  # 10 s of capture time at 10x
    later = paced.latestOffset(start, ReadAllAvailable())["capture"]["0"]
    assert 0 < first < later < total
    rows = load_capture(cap)
    assert rows[later - 1][0] - rows[0][0] <= 10_000 + 2_000  # nothing beyond the paced horizon (+slack)
    parts = paced.partitions(start, {"capture": {"0": later}})
    assert sum(p.end - p.start for p in parts) == later


@pytest.mark.servers
def test_broker_log_shipper_sends_each_line_once(kafka_broker, tmp_path):
    from confluent_kafka import Consumer, TopicPartition

    from collectors.pipeline.broker_log_shipper import BrokerLogShipper

    log = tmp_path / "server.log"
    lines = (CAPTURES / "classic-range-lifecycle" / "broker.log").read_text().splitlines()
    log.write_text("\n".join(lines[:10]) + "\n" + lines[10][:20])  # the last line is still being written
    topic = f"broker-log-{time.time_ns()}"
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)  # as check_topics does at start
    cfg = PipelineConfig(
        redis_url="redis://unused",
        # not made yet: the shipper starts before Spark, which makes the checkpoint folder
        checkpoint_dir=str(tmp_path / "checkpoint"),
        kafka={"bootstrap.servers": kafka_broker.bootstrap_servers},
        broker_log_topic=topic,
        broker_log_files=[str(log)],
    )

    def run_once() -> None:
        shipper = BrokerLogShipper(cfg, interval_s=0.2)
        shipper.start()
        time.sleep(2)
        shipper.stop()
        shipper.join(10)

    run_once()
    with open(log, "a") as f:
        f.write(lines[10][20:] + "\n" + "\n".join(lines[11:20]) + "\n")
    run_once()  # a restart: resumes from the saved position
    c = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": f"reader-{topic}",  # assign() only: never joins or commits
            "enable.partition.eof": True,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if len(got) >= 20:
                break
            continue
        got.append(m.value().decode())
    c.close()
    assert got == lines[:20]


@pytest.mark.servers
def test_admin_poller_turns_a_real_group_into_evidence(kafka_broker):
    """A consumer group on the broker -> describe, committed and end-offset records on the admin topic,
    each parsed by the model's parsers into evidence for that group."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.route import decode_one

    bs = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    data, admin_topic, group = f"data-{suffix}", f"admin-{suffix}", f"real-group-{suffix}"
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics([NewTopic(data, 2, 1), NewTopic(admin_topic, 1, 1)]).values():
        f.result(15)
    p = Producer({"bootstrap.servers": bs})
    for i in range(10):
        p.produce(data, value=b"x", partition=i % 2)
    p.flush(10)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest"})
    c.subscribe([data])
    deadline, n = time.monotonic() + 60, 0
    while time.monotonic() < deadline and n < 10:
        m = c.poll(1.0)
        n += bool(m is not None and not m.error())
    c.commit(asynchronous=False)
    cfg = PipelineConfig(
        redis_url="redis://unused",
        checkpoint_dir="/tmp",
        kafka={"bootstrap.servers": bs},
        admin_topic=admin_topic,
    )
    assert AdminPoller(cfg, store=None).poll_once(admin, Producer({"bootstrap.servers": bs})) >= 1
    c.close()
    reader = Consumer({"bootstrap.servers": bs, "group.id": f"r-{suffix}", "enable.partition.eof": True})
    reader.assign([TopicPartition(admin_topic, 0, 0)])
    kinds: dict[str, object] = {}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = reader.poll(1.0)
        if m is None or m.error():
            if kinds and m is not None:
                break
            continue
        if m.key() not in (group.encode(), b""):  # b"": the cluster's lines (log ends, one per topic)
            continue
        for g, _, _, ev in decode_one("admin", admin_topic, 0, m.offset(), 0, m.key(), m.value()):
            if g == "" and {t for t, _, _ in getattr(ev, "rows", ())} != {data}:
                continue  # another topic's log ends (other tests' groups on the broker)
            assert g in (group, "")
            kinds[type(ev).__name__] = ev
    reader.close()
    assert set(kinds) == {"DescribeSnapshot", "CommittedSnapshot", "EndOffsets"}
    assert sorted(kinds["CommittedSnapshot"].offsets) == [(data, 0, 5), (data, 1, 5)]
    assert sorted(kinds["EndOffsets"].rows) == [(data, 0, 5), (data, 1, 5)]


@settings(max_examples=300, deadline=None)
@given(doc=st.dictionaries(st.text(max_size=5), json_values, max_size=5))
def test_the_sink_reads_a_document_exactly_as_the_standard_library_does(doc):
    from collectors.pipeline.sink import read_document

    text = json.dumps(doc, separators=(",", ":"))
    got = read_document(text)
    assert got == json.loads(text)
    assert json.dumps(got) == json.dumps(json.loads(text))  # same types too (no int read as a float)


def test_a_failed_live_query_is_started_again_after_a_growing_back_off_said_in_the_sources(
    redis_client,
) -> None:
    """QueryRestarts (job.py): each failure is said in `gs:sources` ("pipeline") and waited out,
    1 s, then doubling up to a minute; afresh once a query ran ten minutes; a stop during the wait
    ends it; the restart says the query runs again, with the last failure."""
    import threading

    from collectors.pipeline.job import QueryRestarts

    store = RedisStore(redis_client, prefix="restarts")
    r = QueryRestarts()
    r.MIN_S = 0.01  # the same doubling, in hundredths
    r.backoff_s = r.MIN_S
    waits = []
    stop = threading.Event()
    for _ in range(9):
        waits.append(r.backoff_s)
        assert r.wait(RuntimeError("Python worker failed to connect back.\nat ..."), 1.0, store, stop)
    assert waits == [min(0.01 * 2**i, r.MAX_S) for i in range(9)]
    status = json.loads(redis_client.hget("restarts:sources", "pipeline"))
    assert not status["ok"] and "Python worker failed to connect back." in status["detail"]
    assert "at ..." not in status["detail"]  # the first line of the failure, not its trace
    r.started(store)
    status = json.loads(redis_client.hget("restarts:sources", "pipeline"))
    assert status["ok"] and "started again 9 times" in status["detail"]
    r.wait(RuntimeError("again"), QueryRestarts.HEALTHY_S + 1, store, stop)  # after a long good run
    assert r.backoff_s == 2 * r.MIN_S  # the back-off started afresh
    stop.set()
    assert not r.wait(RuntimeError("again"), 1.0, store, stop)  # stopping: no restart
