"""The catch-up fast path for offset commits must change nothing but speed.

- commit_keys and commit_columns decode exactly what the codec decodes, for every key and value they
  accept, and leave every other one (metadata strings, other tagged fields, truncations, trailing
  bytes, garbage, tombstones) to the codec;
- route_arrow routes those commits to the same group and bucket as the row-by-row path, and sends
  everything else down that path with its raw bytes;
- GroupEngine.apply_commits leaves an engine exactly as applying each commit as evidence does: same
  offsets, same lag windows, same timeline, same document; also when a session timer falls among the
  commits and when log offsets go backwards.
"""

from __future__ import annotations

import dataclasses
import json
import pickle

import pandas as pd
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.codec import records as r
from collectors.codec.compiler import uuid_str
from collectors.codec.decoder import decode_key, decode_value
from collectors.codec.encoder import encode_key, encode_value
from collectors.pipeline.commit_columns import decode_commit_values
from collectors.pipeline.commit_keys import decode_commit_keys
from collectors.pipeline.commit_runs import RUN_KIND
from collectors.pipeline.model_state import BatchRows
from collectors.pipeline.route import bucket_of, commit_evidence, decode_batches, decode_one
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import EndOffset, HeartbeatEvent, OffsetCommit

PROPS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)

commit_values = st.builds(
    lambda version, off, epoch, meta, cts, exp, tid: (
        version,
        r.OffsetCommitValue(
            offset=off,
            leader_epoch=epoch if version >= 3 else -1,
            metadata=meta,
            commit_timestamp=cts,
            expire_timestamp=exp if version == 1 else -1,
            topic_id=uuid_str(tid) if version >= 4 else r.ZERO_UUID,
        ),
    ),
    st.integers(0, 4),
    I64,
    I32,
    st.one_of(st.just(""), st.text(max_size=6)),
    I64,
    I64,
    st.one_of(st.just(bytes(16)), st.binary(min_size=16, max_size=16)),
)


def _encoded(version: int, v: r.OffsetCommitValue) -> bytes:
    return encode_value(r.OFFSET_COMMIT, v, version=version)


@PROPS
@given(st.lists(st.one_of(commit_values.map(lambda vv: _encoded(*vv)), st.binary(max_size=40), st.none())))
def test_column_decoder_equals_the_codec(values: list[bytes | None]) -> None:
    # sliced, to exercise an array offset into the Arrow buffers
    arr = pa.array([b"pad", *values], pa.binary()).slice(1)
    cols = decode_commit_values(arr)
    for i, value in enumerate(values):
        if not cols.ok[i]:
            continue
        assert value is not None
        version, obj = decode_value(r.OFFSET_COMMIT, value)
        assert version <= 4 and obj.metadata == ""
        assert cols.topic_id(i) == (None if obj.topic_id == r.ZERO_UUID else obj.topic_id)
        assert int(cols.offset[i]) == obj.offset
        assert int(cols.leader_epoch[i]) == obj.leader_epoch
        assert int(cols.commit_timestamp[i]) == obj.commit_timestamp
        assert int(cols.expire_timestamp[i]) == obj.expire_timestamp


def test_column_decoder_takes_the_common_shapes_and_leaves_the_rest() -> None:
    tid = uuid_str(bytes(range(1, 17)))
    value = r.OffsetCommitValue(offset=7, leader_epoch=2, commit_timestamp=99)
    plain = [_encoded(v, value) for v in (0, 1, 2, 3, 4)]
    # what Kafka 4.1+ writes: version 4 with the topic's id as tagged field 0
    plain.append(_encoded(4, dataclasses.replace(value, topic_id=tid)))
    other = [
        _encoded(3, r.OffsetCommitValue(offset=7, metadata="m", commit_timestamp=99)),
        _encoded(4, r.OffsetCommitValue(offset=7, metadata="m", commit_timestamp=99, topic_id=tid)),
        plain[3][:-1],  # truncated
        plain[3] + b"\x00",  # trailing byte: the codec decides
        plain[5][:-1],
        None,
    ]
    cols = decode_commit_values(pa.array(plain + other, pa.binary()))
    assert cols.ok.tolist() == [True] * 6 + [False] * 6
    assert cols.leader_epoch.tolist()[:6] == [-1, -1, -1, 2, 2, 2]
    assert [cols.topic_id(i) for i in range(6)] == [None] * 5 + [tid]


commit_keys = st.builds(
    lambda legacy, group, topic, part: encode_key(
        r.OffsetCommitKey(group, topic, part), record_type=0 if legacy else None
    ),
    st.booleans(),
    st.text(max_size=8),
    st.text(max_size=8),
    I32,
)


