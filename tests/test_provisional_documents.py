"""Provisional documents: every group's state, members and committed offsets from the Admin poller's
first answers while Spark starts, never written over the pipeline's (coordinator_model/provisional.py,
collectors/pipeline/provisional_heads.py, RedisStore.write_provisional)."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.pipeline.provisional_heads import ProvisionalHeads
from collectors.storage.redis_store import RedisStore
from coordinator_model.document import GroupDocument, LagDoc
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import CommittedSnapshot, from_describe_json
from coordinator_model.provisional import provisional_document

T = 1_795_000_000_000


def describe_line(
    group: str, state: str = "Stable", members: int = 2, partitions: int = 4, ts: int = T
) -> dict:
    per = max(1, partitions // max(1, members))
    return {
        "ts": ts,
        "group": group,
        "type": "classic",
        "state": state,
        "assignor": "range",
        "coordinator": {"id": 1, "host": "127.0.0.1", "port": 9092},
        "simple": False,
        "members": [
            {
                "member_id": f"c{i}-{group}",
                "group_instance_id": None,
                "client_id": f"c{i}",
                "host": "/127.0.0.1",
                "assignment": [["t", p] for p in range(i * per, min(partitions, (i + 1) * per))],
                "target_assignment": None,
            }
            for i in range(members)
        ],
    }


def committed(group: str, partitions: int = 4, ts: int = T + 5) -> CommittedSnapshot:
    return CommittedSnapshot(ts, group, tuple(("t", p, 100 + p) for p in range(partitions)))


@settings(max_examples=40, deadline=None)
@given(
    state=st.sampled_from(["Stable", "Empty", "PreparingRebalance", "CompletingRebalance"]),
    members=st.integers(0, 4),
    partitions=st.integers(0, 12),
    with_offsets=st.booleans(),
)
def test_a_provisional_document_is_the_engines_own_for_the_same_answers(
    state: str, members: int, partitions: int, with_offsets: bool
) -> None:
    line = describe_line("g", state, members, partitions)
    offsets = committed("g", partitions) if with_offsets else None
    doc = provisional_document(from_describe_json(line), offsets)
    eng = GroupEngine("g")
    eng.apply(from_describe_json(line))
    if offsets is not None:
        eng.apply(offsets)
    want = eng.document(max(T, offsets.ts if offsets else T)).to_json()
    got = doc.to_json()
    assert got.pop("provisional") is True
    # no log ends, no lag: left out (the offsets say which partitions it has)
    assert got.pop("lag") == LagDoc().to_json()
    want.pop("lag")
    assert got == want
    assert GroupDocument.from_json(doc.to_json()).provisional
    assert "provisional" not in eng.document().to_json()  # the pipeline's documents are as they were


def pipeline_doc(group: str, state: str = "Empty") -> GroupDocument:
    eng = GroupEngine(group)
    eng.apply(from_describe_json(describe_line(group, state, members=0)))
    return eng.document(T)


def test_provisional_documents_are_written_marked_and_the_pipelines_replace_them(redis_client) -> None:
    store = RedisStore(redis_client)
    store.forget_pipeline_writes()
    docs = [
        provisional_document(from_describe_json(describe_line(f"g{i}")), committed(f"g{i}")) for i in range(3)
    ]
    assert store.write_provisional(docs, T) == 3
    row = store.get_row("g1")
    assert row["provisional"] is True and row["state"] == "Stable" and row["members"] == 2
    got = store.get_document("g1")
    assert got.provisional and [(o.topic, o.partition, o.offset) for o in got.offsets] == [
        ("t", p, 100 + p) for p in range(4)
    ]
    assert store.list_groups(state="Stable")[0] == 3
    # written again (the second pass, with offsets): a provisional document may replace a provisional one
    assert store.write_provisional(docs[:1], T + 10) == 1
    # the pipeline writes g0: its document and row, unmarked, and the state indexes follow
    store.write_groups([pipeline_doc("g0")], T + 20)
    row = store.get_row("g0")
    assert "provisional" not in row and row["state"] == "Empty"
    assert store.list_groups(state="Stable")[0] == 2
    # from then on nothing provisional is written, not even for groups the pipeline has not written
    assert store.write_provisional(docs, T + 30) is None
    assert "provisional" not in store.get_row("g0")
    # a collector started again: the groups the pipeline wrote keep its documents
    store.forget_pipeline_writes()
    assert store.write_provisional(docs, T + 40) == 2
    assert "provisional" not in store.get_row("g0") and store.get_document("g0").state == "Empty"


def test_a_pipeline_write_between_the_check_and_the_write_wins(redis_client, redis_server) -> None:
    """The pipeline (another client, another process in real life) writes the group after the
    provisional writer read that it had no row: the provisional transaction is refused and, read
    again, stands down; the pipeline's document stays."""
    import redis

    other = RedisStore(redis.Redis.from_url(redis_server.url))

    class Racing(RedisStore):
        raced = False

        def write_many(self, items, **kw):  # type: ignore[no-untyped-def]
            if kw.get("provisional") and not Racing.raced:
                Racing.raced = True
                other.write_groups([pipeline_doc("g0")], T + 1)  # lands inside the check-to-write window
            return super().write_many(items, **kw)

    store = Racing(redis_client)
    store.forget_pipeline_writes()
    doc = provisional_document(from_describe_json(describe_line("g0")))
    assert store.write_provisional([doc], T) is None
    assert Racing.raced
    row = store.get_row("g0")
    assert row["state"] == "Empty" and "provisional" not in row
    assert not store.get_document("g0").provisional


