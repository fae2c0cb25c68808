"""The Kafka Streams test application (collectors/demo/streams_app): a real KIP-1071 streams group.

Two instances of the word count (a repartition topic, a state store with its changelog) join one group
on the harness's broker with `group.protocol=streams`; records on the input topic come out as counts;
and the broker itself, through Kafka's own tools from its jars (kafka-groups.sh: GroupsCommand,
kafka-streams-groups.sh: StreamsGroupCommand), shows a Streams group with two `streams` members holding
the four tasks between them. One instance is then SIGKILLed: the broker keeps its member until the
group's session timeout (a group config, 6 s here) expires it and hands its tasks to the survivor; the
instance restarted on its state directory joins again as a new member of the same process, the group
is back to two members, and the counts go on from where they were (nothing lost, nothing counted
twice: the kill happens once every offset is committed).

Without servers: the launcher's command line, and the compiled classes cached after the first build.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from collectors.demo.servers.kafka.jars import kafka_version
from collectors.demo.streams_app import (
    MAIN_CLASS,
    StreamsApp,
    changelog_topic,
    ensure_compiled,
    kafka_streams_groups_tool,
    repartition_topic,
    set_group_config,
    source_hash,
)

T = TypeVar("T")
PARTITIONS = 2  # input partitions: 2 tasks per sub-topology, 4 in all
SESSION_MS = 6000


def test_launcher_command_line(tmp_path: Path) -> None:
    app = StreamsApp(
        "127.0.0.1:9092",
        "wc",
        "lines",
        "counts",
        "wc-1",
        tmp_path / "wc-1",
        config={"num.standby.replicas": "1"},
    )
    argv = app.argv(Path("/classes"), "/jdk/bin/java", "/jars/*")
    assert argv[0] == "/jdk/bin/java"
    assert argv[argv.index("-cp") + 1] == "/classes:/jars/*"
    main = argv.index(MAIN_CLASS)
    args = argv[main + 1 :]
    assert args == app.app_args()
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    assert pairs == {
        "--bootstrap-servers": "127.0.0.1:9092",
        "--application-id": "wc",
        "--input-topic": "lines",
        "--output-topic": "counts",
        "--client-id": "wc-1",
        "--state-dir": str(tmp_path / "wc-1" / "state"),
        "--group-protocol": "streams",
        "--commit-interval-ms": "500",
        "--config": "num.standby.replicas=1",
    }
    # the JVM options come before the main class, the log configuration in the instance's folder
    assert f"-Dlog4j2.configurationFile={tmp_path / 'wc-1' / 'log4j2.properties'}" in argv[:main]
    assert changelog_topic("wc") == "wc-word-counts-changelog"
    assert repartition_topic("wc") == "wc-words-repartition"


def test_compiled_once() -> None:
    """javac runs once per source and Kafka version: later calls reuse the cached classes."""
    classes = ensure_compiled()
    stamp = (classes / f"{MAIN_CLASS}.class").stat().st_mtime_ns
    assert classes.name == f"streams-app-{kafka_version()}-{source_hash()}"
    assert ensure_compiled() == classes
    assert (classes / f"{MAIN_CLASS}.class").stat().st_mtime_ns == stamp


# -- what Kafka's own tools say --------------------------------------------------------------------
def groups_list(bootstrap: str) -> dict[str, tuple[str, str]]:
    """kafka-groups.sh --list (GroupsCommand): group -> (TYPE, PROTOCOL)."""
    from collectors.demo.servers.kafka.broker import java_binary
    from collectors.demo.servers.kafka.jars import classpath

    out = subprocess.run(
        [
            java_binary(),
            "-cp",
            classpath(),
            "org.apache.kafka.tools.GroupsCommand",
            *("--bootstrap-server", bootstrap, "--list"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    # GROUP  TYPE  PROTOCOL
    return {row[0]: (row[1], row[2]) for row in map(str.split, out.splitlines()[1:]) if len(row) == 3}


def group_state(bootstrap: str, group: str) -> dict[str, Any]:
    """kafka-streams-groups.sh --describe --state --verbose: state, epochs, member count."""
    out = kafka_streams_groups_tool(bootstrap, "--describe", "--group", group, "--state", "--verbose")
    # GROUP  COORDINATOR (ID)  STATE  GROUP-EPOCH  TARGET-ASSIGNMENT-EPOCH  #MEMBERS
    ((*_, state, group_epoch, target_epoch, count),) = [
        row for row in map(str.split, out.splitlines()) if row[:1] == [group]
    ]
    return {
        "state": state,
        "group_epoch": int(group_epoch),
        "target_epoch": int(target_epoch),
        "members": int(count),
    }


def group_members(bootstrap: str, group: str) -> dict[str, dict[str, Any]]:
    """kafka-streams-groups.sh --describe --members --verbose: member id -> its protocol, epoch,
    process id, client id and active tasks ("0_1": sub-topology 0, partition 1)."""
    out = kafka_streams_groups_tool(bootstrap, "--describe", "--group", group, "--members", "--verbose")
    members = {}
    # GROUP  TARGET-ASSIGNMENT-EPOCH  TOPOLOGY-EPOCH  MEMBER  MEMBER-PROTOCOL  MEMBER-EPOCH  PROCESS
    # CLIENT-ID  ASSIGNMENTS ("ACTIVE: 0:[1]; 1:[1]; TARGET-ACTIVE: 0:[1]; 1:[1];")
    for row in map(str.split, out.splitlines()):
        if row[:1] != [group] or len(row) < 8:
            continue
        _, _, _, member, protocol, epoch, process, client_id, *assignments = row
        members[member] = {
            "protocol": protocol,
            "epoch": int(epoch),
            "process": process,
            "client_id": client_id,
            "active": sorted(_tasks(" ".join(assignments), "ACTIVE:")),
        }
    return members


def _tasks(text: str, label: str) -> list[str]:
    """The task ids after `label` in the tool's ASSIGNMENTS column ("0:[0,1]; 1:[1];" -> 0_0 0_1 1_1)."""
    found: list[str] = []
    words = text.split()
    if label not in words:
        return found
    for word in words[words.index(label) + 1 :]:
        if word.endswith(":") and not word[0].isdigit():  # the next label
            break
        sub, _, parts = word.rstrip(";").partition(":")
        found += [f"{sub}_{p}" for p in parts.strip("[]").split(",") if p]
    return found


