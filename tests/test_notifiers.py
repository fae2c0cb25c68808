"""Notifiers against a local HTTP server and a local SMTP server: JSON webhook, Slack payload, email;
retries with backoff; a dead channel never blocks the others."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from click.testing import CliRunner
from test_alert_docs import T0, S, storm_doc
from test_notif_servers import HookServer, SMTPServer, closed_port, three_channels, wait_for

from collectors.alerts.notifiers import build_notifier
from collectors.alerts.notify import (
    NotifyError,
    ThreadDispatcher,
    WebhookNotifier,
    backoff_delay,
    send_with_retry,
)
from collectors.cli.main import cli
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import parse_alert_config

EVENT = {
    "event": "firing",
    "alert": {
        "id": "orders|rebalance_storm|1",
        "group": "orders",
        "rule": "rebalance_storm",
        "state": "firing",
        "severity": "critical",
        "summary": "7 rebalances in the last 600 s (threshold 5)",
        "since": 1,
        "until": None,
        "evidence": {"rebalances": 7, "generations": [{"generation": 4, "cause": "member_joined"}]},
    },
}


def _notifiers(specs: list[dict]) -> list:
    cfg = parse_alert_config({"notifiers": specs})
    return [build_notifier(n) for n in cfg.notifiers]


def test_webhook_slack_and_email_receive_the_alert() -> None:
    with HookServer() as hooks, SMTPServer() as smtp:
        ns = _notifiers(
            [
                {"name": "hook", "type": "webhook", "url": hooks.url + "/hook", "headers": {"X-Token": "t"}},
                {"name": "slack", "type": "slack", "url": hooks.url + "/slack", "channel": "#ops"},
                {
                    "name": "mail",
                    "type": "email",
                    "host": "127.0.0.1",
                    "port": smtp.port,
                    "to": ["ops@example.com"],
                },
            ]
        )
        d = ThreadDispatcher(ns, retries=0, backoff_s=0.01)
        d.dispatch([EVENT])
        assert d.join(10)
        assert d.delivered == {"hook": 1, "slack": 1, "mail": 1} and d.failed == {}
        [body] = hooks.bodies("/hook")
        # an event of before clusters (no `cluster`) is the cluster `default`'s, and says so
        want = {"event": "firing", "cluster": "default", "alert": {**EVENT["alert"], "cluster": "default"}}
        assert body == want
        [slack] = hooks.bodies("/slack")
        assert slack["channel"] == "#ops" and "FIRING rebalance_storm on orders" in slack["text"]
        assert slack["attachments"][0]["color"] == "danger"
        [(sender, rcpts, msg, _)] = smtp.messages
        assert rcpts == ["ops@example.com"] and sender == "groupscope@localhost"
        # (a subject past 78 characters is folded on the wire: unfolded as a mail client reads it)
        subject = msg["Subject"].replace("\r\n", "").strip()
        assert subject == "[groupscope] FIRING rebalance_storm on orders in cluster default (critical)"
        assert msg["X-Groupscope-Cluster"] == "default"
        assert '"rebalances": 7' in msg.get_payload()


def test_failing_webhook_is_retried_with_backoff_until_it_answers() -> None:
    with HookServer(fail_first={"/flaky": 2}) as hooks:
        [n] = _notifiers([{"name": "flaky", "type": "webhook", "url": hooks.url + "/flaky"}])
        delays: list[float] = []
        attempts = send_with_retry(n, EVENT, retries=5, backoff_s=0.5, sleep=delays.append)
        assert attempts == 3 and hooks.attempts["/flaky"] == 3
        assert delays == [0.5, 1.0]
        assert len(hooks.bodies("/flaky")) == 1


def test_unreachable_webhook_is_retried_and_does_not_block_email() -> None:
    with SMTPServer() as smtp:
        dead = WebhookNotifier(name="dead", url=f"http://127.0.0.1:{closed_port()}/x", timeout_s=1)
        ns = [
            dead,
            *_notifiers(
                [{"name": "mail", "type": "email", "host": "127.0.0.1", "port": smtp.port, "to": "a@b"}]
            ),
        ]
        d = ThreadDispatcher(ns, retries=3, backoff_s=0.2)  # 0.2 + 0.4 + 0.8 s of backoff
        t0 = time.monotonic()
        d.dispatch([EVENT])
        assert wait_for(lambda: len(smtp.messages) == 1, timeout=5)
        mail_at = smtp.messages[0][3] - t0
        assert d.join(10)
        gave_up_at = time.monotonic() - t0
        assert d.failed == {"dead": 1} and d.delivered == {"mail": 1}
        assert mail_at < 1.0 <= gave_up_at  # the mail went out while the webhook was still retrying
    with pytest.raises(NotifyError, match="cannot reach"):
        dead.send(EVENT)


def test_channel_filters() -> None:
    [n] = _notifiers(
        [
            {
                "name": "h",
                "type": "webhook",
                "url": "http://x",
                "events": ["firing"],
                "min_severity": "critical",
            }
        ]
    )
    assert n.wants(EVENT)
    assert not n.wants({**EVENT, "event": "resolved"})
    assert not n.wants({**EVENT, "alert": {**EVENT["alert"], "severity": "warning"}})
    assert [backoff_delay(i, 1.0) for i in range(4)] == [1.0, 2.0, 4.0, 8.0] and backoff_delay(
        20, 1.0
    ) == 300.0


@pytest.mark.servers
def test_cli_evaluate_notifies_every_channel_despite_a_dead_one(redis_client, redis_server, tmp_path) -> None:
    store = RedisStore(redis_client)
    d, end = storm_doc("notified")
    store.write_group(d, end)
    with HookServer() as hooks, SMTPServer() as smtp:
        conf = tmp_path / "alerts.yaml"
        conf.write_text(yaml.safe_dump(three_channels(hooks, smtp, backoff_s=0.1)))
        res = CliRunner().invoke(
            cli,
            ["alerts", "evaluate", "--redis", redis_server.url, "--at", str(T0 + 30 * S)],
            env={"GROUPSCOPE_ALERTS_FILE": str(conf)},
        )
        assert res.exit_code == 0, res.output
        assert "1 fired" in res.output
        assert "notifier dead: 1 notification(s) not delivered" in res.output
        [body] = hooks.bodies("/hook")
        assert (body["event"], body["alert"]["group"], body["alert"]["rule"]) == (
            "firing",
            "notified",
            "rebalance_storm",
        )
        assert len(smtp.messages) == 1
        assert json.loads(json.dumps(body))["alert"]["evidence"]["rebalances"] >= 5
