"""Log ends per topic-partition (collectors/storage/log_ends.py) and lag that follows them without
waking a group's engine (coordinator_model/offsets/lag.py `moved_on`, the lag refresher).

Live, the Admin poller's end-offsets lines are merged into one history per partition (ENDS_BUCKET),
an engine is lent the histories of its partitions while it runs, and a lagging group's lag numbers
are brought up to the log ends every LAG_REFRESH_MS from its stored parts by the lag refresher
(collectors/pipeline/lag_refresh.py), outside Spark: these tests hold each piece to what the engine
computes when it is fed the same observations as evidence."""

from __future__ import annotations

import json
import time
from array import array
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.codec import records as r
from collectors.codec.encoder import encode_key, encode_value
from collectors.pipeline import model_state
from collectors.pipeline.lag_refresh import LAG_REFRESH_MS, LagRefresher
from collectors.pipeline.log_ends_reader import LogEndsReader
from collectors.pipeline.route import decode_batches
from collectors.pipeline.rows import ENDS_BUCKET
from collectors.pipeline.sink import SinkConfig
from collectors.storage.log_ends import MAX_POINTS, LogEnds, LogEndsCache, merge, pack, thin, unpack
from collectors.storage.redis_store import RedisStore
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import EndOffset, OffsetCommit
from coordinator_model.offsets.lag import EndOffsetHistory, moved_on
from tests.test_pipeline_watermark import BucketState

T0 = 1_800_000_000_000

points = st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 10**9)), min_size=0, max_size=400)


@given(points)
def test_a_history_packs_and_unpacks_to_itself(pts: list[tuple[int, int]]) -> None:
    h = EndOffsetHistory()
    merge(h, [(T0 + t, o) for t, o in pts])
    back = unpack(pack(h))
    assert (list(back.ts), list(back.offsets), back.last_seen) == (list(h.ts), list(h.offsets), h.last_seen)


