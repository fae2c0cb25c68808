"""Alerts over several Kafka clusters in one Redis (each cluster's layout under `gs@NAME`): the same
group name in two clusters kept apart, rules per cluster, a broken cluster that stops nobody else,
notifications that name their cluster, and `groupscope alerts --cluster`. Real Redis, real local
HTTP and SMTP servers."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner
from test_alert_docs import MIN, T0, S, part, steady_doc, storm_doc
from test_notif_servers import HookServer, SMTPServer

from collectors.alerts import tasks
from collectors.alerts.cluster_cycle import ClusterEvaluator
from collectors.alerts.clusters import cluster_names
from collectors.alerts.evaluate import Evaluator
from collectors.alerts.notifiers import build_notifier
from collectors.alerts.notify import ThreadDispatcher, make_event
from collectors.cli.main import cli
from collectors.storage.alerts import Alert, AlertStore
from collectors.storage.clusters import ClusterRegistry, cluster_prefix
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import AlertConfigError, parse_alert_config

NOW = T0 + 30 * S
LAGGING = [part("orders", 0, 5000, 300.0, "STOP")]  # fires `lag` (critical) with the defaults
MILD = [part("orders", 0, 5000, 30.0, "WARN")]  # under the default 60 s: fires only with a lower bound


def _data(client, cluster: str) -> RedisStore:
    ClusterRegistry(client).register(cluster, f"{cluster}:9092", now_ms=T0)
    return RedisStore(client, prefix=cluster_prefix(cluster))


def _alerts(client, cluster: str) -> AlertStore:
    return AlertStore(client, prefix=cluster_prefix(cluster))


def _two_clusters(client) -> None:
    """`orders` storming in prod, `orders` lagging in the cluster `default`."""
    d, end = storm_doc("orders")
    _data(client, "prod").write_group(d, end)
    _data(client, "default").write_group(steady_doc("orders", lag=LAGGING), end)


# --- evaluation ---------------------------------------------------------------------------------


@pytest.mark.servers
def test_same_group_in_two_clusters_is_two_groups(redis_client) -> None:
    _two_clusters(redis_client)
    ev = ClusterEvaluator(redis_client, parse_alert_config(None))
    r = ev.run_cycle(now_ms=NOW)
    assert r.errors == {} and set(r.cycles) == {"default", "prod"}
    assert r.summary()["fired"] == 2
    fired = {(t.alert["cluster"], t.alert["group"], t.alert["rule"]) for t in r.transitions}
    assert fired == {("prod", "orders", "rebalance_storm"), ("default", "orders", "lag")}
    [prod] = _alerts(redis_client, "prod").active()
    [default] = _alerts(redis_client, "default").active()
    assert (prod["cluster"], prod["rule"]) == ("prod", "rebalance_storm")
    assert (default["cluster"], default["rule"]) == ("default", "lag")
    # ids name one alert across clusters; the cluster `default` keeps the ids of before clusters
    assert prod["id"] == f"prod/orders|rebalance_storm|{prod['since']}"
    assert default["id"] == f"orders|lag|{default['since']}"
    assert [h["cluster"] for h in _alerts(redis_client, "prod").history(group="orders")] == ["prod"]

    # the storm ends in prod: resolved there, the lag alert of `default`'s `orders` stands
    _data(redis_client, "prod").write_group(steady_doc("orders"), NOW + 11 * MIN)
    r = ev.run_cycle(now_ms=NOW + 11 * MIN)
    assert [(t.event, t.alert["cluster"]) for t in r.transitions] == [("resolved", "prod")]
    assert _alerts(redis_client, "prod").active() == []
    assert [a["rule"] for a in _alerts(redis_client, "default").active()] == ["lag"]
    [h] = _alerts(redis_client, "prod").history(state="resolved")
    assert (h["cluster"], h["group"]) == ("prod", "orders")


@pytest.mark.servers
def test_a_cluster_whose_collector_starts_later_is_picked_up(redis_client) -> None:
    _data(redis_client, "default").write_group(steady_doc("a"), T0)
    ev = ClusterEvaluator(redis_client, parse_alert_config(None), configured=["default", "configured-only"])
    r = ev.run_cycle(now_ms=NOW)
    # a configured cluster with no data yet is evaluated (nothing to judge), not an error
    assert set(r.cycles) == {"default", "configured-only"} and r.errors == {}
    _data(redis_client, "late").write_group(steady_doc("a", lag=LAGGING), NOW)
    r = ev.run_cycle(now_ms=NOW + S)
    assert set(r.cycles) == {"default", "configured-only", "late"}
    assert [(t.alert["cluster"], t.alert["group"]) for t in r.transitions] == [("late", "a")]


@pytest.mark.servers
def test_a_broken_cluster_does_not_stop_the_others(redis_client, caplog) -> None:
    _two_clusters(redis_client)
    _data(redis_client, "broken").write_group(steady_doc("x", lag=LAGGING), T0)
    # garbage where the layout has hashes, and a registry field that is no cluster name
    redis_client.delete("gs@broken:refreshed", "gs@broken:fleet")
    redis_client.set("gs@broken:refreshed", b"\xff garbage")
    redis_client.set("gs@broken:fleet", b"\xff garbage")
    redis_client.hset("gs:clusters", "Not A Cluster!", "{")
    assert cluster_names(redis_client) == ["default", "broken", "prod"]
    ev = ClusterEvaluator(redis_client, parse_alert_config(None))
    r = ev.run_cycle(now_ms=NOW)
    assert set(r.errors) == {"broken"} and "WRONGTYPE" in r.errors["broken"]
    assert {t.alert["cluster"] for t in r.transitions} == {"default", "prod"}
    assert "cluster broken: evaluation cycle failed" in caplog.text
    # a hash whose values are not what the collector writes: that cluster fails, not the others
    redis_client.delete("gs@broken:refreshed", "gs@broken:fleet")
    redis_client.hset("gs@broken:refreshed", "x", b"\xff\xfe")
    r = ev.run_cycle(now_ms=NOW + S)
    assert set(r.errors) == {"broken"} and set(r.cycles) == {"default", "prod"}


# --- rules per cluster ----------------------------------------------------------------------------

PER_CLUSTER = {
    "rules": {"lag": {"min_offsets": 100}},
    "overrides": [{"group": "re:^batch-", "rules": {"lag": False}}],
    "clusters": {
        "prod": {"rules": {"lag": {"min_seconds": 10}}},  # on top of the top-level lag rule
        "staging": {
            "rules": {"lag": False, "rebalance_storm": {"count": 50}},
            "groups": {"deny": ["re:^tmp-"]},
        },
        "later": {"overrides": [{"group": "orders", "rules": {"lag": {"min_seconds": 1}}}]},
    },
}


def test_cluster_rules_are_layered_on_the_top_level() -> None:
    cfg = parse_alert_config(PER_CLUSTER)
    prod, staging, later = (cfg.for_cluster(n) for n in ("prod", "staging", "later"))
    assert cfg.for_cluster("elsewhere") is cfg  # no entry: the top level as it is
    assert (cfg.rules["lag"]["min_seconds"], cfg.rules["lag"]["min_offsets"]) == (60, 100)
    assert (prod.rules["lag"]["min_seconds"], prod.rules["lag"]["min_offsets"]) == (10, 100)
    assert "lag" in prod.rules_for("orders") and "lag" not in prod.rules_for("batch-1")  # top override
    assert "lag" not in staging.rules_for("orders") and "lag" in cfg.rules_for("orders")
    assert staging.rules_for("orders")["rebalance_storm"]["count"] == 50
    assert staging.rules_for("tmp-1") == {} and cfg.rules_for("tmp-1") != {}
    assert later.rules_for("orders")["lag"]["min_seconds"] == 1  # its override comes after the top's
    assert later.rules_for("batch-1").get("lag") is None
    assert prod.notifiers is cfg.notifiers and prod.notify == cfg.notify


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"clusters": {"prod": {"rules": {"lag": {"min_seconds": "ten"}}}}},
            "clusters.prod.rules.lag.min_seconds must be a number",
        ),
        ({"clusters": {"prod": {"rules": {"lagg": {}}}}}, "clusters.prod.rules: unknown rule 'lagg'"),
        (
            {"clusters": {"prod": {"rules": {"lag": {"severity": "loud"}}}}},
            "clusters.prod.rules.lag.severity must be one of",
        ),
        ({"clusters": {"prod": {"groups": {"deny": ["re:("]}}}}, "bad regular expression"),
        (
            {"clusters": {"prod": {"groups": {"block": []}}}},
            "alerts.clusters.prod.groups: unknown key(s) block",
        ),
        (
            {"clusters": {"prod": {"overrides": [{"rules": {}}]}}},
            "clusters.prod.overrides[0] must be a mapping with 'group'",
        ),
        ({"clusters": {"prod": {"notifiers": []}}}, "notifiers are top-level"),
        ({"clusters": {"prod": ["lag"]}}, "alerts.clusters.prod must be a mapping"),
        ({"clusters": {"Prod!": {}}}, "'Prod!' is not a cluster name"),
        ({"clusters": ["prod"]}, "alerts.clusters must be a mapping"),
        (
            {"notifiers": [{"type": "webhook", "url": "http://x", "clusters": "prod"}]},
            "notifiers[0].clusters must be a list",
        ),
    ],
)
def test_bad_cluster_rules_are_refused_with_their_place(data, message) -> None:
    with pytest.raises(AlertConfigError) as e:
        parse_alert_config(data)
    assert message in str(e.value)


def test_a_cluster_not_known_yet_and_an_empty_entry_are_fine() -> None:
    cfg = parse_alert_config({"clusters": {"not-started-yet": None, "prod": {}}})
    assert cfg.for_cluster("prod").rules == cfg.rules


@pytest.mark.servers
def test_a_cluster_rule_override_fires_in_that_cluster_only(redis_client) -> None:
    for cluster in ("default", "prod", "staging"):
        _data(redis_client, cluster).write_group(steady_doc("orders", lag=MILD), T0)
        _data(redis_client, cluster).write_group(steady_doc("billing", lag=LAGGING), T0)
    r = ClusterEvaluator(redis_client, parse_alert_config(PER_CLUSTER)).run_cycle(now_ms=NOW)
    fired = sorted((t.alert["cluster"], t.alert["group"]) for t in r.transitions)
    # 30 s of lag alerts only in prod (10 s there); 300 s everywhere but staging (lag off there)
    assert fired == [("default", "billing"), ("prod", "billing"), ("prod", "orders")]


@pytest.mark.servers
def test_cli_evaluate_takes_the_cluster_rules_from_the_alerts_file(
    redis_client, redis_server, tmp_path
) -> None:
    for cluster in ("default", "prod"):
        _data(redis_client, cluster).write_group(steady_doc("orders", lag=MILD), T0)
    conf = tmp_path / "alerts.yaml"
    conf.write_text(yaml.safe_dump(PER_CLUSTER))
    res = CliRunner().invoke(
        cli,
        ["alerts", "evaluate", "--redis", redis_server.url, "--json", "--no-notify"],
        env={"GROUPSCOPE_ALERTS_FILE": str(conf)},
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [(t["cluster"], t["alert"]["cluster"]) for t in out["transitions"]] == [("prod", "prod")]
    assert set(out["cycle"]["clusters"]) == {"default", "prod"} and out["cycle"]["fired"] == 1


# --- notifications ----------------------------------------------------------------------------------


@pytest.mark.servers
def test_notifications_name_their_cluster(redis_client) -> None:
    """The same group and rule firing in two clusters: two notifications per channel, each naming
    its cluster in text and payload, with ids that differ; a channel limited to one cluster gets
    only its alerts."""
    for cluster in ("default", "prod"):
        _data(redis_client, cluster).write_group(steady_doc("orders", lag=LAGGING), T0)
    r = ClusterEvaluator(redis_client, parse_alert_config(None)).run_cycle(now_ms=NOW)
    events = [make_event(t.event, t.alert) for t in r.transitions]
    assert sorted(e["cluster"] for e in events) == ["default", "prod"]
    with HookServer() as hooks, SMTPServer() as smtp:
        specs = [
            {"name": "hook", "type": "webhook", "url": hooks.url + "/hook"},
            {"name": "slack", "type": "slack", "url": hooks.url + "/slack"},
            {"name": "prod-only", "type": "webhook", "url": hooks.url + "/prod", "clusters": ["prod"]},
            {"name": "mail", "type": "email", "host": "127.0.0.1", "port": smtp.port, "to": ["ops@x"]},
        ]
        cfg = parse_alert_config({"notifiers": specs})
        d = ThreadDispatcher([build_notifier(n) for n in cfg.notifiers], retries=0, backoff_s=0.01)
        d.dispatch(events)
        assert d.join(10) and d.failed == {}
        hooks_ = hooks.bodies("/hook")
        assert sorted((b["cluster"], b["alert"]["cluster"], b["alert"]["group"]) for b in hooks_) == [
            ("default", "default", "orders"),
            ("prod", "prod", "orders"),
        ]
        assert len({b["alert"]["id"] for b in hooks_}) == 2
        assert [b["cluster"] for b in hooks.bodies("/prod")] == ["prod"]
        slack = sorted(hooks.bodies("/slack"), key=lambda b: b["text"])
        assert [b["text"] for b in slack] == [
            "[groupscope] FIRING lag on orders in cluster default (critical)",
            "[groupscope] FIRING lag on orders in cluster prod (critical)",
        ]
        fields = [{f["title"]: f["value"] for f in b["attachments"][0]["fields"]} for b in slack]
        assert [f["cluster"] for f in fields] == ["default", "prod"]
        assert "in cluster prod" in slack[1]["attachments"][0]["title"]
        mails = sorted(smtp.messages, key=lambda m: m[2]["Subject"])
        assert [m[2]["X-Groupscope-Cluster"] for m in mails] == ["default", "prod"]
        assert mails[1][2]["Subject"] == "[groupscope] FIRING lag on orders in cluster prod (critical)"
        assert "cluster: prod" in mails[1][2].get_payload()


@pytest.mark.servers
def test_worker_cycle_evaluates_every_cluster(redis_client, redis_server) -> None:
    """The Celery task's cycle (run in this process): every cluster, the ones registered after the
    worker started too, the summary by cluster."""
    tasks.configure(redis_server.url, parse_alert_config(None), clusters=["default"])
    try:
        _data(redis_client, "default").write_group(steady_doc("orders", lag=LAGGING), T0)
        first = tasks.evaluate_task.apply(kwargs={"at_ms": NOW}).get()
        assert (first["fired"], set(first["clusters"]), first["notifications"]) == (1, {"default"}, 0)
        _data(redis_client, "prod").write_group(steady_doc("orders", lag=LAGGING), T0)
        second = tasks.evaluate_task.apply(kwargs={"at_ms": NOW}).get()
        assert set(second["clusters"]) == {"default", "prod"}
        assert second["clusters"]["prod"]["fired"] == 1 and second["errors"] == {}
        assert [a["cluster"] for a in _alerts(redis_client, "prod").active()] == ["prod"]
    finally:
        tasks.configure("", parse_alert_config(None))


# --- the CLI ------------------------------------------------------------------------------------------


@pytest.mark.servers
def test_cli_list_and_evaluate_per_cluster(redis_client, redis_server) -> None:
    _two_clusters(redis_client)
    runner = CliRunner()
    url = ["--redis", redis_server.url]
    res = runner.invoke(
        cli, ["alerts", "evaluate", *url, "--cluster", "prod", "--at", str(NOW), "--no-notify"]
    )
    assert res.exit_code == 0, res.output
    assert "cluster prod: evaluated 1/1 groups" in res.output and "cluster default" not in res.output
    assert _alerts(redis_client, "default").active() == []  # not evaluated
    res = runner.invoke(cli, ["alerts", "evaluate", *url, "--at", str(NOW), "--no-notify", "--json"])
    assert res.exit_code == 0, res.output
    assert [t["alert"]["cluster"] for t in json.loads(res.output)["transitions"]] == ["default"]

    listing = json.loads(runner.invoke(cli, ["alerts", "list", *url, "--json"]).output)
    assert sorted((a["cluster"], a["group"], a["rule"]) for a in listing["active"]) == [
        ("default", "orders", "lag"),
        ("prod", "orders", "rebalance_storm"),
    ]
    assert {a["cluster"] for a in listing["history"]} == {"default", "prod"}
    only = json.loads(runner.invoke(cli, ["alerts", "list", *url, "--json", "--cluster", "prod"]).output)
    assert [a["cluster"] for a in only["active"] + only["history"]] == ["prod", "prod"]
    text = runner.invoke(cli, ["alerts", "list", *url]).output
    lines = text.splitlines()
    assert lines[1].split()[:4] == ["CLUSTER", "SEVERITY", "RULE", "GROUP"]
    assert any(line.split()[:3] == ["prod", "critical", "rebalance_storm"] for line in lines)
    assert any(line.split()[:3] == ["default", "critical", "lag"] for line in lines)

    res = runner.invoke(cli, ["alerts", "list", *url, "--cluster", "nope"])
    assert res.exit_code == 2 and "no cluster 'nope'" in res.output and "default, prod" in res.output
    res = runner.invoke(cli, ["alerts", "evaluate", *url, "--cluster", "Bad!"])
    assert res.exit_code == 2 and "is not valid" in res.output


@pytest.mark.servers
def test_cli_reports_a_broken_cluster_and_evaluates_the_others(redis_client, redis_server) -> None:
    _two_clusters(redis_client)
    ClusterRegistry(redis_client).register("broken", None, now_ms=T0)
    redis_client.set("gs@broken:refreshed", "garbage")
    redis_client.set("gs@broken:alerts:active", "garbage")
    runner = CliRunner()
    res = runner.invoke(cli, ["alerts", "evaluate", "--redis", redis_server.url, "--at", str(NOW)])
    assert res.exit_code == 1
    assert "cluster broken: cannot evaluate: ResponseError: WRONGTYPE" in res.output
    assert "cluster prod: evaluated 1/1 groups" in res.output and "1 fired" in res.output
    res = runner.invoke(cli, ["alerts", "list", "--redis", redis_server.url, "--json"])
    assert res.exit_code == 1 and "cluster broken: cannot read alerts" in res.output
    listing = json.loads(res.output.splitlines()[0])
    assert {a["cluster"] for a in listing["active"]} == {"default", "prod"}


@pytest.mark.servers
def test_alerts_written_before_clusters_read_as_the_default_cluster(redis_client) -> None:
    """An alert stored without `cluster` (by the evaluator before clusters) is the cluster
    `default`'s, or the cluster's whose store it is in."""
    data = RedisStore(redis_client)
    data.write_group(steady_doc("old", lag=LAGGING), T0)
    Evaluator(redis_client, parse_alert_config(None)).run_cycle(now_ms=NOW)
    raw = {k: json.loads(v) for k, v in redis_client.hgetall("gs:alerts:active").items()}
    for k, a in raw.items():
        del a["cluster"]
        redis_client.hset("gs:alerts:active", k, json.dumps(a))
        redis_client.hset("gs:alerts:log", a["id"], json.dumps(a))
    assert [a["cluster"] for a in AlertStore(redis_client).active()] == ["default"]
    assert [a["cluster"] for a in AlertStore(redis_client).history()] == ["default"]
    # an alert written through a cluster's store without a cluster is that store's cluster's
    prod = AlertStore(redis_client, prefix="gs@prod")
    assert prod.cluster == "prod"
    alert = Alert("orders", "lag", "firing", "warning", "lags", T0)
    pipe = redis_client.pipeline()
    prod.queue_fire(pipe, alert)
    pipe.execute()
    [a] = prod.active()
    assert (a["cluster"], a["id"]) == ("prod", f"prod/orders|lag|{T0}")
