"""Whatever a record on a source topic holds, the first stage never fails: each row comes out routed,
or as one counted dead letter (DEAD_BUCKET, with its error), or dropped as carrying no group evidence
(route_one gives it no group). A heartbeat whose "ts" is past 64 bits used to pass the per-row guard
and fail `pa.RecordBatch.from_pydict` after it, which stopped the Spark query for good (each restart
replayed the same batch). And the evidence readers refuse integers no typed column can hold."""

from __future__ import annotations

import base64
import json
import re
from collections import defaultdict
from typing import Any

import pandas as pd
import pytest
from conftest import CAPTURES
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from json_strategies import json_values

from collectors.pipeline.commit_runs import RUN_KIND, unpack
from collectors.pipeline.route import RAW_COLUMNS, _admin_route, decode_batches, decode_one, route_one
from collectors.pipeline.rows import DEAD_BUCKET, DEAD_LETTER_KEY
from coordinator_model.evidence import (
    EvidenceError,
    from_describe_json,
    from_end_offset_json,
    from_end_offsets_json,
    from_heartbeat_json,
)

KINDS = {
    "groupscope.heartbeats": "heartbeat",
    "groupscope.admin": "admin",
    "__consumer_offsets": "offsets",
    "groupscope.broker-log": "broker_log",
}
TOPIC_OF = {kind: topic for topic, kind in KINDS.items()}
BUCKETS = 8
I64 = 2**63
I32 = 2**31

# The record of the issue: one such heartbeat stopped the collector.
ISSUE_RECORD = b'{"ts": 100000000000000000000, "group": "x", "event": "heartbeat"}'


# ---------------------------------------------------------------------------------------------
# real lines of every source, to mutate: hostile input is mostly well-formed input with one bad field
def _lines(name: str, limit: int = 40) -> list[str]:
    out: list[str] = []
    for cap in ("classic-range-lifecycle", "kip848-lifecycle"):
        path = CAPTURES / cap / name
        if path.exists():
            out += [line for line in path.read_text().splitlines() if line.strip()][:limit]
    return out


REAL_JSON = {
    "heartbeat": [json.loads(line) for line in _lines("heartbeats.jsonl")],
    "admin": [json.loads(line) for line in _lines("describe.jsonl") + _lines("end_offsets.jsonl", 10)]
    + [
        {"ts": 1795241073357, "group": "crl-060433a", "end_offsets": [["t", 0, 5], ["t", 1, 7]]},
        {"ts": 1795241073357, "clock": True},
    ],
}
REAL_BROKER_LOG = _lines("broker.log")
REAL_OFFSETS = [
    (base64.b64decode(o["key"]), base64.b64decode(o["value"]) if o.get("value") else None)
    for o in map(json.loads, _lines("offsets.jsonl"))
]

hostile_ints = st.one_of(
    st.integers(),  # unbounded: past 64 bits either way
    st.sampled_from([I64, I64 - 1, -I64, -I64 - 1, I32, I32 - 1, -I32 - 1, 10**20, -(10**20), 2**200]),
    st.integers(-(2**70), 2**70),
)
hostile_values = st.one_of(
    hostile_ints,
    json_values,
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "x\udfff", True, False, None, [], {}]),  # lone surrogates, JSON's odd ones
)
fields = st.sampled_from(
    ["ts", "group", "event", "member_id", "generation", "partitions", "session_timeout_ms",
     "max_poll_interval_ms", "members", "committed", "denied", "end_offsets", "end_offset", "topic",
     "partition", "broker", "coordinator", "clock", "type", "state", "resend"]
)  # fmt: skip


def _dumps(obj: Any) -> bytes:
    # json.dumps as the producers write; allow_nan: Python's reader takes Infinity and NaN back
    return json.dumps(obj).encode()


@st.composite
def mutated_json(draw: st.DrawFn, kind: str) -> bytes:
    """A real line of the source with some fields set to hostile values (or its own fields' values
    nested where they do not belong), or a made-up object of the source's field names."""
    if draw(st.booleans()):
        obj = dict(draw(st.sampled_from(REAL_JSON[kind])))
    else:
        obj = {}
    for field in draw(st.lists(fields, max_size=4)):
        obj[field] = draw(hostile_values)
    if kind == "heartbeat" and draw(st.booleans()):
        obj["event"] = draw(st.sampled_from(["heartbeat", "join", "poll_stall", "nope"]))
    if draw(st.booleans()):
        obj["ts"] = draw(hostile_ints)
    if kind == "admin" and draw(st.booleans()):
        obj["resend"] = True  # an unchanged answer: the refresh bucket's path
    return _dumps(obj)


