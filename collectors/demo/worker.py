"""One demo process: a probed consumer, a share consumer, a Kafka Streams instance or the producer.
`python -m collectors.demo.worker consumer|share-consumer|streams|producer ...`

Each member of a demo group is its own OS process, so a SIGKILL is a real crash (the broker only notices
when the session times out) and a stall is a real stall (librdkafka keeps heartbeating from its own
thread). SIGTERM/SIGINT close the consumer gracefully (LeaveGroup; a static member sends none, as
KIP-345 says). A worker also exits when the process that started it is gone, so a killed demo leaves no
consumers behind.

`--group-protocol consumer` makes a KIP-848 member: librdkafka then refuses session.timeout.ms,
heartbeat.interval.ms and partition.assignment.strategy (the broker owns them), so they are left out and
the server-side assignor is asked for with group.remote.assignor. `--resubscribe-after S --add-topic T`
changes the subscription while the member runs (a new subscription is a new group epoch on KIP-848, a
rebalance on the classic protocol).

`share-consumer` runs one KIP-932 share consumer (collectors/demo/share.py) until SIGTERM, with
`--pause-every S --pause-for D` not polling for D s after every S s. `streams` runs
one instance of the Kafka Streams word count (collectors/demo/streams_app, its own JVM on
group.protocol=streams, KIP-1071) and stands for it: SIGTERM closes it (it leaves the group), and when the
JVM ends on its own the worker ends with its status, so the demo restarts it. Its state directory is
under --workdir and kept across restarts: a restarted instance is a new member of the same process. It
connects with the user's security settings like the other members, mapped onto the Java client's
(collectors/demo/streams_app/security.py) and given to the JVM in a private file, not on its command
line; a setting the Java client cannot carry ends the worker with one line naming it.
The producer writes JSON records, or for a topic given as TOPIC:RATE:words, lines of words (what the
word count counts).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Producer

from collectors.probe import ProbedConsumer

_stop = threading.Event()


def _install_stop_handlers() -> None:
    def _handler(_sig: int, _frame: Any) -> None:
        _stop.set()

    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, _handler)
    parent = os.getppid()

    def _watch_parent() -> None:
        while not _stop.wait(1.0):
            if os.getppid() != parent:  # re-parented: whoever started us has died
                _stop.set()

    threading.Thread(target=_watch_parent, daemon=True).start()


def _say(**fields: Any) -> None:
    print(json.dumps({"ts": int(time.time() * 1000), **fields}), flush=True)


def _cluster_conf() -> dict[str, Any]:
    """SASL/SSL and other client settings of the user's configuration (GROUPSCOPE_KAFKA__*, --config),
    so the workload reaches a secured cluster the same way the collector does."""
    try:
        from collectors.config import load_settings

        return dict(load_settings().kafka)
    except Exception as e:  # a broken config is reported by the demo itself; run with defaults here
        _say(event="config_error", error=str(e))
        return {}


def consumer_conf(a: argparse.Namespace) -> dict[str, Any]:
    """The member's librdkafka settings (probe settings included), for its group protocol."""
    conf: dict[str, Any] = {
        **_cluster_conf(),
        "bootstrap.servers": a.bootstrap_servers,
        "group.id": a.group,
        "client.id": a.client_id,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 1000,
        "max.poll.interval.ms": a.max_poll_interval_ms,
        "groupscope.heartbeat.topic": a.heartbeat_topic,
    }
    if a.group_protocol == "consumer":
        # KIP-848: session timeout and heartbeat interval are the broker's (group.consumer.*), and
        # librdkafka fails to create the consumer if they are set here.
        conf["group.protocol"] = "consumer"
        if a.remote_assignor:
            conf["group.remote.assignor"] = a.remote_assignor
    else:
        conf |= {
            "session.timeout.ms": a.session_timeout_ms,
            "heartbeat.interval.ms": a.heartbeat_interval_ms,
            "partition.assignment.strategy": a.strategy,
        }
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    return conf


