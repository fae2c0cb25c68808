"""Admin poller benchmark: one poll (list, describe, committed offsets, log-end offsets) over a fleet
of N groups, each with committed offsets on a few partitions, with `__consumer_offsets` read (as
shipped) and not readable (committed offsets fetched for every group at every poll); the poller
between full polls with every group steady and with 1% of them in motion (described every 0.3 s,
admin_hot.py); and the committed-offsets step alone (OffsetFetch v8+ through
collectors.kafka_protocol, up to 500 groups a request). Each figure comes with the poller's CPU and
the requests it sent the broker (the protocol client's, counted as sent, and librdkafka's, from its
statistics).

    .venv/bin/python benchmarks/admin_poll.py              # 2,000 then 10,000 groups, its own Kafka broker
    .venv/bin/python benchmarks/admin_poll.py --groups 2000
    .venv/bin/python benchmarks/admin_poll.py --groups 10000 --bootstrap-servers host:9092

The fleet grows from one size to the next on the same broker. The poll must finish well within its
interval (default 5 s) for the clock and the lag to stay fresh. Figures go to stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.demo.servers.kafka import KafkaBroker
from collectors.pipeline.admin_poller import AdminPoller


class _NoStore:
    def source_status(self, *a, **k) -> None:  # the poller reports its health to the store
        pass


def group_name(i: int) -> str:
    return f"poll-bench-{i:05d}"


def make_groups(bootstrap: str, groups: int, topic: str, start: int = 0) -> float:
    """Commit offsets for groups `start` to `groups` - 1 without any member (AlterConsumerGroupOffsets,
    many requests in flight): each group becomes an Empty group with one committed partition."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(topic, 8, 1)])[topic].result(30)
    t0 = time.monotonic()
    pending = []
    for i in range(start, groups):
        g = group_name(i)
        req = ConsumerGroupTopicPartitions(g, [TopicPartition(topic, i % 8, 10 + i)])
        pending.append(admin.alter_consumer_group_offsets([req], request_timeout=30)[g])
        if len(pending) >= 200:
            pending.pop(0).result(60)
    for f in pending:
        f.result(60)
    return time.monotonic() - t0


