"""Adaptive Admin polling: a group in motion is described every few hundred milliseconds between the
poller's full polls, a steady one waits for the next full poll (collectors/pipeline/admin_hot.py)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collectors.pipeline.admin_hot import HotGroups

T = 1_000_000


def test_a_group_in_motion_is_hot_until_a_little_after_it_is_steady() -> None:
    hot = HotGroups(hold_ms=60_000, tail_ms=2_000)
    hot.saw("steady", "Stable", changed=False, now_ms=T)
    hot.saw("moving", "PreparingRebalance", changed=True, now_ms=T)
    assert hot.due(T + 1) == ["moving"]  # a steady group is not described fast
    hot.saw("moving", "CompletingRebalance", changed=True, now_ms=T + 300)
    hot.saw("moving", "Stable", changed=True, now_ms=T + 600)
    assert hot.due(T + 2_500) == ["moving"]  # a cooperative group's second rebalance may follow
    assert hot.due(T + 2_600) == []


def test_many_groups_in_motion_are_described_less_often_each() -> None:
    from collectors.pipeline.admin_hot import hot_interval

    assert hot_interval(0.1, 1) == 0.1 and hot_interval(0.1, 100) == 0.1
    assert hot_interval(0.1, 1_000) == 1.0  # about a thousand group describes a second at most
    assert hot_interval(0.5, 200) == 0.5  # a longer interval asked for stays


def test_a_streams_group_waiting_for_its_topics_is_not_in_motion() -> None:
    hot = HotGroups(hold_ms=60_000, tail_ms=2_000)
    hot.saw("waiting", "NotReady", changed=False, now_ms=T)
    hot.saw("assigning", "Assigning", changed=False, now_ms=T)
    assert hot.due(T + 1) == ["assigning"]


def test_a_long_rebalance_stays_hot_and_a_changed_steady_group_briefly() -> None:
    hot = HotGroups(hold_ms=60_000, tail_ms=2_000)
    for t in range(0, 50_000, 300):
        hot.saw("slow", "PreparingRebalance", changed=False, now_ms=T + t)
    assert hot.due(T + 50_000) == ["slow"]
    hot.saw("grew", "Stable", changed=True, now_ms=T)  # members or assignment changed
    assert "grew" in hot.due(T + 1_000) and "grew" not in hot.due(T + 2_001)
    hot.forget({"grew"})
    assert hot.due(T + 1_000) == []  # a group the cluster no longer lists


def test_first_sight_of_a_fleet_makes_nothing_hot() -> None:
    """At start every steady group is new: none is described fast (10,000 groups would be)."""
    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig

    poller = AdminPoller(PipelineConfig(redis_url="redis://unused", checkpoint_dir="/tmp"), store=None)

    class Sink:
        def produce(self, *a: object, **k: object) -> None: ...

    for i in range(100):
        doc = {"ts": T, "group": f"g{i}", "type": "classic", "state": "Stable", "members": []}
        poller._send_describe(Sink(), f"g{i}", doc, T)
    assert len(poller.hot) == 0
    poller.polls = 1  # a group that appears later is new to the cluster: it may rebalance again at once
    late = {**doc, "group": "late"}
    poller._send_describe(Sink(), "late", late, T)
    assert poller.hot.due(T + 1) == ["late"]
    # and each of its fast describes goes on to the model, unchanged or not: the last one that saw it
    # Stable bounds when its next rebalance began
    assert poller._send_describe(Sink(), "late", {**late, "ts": T + 300}, T + 300) == "hot"
    assert poller._send_describe(Sink(), "g1", {**doc, "group": "g1", "ts": T + 300}, T + 300) is None


@pytest.mark.servers
def test_a_real_rebalance_is_described_every_few_hundred_ms(kafka_broker) -> None:
    """A real group: member a stops polling, b joins; the rebalance waits for a (its revocation is served
    in poll()), about 8 s. The full poll comes every 5 s; in between, the group is described about every
    0.3 s while it rebalances, and no longer once it is Stable again."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig

    bs = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    data, admin_topic, group = f"hot-{suffix}", f"hot-admin-{suffix}", f"hot-group-{suffix}"
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics([NewTopic(data, 4, 1), NewTopic(admin_topic, 1, 1)]).values():
        f.result(15)
    member = Path(__file__).parent / "live_member.py"

    def start(client: str) -> subprocess.Popen:
        return subprocess.Popen(
            [
                *(sys.executable, str(member), "--bootstrap-servers", bs, "--group", group),
                *("--topic", data, "--client-id", client, "--max-poll-interval-ms", "60000"),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def wait_for(proc: subprocess.Popen, event: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = proc.stdout.readline() if proc.stdout else ""
            if line and json.loads(line).get("event") == event:
                return
        raise AssertionError(f"no {event} from the member")

    cfg = PipelineConfig(
        redis_url="redis://unused",
        checkpoint_dir="/tmp",
        kafka={"bootstrap.servers": bs},
        admin_topic=admin_topic,
        admin_poll_interval_s=5.0,
        admin_hot_interval_s=0.3,
    )
    poller = AdminPoller(cfg, store=None)
    a = start("a")
    b = None
    try:
        wait_for(a, "assigned")
        poller.start()
        time.sleep(6)  # a full poll has seen the group Stable
        a.stdin.write("stall 8\n")
        a.stdin.flush()
        wait_for(a, "stall")
        b = start("b")
        time.sleep(12)
        wait_for(b, "assigned", 60)
        time.sleep(8)  # Stable again, past the tail
        assert len(poller.hot) == 0
    finally:
        poller.stop()
        poller.join(30)
        for p in (a, b):
            if p is not None:
                with_close(p)
    states = described_states(bs, admin_topic, group)
    moving = [ts for ts, state in states if state != "Stable"]
    assert len(moving) >= 8, states  # about every 0.3 s over a rebalance of several seconds
    gaps = [y - x for x, y in itertools.pairwise(moving)]
    assert max(gaps) < 1500, states  # not one describe per full poll (5 s)
    assert poller.hot_polls >= len(moving) - 2
    assert states[-1][1] == "Stable"


def with_close(proc: subprocess.Popen) -> None:
    try:
        proc.stdin.write("close\n")
        proc.stdin.flush()
        proc.wait(20)
    except Exception:
        proc.kill()


def described_states(bs: str, topic: str, group: str) -> list[tuple[int, str]]:
    """(ts, state) of every describe the poller sent for `group`, in order."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"r-{time.time_ns()}", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            break  # end of the partition
        if m.key() == group.encode():
            line = json.loads(m.value())
            if "state" in line:
                out.append((line["ts"], line["state"]))
    c.close()
    return out