@st.composite
def broker_log_line(draw: st.DrawFn) -> bytes:
    """A real coordinator log line with one of its numbers (date, generation, partition...) replaced."""
    line = draw(st.sampled_from(REAL_BROKER_LOG))
    numbers = list(re.finditer(r"\d+", line))
    if numbers and draw(st.booleans()):
        m = draw(st.sampled_from(numbers))
        line = line[: m.start()] + str(draw(hostile_ints)) + line[m.end() :]
    return line.encode("utf-8", "surrogatepass")


@st.composite
def offsets_record(draw: st.DrawFn) -> tuple[bytes | None, bytes | None]:
    key, value = draw(st.sampled_from(REAL_OFFSETS))
    how = draw(st.sampled_from(["real", "tombstone", "cut", "bytes", "key-bytes"]))
    if how == "tombstone":
        value = None
    elif how == "cut" and value:
        value = value[: draw(st.integers(0, len(value)))]
    elif how == "bytes":
        value = draw(st.binary(max_size=40))
    elif how == "key-bytes":
        key = draw(st.binary(max_size=40) | st.none())
    return key, value


def value_of(kind: str) -> st.SearchStrategy[tuple[bytes | None, bytes | None]]:
    """(key, value) of a raw row of that source kind."""
    anything = st.one_of(
        st.binary(max_size=60),
        st.none(),
        json_values.map(_dumps),
        st.just(ISSUE_RECORD),
    )
    keys = st.none() | st.binary(max_size=12) | st.just(b"crl-060433a")
    if kind == "offsets":
        own = offsets_record()
    elif kind == "broker_log":
        own = st.tuples(st.none(), broker_log_line())
    else:
        own = st.tuples(keys, mutated_json(kind))
    return own | st.tuples(keys, anything)


@st.composite
def raw_row(draw: st.DrawFn) -> tuple[str, Any, Any, Any]:
    kind = draw(st.sampled_from([*KINDS.values(), "unknown"]))
    topic = TOPIC_OF.get(kind, "not-a-source")
    key, value = draw(value_of(kind if kind in TOPIC_OF else "heartbeat"))
    partition = draw(st.none() | st.integers(-I32, I32 - 1) | st.integers(0, 49))
    ts = draw(st.none() | st.integers(-I64, I64 - 1) | st.integers(0, 2**45))
    return topic, partition, ts, (key, value)


def _frame(rows: list[tuple]) -> pd.DataFrame:
    # object columns: pandas would make floats of ints mixed with None, losing the 64-bit ones
    return pd.DataFrame(rows, columns=RAW_COLUMNS, dtype=object)


def route_and_account(rows: list[tuple]) -> dict[str, int]:
    """Route raw rows (topic, partition, offset, timestamp, key, value; offsets unique) through the
    real first stage; check each comes out routed, as one dead letter, or dropped (only when route_one
    gives it no group); return the counts."""
    frames = list(decode_batches(iter([_frame(rows)]), KINDS, buckets=BUCKETS))
    out = pd.concat(frames, ignore_index=True) if frames else _frame([]).iloc[:0]
    by_offset: dict[int, list[dict]] = defaultdict(list)
    for rec in out.to_dict("records"):
        if rec["kind"] == RUN_KIND:  # offset commits decoded a column at a time: a run of them
            for _ts, log, *_ in unpack(bytes(rec["c_run"])):
                by_offset[log].append({**rec, "offset": log})
        else:
            by_offset[int(rec["offset"])].append(rec)
    counts = {"routed": 0, "dead": 0, "dropped": 0}
    for topic, partition, offset, ts, key, value in rows:
        got = by_offset.pop(offset, [])
        dead = [r for r in got if r["bucket"] == DEAD_BUCKET]
        if dead:
            assert len(got) == 1, f"row {offset} both routed and a dead letter: {got}"
            assert dead[0]["group"] == DEAD_LETTER_KEY and dead[0]["error"], dead[0]
            assert bytes(dead[0]["value"]) == value if value is not None else dead[0]["value"] is None
            counts["dead"] += 1
        elif got:
            assert all(not isinstance(r["error"], str) for r in got), got
            counts["routed"] += 1
        else:
            # dropped: only a row of a known source that route_one finds no group in
            assert topic in KINDS, f"row {offset} of an unknown topic vanished"
            assert route_one(KINDS[topic], topic, partition, offset, ts, key, value) == [], offset
            counts["dropped"] += 1
    assert not by_offset, f"rows out of nowhere: {dict(by_offset)}"
    assert sum(counts.values()) == len(rows)
    return counts


