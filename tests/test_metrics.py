"""/metrics over HTTP, read from the real Redis at scrape time, parsed with prometheus-client's parser."""

from __future__ import annotations

import threading
import urllib.request
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_alert_docs import T0, S, part, steady_doc, storm_doc, wordcount_doc

from collectors.alerts.evaluate import Evaluator
from collectors.exporter.scrape import MetricsSource
from collectors.exporter.server import make_wsgi_app
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import parse_alert_config

pytestmark = pytest.mark.servers


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _scrape(app) -> dict[str, dict[tuple, float]]:
    httpd = make_server("127.0.0.1", 0, app, handler_class=_Quiet)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{httpd.server_port}/metrics", timeout=10) as resp:
            assert resp.status == 200
            text = resp.read().decode()
    finally:
        httpd.shutdown()
        httpd.server_close()
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            # every series names its Kafka cluster; these tests have the one cluster `default`
            labels = dict(s.labels)
            assert labels.pop("cluster") == "default", s
            out.setdefault(s.name, {})[tuple(sorted(labels.items()))] = s.value
    return out


def _fill(redis_client) -> None:
    store = RedisStore(redis_client)
    d, end = storm_doc("m-storm")
    store.write_group(d, end)
    lag = [
        part("orders", 0, 5000, 300.0, "STOP"),
        part("orders", 1, 1000, 20.0, "OK"),
        part("audit", 0, 1, 900.0, "STALL"),
    ]
    store.write_group(steady_doc("m-lagging", lag=lag), end)
    Evaluator(redis_client, parse_alert_config(None)).run_cycle(now_ms=T0 + 30 * S)


def test_metrics_per_group_topic_and_alerts(redis_client, redis_server) -> None:
    _fill(redis_client)
    m = _scrape(make_wsgi_app(redis_server.url))
    assert m["groupscope_groups"][(("state", "Stable"),)] == 2
    assert m["groupscope_groups_by_type"] == {(("state", "Stable"), ("type", "classic")): 2}
    assert m["groupscope_group_state"][(("group", "m-storm"), ("state", "Stable"))] == 1
    assert m["groupscope_group_generation"][(("group", "m-storm"),)] == 43
    assert m["groupscope_group_rebalances_1h"][(("group", "m-storm"),)] == 43
    assert m["groupscope_group_lag_offsets"][(("group", "m-lagging"),)] == 6001
    assert m["groupscope_group_lag_seconds"][(("group", "m-lagging"),)] == 900.0
    assert m["groupscope_group_topic_lag_offsets"][(("group", "m-lagging"), ("topic", "orders"))] == 6000
    assert m["groupscope_group_topic_lag_seconds"][(("group", "m-lagging"), ("topic", "orders"))] == 300.0
    assert m["groupscope_group_topic_lag_offsets"][(("group", "m-lagging"), ("topic", "audit"))] == 1
    assert "groupscope_partition_lag_offsets" not in m  # bounded cardinality by default
    firing = m["groupscope_alert_firing"]
    assert firing[(("group", "m-storm"), ("rule", "rebalance_storm"), ("severity", "critical"))] == 1
    assert firing[(("group", "m-lagging"), ("rule", "lag"), ("severity", "critical"))] == 1
    assert len(firing) == 2  # the lag of one on 'audit' did not alert
    assert m["groupscope_alerts_active"][(("rule", "lag"),)] == 1
    assert m["groupscope_alert_cycle_groups_evaluated"][()] == 2
    assert m["groupscope_scrape_errors"][()] == 0


def test_metrics_per_partition_when_enabled(redis_client, redis_server) -> None:
    _fill(redis_client)
    m = _scrape(make_wsgi_app(redis_server.url, per_partition=True))
    key = (("group", "m-lagging"), ("partition", "0"), ("topic", "orders"))
    assert m["groupscope_partition_lag_offsets"][key] == 5000
    assert m["groupscope_partition_lag_seconds"][key] == 300.0


def test_a_streams_groups_lag_per_task(redis_client, redis_server) -> None:
    """A streams group's lag per active task (its subtopology's partitions summed, their worst
    seconds), from the sink's summaries and, the same, from the document; no task series for a group
    of another kind."""
    _fill(redis_client)
    RedisStore(redis_client).write_groups([wordcount_doc()], T0)
    m = _scrape(make_wsgi_app(redis_server.url))
    offsets, seconds = m["groupscope_streams_task_lag_offsets"], m["groupscope_streams_task_lag_seconds"]
    assert offsets == {
        (("group", "wordcount"), ("task", "0_0")): 10,
        (("group", "wordcount"), ("task", "0_1")): 0,
        (("group", "wordcount"), ("task", "1_0")): 7,
    }
    assert seconds[(("group", "wordcount"), ("task", "0_0"))] == 2.5 and len(seconds) == 3
    # every group read from its document: the same lines
    text = MetricsSource(redis_client, summaries=False).render().decode()
    assert 'groupscope_streams_task_lag_offsets{cluster="default",group="wordcount",task="1_0"} 7.0' in text
    assert "m-lagging" not in "".join(line for line in text.splitlines() if "task_lag" in line)
    # stored for the streams group alone, and gone with it
    assert redis_client.hkeys("gs:summary:metrics:groupscope_streams_task_lag_offsets") == [b"wordcount"]
    RedisStore(redis_client).delete_group("wordcount")
    assert not redis_client.exists("gs:summary:metrics:groupscope_streams_task_lag_offsets")
    assert "groupscope_streams_task_lag_offsets" not in _scrape(make_wsgi_app(redis_server.url))


def test_unreachable_redis_is_reported_not_raised() -> None:
    m = _scrape(make_wsgi_app("redis://127.0.0.1:1/0"))
    assert m["groupscope_scrape_errors"][()] == 1