def committed_alone(bootstrap: str, groups: int, topic: str) -> None:
    """The committed-offsets step of a poll on its own, checked against what make_groups committed."""
    from collectors.kafka_protocol import KafkaProtocolClient
    from collectors.kafka_protocol.coordinators import CHUNK_GROUPS

    names = [group_name(i) for i in range(groups)]
    with KafkaProtocolClient({"bootstrap.servers": bootstrap}, timeout_s=60) as client:
        client.fetch_committed(names[:1])  # connections and version negotiation out of the timing
        t0 = time.monotonic()
        got = client.fetch_committed(names)
        dt = time.monotonic() - t0
    wrong = [g for i, g in enumerate(names) if got.get(g) != [(topic, i % 8, 10 + i)]]
    requests = -(-groups // CHUNK_GROUPS)
    print(
        f"committed offsets alone (OffsetFetch, {requests} requests): {groups:,} groups in {dt:.2f} s"
        + (f"; {len(wrong)} WRONG, e.g. {wrong[0]}: {got.get(wrong[0])}" if wrong else "")
    )


class Requests:
    """Requests sent to the brokers: the protocol client's (counted as they are sent) and
    librdkafka's (its statistics' per-broker `tx`, every second), for the poller's AdminClient."""

    def __init__(self) -> None:
        from collectors.kafka_protocol.connection import BrokerConnection

        self.ours = 0
        self.librdkafka = 0
        real = BrokerConnection.send
        counter = self

        def counting(conn, api, body, deadline):
            counter.ours += 1
            return real(conn, api, body, deadline)

        BrokerConnection.send = counting  # type: ignore[method-assign]

    def stats(self, raw: str) -> None:
        import json

        brokers = json.loads(raw).get("brokers", {}).values()
        self.librdkafka = sum(b.get("tx", 0) for b in brokers if b.get("nodeid", -1) >= 0)

    def total(self, admin) -> int:
        admin.poll(0)  # serves the statistics callback
        return self.ours + self.librdkafka


def hot_phase(admin, producer, cfg, groups: int, share: float, seconds: float, reqs: Requests) -> None:
    """Between full polls: the poller's cost with every group steady (nothing to describe), then with
    `share` of the groups in motion, each described every 0.3 s (admin_hot.py). A group in motion
    costs the broker a describe whatever its state, so these are marked in motion rather than made to
    rebalance. Figures: describe requests and groups described per second, and the poller's CPU per
    second of wall time (this process; the broker runs apart)."""
    poller = AdminPoller(cfg, _NoStore())
    interval = 0.3
    for label, hot in (("all steady", 0), (f"{share:.0%} in motion", max(1, int(groups * share)))):
        moving = [group_name(i * (groups // hot)) for i in range(hot)] if hot else []
        described, requests = poller.hot_polls, reqs.total(admin)
        cpu0, t0 = time.process_time(), time.monotonic()
        while time.monotonic() - t0 < seconds:
            tick = time.monotonic()
            now = int(time.time() * 1000)
            for g in moving:  # still rebalancing (their describes say Empty: they would cool down)
                poller.hot.saw(g, "PreparingRebalance", True, now)
            if len(poller.hot):
                poller.poll_hot(admin, producer)
            time.sleep(max(0.0, interval - (time.monotonic() - tick)))
        time.sleep(1.1)  # the last statistics
        wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
        requests = reqs.total(admin) - requests
        print(
            f"between full polls, {groups:,} groups, {label}: "
            f"{requests / wall:.1f} requests/s to the broker, "
            f"{(poller.hot_polls - described) / wall:,.0f} groups described/s, "
            f"poller CPU {cpu / wall:.1%} of one core"
        )
    poller.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, nargs="+", default=[2000, 10000], help="fleet sizes, in turn")
    ap.add_argument("--bootstrap-servers", default=None)
    ap.add_argument("--hot-share", type=float, default=0.01, help="groups in motion between full polls")
    ap.add_argument("--hot-seconds", type=float, default=10.0, help="how long each hot phase runs")
    args = ap.parse_args()
    topic = "poll-bench-topic"
    broker = None
    try:
        bootstrap = args.bootstrap_servers
        if not bootstrap:
            broker = KafkaBroker().start()
            bootstrap = broker.bootstrap_servers
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient

        reqs = Requests()
        admin = AdminClient(
            {"bootstrap.servers": bootstrap, "statistics.interval.ms": 1000, "stats_cb": reqs.stats}
        )
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        cfg = SimpleNamespace(
            admin_topic="groupscope.admin", kafka={"bootstrap.servers": bootstrap}, admin_resend_s=60.0
        )
        made = 0
        for size in sorted(args.groups):
            dt = make_groups(bootstrap, size, topic, start=made)
            print(f"{size:,} groups with committed offsets ({max(0, size - made):,} made in {dt:.1f} s)")
            made = max(made, size)
            # As shipped, `__consumer_offsets` is read and the poller fetches committed offsets only
            # for groups it describes (to know which log-end offsets they need); where the topic
            # cannot be read, it fetches every group's at every poll.
            for readable in (True, False):
                mode = "offsets topic read" if readable else "offsets topic not readable"
                poller = AdminPoller(cfg, _NoStore(), offsets_readable=readable)
                # Two polls: the first sends every answer on, the second (nothing changed) only what
                # the change filter finds due: the load an idle fleet puts on the pipeline.
                for which in ("first", "second"):
                    sent, held = poller.writer.sent, poller.writer.held
                    r0 = reqs.total(admin)
                    t0, cpu0 = time.monotonic(), time.process_time()
                    found = poller.poll_once(admin, producer, timeout_s=30)
                    dt, cpu = time.monotonic() - t0, time.process_time() - cpu0
                    time.sleep(1.1)  # the last statistics
                    print(
                        f"{which} poll ({mode}): {found:,} groups in {dt:.2f} s "
                        f"({cpu:.2f} s of CPU, {reqs.total(admin) - r0:,} requests), "
                        f"{poller.writer.sent - sent:,} admin lines sent on, "
                        f"{poller.writer.held - held:,} unchanged held"
                    )
                    if which == "second":
                        print(
                            f"  steady, one full poll every 5 s: {cpu / 5:.1%} of one core, "
                            f"{(reqs.total(admin) - r0) / 5:.1f} requests/s"
                        )
                poller.stop()  # closes its protocol client
            hot_phase(admin, producer, cfg, size, args.hot_share, args.hot_seconds, reqs)
            committed_alone(bootstrap, size, topic)
    finally:
        if broker:
            broker.stop()


if __name__ == "__main__":
    main()
