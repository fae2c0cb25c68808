"""The Admin poller in a process of its own (collectors/pipeline/admin_process.py), on the harness's
real broker and Redis: a child that dies as librdkafka's abort kills it (SIGABRT) is said to have
died, in the log and the "admin" source's status, and another is started that polls on; stopping the
collector's thread stops its child."""

from __future__ import annotations

import logging
import os
import signal
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from test_pipeline_live import wait_until

from collectors.pipeline.admin_process import AdminProcess, death_reason
from collectors.pipeline.job import PipelineConfig
from collectors.storage.redis_store import RedisStore


def test_death_reasons_name_the_signal_and_the_abort() -> None:
    assert death_reason(-int(signal.SIGABRT)).startswith("SIGABRT: librdkafka aborted it")
    assert death_reason(-int(signal.SIGKILL)) == "SIGKILL"
    assert death_reason(3) == "exit status 3"


@pytest.mark.servers
def test_an_aborted_poller_process_is_said_and_started_again(kafka_broker, redis_server, tmp_path, caplog):
    u = uuid.uuid4().hex[:8]
    bs = kafka_broker.bootstrap_servers
    admin_topic = f"admin-proc-{u}"
    client = AdminClient({"bootstrap.servers": bs})  # held until its answer: a dropped client cancels
    client.create_topics([NewTopic(admin_topic, 1, 1)])[admin_topic].result(30)
    cfg = PipelineConfig(
        redis_url=redis_server.url,
        checkpoint_dir=str(tmp_path / "ckpt"),
        cluster=f"proc{u}",  # a Redis prefix of its own
        kafka={"bootstrap.servers": bs},
        admin_topic=admin_topic,
        admin_poll_interval_s=1.0,
    )
    store = RedisStore.from_url(redis_server.url, prefix=cfg.prefix)

    def admin_status() -> dict[str, Any]:
        return store.freshness()["sources"].get("admin") or {}

    ap = AdminProcess(cfg, store, offsets_readable=True)
    ap.start()
    try:
        wait_until(lambda: admin_status().get("ok") is True, 60, "the first child's poll")
        assert ap.proc is not None
        first = ap.proc.pid
        with caplog.at_level(logging.WARNING, logger="groupscope.admin"):
            os.kill(first, signal.SIGABRT)
            wait_until(lambda: ap.deaths, 20, "the death seen")
            assert ap.deaths[0].startswith("SIGABRT"), ap.deaths
            said = wait_until(lambda: "SIGABRT" in (admin_status().get("detail") or ""), 20, "its status")
            assert said and admin_status()["ok"] is False
            assert any("Admin poller's process ended (SIGABRT" in r.getMessage() for r in caplog.records)
        # another child, which polls: the source is well again (its status written after a poll)
        wait_until(lambda: ap.proc is not None and ap.proc.pid != first, 20, "a new child")
        wait_until(lambda: admin_status().get("ok") is True, 60, "the new child's poll")
        assert ap.starts == 2 and ap.is_alive()
    finally:
        ap.stop()
        ap.join(30)
    assert not ap.is_alive()
    assert ap.proc is not None and ap.proc.poll() is not None  # the child went with the thread
    assert len(ap.deaths) == 1  # a child told to stop is not a death


def test_what_the_collector_said_the_childs_loggers_hold_back() -> None:
    """A reason the collector logged (its start-up check) is not logged again by the poller's child
    within the minute: the child's once-a-minute filters start from the collector's (said_so_far)."""
    from collectors.kafka_clients import OncePerMinute, already_said, failure_log, said_so_far

    for f in failure_log.filters:
        f.forget()
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    failure_log.addHandler(handler)
    try:
        failure_log.warning("cannot authenticate (attempt 1)", extra={"reason": "cannot authenticate"})
        said = said_so_far()
        assert said["failures"] and said["librdkafka"] == {}
        for f in failure_log.filters:
            f.forget()  # as a new process's filters are
        already_said(said)
        failure_log.warning("admin poll failed: cannot authenticate", extra={"reason": "cannot authenticate"})
        failure_log.warning("another reason", extra={"reason": "unreachable"})
        assert [r.getMessage() for r in records] == ["cannot authenticate (attempt 1)", "another reason"]
        assert any(isinstance(f, OncePerMinute) for f in failure_log.filters)
    finally:
        failure_log.removeHandler(handler)
        for f in failure_log.filters:
            f.forget()