@PROPS
@given(
    st.lists(
        st.one_of(
            commit_keys,
            commit_keys.map(lambda k: k[:-1]),  # truncated
            commit_keys.map(lambda k: k + b"\x00"),  # trailing byte: the codec reads past it
            st.builds(lambda g: encode_key(r.GroupMetadataKey(g)), st.text(max_size=8)),
            st.binary(max_size=24),
        )
    )
)
def test_key_column_decoder_equals_the_codec(keys: list[bytes]) -> None:
    arr = pa.array([b"pad", *keys], pa.binary()).slice(1)
    ck = decode_commit_keys(arr)
    for i, key in enumerate(keys):
        if not ck.ok[i]:
            continue
        record_type, obj = decode_key(key)
        assert isinstance(obj, r.OffsetCommitKey) and record_type in (0, 1)
        assert ck.groups[ck.group_code[i]] == obj.group
        assert ck.topics[ck.topic_code[i]] == obj.topic
        assert int(ck.partition[i]) == obj.partition


def test_key_column_decoder_takes_exact_commit_keys_only() -> None:
    key = encode_key(r.OffsetCommitKey("grüppe", "t", 3))
    legacy = encode_key(r.OffsetCommitKey("g", "t", 4), record_type=0)
    invalid_utf8 = b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x05"
    other = [key + b"\x00", key[:-1], encode_key(r.GroupMetadataKey("g")), b""]
    ck = decode_commit_keys(pa.array([key, legacy, invalid_utf8, *other], pa.binary()))
    assert ck.ok.tolist() == [True, True, True, False, False, False, False]
    assert [ck.groups[c] for c in ck.group_code[:3]] == ["grüppe", "g", decode_key(invalid_utf8)[1].group]
    assert ck.partition.tolist()[:3] == [3, 4, 5]


def _raw(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["topic", "partition", "offset", "timestamp", "key", "value"])


def test_route_arrow_gathers_commits_into_runs_and_sends_the_rest_row_by_row() -> None:
    t = "__consumer_offsets"
    key = encode_key(r.OffsetCommitKey("g1", "orders", 3))
    meta_key = encode_key(r.GroupMetadataKey("g1"))
    v3 = _encoded(3, r.OffsetCommitValue(offset=42, leader_epoch=5, commit_timestamp=1000))
    tid = uuid_str(bytes(range(16)))
    # Kafka 4.1+: version 4 with the topic's id; it joins the run, and the run carries the id
    v3b = _encoded(4, r.OffsetCommitValue(offset=44, leader_epoch=5, commit_timestamp=3000, topic_id=tid))
    v4 = _encoded(4, r.OffsetCommitValue(offset=43, metadata="m", commit_timestamp=1001))
    rows = [
        (t, 7, 10, 1000, key, v3),
        (t, 7, 11, 1001, key, v4),  # a metadata string: row by row
        (t, 7, 12, 1002, key, None),  # tombstone: row by row
        (t, 7, 13, 1003, meta_key, b"\x00\x03garbage"),  # group metadata (bad): row by row, dead later
        (t, 7, 14, 1004, b"\x00", v3),  # key too short: dead letter
        ("elsewhere", 0, 0, 1005, key, v3),  # not a source
        (t, 7, 15, 3000, key, v3b),
        # a key with a trailing byte is left to the codec, which reads the same key: same run
        (t, 7, 16, 3001, key + b"\x00", v3b),
    ]
    out = pd.concat(list(decode_batches(iter([_raw(rows)]), {t: "offsets"}, buckets=16)))
    runs = out[out["kind"] == RUN_KIND]
    assert len(runs) == 1
    row = runs.iloc[0]
    assert row["group"] == "g1" and row["bucket"] == bucket_of("g1", 16)
    assert row["key"] is None and row["value"] is None
    assert (row["offset"], row["c_last_log"], row["c_first_ts"], row["ts"]) == (10, 16, 1000, 3001)
    # the run's commits, each as the codec decodes it
    batch = BatchRows(runs.reset_index(drop=True))
    got = [commit_evidence("g1", ts, off, c) for ts, _, _, off, *_, c in batch.row_tuples((0, 1))]
    want = [
        decode_one("offsets", t, 7, o, ts, key, v)[0][3]
        for o, ts, v in ((10, 1000, v3), (15, 3000, v3b), (16, 3001, v3b))
    ]
    # the topic's id is carried per run (the model only learns the id's name from it), so the v3
    # commit of a run that also holds a v4 one carries it too
    assert got == [dataclasses.replace(w, topic_id=tid) for w in want]
    (run,) = batch.commit_runs((0, 1))
    assert (run.offset, run.commit_ts, run.epoch, run.monotone) == (44, 3000, 5, True)
    assert run.topic_id == tid
    assert run.slots == [(1000, 42), (3001, 44)] and run.slot_start == 3000
    slow = out[out["kind"] != RUN_KIND]
    assert sorted(slow["offset"].tolist()) == [0, 11, 12, 13, 14]
    assert set(slow[slow["bucket"] == -1]["offset"]) == {0, 14}
    assert all(v is not None for v in slow[slow["offset"] == 11]["value"])


