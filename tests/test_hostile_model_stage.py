"""Hostile records through both stages of the live pipeline, the model stage included, with its state
coming back: whatever a record on a source topic holds, nothing raises, every record that cannot
become evidence is one counted dead letter with its error, and the good records mixed in with the
hostile ones make the same group documents as without them.

tests/test_hostile_rows.py drives the first stage alone. Here its hostile rows (mutated real lines
of each source, arbitrary bytes and JSON, `__consumer_offsets` records with arbitrary keys and values
or real keys with hostile values), and rows aimed past the first stage (well-formed commits and group
metadata with any numbers the wire carries, real records with bytes overwritten, real heartbeat and
Admin lines with a value anywhere inside replaced), are mixed into a real stretch of a capture (every
source as the live collector reads it) and run, in-process and without Spark, through the functions
`job.build_query` hands to Spark, configured as a live collector configures them:

- the first stage: `route_arrow` over an Arrow batch of the raw rows (ends_apart, KnownCommits);
- the rows grouped by state bucket as `groupBy("bucket")` does, each bucket's rows converted from
  Arrow to pandas on their own, and fed to the function `make_update` returns (a sink on the test's
  redis-server, shared log ends, unconfirmed groups hidden) with a GroupState holding what the
  previous micro-batch stored, as Spark hands it back;
- the sink (`write_rows`) over every bucket's output rows, as foreachBatch's partitions write them.

Two micro-batches, then a clock ten minutes on (past IDLE_REFRESH_MS: every group of both runs is
modelled to the same watermark, so a document differs only by the evidence its group got) that
releases every row held behind the watermark. Then the same rows less those that became dead
letters run again on a prefix of their own: every group's document must be equal. A hostile row
that the model takes as evidence (a mutated line may still be a valid one) is evidence in both runs;
one that cannot become evidence must lose nothing and change nothing, in the batch that carries it
and, through the stored state, in the ones after it.

It found two records that failed the model stage after the row's guard (the query failed, and
again at each restart): see SURROGATE_TOPIC and LONG_MIN_COMMIT below.

Not driven: the replay configuration (capture files); the wake hints and change hints (Redis hints
that only decide which buckets a clock record reaches and which groups the Admin poller describes
first; without them every bucket gets every clock, as when the hints are lost); Spark's own Arrow and
state-store serialisation (the state is handed back as the bytes the function stored).
"""

from __future__ import annotations

import base64
import itertools
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import pytest
import redis
from conftest import CAPTURES
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from test_hostile_rows import ISSUE_RECORD, KINDS, TOPIC_OF, hostile_values, raw_row

from collectors.codec.encoder import encode_key, encode_value
from collectors.codec.records import OffsetCommitKey, OffsetCommitValue
from collectors.pipeline import log_ends_reader, model_state, sink
from collectors.pipeline.admin_changes import is_resend
from collectors.pipeline.known_commits import KnownCommits
from collectors.pipeline.route import RAW_COLUMNS, decode_one, route_arrow
from collectors.pipeline.rows import DEAD_BUCKET, RAW_SCHEMA, arrow_schema
from collectors.pipeline.sink import SinkConfig, write_rows
from collectors.storage.redis_store import RedisStore
from coordinator_model.broker_log import parse_broker_log_line

pytestmark = pytest.mark.servers

Raw = tuple[str, int, int, int, bytes | None, bytes | None]  # RAW_COLUMNS

CAPTURE = CAPTURES / "classic-range-lifecycle"
WINDOW_MS = 40_000  # of the capture: three members join, one leaves, with commits and log ends
BUCKETS = 4  # few, so hostile rows share buckets (and stored state) with the real group
RETENTION_MS = 7 * 24 * 3600 * 1000
TICK_MS = 5000
LATENESS_MS = 5000  # the job's default: rows of the last 5 s are held in the state to the next batch
CLOSING_MS = model_state.IDLE_REFRESH_MS + 10_000
HOSTILE_OFFSETS = 2_000_000  # hostile rows' offsets: apart from every good row's position