def until(
    probe: Callable[[], T],
    timeout: float,
    what: str,
    accept: Callable[[T], object] = bool,
    every: float = 0.5,
) -> T:
    """`probe()`'s first value that `accept` takes, trying every `every` s for up to `timeout` s."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe()
            if accept(last):
                return last
        except (subprocess.SubprocessError, RuntimeError) as e:  # the tool while the group changes
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout:.0f} s (last: {last})")
        time.sleep(every)


# -- the records -------------------------------------------------------------------------------------
def produce(bootstrap: str, topic: str, lines: list[str]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, line in enumerate(lines):
        # keys spread the lines over both input partitions (both sub-topology 0 tasks get work)
        producer.produce(topic, key=f"line-{uuid.uuid4().hex[:6]}-{i}", value=line)
    assert producer.flush(30) == 0


class CountsReader:
    """Reads the output topic (no group: assign from the start) and keeps each word's latest count."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False}
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self.counts: dict[str, int] = {}

    def read(self) -> dict[str, int]:
        for msg in self.consumer.consume(500, timeout=0.5):
            if msg.error() is None:
                self.counts[msg.key().decode()] = int(msg.value().decode())
        return self.counts

    def wait(self, want: dict[str, int], timeout: float) -> None:
        until(self.read, timeout, f"counts {want}", lambda have: have == want, every=0)

    def close(self) -> None:
        self.consumer.close()