def test_the_heads_thread_writes_describes_first_then_offsets_and_stands_down(
    redis_client, redis_server
) -> None:
    def factory() -> RedisStore:
        return RedisStore.from_url(redis_server.url)

    RedisStore(redis_client).forget_pipeline_writes()
    heads = ProvisionalHeads(factory)
    heads.start()
    bad = {"ts": "soon", "group": "bad", "members": []}  # set aside here as the model stage would
    heads.describes([describe_line("a"), describe_line("b", "Empty", members=0), bad])
    heads.committed({"a": [("t", p, 7) for p in range(4)], "b": [("t", 0, 3)], "unknown": [("t", 0, 1)]})
    heads.done()
    heads.join(30)
    assert not heads.is_alive() and heads.written == 4  # a and b twice: without and with offsets
    store = RedisStore(redis_client)
    a = store.get_document("a")
    assert a.provisional and a.state == "Stable" and len(a.members) == 2
    assert [o.offset for o in a.offsets] == [7, 7, 7, 7]
    assert store.get_row("b")["state"] == "Empty"
    assert store.get_row("bad") is None and store.get_row("unknown") is None
    # once the pipeline wrote, a second start of the thread writes nothing
    store.write_groups([pipeline_doc("a")], T)
    again = ProvisionalHeads(factory)
    again.start()
    again.describes([describe_line("c")])
    again.done()
    again.join(30)
    assert again.stood_down and again.written == 0 and store.get_row("c") is None


@pytest.mark.servers
def test_a_collector_shows_real_groups_provisionally_before_its_pipeline(
    kafka_broker, redis_client, redis_server
):
    """Against the real broker: groups with members and commits, the Admin poller's first poll and the
    heads thread, no Spark: every group is in Redis with its state, members and committed offsets,
    marked provisional; `groupscope groups` marks them and `group --json` says so."""
    from click.testing import CliRunner
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from collectors.cli.main import cli
    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig

    bs = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:6]
    topic, admin_topic = f"prov-{run}", f"prov-admin-{run}"
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics([NewTopic(topic, 4, 1), NewTopic(admin_topic, 1, 1)]).values():
        f.result(15)
    live, idle = f"prov-live-{run}", f"prov-idle-{run}"
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(idle, [TopicPartition(topic, p, 10 + p) for p in range(4)])]
    )[idle].result(15)
    c = Consumer(
        {"bootstrap.servers": bs, "group.id": live, "client.id": "prov-c1", "enable.auto.commit": False}
    )
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.2)
    c.commit(offsets=[TopicPartition(topic, p, 5) for p in range(4)], asynchronous=False)
    cfg = PipelineConfig(
        redis_url=redis_server.url,
        checkpoint_dir="/tmp",
        kafka={"bootstrap.servers": bs},
        admin_topic=admin_topic,
        admin_poll_interval_s=30.0,
    )
    store = RedisStore.from_url(redis_server.url)
    store.new_data_epoch()  # as run_pipeline finds it
    store.forget_pipeline_writes()
    heads = ProvisionalHeads(lambda: RedisStore.from_url(redis_server.url))
    poller = AdminPoller(cfg, store, offsets_readable=True, provisional=heads)
    heads.start()
    poller.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (heads.last_at and heads.written >= 4):
            c.poll(0.1)
        heads.join(30)
    finally:
        poller.stop()
        poller.join(30)
        c.close()
    doc = store.get_document(live)
    assert doc is not None and doc.provisional and doc.state == "Stable"
    assert [m.client_id for m in doc.members] == ["prov-c1"]
    assert sorted(tp for m in doc.members for tp in m.assignment) == [(topic, p) for p in range(4)]
    assert {(o.topic, o.partition): o.offset for o in doc.offsets} == {(topic, p): 5 for p in range(4)}
    idle_doc = store.get_document(idle)
    assert idle_doc.provisional and idle_doc.state == "Empty"
    assert {o.partition: o.offset for o in idle_doc.offsets} == {p: 10 + p for p in range(4)}
    runner = CliRunner()
    out = runner.invoke(cli, ["groups", "--redis", redis_server.url, "--name", run])
    assert out.exit_code == 0, out.output
    assert "Stable*" in out.output and "2 provisional" in out.output
    printed = runner.invoke(cli, ["group", live, "--redis", redis_server.url, "--json"])
    assert json.loads(printed.output)["provisional"] is True