# ---------------------------------------------------------------------------------------------
# the first stage, whole
@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(raw_row(), min_size=1, max_size=12))
@example([("groupscope.heartbeats", 0, 5, (None, ISSUE_RECORD))])
def test_no_record_fails_the_first_stage(drawn: list[tuple]) -> None:
    rows = [(t, p, i, ts, k, v) for i, (t, p, ts, (k, v)) in enumerate(drawn)]
    route_and_account(rows)


def test_the_issues_heartbeat_is_one_dead_letter_among_good_rows() -> None:
    good = json.dumps({"ts": 1_700_000_000_000, "group": "x", "event": "heartbeat"}).encode()
    rows = [
        ("groupscope.heartbeats", 0, 0, 5, None, good),
        ("groupscope.heartbeats", 0, 1, 6, None, ISSUE_RECORD),
        ("groupscope.heartbeats", 0, 2, 7, None, good),
    ]
    assert route_and_account(rows) == {"routed": 2, "dead": 1, "dropped": 0}
    (out,) = decode_batches(iter([_frame(rows)]), KINDS, buckets=BUCKETS)
    dead = out[out["bucket"] == DEAD_BUCKET]
    assert list(dead["offset"]) == [1]
    assert "'ts'" in dead["error"].iloc[0] and "100000000000000000000" in dead["error"].iloc[0]


@pytest.mark.parametrize(
    "kind,value",
    [
        ("heartbeat", ISSUE_RECORD),
        ("heartbeat", b'{"ts": -100000000000000000000, "group": "x", "event": "join"}'),
        ("heartbeat", b'{"ts": 1e300, "group": "x", "event": "heartbeat"}'),
        ("heartbeat", b'{"ts": Infinity, "group": "x", "event": "heartbeat"}'),
        ("heartbeat", b'{"ts": 5, "group": "x", "event": "heartbeat", "generation": 9223372036854775808}'),
        ("heartbeat", b'{"ts": 5, "group": "x", "event": "heartbeat", "session_timeout_ms": 2147483648}'),
        ("heartbeat", b'{"ts": 5, "group": "\\ud800", "event": "heartbeat"}'),  # a lone surrogate
        # the Admin poller's fast route reads "ts" alone: a huge one must not pass it
        ("admin", b'{"ts": 100000000000000000000, "group": "g", "members": []}'),
        ("admin", b'{"ts": 100000000000000000000, "group": "g", "end_offsets": [["t", 0, 1]]}'),
        ("admin", b'{"ts": 100000000000000000000, "group": "g", "members": [], "resend": true}'),
        ("admin", b'{"ts": 5, "group": "\\udfff", "members": [], "resend": true}'),
        ("admin", b'{"ts": 100000000000000000000, "clock": true}'),  # no bucket's watermark moves
        ("admin", b'{"ts": 5, "topic": "t", "partition": 0, "end_offset": 100000000000000000000}'),
    ],
)
def test_each_hostile_line_is_one_dead_letter(kind: str, value: bytes) -> None:
    topic = TOPIC_OF[kind]
    assert route_and_account([(topic, 0, 0, 5, b"g", value)]) == {"routed": 0, "dead": 1, "dropped": 0}


@pytest.mark.parametrize(
    "value",
    [
        b'{"ts": 5, "group": "g", "end_offsets": [["t", 0, 100000000000000000000]]}',
        b'{"ts": 5, "group": "g", "committed": [["t", 0, 100000000000000000000]]}',
        b'{"ts": 5, "group": "g", "committed": [["t", true, 0]]}',
    ],
)
def test_a_poller_line_with_a_sound_ts_and_group_is_routed_and_refused_next_to_the_model(
    value: bytes,
) -> None:
    """The first stage routes an Admin poller line by its "ts" and "group" alone (_admin_route); the
    model stage's decoder refuses what is past a column's range, and sets the row aside there."""
    assert route_and_account([(TOPIC_OF["admin"], 0, 0, 5, b"g", value)]) == {
        "routed": 1,
        "dead": 0,
        "dropped": 0,
    }
    with pytest.raises(EvidenceError):
        decode_one("admin", TOPIC_OF["admin"], 0, 0, 5, b"g", value)


