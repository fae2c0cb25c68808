"""Admin poller benchmark: one poll (list, describe, committed offsets, log-end offsets) over a fleet
of N groups, each with committed offsets on a few partitions.

    .venv/bin/python benchmarks/admin_poll.py                 # 2,000 groups on its own Apache Kafka broker
    .venv/bin/python benchmarks/admin_poll.py --groups 10000 --bootstrap-servers host:9092

The poll must finish well within its interval (default 5 s) for the clock and the lag to stay fresh.
Figures go to stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.embedded_kafka import KafkaBroker
from collectors.pipeline.admin_poller import AdminPoller


class _NoStore:
    def source_status(self, *a, **k) -> None:  # the poller reports its health to the store
        pass


def make_groups(bootstrap: str, groups: int, topic: str) -> float:
    """Commit offsets for `groups` groups without any member (AlterConsumerGroupOffsets, many requests
    in flight): each group becomes an Empty group with one committed partition."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(topic, 8, 1)])[topic].result(30)
    t0 = time.monotonic()
    pending = []
    for i in range(groups):
        g = f"poll-bench-{i:05d}"
        req = ConsumerGroupTopicPartitions(g, [TopicPartition(topic, i % 8, 10 + i)])
        pending.append(admin.alter_consumer_group_offsets([req], request_timeout=30)[g])
        if len(pending) >= 200:
            pending.pop(0).result(60)
    for f in pending:
        f.result(60)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--bootstrap-servers", default=None)
    ap.add_argument("--in-flight", type=int, nargs="*", default=[200, 1, 200])
    args = ap.parse_args()
    broker = None
    try:
        bootstrap = args.bootstrap_servers
        if not bootstrap:
            broker = KafkaBroker().start()
            bootstrap = broker.bootstrap_servers
        dt = make_groups(bootstrap, args.groups, "poll-bench-topic")
        print(f"{args.groups:,} groups with committed offsets, made in {dt:.1f} s")
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": bootstrap})
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        cfg = SimpleNamespace(admin_topic="groupscope.admin", kafka={"bootstrap.servers": bootstrap})
        for n in args.in_flight:
            poller = AdminPoller(cfg, _NoStore(), offsets_in_flight=n)
            t0 = time.monotonic()
            found = poller.poll_once(admin, producer, timeout_s=30)
            print(
                f"one poll, {n} offsets requests in flight: {found:,} groups in {time.monotonic() - t0:.2f} s"
            )
    finally:
        if broker:
            broker.stop()


if __name__ == "__main__":
    main()