@given(points)
def test_thinning_keeps_the_first_and_the_recent_points(pts: list[tuple[int, int]]) -> None:
    h = EndOffsetHistory()
    for t, o in sorted(pts):
        h.add(T0 + t, o)
    full = EndOffsetHistory(array("q", h.ts), array("q", h.offsets), h.last_seen)
    thin(h)
    assert len(h.ts) <= MAX_POINTS
    if full.ts:
        assert h.ts[0] == full.ts[0] and h.ts[-1] == full.ts[-1] and h.latest == full.latest
        # what is left is a part of what was, still in order
        assert set(zip(h.ts, h.offsets, strict=True)) <= set(zip(full.ts, full.offsets, strict=True))
        assert list(h.ts) == sorted(h.ts) and list(h.offsets) == sorted(h.offsets)
        recent = min(len(full.ts), MAX_POINTS // 2)
        assert list(h.ts[-recent:]) == list(full.ts[-recent:])


def test_merging_is_idempotent_and_a_worker_reloads_only_topics_that_moved(redis_client) -> None:
    ends = LogEnds(redis_client, "gs")
    obs = {("orders", 0): [(T0, 10), (T0 + 5000, 20)], ("orders", 1): [(T0, 7)], ("audit", 0): [(T0, 1)]}
    assert ends.merge(obs) == 3
    before = {k: redis_client.hgetall(k) for k in redis_client.keys("gs:ends:{*")}
    ends.merge(obs)  # a micro-batch replayed
    assert {k: redis_client.hgetall(k) for k in redis_client.keys("gs:ends:{*")} == before
    cache = LogEndsCache(ends)
    got = cache.histories({"orders"})
    assert {tp: (list(h.ts), list(h.offsets)) for tp, h in got.items()} == {
        ("orders", 0): ([T0, T0 + 5000], [10, 20]),
        ("orders", 1): ([T0], [7]),
    }
    got[("orders", 0)].add(T0 + 9000, 99)  # a copy: the cache is not changed
    reads = []
    real_read = ends.read
    ends.read = lambda topics: reads.append(sorted(topics)) or real_read(topics)  # type: ignore[method-assign]
    assert cache.histories({"orders", "audit"})[("orders", 0)].latest == 20
    assert reads == [["audit"]]  # orders had not moved
    ends.merge({("orders", 0): [(T0 + 10_000, 30)]})
    assert cache.histories({"orders", "audit"})[("orders", 0)].latest == 30
    assert reads == [["audit"], ["orders"]]


def test_within_once_a_worker_asks_each_topics_version_once(redis_client) -> None:
    ends = LogEnds(redis_client, "gs-once")
    ends.merge({("orders", 0): [(T0, 10)]})
    cache = LogEndsCache(ends)
    asked = []
    real_versions = ends.versions
    ends.versions = lambda topics: asked.append(sorted(topics)) or real_versions(topics)  # type: ignore[method-assign]
    with cache.once():
        for _ in range(50):  # a bucket's groups, one after another
            assert cache.histories({"orders"})[("orders", 0)].latest == 10
            assert cache.view({("orders", 0)})[("orders", 0)].latest == 10
        ends.merge({("orders", 0): [(T0 + 5000, 20)]})
        assert cache.histories({"orders", "audit"})[("orders", 0)].latest == 10  # merged meanwhile
    assert asked == [["orders"], ["audit"]]
    assert cache.histories({"orders"})[("orders", 0)].latest == 20  # outside: asked again
    assert asked == [["orders"], ["audit"], ["orders"]]


def test_within_once_a_read_that_failed_is_asked_again(redis_client) -> None:
    """A version read that fails (Redis away a moment; the caller retries) is not taken as asked: the
    retry reads the topic, rather than finding no log ends for it."""
    ends = LogEnds(redis_client, "gs-once-retry")
    ends.merge({("orders", 0): [(T0, 10)]})
    cache = LogEndsCache(ends)
    real_versions, calls = ends.versions, []

    def flaky(topics):
        calls.append(sorted(topics))
        if len(calls) == 1:
            raise ConnectionError("Redis away")
        return real_versions(topics)

    ends.versions = flaky  # type: ignore[method-assign]
    with cache.once():
        with pytest.raises(ConnectionError):
            cache.histories({"orders"})
        assert cache.histories({"orders"})[("orders", 0)].latest == 10
    assert calls == [["orders"], ["orders"]]


def _engine_with_commits(ends_as_evidence: bool, observations: list[tuple[int, int, int]]) -> GroupEngine:
    e = GroupEngine("g")
    evs: list = []
    for i in range(6):
        evs.append(OffsetCommit(T0 + i * 10_000 + 1, "g", "orders", i % 2, 100 * i, log_offset=i))
    if ends_as_evidence:
        evs += [EndOffset(ts, "orders", p, end) for ts, p, end in observations]
        e.apply_many(evs)
    else:
        hist: dict[tuple[str, int], EndOffsetHistory] = {}
        for ts, p, end in sorted(observations):
            hist.setdefault(("orders", p), EndOffsetHistory()).add(ts, end)
        e.take_log_ends(hist, T0 + 60_000)
        e.apply_many(evs)
    e.advance(T0 + 60_000)
    return e


def test_an_engine_lent_the_clusters_log_ends_renders_the_lag_of_one_fed_them_as_evidence() -> None:
    obs = [(T0 + k * 5000, p, 50 * k + 30 * p) for k in range(13) for p in (0, 1)]
    fed = _engine_with_commits(True, obs).document().lag.to_json()
    lent = _engine_with_commits(False, obs).document().lag.to_json()
    assert lent == fed and fed["total"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(1, 2000)), min_size=1, max_size=12),
    st.lists(st.integers(0, 5000), min_size=1, max_size=6),
    st.integers(0, 600_000),
)
def test_lag_moved_on_equals_the_engines_lag_at_that_time(
    commits: list[tuple[int, int]], growth: list[int], later: int
) -> None:
    """With no new commit, `moved_on` gives the numbers the engine gives once it has seen the new log
    ends: lag in offsets and seconds per partition, per member and in total."""
    e = GroupEngine("g")
    end = {p: 0 for p in range(4)}
    t = T0
    for i, (p, step) in enumerate(commits):
        t += 1500
        end[p] += step
        e.apply(EndOffset(t, "orders", p, end[p]))
        e.apply(OffsetCommit(t + 1, "g", "orders", p, end[p] - step // 2, log_offset=i))
    before = e.document(t + 2).lag
    hist: dict[tuple[str, int], EndOffsetHistory] = {
        tp: EndOffsetHistory(array("q", h.ts), array("q", h.offsets), h.last_seen)
        for tp, h in e.offsets.ends.items()
    }
    for g in growth:
        t += 5000
        for p in list(end):
            end[p] += g
            e.apply(EndOffset(t, "orders", p, end[p]))
            hist.setdefault(("orders", p), EndOffsetHistory()).add(t, end[p])
    now = t + later
    want = e.offsets.lag(now, {}).to_json()
    got = moved_on(before, hist, now).to_json()
    for d in (want, got):
        d.pop("status")
        for part in d["partitions"]:
            part.pop("status")
    assert got == want


def _end_lines(groups: list[str], at: int, ends: dict[int, int]) -> pd.DataFrame:
    """The Admin poller's line of the topic's log ends (group ""), lines of some of `groups` as an
    older poller sent them (a collector upgraded over its admin topic reads both), and a bad line."""
    cluster = {"group": "", "ts": at, "end_offsets": [["orders", p, e] for p, e in ends.items()]}
    rows = [("groupscope.admin", 0, 0, at, b"", json.dumps(cluster).encode())]
    for i, g in enumerate(groups[1:], 1):
        line = {"group": g, "ts": at, "end_offsets": [["orders", p, e] for p, e in ends.items()]}
        rows.append(("groupscope.admin", 0, i, at, g.encode(), json.dumps(line).encode()))
    rows.append(("groupscope.admin", 0, len(rows), at, b"x", b'{"group": "x", "ts": 1, "end_offsets": 7}'))
    return pd.DataFrame(rows, columns=["topic", "partition", "offset", "timestamp", "key", "value"])


def _commits(groups: list[str], at: int, offset: int) -> pd.DataFrame:
    rows = []
    for g in groups:
        for p in range(2):
            key = encode_key(r.OffsetCommitKey(g, "orders", p))
            value = encode_value(1, r.OffsetCommitValue(offset=offset, commit_timestamp=at), 3)
            rows.append(("__consumer_offsets", 0, len(rows), at + len(rows), key, value))
    return pd.DataFrame(rows, columns=["topic", "partition", "offset", "timestamp", "key", "value"])


KINDS = {"__consumer_offsets": "offsets", "groupscope.admin": "admin"}


def _run(update, raw: pd.DataFrame, states: dict[int, BucketState], known=None) -> list[dict]:
    frames = list(decode_batches(iter([raw]), KINDS, 4, ends_apart=True, known=known))
    if not frames:
        return []
    routed = pd.concat(frames)
    out = []
    for bucket, rows in routed.groupby("bucket"):
        state = states.setdefault(int(bucket), BucketState())
        for frame in update((int(bucket),), iter([rows.reset_index(drop=True)]), state):
            out.extend(frame.to_dict("records"))
    return out


def _live_stages(redis_server, monkeypatch, now: int, lateness_ms: int) -> tuple[Any, dict[str, int]]:
    """The live model stage in parts (shared log ends, a sink on the test's Redis) and the clock it
    reads (`clock["now"]`, set by the test)."""
    sink = SinkConfig(redis_server.url, "gs", live=True, redis_retry_s=1)
    clock = {"now": now}
    monkeypatch.setattr(model_state, "_now_ms", lambda: clock["now"])
    update = model_state.make_update(
        True, 7 * 24 * 3600 * 1000, 5000, lateness_ms, sink=sink, shared_ends=True
    )
    return update, clock


def test_live_log_ends_are_shared_and_lag_follows_them_without_the_engine(
    redis_server, redis_client, monkeypatch
) -> None:
    groups = ["a", "b", "c"]
    update, clock = _live_stages(redis_server, monkeypatch, T0 + 10_000, lateness_ms=0)
    states: dict[int, BucketState] = {}
    _run(
        update, pd.concat([_end_lines(groups, T0, {0: 500, 1: 700}), _commits(groups, T0 + 100, 400)]), states
    )
    # one malformed line set aside (by the route stage), the others merged once per partition
    routed = pd.concat(
        list(decode_batches(iter([_end_lines(groups, T0, {0: 1})]), KINDS, 4, ends_apart=True))
    )
    assert sorted(routed["bucket"]) == sorted([-1, ENDS_BUCKET])  # the good lines: one row; the bad: dead
    # read from a capture (not live), the cluster's line has no group to go to: set aside, with why
    routed = pd.concat(list(decode_batches(iter([_end_lines([], T0, {0: 1}).iloc[:1]]), KINDS, 4)))
    assert list(routed["bucket"]) == [-1] and "read only live" in routed["error"].iloc[0]
    ends = LogEnds(redis_client, "gs").read({"orders"})
    assert {tp: h.latest for tp, h in ends.items()} == {("orders", 0): 500, ("orders", 1): 700}
    store = RedisStore(redis_client)
    doc = store.get_document("a")
    assert doc is not None and doc.lag.total == 100 + 300
    # the engines keep no copy of the cluster's log ends
    for s in states.values():
        if s.exists:
            groups_of, _ = model_state._load_state(s)
            for slot in groups_of.values():
                engine = model_state.pickle.loads(slot.engine)
                assert not engine.offsets.ends and not engine.offsets.committed
    # the commits put every lagging group in the refresher's schedule, at its own phase of the minute
    due = dict(redis_client.zrange("gs:lag:due", 0, -1, withscores=True))
    assert {g.decode() for g in due} == set(groups)
    assert all(T0 < t <= T0 + 10_000 + LAG_REFRESH_MS for t in due.values())
    # the log ends move, nothing else happens: the refresher brings the lag up to them, no engine runs
    # and no bucket of the stateful operator is called
    clock["now"] = T0 + LAG_REFRESH_MS + 20_000
    calls = []
    real_setstate = GroupEngine.__setstate__
    monkeypatch.setattr(
        GroupEngine, "__setstate__", lambda self, st: calls.append(1) or real_setstate(self, st)
    )
    _run(update, _end_lines(groups, T0 + LAG_REFRESH_MS + 10_000, {0: 900, 1: 800}), states)
    saved = {b: s.value for b, s in states.items()}
    refresher = LagRefresher(redis_server.url, "gs", 7 * 24 * 3600 * 1000, clock=lambda: clock["now"])
    assert refresher.run_once(T0 + LAG_REFRESH_MS + 15_000) == 3
    assert refresher.run_once(T0 + LAG_REFRESH_MS + 15_000) == 0  # each once, then its next phase
    nxt = dict(redis_client.zrange("gs:lag:due", 0, -1, withscores=True))
    assert all(T0 + LAG_REFRESH_MS + 15_000 < t <= T0 + 2 * LAG_REFRESH_MS + 15_000 for t in nxt.values())
    assert {b: s.value for b, s in states.items()} == saved  # Spark's state untouched by lag
    doc = store.get_document("a")
    assert doc is not None and doc.lag.total == 500 + 400
    assert doc.lag.max_seconds is not None and doc.lag.max_seconds > 0
    assert not calls  # no engine was unpickled for it
    row = json.loads(redis_client.hget("gs:fleet", "a"))
    assert row["lag"] == 900


def _rounds(groups: list[str], rounds: int, parts: int = 3) -> list[pd.DataFrame]:
    """Commits and end-offsets lines, a batch each round: every group commits every partition in
    round 0 (its engine learns them), then some partitions each round (the commit path)."""
    out = []
    log = 0
    for k in range(rounds):
        at = T0 + k * 7_000
        rows = []
        for gi, g in enumerate(groups):
            for p in range(parts):
                if k and (gi + p + k) % 3 == 0:
                    continue  # not every partition commits every round
                for c in range(2 if k else 1):  # two commits a round make runs of two
                    key = encode_key(r.OffsetCommitKey(g, "orders", p))
                    off = 50 * k + 10 * p + 5 * c + gi
                    value = encode_value(
                        1, r.OffsetCommitValue(offset=off, commit_timestamp=at + c * 1500), 3
                    )
                    rows.append(("__consumer_offsets", 0, log, at + c * 1500 + p, key, value))
                    log += 1
        frame = pd.DataFrame(rows, columns=["topic", "partition", "offset", "timestamp", "key", "value"])
        ends = _end_lines(groups[:1], at - 1000, {p: 60 * k + 40 + 10 * p for p in range(parts)})
        out.append(pd.concat([ends.iloc[:-1], frame]))  # (the malformed line left out)
    return out


@pytest.mark.parametrize("first_stage", [False, True], ids=["model-stage", "first-stage"])
def test_the_commit_path_writes_what_the_engine_would_and_never_touches_it(
    redis_server, redis_client, monkeypatch, first_stage
) -> None:
    """Known groups' commits take the commit path (partition fields in Redis, no engine): in the model
    stage, or (`first_stage`, as the live collector runs) in the first stage, where they never reach
    the model stage at all. The document a reader puts together equals the one the engine renders fed
    the same evidence."""
    from collectors.pipeline.known_commits import KnownCommits
    from collectors.pipeline.route import decode_one

    redis_client.flushall()
    groups = ["a", "b", "c", "d"]
    sink = SinkConfig(redis_server.url, "gs", live=True, redis_retry_s=1)
    update, clock = _live_stages(redis_server, monkeypatch, T0, lateness_ms=0)
    states: dict[int, BucketState] = {}
    unpickled = []
    real_setstate = GroupEngine.__setstate__
    monkeypatch.setattr(
        GroupEngine, "__setstate__", lambda self, st: unpickled.append(self.group) or real_setstate(self, st)
    )
    batches = _rounds(groups, 5)
    known = KnownCommits(sink) if first_stage else None
    for k, raw in enumerate(batches):
        clock["now"] = T0 + k * 7_000 + 6_000
        unpickled.clear()
        if first_stage and k:
            routed = list(decode_batches(iter([raw]), KINDS, 4, ends_apart=True, known=known))
            assert not any((f["kind"] == "commits").any() for f in routed)  # none went on
        _run(update, raw, states, known=known)
        if k:
            assert unpickled == [], (k, unpickled)  # the commit path: no engine
    store = RedisStore(redis_client)
    assert b'"offsets_apart":true' in redis_client.get("gs:group:{a}:doc")
    # the same evidence, offline, one engine a group
    for g in groups:
        e = GroupEngine(g)
        evs = []
        for raw in batches:
            for row in raw.itertuples():
                kind = "offsets" if row.topic == "__consumer_offsets" else "admin"
                for grp, _, _, ev in decode_one(
                    kind, row.topic, row.partition, row.offset, row.timestamp, row.key, row.value
                ):
                    if grp == g or kind == "admin":
                        evs.append(ev)
        e.apply_many(evs)
        got = store.get_document(g)
        assert got is not None
        want = e.document(got.as_of)
        assert [o.to_json() for o in got.offsets] == [o.to_json() for o in want.offsets], g
        assert got.lag.to_json() == want.lag.to_json(), g


def test_a_redis_that_lost_the_data_gets_every_group_again(redis_server, redis_client, monkeypatch) -> None:
    """The driver sets a new data epoch when Redis lost what the collector wrote; at the next batch
    each bucket writes all its groups again from their engines (their offsets come back with the
    Admin poller's committed answers, which the engine path applies)."""
    groups = ["a", "b", "c"]
    sink = SinkConfig(redis_server.url, "gs", live=True, redis_retry_s=1)
    clock = {"now": T0 + 10_000}
    monkeypatch.setattr(model_state, "_now_ms", lambda: clock["now"])
    monkeypatch.setattr(model_state, "EPOCH_FRESH_S", 0.0)  # the batches come within a second here
    update = model_state.make_update(True, 7 * 24 * 3600 * 1000, 5000, 0, sink=sink, shared_ends=True)
    store = RedisStore(redis_client)
    store.new_data_epoch()
    states: dict[int, BucketState] = {}
    _run(
        update,
        pd.concat([_end_lines(groups, T0, {0: 500, 1: 700}).iloc[:-1], _commits(groups, T0 + 100, 400)]),
        states,
    )
    assert store.get_document("a") is not None
    redis_client.flushdb()  # lost; the driver notices and sets a new epoch
    store.new_data_epoch()
    clock["now"] += 5_000
    committed = [
        (
            "groupscope.admin",
            0,
            50 + i,
            clock["now"] - 1000,
            g.encode(),
            json.dumps(
                {"ts": clock["now"] - 1000, "group": g, "committed": [["orders", 0, 400], ["orders", 1, 400]]}
            ).encode(),
        )
        for i, g in enumerate(groups[:2])
    ]
    frame = pd.DataFrame(committed, columns=["topic", "partition", "offset", "timestamp", "key", "value"])
    _run(
        update,
        pd.concat([_end_lines(groups, clock["now"] - 1000, {0: 500, 1: 700}).iloc[:-1], frame]),
        states,
    )
    for g in groups[:2]:
        doc = store.get_document(g)
        assert doc is not None, g
        assert [(o.partition, o.offset) for o in doc.offsets] == [(0, 400), (1, 400)]
        assert doc.lag.total == 100 + 300
    # c had no evidence since: its engine wrote it again all the same (its offsets wait for the poller)
    c = store.get_document("c")
    assert c is not None and c.state == "Empty" and redis_client.hget("gs:fleet", "c") is not None


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(0, 10**12),
            st.integers(-1, 10**13),
            st.integers(0, 10**9),
            st.text(max_size=5),
        ),
        max_size=20,
    )
)
def test_a_partitions_stored_form_reads_back_as_the_store_had_it(commits) -> None:
    """group_offsets: what a partition's field holds (its OffsetState and Burrow window) reads back
    equal, whatever the commits were."""
    from collectors.storage.group_offsets import decode_into, encode
    from coordinator_model.offsets import OffsetState, OffsetStore

    store = OffsetStore()
    for i, (p, off, cts, ts, meta) in enumerate(commits):
        store.commit(("t", p), OffsetState(off, cts, T0 + ts, i, meta))
    for tp in store.committed:
        back = OffsetStore()
        decode_into(back, tp, encode(store, tp))
        assert back.committed[tp] == store.committed[tp]
        assert back.windows[tp].samples == store.windows[tp].samples
        assert back.windows[tp].slot_start == store.windows[tp].slot_start


