"""The offsets topic's records of a group moving (a new generation, a group epoch) reach the Admin
poller through Redis (collectors/pipeline/change_hints.py), which then describes the group fast."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from collectors.pipeline.change_hints import RECENT_MS, ChangeHints, forget_clients, moving_groups
from collectors.pipeline.route import route_arrow

CAPTURE = Path(__file__).parent / "fixtures" / "real-kafka-4.0" / "classic-range-lifecycle"


def _records(version: bytes) -> list[dict]:
    out = []
    for line in (CAPTURE / "offsets.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("key") and base64.b64decode(r["key"])[:2] == version and r.get("value"):
            out.append(r)
    return out


def _batch(records: list[dict], ts: int):
    import pyarrow as pa

    from collectors.pipeline.rows import RAW_SCHEMA, arrow_schema

    cols = {
        "topic": ["__consumer_offsets"] * len(records),
        "partition": [r["partition"] for r in records],
        "offset": [r["offset"] for r in records],
        "timestamp": [ts] * len(records),
        "key": [base64.b64decode(r["key"]) for r in records],
        "value": [base64.b64decode(r["value"]) for r in records],
    }
    return pa.RecordBatch.from_pydict(cols, schema=arrow_schema(RAW_SCHEMA))


class Noted:
    def __init__(self) -> None:
        self.groups: dict[str, int] = {}

    def note(self, groups: dict[str, int]) -> None:
        self.groups.update(groups)


def test_the_first_stage_notes_groups_whose_metadata_records_it_just_read() -> None:
    metadata, commits = _records(b"\x00\x02"), _records(b"\x00\x01")
    assert metadata and commits
    now = int(time.time() * 1000)
    kinds = {"__consumer_offsets": "offsets"}
    noted = Noted()
    list(route_arrow(iter([_batch(metadata[:1] + commits[:5], now)]), kinds, changes=noted))
    assert list(noted.groups.values()) == [now] and len(noted.groups) == 1
    # commits alone say nothing of motion; a backlog's records are history
    for records, ts in ((commits[:5], now), (metadata[:1], now - RECENT_MS - 1)):
        noted = Noted()
        list(route_arrow(iter([_batch(records, ts)]), kinds, changes=noted))
        assert noted.groups == {}


def test_moving_groups_reads_classic_and_kip848_records() -> None:
    now = 1_000_000
    rows = {
        "group": ["a", "b", "c", "d", None],
        "kind": ["offsets", "offsets", "offsets", "admin", "offsets"],
        "key": [b"\x00\x02x", b"\x00\x03x", b"\x00\x01x", b"\x00\x02x", b"\x00\x02x"],
        "ts": [now - 5, now - 1, now, now, now],
    }
    assert moving_groups(rows, now) == {"a": now - 5, "b": now - 1}


def test_moving_groups_reads_the_epoch_records_of_share_and_streams_groups() -> None:
    """A streams group can take a new epoch and stay Stable (a member leaves, its tasks go to the
    others at once): its epoch records are the only sign, so they hint it too; a member's own record
    (streams 19, its current assignment 22) and the topology (23) do not."""
    now = 1_000_000
    versions = {
        "share": 11,
        "share-target": 12,
        "streams": 17,
        "streams-target": 20,
        "member": 19,
        "topo": 23,
    }
    rows = {
        "group": list(versions),
        "kind": ["offsets"] * len(versions),
        "key": [v.to_bytes(2, "big") + b"x" for v in versions.values()],
        "ts": [now] * len(versions),
    }
    assert set(moving_groups(rows, now)) == {"share", "share-target", "streams", "streams-target"}


def test_hints_go_through_redis_and_old_ones_are_dropped(redis_server) -> None:
    forget_clients()
    hints = ChangeHints(redis_server.url, prefix=f"t{time.time_ns()}")
    now = int(time.time() * 1000)
    hints.note({"g1": now - 100_000, "g2": now - 10, "g3": now})
    hints.note({"g2": now - 50})  # never moves a hint back
    assert hints.since(now - 1_000) == [("g2", now - 10), ("g3", now)]
    assert hints.since(now - 5) == [("g3", now)]
    assert hints.since(0) == [("g2", now - 10), ("g3", now)]  # g1 was older than a minute


def test_a_redis_that_does_not_answer_is_not_waited_on_at_every_fast_poll() -> None:
    forget_clients()
    hints = ChangeHints("redis://127.0.0.1:1/0")
    hints.note({"g": 1})  # never raises
    t0 = time.monotonic()
    assert hints.since(0) == [] and hints.since(0) == []
    assert time.monotonic() - t0 < 3
    forget_clients()


def test_the_poller_describes_hinted_groups_fast_and_sends_their_describes_on() -> None:
    from collectors.pipeline.admin_poller import AdminPoller

    now = int(time.time() * 1000)

    class Hints:
        def since(self, after_ms: int) -> list[tuple[str, int]]:
            return [(g, t) for g, t in (("moving", now), ("old", now - 60_000)) if t > after_ms]

    class Sink:
        def produce(self, *a: object, **k: object) -> None: ...

    cfg = SimpleNamespace(admin_topic="unused", kafka={}, admin_resend_s=60.0)
    poller = AdminPoller(cfg, None)
    doc = {"ts": now, "group": "moving", "type": "classic", "state": "Stable", "members": []}
    poller._send_describe(Sink(), "moving", doc, now - 1_000)  # the first poll: steady, not hot
    assert len(poller.hot) == 0
    poller.change_hints = Hints()
    poller._hints_seen = now - 30_000
    assert poller.take_change_hints() == 1
    assert poller.hot.due(now + 1) == ["moving"]
    assert poller._send_describe(Sink(), "moving", {**doc, "ts": now + 300}, now + 300) == "hot"
    assert poller.take_change_hints() == 0  # each hint is taken once


@pytest.fixture(autouse=True)
def _clean():
    yield
    forget_clients()


@pytest.mark.servers
@pytest.mark.slow
def test_a_live_collector_hints_the_group_a_member_joins(kafka_broker, spark, redis_server, tmp_path) -> None:
    """A running live collector reads the GroupMetadata record of a member's join and leaves the group
    in Redis for its Admin poller, which makes it hot."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient
    from test_pipeline_live import Running, create_topics, live_cfg, uid, wait_until

    bs = kafka_broker.bootstrap_servers
    u = uid()
    data, group = f"hint-data-{u}", f"hint-{u}"
    create_topics(bs, {data: 2})
    cfg = live_cfg(redis_server.url, bs, str(tmp_path / "ckpt"), u)
    hints = ChangeHints(redis_server.url, cfg.prefix)
    admin = AdminClient({"bootstrap.servers": bs})
    with Running(cfg, spark) as run:
        wait_until(lambda: run.query is not None and run.query.lastProgress, 120, "the first micro-batch")
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "session.timeout.ms": 6000})
        try:
            c.subscribe([data])
            wait_until(lambda: c.poll(0.2) is None and c.assignment(), 60, "the member's assignment")
            wait_until(lambda: group in dict(hints.since(0)), 60, "the group's change hint")
            described = admin.describe_consumer_groups([group])[group].result(10)
            assert described.members
        finally:
            c.close()
