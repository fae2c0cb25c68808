"""`groupscope worker` as a real process: Celery worker with embedded beat on the harness Redis,
evaluating every second the storm and poll-timeout captures (rebuilt by the coordinator model and
moved to now) beside steady, idle and lag-of-one groups, notifying through Celery tasks (a dead
webhook retried and given up, the others delivered), and serving /metrics."""

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
from test_alert_docs import capture_doc, part, steady_doc
from test_notif_servers import HookServer, SMTPServer, closed_port, three_channels, wait_for

from collectors.storage.alerts import AlertStore
from collectors.storage.redis_store import RedisStore

pytestmark = pytest.mark.servers
ROOT = Path(__file__).resolve().parent.parent


def test_worker_evaluates_notifies_and_serves_metrics(redis_client, redis_server, tmp_path) -> None:
    store = RedisStore(redis_client)
    alerts = AlertStore(redis_client)
    now = int(time.time() * 1000)
    # two real captures, rebuilt by the coordinator model as of a moment inside them, moved to now
    storm = capture_doc("rebalance-storm", 60_000, now)
    poll = capture_doc("poll-timeout", 45_000, now)
    store.write_groups([storm, poll], now)
    storm_group, poll_group = storm["group"], poll["group"]
    store.write_group(steady_doc("w-steady", t0=now - 3_600_000), now)
    store.write_group(steady_doc("w-idle", t0=now - 3_600_000, lag=[part("idle", 0, 0, 0.0)]), now)
    store.write_group(steady_doc("w-tx", t0=now - 3_600_000, lag=[part("tx", 0, 1, 7200.0, "STALL")]), now)
    metrics_port = closed_port()
    with HookServer() as hooks, SMTPServer() as smtp:
        conf = tmp_path / "alerts.yaml"
        conf.write_text(yaml.safe_dump(three_channels(hooks, smtp, backoff_s=0.2)))
        env = {**os.environ, "GROUPSCOPE_ALERTS_FILE": str(conf), "PYTHONUNBUFFERED": "1"}
        log_path = tmp_path / "worker.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "collectors.cli.main", "worker", "--redis", redis_server.url,
                 "--interval", "1", "--metrics-port", str(metrics_port), "--metrics-host", "127.0.0.1"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            assert wait_for(lambda: len(hooks.bodies("/hook")) >= 2, timeout=30), log_path.read_text()[-3000:]
            fired = {(b["event"], b["alert"]["group"], b["alert"]["rule"]) for b in hooks.bodies("/hook")}
            assert fired == {
                ("firing", storm_group, "rebalance_storm"),
                ("firing", poll_group, "member_lost"),
            }
            assert wait_for(lambda: len(smtp.messages) == 2, timeout=10)
            # exactly those: the steady, idle and lag-of-one groups stay quiet
            assert {(a["group"], a["rule"]) for a in alerts.active()} == {
                (storm_group, "rebalance_storm"), (poll_group, "member_lost"),
            }  # fmt: skip

            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
                fams = {f.name: f for f in text_string_to_metric_families(resp.read().decode())}
            firing = sorted(
                (s.labels["group"], s.labels["rule"]) for s in fams["groupscope_alert_firing"].samples
            )
            assert firing == sorted([(storm_group, "rebalance_storm"), (poll_group, "member_lost")])
            assert {s.labels["group"] for s in fams["groupscope_group_members"].samples} == {
                storm_group, poll_group, "w-steady", "w-idle", "w-tx",
            }  # fmt: skip

            # the storm is over (the collector writes a document with no recent rebalances): resolved
            store.write_group(steady_doc(storm_group, t0=now - 3_600_000), int(time.time() * 1000))
            assert wait_for(lambda: len(hooks.bodies("/hook")) >= 3, timeout=15)
            resolved = hooks.bodies("/hook")[2]
            assert (resolved["event"], resolved["alert"]["group"]) == ("resolved", storm_group)
            assert [a["group"] for a in alerts.active()] == [poll_group]
            [h] = alerts.history(group=storm_group)
            assert h["state"] == "resolved" and h["until"] >= h["since"]
            # the dead webhook was retried by Celery and given up, without holding up the others
            assert wait_for(lambda: log_path.read_text().count("gave up after 3 attempts") >= 3, timeout=15)
            assert log_path.read_text().count("notify dead failed") >= 6
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