def test_a_partitions_field_in_the_json_form_of_earlier_versions_reads_the_same() -> None:
    """Fields an earlier version wrote as JSON read as the packed form does (no migration needed);
    a field of neither shape is refused with the partition named, and a malformed packed one too."""
    from collectors.storage.group_offsets import decode_into, encode
    from coordinator_model.offsets import OffsetState, OffsetStore
    from coordinator_model.offsets.lag import CommitSample, PartitionWindow

    store = OffsetStore()
    store.committed[("t", 0)] = OffsetState(7, T0, T0 + 1, 3, None, 4, -1)
    store.windows[("t", 0)] = PartitionWindow(
        [CommitSample(T0, 7, None, None), CommitSample(T0 + 9, 8, 2, 10)], T0
    )
    packed = encode(store, ("t", 0))
    legacy = json.dumps(
        [7, T0, T0 + 1, 3, None, 4, -1, T0, [[T0, 7, None, None], [T0 + 9, 8, 2, 10]]]
    ).encode()
    assert packed[:1] == b"\x01" and legacy[:1] == b"["
    for raw in (packed, legacy):
        back = OffsetStore()
        decode_into(back, ("t", 0), raw)
        assert back.committed == store.committed
        assert back.windows[("t", 0)].samples == store.windows[("t", 0)].samples
    for bad in (b"", b"\x02" + packed[1:], packed[:-3], packed + b"x", b"[1, 2]", b"{}"):
        with pytest.raises(ValueError, match="t:0"):
            decode_into(OffsetStore(), ("t", 0), bad)