def test_the_admin_fast_route_leaves_a_huge_ts_to_the_decoder() -> None:
    assert _admin_route(b'{"ts": 9223372036854775807, "group": "g", "members": []}') == [("g", 2**63 - 1, 2)]
    assert _admin_route(b'{"ts": 9223372036854775808, "group": "g", "members": []}') is None
    assert _admin_route(b'{"ts": -9223372036854775809, "group": "g", "members": []}') is None


# ---------------------------------------------------------------------------------------------
# the evidence readers' integer range
def _hb(**fields: Any) -> dict[str, Any]:
    return {"ts": 5, "group": "g", "event": "heartbeat", **fields}


def _refused(fn: Any, obj: Any, field: str) -> str:
    with pytest.raises(EvidenceError) as info:
        fn(obj)
    assert field in str(info.value), str(info.value)
    return str(info.value)


@pytest.mark.parametrize("ts", [-(2**63), -1, 0, 2**63 - 1])
def test_a_long_is_a_timestamp(ts: int) -> None:
    assert from_heartbeat_json(_hb(ts=ts)).ts == ts
    assert from_describe_json({"ts": ts, "group": "g", "members": []}).ts == ts
    assert from_end_offset_json({"ts": ts, "topic": "t", "partition": 0, "end_offset": 1}).ts == ts


@pytest.mark.parametrize(
    "ts", [2**63, -(2**63) - 1, 10**20, pytest.param(2**4000, id="2**4000"), 1e300, -1e300]
)
def test_past_a_long_is_no_timestamp(ts: int | float) -> None:
    msg = _refused(from_heartbeat_json, _hb(ts=ts), "'ts'")
    assert len(msg) < 200  # a huge int is not printed whole
    _refused(from_describe_json, {"ts": ts, "group": "g", "members": []}, "'ts'")
    _refused(from_describe_json, {"ts": ts, "group": "g", "committed": []}, "'ts'")
    _refused(from_end_offset_json, {"ts": ts, "topic": "t", "partition": 0, "end_offset": 1}, "'ts'")
    _refused(from_end_offsets_json, {"ts": ts, "group": "g", "end_offsets": [["t", 0, 1]]}, "'ts'")


@given(st.integers())
def test_any_int_is_a_timestamp_exactly_when_it_is_a_long(ts: int) -> None:
    try:
        ev = from_heartbeat_json(_hb(ts=ts))
    except EvidenceError as e:
        assert not -(2**63) <= ts < 2**63 and "'ts'" in str(e)
    else:
        assert -(2**63) <= ev.ts < 2**63


@pytest.mark.parametrize("bad", [True, False, float("inf"), float("-inf"), float("nan"), "5", [5]])
def test_a_timestamp_is_a_finite_number_not_a_bool(bad: Any) -> None:
    _refused(from_heartbeat_json, _hb(ts=bad), "'ts'")
    _refused(from_heartbeat_json, _hb(generation=bad), "'generation'")


@pytest.mark.parametrize("field", ["session_timeout_ms", "max_poll_interval_ms"])
def test_member_timeouts_are_within_the_brokers_limits(field: str) -> None:
    for ok in (0, 1_800_000, 2**31 - 1):
        assert getattr(from_heartbeat_json(_hb(**{field: ok})), field) == ok
    assert getattr(from_heartbeat_json(_hb(**{field: None})), field) is None
    for bad in (-1, 2**31, 2**63, 10**20):
        _refused(from_heartbeat_json, _hb(**{field: bad}), repr(field))


def test_generation_and_epochs_are_longs() -> None:
    _refused(from_heartbeat_json, _hb(generation=2**63), "'generation'")
    broker = {"group_epoch": 2**63, "members": []}
    _refused(from_describe_json, {"ts": 5, "group": "g", "members": [], "broker": broker}, "'group_epoch'")
    broker = {"assignment_epoch": -(2**63) - 1}
    _refused(
        from_describe_json, {"ts": 5, "group": "g", "members": [], "broker": broker}, "'assignment_epoch'"
    )
    broker = {"members": [{"member_id": "m", "member_epoch": 10**20}]}
    line = {"ts": 5, "group": "g", "members": [{"member_id": "m"}], "broker": broker}
    _refused(from_describe_json, line, "'member_epoch'")


