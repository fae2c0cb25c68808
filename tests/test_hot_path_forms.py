"""The faster forms of the pipeline's hot path hold what the plain forms held: the offset store pickled
as rows (coordinator_model/offsets/store.py) and the JSON text written to Redis by orjson
(collectors/storage/json_text.py)."""

from __future__ import annotations

import json
import math
import pickle

import pytest
from conftest import CAPTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from json_strategies import json_values

from collectors.capture import read_capture
from collectors.storage import json_text
from coordinator_model.offsets import lag as lagmod
from coordinator_model.offsets.store import OffsetState, OffsetStore
from coordinator_model.rebuild import rebuild


def _same_store(a: OffsetStore, b: OffsetStore) -> None:
    assert a.committed == b.committed
    assert a.ends == b.ends
    assert a.windows == b.windows
    assert list(a.committed) == list(b.committed)  # the order partitions were first seen in
    assert list(a.ends) == list(b.ends) and list(a.windows) == list(b.windows)


@pytest.mark.parametrize("capture", sorted(p.name for p in CAPTURES.iterdir() if p.is_dir()))
def test_every_captures_offset_stores_pickle_to_equal_stores(capture: str) -> None:
    engines = rebuild(read_capture(CAPTURES / capture).evidence)
    assert engines
    for eng in engines.values():
        again = pickle.loads(pickle.dumps(eng, 5))
        _same_store(eng.offsets, again.offsets)
        assert again.document_json() == eng.document_json()


tps = st.tuples(st.sampled_from(["a", "b", "t-1"]), st.integers(0, 40))
maybe = st.none() | st.integers(-1, 2**62)
offsets = st.integers(0, 2**40)


@settings(max_examples=200, deadline=None)
@given(
    committed=st.dictionaries(
        tps,
        st.builds(
            OffsetState,
            st.integers(-1, 2**62),
            st.integers(-1, 2**62),
            st.integers(0, 2**62),
            st.integers(-1, 2**62),
            st.text(max_size=4),
            st.integers(-1, 99),
            st.integers(-1, 2**62),
        ),
    ),
    ends=st.dictionaries(tps, st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)), max_size=5)),
    windows=st.dictionaries(
        tps,
        st.tuples(
            st.integers(-(2**62), 2**62),
            st.lists(st.builds(lagmod.CommitSample, offsets, offsets, maybe, maybe)),
        ),
    ),
)
def test_any_offset_store_pickles_to_an_equal_store(committed, ends, windows) -> None:
    store = OffsetStore(committed=committed)
    for tp, points in ends.items():
        h = store.ends[tp] = lagmod.EndOffsetHistory()
        for ts, end in points:
            h.add(ts, end)
    for tp, (start, samples) in windows.items():
        store.windows[tp] = lagmod.PartitionWindow(samples, start)
    _same_store(store, pickle.loads(pickle.dumps(store, 5)))


def test_an_offset_store_pickled_in_the_older_form_still_loads() -> None:
    """Spark's state holds stores pickled as OffsetStore(committed, ends, windows), each object
    pickled by itself."""
    store = OffsetStore()
    store.commit(("t", 0), OffsetState(5, 100, 100, 7))
    store.end_offset(("t", 0), 150, 9)
    older = pickle.dumps((OffsetStore, (store.committed, store.ends, store.windows)), 5)
    cls, args = pickle.loads(older)
    _same_store(store, cls(*args))


def _floats(x) -> list[float]:
    if isinstance(x, float):
        return [x]
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, list):
        return [f for v in x for f in _floats(v)]
    return []


@settings(max_examples=400, deadline=None)
@given(value=json_values)
def test_json_text_reads_back_as_the_standard_librarys_text(value) -> None:
    finite = json_text.finite(_floats(value))
    text = json_text.dumps(value, finite=finite)
    assert json.loads(text) == json.loads(json_text.standard(value))
    if not finite:  # Infinity as the standard library writes it, never orjson's null
        assert text == json_text.standard(value)


def test_json_text_keeps_infinite_lag_as_the_standard_library_writes_it() -> None:
    lag = {"max_seconds": math.inf, "partitions": [{"lag_seconds": 1.5}], "members": []}
    assert not json_text.finite_lag(lag)
    assert json_text.dumps({"lag": lag}, finite=json_text.finite_lag(lag)) == json_text.standard({"lag": lag})
    assert json_text.finite_lag({"max_seconds": 2.0, "partitions": [{"lag_seconds": None}]})
    assert json.loads(json_text.dumps({"n": 2**65})) == {"n": 2**65}  # past 64 bits: the library's


ends_items = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]) | st.integers(0, 2) | st.none(),
        st.integers(0, 3) | st.floats(0, 3, allow_nan=False) | st.sampled_from([True, "1"]),
        st.integers(0, 10**6) | st.floats(0, 1e6, allow_nan=False) | st.none(),
    ).map(list)
    | st.sampled_from([["a", 0], "x", None]),
    max_size=6,
)
line_stamps = st.integers(0, 2**45) | st.floats(0, 1e12, allow_nan=False) | st.none() | st.just("t")


def _outcome(fn):
    try:
        return fn()
    except Exception as e:
        return (type(e).__name__, str(e))


@settings(max_examples=500, deadline=None)
@given(
    items=ends_items,
    ts=line_stamps,
    committed=st.dictionaries(st.sampled_from([("a", 0), ("b", 1)]), offsets),
)
def test_an_end_offsets_line_is_an_end_offset_per_item(items, ts, committed) -> None:
    """The Admin poller's end-offsets line, decoded as one EndOffsets, does what each of its items
    did as an EndOffset of its own: the same document, or the same error."""
    from collectors.pipeline.route import END_OFFSET_RANK, decode_one
    from coordinator_model.engine import GroupEngine
    from coordinator_model.evidence import OffsetCommit, from_end_offset_json

    line = json.dumps({"ts": ts, "group": "g", "end_offsets": items}).encode()

    def each() -> list:
        out = []
        for item in items:
            if not isinstance(item, list) or len(item) != 3:
                raise ValueError(f"end offset must be [topic, partition, offset], got {item!r}")
            t, p, off = item
            ev = from_end_offset_json({"ts": ts, "topic": t, "partition": p, "end_offset": off})
            out.append(("g", ev.ts, END_OFFSET_RANK, ev))
        return out

    bulk, one_by_one = _outcome(lambda: decode_one("admin", "x", 0, 0, 0, b"g", line)), _outcome(each)
    if isinstance(one_by_one, tuple):
        assert isinstance(bulk, tuple) and bulk[1] == one_by_one[1]
        return
    assert len(bulk) == (1 if one_by_one else 0)
    assert [(g, t, r) for g, t, r, _ in bulk] == [(g, t, r) for g, t, r, _ in one_by_one[:1]]
    engines = []
    for evs in (bulk, one_by_one):
        eng = GroupEngine("g", retention_ms=10**12)
        eng.apply_many(
            OffsetCommit(0, "g", t, p, off, 0, log_offset=i)
            for i, ((t, p), off) in enumerate(committed.items())
        )
        eng.apply_many(ev for *_, ev in evs)
        engines.append(eng)
    assert engines[0].offsets.ends == engines[1].offsets.ends
    assert engines[0].document_json() == engines[1].document_json()