def test_a_bucket_saved_as_tuples_by_an_older_version_loads_as_slots() -> None:
    from collectors.pipeline.model_state import GroupSlot, _load_state

    state = BucketState()
    old = {"a": (b"x", 1, "d"), "b": (b"y", 2, "e", [], 9), "c": (b"z", 3, "f", [], 9, 7)}
    state.update((model_state.pickle.dumps((old, {"event": 5}), 5),))
    groups, meta = _load_state(state)
    assert groups == {
        "a": GroupSlot(b"x", 1, "d"),
        "b": GroupSlot(b"y", 2, "e", [], 9),
        "c": GroupSlot(b"z", 3, "f", [], 9, 7),
    }
    assert meta == {"event": 5}
    state.update((model_state.pickle.dumps((groups, meta), 5),))
    assert _load_state(state)[0] == groups


def test_commits_are_shown_at_once_even_when_other_evidence_of_the_group_waits(
    redis_server, redis_client, monkeypatch
) -> None:
    """A group with rows held behind the event-time watermark (a heartbeat event from ahead of the
    collector's clock): its commits to partitions it holds still take the commit path and show in
    the next read, not after the watermark passes the held rows."""
    groups = ["a", "b"]
    update, clock = _live_stages(redis_server, monkeypatch, T0, lateness_ms=5000)
    states: dict[int, BucketState] = {}
    store = RedisStore(redis_client)
    kinds = {**KINDS, "groupscope.heartbeats": "heartbeat"}
    batches = _rounds(groups, 4)
    for k, raw in enumerate(batches):
        clock["now"] = T0 + k * 7_000 + 6_000
        at = clock["now"] + 3_000  # ahead of the watermark: held
        hb = {"ts": at, "group": "a", "member_id": "m", "event": "heartbeat", "session_timeout_ms": 45000}
        beat = pd.DataFrame(
            [("groupscope.heartbeats", 0, k, at, b"a", json.dumps(hb).encode())],
            columns=["topic", "partition", "offset", "timestamp", "key", "value"],
        )
        routed = pd.concat(list(decode_batches(iter([pd.concat([raw, beat])]), kinds, 4, ends_apart=True)))
        for bucket, rows in routed.groupby("bucket"):
            state = states.setdefault(int(bucket), BucketState())
            list(update((int(bucket),), iter([rows.reset_index(drop=True)]), state))
        if not k:
            continue
        want: dict[tuple[str, int], int] = {}
        for row in raw.itertuples():
            if row.topic == "__consumer_offsets":
                from collectors.codec.decoder import decode_record

                rec = decode_record(row.key, row.value, row.partition, row.offset, row.timestamp)
                if rec.key.group == "a":
                    want[(rec.key.topic, rec.key.partition)] = rec.value.offset
        doc = store.get_document("a")
        assert doc is not None
        shown = {(o.topic, o.partition): o.offset for o in doc.offsets}
        assert all(shown[tp] == off for tp, off in want.items()), (k, want, shown)


