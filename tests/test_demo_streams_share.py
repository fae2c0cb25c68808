"""The demo's Kafka Streams (KIP-1071) and share group (KIP-932) scenarios, without servers: their
members' command lines, the streams scenario left out (and said so) when Java, javac or the Kafka
Streams jars are missing while the other scenarios run, and a member that exits on its own started
again. Their live run on a broker, through the collector, is in tests/test_demo.py."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from collectors.demo import scenarios
from collectors.demo.scenarios import SCENARIOS, Member, Scenario, Step, Workload
from collectors.demo.supervisor import Supervisor
from collectors.demo.worker import parse

STREAMS = next(s for s in SCENARIOS if s.protocol == "streams")
SHARE = next(s for s in SCENARIOS if s.protocol == "share")


def _workload(tmp_path: Path, said: list[str], *only: Scenario) -> Workload:
    sup = Supervisor(tmp_path, "test-demo-streams-share", say=said.append)
    return Workload(sup, "127.0.0.1:9", "hb", scenarios=only or SCENARIOS)


def test_the_streams_and_share_scenarios() -> None:
    """Two Streams instances, one stopped and started again within each cycle (the group keeps a
    member meanwhile); two share consumers; each on topics of its own."""
    assert STREAMS.group == "demo-streams" and SHARE.group == "demo-share"
    assert [m.name for m in STREAMS.members] == ["streams-1", "streams-2"]
    stops = [st for st in STREAMS.steps if st.action == "stop"]
    assert [st.member for st in stops] == ["streams-2"]
    restart = [st for st in STREAMS.steps if st.action == "start" and st.member == "streams-2"]
    assert len(restart) == 2 and restart[1].at > stops[0].at  # started, stopped, started again
    assert STREAMS.period and all(st.at < STREAMS.period for st in STREAMS.steps)
    assert not any(st.action == "stop" and st.member == "streams-1" for st in STREAMS.steps)
    assert len(STREAMS.extra_topics) == 1  # its output topic
    assert [m.name for m in SHARE.members] == ["share-1", "share-2"]
    assert {st.action for st in SHARE.steps} == {"start"}


def test_the_share_consumers_pause_together_so_the_share_lag_grows() -> None:
    """Issue 34: the demo's share group read every record at once, so its page showed a lag of 0
    throughout. Its two consumers now stop polling for a while each cycle, at least 15 s of it both
    at once (share-2 starts later), and poll again after."""
    from collectors.demo.share import paused as in_pause

    started = {st.member: st.at for st in SHARE.steps if st.action == "start"}
    one, two = SHARE.members

    def paused(m: Member, t: float) -> bool:  # at second t of the scenario
        return t >= started[m.name] and in_pause(t - started[m.name], m.pause_every, m.pause_for)

    together = [t for t in range(0, 300) if paused(one, t) and paused(two, t)]
    assert len(together) >= 3 * 15  # in each of the first three cycles
    assert not paused(one, 5) and not paused(two, 15)  # polling from their start
    assert any(not paused(one, t) and not paused(two, t) for t in range(together[-1], 300))


def test_member_command_lines(tmp_path: Path) -> None:
    w = _workload(tmp_path, [])
    argv = w.member_argv(STREAMS, STREAMS.members[1])
    a = parse(argv[argv.index("streams") :])
    assert (a.role, a.application_id, a.input_topic) == ("streams", "demo-streams", STREAMS.topic)
    assert a.output_topic == STREAMS.extra_topics[0][0] and a.client_id == "streams-2"
    # the state directory stays across restarts: a restarted instance is the same Streams process
    assert a.workdir == str(tmp_path / "demo-streams-streams-2")
    argv = w.member_argv(SHARE, SHARE.members[0])
    a = parse(argv[argv.index("share-consumer") :])
    assert (a.role, a.group, a.topic, a.client_id) == ("share-consumer", "demo-share", SHARE.topic, "share-1")
    # it pauses (so the group's share-partition lag grows), and so does share-2 at the same time
    assert (
        (a.pause_every, a.pause_for) == (SHARE.members[0].pause_every, SHARE.members[0].pause_for) != (0, 0)
    )


def test_the_producer_feeds_the_input_topics_not_the_streams_output(tmp_path: Path, monkeypatch) -> None:
    spawned: list[list[str]] = []
    monkeypatch.setattr(Supervisor, "spawn", lambda self, name, argv, **kw: spawned.append(argv))
    w = _workload(tmp_path, [], STREAMS, SHARE)
    monkeypatch.setattr(Workload, "_run", lambda self, s: None)
    w.start()
    (producer,) = spawned
    a = parse(producer[producer.index("producer") :])
    assert a.topic == [f"{STREAMS.topic}:{STREAMS.produce_rate}:words", f"{SHARE.topic}:{SHARE.produce_rate}"]
    assert {t for t, _ in w.topics()} == {STREAMS.topic, STREAMS.extra_topics[0][0], SHARE.topic}


def test_word_lines_for_the_word_count() -> None:
    from collectors.demo.worker import WORDS, _value

    line = _value("words", 7).decode()
    assert 2 <= len(line.split()) <= 6 and set(line.split()) <= set(WORDS)
    assert b'"n": 7' in _value("json", 7)


def test_without_java_the_streams_scenario_is_left_out_and_the_rest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No javac (or java, or jars): the demo says so plainly, starts no Streams instance, and the
    other scenarios start their members."""
    from collectors.demo.streams_app import StreamsAppError

    def no_javac(version: str | None = None) -> Path:
        raise StreamsAppError("javac is needed once to build the Kafka Streams test application: install X")

    monkeypatch.setattr("collectors.demo.streams_app.ensure_compiled", no_javac)
    assert "javac is needed" in (scenarios.streams_unavailable() or "")
    started: list[str] = []
    monkeypatch.setattr(Supervisor, "spawn", lambda self, name, argv, **kw: started.append(name))
    said: list[str] = []
    steady = next(s for s in SCENARIOS if s.name == "steady")
    w = _workload(tmp_path, said, STREAMS, steady, SHARE)
    w.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not {"demo-share-share-1", "demo-steady-steady-2"} <= set(started):
        time.sleep(0.1)
    w.stop.set()
    assert not [n for n in started if "streams" in n], started
    assert {"producer", "demo-steady-steady-1", "demo-steady-steady-2", "demo-share-share-1"} <= set(started)
    (msg,) = [m for m in said if "demo-streams" in m]
    assert "left out" in msg and "javac is needed" in msg and "other scenarios run" in msg