# ---------------------------------------------------------------------------------------------
# the good rows: a real stretch of a capture, each source as the live collector reads it
def _jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CAPTURE / name).read_text().splitlines() if line.strip()]


def good_rows() -> list[Raw]:
    """Every record of the capture's first WINDOW_MS, in time order, on the live topics: the
    `__consumer_offsets` records as the broker wrote them, the probe's heartbeat events, the Admin
    poller's describes and its log ends as it writes them (one line per topic and poll, group ""),
    the shipped coordinator log lines."""
    offsets = _jsonl("offsets.jsonl")
    t0 = min(o["timestamp"] for o in offsets)
    end = t0 + WINDOW_MS
    timed: list[tuple[int, str, bytes | None, bytes | None, int | None, int | None]] = []
    for o in offsets:
        if o["timestamp"] < end:
            key = base64.b64decode(o["key"])
            value = base64.b64decode(o["value"]) if o.get("value") else None
            timed.append((o["timestamp"], TOPIC_OF["offsets"], key, value, o["partition"], o["offset"]))
    for line in _jsonl("heartbeats.jsonl"):
        if line["ts"] < end:
            timed.append(
                (line["ts"], TOPIC_OF["heartbeat"], line["group"].encode(), _dumps(line), None, None)
            )
    for line in _jsonl("describe.jsonl"):
        if line["ts"] < end:
            timed.append((line["ts"], TOPIC_OF["admin"], line["group"].encode(), _dumps(line), None, None))
    ends: dict[tuple[int, str], list[list[Any]]] = defaultdict(list)
    for line in _jsonl("end_offsets.jsonl"):
        if line["ts"] < end and line.get("end_offset") is not None:
            ends[(line["ts"], line["topic"])].append([line["topic"], line["partition"], line["end_offset"]])
    for (ts, _topic), rows in sorted(ends.items()):
        line = {"ts": ts, "group": "", "end_offsets": rows}
        timed.append((ts, TOPIC_OF["admin"], b"", _dumps(line), None, None))
    for text in (CAPTURE / "broker.log").read_text().splitlines():
        ev = parse_broker_log_line(text)
        if ev is not None and ev.ts < end:
            timed.append((ev.ts, TOPIC_OF["broker_log"], None, text.encode(), None, None))
    timed.sort(key=lambda r: r[0])
    seq: dict[str, Iterator[int]] = defaultdict(itertools.count)
    out: list[Raw] = []
    for ts, topic, key, value, partition, offset in timed:
        # records of the probe's, the poller's and the shipper's topics: partition 0, in order
        out.append(
            (topic, partition or 0, offset if offset is not None else next(seq[topic]), ts, key, value)
        )
    return out


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()


GOOD = good_rows()
GOOD_POSITIONS = {(t, p, o) for t, p, o, *_ in GOOD}


def clock(seq: int, now: int) -> Raw:
    """The Admin poller's clock record (once a poll): every bucket's watermark moves to it."""
    return (TOPIC_OF["admin"], 0, 1_000_000 + seq, now, b"", _dumps({"ts": now, "clock": True}))


# ---------------------------------------------------------------------------------------------
# the stages, as the live job wires them
class SparkState:
    """The GroupState applyInPandasWithState hands the function (the calls it makes): what the last
    call stored, as the bytes of the state's one binary column."""

    def __init__(self) -> None:
        self.value: tuple[bytes] | None = None
        self.hasTimedOut = False
        self.timeout_ms: int | None = None

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple[bytes]:
        assert self.value is not None
        return self.value

    def update(self, value: tuple) -> None:
        (blob,) = value  # STATE_SCHEMA: "groups binary"
        assert isinstance(blob, bytes | bytearray), type(blob)
        self.value = (bytes(blob),)  # a copy: what Spark's state store gives back is not the object

    def setTimeoutDuration(self, ms: int) -> None:
        assert isinstance(ms, int) and ms > 0, ms
        self.timeout_ms = ms


