"""The ops stack around /metrics, with Debian's real Prometheus (no mock): the rules file that ships
(deploy/prometheus/groupscope-rules.yml) passes `promtool check rules` and its unit tests (`promtool
test rules`), and tests every alert firing and not firing; Prometheus scrapes a running groupscope
(`start_metrics_server` over a Redis holding a lagging and a storming group, with basic auth) and its
queries return the fleet's lag, the storm status and the recording rules, with every rule loaded
healthy; and the Grafana dashboard (deploy/grafana/groupscope-dashboard.json) names only metrics the
exporter really exports (read from a real scrape) or the rules record, in PromQL Prometheus accepts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from test_alert_docs import MIN, S, part, steady_doc, storm_doc

from collectors.alerts.evaluate import ClusterEvaluator
from collectors.alerts.metrics import FAMILIES, make_wsgi_app, start_metrics_server
from collectors.demo.servers.processes import free_port
from collectors.demo.servers.prometheus import PROMTOOL, PrometheusServer
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import parse_alert_config

ROOT = Path(__file__).parent.parent
RULES = ROOT / "deploy" / "prometheus" / "groupscope-rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "groupscope-rules.test.yml"
EXAMPLE_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "groupscope-dashboard.json"

_promtool = PROMTOOL if os.path.exists(PROMTOOL) else shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    _promtool is None,
    reason="promtool is not installed (Debian package 'prometheus'; `make test` installs it)",
)


def _eventually(check: Callable[[], Any], timeout: float = 60.0, what: str = "") -> Any:
    """check()'s first truthy answer, polled; the last answer (or error) in the failure."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except Exception as e:  # not there yet (Prometheus still starting a scrape, say)
            last = e
        time.sleep(0.25)
    pytest.fail(f"{what or check} not true within {timeout:.0f} s; last: {last!r}")


# ---- the rules file ------------------------------------------------------------------------------


def _rules() -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


