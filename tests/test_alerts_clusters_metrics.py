"""/metrics over several Kafka clusters: a `cluster` label on every series of every cluster in one
scrape, the same group in two clusters as two series, a broken cluster reported by its own
`groupscope_scrape_errors` while the others are served, and the label added to the sink's stored
lines (collectors/storage/summaries.py) exactly, whatever groups and topics are called (hypothesis)."""

from __future__ import annotations

import threading
import urllib.request
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from test_alert_docs import T0, S, part, steady_doc, storm_doc

from collectors.alerts.cluster_cycle import ClusterEvaluator
from collectors.exporter.cluster_label import with_label
from collectors.exporter.scrape import FAMILIES, MetricsSource
from collectors.exporter.server import make_registry, make_wsgi_app
from collectors.storage.clusters import ClusterRegistry, cluster_prefix
from collectors.storage.metric_lines import GROUP_FAMILIES, metric_lines
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import parse_alert_config

Sample = tuple[str, tuple[tuple[str, str], ...]]


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _get(app) -> str:
    httpd = make_server("127.0.0.1", 0, app, handler_class=_Quiet)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{httpd.server_port}/metrics", timeout=30) as resp:
            return resp.read().decode()
    finally:
        httpd.shutdown()
        httpd.server_close()


def _samples(text: str | bytes) -> dict[Sample, float]:
    text = text.decode() if isinstance(text, bytes) else text
    out: dict[Sample, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, key  # no series twice (two clusters' groups never collide)
            out[key] = s.value
    return out


def _fill(client) -> None:
    """`orders` in `default` (lagging) and in prod (storming, 3 members), and a prod-only group."""
    registry = ClusterRegistry(client)
    d, end = storm_doc("orders")
    registry.register("prod", "prod:9092", now_ms=T0)
    prod = RedisStore(client, prefix=cluster_prefix("prod"))
    prod.write_group(d, end)
    prod.write_group(steady_doc("only-prod"), end)
    RedisStore(client).write_group(steady_doc("orders", lag=[part("orders", 0, 5000, 300.0, "STOP")]), end)
    ClusterEvaluator(client, parse_alert_config(None)).run_cycle(now_ms=T0 + 30 * S)


@pytest.mark.servers
def test_every_series_of_every_cluster_has_its_cluster_label(redis_client, redis_server) -> None:
    _fill(redis_client)
    text = _get(make_wsgi_app(redis_server.url))
    m = _samples(text)
    assert m and all(dict(labels).get("cluster") in ("default", "prod") for _, labels in m)
    # one HELP/TYPE per family whatever the number of clusters
    assert all(text.count(f"# TYPE {name} gauge\n") == 1 for name in FAMILIES if name in text)
    # the same group in two clusters: two series, each with its own values
    members = {dict(k[1])["cluster"]: v for k, v in m.items() if k[0] == "groupscope_group_members"
               and dict(k[1])["group"] == "orders"}  # fmt: skip
    assert set(members) == {"default", "prod"}
    lag = {dict(k[1])["cluster"]: v for k, v in m.items() if k[0] == "groupscope_group_lag_offsets"
           and dict(k[1])["group"] == "orders"}  # fmt: skip
    assert lag == {"default": 5000.0, "prod": 0.0}
    firing = {
        (dict(k[1])["cluster"], dict(k[1])["group"], dict(k[1])["rule"])
        for k in m
        if k[0] == "groupscope_alert_firing"
    }
    assert firing == {("default", "orders", "lag"), ("prod", "orders", "rebalance_storm")}
    assert m[("groupscope_groups", (("cluster", "prod"), ("state", "Stable")))] == 2
    assert m[("groupscope_groups", (("cluster", "default"), ("state", "Stable")))] == 1
    assert m[("groupscope_alerts_active", (("cluster", "prod"), ("rule", "rebalance_storm")))] == 1
    assert m[("groupscope_alert_cycle_groups_evaluated", (("cluster", "prod"),))] == 2
    assert m[("groupscope_scrape_errors", (("cluster", "default"),))] == 0
    assert m[("groupscope_scrape_errors", (("cluster", "prod"),))] == 0
    # a group of one cluster only is not in the other
    assert {dict(k[1])["cluster"] for k in m if dict(k[1]).get("group") == "only-prod"} == {"prod"}
    # the registry (prometheus_client) serves the same series; documents only give the same too
    assert _samples(generate_latest(make_registry(redis_server.url))) == m
    assert _samples(MetricsSource(redis_client, summaries=False).render()) == m
    # per partition, labelled too
    pp = _samples(MetricsSource(redis_client, per_partition=True).render())
    key = ("groupscope_partition_lag_offsets", (("cluster", "default"), ("group", "orders"),
                                                ("partition", "0"), ("topic", "orders")))  # fmt: skip
    assert pp[key] == 5000


@pytest.mark.servers
def test_a_broken_cluster_is_reported_and_the_others_served(redis_client, redis_server) -> None:
    _fill(redis_client)
    ClusterRegistry(redis_client).register("broken", None, now_ms=T0)
    redis_client.set("gs@broken:fleet", b"\xff garbage")  # a hash in the layout
    redis_client.hset("gs:clusters", "Not A Cluster!", "{")  # and garbage in the registry
    m = _samples(_get(make_wsgi_app(redis_server.url, clusters=["default", "configured"])))
    assert m[("groupscope_scrape_errors", (("cluster", "broken"),))] == 1
    assert m[("groupscope_scrape_errors", (("cluster", "prod"),))] == 0
    assert m[("groupscope_scrape_errors", (("cluster", "configured"),))] == 0  # configured, no data yet
    assert {dict(k[1])["cluster"] for k in m if k[0] == "groupscope_group_members"} == {"default", "prod"}
    registry = _samples(generate_latest(make_registry(redis_server.url)))
    assert registry[("groupscope_scrape_errors", (("cluster", "broken"),))] == 1


@pytest.mark.servers
def test_stored_lines_that_are_not_samples_are_left_out_of_their_cluster_only(
    redis_client, redis_server
) -> None:
    """Garbage in one cluster's stored lines (a value cut short of its newline would glue two
    groups' lines) would make Prometheus refuse the whole scrape: those lines are left out, the
    cluster reports scrape_errors 1, and every other line of every cluster is served."""
    _fill(redis_client)
    key = "gs@prod:summary:metrics:groupscope_group_members"
    redis_client.hset(key, "only-prod", b'groupscope_group_members{group="only-prod"} 1.0')  # no newline
    key = "gs@prod:summary:metrics:groupscope_group_rebalances_1h"
    redis_client.hset(key, "orders", b'garbage{group="orders"} 1.0\n')
    text = _get(make_wsgi_app(redis_server.url))
    m = _samples(text)  # parses: nothing glued, nothing malformed
    assert m[("groupscope_scrape_errors", (("cluster", "prod"),))] == 1
    assert m[("groupscope_scrape_errors", (("cluster", "default"),))] == 0
    members = {(dict(k[1])["cluster"], dict(k[1])["group"]) for k in m if k[0] == "groupscope_group_members"}
    assert members == {("default", "orders"), ("prod", "orders")}  # only-prod's was cut short
    rebalances = {(dict(k[1])["cluster"], dict(k[1])["group"]) for k in m
                  if k[0] == "groupscope_group_rebalances_1h"}  # fmt: skip
    assert rebalances == {("default", "orders"), ("prod", "only-prod")}
    assert {dict(k[1])["group"] for k in m if k[0] == "groupscope_group_lag_offsets"
            and dict(k[1])["cluster"] == "prod"} == {"orders", "only-prod"}  # fmt: skip
    assert (
        _samples(generate_latest(make_registry(redis_server.url)))[
            ("groupscope_scrape_errors", (("cluster", "prod"),))
        ]
        == 1
    )


def test_unreachable_redis_reports_every_configured_cluster() -> None:
    m = _samples(MetricsSource(_dead_client(), clusters=["default", "prod"]).render())
    assert m == {
        ("groupscope_scrape_errors", (("cluster", "default"),)): 1.0,
        ("groupscope_scrape_errors", (("cluster", "prod"),)): 1.0,
    }
    registry = _samples(generate_latest(make_registry("redis://127.0.0.1:1/0", clusters=["prod"])))
    assert registry == {("groupscope_scrape_errors", (("cluster", "prod"),)): 1.0}


def _dead_client():
    import redis

    return redis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)