@dataclass
class Pipeline:
    """The live collector's first stage, model stage and sink, one micro-batch at a time, on a Redis
    prefix of its own."""

    redis_url: str
    prefix: str
    states: dict[int, SparkState] = field(default_factory=dict)
    dead: list[dict[str, Any]] = field(default_factory=list)  # every dead-letter row the stages made
    model_dead: set[str] = field(default_factory=set)  # their positions, of those set aside by a group
    sink_dead: int = 0  # as the sink counted them

    def __post_init__(self) -> None:
        self.sink = SinkConfig(self.redis_url, self.prefix, RETENTION_MS, live=True, redis_retry_s=2)
        self.store = RedisStore.from_url(self.redis_url, prefix=self.prefix, retention_ms=RETENTION_MS)
        self.store.new_data_epoch()  # as run_pipeline's first start does
        self.update = model_state.make_update(
            True,
            RETENTION_MS,
            TICK_MS,
            LATENESS_MS,
            sink=self.sink,
            shared_ends=True,
            hide_unconfirmed=True,
        )
        self.known = KnownCommits(self.sink)

    def batch(self, now: int, rows: list[Raw]) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        raw = pa.RecordBatch.from_pylist(
            [dict(zip(RAW_COLUMNS, r, strict=True)) for r in rows], schema=arrow_schema(RAW_SCHEMA)
        )
        routed = pa.Table.from_batches(
            list(route_arrow(iter([raw]), KINDS, BUCKETS, ends_apart=True, known=self.known)),
            schema=arrow_schema(),
        )
        out: list[dict[str, Any]] = []
        with mock.patch.object(model_state, "_now_ms", lambda: now):
            for bucket in sorted(set(routed.column("bucket").to_pylist())):
                # groupBy("bucket"): each key's rows, converted to pandas on their own
                mine = routed.filter(pc.equal(routed.column("bucket"), bucket)).to_pandas()
                state = self.states.setdefault(bucket, SparkState())
                for frame in self.update((bucket,), iter([mine]), state):
                    rows_out = frame.to_dict("records")
                    if bucket != DEAD_BUCKET:
                        self.model_dead |= {_where(r) for r in rows_out if r["kind"] == "dead"}
                    out.extend(rows_out)
        self.dead += [r for r in out if r["kind"] == "dead"]
        self.sink_dead += write_rows(self.store, out)["dead"]

    def documents(self) -> dict[str, Any]:
        _, rows = self.store.list_groups(limit=10_000)
        docs = {}
        for row in rows:
            doc = self.store.get_document(row["name"])
            assert doc is not None, row
            docs[row["name"]] = doc.to_json()
        return docs

    def close(self) -> None:
        # the worker's per-sink caches: this prefix is not used again
        for cache in (sink._STORES, log_ends_reader._CACHES, model_state._EPOCHS):
            cache.pop(self.sink, None)
        for k in [k for k in model_state._READERS_SCHEDULED if k[0] == self.sink]:
            del model_state._READERS_SCHEDULED[k]
        self.store.r.close()


def _where(dead: dict[str, Any]) -> str:
    return json.loads(dead["payload"])["position"]


def run(redis_url: str, prefix: str, batches: list[tuple[int, list[Raw]]]) -> Pipeline:
    p = Pipeline(redis_url, prefix)
    for now, rows in batches:
        p.batch(now, rows)
    return p


# ---------------------------------------------------------------------------------------------
# what a record can be
def cannot_be_evidence(row: Raw) -> bool:
    """Whether the model's decoder refuses the row (or it is on no source topic). An Admin poller
    resend is left out: it is a refresh stamp, never decoded (route.py)."""
    topic, partition, offset, ts, key, value = row
    kind = KINDS.get(topic)
    if kind is None:
        return True
    if kind == "admin" and is_resend(value):
        return False
    try:
        decode_one(kind, topic, partition, offset, ts, key, value)
    except Exception:
        return True
    return False