@needs_promtool
def test_promtool_check_rules() -> None:
    out = subprocess.run(
        [_promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in out.stdout + out.stderr


@needs_promtool
def test_promtool_test_rules() -> None:
    out = subprocess.run(
        [_promtool, "test", "rules", RULE_TESTS.name],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=RULE_TESTS.parent,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout + out.stderr


@needs_promtool
def test_promtool_check_example_config() -> None:
    """deploy/prometheus/prometheus.yml, the example, is valid and loads the rules next to it."""
    out = subprocess.run(
        [_promtool, "check", "config", str(EXAMPLE_CONFIG)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "groupscope-rules.yml" in out.stdout + out.stderr


def test_every_alert_has_unit_tests_firing_and_not_firing() -> None:
    """Each alert of the rules file appears in the promtool tests at least once with the alert
    expected and once with none expected; each alert carries severity, summary and description."""
    alerts = {r["alert"]: r for r in _rules() if "alert" in r}
    assert alerts, "no alert in the rules file"
    firing: set[str] = set()
    quiet: set[str] = set()
    for t in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for case in t.get("alert_rule_test") or []:
            (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    assert set(alerts) - firing == set(), "alerts never shown firing"
    assert set(alerts) - quiet == set(), "alerts never shown not firing"
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert {"summary", "description"} <= set(rule["annotations"]), name
        if name not in ("GroupscopeExporterDown", "GroupscopeExporterAbsent"):
            assert "cluster" in rule["annotations"]["summary"], name
    # The storm alert reads groupscope's own verdict (coordinator_model/statuses.py), not a rate.
    assert 'groupscope_group_status{status="storm"}' in alerts["GroupscopeRebalanceStorm"]["expr"]


# ---- metric names in PromQL ----------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_VARIABLE = re.compile(r"\$\{?\w+\}?")
_NAME = re.compile(r"(?<![\w:.])([A-Za-z_:][A-Za-z0-9_:]*)(?![\w:])(?!\s*\()")
_KEYWORDS = {"and", "or", "unless", "offset", "bool", "inf", "nan", "Inf", "NaN"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (label values, label lists, ranges, functions and
    Grafana's $variables left out)."""
    e = _STRING.sub('""', expr)
    e = _MATCHERS.sub("", e)
    e = _RANGE.sub("", e)
    e = _LABEL_LIST.sub("", e)
    e = _VARIABLE.sub("", e)
    return {m for m in _NAME.findall(e) if m not in _KEYWORDS}


def test_metric_names_reader() -> None:
    assert metric_names('sum by (cluster) (groupscope_group_lag_offsets{cluster=~"$cluster"})') == {
        "groupscope_group_lag_offsets"
    }
    assert metric_names('topk(10, deriv(a_b{group=~"x, y"}[10m])) and on (group) c:d:e > 1') == {
        "a_b",
        "c:d:e",
    }
    assert metric_names('time() - groupscope_alert_cycle_timestamp_seconds{x="}"} > 300') == {
        "groupscope_alert_cycle_timestamp_seconds"
    }


def _dashboard_exprs() -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and every query variable of the dashboard."""
    board = json.loads(DASHBOARD.read_text())
    out: list[tuple[str, str]] = []

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for p in items:
            yield p
            yield from panels(p.get("panels") or [])

    for p in panels(board["panels"]):
        for t in p.get("targets") or []:
            out.append((f"panel {p['title']!r} target {t['refId']}", t["expr"]))
    for v in board["templating"]["list"]:
        if v["type"] == "query":
            query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
            assert m, f"variable {v['name']}: {query}"
            out.append((f"variable {v['name']}", m.group(1)))
    return out


def _exported_families(redis_client, redis_server) -> set[str]:
    """The families a real scrape of the exporter lists, with a lagging and a storming group and an
    evaluation cycle in Redis, per-partition series on."""
    now = int(time.time() * 1000)
    _fill(redis_client, now)
    app = make_wsgi_app(redis_server.url, per_partition=True)
    body: list[bytes] = []
    chunks = app({"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics"}, lambda *a: None)
    body.extend(chunks)
    return {f.name for f in text_string_to_metric_families(b"".join(body).decode())}


def _fill(client: Any, now: int) -> None:
    """`lagging` (50,000 messages and an hour behind, Burrow STOP) and `storming` (a new process joins
    and leaves every 3 s, the last flap 5 s ago) in the cluster `default`, and one evaluation cycle."""
    store = RedisStore(client)
    store.write_group(
        steady_doc("lagging", t0=now - 10 * MIN, lag=[part("orders", 0, 50_000, 3600.0, "STOP")]), now
    )
    storm, _ = storm_doc("storming", t0=now - 75 * S)
    store.write_group(storm, now)
    ClusterEvaluator(client, parse_alert_config(None)).run_cycle(now_ms=now)


@pytest.mark.servers
def test_dashboard_and_rules_name_only_exported_metrics(redis_client, redis_server) -> None:
    exported = _exported_families(redis_client, redis_server)
    assert exported == set(FAMILIES)  # the scrape lists every family of the exporter
    rules = _rules()
    recorded = {r["record"] for r in rules if "record" in r}
    known = exported | recorded | {"up"}  # up: Prometheus' own series of each target
    where_names = [(f"rule {r.get('alert') or r.get('record')}", r["expr"]) for r in rules]
    where_names += _dashboard_exprs()
    used: set[str] = set()
    for where, expr in where_names:
        names = metric_names(expr)
        assert names, f"{where}: no metric name found in {expr!r}"
        assert names <= known, f"{where}: {sorted(names - known)} not exported by groupscope ({expr!r})"
        used |= names
    # what the dashboard is for: lag, lag seconds, rebalances and storms, group states
    dash = set().union(*(metric_names(e) for _, e in _dashboard_exprs()))
    for name in (
        "groupscope_group_lag_offsets",
        "groupscope_group_lag_seconds",
        "groupscope_group_rebalances_1h",
        "groupscope_groups_in_status",
        "groupscope_group_status",
        "groupscope_groups",
        "groupscope_group_state",
    ):
        assert name in dash, name
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] and board["title"] and board["schemaVersion"] >= 30
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))


# ---- Prometheus scraping a running groupscope -----------------------------------------------------


def _samples(prom: PrometheusServer, expr: str) -> dict[str, float]:
    """group (or the series' labels as JSON) -> value of an instant query."""
    out = {}
    for r in prom.query(expr)["result"]:
        key = r["metric"].get("group") or json.dumps(r["metric"], sort_keys=True)
        out[key] = float(r["value"][1])
    return out


def _substitute(expr: str) -> str:
    """A dashboard expression as Grafana sends it with every value of its variables selected."""
    return expr.replace("$cluster", ".*").replace("$group", ".*").replace("$__rate_interval", "1m")


@pytest.mark.servers
def test_prometheus_scrapes_groupscope_and_loads_the_rules(
    prometheus_server: PrometheusServer, redis_client, redis_server
) -> None:
    now = int(time.time() * 1000)
    _fill(redis_client, now)
    port = free_port()
    httpd, _ = start_metrics_server(port, redis_server.url, basic_auth=("prometheus", "scrape-secret"))
    prom = prometheus_server
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [
            {
                "job_name": "groupscope",
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "basic_auth": {"username": "prometheus", "password": "scrape-secret"},
                "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
            }
        ],
    }
    try:
        prom.configure(yaml.safe_dump(config))
        target = _eventually(
            lambda: [
                t
                for t in prom.api("targets")["activeTargets"]
                if t["labels"].get("job") == "groupscope" and t["health"] == "up"
            ],
            what="the groupscope target up",
        )
        assert target[0]["scrapeUrl"] == f"http://127.0.0.1:{port}/metrics"

        lag = _eventually(
            lambda: _samples(prom, 'groupscope_group_lag_offsets{job="groupscope",cluster="default"}'),
            what="the lag series in Prometheus",
        )
        assert lag["lagging"] == 50_000
        assert _samples(prom, 'groupscope_group_lag_seconds{group="lagging"}') == {"lagging": 3600}
        assert _samples(prom, 'groupscope_group_status{status="storm"}') == {"storming": 1}
        assert _samples(prom, 'groupscope_group_status{status="lagging"}') == {"lagging": 1}
        assert _samples(prom, 'groupscope_groups_in_status{status="storm"} == 1')
        assert _samples(prom, 'groupscope_alert_firing{rule="lag"}') == {"lagging": 1}
        errors = prom.query("groupscope_scrape_errors")["result"]
        assert [(r["metric"]["cluster"], float(r["value"][1])) for r in errors] == [("default", 0.0)]
        # the recording rule: the fleet's lag per Kafka cluster
        fleet = _eventually(
            lambda: prom.query("groupscope:cluster_lag_offsets:sum")["result"],
            what="the recording rule groupscope:cluster_lag_offsets:sum",
        )
        assert [(r["metric"], float(r["value"][1])) for r in fleet] == [
            ({"__name__": "groupscope:cluster_lag_offsets:sum", "cluster": "default"}, 50_000.0)
        ]

        # every rule of the file loaded and evaluated healthy
        def healthy() -> list[dict[str, Any]] | None:
            rules = [r for g in prom.api("rules")["groups"] for r in g["rules"]]
            return rules if rules and all(r["health"] == "ok" for r in rules) else None

        loaded = _eventually(healthy, what="every rule healthy")
        assert sorted(r["name"] for r in loaded) == sorted(r.get("alert") or r["record"] for r in _rules())
        # the alerts are on their way (pending for their `for:`): the lag ones for the lagging group,
        # the storm one for the storming group, and nothing else
        expected = {
            ("GroupscopeConsumerGroupLagHigh", "lagging"),
            ("GroupscopeConsumerGroupLagSecondsHigh", "lagging"),
            ("GroupscopeRebalanceStorm", "storming"),
        }

        def pending() -> list[dict[str, Any]] | None:
            alerts = prom.api("alerts")["alerts"]
            seen = {(a["labels"]["alertname"], a["labels"].get("group")) for a in alerts}
            return alerts if seen == expected else None

        alerts = _eventually(pending, what=f"alerts {sorted(expected)}")
        assert {a["state"] for a in alerts} <= {"pending", "firing"}
        assert {a["labels"]["cluster"] for a in alerts} == {"default"}
        summaries = {a["labels"]["alertname"]: a["annotations"]["summary"] for a in alerts}
        assert summaries["GroupscopeRebalanceStorm"] == (
            "Consumer group storming in default is in a rebalance storm"
        )
        assert summaries["GroupscopeConsumerGroupLagHigh"] == (
            "Consumer group lagging in default is 50k messages behind"
        )

        # every expression of the dashboard is PromQL Prometheus runs
        for where, expr in _dashboard_exprs():
            assert prom.query(_substitute(expr))["resultType"], where  # an error raises, naming it
        fleet_panel = prom.query(_substitute('sum(groupscope_group_lag_offsets{cluster=~"$cluster"})'))
        assert float(fleet_panel["result"][0]["value"][1]) == 50_000
    finally:
        httpd.shutdown()
        httpd.server_close()
        prom.configure(yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": []}))
