"""Security against real listeners of the harness's Apache Kafka broker: the collector and its Admin
poller with SASL/SCRAM credentials from the config file, and with TLS settings from GROUPSCOPE_KAFKA__*
environment variables; a wrong password is one clear error and a retry, and no secret appears in any
log line, in Redis (what every page shows) or in the collector's output."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import SASL_USERS

from collectors.config import load_settings
from collectors.kafka_clients import failure_log
from collectors.pipeline.admin_poller import AdminPoller
from collectors.pipeline.job import PipelineConfig, run_pipeline
from collectors.pipeline.topic_check import check_topics
from collectors.storage.redis_store import RedisStore

pytestmark = [pytest.mark.servers, pytest.mark.slow]

WRONG = "not-the-Password-42"


def wait_until(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def make_group(bootstrap: str, group: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 3, 1)]).values():
        f.result(30)
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, 10 + p) for p in range(3)])
    admin.alter_consumer_group_offsets([req])[group].result(30)


def settings_for(monkeypatch, tmp_path: Path, yaml_text: str = "", env: dict[str, str] | None = None):
    cfg = tmp_path / "groupscope.yaml"
    cfg.write_text(yaml_text)
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(cfg))
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    return load_settings()


def run_collector(spark: Any, cfg: PipelineConfig) -> tuple[threading.Event, threading.Thread, list]:
    stop, errors = threading.Event(), []

    def body() -> None:
        try:
            run_pipeline(cfg, spark, progress=False, stop_event=stop)
        except BaseException as e:  # surfaced by the test
            errors.append(e)

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return stop, t, errors


def test_collector_over_sasl_from_the_config_file_and_tls_from_the_environment(
    spark, kafka_broker, redis_server, monkeypatch, tmp_path: Path, caplog
) -> None:
    caplog.set_level(logging.DEBUG, logger="groupscope")
    bs = kafka_broker.bootstrap_servers
    make_group(bs, "sec-sasl-group", "sec-sasl-topic")
    make_group(bs, "sec-tls-group", "sec-tls-topic")
    password = SASL_USERS["groupscope"]
    sasl = settings_for(
        monkeypatch,
        tmp_path,
        f"bootstrap_servers: {kafka_broker.sasl_bootstrap_servers}\n"
        "kafka:\n  security.protocol: SASL_PLAINTEXT\n  sasl.mechanism: SCRAM-SHA-512\n"
        f"  sasl.username: groupscope\n  sasl.password: {password}\n",
    )
    assert sasl.kafka["sasl.password"] == password
    tls = settings_for(
        monkeypatch,
        tmp_path,
        "",
        {
            "GROUPSCOPE_BOOTSTRAP_SERVERS": kafka_broker.ssl_bootstrap_servers,
            "GROUPSCOPE_KAFKA__SECURITY.PROTOCOL": "SSL",
            "GROUPSCOPE_KAFKA__SSL.CA.LOCATION": str(kafka_broker.tls.ca_pem),
        },
    )
    assert tls.kafka == {"security.protocol": "SSL", "ssl.ca.location": str(kafka_broker.tls.ca_pem)}
    runs = []
    # Two collectors side by side: the second in a session of its own (an active query's name is
    # unique per session), each with its own checkpoint, admin topic and Redis DB.
    for name, s, db, session in (("sasl", sasl, 3, spark), ("tls", tls, 4, spark.newSession())):
        url = redis_server.url.rsplit("/", 1)[0] + f"/{db}"
        RedisStore.from_url(url).r.flushdb()
        cfg = PipelineConfig(
            redis_url=url,
            checkpoint_dir=str(tmp_path / f"ckpt-{name}"),
            kafka=s.kafka_config(),
            admin_poll_interval_s=1.0,
            admin_topic=f"groupscope.admin.sec-{name}",
        )
        runs.append((name, RedisStore.from_url(url), run_collector(session, cfg)))
    try:
        for name, store, (_stop, _t, errors) in runs:
            group = f"sec-{name}-group"
            # the offsets topic (committed offsets) and the Admin poller (describe: Empty, no members)
            doc = wait_until(
                lambda store=store, group=group, errors=errors: (
                    errors
                    or ((d := store.get_group(group)) and {"offsets", "describe"} <= set(d["sources"]) and d)
                ),
                240,
                f"{group} over {name} with offsets and describe",
            )
            assert not errors, errors
            assert sorted((o["topic"], o["partition"], o["offset"]) for o in doc["offsets"]) == [
                (f"sec-{name}-topic", p, 10 + p) for p in range(3)
            ]
            assert doc["state"] == "Empty"
            sources = store.freshness()["sources"]
            assert sources["__consumer_offsets"]["ok"] and sources["admin"]["ok"], sources
    finally:
        for _name, _store, (stop, t, _errors) in runs:
            stop.set()
            t.join(60)
    text = caplog.text
    assert password not in text


def test_a_wrong_password_is_one_clear_error_and_a_retry(kafka_broker, redis_client, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="groupscope")
    for f in failure_log.filters:
        f.forget()  # what an earlier test had said is not held against this one
    conf = {
        "bootstrap.servers": kafka_broker.sasl_bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "groupscope",
        "sasl.password": WRONG,
    }
    store = RedisStore(redis_client)
    cfg = PipelineConfig(
        redis_url="", checkpoint_dir="", kafka=conf, admin_poll_interval_s=0.5, metadata_timeout_s=2
    )
    _topics, offsets_ok = check_topics(cfg, store, timeout_s=2)
    assert not offsets_ok
    said = [r for r in caplog.records if "cannot authenticate" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]  # one clear error, not one per attempt
    msg = said[0].getMessage()
    assert "user 'groupscope' (SCRAM-SHA-256)" in msg and kafka_broker.sasl_bootstrap_servers in msg
    status = store.freshness()["sources"]["kafka"]
    assert not status["ok"] and "cannot authenticate" in status["detail"]

    poller = AdminPoller(cfg, store)
    poller.start()
    try:
        wait_until(lambda: poller.failures >= 2, 90, "the Admin poller's retry")
    finally:
        poller.stop()
        poller.join(30)
    admin = store.freshness()["sources"]["admin"]
    assert not admin["ok"] and "cannot authenticate" in admin["detail"]
    # the poller's retries found the reason the start-up check gave: not said again within a minute
    said = [r for r in caplog.records if "cannot authenticate" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
    everything = caplog.text + str(redis_client.hgetall("gs:sources"))
    assert WRONG not in everything


def test_collect_with_a_wrong_password_says_so_once_and_leaks_nothing(
    kafka_broker, redis_server, tmp_path: Path
) -> None:
    """The real command, its whole output read: librdkafka's own lines go through our logger."""
    cfg = tmp_path / "groupscope.yaml"
    cfg.write_text(
        f"bootstrap_servers: {kafka_broker.sasl_bootstrap_servers}\n"
        "kafka:\n  security.protocol: SASL_PLAINTEXT\n  sasl.mechanism: SCRAM-SHA-512\n"
        f"  sasl.username: groupscope\n  sasl.password: {WRONG}\n"
        f"redis_url: {redis_server.url.rsplit('/', 1)[0]}/5\ncheckpoint_dir: {tmp_path / 'ckpt'}\n"
    )
    env = {**os.environ, "GROUPSCOPE_CONFIG": str(cfg), "SPARK_LOCAL_IP": "127.0.0.1"}
    cmd = [sys.executable, "-m", "collectors.cli.main", "collect", "--no-progress", "--master", "local[1]"]
    # long enough for the start-up check, Spark's start and the Admin poller's first polls
    proc = subprocess.run([*cmd, "--duration", "12"], env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert WRONG not in out
    assert out.count("cannot authenticate to Kafka") == 1, out[-3000:]
    librdkafka = [line for line in out.splitlines() if "SASL authentication error" in line]
    assert len(librdkafka) <= 3, "librdkafka's own lines are not repeated at every reconnect"


# ---- least privilege: the broker enforces ACLs (StandardAuthorizer; conftest.acl_grants) ----------
def sasl_conf(user: str, bootstrap: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": SASL_USERS[user],
        "bootstrap.servers": bootstrap,
    }


class LiveMember(threading.Thread):
    """One real consumer of `group` (as the tests' own super user), polling until stopped."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": f"{group}-member",
                "session.timeout.ms": 6000,
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 500,
            }
        )
        self.consumer.subscribe([topic])
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.consumer.poll(0.2)
        self.consumer.close()  # LeaveGroup: the group goes Empty


def banner_of(redis_url: str) -> Any:
    """The dashboard shell's banner (its health callback through Dash's endpoint, as a page asks)."""
    from collectors.config import Settings
    from dashboard.app import create_app

    app = create_app(Settings(redis_url=redis_url), background_mode="celery")
    body = {
        "output": "..freshness.children...banner.children...banner.className..",
        "outputs": [
            {"id": "freshness", "property": "children"},
            {"id": "banner", "property": "children"},
            {"id": "banner", "property": "className"},
        ],
        "inputs": [
            {"id": "tick", "property": "n_intervals", "value": 1},
            {"id": "url", "property": "pathname", "value": "/"},
        ],
        "changedPropIds": ["tick.n_intervals"],
        "state": [],
    }
    resp = app.server.test_client().post("/_dash-update-component", json=body)
    assert resp.status_code == 200, resp.data[:500]
    return resp.get_json()["response"]["banner"]


def test_least_privilege_on_a_broker_that_enforces_acls(
    spark, kafka_broker, redis_server, tmp_path: Path, caplog
) -> None:
    """Two collectors side by side, each as its own principal: `gs-admin-only` may not read
    __consumer_offsets (it runs on the Admin API alone, says so once, in gs:sources and on every
    page, and still shows a live group's members, assignment, lag and timeline); `gs-one-denied`
    may not describe one group (that group shows what the offsets topic tells and why the rest is
    missing; the others are whole). The `groupscope` principal with the full set is the first test
    of this file."""
    from conftest import DENIED_GROUP, HIDDEN_TOPIC

    caplog.set_level(logging.DEBUG, logger="groupscope")
    bs = kafka_broker.bootstrap_servers  # the tests' own setup: a super user
    make_group(bs, "sec-acl-ok-group", "sec-acl-ok-topic")
    make_group(bs, DENIED_GROUP, "sec-acl-denied-topic")
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics(
        [NewTopic("sec-acl-live-topic", 2, 1), NewTopic(HIDDEN_TOPIC, 2, 1)]
    ).values():
        f.result(30)
    member = LiveMember(bs, "sec-acl-live-group", "sec-acl-live-topic")
    member.start()
    # a group reading a topic gs-one-denied may not describe: its end offsets (so its lag) are refused
    reader = LiveMember(bs, "sec-acl-hidden-group", HIDDEN_TOPIC)
    reader.start()
    runs = {}
    for user, db, session in (("gs-admin-only", 6, spark), ("gs-one-denied", 7, spark.newSession())):
        url = redis_server.url.rsplit("/", 1)[0] + f"/{db}"
        RedisStore.from_url(url).r.flushdb()
        cfg = PipelineConfig(
            redis_url=url,
            checkpoint_dir=str(tmp_path / f"ckpt-{user}"),
            kafka=sasl_conf(user, kafka_broker.sasl_bootstrap_servers),
            admin_poll_interval_s=1.0,
            admin_topic=f"groupscope.admin.{user}",
        )
        runs[user] = (url, RedisStore.from_url(url), run_collector(session, cfg))
    try:
        # -- Admin API only ------------------------------------------------------------------------
        url, store, (_stop, _t, errors) = runs["gs-admin-only"]

        def stable_with_member() -> Any:
            d = store.get_group("sec-acl-live-group")
            # the pipeline's document (the Admin poller's provisional one comes first)
            return d if d and d["state"] == "Stable" and d["members"] and not d.get("provisional") else None

        live = wait_until(
            lambda: errors or stable_with_member(),
            240,
            "the live group, Stable with its member, from the Admin API",
        )
        assert not errors, errors
        assert "offsets" not in live["sources"] and "describe" in live["sources"], live["sources"]
        [m] = live["members"]
        assert m["client_id"] == "sec-acl-live-group-member"
        assert sorted(map(tuple, m["assignment"])) == [("sec-acl-live-topic", 0), ("sec-acl-live-topic", 1)]
        ok = wait_until(
            lambda: (d := store.get_group("sec-acl-ok-group")) and not d.get("provisional") and d,
            60,
            "a group with offsets only",
        )
        # committed offsets through OffsetFetch, lag against the end offsets
        assert sorted((o["topic"], o["partition"], o["offset"]) for o in ok["offsets"]) == [
            ("sec-acl-ok-topic", p, 10 + p) for p in range(3)
        ]
        assert {p["partition"]: p["committed"] for p in ok["lag"]["partitions"]} == {0: 10, 1: 11, 2: 12}
        status = store.freshness()["sources"]["__consumer_offsets"]
        assert not status["ok"] and "not authorized to read __consumer_offsets" in status["detail"], status
        said = [r for r in caplog.records if "not authorized to read __consumer_offsets" in r.getMessage()]
        assert len(said) == 1, [r.getMessage() for r in said]  # said once, at start
        banner = str(banner_of(url))
        assert "History since groupscope started; offsets topic not readable" in banner, banner
        # the member leaves: the timeline goes on from what the poller sees
        member.halt.set()
        member.join(30)
        gone = wait_until(
            lambda: (d := store.get_group("sec-acl-live-group")) and d["state"] == "Empty" and d,
            60,
            "the live group Empty after its member left",
        )
        states = [b["state"] for b in gone["timeline"]]
        assert "Stable" in states and states[-1] == "Empty", gone["timeline"]
        assert gone["generations"], "its generation, seen through the Admin API"

        # -- one group denied ---------------------------------------------------------------------
        url, store, (_stop, _t, errors) = runs["gs-one-denied"]
        hidden = wait_until(
            lambda: errors or ((d := store.get_group(DENIED_GROUP)) and d.get("denied") and d),
            240,
            f"{DENIED_GROUP} marked as denied",
        )
        assert not errors, errors
        assert "GROUP_AUTHORIZATION_FAILED" in hidden["denied"]["describe"]["error"], hidden["denied"]
        assert "offsets" in hidden["sources"] and "describe" not in hidden["sources"], hidden["sources"]
        assert sorted((o["topic"], o["partition"], o["offset"]) for o in hidden["offsets"]) == [
            ("sec-acl-denied-topic", p, 10 + p) for p in range(3)
        ]
        assert any("refuses to describe" in n for n in hidden["inferred"]), hidden["inferred"]
        fine = wait_until(
            lambda: (d := store.get_group("sec-acl-ok-group")) and "describe" in d["sources"] and d,
            60,
            "the other group described",
        )
        assert "denied" not in fine and store.freshness()["sources"]["__consumer_offsets"]["ok"]
        partial = wait_until(
            lambda: (
                (d := store.get_group("sec-acl-hidden-group")) and "end_offsets" in d.get("denied", {}) and d
            ),
            120,
            "the group of the hidden topic marked: its end offsets refused",
        )
        why = partial["denied"]["end_offsets"]["error"]
        assert "TOPIC_AUTHORIZATION_FAILED" in why and HIDDEN_TOPIC in why, why
        assert partial["state"] == "Stable" and partial["members"], partial["state"]  # the rest is whole
        assert all(p.get("end_offset") is None for p in partial["lag"]["partitions"]), partial["lag"]
        assert any("refuses the end offsets" in n for n in partial["inferred"]), partial["inferred"]
    finally:
        member.halt.set()
        reader.halt.set()
        for _url, _store, (stop, t, _errors) in runs.values():
            stop.set()
            t.join(60)
    everything = caplog.text
    assert not [p for p in SASL_USERS.values() if p in everything]