_C = ["c_topic", "c_partition", "c_offset", "c_commit_ts", "c_epoch", "c_expire"]

# ---- the engine's bulk path -------------------------------------------------------------------------
commit_rows = st.lists(
    st.tuples(
        st.integers(0, 20_000),  # ts
        st.sampled_from(["a", "b"]),
        st.integers(0, 2),
        st.integers(0, 10_000),  # committed offset
        st.integers(-1, 20_000),  # commit timestamp
        st.integers(-1, 3),
        st.sampled_from([-1, 30_000]),
        st.integers(-1, 400),  # log offset (may go backwards)
    ),
    max_size=60,
)


def _prepared(kind: str) -> GroupEngine:
    e = GroupEngine("g")
    if kind == "ends":
        for ts in (0, 4000, 9000):
            for tp in (("a", 0), ("a", 1), ("b", 2)):
                e.apply(EndOffset(ts, tp[0], tp[1], 5000 + ts))
    if kind == "member":
        e.apply(_hb())  # a heartbeating member whose session runs out among the commits
    if kind == "prior":
        e.apply(OffsetCommit(50, "g", "a", 0, 5, log_offset=200))
    return e


def _hb() -> HeartbeatEvent:
    from coordinator_model.evidence import from_heartbeat_json

    return from_heartbeat_json(
        {
            "ts": 100,
            "group": "g",
            "event": "assigned",
            "member_id": "m-1",
            "client_id": "c",
            "generation": 1,
            "session_timeout_ms": 3000,
            "partitions": [["a", 0]],
        }
    )


@PROPS
@given(commit_rows, st.sampled_from(["fresh", "ends", "member", "prior"]))
def test_bulk_commits_equal_one_by_one(rows: list[tuple], kind: str) -> None:
    rows = sorted(rows, key=lambda row: (row[0], row[7]))  # the evidence order
    one, bulk = _prepared(kind), _prepared(kind)
    for ts, topic, part, off, cts, epoch, exp, log_off in rows:
        one.apply(OffsetCommit(ts, "g", topic, part, off, cts, epoch, "", exp, log_off))
    bulk.apply_commits(rows)
    _assert_same(bulk, one, 30_000)
    assert pickle.loads(pickle.dumps(bulk)).document_json() == one.document_json()


def _assert_same(bulk: GroupEngine, one: GroupEngine, later: int) -> None:
    """The same engine state, and the same document once both have run their timers to `later`."""
    assert bulk.offsets.committed == one.offsets.committed
    assert bulk.offsets.windows == one.offsets.windows
    assert bulk.timeline == one.timeline
    assert (bulk.now, bulk.sources, bulk.type, bulk.classic.simple) == (
        one.now,
        one.sources,
        one.type,
        one.classic.simple,
    )
    one.advance(later)
    bulk.advance(later)
    assert bulk.document_json() == one.document_json()