def position(row: Raw) -> str:
    topic, partition, offset, *_ = row
    return f"{topic}/{partition}@{offset}"


_prefixes = itertools.count()


# ---------------------------------------------------------------------------------------------
# hostile rows aimed at the model stage: the first stage routes `__consumer_offsets` records by
# their key alone and the Admin poller's lines by their "ts" and "group" alone, so their values are
# first read next to the model; and what decodes reaches the engine, whatever its numbers say
T0 = GOOD[0][3]
I64 = st.one_of(
    st.sampled_from([-(2**63), -1, 0, 1, 2**31, 2**53 + 1, 2**62, 2**63 - 1, T0, -T0]),
    st.integers(-(2**63), 2**63 - 1),
)
I32 = st.one_of(st.sampled_from([-(2**31), -1, 0, 2**31 - 1]), st.integers(-(2**31), 2**31 - 1))
# mostly among the good rows' times (applied with them, held with them), sometimes anywhere
record_ts = st.integers(T0 - 5000, T0 + WINDOW_MS + 5000) | I64
REAL_GROUP = "crl-060433a"
REAL_TOPICS = ["crl-A-060433a", "crl-B-060433a"]
GOOD_OFFSETS = [(k, v) for t, _, _, _, k, v in GOOD if t == TOPIC_OF["offsets"]]
GOOD_LINES = {
    topic: [json.loads(v) for t, *_, v in GOOD if t == topic and v is not None]
    for topic in (TOPIC_OF["heartbeat"], TOPIC_OF["admin"])
}


