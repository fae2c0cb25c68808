"""Real Kafka 4.0 captures through the coordinator model into Redis, judged by the evaluator as the
capture unfolds (documents rebuilt as of each moment, cycles run with --at semantics)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import CAPTURES

from collectors.alerts.evaluate import Evaluator
from collectors.capture import read_capture
from collectors.cli.main import cli
from collectors.storage.alerts import AlertStore
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import parse_alert_config
from coordinator_model.rebuild import rebuild

pytestmark = pytest.mark.servers
MIN = 60_000


def _replay(
    redis_client, scenario: str, step_ms: int = 2_000, extra: tuple[int, ...] = ()
) -> tuple[int, int, list]:
    """Rebuild the capture as of every step, write the documents to Redis and run a cycle as of then.
    Returns (first, last evidence time, [(moment, [(group, rule) active])])."""
    cap = read_capture(CAPTURES / scenario)
    times = [e.ts for e in cap.evidence]
    lo, hi = min(times), max(times)
    store = RedisStore(redis_client)
    ev = Evaluator(redis_client, parse_alert_config(None))
    alerts = AlertStore(redis_client)
    seen = []
    for at in [*range(lo, hi, step_ms), hi, *(hi + e for e in extra)]:
        docs = [eng.document_json(at) for eng in rebuild(cap.evidence, at_ms=at).values()]
        store.write_groups(docs, at)
        ev.run_cycle(at_ms=at)
        seen.append((at, sorted((a["group"], a["rule"]) for a in alerts.active())))
    return lo, hi, seen


def test_rebalance_storm_capture(redis_client) -> None:
    lo, hi, seen = _replay(redis_client, "rebalance-storm", extra=(11 * MIN,))
    group = "storm-060433f"
    within = [(at, active) for at, active in seen if at <= hi]
    # quiet while the three stable members join (t=0..2 s) and before the fifth flap rebalance
    assert all(active == [] for at, active in within if at - lo < 15_000)
    # from then on to the end of the capture: the storm, and nothing else
    storming = [active for at, active in within if at - lo >= 25_000]
    assert storming and all(active == [(group, "rebalance_storm")] for active in storming)
    alerts = AlertStore(redis_client)
    [h] = alerts.history(group=group, rule="rebalance_storm")  # one alert, however many cycles
    assert h["state"] == "resolved"  # ten minutes after the last flap
    assert lo + 10_000 < h["since"] < lo + 25_000 and h["until"] == hi + 11 * MIN
    causes = {g["cause"] for g in h["evidence"]["generations"]}
    assert causes <= {"member_joined", "member_left"} and h["evidence"]["rebalances"] >= 20
    flappers = {
        m.split("-")[0] for g in h["evidence"]["generations"] for m in g["members_joined"] + g["members_left"]
    }
    assert flappers and all(f.startswith("f") for f in flappers)  # the stable members s1..s3 are not blamed
    assert not alerts.history(rule="member_flapping")  # each flap is a new client: a storm, not a flapper


def test_poll_timeout_capture(redis_client) -> None:
    lo, hi, seen = _replay(redis_client, "poll-timeout", extra=(11 * MIN,))
    group = "polltimeout-060433e"
    # p2 stops polling at t=20 s; librdkafka leaves the group ~10 s later: generation 4
    for at, active in seen:
        if at - lo < 29_000:
            assert active == [], (at - lo, active)
        elif at - lo >= 32_000 and at <= hi:
            assert active == [(group, "member_lost")], (at - lo, active)
    [h] = AlertStore(redis_client).history(group=group, rule="member_lost")
    assert h["evidence"]["causes"] == {"poll_timeout": 1}
    [g] = h["evidence"]["generations"]
    assert g["generation"] == 4 and g["members_left"][0].startswith("p2-")
    assert h["state"] == "resolved" and h["until"] == hi + 11 * MIN
    assert not AlertStore(redis_client).history(
        rule="rebalance_storm"
    )  # joins, a rejoin and leaves: no storm


@pytest.mark.parametrize("scenario", ["classic-roundrobin-seed", "mixed-protocols", "lag-ramp"])
def test_steady_groups_raise_nothing(redis_client, scenario: str) -> None:
    _, _, seen = _replay(redis_client, scenario, step_ms=5_000)
    assert all(active == [] for _, active in seen)
    assert AlertStore(redis_client).history() == []


def test_cli_evaluate_at_over_a_replayed_capture(redis_client, redis_server) -> None:
    """The documents written once (the capture's end), judged at past moments through the CLI."""
    cap = read_capture(CAPTURES / "poll-timeout")
    lo = min(e.ts for e in cap.evidence)
    hi = max(e.ts for e in cap.evidence)
    RedisStore(redis_client).write_groups(
        [eng.document_json(hi) for eng in rebuild(cap.evidence).values()], hi
    )
    runner = CliRunner()
    for at, fired in ((lo + 20_000, 0), (lo + 40_000, 1), (lo + 50_000, 0)):
        res = runner.invoke(
            cli, ["alerts", "evaluate", "--redis", redis_server.url, "--at", str(at), "--json"]
        )
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["cycle"]["fired"] == fired, at - lo
    out = json.loads(runner.invoke(cli, ["alerts", "list", "--redis", redis_server.url, "--json"]).output)
    assert [(a["group"], a["rule"], a["state"]) for a in out["active"]] == [
        ("polltimeout-060433e", "member_lost", "firing")
    ]


def test_static_member_restart_is_quiet_but_its_expiry_is_not(redis_client) -> None:
    """static-membership: s2 restarts within its session timeout at t=25..28 (no rebalance, no
    alert); s3 stays down 25 s and is expired at ~t=55 (member_lost)."""
    lo, _, seen = _replay(redis_client, "static-membership", step_ms=3_000)
    group = "static-060433d"
    assert all(active == [] for at, active in seen if at - lo < 54_000)
    assert all(active == [(group, "member_lost")] for at, active in seen if 60_000 <= at - lo <= 90_000)
    [h] = AlertStore(redis_client).history(group=group)
    assert h["rule"] == "member_lost" and h["evidence"]["generations"][0]["members_left"][0].startswith(
        "inst-3-"
    )
