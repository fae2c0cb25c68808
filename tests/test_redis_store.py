"""The Redis layout and its read/write API, against the harness's real redis-server."""

from __future__ import annotations

import json
import random

import pytest

from collectors.storage.fleet_rows import HOUR_MS, fleet_row
from collectors.storage.redis_store import RedisStore
from coordinator_model.document import (
    GenerationDoc,
    GroupDocument,
    LagDoc,
    MemberDoc,
    PartitionLag,
    TimelineSpan,
)

pytestmark = pytest.mark.servers

T0 = 1_700_000_000_000


def make_doc(name: str, state: str = "Stable", gen: int = 3, members: int = 2, lag: int = 0, **kw) -> dict:
    """A document in the shape the engine writes (GroupDocument.to_json)."""
    gens = [
        GenerationDoc(g, T0 + g * 1000, end=T0 + g * 1000 + 500, duration_ms=500, cause="member_joined")
        for g in range(1, gen + 1)
    ]
    return GroupDocument(
        group=name,
        type=kw.get("type", "classic"),
        state=state,
        protocol_type="consumer",
        protocol="range",
        generation=gen,
        members=[MemberDoc(f"m{i}") for i in range(members)],
        timeline=[TimelineSpan("Empty", T0, T0 + 1000), TimelineSpan(state, T0 + 1000)],
        generations=gens,
        lag=LagDoc(
            total=lag,
            max_seconds=lag / 10,
            partitions=[PartitionLag("t", 0, lag=lag, lag_seconds=lag / 10)],
        ),
    ).to_json()


def dump(r, prefix: str = "") -> dict:
    """Every key (under `prefix`, cut off the names: two prefixes then compare) with its full content,
    to compare Redis before and after."""
    out = {}
    for key in sorted(r.keys(prefix + "*")):
        k = key[len(prefix) :] if prefix else key
        t = r.type(key).decode()
        if t == "string":
            out[k] = r.get(key)
        elif t == "hash":
            out[k] = r.hgetall(key)
        elif t == "zset":
            out[k] = r.zrange(key, 0, -1, withscores=True)
        elif t == "set":
            out[k] = sorted(r.smembers(key))
        elif t == "stream":
            out[k] = [f for _, f in r.xrange(key)]
    return out


def test_get_group_returns_the_document_verbatim(redis_client):
    st = RedisStore(redis_client)
    doc = make_doc("g1", lag=7)
    st.write_group(doc, T0 + 10_000)
    assert st.get_group("g1") == doc
    assert st.get_group("nope") is None
    row = st.get_row("g1")
    assert row["lag"] == 7 and row["members"] == 2 and row["state"] == "Stable"
    assert row["rebalances_1h"] == 3 and row["last_change"] == T0 + 1000


def test_writes_are_idempotent(redis_client):
    st = RedisStore(redis_client)
    docs = [make_doc(f"g{i}", lag=i) for i in range(20)]
    st.write_groups(docs, T0 + 5000)
    st.write_lag_points("g1", T0 + 4000, total=1, lag_seconds=0.1, partitions={"t:0": 1})
    st.add_dead_letter({"key": b"\x00\x01", "value": None}, "__consumer_offsets/3@17", "short key", T0)
    before = dump(redis_client)
    st.write_groups(docs, T0 + 5000)
    st.write_lag_points("g1", T0 + 4000, total=1, lag_seconds=0.1, partitions={"t:0": 1})
    st.add_dead_letter({"key": b"\x00\x01", "value": None}, "__consumer_offsets/3@17", "short key", T0)
    assert dump(redis_client) == before
    assert len(st.dead_letters()) == 1


def test_state_change_moves_the_group_between_state_indexes(redis_client):
    st = RedisStore(redis_client)
    st.write_group(make_doc("g", state="Stable"), T0)
    assert st.list_groups(state="Stable")[0] == 1
    st.write_group(make_doc("g", state="Empty", members=0), T0 + 1)
    assert st.list_groups(state="Stable")[0] == 0
    total, rows = st.list_groups(state="Empty")
    assert total == 1 and rows[0]["name"] == "g"
    assert st.fleet_counts()["by_state"] == {"Empty": 1}


