"""One definition of "in a rebalance storm", "flapping" and "lagging" (coordinator_model/statuses.py):
the fleet page, the metrics, the CLI and the group page count and show exactly the groups the alerts
raise those alerts for, on the same data at the same moment, in the harness's real Redis."""

from __future__ import annotations

import json
import math
import os
import time

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from test_alert_docs import MIN, S, doc, gen, mid, part, steady_doc, storm_doc

from collectors.alerts.cluster_cycle import ClusterEvaluator
from collectors.alerts.fleet_statuses import read_statuses
from collectors.alerts.summary_rules import PackedView
from collectors.cli.main import cli
from collectors.exporter.scrape import MetricsSource
from collectors.storage.alerts import AlertStore
from collectors.storage.clusters import ClusterRegistry, cluster_prefix
from collectors.storage.redis_store import RedisStore
from collectors.storage.summaries import RULES_VERSION, lag_rows, summarize
from coordinator_model.alert_rules import parse_alert_config
from coordinator_model.alert_rules.lag_rules import lag
from coordinator_model.document.types import GroupDocument, LagDoc, PartitionLag
from coordinator_model.document.view import GroupView
from coordinator_model.statuses import STATUS_RULES, STATUSES, definitions, group_statuses
from dashboard.data import DashboardData
from dashboard.pages.group import header

H = 60 * MIN


def scripted_deploy(group: str, now: int) -> dict:
    """A scale-out of eleven members 10 s apart, then a rolling restart of each (leave, rejoin 5 s
    later): 33 rebalances in the last ten minutes, every one explained. The fleet's old count
    (10 rebalances an hour) called this a storm; the alert rule never did."""
    t = now - 9 * MIN
    gens = [gen(1, now - 30 * MIN, "group_created", [mid("c00")], members=1)]
    n = 2
    ids = {}
    for i in range(1, 12):
        ids[i] = mid(f"c{i:02d}")
        gens.append(gen(n, t, "member_joined", [ids[i]], members=i + 1))
        n, t = n + 1, t + 10 * S
    for i in range(1, 12):
        gens.append(gen(n, t, "member_left", left=[ids[i]], members=11))
        gens.append(gen(n + 1, t + 5 * S, "member_joined", [mid(f"c{i:02d}")], members=12))
        n, t = n + 2, t + 15 * S
    return doc(
        group, gens, [("Empty", now - 30 * MIN - 10, now - 30 * MIN), ("Stable", now - 30 * MIN, None)]
    )


def flapping_only(group: str, now: int) -> dict:
    """One client joins three times, leaving in between, staying a minute each time: flapping
    (member_flapping), two unexplained rebalances only (no storm)."""
    a, b, c = mid("flappy"), mid("flappy"), mid("flappy")
    t = now - 8 * MIN
    gens = [
        gen(1, now - 40 * MIN, "group_created", [mid("base")], members=1),
        gen(2, t, "member_joined", [a], members=2),
        gen(3, t + MIN, "member_left", left=[a], members=1),
        gen(4, t + 2 * MIN, "member_joined", [b], members=2),
        gen(5, t + 3 * MIN, "member_left", left=[b], members=1),
        gen(6, t + 4 * MIN, "member_joined", [c], members=2),
    ]
    return doc(group, gens, [("Stable", now - 40 * MIN, None)])


CONFIG = {"clusters": {"prod": {"rules": {"rebalance_storm": {"count": 100}}}}}


def _fill(client, now: int) -> dict[str, set[str]]:
    """Groups in `default` and in `prod` (whose storm needs 100 rebalances); returns what each
    cluster's alerts must be, by status."""
    ClusterRegistry(client).register("prod", "p:9092", now_ms=now)
    default = RedisStore(client)
    prod = RedisStore(client, prefix=cluster_prefix("prod"))
    old = RedisStore(client, summaries=False)  # a collector without summaries: judged from documents
    storm_a, _ = storm_doc("storm-a", t0=now - 100 * S)
    storm_b, _ = storm_doc("storm-b", flaps=30, t0=now - 4 * MIN)
    storm_c, _ = storm_doc("storm-no-summaries", t0=now - 2 * MIN)
    past, end = storm_doc("stormed-3h-ago", t0=now - 3 * H)
    default.write_groups([storm_a, storm_b], now)
    old.write_groups([storm_c], now)
    # written when it stormed: its fleet row still says 43 rebalances in the hour
    default.write_group(past, now, as_of_ms=end)
    default.write_groups(
        [
            scripted_deploy("deploy", now),
            flapping_only("flappy", now),
            steady_doc("calm", t0=now - H),
            steady_doc("behind", t0=now - H, lag=[part("t", 0, 5000, 300.0, "STOP"), part("t", 1, 0, 0.0)]),
            steady_doc("a-little-behind", t0=now - H, lag=[part("t", 0, 5, 30.0, "WARN")]),
            steady_doc("ok-but-slow", t0=now - H, lag=[part("t", 0, 900, 900.0, "OK")]),
        ],
        now,
    )
    old.write_group(steady_doc("behind-no-summaries", t0=now - H, lag=[part("t", 0, 80, 90.0, "ERR")]), now)
    prod_storm, _ = storm_doc("storm-a", t0=now - 100 * S)
    prod.write_groups([prod_storm, scripted_deploy("deploy", now)], now)
    return {
        "default": {
            "storm": {"storm-a", "storm-b", "storm-no-summaries"},
            "flapping": {"flappy"},  # a storm's flappers are new clients each time
            "lagging": {"behind", "behind-no-summaries"},
        },
        "prod": {"storm": set(), "flapping": set(), "lagging": set()},
    }


