"""One consumer-group member for tests/test_live_kafka.py, in its own OS process: a plain confluent-kafka
Consumer (no probe), so the collector sees it only through the broker (`__consumer_offsets`, the Admin
API and the coordinator's log).

Each process being its own is what makes the lives real: a SIGKILL is a crash the broker notices only
when the session times out, and a stall is a real stall (librdkafka keeps heartbeating from its own
thread and leaves the group by itself when `max.poll.interval.ms` passes).

Commands, one per line on stdin:
- `stall SECONDS`: stop calling poll() for that long, then poll again (librdkafka rejoins);
- `close`: close the consumer (a dynamic member sends LeaveGroup) and exit.
End of stdin also closes: the test that started the member is gone, the member must not outlive it.

Events, one JSON object per line on stdout: `started`, `assigned`, `revoked`, `lost` (with the member
id and partitions), `error`, `stall`, `polling`, `closed`.

Offsets: a message is stored for the auto-commit only while its offset is below `--store-below` (0: all),
so a live member can keep a steady, non-zero lag that the test can compare with the broker's.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError


def say(**fields: Any) -> None:
    print(json.dumps({"ts": int(time.time() * 1000), **fields}), flush=True)


def read_commands(q: queue.Queue[str]) -> None:
    for line in sys.stdin:
        if line.strip():
            q.put(line.strip())
    q.put("close")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="live_member")
    ap.add_argument("--bootstrap-servers", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--client-id", required=True)
    ap.add_argument("--protocol", choices=("classic", "consumer"), default="classic")
    ap.add_argument("--strategy", default="range")
    ap.add_argument("--instance-id", default=None)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--heartbeat-interval-ms", type=int, default=500)
    ap.add_argument("--max-poll-interval-ms", type=int, default=30000)
    ap.add_argument("--store-below", type=int, default=0)
    a = ap.parse_args(argv)

    conf: dict[str, Any] = {
        "bootstrap.servers": a.bootstrap_servers,
        "group.id": a.group,
        "client.id": a.client_id,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "enable.auto.offset.store": False,
        "auto.commit.interval.ms": 500,
        "topic.metadata.refresh.interval.ms": 5000,
    }
    if a.protocol == "consumer":
        # KIP-848: the broker owns session timeout, heartbeat interval and assignment; the client may
        # not set them.
        conf["group.protocol"] = "consumer"
    else:
        conf |= {
            "session.timeout.ms": a.session_timeout_ms,
            "heartbeat.interval.ms": a.heartbeat_interval_ms,
            "max.poll.interval.ms": a.max_poll_interval_ms,
            "partition.assignment.strategy": a.strategy,
        }
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    consumer = Consumer(conf)

    def parts(ps: list) -> list[list[Any]]:
        return sorted([p.topic, p.partition] for p in ps)

    def on_assign(c: Any, ps: list) -> None:
        say(event="assigned", member_id=c.memberid(), partitions=parts(ps))

    def on_revoke(c: Any, ps: list) -> None:
        say(event="revoked", member_id=c.memberid(), partitions=parts(ps))

    def on_lost(c: Any, ps: list) -> None:
        say(event="lost", member_id=c.memberid(), partitions=parts(ps))

    consumer.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    commands: queue.Queue[str] = queue.Queue()
    threading.Thread(target=read_commands, args=(commands,), daemon=True).start()
    say(event="started", client_id=a.client_id)
    consumed = 0
    while True:
        try:
            cmd = commands.get_nowait()
        except queue.Empty:
            cmd = ""
        if cmd == "close":
            break
        if cmd.startswith("stall"):
            seconds = float(cmd.split()[1])
            say(event="stall", member_id=consumer.memberid(), seconds=seconds)
            time.sleep(seconds)  # no poll(): the poll interval runs out, librdkafka leaves the group
            say(event="polling")
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        err = msg.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                say(event="error", member_id=consumer.memberid(), error=str(err))
            continue
        consumed += 1
        if not a.store_below or msg.offset() < a.store_below:
            consumer.store_offsets(msg)
    member_id = consumer.memberid()
    consumer.close()
    say(event="closed", member_id=member_id, consumed=consumed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
