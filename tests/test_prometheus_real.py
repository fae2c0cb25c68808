"""The ops stack around /metrics, with Debian's real Prometheus (no mock): the rules file that ships
(deploy/prometheus/groupscope-rules.yml) passes `promtool check rules` and its unit tests (`promtool
test rules`), and tests every alert firing and not firing; Prometheus scrapes a running groupscope
(`start_metrics_server` over a Redis holding a lagging, a storming and a streams group, with basic
auth) and its queries return the fleet's lag, the storm status, the recording rules and the streams
panels' lag per task, with every rule loaded healthy; and the Grafana dashboard
(deploy/grafana/groupscope-dashboard.json) names only metrics the exporter really exports, with
labels their series really carry (read from a real scrape holding a consumer group, a storm and a
Kafka Streams group's task series), or the rules record, in PromQL Prometheus accepts and answers.
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
from test_alert_docs import MIN, S, part, steady_doc, storm_doc, wordcount_doc

from collectors.alerts.cluster_cycle import ClusterEvaluator
from collectors.demo.servers.processes import free_port
from collectors.demo.servers.prometheus import PROMTOOL, PrometheusServer
from collectors.exporter.scrape import FAMILIES
from collectors.exporter.server import make_wsgi_app, start_metrics_server
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
    return [(where, expr) for where, expr, _legend in _dashboard_targets()]


def _dashboard_targets() -> list[tuple[str, str, str]]:
    """(where, PromQL, legend format) of every panel target and every query variable."""
    board = json.loads(DASHBOARD.read_text())
    out: list[tuple[str, str, str]] = []

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for p in items:
            yield p
            yield from panels(p.get("panels") or [])

    for p in panels(board["panels"]):
        for t in p.get("targets") or []:
            out.append((f"panel {p['title']!r} target {t['refId']}", t["expr"], t.get("legendFormat") or ""))
    for v in board["templating"]["list"]:
        if v["type"] == "query":
            query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", query)
            assert m, f"variable {v['name']}: {query}"
            # the label whose values it lists is checked as a legend's would be
            out.append((f"variable {v['name']}", m.group(1), "{{" + m.group(2) + "}}"))
    return out


def _scrape(redis_client, redis_server) -> tuple[set[str], dict[str, set[str]]]:
    """A real scrape of the exporter, with a lagging and a storming group, a streams group and an
    evaluation cycle in Redis, per-partition series on: (the families it lists, family -> the label
    names its series carry, for the families that have series)."""
    now = int(time.time() * 1000)
    _fill(redis_client, now)
    app = make_wsgi_app(redis_server.url, per_partition=True)
    body: list[bytes] = []
    chunks = app({"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics"}, lambda *a: None)
    body.extend(chunks)
    families = list(text_string_to_metric_families(b"".join(body).decode()))
    labels: dict[str, set[str]] = {}
    for f in families:
        for sample in f.samples:
            labels.setdefault(f.name, set()).update(sample.labels)
    return {f.name for f in families}, labels


def _fill(client: Any, now: int) -> None:
    """`lagging` (50,000 messages and an hour behind, Burrow STOP) and `storming` (a new process joins
    and leaves every 3 s, the last flap 5 s ago) in the cluster `default`; `wordcount`, a Kafka Streams
    application's group (its lag per task: 0_0 10 messages, 0_1 none, 1_0 7; 17 in all, no alert);
    and one evaluation cycle."""
    store = RedisStore(client)
    store.write_group(
        steady_doc("lagging", t0=now - 10 * MIN, lag=[part("orders", 0, 50_000, 3600.0, "STOP")]), now
    )
    storm, _ = storm_doc("storming", t0=now - 75 * S)
    store.write_group(storm, now)
    streams = wordcount_doc()
    # its group totals as the engine writes them beside the partitions (the fixture leaves them unset)
    streams.lag.total, streams.lag.max_seconds = 17, 2.5
    store.write_groups([streams], now)
    ClusterEvaluator(client, parse_alert_config(None)).run_cycle(now_ms=now)


_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER_NAME = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_LEGEND = re.compile(r"\{\{\s*(\w+)\s*\}\}")
# labels Prometheus adds to every series it scrapes (the target's), and those of its own `up`
TARGET_LABELS = {"job", "instance"}


def label_names(expr: str) -> tuple[dict[str, set[str]], set[str]]:
    """The labels a PromQL expression names: {metric: the labels of its selector's matchers}, and the
    labels of its `by`/`on`/... lists. String values are blanked first (a `}` in one is no end)."""
    e = _STRING.sub('""', expr)
    matched: dict[str, set[str]] = {}
    for name, matchers in _SELECTOR.findall(e):
        matched.setdefault(name, set()).update(_MATCHER_NAME.findall(matchers))
    listed = {x.strip() for group in _LIST.findall(e) for x in group.split(",") if x.strip()}
    return matched, listed


def test_label_names_reader() -> None:
    matched, listed = label_names(
        'sum by (cluster, group) (a{cluster=~"$cluster", x="}"}) / on (cluster) b{status!="a,b"}'
    )
    assert matched == {"a": {"cluster", "x"}, "b": {"status"}}
    assert listed == {"cluster", "group"} | {"cluster"}


def _check_labels(where: str, expr: str, legend: str, scraped: dict[str, set[str]]) -> None:
    """Every label `expr` matches on, aggregates or joins by, and `legend` shows, is one the series
    it reads carry in the scrape (or one Prometheus adds)."""
    names = metric_names(expr)
    have = set(TARGET_LABELS)
    for name in names:
        have |= scraped.get(name, set())
    matched, listed = label_names(expr)
    for name, labels in matched.items():
        carried = scraped.get(name, set()) | TARGET_LABELS
        assert labels <= carried, f"{where}: {name} has no label {sorted(labels - carried)} ({expr!r})"
    assert listed <= have, f"{where}: no series carries {sorted(listed - have)} ({expr!r})"
    shown = set(_LEGEND.findall(legend))
    assert shown <= have, f"{where}: the legend shows {sorted(shown - have)}, no such label ({expr!r})"


@pytest.mark.servers
def test_dashboard_and_rules_name_only_exported_metrics(redis_client, redis_server) -> None:
    exported, scraped = _scrape(redis_client, redis_server)
    assert exported == set(FAMILIES)  # the scrape lists every family of the exporter
    rules = _rules()
    recorded = {r["record"] for r in rules if "record" in r}
    known = exported | recorded | {"up"}  # up: Prometheus' own series of each target
    where_names = [(f"rule {r.get('alert') or r.get('record')}", r["expr"], "") for r in rules]
    where_names += _dashboard_targets()
    used: set[str] = set()
    for where, expr, legend in where_names:
        names = metric_names(expr)
        assert names, f"{where}: no metric name found in {expr!r}"
        assert names <= known, f"{where}: {sorted(names - known)} not exported by groupscope ({expr!r})"
        used |= names
        if where.startswith("rule"):
            continue  # a rule's labels may be a recorded series' (not in the scrape)
        # every series the dashboard reads is in the scrape (a family listed without a series would
        # pass the name check with no label to check), and each label it names is one they carry
        missing = {n for n in names - {"up"} if n not in scraped}
        assert not missing, f"{where}: the scrape has no series of {sorted(missing)}"
        _check_labels(where, expr, legend, scraped)
    # what the dashboard is for: lag, lag seconds, rebalances and storms, group states, the lag of
    # each task of a Kafka Streams application
    dash = set().union(*(metric_names(e) for _, e in _dashboard_exprs()))
    for name in (
        "groupscope_group_lag_offsets",
        "groupscope_group_lag_seconds",
        "groupscope_group_rebalances_1h",
        "groupscope_groups_in_status",
        "groupscope_group_status",
        "groupscope_groups",
        "groupscope_group_state",
        "groupscope_streams_task_lag_offsets",
        "groupscope_streams_task_lag_seconds",
    ):
        assert name in dash, name
    # the streams panels filter like the others: by the dashboard's cluster and group variables
    for where, expr, legend in _dashboard_targets():
        if "groupscope_streams_task_lag" in expr:
            assert 'cluster=~"$cluster"' in expr and 'group=~"$group"' in expr, where
            assert "{{task}}" in legend, where
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
        assert lag["wordcount"] == 17  # the streams group's, its tasks' summed
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
            ({"__name__": "groupscope:cluster_lag_offsets:sum", "cluster": "default"}, 50_017.0)
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
        assert float(fleet_panel["result"][0]["value"][1]) == 50_017
        # the streams panels, as Grafana asks them: the word count's lag per task
        panels = {where: expr for where, expr in _dashboard_exprs() if "streams_task_lag" in expr}
        assert len(panels) == 2, panels
        for where, expr in panels.items():
            result = prom.query(_substitute(expr))["result"]
            got = {(r["metric"]["group"], r["metric"]["task"]): float(r["value"][1]) for r in result}
            want = (
                {("wordcount", "0_0"): 10, ("wordcount", "0_1"): 0, ("wordcount", "1_0"): 7}
                if "offsets" in expr
                else {("wordcount", "0_0"): 2.5, ("wordcount", "0_1"): 0, ("wordcount", "1_0"): 1}
            )
            assert got == want, where
            assert {r["metric"]["cluster"] for r in result} == {"default"}, where
    finally:
        httpd.shutdown()
        httpd.server_close()
        prom.configure(yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": []}))
