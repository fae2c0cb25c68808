"""Golden data from the real broker: every `__consumer_offsets` record the embedded Apache Kafka broker
wrote during this pytest run, decoded by Kafka's own `kafka-dump-log --offsets-decoder` and by
`groupscope decode`, must be equal (every field Kafka prints, with the same value).

The test runs last (marker `at_end`, ordered by conftest.py) so it sees the records of every other
test: classic and KIP-848 groups, commits, expiries, deletions. It first makes a little activity of its
own (a classic group, a KIP-848 group, commits through the Admin API, a group deletion), so it holds
something when run alone. Both sides are written to test-artifacts/kafka-golden/ for people to read.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_json import record_matches

from collectors.cli.decode_cmd import decode_lines
from collectors.demo.servers.kafka.dump_log import dump_offsets
from collectors.demo.servers.kafka.jars import major

pytestmark = [pytest.mark.servers, pytest.mark.at_end]

OFFSETS = "__consumer_offsets"


def _some_activity(bs: str) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = AdminClient({"bootstrap.servers": bs})
    topic = "golden-topic"
    futs = admin.create_topics([NewTopic(topic, 3, 1)])
    for f in futs.values():
        try:
            f.result(15)
        except Exception as e:  # already there when the test runs twice on one broker
            assert "already exists" in str(e).lower() or "TOPIC_ALREADY_EXISTS" in str(e)
    for proto in ("classic", "consumer"):
        conf = {"bootstrap.servers": bs, "group.id": f"golden-{proto}", "enable.auto.commit": False}
        if proto == "consumer":
            conf["group.protocol"] = "consumer"
        c = Consumer(conf)
        c.subscribe([topic])
        deadline = time.monotonic() + 20
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        c.close()
    alter = ConsumerGroupTopicPartitions("golden-admin", [TopicPartition(topic, p, 7) for p in range(3)])
    admin.alter_consumer_group_offsets([alter])["golden-admin"].result(15)
    admin.delete_consumer_groups(["golden-admin"])["golden-admin"].result(15)


def _read_topic(bs: str) -> list[dict]:
    """Every record of __consumer_offsets as capture lines (base64 key and value)."""
    admin = AdminClient({"bootstrap.servers": bs})
    parts = admin.list_topics(OFFSETS, timeout=10).topics[OFFSETS].partitions
    # No commits of its own (they would be records too): assign, read to the end, close.
    c = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": "golden-reader",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(OFFSETS, p, 0) for p in parts])
    done: set[int] = set()
    lines: list[dict] = []
    deadline = time.monotonic() + 60
    while len(done) < len(parts) and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                done.add(msg.partition())
            continue
        ts_type, ts = msg.timestamp()
        value = msg.value()
        lines.append(
            {
                "topic": OFFSETS,
                "partition": msg.partition(),
                "offset": msg.offset(),
                "timestamp": ts,
                "timestamp_type": ts_type,
                "key": base64.b64encode(msg.key() or b"").decode(),
                "value": None if value is None else base64.b64encode(value).decode(),
            }
        )
    c.close()
    assert len(done) == len(parts), "did not reach the end of every __consumer_offsets partition"
    return lines


def test_groupscope_decode_equals_kafka_dump_log(kafka_broker, artifacts_dir: Path) -> None:
    bs = kafka_broker.bootstrap_servers
    _some_activity(bs)
    # Dump first, then read to the end: the topic may still grow (expiries, other groups' commits),
    # and every record Kafka dumped must be among those read. Nothing is compacted while a segment
    # is active, so the segments hold every record the broker wrote.
    kafka = {(e["partition"], e["offset"]): e for e in dump_offsets(kafka_broker.data_dir)}
    lines = _read_topic(bs)
    ours = {
        (g["partition"], g["offset"]): g for g in map(json.loads, decode_lines(json.dumps(x) for x in lines))
    }
    out = artifacts_dir / "kafka-golden"
    out.mkdir(exist_ok=True)
    (out / "offsets.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (out / "expected.jsonl").write_text("".join(json.dumps(e) + "\n" for e in kafka.values()))
    (out / "groupscope.jsonl").write_text("".join(json.dumps(g) + "\n" for g in ours.values()))

    assert kafka and set(kafka) <= {(x["partition"], x["offset"]) for x in lines}
    types = {e["key"]["type"] for e in kafka.values()}
    # KIP-848 groups (records 3-8) are on by default from Kafka 4.0; 3.9 has only classic groups.
    expected = {"1", "2"} | ({"3", "5", "6", "7", "8"} if major(kafka_broker.version) >= 4 else set())
    assert expected <= types, f"record types seen: {sorted(types)}"
    wrong = []
    for k, exp in kafka.items():
        got = ours.get(k)
        good = record_matches(got, exp)
        if not good:
            wrong.append(f"{k}: kafka {json.dumps(exp)[:400]}\n   groupscope {json.dumps(got)[:400]}")
    assert not wrong, f"{len(wrong)} of {len(kafka)} records differ:\n" + "\n".join(wrong[:10])