def _by_alerts(client, cluster: str) -> dict[str, set[str]]:
    active = AlertStore(client, prefix=cluster_prefix(cluster), cluster=cluster).active()
    return {s: {a["group"] for a in active if a["rule"] == rule} for s, rule in STATUS_RULES.items()}


def _metrics(text: bytes) -> tuple[dict[tuple[str, str], float], dict[str, dict[str, set[str]]]]:
    counts: dict[tuple[str, str], float] = {}
    groups: dict[str, dict[str, set[str]]] = {}
    for fam in text_string_to_metric_families(text.decode()):
        for s in fam.samples:
            if s.name == "groupscope_groups_in_status":
                counts[(s.labels["cluster"], s.labels["status"])] = s.value
            elif s.name == "groupscope_group_status" and s.value == 1:
                groups.setdefault(s.labels["cluster"], {}).setdefault(s.labels["status"], set()).add(
                    s.labels["group"]
                )
    return counts, groups


@pytest.mark.servers
def test_fleet_alerts_metrics_and_cli_count_the_same_groups(
    redis_client, redis_server, monkeypatch, tmp_path
) -> None:
    now = int(time.time() * 1000)
    want = _fill(redis_client, now)
    config = parse_alert_config(CONFIG)
    ClusterEvaluator(redis_client, config, configured=["default", "prod"]).run_cycle(now_ms=now)
    data = DashboardData(redis_server.url, clusters=["default", "prod"], alert_config=config)
    counts, groups = _metrics(MetricsSource(redis_client, config=config, clock=lambda: now).render())
    docs_only = MetricsSource(redis_client, config=config, clock=lambda: now, summaries=False).render()
    assert _metrics(docs_only) == (counts, groups)
    for cluster in ("default", "prod"):
        alerts = _by_alerts(redis_client, cluster)
        assert alerts == want[cluster], cluster
        fleet = data.fleet_counts(cluster, now=now)
        assert (fleet["storms"], fleet["flapping"], fleet["lagging"]) == tuple(
            len(alerts[s]) for s in STATUSES
        ), cluster
        for s in STATUSES:
            assert {r["name"] for r in fleet["top"][s]} <= alerts[s]
            assert counts[(cluster, s)] == len(alerts[s])
            assert groups.get(cluster, {}).get(s, set()) == alerts[s]
        found = read_statuses(
            RedisStore(redis_client, prefix=cluster_prefix(cluster)), config.for_cluster(cluster), now
        )
        assert {s: set(found.groups[s]) for s in STATUSES} == alerts
        # from the documents alone: the same
        docs = read_statuses(
            RedisStore(redis_client, prefix=cluster_prefix(cluster)),
            config.for_cluster(cluster),
            now,
            summaries=False,
        )
        assert {s: set(docs.groups[s]) for s in STATUSES} == alerts
    both = data.fleet_counts(None, now=now)
    assert both["storms"] == 3 and both["lagging"] == 2 and both["flapping"] == 1
    assert both["top"]["storm"][0]["name"] == "storm-b"  # the most rebalances first
    # the CLI (its clock runs on a little: the data is far from any boundary)
    for k in list(os.environ):
        if k.startswith("GROUPSCOPE_"):
            monkeypatch.delenv(k)
    path = tmp_path / "gs.yaml"
    path.write_text(json.dumps({"alerts": CONFIG}))  # JSON is YAML
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(path))
    r = CliRunner().invoke(cli, ["groups", "--redis", redis_server.url, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    for cluster in ("default", "prod"):
        c = out["clusters"][cluster]
        assert (c["counts"]["storms"], c["counts"]["flapping"], c["counts"]["lagging"]) == tuple(
            len(want[cluster][s]) for s in STATUSES
        )
        assert {s: set(c["statuses"][s]) for s in STATUSES} == want[cluster]
        assert "storm_rebalances_per_hour" not in c["counts"]
    assert out["clusters"]["prod"]["definitions"]["storm"].startswith("at least 100 unexplained")
    rows = {(g["cluster"], g["name"]): g["statuses"] for g in out["groups"]}
    assert rows[("default", "storm-a")] == ["storm"] and rows[("prod", "storm-a")] == []
    assert rows[("default", "deploy")] == [] and rows[("default", "stormed-3h-ago")] == []
    r = CliRunner().invoke(cli, ["group", "storm-b", "--redis", redis_server.url, "--cluster", "default"])
    assert r.exit_code == 0 and "status: in a rebalance storm: " in r.stdout, r.output
    r = CliRunner().invoke(cli, ["groups", "--redis", redis_server.url])
    assert "3 in a rebalance storm, 1 flapping, 2 lagging" in r.stdout, r.output


def test_group_page_says_the_statuses() -> None:
    now = int(time.time() * 1000)
    d = GroupDocument.from_json(storm_doc("s", t0=now - 100 * S)[0])
    st = group_statuses(d, now, parse_alert_config(None))
    assert st.names == ["storm"]
    text = str(header(d, {"rebalances_1h": 43}, now, st))
    assert "in a rebalance storm (" in text and "threshold 5" in text
    quiet = group_statuses(
        GroupDocument.from_json(steady_doc("q", t0=now - H)), now, parse_alert_config(None)
    )
    assert "no storm, no flapping, not lagging" in str(header(d, None, now, quiet))
    # a rule switched off: nobody is in its status
    off = parse_alert_config({"rules": {"rebalance_storm": False}})
    assert group_statuses(d, now, off).names == []
    assert definitions(off)["storm"] is None


def test_definitions_follow_the_configuration() -> None:
    d = definitions(parse_alert_config(None))
    assert d == {
        "storm": "at least 5 unexplained rebalances within 600 s",
        "flapping": "the same client joining 3 times within 600 s",
        "lagging": "a partition (WARN/ERR/STOP/STALL) at least 10 messages and 60 s behind",
    }
    cfg = parse_alert_config(
        {
            "rules": {"lag": {"min_offsets": 100, "match": "any"}},
            "overrides": [
                {"group": "re:^batch-", "rules": {"rebalance_storm": {"count": 20, "window_s": 300}}}
            ],
        }
    )
    assert definitions(cfg, "batch-1")["storm"] == "at least 20 unexplained rebalances within 300 s"
    assert (
        definitions(cfg)["lagging"]
        == "a partition (WARN/ERR/STOP/STALL) at least 100 messages or 60 s behind"
    )


# ---- the lag rows the facts keep decide the lag rule as the document's rows do ---------------------

ROWS = st.lists(
    st.tuples(
        st.sampled_from([None, "", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND", "NO_COMMIT"]),
        st.one_of(st.none(), st.integers(-2, 12), st.sampled_from([50, 1000, 10**6])),
        st.one_of(st.none(), st.sampled_from([0.0, 0.5, 30.0, 59.9, 60.0, 61.0, 600.0, math.inf, math.nan])),
    ),
    max_size=40,
)
PARAMS = st.fixed_dictionaries(
    {
        "enabled": st.just(True),
        "severity": st.just("warning"),
        "critical_statuses": st.just(["ERR", "STOP", "STALL"]),
        "statuses": st.lists(st.sampled_from(["OK", "WARN", "ERR", "STOP", "STALL", "rewind"]), max_size=4),
        "min_offsets": st.one_of(st.none(), st.sampled_from([0, 1, 10, 1000])),
        "min_seconds": st.one_of(st.none(), st.sampled_from([0, 30, 60, 600])),
        "match": st.sampled_from(["all", "any"]),
        "ignore_lag_at_most": st.sampled_from([0, 1, 5]),
    }
)


DEFAULT_LAG = parse_alert_config(None).rules["lag"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROWS, PARAMS)
# rows with a status but none of those that could count: the rule counts by status all the same
@example([(None, 100, 600.0), ("OK", 0, 0.0)], DEFAULT_LAG)
@example([("", 100, 600.0), ("WARN", -1, 600.0)], {**DEFAULT_LAG, "statuses": []})
def test_lag_rows_decide_the_lag_rule(rows, params) -> None:
    parts = [
        PartitionLag(f"t{i % 3}", i, lag=lag_, lag_seconds=secs, status=status)
        for i, (status, lag_, secs) in enumerate(rows)
    ]
    d = GroupDocument(group="g", type="classic", state="Stable", lag=LagDoc(partitions=parts))
    facts = summarize(d, {}, "digest").facts
    kept = lag_rows(facts)
    if kept is None:  # too many: the reader takes the document
        return
    whole = lag(GroupView(d), 0, params).finding
    packed = lag(PackedView("g", [RULES_VERSION, "Stable", [], []], None, kept), 0, params).finding
    assert (whole is None) == (packed is None), (rows, params, facts.lag_rows)
    if whole is not None and packed is not None:
        # every status with a row the rule counts keeps one: the same severity
        assert whole.severity == packed.severity
