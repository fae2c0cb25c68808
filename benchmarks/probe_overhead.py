"""What the heartbeat probe costs a consumer: consume throughput and poll latency with and without it,
and the cost of one emit on the application thread. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/probe_overhead.py
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.demo.servers.kafka import KafkaBroker
from collectors.probe import MemberIdentity, ProbedConsumer, ProbeEvent, TelemetryEmitter

N = 20_000


def consume_all(consumer: Consumer, topic: str) -> tuple[float, list[float]]:
    consumer.subscribe([topic])
    got, lat = 0, []
    start = None
    deadline = time.monotonic() + 120
    while got < N and time.monotonic() < deadline:
        t = time.perf_counter()
        m = consumer.poll(0.5)
        lat.append(time.perf_counter() - t)
        if m is not None and not m.error():
            if start is None:
                start = time.perf_counter()
            got += 1
    took = time.perf_counter() - (start or time.perf_counter())
    consumer.close()
    return (got / took if took else 0.0), lat


def main() -> None:
    with KafkaBroker() as broker:
        bs = broker.bootstrap_servers
        topic = f"bench-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": bs})
        for f in admin.create_topics([NewTopic(topic, 4, 1)]).values():
            f.result(10)
        p = Producer({"bootstrap.servers": bs, "linger.ms": 20})
        for i in range(N):
            p.produce(topic, b"x" * 100, partition=i % 4)
            if i % 5000 == 0:
                p.poll(0)
        p.flush(30)
        base = {"bootstrap.servers": bs, "auto.offset.reset": "earliest", "heartbeat.interval.ms": 1000}
        plain_rate, plain_lat = consume_all(Consumer({**base, "group.id": f"{topic}-plain"}), topic)
        probed_rate, probed_lat = consume_all(ProbedConsumer({**base, "group.id": f"{topic}-probed"}), topic)

    def p99(xs: list[float]) -> float:
        return statistics.quantiles(xs, n=100)[98] * 1e6 if len(xs) > 100 else float("nan")

    print(f"consume {N} msgs  plain: {plain_rate:,.0f} msg/s, poll p99 {p99(plain_lat):,.0f} us")
    print(f"consume {N} msgs probed: {probed_rate:,.0f} msg/s, poll p99 {p99(probed_lat):,.0f} us")

    # The application thread's cost of one event: building it and a put_nowait (no broker needed:
    # the emitter thread is not started, so the queue fills and the rest are counted as dropped).
    who = MemberIdentity("g", "c", "h", None, 45000, 300000)
    em = TelemetryEmitter({"bootstrap.servers": "127.0.0.1:1"}, "t", max_queue=100_000)
    n = 50_000
    t = time.perf_counter()
    for _ in range(n):
        em.emit(ProbeEvent.make(who, "m", "heartbeat", state="steady"))
    per = (time.perf_counter() - t) / n * 1e6
    print(f"emit on the application thread: {per:.1f} us/event (make + put_nowait)")
    t = time.perf_counter()
    ev = ProbeEvent.make(who, "m", "assigned", partitions=[("orders", i) for i in range(32)])
    for _ in range(n):
        ev.to_json()
    per = (time.perf_counter() - t) / n * 1e6
    print(f"serialise (emitter thread): {per:.1f} us/event with 32 partitions")


if __name__ == "__main__":
    main()
