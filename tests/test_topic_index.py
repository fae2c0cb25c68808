"""The topic index the sink keeps beside the group documents (collectors/storage/topics.py), against
the harness's real redis-server: a document cut by topic, the aggregates the Lua script keeps, paging
and filtering like Python would, groups leaving topics, deletion and trimming."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from browser.dashboard_fill import CAPTURES, model_docs

from collectors.cli.main import cli
from collectors.pipeline.sink import write_rows
from collectors.storage.redis_store import RedisStore
from collectors.storage.topics import TopicIndex, cut_by_topic
from coordinator_model.document import GroupDocument

pytestmark = pytest.mark.servers

T0 = 1_700_000_000_000


def doc(
    name: str,
    parts: dict[tuple[str, int], tuple[int, float]],
    state: str = "Stable",
    owners: dict[tuple[str, int], str] | None = None,
    as_of: int = T0,
) -> dict:
    """A group document with lag rows `(topic, partition) -> (lag, lag seconds)`, end offset 1000 +
    partition each, and members owning partitions as `owners` says."""
    owners = owners or {}
    members: dict[str, list] = {}
    for tp, m in owners.items():
        members.setdefault(m, []).append(list(tp))
    known = [lag for lag, _ in parts.values()]
    raw = {
        "group": name,
        "type": "classic",
        "state": state,
        "as_of": as_of,
        "members": [
            {"member_id": m, "client_id": f"client-{m}", "assignment": a} for m, a in members.items()
        ],
        "offsets": [
            {"topic": t, "partition": p, "offset": 1000 + p - lag} for (t, p), (lag, _) in parts.items()
        ],
        "timeline": [{"state": state, "start": T0, "end": None}],
        "generations": [],
        "lag": {
            "partitions": [
                {
                    "topic": t,
                    "partition": p,
                    "committed": 1000 + p - lag,
                    "end_offset": 1000 + p,
                    "lag": lag,
                    "lag_seconds": secs,
                    "member_id": owners.get((t, p)),
                }
                for (t, p), (lag, secs) in parts.items()
            ],
            "total": sum(known) if known else None,
            "max_seconds": max((secs for _, secs in parts.values()), default=None),
        },
    }
    return GroupDocument.from_json(raw).to_json()  # in the shape the engine writes


def test_a_document_cut_by_topic() -> None:
    d = doc(
        "g",
        {("orders", 0): (5, 1.5), ("orders", 3): (0, 0.0), ("audit", 0): (2, 9.0)},
        owners={("orders", 0): "m1", ("orders", 3): "m2", ("audit", 0): "m1", ("audit", 1): "m2"},
    )
    cut = cut_by_topic(GroupDocument.from_json(d))
    assert set(cut) == {"orders", "audit"}
    o = cut["orders"].row
    assert (o.lag, o.lag_seconds, o.partitions, o.topic_partitions) == (5, 1.5, 2, 4)
    assert (
        o.end_offsets == 1000 + 1003 and o.members == ["m1", "m2"] and o.clients == ["client-m1", "client-m2"]
    )
    # a partition a member owns with no commit yet is in the heatmap, with nothing known
    assert cut["audit"].partitions == [[0, 998, 1000, 2, 9.0, "m1"], [1, None, None, None, None, "m2"]]


def test_topics_are_aggregated_paged_and_read_back(redis_client) -> None:
    s = RedisStore(redis_client)
    s.write_groups(
        [
            doc("a", {("orders", 0): (10, 3.0), ("orders", 1): (5, 1.0)}),
            doc("b", {("orders", 0): (100, 0.5), ("audit", 2): (1, 60.0)}, state="PreparingRebalance"),
            doc("c", {("payments", 0): (0, 0.0)}),
        ],
        T0,
    )
    total, rows = s.topics.list_topics()
    assert total == 3 and [r.name for r in rows] == ["audit", "orders", "payments"]
    by = {r.name: r for r in rows}
    assert (by["orders"].groups, by["orders"].lag, by["orders"].lag_seconds) == (2, 100, 3.0)
    assert by["orders"].partitions == 2 and by["orders"].rebalancing == 1 and by["payments"].rebalancing == 0
    assert [r.name for r in s.topics.list_topics("lag_seconds", descending=True)[1]] == [
        "audit",
        "orders",
        "payments",
    ]
    assert [r.name for r in s.topics.list_topics("groups", descending=True, limit=1)[1]] == ["orders"]
    assert s.topics.list_topics(name_contains="AY")[0] == 1
    view = s.topics.get_topic("orders")
    assert view is not None
    assert [g["group"] for g in view.groups] == ["a", "b"]  # worst lag in seconds first
    assert view.partitions["b"] == [[0, 900, 1000, 100, 0.5, None]]
    assert s.topics.get_topic("nope") is None
    assert s.topics.counts() == {"total": 3, "rebalancing": 2, "lagging": 2}


def test_a_group_that_leaves_a_topic_or_is_deleted_leaves_its_rows(redis_client) -> None:
    s = RedisStore(redis_client)
    s.write_groups([doc("a", {("orders", 0): (10, 3.0)}), doc("b", {("orders", 0): (1, 0.1)})], T0)
    s.write_groups([doc("a", {("audit", 0): (0, 0.0)}, as_of=T0 + 60_000)], T0 + 60_000)
    view = s.topics.get_topic("orders")
    assert view is not None and [g["group"] for g in view.groups] == ["b"] and view.row.lag == 1
    s.delete_group("b")
    assert s.topics.get_topic("orders") is None
    assert [r.name for r in s.topics.list_topics()[1]] == ["audit"]
    # a topic no group reads keeps nothing: rows, partitions, lag history, index entries
    assert not [k for k in redis_client.keys("gs:topic:{orders}:*")]
    assert all(redis_client.zscore(f"gs:tidx:{k}", "orders") is None for k in ("name", "lag", "groups"))


def test_lag_history_comes_from_the_groups_own_points(redis_client) -> None:
    """The sink writes each group's lag point per partition; the topic's history sums the topic's
    partitions per point, over the last span of what is known, thinned to at most max_points."""
    s = RedisStore(redis_client)
    for i in range(50):
        at = T0 + i * 60_000  # the sink keeps a minute's peak and newest point
        d = doc(
            "a", {("orders", 0): (i, float(i)), ("orders", 1): (1, 0.5), ("audit", 0): (100, 9.0)}, as_of=at
        )
        b = doc("b", {("audit", 0): (7, 1.0)}, as_of=at)
        write_rows(s, [_row(d, at), _row(b, at)])
    hist = s.topics.lag_history("orders", ["a", "b", "nobody"], span_ms=600_000)
    assert set(hist) == {"a"}  # b reads no partition of orders; nobody has no history
    assert [t for t, _, _ in hist["a"]] == [T0 + i * 60_000 for i in range(39, 50)]
    assert hist["a"][-1] == (T0 + 49 * 60_000, 49 + 1, 49.0)
    thin = s.topics.lag_history("orders", ["a"], span_ms=3_600_000, max_points=10)["a"]
    assert len(thin) == 10 and thin[-1][0] == T0 + 49 * 60_000 and thin[0][0] < T0 + 10 * 60_000
    assert s.topics.lag_history("orders", [], span_ms=1000) == {}


def _row(d: dict, at: int) -> dict:
    """A model-stage output row of a document, as the sink receives it."""
    return {"group": d["group"], "kind": "doc", "ts": at, "refreshed": at, "payload": json.dumps(d)}


def test_two_writers_of_one_topic_leave_an_aggregate_with_both(redis_client) -> None:
    """Two sink tasks write groups of one topic; each flushes after its own writes: whatever the
    interleaving, the last aggregate counts every group."""
    one, two = RedisStore(redis_client), RedisStore(redis_client)
    p1, p2 = one.pipeline(), two.pipeline()
    one.write_many([(doc("a", {("orders", 0): (1, 1.0)}), T0, T0)], pipe=p1)
    two.write_many([(doc("b", {("orders", 1): (7, 2.0)}), T0, T0)], pipe=p2)
    p1.execute()
    one.topics.flush()  # sees only a
    p2.execute()
    two.topics.flush()
    row = one.topics.list_topics()[1][0]
    assert (row.groups, row.lag, row.partitions) == (2, 7, 2)


TOPICS = ["orders", "audit", "payments", "t.with-dots_and-dash"]


@st.composite
def fleets(draw: st.DrawFn) -> list[dict]:
    out = []
    for g in range(draw(st.integers(1, 8))):
        parts = draw(
            st.dictionaries(
                st.tuples(st.sampled_from(TOPICS), st.integers(0, 5)),
                st.tuples(st.integers(0, 10**12), st.floats(0, 1e5, allow_nan=False)),
                max_size=6,
            )
        )
        state = draw(st.sampled_from(["Stable", "Empty", "PreparingRebalance", "Reconciling"]))
        out.append(doc(f"g{g}", parts, state=state))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=fleets(), second=fleets(), seed=st.integers(0, 1000))
def test_aggregates_equal_pythons_after_any_rewrites(redis_client, first, second, seed) -> None:
    """Write one fleet, then a second one over it (groups change topics, some are deleted): every
    topic row equals the aggregate Python computes from the documents that stand."""
    redis_client.flushdb()
    s = RedisStore(redis_client)
    s.write_groups(first, T0)
    s.write_groups(second, T0 + 1)
    standing = {d["group"]: d for d in first} | {d["group"]: d for d in second}
    for name in random.Random(seed).sample(sorted(standing), k=len(standing) // 3):
        s.delete_group(name)
        del standing[name]
    want: dict[str, dict] = {}
    for d in standing.values():
        for topic, cut in cut_by_topic(GroupDocument.from_json(d)).items():
            w = want.setdefault(topic, {"groups": 0, "lag": 0, "secs": 0.0, "parts": 0, "reb": 0})
            w["groups"] += 1
            w["lag"] = max(w["lag"], cut.row.lag)
            w["secs"] = max(w["secs"], cut.row.lag_seconds)
            w["parts"] = max(w["parts"], cut.row.topic_partitions)
            w["reb"] += cut.row.rebalancing
    total, rows = s.topics.list_topics(limit=100)
    assert total == len(want)
    for r in rows:
        w = want[r.name]
        assert (r.groups, r.lag, r.partitions, r.rebalancing) == (w["groups"], w["lag"], w["parts"], w["reb"])
        assert r.lag_seconds == pytest.approx(w["secs"], abs=1e-3)
    by_lag = [r.lag for r in s.topics.list_topics("lag", descending=True, limit=100)[1]]
    assert by_lag == sorted((w["lag"] for w in want.values()), reverse=True)


def test_index_keys_names(redis_client) -> None:
    ix = TopicIndex(redis_client, "gs", None, None)
    assert ix.tk("orders", "groups") == "gs:topic:{orders}:groups"  # a Redis Cluster hash tag per topic


def test_cli_topics_and_topic_over_real_captures(redis_client, redis_server) -> None:
    """Every capture's documents written as the collector writes them; `groupscope topics --json`
    and `groupscope topic NAME --json` print what the documents say, cut by topic."""
    docs = [
        d
        for cap in ("lag-ramp", "classic-range-lifecycle", "kip848-lifecycle")
        for d in model_docs(CAPTURES / cap)
    ]
    RedisStore(redis_client).write_groups(docs, T0)
    want: dict[str, set[str]] = {}
    for d in docs:
        for topic in cut_by_topic(GroupDocument.from_json(d)):
            want.setdefault(topic, set()).add(d["group"])
    assert want, "the captures' groups read topics"
    runner = CliRunner()
    res = runner.invoke(cli, ["topics", "--redis", redis_server.url, "--json", "--sort", "lag", "--desc"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["total"] == len(want) and {t["name"] for t in out["topics"]} == set(want)
    lags = [t["lag"] for t in out["topics"]]
    assert lags == sorted(lags, reverse=True)
    worst = out["topics"][0]
    res = runner.invoke(cli, ["topic", worst["name"], "--redis", redis_server.url, "--json"])
    assert res.exit_code == 0, res.output
    view = json.loads(res.output)
    assert {g["group"] for g in view["groups"]} == want[worst["name"]]
    assert max(g["lag"] for g in view["groups"]) == worst["lag"]
    # the table form names every group; an unknown topic is one clear error
    text = runner.invoke(cli, ["topic", worst["name"], "--redis", redis_server.url]).output
    assert all(g in text for g in want[worst["name"]])
    miss = runner.invoke(cli, ["topic", "no-such-topic", "--redis", redis_server.url])
    assert miss.exit_code != 0 and "no group reads topic 'no-such-topic'" in miss.output
    table = runner.invoke(cli, ["topics", "--redis", redis_server.url]).output
    assert all(t in table for t in want)


def test_groups_written_before_the_index_are_backfilled_once(redis_client) -> None:
    s = RedisStore(redis_client)
    s.write_groups([doc("a", {("orders", 0): (3, 1.0)}), doc("b", {("audit", 1): (5, 2.0)})], T0)
    # what a store of before the topic index leaves: documents and fleet rows, no topic keys
    for k in redis_client.keys("gs:topic*") + redis_client.keys("gs:tidx:*") + ["gs:fleet:topics"]:
        redis_client.delete(k)
    assert s.topics.list_topics()[0] == 0
    assert s.backfill_topics(batch=1) == 2
    total, rows = s.topics.list_topics()
    assert total == 2 and {(r.name, r.lag) for r in rows} == {("orders", 3), ("audit", 5)}
    assert s.backfill_topics() == 0  # nothing left to do