def test_the_model_stage_function_pickles_after_this_process_used_its_caches(redis_server) -> None:
    """Spark pickles the model stage's function (cloudpickle); a closure's globals go by value, and
    the driver's own caches (a Redis client, with its locks) once went with it and failed the query
    in any process that had run the stage itself before."""
    from pyspark import cloudpickle

    from collectors.pipeline.sink import model_store

    sink = SinkConfig(redis_server.url, "gs", live=True, redis_retry_s=1)
    LogEndsReader(sink)({"orders"})
    model_store(sink)
    update = model_state.make_update(True, 7 * 24 * 3600 * 1000, 5000, 5000, sink=sink, shared_ends=True)
    assert cloudpickle.loads(cloudpickle.dumps(update)) is not None
    # and the first stage's, with its commit path (known_commits), used here before
    from collectors.pipeline.known_commits import KnownCommits
    from collectors.pipeline.route import route_arrow

    known = KnownCommits(sink)
    known.take(None)
    first = lambda it: route_arrow(it, KINDS, 4, ends_apart=True, known=known)  # noqa: E731
    assert cloudpickle.loads(cloudpickle.dumps(first)) is not None


def test_the_lag_schedule_keeps_the_sooner_time_and_a_refresh_never_puts_back_a_group_taken_out(
    redis_client,
) -> None:
    from collectors.storage.lag_schedule import LagSchedule

    s = LagSchedule(redis_client, "gs")
    p = redis_client.pipeline()
    s.queue_sooner(p, {"a": 500, "b": 900})
    s.queue_sooner(p, {"a": 700, "b": 600})  # a commit may only bring a group's time closer
    p.execute()
    assert s.due(650, 10) == ["a", "b"] and s.due(550, 10) == ["a"]
    p = redis_client.pipeline()
    s.queue_forget(p, ["b"])  # its document no longer lags
    p.execute()
    s.reschedule({"a": 2000, "b": 2000}, [])  # a refresh that read b before it was taken out
    assert s.due(10**13, 10) == ["a"] and s.next_due() == 2000