def run_consumer(a: argparse.Namespace) -> int:
    consumer = ProbedConsumer(consumer_conf(a))

    def on_assign(_c: Any, parts: list) -> None:
        _say(event="assigned", member=a.client_id, partitions=[[p.topic, p.partition] for p in parts])

    def on_revoke(_c: Any, parts: list) -> None:
        _say(event="revoked", member=a.client_id, partitions=[[p.topic, p.partition] for p in parts])

    def on_lost(_c: Any, parts: list) -> None:
        _say(event="lost", member=a.client_id, partitions=[[p.topic, p.partition] for p in parts])

    topics = [a.topic]
    callbacks = {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_lost}
    consumer.subscribe(topics, **callbacks)
    start = time.monotonic()
    stalled = False
    resubscribed = not (a.resubscribe_after and a.add_topic)
    consumed = 0
    while not _stop.is_set():
        elapsed = time.monotonic() - start
        if a.run_for and elapsed >= a.run_for:
            break
        if not resubscribed and elapsed >= a.resubscribe_after:
            # subscribe() replaces the subscription: the old topic stays, the new one is added.
            resubscribed = True
            topics = [a.topic, *a.add_topic]
            _say(event="resubscribe", member=a.client_id, topics=topics)
            consumer.subscribe(topics, **callbacks)
        if a.stall_after and not stalled and elapsed >= a.stall_after:
            # Stop calling poll() while staying alive: the probe reports a poll stall at half of
            # max.poll.interval.ms and librdkafka leaves the group at the full interval.
            stalled = True
            _say(event="stall", member=a.client_id, seconds=a.stall_for)
            _stop.wait(a.stall_for)
            continue
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() != KafkaError._PARTITION_EOF:
                _say(event="error", member=a.client_id, error=str(msg.error()))
            continue
        consumed += 1
        rate = _rate(a, elapsed)
        if rate:
            time.sleep(1.0 / rate)  # "processing": a slow consumer falls behind the producer
    consumer.close()
    _say(event="closed", member=a.client_id, consumed=consumed, probe=consumer.probe_counters.dropped)
    return 0


def _rate(a: argparse.Namespace, elapsed: float) -> float:
    """Messages per second this consumer processes now (0 = as fast as it can)."""
    if not a.slow_for:
        return a.rate
    cycle = a.slow_for + a.fast_for
    return a.rate if (elapsed % cycle) < a.slow_for else 0.0


def run_share_consumer(a: argparse.Namespace) -> int:
    from collectors.demo.share import ShareMember

    member = ShareMember(
        a.bootstrap_servers,
        a.group,
        a.topic,
        a.client_id,
        conf=_cluster_conf(),
        pause_every=a.pause_every,
        pause_for=a.pause_for,
    )
    member.start()
    _say(event="started", member=a.client_id, group=a.group, kind="share")
    while not _stop.wait(1.0) and member.is_alive():
        pass
    member.halt.set()
    member.join(30)
    _say(event="closed", member=a.client_id, records=member.records)
    return 0 if _stop.is_set() else 1


def run_streams(a: argparse.Namespace) -> int:
    from collectors.demo.streams_app import StreamsApp
    from collectors.demo.streams_app.security import StreamsSecurityError, java_client_properties

    try:
        # SASL and TLS as the demo's other clients have them (librdkafka's names), in the Java client's
        security = java_client_properties(_cluster_conf())
    except StreamsSecurityError as e:
        _say(event="error", member=a.client_id, error=str(e))
        return 2
    app = StreamsApp(
        a.bootstrap_servers,
        a.application_id,
        a.input_topic,
        a.output_topic,
        a.client_id,
        Path(a.workdir),
        client_config=security,
    )
    app.start()
    _say(event="started", member=a.client_id, group=a.application_id, kind="streams", pid=app.proc.pid)
    while not _stop.wait(1.0) and app.running:
        pass
    if app.running:  # told to stop: close it (KafkaStreams.close, leaving the group)
        code = app.close(timeout=7)
        _say(event="closed", member=a.client_id, status=code)
        return 0
    code = app.close()
    _say(event="exited", member=a.client_id, status=code, diagnostics=app.diagnostics())
    return code or 1


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]


