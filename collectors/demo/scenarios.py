"""The demo's scripted scenarios: each one a group doing one thing worth seeing, on a loop.

A scenario is data: its group, topics, member settings and a script of (seconds, action, member) steps.
All scenarios run side by side, each on its own thread; when a scenario's script reaches its period,
every member it started is closed, the group is left to go Empty for `rest` seconds, and the script
starts again (same group, new generations).

The paces are those of the real Apache Kafka 4.0 captures (tests/fixtures/real-kafka-4.0/*/README.md):
members join 10 s apart (a classic rebalance takes about a heartbeat interval, 1 s here; a KIP-848
member reconciles on its next heartbeats, 5 s by the broker's default); the storm's flapper stays ~2 s
and a new one comes every 3 s, as in `rebalance-storm`; a stall lasts twice max.poll.interval.ms, as in
`poll-timeout`; a static member restarted within its session timeout takes its place again without a
rebalance (a new member id, the same generation), and one that stays away longer is expired, as in
`static-membership`.

Beside the consumer groups (classic and KIP-848), a Kafka Streams application on the streams protocol
(KIP-1071: collectors/demo/streams_app, a word count with a repartition topic and a state store, each
instance its own JVM) and a KIP-932 share group (two share consumers) run the same way: their members
are processes started and stopped by the script. It needs Java with javac and the kafka-streams jars
(`make demo` fetches them), and Kafka security settings the Java client can take
(collectors/demo/streams_app/security.py): without them the streams scenario is left out, said so,
and the rest runs.

Every member the script started and has not stopped is watched: one that exits on its own (a crash, a
broker that refused it) is started again after RESTART_DELAY seconds, later ones after twice as long
as the time before when it keeps dying young (up to RESTART_MAX), and the demo says so with the last
lines of its log.
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from collectors.demo.supervisor import Child, Supervisor

# The clusters of `groupscope demo --clusters N`: the same scenarios (so the same group names) on each.
DEMO_CLUSTERS = ("east", "west", "north", "south")

Action = Literal["start", "stop", "kill", "flap"]
# classic and consumer (KIP-848): probed consumer processes; streams (KIP-1071): Kafka Streams instances;
# share (KIP-932): share consumers
Protocol = Literal["classic", "consumer", "streams", "share"]
RESTART_DELAY = 5.0  # seconds before a member that exited on its own is started again ...
RESTART_MAX = 60.0  # ... doubling up to this while it keeps exiting within RESTART_MAX of its start


@dataclass(frozen=True)
class Member:
    name: str
    instance_id: str | None = None
    rate: float = 0.0  # messages/s processed, 0 = unlimited
    slow_for: float = 0.0
    fast_for: float = 0.0
    stall_after: float = 0.0
    stall_for: float = 0.0
    run_for: float = 0.0
    resubscribe_after: float = 0.0  # seconds after its start, the member subscribes again ...
    add_topics: tuple[str, ...] = ()  # ... to the scenario's topic and these
    pause_every: float = 0.0  # a share consumer stops polling after every this many seconds ...
    pause_for: float = 0.0  # ... for this many (0: never)


@dataclass(frozen=True)
class Step:
    at: float  # seconds from the start of the scenario's cycle
    action: Action
    member: str  # a Member name; for "flap", the prefix of the flapping processes


@dataclass(frozen=True)
class Scenario:
    name: str  # the group is demo-<name>
    topic: str
    partitions: int
    members: tuple[Member, ...]
    steps: tuple[Step, ...]
    period: float = 0.0  # 0: run the script once and keep the members to the end
    rest: float = 5.0  # seconds between cycles, for the group to go Empty
    produce_rate: float = 5.0  # messages/s into each of the scenario's topics
    # (topic, partitions) a member subscribes to later; for "streams", the application's output topic
    # (written by the application, not by the producer)
    extra_topics: tuple[tuple[str, int], ...] = ()
    protocol: Protocol = "classic"  # group.protocol; "consumer" is KIP-848; see Protocol
    produce_format: Literal["json", "words"] = "json"  # words: lines for the Streams word count
    # classic: partition.assignment.strategy; consumer: the broker's assignor (group.remote.assignor)
    strategy: str = "range"
    session_timeout_ms: int = 6000  # classic only: a KIP-848 session timeout is the broker's
    max_poll_interval_ms: int = 30000
    flap_every: float = 4.0  # "flap": a new member every this many seconds ...
    flap_until: float = 0.0  # ... until this second of the cycle
    flap_stay: float = 3.0  # each flapper closes after this many seconds
    what: str = ""

    @property
    def group(self) -> str:
        return f"demo-{self.name}"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "steady",
        "demo-orders",
        6,
        (Member("steady-1"), Member("steady-2")),
        (Step(0, "start", "steady-1"), Step(1, "start", "steady-2")),
        what="two members, no changes: Stable, no rebalance after they joined",
    ),
    Scenario(
        "scaleout",
        "demo-clicks",
        6,
        (Member("scale-1"), Member("scale-2"), Member("scale-3")),
        (
            Step(0, "start", "scale-1"),
            Step(10, "start", "scale-2"),
            Step(20, "start", "scale-3"),
            Step(60, "stop", "scale-3"),
        ),
        period=100,
        what="members join 10 s apart, one leaves: a generation per change (member_joined, member_left)",
    ),
    Scenario(
        "crash",
        "demo-payments",
        4,
        (Member("crash-1"), Member("crash-2")),
        (
            Step(0, "start", "crash-1"),
            Step(0, "start", "crash-2"),
            Step(20, "kill", "crash-2"),
            Step(40, "start", "crash-2"),
        ),
        period=100,
        what="SIGKILL of a member: no LeaveGroup, its session (6 s) expires (session_timeout)",
    ),
    Scenario(
        "stall",
        "demo-events",
        4,
        (Member("stall-1"), Member("stall-2", stall_after=20, stall_for=20)),
        (Step(0, "start", "stall-1"), Step(0, "start", "stall-2")),
        period=100,
        max_poll_interval_ms=10000,
        what="a member stops polling for 20 s: poll_stall at 5 s, max.poll.interval.ms (10 s) exceeded "
        "(poll_timeout), then it rejoins with a new member id",
    ),
    Scenario(
        "storm",
        "demo-storm",
        6,
        (Member("storm-1"), Member("storm-2")),
        (Step(0, "start", "storm-1"), Step(0, "start", "storm-2"), Step(10, "flap", "flap")),
        period=100,
        flap_every=3.0,
        flap_until=70,
        flap_stay=2.0,
        what="a flapping member (a new process every 3 s, stays ~2 s, leaves): a rebalance storm",
    ),
    Scenario(
        "static",
        "demo-static",
        6,
        (Member("static-1", instance_id="demo-inst-1"), Member("static-2", instance_id="demo-inst-2")),
        (
            Step(0, "start", "static-1"),
            Step(2, "start", "static-2"),
            Step(30, "stop", "static-1"),
            Step(35, "start", "static-1"),
            Step(50, "stop", "static-2"),
            Step(75, "start", "static-2"),
        ),
        period=100,
        rest=15,  # static members send no LeaveGroup: they are expired after the 10 s session
        session_timeout_ms=10000,
        what="static members (group.instance.id): one restarts within its 10 s session (no rebalance, "
        "a new member id), the other stays away 25 s (expired: session_timeout)",
    ),
    Scenario(
        "coop",
        "demo-coop",
        6,
        (Member("coop-1"), Member("coop-2"), Member("coop-3")),
        (
            Step(0, "start", "coop-1"),
            Step(10, "start", "coop-2"),
            Step(20, "start", "coop-3"),
            Step(45, "stop", "coop-1"),
        ),
        period=100,
        strategy="cooperative-sticky",
        what="cooperative-sticky: incremental rebalances, two generations per join",
    ),
    Scenario(
        "kip848",
        "demo-k848",
        6,
        (
            Member("k848-1"),
            Member("k848-2"),
            Member("k848-3", resubscribe_after=15, add_topics=("demo-k848-audit",)),
        ),
        (
            Step(0, "start", "k848-1"),
            Step(10, "start", "k848-2"),
            Step(20, "start", "k848-3"),
            Step(55, "stop", "k848-1"),
        ),
        period=100,
        extra_topics=(("demo-k848-audit", 4),),
        protocol="consumer",
        strategy="range",
        what="KIP-848 (group.protocol=consumer, server-side range assignor): joins, a subscription "
        "change at 35 s, a leave; a group epoch per change, no group-wide barrier",
    ),
    Scenario(
        "slow",
        "demo-slow",
        4,
        (Member("slow-1", rate=10, slow_for=120, fast_for=30),),
        (Step(0, "start", "slow-1"),),
        produce_rate=40,
        what="consumes 10 msg/s of 40 for 120 s (lag grows), then unlimited for 30 s (lag drains)",
    ),
    Scenario(
        "streams",
        "demo-lines",
        2,
        (Member("streams-1"), Member("streams-2")),
        (
            Step(0, "start", "streams-1"),
            Step(0, "start", "streams-2"),
            Step(40, "stop", "streams-2"),
            Step(50, "start", "streams-2"),
        ),
        period=150,
        rest=10,
        extra_topics=(("demo-word-counts", 2),),
        protocol="streams",
        produce_format="words",
        what="a Kafka Streams word count on the streams protocol (KIP-1071; a repartition topic and a state "
        "store, 4 tasks; Kafka Streams creates demo-streams-words-repartition and "
        "demo-streams-word-counts-changelog), two instances: one stops at 40 s (its tasks move to the "
        "other) and starts again at 50 s on its state directory (a new member of the same process)",
    ),
    Scenario(
        "share",
        "demo-jobs",
        3,
        # both pause together 20 s of every 90 (share-2 starts 10 s later): records wait meanwhile, so
        # the share-partition lag grows and drains, and the group's page has a lag to show
        (Member("share-1", pause_every=60, pause_for=30), Member("share-2", pause_every=60, pause_for=30)),
        (Step(0, "start", "share-1"), Step(10, "start", "share-2")),
        protocol="share",
        what="a share group (KIP-932): two share consumers on the same 3 partitions, each record "
        "delivered to one of them; each stops polling for 30 s every 90 s (20 s of it together: the "
        "share-partition lag grows, then drains)",
    ),
)


def streams_unavailable(kafka_conf: Mapping[str, Any] | None = None) -> str | None:
    """Why the Kafka Streams application cannot run here (a Kafka security setting in `kafka_conf`,
    librdkafka's, that the Java client cannot carry; no java, no javac, no kafka-streams jars and no
    Maven to fetch them, a failed build), or None once it is built (javac runs once, then cached)."""
    from collectors.demo.servers.kafka.jars import JarsError
    from collectors.demo.servers.processes import ServerError
    from collectors.demo.streams_app import StreamsAppError, ensure_compiled
    from collectors.demo.streams_app.security import StreamsSecurityError, java_client_properties

    try:
        # the settings first: the same check the worker makes, said once here instead of at each restart
        java_client_properties(kafka_conf or {})
    except StreamsSecurityError as e:
        return str(e)
    try:
        ensure_compiled()
    except (StreamsAppError, JarsError, ServerError, OSError) as e:
        return str(e)
    return None


@dataclass
class Workload:
    """Runs every scenario's script against `bootstrap`, each member a process of its own (a probed
    consumer, a share consumer, or a Kafka Streams instance: `member_argv`)."""

    supervisor: Supervisor
    bootstrap: str
    heartbeat_topic: str
    scenarios: tuple[Scenario, ...] = SCENARIOS
    label: str = ""  # before each child's name (its log file), when several workloads run
    # the cluster's Kafka settings (librdkafka's), which the members' workers read from the
    # configuration themselves: here to refuse the streams scenario at once when they cannot carry them
    kafka_conf: Mapping[str, Any] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def topics(self) -> list[tuple[str, int]]:
        return [t for s in self.scenarios for t in ((s.topic, s.partitions), *s.extra_topics)]

    def start(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "collectors.demo.worker",
            "producer",
            "--bootstrap-servers",
            self.bootstrap,
        ]
        for s in self.scenarios:
            fed = (s.topic,) if s.protocol == "streams" else (s.topic, *(t for t, _ in s.extra_topics))
            fmt = "" if s.produce_format == "json" else f":{s.produce_format}"
            for topic in fed:
                argv += ["--topic", f"{topic}:{s.produce_rate}{fmt}"]
        self.supervisor.spawn(f"{self.label}producer", argv, service=True)
        for s in self.scenarios:
            t = threading.Thread(target=self._run, args=(s,), name=f"scenario-{s.name}", daemon=True)
            t.start()
            self._threads.append(t)

    def member_argv(self, s: Scenario, m: Member) -> list[str]:
        """The command line of one member of `s`: a probed consumer, a share consumer or a Kafka
        Streams instance, after the scenario's protocol."""
        worker = [sys.executable, "-m", "collectors.demo.worker"]
        if s.protocol == "share":
            pauses = (
                ["--pause-every", str(m.pause_every), "--pause-for", str(m.pause_for)] if m.pause_for else []
            )
            return [
                *worker, "share-consumer", "--bootstrap-servers", self.bootstrap,
                "--group", s.group, "--topic", s.topic, "--client-id", m.name, *pauses,
            ]  # fmt: skip
        if s.protocol == "streams":
            # its state directory, Streams log and events beside the demo's logs, kept across restarts
            workdir = self.supervisor.run_dir / f"{self.label}{s.group}-{m.name}"
            return [
                *worker, "streams", "--bootstrap-servers", self.bootstrap,
                "--application-id", s.group, "--input-topic", s.topic,
                "--output-topic", s.extra_topics[0][0], "--client-id", m.name, "--workdir", str(workdir),
            ]  # fmt: skip
        return self._consumer_argv(s, m, m.name)

    def _consumer_argv(self, s: Scenario, m: Member, client_id: str) -> list[str]:
        argv = [
            sys.executable, "-m", "collectors.demo.worker", "consumer",
            "--bootstrap-servers", self.bootstrap,
            "--group", s.group,
            "--topic", s.topic,
            "--client-id", client_id,
            "--group-protocol", s.protocol,
            "--max-poll-interval-ms", str(s.max_poll_interval_ms),
            "--heartbeat-topic", self.heartbeat_topic,
        ]  # fmt: skip
        if s.protocol == "consumer":
            argv += ["--remote-assignor", s.strategy]
        else:
            argv += ["--strategy", s.strategy, "--session-timeout-ms", str(s.session_timeout_ms)]
        if m.instance_id:
            argv += ["--instance-id", m.instance_id]
        for flag, value in (
            ("--rate", m.rate),
            ("--slow-for", m.slow_for),
            ("--fast-for", m.fast_for),
            ("--stall-after", m.stall_after),
            ("--stall-for", m.stall_for),
            ("--run-for", m.run_for),
            ("--resubscribe-after", m.resubscribe_after),
        ):
            if value:
                argv += [flag, str(value)]
        for topic in m.add_topics:
            argv += ["--add-topic", topic]
        return argv

    def _run(self, s: Scenario) -> None:
        if s.protocol == "streams" and (why := streams_unavailable(self.kafka_conf)):
            self.supervisor.say(f"scenario {s.group} is left out (the other scenarios run): {why}")
            return
        members = {m.name: m for m in s.members}
        backoff: dict[str, float] = {}  # member -> its last restart delay
        cycle = 0
        while not self.stop.is_set():
            cycle += 1
            live: dict[str, Child] = {}
            due: dict[str, float] = {}  # member that exited on its own -> when it starts again
            t0 = self._now()
            for step in sorted(s.steps, key=lambda st: st.at):
                if self._watch(s, live, due, backoff, t0 + step.at):
                    return
                if step.action == "flap":
                    self._flap(s, step.member, t0)
                    continue
                due.pop(step.member, None)  # the script decides for it now
                if step.action == "start":
                    self._start(s, members[step.member], live)
                elif step.member in live:
                    sig = 9 if step.action == "kill" else 15  # SIGKILL: a crash; SIGTERM: a clean close
                    self.supervisor.signal(live.pop(step.member), sig)
            if not s.period:
                self._watch(s, live, due, backoff, math.inf)  # members run to the end of the demo
                return
            if self._watch(s, live, due, backoff, t0 + s.period):
                return
            for child in live.values():
                self.supervisor.signal(child, 15)
            for child in live.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.proc.wait(15)
            if self.stop.wait(s.rest):  # let the group go Empty between cycles
                return

    def _start(self, s: Scenario, m: Member, live: dict[str, Child]) -> None:
        child = self.supervisor.spawn(f"{self.label}{s.group}-{m.name}", self.member_argv(s, m))
        if child is not None:
            live[m.name] = child

    def _watch(
        self,
        s: Scenario,
        live: dict[str, Child],
        due: dict[str, float],
        backoff: dict[str, float],
        until: float,
    ) -> bool:
        """Wait until `until` (monotonic seconds), starting again the members of `live` that exit on
        their own meanwhile (a member the script stops is out of `live` before its signal); True once
        the demo is stopping."""
        members = {m.name: m for m in s.members}
        while True:
            now = self._now()
            for name, child in list(live.items()):
                if child.running():
                    continue
                del live[name]
                young = now - child.started < RESTART_MAX and name in backoff
                delay = min(RESTART_MAX, 2 * backoff[name]) if young else RESTART_DELAY
                backoff[name] = delay
                due[name] = now + delay
                tail = "\n".join(f"   | {line}" for line in child.log_tail().splitlines())
                self.supervisor.say(
                    f"{child.name} exited on its own with status {child.proc.returncode}; it starts "
                    f"again in {delay:g} s. Last lines of {child.log_path}:\n{tail}"
                )
            for name, when in list(due.items()):
                if when <= now:
                    del due[name]
                    self._start(s, members[name], live)
            if now >= until:
                return False
            if self.stop.wait(max(0.0, min(1.0, until - now, *(w - now for w in due.values())))):
                return True

    def _flap(self, s: Scenario, prefix: str, t0: float) -> None:
        n = 0
        while self._now() < t0 + s.flap_until and not self.stop.is_set():
            n += 1
            m = Member(f"{prefix}-{n:02d}", run_for=s.flap_stay)
            self.supervisor.spawn(f"{self.label}{s.group}-{m.name}", self._consumer_argv(s, m, m.name))
            if self.stop.wait(s.flap_every):
                return

    @staticmethod
    def _now() -> float:
        return time.monotonic()