def test_the_lag_refresher_thread_refreshes_what_is_due_notes_its_state_and_stops(
    redis_server, redis_client, monkeypatch
) -> None:
    """The thread the collector runs: it brings a due group's fleet row up to the log ends, says how
    far behind its schedule it is, and stops when told (a thread's own `_stop` must not be shadowed:
    Thread.join calls it)."""
    groups = ["a", "b"]
    update, _ = _live_stages(redis_server, monkeypatch, T0 + 10_000, lateness_ms=0)
    states: dict[int, BucketState] = {}
    _run(
        update, pd.concat([_end_lines(groups, T0, {0: 500, 1: 700}), _commits(groups, T0 + 100, 400)]), states
    )
    LogEnds(redis_client, "gs").merge({("orders", 0): [(T0 + 30_000, 1500)]})
    stamped = redis_client.hgetall("gs:refreshed")
    refresher = LagRefresher(
        redis_server.url, "gs", 7 * 24 * 3600 * 1000, lateness_ms=0, clock=lambda: T0 + 3 * LAG_REFRESH_MS
    )
    refresher.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not redis_client.get("gs:collector:lag_refresh"):
            time.sleep(0.1)
        note = json.loads(redis_client.get("gs:collector:lag_refresh"))
        assert note["refreshed"] == 2 and note["scheduled"] == 2
        assert json.loads(redis_client.hget("gs:fleet", "a"))["lag"] == (1500 - 400) + (700 - 400)
        # moving lag on with the log ends is no news from the cluster: the groups' refresh stamps stand
        # (a cluster that went away must read as stale on the pages)
        assert stamped and redis_client.hgetall("gs:refreshed") == stamped
        assert json.loads(redis_client.hget("gs:fleet", "a"))["last_refreshed"] == int(stamped[b"a"])
    finally:
        refresher.stop()
        refresher.join(5)
    assert not refresher.is_alive()


