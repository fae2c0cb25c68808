"""A run of plain commits applied to a partition's stored bytes (group_offsets.commit_run_packed)
must store exactly what decoding the field, OffsetStore.apply_runs and encoding it again store; and
the first stage's commit path (known_commits.commit_known) must store what it stored before it had
that shortcut."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.storage.group_offsets import WHOLE_PATH, commit_run_packed, decode_into, encode
from coordinator_model.offsets import OffsetState, OffsetStore
from coordinator_model.offsets import lag as lagmod
from coordinator_model.offsets.runs import CommitRun

TP = ("orders", 3)
I64 = st.integers(-(2**62), 2**62)
TS = st.integers(0, 10**7)
OFF = st.integers(0, 10**6)


def _no_rows() -> list[tuple]:
    raise AssertionError("the summary holds: the run's commits are not read")


samples = st.builds(
    lambda ts, off, end: lagmod.CommitSample(ts, off, lagmod.lag_offsets(off, end), end),
    TS,
    OFF,
    st.one_of(st.none(), OFF),
)

stored_states = st.builds(
    lambda off, cts, ts, log, meta, epoch, expire, window, slot_start: (
        OffsetState(off, cts, ts, log, meta, epoch, expire),
        lagmod.PartitionWindow(sorted(window, key=lambda s: (s.ts, s.offset)), slot_start),
    ),
    OFF,
    I64,
    TS,
    st.integers(-1, 10**6),
    st.one_of(st.none(), st.just(""), st.text(max_size=8)),
    st.integers(-1, 50),
    I64,
    st.lists(samples, max_size=lagmod.WINDOW),
    TS,
)

runs = st.builds(
    lambda first_ts, span, first_log, logs, mono, off, cts, epoch, expire, slots, slot_start: CommitRun(
        TP[0],
        TP[1],
        first_ts,
        first_log,
        first_ts + span,
        first_log + logs,
        mono,
        off,
        cts,
        epoch,
        expire,
        sorted(slots),
        slot_start,
        _no_rows,
    ),
    TS,
    st.integers(0, 60_000),
    st.integers(-1, 10**6),
    st.integers(0, 500),
    st.booleans(),
    OFF,
    st.one_of(st.just(-1), TS),
    st.integers(-1, 50),
    st.one_of(st.just(-1), I64),
    st.lists(st.tuples(TS, OFF), min_size=1, max_size=2 * lagmod.WINDOW),
    TS,
)

histories = st.one_of(
    st.none(),
    st.lists(st.tuples(TS, OFF), max_size=6).map(
        lambda pts: _history(sorted(pts, key=lambda p: (p[0], p[1])))
    ),
)


def _history(points: list[tuple[int, int]]) -> lagmod.EndOffsetHistory:
    h = lagmod.EndOffsetHistory()
    for ts, end in points:
        h.add(ts, end)
    return h


def _field(state: tuple[OffsetState, lagmod.PartitionWindow]) -> bytes:
    store = OffsetStore()
    store.committed[TP], store.windows[TP] = state
    raw = encode(store, TP)
    assert raw is not None
    return raw


def _whole(raw: bytes, run: CommitRun, history: lagmod.EndOffsetHistory | None) -> bytes | None:
    """What the whole path stores: the field decoded, the run applied by OffsetStore, encoded."""
    store = OffsetStore()
    decode_into(store, TP, raw)
    if run.last_log <= store.committed[TP].log_offset:
        return None  # held already: known_commits skips it
    store.ends = {TP: history} if history is not None else {}
    store.apply_runs([run])
    return encode(store, TP)


@settings(max_examples=400, deadline=None)
@given(stored_states, runs, histories)
def test_a_run_on_the_stored_bytes_stores_what_the_offset_store_stores(state, run, history) -> None:
    raw = _field(state)
    made = commit_run_packed(raw, run, history)
    if made is WHOLE_PATH:
        return  # left to the whole path, which is the reference
    assert made == _whole(raw, run, history)


def test_a_busy_partitions_next_run_takes_the_bytes_and_the_rest_do_not() -> None:
    h = _history([(1_000, 100), (6_000, 180), (11_000, 260)])
    stored = OffsetStore()
    stored.ends = {TP: h}
    stored.commit_rows(TP, [(1_500, TP[0], TP[1], 90, 1_500, 2, -1, 10)])
    raw = encode(stored, TP)
    assert raw is not None
    run = CommitRun(
        TP[0], TP[1], 6_500, 20, 6_500, 20, True, 170, 6_500, 2, -1, [(6_500, 170)], 6_500, _no_rows
    )
    made = commit_run_packed(raw, run, h)
    assert isinstance(made, bytes) and made == _whole(raw, run, h)
    assert commit_run_packed(made, run, h) is None  # the same run again: held
    close = CommitRun(
        TP[0], TP[1], 6_900, 21, 6_900, 21, True, 175, 6_900, 2, -1, [(6_900, 175)], 6_900, _no_rows
    )
    assert commit_run_packed(made, close, h) is WHOLE_PATH  # within the last slot: the whole path
    assert commit_run_packed(b"[1, 2]", run, h) is WHOLE_PATH  # the JSON form an older version wrote
    assert commit_run_packed(raw[:-3], run, h) is WHOLE_PATH  # not the stored shape


class _Held:
    """The stored fields commit_known reads, as GroupOffsets.load_fields gives them."""

    def __init__(self, fields: dict[str, dict]) -> None:
        self.fields = fields

    def load_fields(self, wanted: dict[str, list]) -> dict[str, dict]:
        return {
            g: {tp: v for tp, v in self.fields.get(g, {}).items() if tp in tps} for g, tps in wanted.items()
        }


def _reference(held: dict[str, dict], ends: dict, cands: dict[str, list[CommitRun]]) -> dict:
    """commit_known as it was before the stored bytes took runs: every field decoded, every run
    through OffsetStore.apply_runs, every moved partition encoded."""
    from collectors.storage.group_offsets import stored

    out = {}
    for group, group_runs in cands.items():
        wanted = {(r.topic, r.partition) for r in group_runs}
        offsets = stored({tp: v for tp, v in held.get(group, {}).items() if tp in wanted})
        taken = {tp for tp in wanted if tp in offsets.committed}
        if not taken:
            continue
        todo = [
            r
            for r in group_runs
            if (r.topic, r.partition) in taken
            and r.last_log > offsets.committed[(r.topic, r.partition)].log_offset
        ]
        fields = {}
        if todo:
            offsets.ends = {tp: ends[tp] for tp in taken if tp in ends}
            offsets.apply_runs(sorted(todo, key=lambda r: (r.first_ts, r.first_log)))
            fields = {(r.topic, r.partition): encode(offsets, (r.topic, r.partition)) for r in todo}
        out[group] = (fields, taken)
    return out


def _on(tp: tuple[str, int], run: CommitRun) -> CommitRun:
    """`run` on partition `tp`, its commits (read when runs of a partition interleave) its last one."""
    import dataclasses
    import functools

    row = (run.last_ts, tp[0], tp[1], run.offset, run.commit_ts, run.epoch, run.expire, run.last_log)
    return dataclasses.replace(run, topic=tp[0], partition=tp[1], rows=functools.partial(list, [row]))


TPS = [("orders", 0), ("orders", 1), ("audit", 0)]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["g1", "g2"]),
        st.dictionaries(
            st.sampled_from(TPS),
            st.one_of(stored_states.map(_field), st.just(b"\x01garbage"), st.just(b"[1, 2, 3]")),
        ),
    ),
    st.dictionaries(
        st.sampled_from(["g1", "g2", "g3"]),
        st.lists(st.tuples(st.sampled_from(TPS), runs), min_size=1, max_size=4),
        min_size=1,
    ),
    histories,
)
def test_the_first_stages_commit_path_stores_what_it_stored_before(held, cands, history) -> None:
    from types import SimpleNamespace

    from collectors.pipeline.known_commits import commit_known

    cands = {g: [_on(tp, run) for tp, run in items] for g, items in cands.items()}
    ends = {tp: history for tp in TPS} if history is not None else {}
    got = commit_known(SimpleNamespace(offsets=_Held(held)), lambda tps: ends, cands)
    want = _reference(held, ends, cands)
    assert {g: (c.fields, c.taken) for g, c in got.items()} == want
    for c in got.values():  # and what it says the partitions now are, decoded
        assert set(c.offsets.committed) == c.taken