@st.composite
def commit_record(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    """A well-formed offset commit of the real group (or another) in any value version, with any
    numbers the wire can carry."""
    from collectors.codec.compiler import uuid_str

    group = draw(st.just(REAL_GROUP) | st.text(max_size=6))
    topic = draw(st.sampled_from(REAL_TOPICS) | st.text(max_size=6))
    key = encode_key(OffsetCommitKey(group, topic, draw(st.integers(0, 9) | I32)))
    value = OffsetCommitValue(
        offset=draw(I64),
        leader_epoch=draw(I32),
        metadata=draw(st.just("") | st.text(max_size=8)),
        commit_timestamp=draw(I64),
        expire_timestamp=draw(I64),
        topic_id=uuid_str(draw(st.binary(min_size=16, max_size=16))),
    )
    return key, encode_value(1, value, draw(st.integers(0, 4)))


REAL_MEMBERS = sorted(
    {json.loads(v)["member_id"] for t, *_, v in GOOD if t == TOPIC_OF["heartbeat"] and v is not None}
)
# strings a record's bytes can carry (UTF-8: no lone surrogate), and those JSON text can (any)
wire_texts = st.sampled_from(["", "\x00", "\U0001f600", "a" * 300]) | st.text(
    st.characters(blacklist_categories=["Cs"]), max_size=6
)
texts = wire_texts | st.sampled_from(["\ud800", "x\udfff"])


@st.composite
def group_metadata_record(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    """A well-formed GroupMetadata record of the real group (or another), in any value version: any
    generation, session and rebalance timeouts, state time, members and their subscriptions and
    assignments (or bytes that are none)."""
    from collectors.codec import records as r
    from collectors.codec.encoder import encode_assignment, encode_subscription

    topics = st.sampled_from(REAL_TOPICS) | wire_texts
    tps = st.lists(
        st.builds(r.TopicPartition, topics, st.lists(st.integers(0, 9) | I32, max_size=3)), max_size=3
    )
    member_ids = st.sampled_from(REAL_MEMBERS) | wire_texts
    members = []
    for _ in range(draw(st.integers(0, 3))):
        subscription = encode_subscription(
            r.ConsumerProtocolSubscription(
                draw(st.integers(0, 3)),
                draw(st.lists(topics, max_size=3)),
                owned_partitions=draw(tps),
                generation_id=draw(I32),
            )
        )
        assignment = encode_assignment(r.ConsumerProtocolAssignment(draw(st.integers(0, 3)), draw(tps)))
        members.append(
            r.MemberMetadata(
                draw(member_ids),
                draw(st.none() | wire_texts),
                draw(wire_texts),
                draw(wire_texts),
                draw(I32),
                draw(I32),
                draw(st.just(subscription) | st.binary(max_size=12)),
                draw(st.just(assignment) | st.binary(max_size=12)),
            )
        )
    value = r.GroupMetadataValue(
        draw(st.just("consumer") | wire_texts),
        draw(I32),
        draw(st.none() | st.just("range") | wire_texts),
        draw(st.none() | member_ids),
        draw(I64),
        members,
    )
    key = encode_key(r.GroupMetadataKey(draw(st.just(REAL_GROUP) | wire_texts)))
    return key, encode_value(r.GROUP_METADATA, value, draw(st.integers(0, 3)))


@st.composite
def flipped_record(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    """A real `__consumer_offsets` record (commits, group metadata with its members' subscriptions
    and assignments) with a few bytes of its value overwritten: mostly the same layout, other numbers
    and lengths."""
    key, value = draw(st.sampled_from(GOOD_OFFSETS))
    if not value:
        return key, value
    data = bytearray(value)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    return key, bytes(data)


def _paths(obj: Any, path: tuple = ()) -> Iterator[tuple]:
    if path:
        yield path
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        yield from _paths(v, (*path, k))


@st.composite
def deep_mutated(draw: st.DrawFn, topic: str) -> bytes:
    """A real line of the topic (a heartbeat event; a describe, committed or log-ends line) with a
    value anywhere inside it (a member's assignment, one committed offset...) replaced or removed."""
    obj = json.loads(json.dumps(draw(st.sampled_from(GOOD_LINES[topic]))))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(obj))))
        parent = obj
        for k in path[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(hostile_values | texts)
    return _dumps(obj)


@st.composite
def model_row(draw: st.DrawFn) -> tuple[str, int, int, tuple[bytes | None, bytes | None]]:
    """(topic, partition, timestamp, (key, value)): one of test_hostile_rows' hostile rows (every
    source topic, and none), or one aimed past the first stage."""
    aim = draw(st.sampled_from(["any", "commit", "metadata", "flipped", "heartbeat", "admin"]))
    if aim == "any":
        # never a null partition or timestamp: neither source gives one (kafka_source, capture_source)
        return draw(raw_row().filter(lambda r: r[1] is not None and r[2] is not None))
    if aim in ("commit", "metadata", "flipped"):
        made = {"commit": commit_record, "metadata": group_metadata_record, "flipped": flipped_record}
        record = draw(made[aim]())
        return TOPIC_OF["offsets"], draw(st.integers(0, 49)), draw(record_ts), record
    topic = TOPIC_OF[aim]
    value = draw(deep_mutated(topic))
    return topic, 0, draw(record_ts), (draw(st.just(REAL_GROUP.encode()) | st.none()), value)


Drawn = tuple[str, int, int, tuple[bytes | None, bytes | None]]


def world(drawn: list[tuple[Drawn, float]], cut: float) -> tuple[list[Raw], int]:
    """The good rows with the hostile ones put among them (each at its fraction of the way through),
    and where the first micro-batch ends (a fraction of the rows)."""
    rows: list[Raw] = list(GOOD)
    for i, ((topic, partition, ts, (key, value)), at) in enumerate(drawn):
        rows.insert(int(at * len(rows)), (topic, partition, HOSTILE_OFFSETS + i, ts, key, value))
    return rows, int(cut * len(rows))


fraction = st.floats(0, 1)

# Found by this test. An Admin line's committed topic holding a lone surrogate, which Python's JSON
# reader takes: decoded next to the model (the first stage routes such a line by its "ts" and
# "group"), the topic failed the Redis read of its log ends, after the row's guard.
SURROGATE_TOPIC: Drawn = (
    TOPIC_OF["admin"],
    0,
    T0 + 34_000,
    (
        REAL_GROUP.encode(),
        b'{"ts": %d, "group": "crl-060433a", "committed": [["\\ud800", 3, 17]]}' % (T0 + 34_000),
    ),
)
# A commit of offset -2**63 (a v0 value: any client may commit any long to its own group): its lag
# to a log end past 0 was past a long, and the write of the group's offsets failed.
LONG_MIN_COMMIT: Drawn = (
    TOPIC_OF["offsets"],
    25,
    T0 + 39_000,
    (
        encode_key(OffsetCommitKey(REAL_GROUP, REAL_TOPICS[0], 0)),
        encode_value(1, OffsetCommitValue(offset=-(2**63), commit_timestamp=T0 + 39_000), 0),
    ),
)


def batches_of(rows: list[Raw], cut: int) -> list[tuple[int, list[Raw]]]:
    """Two micro-batches split at `cut`, each with the Admin poller's clock at its wall clock (a
    second after its newest good row), then a clock record alone, CLOSING_MS on."""
    good_ts = [r[3] for r in rows[:cut] if (r[0], r[1], r[2]) in GOOD_POSITIONS]
    now1 = (max(good_ts) if good_ts else T0) + 1000
    now2 = max(r[3] for r in GOOD) + 1000
    now3 = now2 + CLOSING_MS
    return [
        (now1, [*rows[:cut], clock(0, now1)]),
        (now2, [*rows[cut:], clock(1, now2)]),
        (now3, [clock(2, now3)]),
    ]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(st.tuples(model_row(), fraction), min_size=1, max_size=10), fraction)