def test_a_group_whose_stored_head_cannot_be_read_does_not_stop_the_lag_refresh(
    redis_server, redis_client, monkeypatch
) -> None:
    """One unreadable head (a value someone else wrote under the group's key) is logged and tried
    again a phase later; the other due groups are refreshed, and the refresher does not stop."""
    groups = ["a", "b", "c"]
    update, _ = _live_stages(redis_server, monkeypatch, T0 + 10_000, lateness_ms=0)
    _run(update, pd.concat([_end_lines(groups, T0, {0: 500, 1: 700}), _commits(groups, T0 + 100, 400)]), {})
    LogEnds(redis_client, "gs").merge({("orders", 0): [(T0 + 30_000, 1500)]})
    redis_client.set("gs:group:{b}:doc", b"\xff not a document")
    refresher = LagRefresher(redis_server.url, "gs", 7 * 24 * 3600 * 1000)
    at = T0 + 3 * LAG_REFRESH_MS
    assert refresher.run_once(at) == 2
    assert json.loads(redis_client.hget("gs:fleet", "a"))["lag"] == (1500 - 400) + (700 - 400)
    assert json.loads(redis_client.hget("gs:fleet", "c"))["lag"] == (1500 - 400) + (700 - 400)
    assert at < redis_client.zscore("gs:lag:due", "b") <= at + LAG_REFRESH_MS  # a phase later


def test_the_first_stages_commit_path_sends_its_runs_on_when_it_fails(redis_server, monkeypatch) -> None:
    """Whatever goes wrong in the first stage's commit path but Redis itself, its runs go on to the
    model stage (a failed task would be run again on the same records, and fail again)."""
    from collectors.pipeline import known_commits

    sink = SinkConfig(redis_server.url, "gs", live=True, redis_retry_s=1)
    routed = list(decode_batches(iter([_commits(["a"], T0, 5)]), KINDS, 4, ends_apart=True))
    import pyarrow as pa

    batch = pa.RecordBatch.from_pandas(pd.concat(routed), preserve_index=False)

    def broken(self, batch, exclude):
        raise KeyError("a stored value of another shape")

    monkeypatch.setattr(known_commits.KnownCommits, "_take", broken)
    assert known_commits.KnownCommits(sink).take(batch).num_rows == batch.num_rows


def test_a_group_at_zero_lag_whose_consumers_stop_is_refreshed_when_its_topics_log_end_moves(
    redis_server, redis_client, monkeypatch
) -> None:
    """A group caught up to the log ends leaves the refresher's schedule (its lag cannot move while it
    holds). When its consumers stop and producers go on writing, no commit of its own comes: the
    log ends going up put the groups reading the topic back in the schedule, and its fleet row shows
    the lag within a refresh, not at its next idle look (10 minutes)."""
    groups = ["a", "b"]
    sink = SinkConfig(redis_server.url, "gs", live=True, redis_retry_s=1)
    clock = {"now": T0 + 10_000}
    monkeypatch.setattr(model_state, "_now_ms", lambda: clock["now"])
    monkeypatch.setattr(model_state, "_READERS_SCHEDULED", {})
    update = model_state.make_update(True, 7 * 24 * 3600 * 1000, 5000, 0, sink=sink, shared_ends=True)
    states: dict[int, BucketState] = {}
    _run(update, pd.concat([_end_lines([], T0, {0: 400, 1: 400}), _commits(groups, T0 + 100, 400)]), states)
    # caught up: a commit puts a group in the schedule, a refresh at zero lag takes it out
    refresher = LagRefresher(redis_server.url, "gs", 7 * 24 * 3600 * 1000, clock=lambda: clock["now"])
    refresher.run_once(T0 + LAG_REFRESH_MS + 1)
    assert redis_client.zcard("gs:lag:due") == 0
    assert json.loads(redis_client.hget("gs:fleet", "a"))["lag"] == 0
    # the consumers stopped; the producers did not (and the readers were last scheduled long ago)
    clock["now"] = T0 + 2 * LAG_REFRESH_MS
    monkeypatch.setattr(model_state, "_READERS_SCHEDULED", {})
    _run(update, _end_lines([], T0 + 2 * LAG_REFRESH_MS - 5000, {0: 450, 1: 470}), states)
    due = {g.decode() for g in redis_client.zrange("gs:lag:due", 0, -1)}
    assert due == set(groups)
    assert refresher.run_once(T0 + 3 * LAG_REFRESH_MS) == 2
    assert json.loads(redis_client.hget("gs:fleet", "a"))["lag"] == 50 + 70
    # log ends that do not go up schedule nobody
    redis_client.delete("gs:lag:due")
    monkeypatch.setattr(model_state, "_READERS_SCHEDULED", {})
    _run(update, _end_lines([], T0 + 3 * LAG_REFRESH_MS, {0: 450, 1: 470}), states)
    assert redis_client.zcard("gs:lag:due") == 0


