"""`groupscope worker` as a real process: Celery worker with embedded beat on the harness Redis,
evaluating every second, notifying through Celery tasks, and serving /metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from test_alert_docs import part, steady_doc, storm_doc
from test_notif_servers import HookServer, SMTPServer, closed_port, wait_for

from collectors.alerts.store import AlertStore
from collectors.redis_store import RedisStore

pytestmark = pytest.mark.servers
ROOT = Path(__file__).resolve().parent.parent


def test_worker_evaluates_notifies_and_serves_metrics(redis_client, redis_server, tmp_path) -> None:
    store = RedisStore(redis_client)
    alerts = AlertStore(redis_client)
    now = int(time.time() * 1000)
    storm, _ = storm_doc("w-storm", flaps=8, t0=now - 40_000)
    store.write_group(storm, now)
    store.write_group(steady_doc("w-steady", t0=now - 3_600_000), now)
    store.write_group(steady_doc("w-idle", t0=now - 3_600_000, lag=[part("idle", 0, 0, 0.0)]), now)
    store.write_group(steady_doc("w-tx", t0=now - 3_600_000, lag=[part("tx", 0, 1, 7200.0, "STALL")]), now)
    metrics_port = closed_port()
    with HookServer() as hooks, SMTPServer() as smtp:
        conf = tmp_path / "alerts.yaml"
        conf.write_text(
            yaml.safe_dump(
                {
                    "notify": {"retries": 2, "backoff_s": 0.2},
                    "notifiers": [
                        {
                            "name": "dead",
                            "type": "webhook",
                            "url": f"http://127.0.0.1:{closed_port()}/",
                            "timeout_s": 1,
                        },
                        {"name": "hook", "type": "webhook", "url": hooks.url + "/hook"},
                        {
                            "name": "mail",
                            "type": "email",
                            "host": "127.0.0.1",
                            "port": smtp.port,
                            "to": ["ops@x"],
                        },
                    ],
                }
            )
        )
        env = {**os.environ, "GROUPSCOPE_ALERTS_FILE": str(conf), "PYTHONUNBUFFERED": "1"}
        log_path = tmp_path / "worker.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "collectors.cli.main", "worker", "--redis", redis_server.url,
                 "--interval", "1", "--metrics-port", str(metrics_port), "--metrics-host", "127.0.0.1"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            assert wait_for(lambda: len(hooks.bodies("/hook")) >= 1, timeout=30), log_path.read_text()[-3000:]
            [fired] = hooks.bodies("/hook")
            assert (fired["event"], fired["alert"]["group"], fired["alert"]["rule"]) == (
                "firing", "w-storm", "rebalance_storm",
            )  # fmt: skip
            assert wait_for(lambda: len(smtp.messages) == 1, timeout=10)
            # only the storm fires: steady, idle and lag-of-one groups stay quiet
            assert [(a["group"], a["rule"]) for a in alerts.active()] == [("w-storm", "rebalance_storm")]

            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
                fams = {f.name: f for f in text_string_to_metric_families(resp.read().decode())}
            firing = [s.labels for s in fams["groupscope_alert_firing"].samples]
            assert firing == [{"group": "w-storm", "rule": "rebalance_storm", "severity": "critical"}]
            assert {s.labels["group"] for s in fams["groupscope_group_members"].samples} == {
                "w-storm", "w-steady", "w-idle", "w-tx",
            }  # fmt: skip

            # the storm is over (the collector writes a document with no recent rebalances): resolved
            store.write_group(steady_doc("w-storm", t0=now - 3_600_000), int(time.time() * 1000))
            assert wait_for(lambda: len(hooks.bodies("/hook")) >= 2, timeout=15)
            assert hooks.bodies("/hook")[1]["event"] == "resolved"
            assert alerts.active() == []
            [h] = alerts.history(group="w-storm")
            assert h["state"] == "resolved" and h["until"] >= h["since"]
            # the dead webhook was retried by Celery and given up, without holding up the others
            assert wait_for(lambda: log_path.read_text().count("gave up after 3 attempts") >= 2, timeout=15)
            assert log_path.read_text().count("notify dead failed") >= 4
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, log_path.read_text()[-3000:]
    # a warm shutdown leaves no beat or worker process behind
    time.sleep(0.2)
    assert "Traceback" not in log_path.read_text()