def _value(fmt: str, n: int) -> bytes:
    if fmt == "words":  # a line for the word count: a few words of a small vocabulary
        return " ".join(random.choices(WORDS, k=random.randint(2, 6))).encode()
    return json.dumps({"n": n, "ts": time.time()}).encode()


def run_producer(a: argparse.Namespace) -> int:
    p = Producer({**_cluster_conf(), "bootstrap.servers": a.bootstrap_servers})
    rates: dict[str, float] = {}
    formats: dict[str, str] = {}
    for spec in a.topic:
        topic, _, rest = spec.partition(":")
        rate, _, fmt = rest.partition(":")
        rates[topic] = float(rate or 5)
        formats[topic] = fmt or "json"
    due = dict.fromkeys(rates, time.monotonic())
    n = 0
    while not _stop.is_set():
        now = time.monotonic()
        for topic, rate in rates.items():
            while due[topic] <= now:
                try:
                    p.produce(topic, value=_value(formats[topic], n), key=str(n).encode())
                except BufferError:
                    p.poll(0.1)
                n += 1
                due[topic] += 1.0 / rate
        p.poll(0)
        _stop.wait(max(0.0, min(due.values()) - time.monotonic()))
    p.flush(5)
    return 0


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m collectors.demo.worker")
    sub = ap.add_subparsers(dest="role", required=True)
    c = sub.add_parser("consumer")
    c.add_argument("--bootstrap-servers", required=True)
    c.add_argument("--group", required=True)
    c.add_argument("--topic", required=True)
    c.add_argument("--client-id", required=True)
    c.add_argument("--instance-id", default=None)
    c.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    c.add_argument("--strategy", default="range", help="classic: partition.assignment.strategy")
    c.add_argument("--remote-assignor", default=None, help="consumer (KIP-848): group.remote.assignor")
    c.add_argument("--session-timeout-ms", type=int, default=6000)
    c.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    c.add_argument("--max-poll-interval-ms", type=int, default=30000)
    c.add_argument("--heartbeat-topic", default="groupscope.heartbeats")
    c.add_argument("--rate", type=float, default=0.0, help="messages/s processed (0: unlimited)")
    c.add_argument("--slow-for", type=float, default=0.0, help="seconds at --rate, then --fast-for unlimited")
    c.add_argument("--fast-for", type=float, default=0.0)
    c.add_argument("--stall-after", type=float, default=0.0)
    c.add_argument("--stall-for", type=float, default=0.0)
    c.add_argument("--run-for", type=float, default=0.0, help="close after this many seconds (0: run)")
    c.add_argument("--resubscribe-after", type=float, default=0.0, help="seconds, then subscribe again ...")
    c.add_argument("--add-topic", action="append", default=[], help="... to --topic and this, repeatable")
    sh = sub.add_parser("share-consumer")
    sh.add_argument("--bootstrap-servers", required=True)
    sh.add_argument("--group", required=True)
    sh.add_argument("--topic", required=True)
    sh.add_argument("--client-id", required=True)
    sh.add_argument("--pause-every", type=float, default=0.0, help="seconds of polling between pauses")
    sh.add_argument("--pause-for", type=float, default=0.0, help="seconds of each pause (0: none)")
    st = sub.add_parser("streams")
    st.add_argument("--bootstrap-servers", required=True)
    st.add_argument("--application-id", required=True, help="the streams group")
    st.add_argument("--input-topic", required=True)
    st.add_argument("--output-topic", required=True)
    st.add_argument("--client-id", required=True)
    st.add_argument("--workdir", required=True, help="its state directory, log and events (kept)")
    p = sub.add_parser("producer")
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument(
        "--topic", action="append", default=[], help="TOPIC[:MESSAGES_PER_S[:json|words]], repeatable"
    )
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    _install_stop_handlers()
    roles = {
        "consumer": run_consumer,
        "share-consumer": run_share_consumer,
        "streams": run_streams,
        "producer": run_producer,
    }
    return roles[a.role](a)


if __name__ == "__main__":
    sys.exit(main())