def test_one_write_with_several_documents_of_a_group_keeps_the_last(redis_client):
    st = RedisStore(redis_client)
    st.write_group(make_doc("g", state="Stable"), T0)
    st.write_many(
        [
            (make_doc("g", state="PreparingRebalance", gen=4), T0 + 1, T0 + 1),
            (make_doc("g", state="CompletingRebalance", gen=4), T0 + 2, T0 + 2),
            (make_doc("g", state="Empty", gen=5, members=0), T0 + 3, T0 + 3),
            (make_doc("other", state="Stable"), T0 + 3, T0 + 3),
        ]
    )
    assert st.fleet_counts()["by_state"] == {"Empty": 1, "Stable": 1}
    for state in ("Stable", "PreparingRebalance", "CompletingRebalance"):
        names = [r["name"] for r in st.list_groups(state=state, limit=0)[1]] if state != "Stable" else []
        assert "g" not in names
    assert [r["name"] for r in st.list_groups(state="Stable")[1]] == ["other"]
    assert st.get_group("g")["generation"] == 5
    assert [g["generation"] for g in st.get_generations("g")] == [1, 2, 3, 4, 5]


def test_history_keys_are_rewritten_only_when_the_history_changed(redis_client):
    st = RedisStore(redis_client)
    doc = make_doc("g", lag=1)
    st.write_group(doc, T0)
    # a document that differs only in its lag leaves the timeline and generations alone
    pipe = st.pipeline()
    queued_same = st.write_many([(make_doc("g", lag=2), T0 + 1, T0 + 1)], pipe=pipe)
    pipe.execute()
    pipe = st.pipeline()
    queued_new = st.write_many([(make_doc("g", gen=4, lag=2), T0 + 2, T0 + 2)], pipe=pipe)
    pipe.execute()
    assert queued_new > queued_same
    assert [g["generation"] for g in st.get_generations("g")] == [1, 2, 3, 4]
    # a deleted group's history is written again when it comes back
    st.delete_group("g")
    st.write_group(doc, T0 + 3)
    assert [g["generation"] for g in st.get_generations("g")] == [1, 2, 3]


