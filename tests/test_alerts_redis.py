"""The evaluator and alert store against the real Redis of the harness: lifecycle, idempotence,
incremental cycles, --at replays, the CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import CAPTURES
from test_alert_docs import MIN, T0, S, doc, gen, mid, part, steady_doc, storm_doc

from collectors.alerts.evaluate import Evaluator, lag_from_point
from collectors.capture import read_capture
from collectors.cli.main import cli
from collectors.storage.alerts import AlertStore
from collectors.storage.redis_store import RedisStore
from collectors.storage.store_keys import SUMMARY_KEYS
from coordinator_model.alert_rules import parse_alert_config
from coordinator_model.document.types import GroupDocument
from coordinator_model.rebuild import rebuild

pytestmark = pytest.mark.servers


def _ev(client) -> Evaluator:
    return Evaluator(client, parse_alert_config(None))


def test_storm_fires_once_updates_and_resolves(redis_client) -> None:
    store = RedisStore(redis_client)
    d, end = storm_doc("storm-a")
    store.write_group(d, end)
    store.write_group(steady_doc("calm"), end)
    ev = _ev(redis_client)
    r1 = ev.run_cycle(now_ms=T0 + 25 * S)
    assert (r1.evaluated, r1.fired, r1.resolved) == (2, 1, 0)
    assert [t.event for t in r1.transitions] == ["firing"]
    alerts = AlertStore(redis_client)
    [a] = alerts.active()
    assert (a["group"], a["rule"], a["state"], a["since"]) == (
        "storm-a",
        "rebalance_storm",
        "firing",
        T0 + 16 * S,
    )
    assert a["evidence"]["generations"][0]["generation"] == 4
    # the same cycle again: nothing new, no duplicate in the history
    r2 = ev.run_cycle(now_ms=T0 + 25 * S, full=True)
    assert (r2.fired, r2.resolved) == (0, 0)
    assert len(alerts.history()) == 1 and len(alerts.active()) == 1
    # later, still storming: the alert is updated in place (more rebalances in its evidence)
    ev.run_cycle(now_ms=T0 + 60 * S)
    [a2] = alerts.active()
    assert a2["id"] == a["id"] and a2["evidence"]["rebalances"] > a["evidence"]["rebalances"]
    # ten minutes after the last flap: resolved with no new data, because the rule asked for a recheck
    r3 = ev.run_cycle(now_ms=end + 10 * MIN + 5 * S)
    assert r3.resolved == 1 and r3.evaluated == 1
    assert alerts.active() == []
    [h] = alerts.history()
    assert h["state"] == "resolved" and h["until"] == end + 10 * MIN + 5 * S and h["since"] == a["since"]
    assert alerts.history(group="storm-a", rule="rebalance_storm", state="resolved") == [h]
    assert alerts.history(group="calm") == [] and alerts.history(state="firing") == []


def test_only_changed_or_due_groups_are_reread(redis_client) -> None:
    store = RedisStore(redis_client)
    for i in range(50):
        store.write_group(steady_doc(f"g{i:02d}"), T0 + MIN)
    ev = _ev(redis_client)
    assert ev.run_cycle(now_ms=T0 + 2 * MIN).evaluated == 50
    assert ev.run_cycle(now_ms=T0 + 2 * MIN + 5 * S).evaluated == 0
    # the collector rewrites one group: only that one is judged again
    lagging = steady_doc("g07", lag=[part("t", 0, 5000, 300.0, "STOP")])
    store.write_group(lagging, T0 + 3 * MIN)
    r = ev.run_cycle(now_ms=T0 + 3 * MIN)
    assert (r.evaluated, r.fired) == (1, 1)
    assert AlertStore(redis_client).active(group="g07")[0]["rule"] == "lag"
    assert AlertStore(redis_client).active(group="g07")[0]["severity"] == "critical"
    # consumed back to the end: resolved
    store.write_group(steady_doc("g07", lag=[part("t", 0, 0, 0.0, "OK")]), T0 + 4 * MIN)
    r = ev.run_cycle(now_ms=T0 + 4 * MIN)
    assert (r.evaluated, r.resolved) == (1, 1)


def test_time_alone_fires_a_pending_condition(redis_client) -> None:
    """An Empty group alerts after for_s with no new data: the recheck time brings it back."""
    store = RedisStore(redis_client)
    tl = [("Stable", T0, T0 + MIN), ("Empty", T0 + MIN, None)]
    lag = [part("t", 0, 900, 50.0, "STOP")]
    store.write_group(doc("stopped", [gen(1, T0, "group_created", [mid("a")])], tl, lag, "Empty"), T0 + MIN)
    ev = _ev(redis_client)
    assert ev.run_cycle(now_ms=T0 + MIN + 10 * S).fired == 0
    assert ev.run_cycle(now_ms=T0 + MIN + 30 * S).evaluated == 0  # not due yet: not re-read
    r = ev.run_cycle(now_ms=T0 + 2 * MIN + S)
    assert (r.evaluated, r.fired) == (1, 1)
    assert AlertStore(redis_client).active()[0]["rule"] == "group_empty"


def test_removed_group_resolves_its_alerts(redis_client) -> None:
    store = RedisStore(redis_client)
    store.write_group(steady_doc("doomed", lag=[part("t", 0, 5000, 300.0, "STOP")]), T0)
    ev = _ev(redis_client)
    assert ev.run_cycle(now_ms=T0).fired == 1
    store.delete_group("doomed")
    r = ev.run_cycle(now_ms=T0 + MIN)
    assert r.resolved == 1
    assert AlertStore(redis_client).history()[0]["evidence"]["resolved_because"] == "group no longer in Redis"


def test_at_replays_lag_history(redis_client) -> None:
    """As of a past moment the lag comes from the lag history point in force then."""
    store = RedisStore(redis_client)
    d = steady_doc("replayed", lag=[part("t", 0, 0, 0.0, "OK")])
    store.write_group(d, T0 + 10 * MIN)
    store.write_lag_points("replayed", T0 + 2 * MIN, total=8000, lag_seconds=400.0, partitions={"t:0": 8000})
    store.write_lag_points("replayed", T0 + 5 * MIN, total=0, lag_seconds=0.0, partitions={"t:0": 0})
    ev = _ev(redis_client)
    r = ev.run_cycle(at_ms=T0 + 3 * MIN)
    assert r.fired == 1
    [a] = AlertStore(redis_client).active()
    assert a["evidence"]["partitions"][0]["lag"] == 8000
    r = ev.run_cycle(at_ms=T0 + 6 * MIN)
    assert r.resolved == 1
    # replaying a moment already judged does not resurrect the episode it ended
    assert ev.run_cycle(at_ms=T0 + 3 * MIN).fired == 0
    [h] = AlertStore(redis_client).history()
    assert (h["state"], h["until"]) == ("resolved", T0 + 6 * MIN)


@pytest.mark.parametrize("summaries", [True, False])
@pytest.mark.parametrize("value", [b'{"members": []}', b"not json", b'{"group": "storm-b", "members": [{}]}'])
def test_a_value_that_is_not_a_document_is_counted_and_leaves_alerts_alone(
    redis_client, summaries: bool, value: bytes
) -> None:
    store = RedisStore(redis_client)
    d, end = storm_doc("storm-b")
    store.write_group(d, end)
    ev = Evaluator(redis_client, parse_alert_config(None), summaries=summaries)
    assert ev.run_cycle(now_ms=T0 + 25 * S).fired == 1
    # the document is replaced by something else, the group stamped again: not judged, not resolved
    redis_client.set(store.group_key("storm-b", "doc"), value)
    for what in SUMMARY_KEYS:  # (its summaries would be judged instead of the value)
        redis_client.hdel(store.summary_key(what), "storm-b")
    redis_client.hset(store.key_of("refreshed"), "storm-b", str(end + 1))
    r = ev.run_cycle(now_ms=T0 + 30 * S)
    assert (r.bad_documents, r.evaluated, r.resolved) == (1, 0, 0)
    assert [a["group"] for a in AlertStore(redis_client).active()] == ["storm-b"]


def test_lag_from_point_shapes() -> None:
    point = {
        "ts": 5,
        "lag": 10,
        "lag_seconds": 9.5,
        "partitions": {
            "a:b:0": {"lag": 3, "lag_seconds": 1.0, "committed": 40},
            "a:b:1": {"lag": 7, "lag_seconds": 9.5, "committed": None},
        },
    }
    lag = lag_from_point(point)
    assert (lag.total, lag.max_seconds) == (10, 9.5)
    rows = {(r.topic, r.partition): r for r in lag.partitions}
    assert set(rows) == {("a:b", 0), ("a:b", 1)}
    assert (rows[("a:b", 0)].committed, rows[("a:b", 0)].has_commit, rows[("a:b", 0)].lag_seconds) == (
        40,
        True,
        1.0,
    )
    assert (rows[("a:b", 1)].has_commit, rows[("a:b", 1)].status) == (False, None)
    # the older shape: a bare lag per partition, the group's worst seconds on the largest
    older = lag_from_point({"ts": 5, "lag_seconds": 9.5, "partitions": {"a:b:0": 3, "a:b:1": 7}})
    rows = {(r.topic, r.partition): r for r in older.partitions}
    assert rows[("a:b", 1)].lag_seconds == 9.5 and rows[("a:b", 0)].lag_seconds is None
    assert rows[("a:b", 0)].lag == 3


def test_cli_evaluate_and_list(redis_client, redis_server) -> None:
    store = RedisStore(redis_client)
    d, end = storm_doc("cli-storm")
    store.write_group(d, end)
    store.write_group(steady_doc("cli-calm"), end)
    runner = CliRunner()
    res = runner.invoke(
        cli, ["alerts", "evaluate", "--redis", redis_server.url, "--at", str(T0 + 30 * S), "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["cycle"]["fired"] == 1 and out["transitions"][0]["alert"]["rule"] == "rebalance_storm"
    res = runner.invoke(cli, ["alerts", "list", "--redis", redis_server.url, "--json"])
    assert res.exit_code == 0, res.output
    listing = json.loads(res.output)
    assert set(listing) == {"active", "history"}
    [a] = listing["active"]
    for key in ("group", "rule", "state", "since", "until", "evidence"):
        assert key in a
    assert (a["group"], a["rule"], a["state"], a["until"]) == ("cli-storm", "rebalance_storm", "firing", None)
    res = runner.invoke(cli, ["alerts", "evaluate", "--redis", redis_server.url, "--at", str(end + 11 * MIN)])
    assert res.exit_code == 0 and "1 resolved" in res.output
    listing = json.loads(runner.invoke(cli, ["alerts", "list", "--redis", redis_server.url, "--json"]).output)
    assert listing["active"] == [] and listing["history"][0]["state"] == "resolved"
    text = runner.invoke(cli, ["alerts", "list", "--redis", redis_server.url]).output
    assert "cli-storm" in text and "resolved" in text


def test_cli_bad_inputs(redis_server, tmp_path) -> None:
    runner = CliRunner()
    bad = tmp_path / "alerts.yaml"
    bad.write_text("rules:\n  storm: {}\n")
    res = runner.invoke(
        cli, ["alerts", "evaluate", "--redis", redis_server.url], env={"GROUPSCOPE_ALERTS_FILE": str(bad)}
    )
    assert res.exit_code == 2 and "unknown rule 'storm'" in res.output
    res = runner.invoke(cli, ["alerts", "list", "--redis", "redis://127.0.0.1:1/0"])
    assert res.exit_code == 1 and "cannot read alerts" in res.output


def test_lag_refresh_of_a_healthy_group_is_not_reread(redis_client) -> None:
    """A refresh that only moves a small lag cannot change a verdict: the document is not read. A
    refined cause of the current generation, a new generation or a real lag is."""
    store = RedisStore(redis_client)
    m = mid("p2")
    gens = [gen(1, T0, "group_created", [mid("p1"), m]), gen(2, T0 + MIN, "unknown", left=[m])]
    healthy = doc("h", gens, [("Stable", T0, None)], lag=[part("t", 0, 40, 2.0, "OK")])
    store.write_group(healthy, T0 + 2 * MIN)
    ev = _ev(redis_client)
    assert ev.run_cycle(now_ms=T0 + 2 * MIN).evaluated == 1
    healthy["lag"]["partitions"] = [part("t", 0, 55, 3.0, "OK")]
    store.write_group(healthy, T0 + 2 * MIN + 5 * S)
    r = ev.run_cycle(now_ms=T0 + 2 * MIN + 5 * S)
    assert (r.evaluated, r.skipped_quiet) == (0, 1)
    # the collector learns the cause of generation 2 later: same generation, new verdict
    healthy["generations"][1]["cause"] = "session_timeout"
    store.write_group(healthy, T0 + 2 * MIN + 10 * S)
    r = ev.run_cycle(now_ms=T0 + 2 * MIN + 10 * S)
    assert (r.evaluated, r.fired) == (1, 1)
    assert AlertStore(redis_client).active()[0]["rule"] == "member_lost"
    # lag beyond the seconds threshold is always read
    other = steady_doc("o", lag=[part("t", 0, 40, 2.0, "OK")])
    store.write_group(other, T0 + 3 * MIN)
    ev.run_cycle(now_ms=T0 + 3 * MIN)
    other["lag"]["partitions"] = [part("t", 0, 900, 120.0, "ERR")]
    store.write_group(other, T0 + 4 * MIN)
    r = ev.run_cycle(now_ms=T0 + 4 * MIN)
    assert (r.evaluated, r.skipped_quiet, r.fired) == (1, 0, 1)


def test_document_signature_matches_the_one_read_from_redis(redis_client) -> None:
    """The evaluator signs a document it judged, and later compares with a signature read from the
    fleet row and the generation row the pipeline's store derived from that same document."""
    store = RedisStore(redis_client)
    ev = _ev(redis_client)
    for scenario in ("static-membership", "kip848-lifecycle", "standalone-and-admin"):
        docs = [eng.document_json() for eng in rebuild(read_capture(CAPTURES / scenario).evidence).values()]
        store.write_groups(docs, T0)
        names = [d["group"] for d in docs]
        sigs, _ = ev._signatures(names)
        stored = [GroupDocument.from_json(json.loads(json.dumps(d))) for d in docs]
        assert sigs == [ev._doc_signature(d) for d in stored], scenario