def test_a_member_that_exits_on_its_own_starts_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A member the script did not stop is started again when it exits (after RESTART_DELAY, doubled
    while it keeps dying young); one the script stops is not."""
    monkeypatch.setattr(scenarios, "RESTART_DELAY", 0.3)
    code = "import sys, time; time.sleep(0.2); sys.exit(3)"
    monkeypatch.setattr(
        Workload,
        "member_argv",
        lambda self, s, m: [
            sys.executable,
            "-c",
            code if m.name == "dies" else "import time; time.sleep(30)",
        ],
    )
    said: list[str] = []
    s = Scenario(
        "restarts",
        "t",
        1,
        (Member("dies"), Member("stays")),
        (Step(0, "start", "dies"), Step(0, "start", "stays"), Step(0.5, "stop", "stays")),
    )
    w = _workload(tmp_path, said, s)
    runner = threading.Thread(target=w._run, args=(s,), daemon=True)
    runner.start()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len([m for m in said if "demo-restarts-dies" in m]) < 3:
        time.sleep(0.1)
    w.stop.set()
    runner.join(5)
    w.supervisor.stop_all(grace=1)
    dies = [m for m in said if "demo-restarts-dies exited on its own with status 3" in m]
    assert len(dies) >= 3, said
    assert "starts again in 0.3 s" in dies[0] and "starts again in 0.6 s" in dies[1], dies
    assert not [m for m in said if "stays" in m], said  # stopped by the script: not started again
    logs = sorted(p.name for p in tmp_path.glob("*.log"))
    assert logs == ["demo-restarts-dies.log", "demo-restarts-stays.log"], logs