def test_a_share_groups_lag_is_its_positions_against_the_log_ends_of_the_same_poll(
    redis_server, redis_client, monkeypatch
) -> None:
    """A share group's position per partition comes from the Admin poll that also reads the log ends
    (admin_lines.share_offsets_line: the log end minus the broker's lag). The ends are merged at once,
    and the positions must show with them: while they waited behind the watermark, the group's page,
    put together with the newest ends, read a poll's growth of the log on top of the broker's lag
    (the demo's share group: 25 on its page, 0 in its fleet row and in kafka-share-groups.sh). The
    fleet row and the page must both say the broker's lag."""
    from collectors.kafka_protocol import share_broker_block
    from collectors.pipeline.admin_lines import share_describe_json, share_offsets_line
    from tests.test_share_describe import TOPIC_ID, described_group

    update, clock = _live_stages(redis_server, monkeypatch, T0, lateness_ms=5000)
    states: dict[int, BucketState] = {}
    store = RedisStore(redis_client)
    broker_lag = {0: 4, 1: 0, 2: 7}

    def poll(at: int, ends: dict[int, int]) -> pd.DataFrame:
        group = described_group("sg", members=[("m-one", "sc-1", 3, [0, 1, 2])])
        describe = share_describe_json("sg", share_broker_block(group, {TOPIC_ID: "orders"}), at)
        offsets = [("orders", p, e - broker_lag[p] - 3, broker_lag[p]) for p, e in ends.items()]
        positions = share_offsets_line("sg", offsets, {("orders", p): e for p, e in ends.items()}, at)
        cluster = {"group": "", "ts": at, "end_offsets": [["orders", p, e] for p, e in ends.items()]}
        clock_line = {"ts": at, "clock": True}
        rows = [
            ("groupscope.admin", 0, 0, at, b"sg", json.dumps(describe).encode()),
            ("groupscope.admin", 0, 1, at, b"sg", json.dumps(positions).encode()),
            ("groupscope.admin", 0, 2, at, b"", json.dumps(cluster).encode()),
            ("groupscope.admin", 0, 3, at, b"", json.dumps(clock_line).encode()),
        ]
        return pd.DataFrame(rows, columns=["topic", "partition", "offset", "timestamp", "key", "value"])

    for k in range(6):
        at = T0 + k * 5_000
        clock["now"] = at + 200
        ends = {p: 100 + 40 * k + 10 * p for p in broker_lag}  # producers write 40 a poll per partition
        _run(update, poll(at, ends), states)
        if k < 2:
            continue  # the group is modelled once the watermark passes its first describe
        row = json.loads(redis_client.hget("gs:fleet", "sg"))
        doc = store.get_document("sg")
        assert doc is not None and doc.type == "share"
        assert row["lag"] == sum(broker_lag.values()), (k, row)
        shown = [(p.partition, p.lag) for p in doc.lag.partitions]
        assert doc.lag.total == sum(broker_lag.values()), (k, shown)


def test_a_lag_refresh_round_makes_no_reference_cycles(redis_server, redis_client, monkeypatch) -> None:
    """The refresher's rounds run with the cyclic collector paused (gc_pause.py): what a round makes
    (heads, offsets, windows, documents, rows) must be freed by reference counting alone."""
    import gc

    groups = [f"g{i}" for i in range(20)]
    update, clock = _live_stages(redis_server, monkeypatch, T0 + 10_000, lateness_ms=0)
    states: dict[int, BucketState] = {}
    _run(update, pd.concat([_end_lines([], T0, {0: 400, 1: 400}), _commits(groups, T0 + 100, 300)]), states)
    _run(update, _end_lines([], T0 + 5_000, {0: 500, 1: 520}), states)
    refresher = LagRefresher(redis_server.url, "gs", 7 * 24 * 3600 * 1000, clock=lambda: clock["now"])
    refresher.run_once(T0)  # its Redis client and caches, made before the count
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        assert refresher.run_once(T0 + LAG_REFRESH_MS + 1) == len(groups)
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
    assert json.loads(redis_client.hget("gs:fleet", "g0"))["lag"] == (500 - 300) + (520 - 300)
