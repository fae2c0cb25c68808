"""groupscope's alerts in Debian's real Prometheus Alertmanager (API v2, no mock): an alert raised by
an evaluation cycle over Redis and sent by the worker's own notify task is seen in GET
/api/v2/alerts with its labels, annotations and link, then resolved and gone; firing alerts are
re-posted after the worker's evaluation cycles (Alertmanager forgets an alert nobody re-posts);
Alertmanager's refusals and an unreachable one are errors that are retried and never show a secret.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from test_alert_docs import MIN, part, steady_doc

from collectors.alerts import tasks
from collectors.alerts.alertmanager import AlertmanagerNotifier
from collectors.alerts.notifiers import build_notifier
from collectors.alerts.notify import NotifyError, make_event, send_with_retry
from collectors.config import ConfigError
from collectors.demo.servers.processes import free_port
from collectors.demo.servers.prometheus import AMTOOL, AlertmanagerServer
from collectors.storage.alerts import AlertStore
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import AlertConfigError
from coordinator_model.alert_rules import parse_alert_config as parse_alerts
from coordinator_model.alert_rules.alertmanager_spec import SpecError

DASH = "http://groupscope.example.com:8050"
EXAMPLE = Path(__file__).parent.parent / "deploy" / "prometheus" / "alertmanager.yml"
_amtool = AMTOOL if os.path.exists(AMTOOL) else shutil.which("amtool")


def _eventually(check: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    pytest.fail(f"{what or check} not true within {timeout:.0f} s; last: {last!r}")


def _ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def _lagging(client: Any, group: str, now: int, lag: int = 5000) -> None:
    rows = [part("orders", 0, lag, 300.0 if lag else 0.0, "STOP" if lag else "OK")]
    RedisStore(client).write_group(steady_doc(group, t0=now - 10 * MIN, lag=rows), now)


def _in_alertmanager(am: AlertmanagerServer, group: str) -> list[dict[str, Any]]:
    return am.alerts(filter=[f'group="{group}"', 'source="groupscope"'])


@pytest.fixture()
def worker(redis_server) -> Iterator[Callable[..., None]]:
    """`configure(notifier spec...)`: the worker's runtime (collectors/alerts/tasks.py) as
    `groupscope worker` sets it, with these notifiers; put back as it was afterwards."""
    saved = (
        tasks._Runtime.redis_url,
        tasks._Runtime.config,
        tasks._Runtime.notifiers,
        tasks._Runtime.evaluator,
        tasks.app.conf.broker_url,
    )

    def configure(*specs: dict[str, Any]) -> None:
        tasks.configure(redis_server.url, parse_alerts({"notifiers": list(specs)}), interval_s=5.0)

    yield configure
    (
        tasks._Runtime.redis_url,
        tasks._Runtime.config,
        tasks._Runtime.notifiers,
        tasks._Runtime.evaluator,
        tasks.app.conf.broker_url,
    ) = saved


def _cycle_and_notify() -> list[dict[str, Any]]:
    """One evaluation cycle of the worker's evaluator, and each transition's notify task run as the
    worker runs it (the task's own body, retries and all), for every channel that wants it."""
    result = tasks._evaluator().run_cycle()
    events = []
    for t in result.transitions:
        event = make_event(t.event, t.alert)
        for name, n in tasks._Runtime.notifiers.items():
            if n.wants(event):
                assert tasks.notify_task.apply(args=(name, event)).get() is True
        events.append(event)
    return events


@pytest.mark.servers
def test_alert_raised_seen_in_alertmanager_then_resolved(
    alertmanager_server: AlertmanagerServer, redis_client, worker
) -> None:
    am = alertmanager_server
    worker(
        {
            "name": "am",
            "type": "alertmanager",
            "url": am.url,
            "dashboard_url": DASH,
            "labels": {"team": "kafka"},
        }
    )
    now = int(time.time() * 1000)
    _lagging(redis_client, "am-orders", now)
    [fired] = _cycle_and_notify()
    assert (fired["event"], fired["alert"]["rule"]) == ("firing", "lag")

    [seen] = _eventually(lambda: _in_alertmanager(am, "am-orders"), what="the alert in Alertmanager")
    alert = AlertStore(redis_client).active(group="am-orders")[0]
    assert seen["labels"] == {
        "alertname": "lag",
        "cluster": "default",
        "group": "am-orders",
        "severity": "critical",
        "source": "groupscope",
        "team": "kafka",
    }
    assert seen["status"]["state"] == "active"
    assert seen["annotations"]["summary"] == alert["summary"]
    assert seen["annotations"]["alert_id"] == alert["id"]
    assert (
        "lag on consumer group am-orders in Kafka cluster default (critical)"
        in (seen["annotations"]["description"])
    )
    assert seen["generatorURL"] == f"{DASH}/clusters/default/groups/am-orders"
    assert _ms(seen["startsAt"]) == alert["since"]
    # firing: good for four resend periods (4 x 60 s) unless re-posted
    assert 230_000 < _ms(seen["endsAt"]) - now < 250_000
    # Alertmanager routed it (its receiver) and grouped it by alertname, cluster and group
    assert [r["name"] for r in seen["receivers"]] == ["nowhere"]

    # consumed back to the end: the cycle resolves it and the notify task tells Alertmanager, which
    # drops it at once (not four minutes later, when the endsAt of the firing post runs out)
    _lagging(redis_client, "am-orders", now + 1000, lag=0)
    [resolved] = _cycle_and_notify()
    assert (resolved["event"], resolved["alert"]["state"]) == ("resolved", "resolved")
    _eventually(lambda: _in_alertmanager(am, "am-orders") == [], what="the alert gone from Alertmanager")
    assert am.alerts(filter=['group="am-orders"'], active=True) == []


@pytest.mark.servers
def test_firing_alerts_are_reposted_after_the_workers_cycles(
    alertmanager_server: AlertmanagerServer, redis_client, worker
) -> None:
    """With resend_s 1 a firing post holds 4 s: the alert leaves Alertmanager unless re-posted, and
    the evaluation task re-posts every active alert (alertmanager.resend_in_background)."""
    am = alertmanager_server
    worker(
        {"name": "am-fast", "type": "alertmanager", "url": am.url, "resend_s": 1},
        # a notifier that does not want lag alerts: re-sends leave them out too
        {"name": "am-storms", "type": "alertmanager", "url": am.url, "rules": ["rebalance_storm"]},
    )
    now = int(time.time() * 1000)
    _lagging(redis_client, "am-resent", now)
    assert [e["event"] for e in _cycle_and_notify()] == ["firing"]
    [first] = _eventually(lambda: _in_alertmanager(am, "am-resent"), what="the alert in Alertmanager")
    assert _ms(first["endsAt"]) - now < 10_000
    # nobody re-posts it: gone when its endsAt passes
    _eventually(lambda: _in_alertmanager(am, "am-resent") == [], timeout=20, what="the alert expired")
    # the worker's next evaluation cycle re-posts what is still firing
    summary = tasks.evaluate_task.apply().get()
    assert summary["fired"] == 0 and summary["notifications"] == 0
    [again] = _eventually(lambda: _in_alertmanager(am, "am-resent"), what="the alert re-posted")
    assert again["labels"]["alertname"] == "lag" and again["status"]["state"] == "active"
    assert again["startsAt"] == first["startsAt"]  # the same episode, not a new one
    storms = tasks._Runtime.notifiers["am-storms"]
    assert isinstance(storms, AlertmanagerNotifier)
    assert storms.resend(AlertStore(redis_client).active()) == 0  # its filter holds on re-sends
    _lagging(redis_client, "am-resent", now + 1000, lag=0)
    assert [e["event"] for e in _cycle_and_notify()] == ["resolved"]
    _eventually(lambda: _in_alertmanager(am, "am-resent") == [], what="the alert resolved")


@pytest.mark.servers
def test_refusals_and_unreachable_alertmanager_are_retried_errors_without_secrets(
    alertmanager_server: AlertmanagerServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="collectors.alerts.notify")
    am = alertmanager_server
    event = make_event(
        "firing",
        {
            "id": "x|lag|1",
            "group": "x",
            "rule": "lag",
            "severity": "warning",
            "summary": "s",
            "since": int(time.time() * 1000),
            "until": None,
            "state": "firing",
            "evidence": {},
        },
    )
    # Alertmanager itself refuses an alert without labels (HTTP 400): the error says so
    good = build_notifier({"name": "am", "type": "alertmanager", "url": am.url + "/"})
    with pytest.raises(NotifyError, match=r"am: HTTP 400 from http://127\.0\.0\.1:\d+/api/v2/alerts"):
        good.post([{"labels": {}, "annotations": {}}])
    # the URL's password and token, and the bearer token, appear in no error and no retry log line
    dead = build_notifier(
        {
            "name": "am-dead",
            "type": "alertmanager",
            "url": f"http://ops:hunter2@127.0.0.1:{free_port()}/am?token=t0ps3cret",
            "timeout_s": 2,
        }
    )
    assert isinstance(dead, AlertmanagerNotifier) and dead.username == "ops" and dead.password == "hunter2"
    slept: list[float] = []
    with pytest.raises(NotifyError) as err:
        send_with_retry(dead, event, retries=2, backoff_s=0.5, sleep=slept.append)
    assert slept == [0.5, 1.0]
    assert "cannot reach http://127.0.0.1:" in str(err.value)
    assert len([r for r in caplog.records if "retry" in r.getMessage()]) == 2
    for secret in ("hunter2", "t0ps3cret"):
        assert secret not in str(err.value) and secret not in caplog.text
    bearer = build_notifier(
        {
            "name": "b",
            "type": "alertmanager",
            "url": f"http://127.0.0.1:{free_port()}",
            "bearer_token": "s3cr3t",
        }
    )
    with pytest.raises(NotifyError) as err:
        bearer.send(event)
    assert "s3cr3t" not in str(err.value)
    # a well-formed alert is accepted, and its resolution drops it
    good.send(event)
    _eventually(lambda: _in_alertmanager(am, "x"), what="the posted alert")
    good.send(
        make_event("resolved", {**event["alert"], "state": "resolved", "until": event["alert"]["since"] + 1})
    )
    _eventually(lambda: _in_alertmanager(am, "x") == [], what="the alert resolved")


def test_configuration_is_checked() -> None:
    cfg = parse_alerts(
        {
            "alerts": {
                "notifiers": [
                    {"type": "webhook", "url": "http://hooks.example.com/x"},
                    {"type": "alertmanager", "url": "https://am.example.com:9093", "clusters": ["prod"]},
                ]
            }
        }
    )
    assert [n["name"] for n in cfg.notifiers] == ["webhook-0", "alertmanager-1"]
    assert cfg.for_cluster("prod").notifiers[1]["type"] == "alertmanager"
    n = build_notifier(cfg.notifiers[1])
    assert isinstance(n, AlertmanagerNotifier)
    assert n.endpoint == "https://am.example.com:9093/api/v2/alerts"
    assert n.wants(make_event("firing", {"rule": "lag", "group": "g", "cluster": "prod"}))
    assert not n.wants(make_event("firing", {"rule": "lag", "group": "g", "cluster": "staging"}))
    bad = [
        ({"type": "alertmanager"}, "needs a url"),
        ({"type": "alertmanager", "url": "am:9093"}, "http:// or https://"),
        ({"type": "alertmanager", "url": "http://am", "bearer_tokn": "x"}, "unknown key"),
        ({"type": "alertmanager", "url": "http://am", "username": "u", "bearer_token": "t"}, "not both"),
        ({"type": "alertmanager", "url": "http://am", "resend_s": 0}, "resend_s"),
        ({"type": "alertmanager", "url": "http://am", "labels": {"group": "x"}}, "set by groupscope"),
        ({"type": "alertmanager", "url": "http://am", "verify_tls": "no"}, "verify_tls"),
        ({"type": "alertmanager", "url": "http://am", "clusters": ["Not A Name"]}, "cluster names"),
        ({"type": "pagerduty"}, "webhook, slack, email or alertmanager"),
    ]
    for spec, why in bad:
        with pytest.raises((SpecError, AlertConfigError), match=why):
            parse_alerts({"notifiers": [spec]})


def test_load_alert_config_reads_an_alertmanager_notifier(tmp_path, monkeypatch) -> None:
    from collectors.alerts.config import load_alert_config
    from collectors.config import Settings

    path = tmp_path / "alerts.yml"
    path.write_text(
        "notifiers:\n  - name: am\n    type: alertmanager\n    url: http://am:9093\n    resend_s: 30\n"
    )
    settings = Settings(alerts_file=str(path))
    [spec] = load_alert_config(settings).notifiers
    assert spec["type"] == "alertmanager" and spec["resend_s"] == 30
    path.write_text("notifiers:\n  - type: alertmanager\n    url: http://am:9093\n    passwd: x\n")
    with pytest.raises(ConfigError, match=r"alerts configuration \(.*alerts.yml\): notifiers\[0\]"):
        load_alert_config(settings)


@pytest.mark.skipif(
    _amtool is None,
    reason="amtool is not installed (Debian package 'prometheus-alertmanager'; `make test` installs it)",
)
def test_example_alertmanager_config_is_valid() -> None:
    out = subprocess.run([_amtool, "check-config", str(EXAMPLE)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout + out.stderr


@pytest.mark.servers
def test_the_cron_path_posts_firing_alerts_again_at_each_run(
    alertmanager_server: AlertmanagerServer, redis_server, redis_client, tmp_path, monkeypatch
) -> None:
    """`groupscope alerts evaluate` run from cron: the run that raises an alert posts it, and every
    later run posts it again though nothing changed (Alertmanager forgets an alert nobody posts)."""
    from click.testing import CliRunner

    from collectors.cli.main import cli

    am = alertmanager_server
    path = tmp_path / "alerts.yml"
    path.write_text(f"notifiers:\n  - name: am-cron\n    type: alertmanager\n    url: {am.url}\n")
    monkeypatch.setenv("GROUPSCOPE_ALERTS_FILE", str(path))
    _lagging(redis_client, "am-cron-orders", int(time.time() * 1000))
    runner = CliRunner()
    res = runner.invoke(cli, ["alerts", "evaluate", "--redis", redis_server.url, "--json"])
    assert res.exit_code == 0, res.output
    [first] = _eventually(lambda: _in_alertmanager(am, "am-cron-orders"), what="the alert in Alertmanager")
    time.sleep(1.1)  # Alertmanager keeps the latest post's updatedAt, to the second
    res = runner.invoke(cli, ["alerts", "evaluate", "--redis", redis_server.url, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["cycle"]["fired"] == 0  # no transition: only the re-post
    [again] = _in_alertmanager(am, "am-cron-orders")
    assert again["startsAt"] == first["startsAt"] and again["updatedAt"] > first["updatedAt"]