# -- the live test -----------------------------------------------------------------------------------
def streams_group(
    bootstrap: str, prefix: str, workdir: Path, instances: int = 2
) -> tuple[str, str, str, list[StreamsApp]]:
    """A new group's input and output topics and its group configs, and its (unstarted) instances:
    (group, input topic, output topic, apps). The configs come before the first member: a killed
    member expires in seconds, and the first assignment is not held back by the broker's initial
    rebalance delay (3 s by default)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    group = f"{prefix}-{uuid.uuid4().hex[:8]}"
    source, sink = f"{group}-lines", f"{group}-counts"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (source, sink)]).values():
        f.result(30)
    set_group_config(
        bootstrap,
        group,
        {
            "streams.session.timeout.ms": str(SESSION_MS),
            "streams.heartbeat.interval.ms": "1000",
            "streams.initial.rebalance.delay.ms": "0",
        },
    )
    apps = [
        StreamsApp(bootstrap, group, source, sink, f"{group}-{n}", workdir / f"app-{n}")
        for n in range(1, instances + 1)
    ]
    return group, source, sink, apps


@pytest.mark.servers
@pytest.mark.slow
def test_streams_group_two_instances_kill_and_restart(kafka_broker, tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    bs = kafka_broker.bootstrap_servers  # PLAINTEXT: a super user under the harness's authorizer
    group, source, sink, apps = streams_group(bs, "gs-streams", tmp_path)
    admin = AdminClient({"bootstrap.servers": bs})
    reader = CountsReader(bs, sink)
    try:
        for app in apps:
            app.start()
        for app in apps:
            app.wait_running(60)
        first, second = apps
        all_tasks = ["0_0", "0_1", "1_0", "1_1"]

        def split_between_two(members: dict[str, dict[str, Any]]) -> bool:
            held = sorted(t for m in members.values() for t in m["active"])
            return (
                len(members) == 2
                and held == all_tasks
                and all(len(m["active"]) == 2 for m in members.values())
            )

        members = until(
            lambda: group_members(bs, group), 45, "two members holding two tasks each", split_between_two
        )
        assert {m["protocol"] for m in members.values()} == {"streams"}
        by_client = {m["client_id"].split("-StreamThread-")[0]: m for m in members.values()}
        assert set(by_client) == {first.client_id, second.client_id}
        # what each instance says it runs is what the broker says it assigned
        for app in apps:
            app.wait_for(
                lambda e, app=app: (
                    e.get("event") == "tasks" and e["active"] == by_client[app.client_id]["active"]
                ),
                20,
                "the broker's assignment",
            )
        assert groups_list(bs)[group] == ("Streams", "streams")
        state = group_state(bs, group)
        assert state["state"] == "Stable" and state["members"] == 2, state
        topics = admin.list_topics(timeout=10).topics
        assert {repartition_topic(group), changelog_topic(group)} <= set(topics)

        produce(bs, source, ["Alpha beta gamma alpha"] * 20)
        reader.wait({"alpha": 40, "beta": 20, "gamma": 20}, 30)

        # The kill once everything is committed (the tool's lag is 0 on the input and the repartition
        # topic): a restart then re-reads nothing, and the counts stay exact under at-least-once.
        def committed() -> bool:
            out = kafka_streams_groups_tool(bs, "--describe", "--group", group, "--offsets")
            rows = [r for r in map(str.split, out.splitlines()) if r[:1] == [group]]
            # GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LEADER-EPOCH  LOG-END-OFFSET  OFFSET-LAG
            return len(rows) == 2 * PARTITIONS and all(r[-1] == "0" and r[3] != "-" for r in rows)

        until(committed, 30, "every offset committed")
        ids = {m["client_id"].split("-StreamThread-")[0]: k for k, m in members.items()}
        survivor, dead = ids[first.client_id], ids[second.client_id]
        second.kill()
        t_kill = time.monotonic()
        # The broker keeps the dead member until its session times out, then the survivor holds all.
        alone = until(
            lambda: group_members(bs, group),
            SESSION_MS / 1000 + 30,
            "the killed member's expiry",
            lambda m: set(m) == {survivor},
        )
        assert time.monotonic() - t_kill >= SESSION_MS / 1000 - 2  # it stayed about its session
        first.wait_for(lambda e: e.get("event") == "tasks" and e["active"] == all_tasks, 30, "all four tasks")
        assert alone[survivor]["process"] == members[survivor]["process"]

        second.start().wait_running(60)
        back = until(
            lambda: group_members(bs, group), 45, "two members again after the restart", split_between_two
        )
        assert survivor in back and dead not in back  # a new member id for the restarted instance...
        (new,) = set(back) - {survivor}
        # ...of the same Streams process: its process id lives in its state directory
        assert back[new]["process"] == members[dead]["process"]
        assert back[new]["client_id"].startswith(second.client_id)
        assert group_state(bs, group)["members"] == 2

        produce(bs, source, ["alpha delta"] * 10)
        reader.wait({"alpha": 50, "beta": 20, "gamma": 20, "delta": 10}, 30)

        # A clean close leaves the group at once (no wait for the session timeout): "close" on stdin,
        # or SIGTERM (the JVM's shutdown hook closes; 143 is the JVM's exit status after SIGTERM).
        assert first.close() == 0
        assert second.terminate() == 128 + 15
        for app in apps:
            assert app.events[-2:] == [
                {"event": "state", "state": "NOT_RUNNING", "old": "PENDING_SHUTDOWN"},
                {"event": "closed", "clean": True},
            ]
        empty = until(lambda: group_state(bs, group), 15, "the group emptied", lambda s: s["members"] == 0)
        assert empty["state"] == "Empty"
    finally:
        reader.close()
        for app in apps:
            if app.running:
                app.kill()