# ---- runs gathered in the first stage, applied by the engine ------------------------------------------
def _routed_runs(rows: list[tuple], batches: int, flush_rows: int) -> list:
    """rows as __consumer_offsets records (version 1 when there is an expire timestamp, else 3), split
    into `batches` input batches, through route_arrow; the CommitRuns the model stage would build."""
    raw = []
    for i, (ts, topic, part, off, cts, epoch, exp, log_off) in enumerate(rows):
        value = r.OffsetCommitValue(
            offset=off, leader_epoch=epoch, commit_timestamp=cts, expire_timestamp=exp
        )
        version = 1 if exp != -1 else 3
        if version == 1:
            value = r.OffsetCommitValue(offset=off, commit_timestamp=cts, expire_timestamp=exp)
        raw.append(
            (
                "__consumer_offsets",
                3,
                log_off if log_off >= 0 else i,
                ts,
                encode_key(r.OffsetCommitKey("g", topic, part)),
                _encoded(version, value),
            )
        )
    size = max(1, -(-len(raw) // batches))
    frames = [_raw(raw[i : i + size]) for i in range(0, len(raw), size)]
    out = list(decode_batches(iter(frames), {"__consumer_offsets": "offsets"}, 16, flush_rows=flush_rows))
    if not out:
        return []
    routed = pd.concat(out, ignore_index=True)
    assert set(routed["kind"]) <= {RUN_KIND}
    batch = BatchRows(routed)
    return batch.commit_runs(batch.slices["g"]) if "g" in batch.slices else []


close_commit_rows = st.lists(
    st.tuples(
        st.integers(0, 12_000),  # ts: commits often closer than a lag slot (1 s) to each other
        st.sampled_from(["a", "b"]),
        st.integers(0, 1),
        st.integers(0, 10_000),
        st.integers(-1, 20_000),
        st.integers(-1, 3),
        st.sampled_from([-1, 30_000]),
        st.integers(0, 400),  # log offset (distinct below; may go backwards in time order)
    ),
    max_size=50,
    unique_by=lambda row: row[7],
)


@PROPS
@given(
    close_commit_rows,
    st.sampled_from(["fresh", "ends", "member", "prior", "window"]),
    st.integers(1, 3),
    st.sampled_from([1, 3, 1000]),
)
def test_runs_from_the_first_stage_equal_one_by_one(
    rows: list[tuple], kind: str, batches: int, flush: int
) -> None:
    one, bulk = _prepared(kind), _prepared(kind)
    if kind == "window":  # a lag window whose last slot is still open when the runs come
        for e in (one, bulk):
            e.apply(OffsetCommit(11_500, "g", "a", 0, 5, log_offset=0))
            e.apply(OffsetCommit(11_900, "g", "b", 1, 5, log_offset=1))
        rows = [(ts + 11_900, *rest) for ts, *rest in rows if rest[-1] > 1]
    in_log_order = sorted(rows, key=lambda row: row[7])
    for ts, topic, part, off, cts, epoch, exp, log_off in sorted(rows, key=lambda row: (row[0], row[7])):
        one.apply(OffsetCommit(ts, "g", topic, part, off, cts, epoch if exp == -1 else -1, "", exp, log_off))
    bulk.apply_commit_runs(_routed_runs(in_log_order, batches, flush))
    _assert_same(bulk, one, 40_000)


def test_a_groups_runs_stay_whole_beside_other_evidence_unless_it_falls_inside_them() -> None:
    """The model stage applies a run of commits in bulk even when other evidence of the group comes
    in the same batch (a describe after a catch-up), and takes the runs apart only when that
    evidence falls between a run's first and last commit; either way the engine ends as applying
    every piece of evidence in time order does."""
    from collectors.pipeline.model_state import _steps

    t = "__consumer_offsets"
    key = encode_key(r.OffsetCommitKey("g1", "orders", 0))
    commits = [
        (t, 3, i, 1000 + 100 * i, key, _encoded(3, r.OffsetCommitValue(offset=i, commit_timestamp=1)))
        for i in range(5)
    ]
    describe = json.dumps(
        {"ts": 0, "group": "g1", "type": "classic", "state": "Empty", "protocol_type": "consumer",
         "protocol": "", "members": [], "coordinator": 1}
    ).encode()  # fmt: skip

    def steps_for(describe_ts: int) -> tuple[list, GroupEngine, GroupEngine]:
        raw = [
            *commits,
            (
                "admin",
                0,
                0,
                describe_ts,
                b"g1",
                describe.replace(b'"ts": 0', f'"ts": {describe_ts}'.encode()),
            ),
        ]
        out = pd.concat(list(decode_batches(iter([_raw(raw)]), {t: "offsets", "admin": "admin"}, buckets=4)))
        batch = BatchRows(out[out["group"] == "g1"].reset_index(drop=True))
        rows = sorted(batch.row_tuples(batch.slices["g1"], runs_whole=True), key=lambda x: x[:4])
        steps, dead = _steps("g1", rows)
        assert not dead
        bulk, one_by_one = GroupEngine("g1"), GroupEngine("g1")
        for what, items in steps:
            bulk.apply_commit_runs(items) if what == "runs" else bulk.apply_many(items)
        evidence = [ev for x in raw for _, _, _, ev in decode_one({t: "offsets"}.get(x[0], "admin"), *x)]
        one_by_one.apply_many(sorted(evidence, key=lambda ev: ev.ts))
        return [what for what, _ in steps], bulk, one_by_one

    kinds, bulk, one_by_one = steps_for(5000)  # after every commit: the run stays whole
    assert kinds == ["runs", "evidence"]
    assert bulk.document_json() == one_by_one.document_json()
    kinds, bulk, one_by_one = steps_for(1250)  # inside the run: taken apart, in time order
    assert kinds == ["evidence"]
    assert bulk.document_json() == one_by_one.document_json()