def test_overlapping_cycles_skip(redis_client, redis_server) -> None:
    store = RedisStore(redis_client)
    store.write_group(steady_doc("x", lag=[part("t", 0, 5000, 300.0, "STOP")]), T0)
    alerts = AlertStore(redis_client)
    assert alerts.acquire_lock(10_000, "other-worker")
    r = _ev(redis_client).run_cycle(now_ms=T0)
    assert r.skipped_locked and r.evaluated == 0 and alerts.active() == []
    res = CliRunner().invoke(cli, ["alerts", "evaluate", "--redis", redis_server.url])
    assert res.exit_code == 1 and "another evaluation cycle is running" in res.output
    alerts.release_lock("not-the-holder")  # only the holder releases
    assert _ev(redis_client).run_cycle(now_ms=T0).skipped_locked
    alerts.release_lock("other-worker")
    assert _ev(redis_client).run_cycle(now_ms=T0).fired == 1


def test_history_older_than_the_retention_is_trimmed(redis_client) -> None:
    store = RedisStore(redis_client)
    store.write_group(steady_doc("old", lag=[part("t", 0, 5000, 300.0, "STOP")]), T0)
    ev = Evaluator(redis_client, parse_alert_config(None), history_retention_ms=60 * MIN)
    assert ev.run_cycle(now_ms=T0).fired == 1
    store.write_group(steady_doc("old", lag=[part("t", 0, 0, 0.0, "OK")]), T0 + MIN)
    assert ev.run_cycle(now_ms=T0 + MIN).resolved == 1
    alerts = AlertStore(redis_client)
    assert len(alerts.history()) == 1
    redis_client.delete(alerts.key_of("trimmed"))  # the ten-minute pacing, skipped for the test
    store.write_group(steady_doc("old", lag=[part("t", 0, 0, 0.0, "OK")]), T0 + 2 * 60 * MIN)
    r = ev.run_cycle(now_ms=T0 + 2 * 60 * MIN)
    assert r.trimmed == 1 and alerts.history() == [] and alerts.history(group="old") == []