def test_partitions_are_ints_and_offsets_longs() -> None:
    assert from_heartbeat_json(_hb(partitions=[["t", 2**31 - 1]])).partitions == (("t", 2**31 - 1),)
    _refused(from_heartbeat_json, _hb(partitions=[["t", 2**31]]), "partition")
    _refused(from_heartbeat_json, _hb(partitions=[["t", True]]), "partition")
    _refused(from_heartbeat_json, _hb(partitions=[["t", float("inf")]]), "partition")
    members = [{"member_id": "m", "assignment": [["t", -(2**31) - 1]]}]
    _refused(from_describe_json, {"ts": 5, "group": "g", "members": members}, "assignment")
    committed = {"ts": 5, "group": "g"}
    assert from_describe_json({**committed, "committed": [["t", 0, 2**63 - 1]]}).offsets == (
        ("t", 0, 2**63 - 1),
    )
    _refused(from_describe_json, {**committed, "committed": [["t", 0, 2**63]]}, "committed: offset")
    _refused(from_describe_json, {**committed, "committed": [["t", 2**31, 0]]}, "committed: partition")
    _refused(from_describe_json, {**committed, "committed": [["t", False, 0]]}, "committed: partition")
    end = {"ts": 5, "topic": "t", "partition": 0, "end_offset": 1}
    _refused(from_end_offset_json, {**end, "end_offset": 2**63}, "'end_offset'")
    _refused(from_end_offset_json, {**end, "partition": 2**31}, "'partition'")
    # the poller's own shape takes a fast path through from_end_offsets_json: it must refuse the same
    line = {"ts": 5, "group": "g", "end_offsets": [["t", 0, 1], ["t", 1, 2**63]]}
    _refused(from_end_offsets_json, line, "'end_offset'")
    line = {"ts": 5, "group": "g", "end_offsets": [["t", 2**31, 1]]}
    _refused(from_end_offsets_json, line, "'partition'")


def test_a_coordinator_id_past_an_int_is_refused_and_a_bool_is_no_id() -> None:
    line = {"ts": 5, "group": "g", "members": []}
    assert from_describe_json({**line, "coordinator": {"id": 3}}).coordinator_id == 3
    assert from_describe_json({**line, "coordinator": {"id": True}}).coordinator_id is None
    _refused(from_describe_json, {**line, "coordinator": {"id": 2**31}}, "coordinator.id")


def test_a_dead_letter_keeps_a_bounded_prefix_of_its_record_and_its_whole_size() -> None:
    """A hostile record of megabytes becomes a dead letter of a few KiB: its key's and value's first
    DEAD_LETTER_BYTES, their sizes, and its position in its topic (where the whole record is)."""
    import base64
    import json as _json

    from collectors.pipeline.model_state import DEAD_LETTER_BYTES, dead_letter_payload

    big = b"x" * (3 * 1024 * 1024)
    d = _json.loads(dead_letter_payload("hb", 2, 99, 1, "E" * 10_000, b"k", big))
    assert d["position"] and d["key"] == base64.b64encode(b"k").decode() and "key_bytes" not in d
    assert base64.b64decode(d["value"]) == big[:DEAD_LETTER_BYTES] and d["value_bytes"] == len(big)
    assert len(d["error"]) == 2000
    small = _json.loads(dead_letter_payload("hb", 2, 100, 1, "bad", None, b"{}"))
    assert small["key"] is None and base64.b64decode(small["value"]) == b"{}" and "value_bytes" not in small


def test_a_full_redis_is_waited_for_like_a_lost_one() -> None:
    """At maxmemory (noeviction) Redis refuses writes with OOM: the collector's writes are retried
    until someone makes room, as for a Redis that went away, instead of failing the query."""
    import threading
    import time

    import redis

    from collectors.demo.servers.processes import RedisServer
    from collectors.pipeline.sink import with_retry

    server = RedisServer().start()
    try:
        r = redis.Redis.from_url(server.url)
        used = int(r.info("memory")["used_memory"])
        r.config_set("maxmemory-policy", "noeviction")
        r.config_set("maxmemory", used + 200_000)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for i in range(10_000):
                r.set(f"fill:{i}", b"x" * 1000)
        # well over the limit now, whatever the allocator gave back since
        r.config_set("maxmemory", int(r.info("memory")["used_memory"]) - 500_000)
        done: dict[str, object] = {}

        def write() -> None:
            done["result"] = with_retry(lambda: r.set("gs:after", b"1"), "test", 30)

        t = threading.Thread(target=write)
        t.start()
        time.sleep(1.5)
        assert t.is_alive() and "result" not in done  # still waiting: nothing written, nothing lost
        r.config_set("maxmemory", 0)  # room made
        t.join(20)
        assert done["result"] is True and r.get("gs:after") == b"1"
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------------
# the broker-log source (found by the fault suite, tests/faults: one such line grew the live
# collector's model worker past 15 GB)
COORDINATOR_LINE = (
    "[2026-12-07 10:00:{:02d},000] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=7] "
    "Stabilized group g generation {} with 1 members. "
    "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
)