# --- the label on stored lines ----------------------------------------------------------------------

# Names that could fool a replace at line starts: braces, quotes, backslashes, newlines (escaped by
# the text format), commas, equals signs, spaces, and the families' own names.
ODD = st.lists(
    st.sampled_from(["{", "}", '"', "\\", "\n", ",", "=", " ", "a", "é", "#", *GROUP_FAMILIES]),
    max_size=6,
).map("".join)
NUMBERS = st.floats(allow_nan=False) | st.integers(-(2**40), 2**40)


@st.composite
def group_lines(draw) -> tuple[str, list[str]]:
    group = draw(ODD.filter(bool))
    topics = draw(
        st.lists(st.tuples(ODD.filter(bool), NUMBERS, NUMBERS), max_size=3, unique_by=lambda t: t[0])
    )
    values = [
        draw(ODD.filter(bool)),  # state
        draw(NUMBERS),
        draw(st.none() | NUMBERS),  # a generation, or none (no line)
        draw(NUMBERS),
        draw(NUMBERS),
        draw(NUMBERS),
        topics,
    ]
    return group, metric_lines(group, values)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(group_lines(), max_size=6, unique_by=lambda g: g[0]),
    st.sampled_from(["default", "prod-1", "a.b_c"]),
)
def test_the_label_goes_into_every_stored_line_and_nowhere_else(groups, cluster) -> None:
    label = f'cluster="{cluster}"'.encode()
    for i, family in enumerate(GROUP_FAMILIES):
        lines = [g_lines[i].encode() for _, g_lines in groups]
        plain = b"".join(lines).decode()
        labelled = with_label(family, lines, label).decode()
        want = {(name, tuple(sorted([*labels, ("cluster", cluster)]))): v for (name, labels), v in _samples(
            f"# TYPE {family} gauge\n{plain}").items()}  # fmt: skip
        assert _samples(f"# TYPE {family} gauge\n{labelled}") == want
        assert labelled.count("\n") == plain.count("\n")