@example([(SURROGATE_TOPIC, 0.3)], 0.5)
@example([(LONG_MIN_COMMIT, 0.3)], 0.5)
@example([((TOPIC_OF["heartbeat"], 0, 5, (None, ISSUE_RECORD)), 0.5)], 0.5)
def test_hostile_rows_through_the_model_stage_lose_nothing_and_change_nothing(
    redis_server: Any, drawn: list[tuple[Drawn, float]], cut_at: float
) -> None:
    rows, cut = world(drawn, cut_at)
    batches = batches_of(rows, cut)
    redis.Redis.from_url(redis_server.url).flushdb()  # each example's two prefixes are its own
    n = next(_prefixes)
    mixed = run(redis_server.url, f"hm{n}", batches)
    try:
        hostile = {position(r): r for r in rows if (r[0], r[1], r[2]) not in GOOD_POSITIONS}
        dead = [_where(d) for d in mixed.dead]
        dead_rows = set(dead)
        event(f"hostile rows set aside by the first stage: {bool(dead_rows - mixed.model_dead)}")
        event(f"hostile rows set aside next to the model: {bool(mixed.model_dead)}")
        event(f"hostile rows taken as evidence: {len(hostile) > len(dead_rows)}")
        # one dead letter a row, counted as the sink counts them, in Redis with its error
        assert len(dead) == len(dead_rows), sorted(dead)
        assert mixed.sink_dead == len(dead)
        stored = {d["position"]: d for d in mixed.store.dead_letters(10_000)}
        assert set(stored) == dead_rows
        assert all(d["error"] for d in stored.values()), stored
        # only hostile rows are set aside, and each for its own fault: a model failure ("model: ...")
        # sets aside the first row of the group's batch and keeps the group's last state, so the
        # good rows of that batch would be lost
        assert dead_rows <= hostile.keys(), dead_rows - hostile.keys()
        assert not [d for d in stored.values() if d["error"].startswith("model:")], stored
        # every row that cannot become evidence is one of them
        missing = [r for p, r in hostile.items() if cannot_be_evidence(r) and p not in dead_rows]
        assert not missing, missing
        docs = mixed.documents()
    finally:
        mixed.close()
    # the same rows less the dead letters, in the same micro-batches: the same documents, whatever
    # the dead letters' rows did to the stored state of their buckets
    clean = run(
        redis_server.url,
        f"hm{n}c",
        [(now, [r for r in batch if position(r) not in dead_rows]) for now, batch in batches],
    )
    try:
        assert not clean.dead
        assert clean.documents() == docs
    finally:
        clean.close()