@pytest.mark.parametrize("number", [str(2**31), str(10**20), "9" * 5000])
def test_a_coordinator_line_with_a_number_past_a_java_int_is_a_dead_letter(number: str) -> None:
    line = COORDINATOR_LINE.format(0, number).encode()
    assert route_and_account([(TOPIC_OF["broker_log"], 0, 0, 5, None, line)]) == {
        "routed": 0,
        "dead": 1,
        "dropped": 0,
    }
    fine = COORDINATOR_LINE.format(0, 2**31 - 1).encode()
    assert route_and_account([(TOPIC_OF["broker_log"], 0, 0, 5, None, fine)])["routed"] == 1


def test_a_generation_jump_of_billions_fills_in_at_most_the_generations_a_group_keeps() -> None:
    """A generation far past the last one (a Java int's largest, which a coordinator line may say)
    fills in the generations the jump skipped only as far back as a group keeps them: quickly, and
    in bounded memory."""
    import time

    from coordinator_model.broker_log import parse_broker_log_line
    from coordinator_model.membership import MAX_GENERATIONS
    from coordinator_model.rebuild import rebuild

    evs = [parse_broker_log_line(COORDINATOR_LINE.format(s, n)) for s, n in ((0, 1), (5, 2**31 - 1))]
    t0 = time.monotonic()
    engine = rebuild(evs, at_ms=1_796_700_000_000)["g"]
    numbers = [g["generation"] for g in engine.document_json()["generations"]]
    assert time.monotonic() - t0 < 10
    assert numbers[-1] == 2**31 - 1 and len(numbers) <= MAX_GENERATIONS
    assert numbers == sorted(set(numbers))


@pytest.mark.servers
def test_a_dead_letter_in_redis_keeps_its_records_whole_size(redis_client) -> None:
    """The sink writes a dead letter's prefix and the whole record's size (the fault suite found the
    size dropped on the way to Redis: a cut record read like a small one)."""
    from collectors.pipeline.model_state import DEAD_LETTER_BYTES, dead_letter_payload
    from collectors.pipeline.sink import write_rows
    from collectors.storage.redis_store import RedisStore

    big = b"x" * (DEAD_LETTER_BYTES * 3)
    payload = dead_letter_payload("hb", 2, 99, 1, "bad", b"k", big)
    store = RedisStore(redis_client)
    assert (
        write_rows(store, [{"group": "", "kind": "dead", "ts": 1, "refreshed": 1, "payload": payload}])[
            "dead"
        ]
        == 1
    )
    (d,) = store.dead_letters()
    assert d["value_bytes"] == len(big) and "key_bytes" not in d
    assert base64.b64decode(d["value"]) == big[:DEAD_LETTER_BYTES] and d["position"] == "hb/2@99"


def test_a_full_redis_is_still_read() -> None:
    """Over maxmemory (noeviction) Redis refuses every command queued in a MULTI, reads included:
    the cluster registry, read first by every CLI command and dashboard page, reads without one, so
    a full Redis is shown as full (memory_full) and its groups listed, not taken for unreachable."""
    import redis

    from collectors.demo.servers.processes import RedisServer
    from collectors.storage.clusters import ClusterRegistry
    from collectors.storage.redis_store import RedisStore

    server = RedisServer().start()
    try:
        r = redis.Redis.from_url(server.url)
        ClusterRegistry(r).register("default", "127.0.0.1:9092")
        r.config_set("maxmemory-policy", "noeviction")
        r.config_set("maxmemory", int(r.info("memory")["used_memory"]) + 100_000)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for i in range(10_000):
                r.set(f"fill:{i}", b"x" * 1000)
        with pytest.raises(redis.exceptions.OutOfMemoryError), r.pipeline() as p:
            p.hgetall("anything").execute()  # what the registry's read did
        assert ClusterRegistry(r).names() == ["default"]
        store = RedisStore(r)
        assert store.memory_full() is not None and store.list_groups() == (0, [])
    finally:
        server.stop()