def test_lines_without_labels_get_the_label_too() -> None:
    family = "groupscope_group_members"
    lines = [
        b"groupscope_group_members 3.0\n",
        b'groupscope_group_members{group="groupscope_group_members 1"} 2.0\n',
        b"",
        b'groupscope_group_members{group="x\\ngroupscope_group_members{"} 1.0\n',
    ]
    text = with_label(family, lines, b'cluster="p"').decode()
    assert text.splitlines() == [
        'groupscope_group_members{cluster="p"} 3.0',
        'groupscope_group_members{cluster="p",group="groupscope_group_members 1"} 2.0',
        'groupscope_group_members{cluster="p",group="x\\ngroupscope_group_members{"} 1.0',
    ]
    assert with_label(family, [], b'cluster="p"') == b""
    # lines that are not samples of the family are left out, the others kept
    odd = [
        b"groupscope_group_members 3.0",  # cut short: glued to the next value's line
        b'groupscope_group_members{g="b"} 1\n',
        b"other 1\n",
        b'groupscope_group_members{g="a"} 2\n',
    ]
    assert with_label(family, odd, b'cluster="p"').splitlines() == [
        b'groupscope_group_members{cluster="p",g="b"} 1',
        b'groupscope_group_members{cluster="p",g="a"} 2',
    ]
    assert with_label(family, odd[:1], b'cluster="p"') == b""  # cut short, alone
