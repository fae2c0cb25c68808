"""The live pipeline against the harness's real broker (Tansu) and a redis-server of its own (so the
test can restart it): records produced to a `__consumer_offsets` topic the test creates (a capture
replayed into it, records made with the codec's encoder, a malformed one) and heartbeat events flow
into Redis; stopping and restarting from the checkpoint neither loses nor repeats a history row; a
Redis restart mid-run is retried and later batches land; a member that stops heartbeating expires
without new input (timers)."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import CAPTURES

from collectors.codec import records as r
from collectors.codec.encoder import encode_key, encode_value
from collectors.local_servers import RedisServer, TansuBroker
from collectors.pipeline.job import PipelineConfig, run_pipeline
from collectors.redis_store import RedisStore

pytestmark = [pytest.mark.servers, pytest.mark.slow]

STORM = CAPTURES / "rebalance-storm"


def wait_until(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            v = cond()
        except Exception:  # Redis restarting, key not there yet
            v = None
        if v:
            return v
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


class Running:
    """The live pipeline in a background thread, stopped on exit."""

    def __init__(self, cfg: PipelineConfig, spark: Any) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.query: Any = None

        def body() -> None:
            try:
                run_pipeline(cfg, spark, progress=False, stop_event=self.stop, on_started=self._started)
            except BaseException as e:  # surfaced by the test
                self.error = e

        self.thread = threading.Thread(target=body, daemon=True)

    def _started(self, q: Any) -> None:
        self.query = q

    def __enter__(self) -> Running:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive(), "pipeline did not stop"
        assert self.error is None, f"pipeline failed: {self.error!r}"


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=10).topics
    new = [NewTopic(t, n, 1) for t, n in topics.items() if t not in existing]
    for f in admin.create_topics(new).values() if new else []:
        f.result(15)


def capture_records(path) -> list[dict]:
    return [json.loads(x) for x in (path / "offsets.jsonl").read_text().splitlines() if x.strip()]


class OneByOne:
    """A producer that sends every record as its own batch. Tansu answers ListOffsets(latest) with the
    last batch's base offset + 1, so the tail of a multi-record batch stays invisible to any reader
    that plans by watermarks until the next batch arrives; a real Kafka broker does not do this."""

    def __init__(self, bootstrap: str) -> None:
        self.p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})

    def produce(self, topic: str, **kw: Any) -> None:
        self.p.produce(topic, **kw)
        self.p.flush(10)

    def flush(self, timeout: float = 10) -> None:
        self.p.flush(timeout)


def produce_offsets(p: OneByOne, recs: list[dict]) -> None:
    for o in recs:
        p.produce(
            "__consumer_offsets",
            key=base64.b64decode(o["key"]),
            value=base64.b64decode(o["value"]) if o["value"] is not None else None,
            partition=o["partition"],
            timestamp=o["timestamp"],
        )


def encoded_commit(group: str, topic: str, partition: int, offset: int, ts: int) -> tuple[bytes, bytes]:
    key = encode_key(r.OffsetCommitKey(group, topic, partition))
    value = encode_value(r.OFFSET_COMMIT, r.OffsetCommitValue(offset=offset, commit_timestamp=ts))
    assert value is not None
    return key, value


def heartbeat(group: str, member: str, event: str, ts: int, **kw: Any) -> bytes:
    ev = {
        "ts": ts,
        "group": group,
        "member_id": member,
        "group_instance_id": None,
        "client_id": member,
        "host": "/127.0.0.1",
        "generation": None,
        "event": event,
        "state": "steady",
        "partitions": kw.get("partitions", []),
        "session_timeout_ms": 3000,
        "max_poll_interval_ms": 300000,
    }
    return json.dumps(ev).encode()


def expected_engine(recs: list[dict]) -> dict:
    """What the model makes of the same records, in one process."""
    from collectors.capture import offsets_line_to_evidence
    from coordinator_model.engine import rebuild

    engines = rebuild([offsets_line_to_evidence(o) for o in recs])
    return {g: e.document() for g, e in engines.items()}


def history_rows(store: RedisStore, group: str) -> tuple[list, list]:
    return store.get_generations(group), store.get_timeline(group)


@pytest.fixture()
def own_redis():
    server = RedisServer().start()
    yield server
    server.stop()


def live_cfg(redis_url: str, bootstrap: str, checkpoint: str, **kw: Any) -> PipelineConfig:
    return PipelineConfig(
        redis_url=redis_url,
        checkpoint_dir=checkpoint,
        mode="live",
        kafka={"bootstrap.servers": bootstrap},
        trigger_interval_s=0.5,
        tick_ms=1000,
        admin_poll_interval_s=2.0,
        redis_retry_s=120,
        **kw,
    )


def test_live_pipeline_restart_and_redis_restart(spark, kafka_broker, own_redis, tmp_path):
    bootstrap = kafka_broker.bootstrap_servers
    create_topics(bootstrap, {"__consumer_offsets": 50, "groupscope.heartbeats": 3})
    store = RedisStore.from_url(own_redis.url)
    p = OneByOne(bootstrap)
    recs = capture_records(STORM)
    storm_group = "storm-060433f"
    half = len(recs) // 2
    now = int(time.time() * 1000)

    produce_offsets(p, recs[:half])
    k, v = encoded_commit("enc-group", "orders", 3, 42, now)
    p.produce("__consumer_offsets", key=k, value=v, partition=7)
    p.produce("__consumer_offsets", key=b"\x00\x01\x00\x05bad", value=b"\x00\x03\xff\xff", partition=8)
    p.produce(
        "groupscope.heartbeats",
        key=b"hb-group",
        value=heartbeat("hb-group", "hb-1", "join", now, partitions=[["orders", 0]]),
    )
    p.produce("groupscope.heartbeats", key=b"hb-group", value=b"{not json")
    p.flush(30)

    ckpt = str(tmp_path / "ckpt")
    cfg = live_cfg(own_redis.url, bootstrap, ckpt)
    with Running(cfg, spark):
        wait_until(lambda: store.get_group("enc-group"), 300, "the encoder's commit in Redis")
        enc = store.get_group("enc-group")
        assert [(o["topic"], o["partition"], o["offset"]) for o in enc["offsets"]] == [("orders", 3, 42)]
        wait_until(lambda: len(store.dead_letters()) >= 2, 240, "two dead letters")
        positions = sorted(d["position"] for d in store.dead_letters())
        assert positions[0].startswith("__consumer_offsets/8@") and positions[1].startswith(
            "groupscope.heartbeats/"
        )
        # the member that joined and never heartbeats again expires through the timer, with no new input
        wait_until(lambda: store.get_group("hb-group"), 240, "hb-group from its heartbeat")
        wait_until(lambda: not store.get_group("hb-group")["members"], 240, "session expiry by timer")
        # __consumer_offsets is readable on this broker once the test created it
        assert store.freshness()["sources"]["__consumer_offsets"]["ok"] is True
        want1 = expected_engine(recs[:half])[storm_group]
        wait_until(
            lambda: store.get_group(storm_group)["generations"] == want1["generations"], 240, "first half"
        )
    gens1, _ = history_rows(store, storm_group)
    assert [g["generation"] for g in gens1] == [g["generation"] for g in want1["generations"]]

    # Restart from the checkpoint; Redis goes down and comes back in the middle of the run.
    produce_offsets(p, recs[half:])
    with Running(cfg, spark):
        want = expected_engine(recs)[storm_group]
        wait_until(
            lambda: store.get_group(storm_group)["generations"] == want["generations"], 240, "second half"
        )
        gens, tl = history_rows(store, storm_group)
        assert gens == want["generations"]  # every generation once, none lost across the restart
        assert tl == want["timeline"]
        assert [g["generation"] for g in gens[: len(gens1)]] == [g["generation"] for g in gens1]
        assert len(store.dead_letters()) == 2  # the restart replayed nothing twice

        port = own_redis.port
        own_redis.stop()
        k, v = encoded_commit("after-redis-restart", "orders", 1, 7, int(time.time() * 1000))
        p.produce("__consumer_offsets", key=k, value=v, partition=11)
        p.flush(10)
        time.sleep(3)  # batches run against a dead Redis: the sink retries with backoff
        restarted = RedisServer(port=port).start()
        try:
            store = RedisStore.from_url(restarted.url)
            wait_until(lambda: store.get_group("after-redis-restart"), 240, "a batch after Redis came back")
            wait_until(lambda: store.freshness()["collector"], 10, "collector heartbeat again")
        finally:
            own_redis.proc = restarted.proc  # the fixture stops it
            own_redis.workdir, own_redis._own_dir = restarted.workdir, restarted._own_dir


def test_broker_unreachable_retries_and_freshness_shows_it(spark, own_redis, tmp_path):
    broker = TansuBroker().start()
    try:
        bootstrap = broker.bootstrap_servers
        create_topics(bootstrap, {"__consumer_offsets": 50})
        p = OneByOne(bootstrap)
        k, v = encoded_commit("fresh-group", "orders", 0, 5, int(time.time() * 1000))
        p.produce("__consumer_offsets", key=k, value=v, partition=1)
        p.flush(10)
        store = RedisStore.from_url(own_redis.url)
        cfg = live_cfg(own_redis.url, bootstrap, str(tmp_path / "ckpt"), metadata_timeout_s=2.0)
        with Running(cfg, spark) as run:
            wait_until(lambda: store.get_group("fresh-group"), 240, "fresh-group")
            refreshed = store.freshness(["fresh-group"])["groups"]["fresh-group"]
            broker.stop()
            wait_until(
                lambda: store.freshness()["sources"].get("admin", {}).get("ok") is False,
                240,
                "admin source down",
            )
            hb1 = store.freshness()["collector"]["ts"]
            time.sleep(3)
            f = store.freshness(["fresh-group"])
            assert f["collector"]["ts"] > hb1  # the collector is alive and says so
            assert f["groups"]["fresh-group"] == refreshed  # the group's data is as old as it is
            assert "unreachable" in f["sources"]["admin"]["detail"]
            assert run.query.isActive  # retrying, not dead
    finally:
        broker.stop()