def test_the_good_rows_alone_model_their_group_and_set_nothing_aside(redis_server: Any) -> None:
    """What the property above compares is not empty: the stretch of capture the hostile rows are
    put among holds every source, and alone it makes its group's document (its generations,
    members and offsets) with no dead letter."""
    assert {KINDS[t] for t, *_ in GOOD} == set(KINDS.values())
    rows, cut = world([], 0.5)
    p = run(redis_server.url, f"hm{next(_prefixes)}", batches_of(rows, cut))
    try:
        assert not p.dead
        docs = p.documents()
        assert list(docs) == [REAL_GROUP]
        doc = docs[REAL_GROUP]
        assert len(doc["generations"]) >= 3 and doc["members"] and doc["offsets"], doc
    finally:
        p.close()


@pytest.mark.parametrize(
    "kind,line",
    [
        ("admin", b'{"ts": 5, "group": "g", "committed": [["\\ud800", 3, 17]]}'),
        ("admin", b'{"ts": 5, "group": "g", "members": [{"member_id": "m\\uDFFF"}]}'),
        ("heartbeat", b'{"ts": 5, "group": "g", "event": "heartbeat", "partitions": [["\\udc00", 0]]}'),
    ],
)
def test_a_json_line_holding_a_lone_surrogate_is_refused(kind: str, line: bytes) -> None:
    """No UTF-8 text holds one: refused by the decoder, the row is a dead letter of whichever stage
    decodes it (the first for a heartbeat, next to the model for an Admin line it routes by "ts" and
    "group" alone)."""
    with pytest.raises(ValueError, match="lone surrogate"):
        decode_one(kind, TOPIC_OF[kind], 0, 0, 5, b"g", line)


def test_an_escaped_surrogate_pair_is_text() -> None:
    """A pair is one character (an emoji, as json.dumps escapes it): not refused."""
    line = b'{"ts": 5, "group": "g", "event": "heartbeat", "client_id": "\\ud83d\\ude00"}'
    ((group, _, _, ev),) = decode_one("heartbeat", TOPIC_OF["heartbeat"], 0, 0, 5, None, line)
    assert group == "g" and ev.client_id == "\U0001f600"


def test_a_lag_past_a_long_is_the_largest_long() -> None:
    """A commit of offset -2**63 is a real record; its lag to any log end past 0 is stored as a long."""
    from collectors.storage.group_offsets import decode_into, encode
    from coordinator_model.offsets import OffsetState, OffsetStore
    from coordinator_model.offsets.lag import LAG_MAX, EndOffsetHistory, lag_offsets

    assert lag_offsets(-(2**63), 10) == LAG_MAX == 2**63 - 1
    assert lag_offsets(2**63 - 1, -(2**63)) == 0
    store = OffsetStore()
    history = EndOffsetHistory()
    history.add(T0, 10)
    store.ends[("t", 0)] = history
    store.commit(("t", 0), OffsetState(-(2**63), T0, T0 + 1, 7, ""))
    back = OffsetStore()
    decode_into(back, ("t", 0), encode(store, ("t", 0)))
    assert back.windows[("t", 0)].samples == store.windows[("t", 0)].samples
    assert store.windows[("t", 0)].samples[-1].lag == LAG_MAX