def test_list_groups_sorts_filters_and_pages_like_python(redis_client):
    rnd = random.Random(7)
    st = RedisStore(redis_client)
    states = ["Stable", "Empty", "PreparingRebalance", "Dead"]
    docs = [
        make_doc(
            f"svc-{rnd.choice(['orders', 'billing', 'audit'])}-{i:03d}",
            state=rnd.choice(states),
            gen=rnd.randint(1, 8),
            members=rnd.randint(0, 5),
            lag=rnd.randint(0, 1000),
            type=rnd.choice(["classic", "consumer"]),
        )
        for i in range(300)
    ]
    st.write_groups(docs, T0 + HOUR_MS // 2)
    rows = {d["group"]: fleet_row(GroupDocument.from_json(d), T0 + HOUR_MS // 2).to_json() for d in docs}
    key = {
        "name": lambda r: (0, r["name"]),
        "lag": lambda r: (r["lag"], r["name"]),
        "members": lambda r: (r["members"], r["name"]),
        "rebalance_rate": lambda r: (r["rebalances_1h"], r["name"]),
    }
    for sort_by, fn in key.items():
        for desc in (False, True):
            for state in (None, "Stable"):
                for sub in (None, "BILL"):
                    want = [
                        r
                        for r in rows.values()
                        if (state is None or r["state"] == state)
                        and (sub is None or sub.lower() in r["name"].lower())
                    ]
                    want.sort(key=fn, reverse=desc)
                    total, page = st.list_groups(
                        sort_by, desc, state=state, name_contains=sub, offset=10, limit=25
                    )
                    assert total == len(want)
                    assert [r["name"] for r in page] == [r["name"] for r in want[10:35]]
    total, page = st.list_groups("name", state=["Stable", "Dead"], type_="consumer", limit=1000)
    want = sorted(n for n, r in rows.items() if r["state"] in ("Stable", "Dead") and r["type"] == "consumer")
    assert total == len(want) and [r["name"] for r in page] == want
    counts = st.fleet_counts()  # storms and lagging are the statuses' (tests/test_statuses.py)
    assert counts["total"] == 300
    assert sum(counts["by_state"].values()) == 300
    with pytest.raises(ValueError):
        st.list_groups("bogus")


def test_history_ranges_and_trim(redis_client):
    st = RedisStore(redis_client, retention_ms=10_000)
    st.write_group(make_doc("g", gen=5), T0 + 6000)
    for i in range(10):
        st.write_lag_points("g", T0 + i * 1000, total=i, lag_seconds=i / 2, members={"m0": i})
    assert [g["generation"] for g in st.get_generations("g", since=T0 + 2000, until=T0 + 4000)] == [2, 3, 4]
    assert [p["lag"] for p in st.get_lag_history("g", since=T0 + 7000)] == [7, 8, 9]
    assert [t["state"] for t in st.get_timeline("g", since=T0 + 2000)] == ["Stable"]
    st.add_dead_letter(b"\xff", "f:1", "bad", T0)
    # cutoff T0+3500: generations 1-3, lag points 0-3, the Empty interval (the newest row stays even when
    # it began before the cutoff: it is the state in force), one dead letter
    removed = st.trim(T0 + 13_500)
    assert removed == 3 + 4 + 1 + 1
    assert [t["state"] for t in st.get_timeline("g")] == ["Stable"]
    assert [g["generation"] for g in st.get_generations("g")] == [4, 5]
    assert len(st.get_lag_history("g")) == 6
    assert st.get_group("g") is not None  # a live group is never dropped, only its old history


def test_trim_drops_groups_gone_quiet_in_empty_or_dead(redis_client):
    st = RedisStore(redis_client, retention_ms=1000)
    st.write_group(make_doc("old", state="Dead", members=0), T0)
    st.write_group(make_doc("busy", state="Stable"), T0)
    st.trim(T0 + 5000)
    assert st.get_group("old") is None and st.list_groups()[0] == 1
    assert not [k for k in redis_client.keys("*") if b"{old}" in k]


def test_freshness_and_source_status(redis_client):
    st = RedisStore(redis_client)
    assert st.freshness()["collector"] is None
    st.set_source_status("__consumer_offsets", False, "topic does not exist", T0)
    st.set_source_status("__consumer_offsets", False, "topic does not exist", T0 + 5000)
    st.heartbeat_collector(T0 + 5000, batch_id=4)
    st.write_group(make_doc("g"), T0 + 4000)
    f = st.freshness(["g", "missing"])
    assert f["sources"]["__consumer_offsets"]["since"] == T0
    assert f["sources"]["__consumer_offsets"]["updated"] == T0 + 5000
    assert f["collector"]["batch_id"] == 4
    assert f["groups"] == {"g": T0 + 4000, "missing": None}


def test_dead_letter_keeps_raw_bytes(redis_client):
    st = RedisStore(redis_client)
    st.add_dead_letter({"key": b"\x00\x09abc", "value": b"\x01"}, "__consumer_offsets/0@5", "bad version", T0)
    (dl,) = st.dead_letters()
    assert dl["key"] == "AAlhYmM=" and dl["value"] == "AQ==" and dl["error"] == "bad version"
    assert json.loads(json.dumps(dl)) == dl


def test_lag_points_keep_per_partition_seconds_and_committed_for_the_chart(redis_client):
    """The sink's lag points carry what the dashboard's lag-over-time chart reads per partition (lag,
    lag_seconds, committed) and per member (lag, lag_seconds); rewriting a batch adds nothing; trim
    drops the old points."""
    from collectors.pipeline.sink import write_rows
    from dashboard.pages.group import lag_series

    st = RedisStore(redis_client, retention_ms=10_000)

    def doc(ts: int, committed: int, end: int, secs: float) -> dict:
        d = make_doc("lg", lag=end - committed)
        d["as_of"] = ts
        part = {"topic": "t", "partition": 0, "committed": committed, "end_offset": end}
        d["lag"] = {
            "total": end - committed,
            "max_seconds": secs,
            "partitions": [{**part, "lag": end - committed, "lag_seconds": secs, "member_id": "m1"}],
            "members": [{"member_id": "m1", "lag": end - committed, "lag_seconds": secs}],
        }
        return d

    rows = [
        dict(
            zip(
                ("group", "kind", "ts", "refreshed", "payload"),
                (
                    "lg",
                    "doc",
                    T0 + i * MINUTE,
                    T0 + i * MINUTE,
                    json.dumps(doc(T0 + i * MINUTE, 10 * i, 100, 9.0 - i)),
                ),
                strict=True,
            )
        )
        for i in range(6)
    ]
    write_rows(st, rows)
    before = dump(redis_client)
    write_rows(st, rows)  # a micro-batch replayed after a failure
    assert dump(redis_client) == before
    points = st.get_lag_history("lg")
    assert [p["partitions"]["t:0"]["committed"] for p in points] == [0, 10, 20, 30, 40, 50]
    assert [p["partitions"]["t:0"]["lag_seconds"] for p in points] == [9.0, 8.0, 7.0, 6.0, 5.0, 4.0]
    assert [p["members"]["m1"]["lag_seconds"] for p in points] == [9.0, 8.0, 7.0, 6.0, 5.0, 4.0]
    assert lag_series(points, "committed", "partition")["t:0"][-1] == (T0 + 5 * MINUTE, 50.0)
    assert lag_series(points, "lag_seconds", "partition")["t:0"][0] == (T0, 9.0)
    assert lag_series(points, "lag_seconds", "member")["m1"][2] == (T0 + 2 * MINUTE, 7.0)
    st.trim(T0 + 3 * MINUTE + MINUTE // 2 + 10_000)  # cutoff between points 3 and 4: points 0-3 go
    assert [p["ts"] for p in st.get_lag_history("lg")] == [T0 + 4 * MINUTE, T0 + 5 * MINUTE]


MINUTE = 60_000


@pytest.mark.servers
def test_the_pipeline_keeps_a_minutes_peak_and_newest_lag_point(redis_client):
    """The sink's lag points are thinned to two a minute a group: the minute's peak and its newest
    point; a replayed write changes nothing."""
    st = RedisStore(redis_client)
    t0 = T0 - T0 % MINUTE
    lags = [5, 40, 12, 90, 30, 7]  # one point every 10 s, all in one minute
    for i, lag in enumerate(lags):
        st.write_lag_points("g", t0 + i * 10_000, total=lag, lag_seconds=0.0, slot_ms=MINUTE)
    assert [(p["ts"], p["lag"]) for p in st.get_lag_history("g")] == [(t0 + 30_000, 90), (t0 + 50_000, 7)]
    before = dump(redis_client)
    st.write_lag_points("g", t0 + 50_000, total=7, lag_seconds=0.0, slot_ms=MINUTE)
    st.write_lag_points("g", t0 + 30_000, total=90, lag_seconds=0.0, slot_ms=MINUTE)
    assert dump(redis_client) == before
    st.write_lag_points("g", t0 + MINUTE, total=3, lag_seconds=0.0, slot_ms=MINUTE)  # the next minute
    assert [p["lag"] for p in st.get_lag_history("g")] == [90, 7, 3]


@pytest.mark.servers
def test_touch_refreshed_moves_only_the_refresh_stamps(redis_client):
    st = RedisStore(redis_client)
    st.write_group(make_doc("a"), now_ms=1_000)
    doc_before = st.get_group("a")
    st.touch_refreshed({"a": 9_000, "gone": 9_000})
    assert st.get_row("a")["last_refreshed"] == 9_000
    assert st.freshness(["a"])["groups"] == {"a": 9_000}
    assert st.get_group("a") == doc_before
    assert st.get_row("gone") is None
    # a later document stamped with older evidence (a timer fired) does not move the stamp back
    st.write_group(make_doc("a"), now_ms=5_000)
    assert st.get_row("a")["last_refreshed"] == 9_000
    assert st.freshness(["a"])["groups"] == {"a": 9_000}


@pytest.mark.servers
def test_trim_keeps_totals_only_of_lag_points_past_the_detail_horizon(redis_client):
    from collectors.storage.upkeep import LAG_DETAIL_MS

    st = RedisStore(redis_client)
    st.write_group(make_doc("g"), now_ms=T0 + 4 * MINUTE + LAG_DETAIL_MS)  # trim walks the known groups
    parts = {"t:0": {"lag": 5, "lag_seconds": 1.5, "committed": 10}}
    for i in range(4):
        st.write_lag_points(
            "g", T0 + i * MINUTE, total=5 + i, lag_seconds=1.5, partitions=parts, members={"m": {"lag": 5}}
        )
    st.trim(T0 + 2 * MINUTE + LAG_DETAIL_MS)  # points 0-2 crossed the horizon, point 3 not yet
    points = st.get_lag_history("g")
    assert [p["lag"] for p in points] == [5, 6, 7, 8]
    assert [bool(p["partitions"]) for p in points] == [False, False, False, True]
    assert points[0] == {"ts": T0, "lag": 5, "lag_seconds": 1.5, "partitions": {}, "members": {}}
