"""`groupscope demo --bootstrap-servers HOST` never runs its chaos (topics, groups, SIGKILLed members,
a rebalance storm) on someone's cluster by default: it refuses before starting anything, unless
--chaos-on-my-cluster (whose help says exactly what it does) or --watch (no workload). No server is
started here: the demo's processes are recorded, not run."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors.cli import demo_cmd
from collectors.cli.main import cli
from collectors.demo import scenarios
from collectors.demo.scenarios import SCENARIOS
from collectors.demo.servers import processes
from collectors.demo.supervisor import DEMO_ID_ENV, Supervisor

HOST = "kafka.example.internal:9092"


@pytest.fixture()
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Every process, topic and workload the demo would start, recorded instead of started."""
    for k in list(os.environ):
        if k.startswith("GROUPSCOPE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv(DEMO_ID_ENV, "test-demo-safety")  # the demo sets it; restored after the test
    out: dict[str, list[Any]] = {"spawned": [], "topics": [], "workloads": [], "servers": []}

    def spawn(self: Supervisor, name: str, argv: list[str], **kw: Any) -> None:
        out["spawned"].append(name)

    def no_server(self: Any, *a: Any, **kw: Any) -> None:
        out["servers"].append(type(self).__name__)
        raise AssertionError("no server may start")

    monkeypatch.setattr(Supervisor, "spawn", spawn)
    for method in ("start_watching", "stop_all", "sweep"):
        monkeypatch.setattr(Supervisor, method, lambda self: None)
    monkeypatch.setattr(processes.RedisServer, "start", no_server)
    monkeypatch.setattr(demo_cmd, "_create_topics", lambda b, conf, topics: out["topics"].extend(topics))
    monkeypatch.setattr(demo_cmd, "_ensure_offsets_topic", lambda b, conf: True)
    monkeypatch.setattr(demo_cmd, "_wait_for_dashboard", lambda *a, **kw: True)
    monkeypatch.setattr(scenarios.Workload, "start", lambda self: out["workloads"].append(self.bootstrap))
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # the demo's Ctrl-C handler stays out of pytest
    return out


def _demo(tmp_path: Path, *args: str) -> Any:
    argv = ["demo", "--redis", "redis://127.0.0.1:1/0", "--no-browser", "--logs-dir", str(tmp_path / "logs")]
    return CliRunner().invoke(cli, [*argv, "--duration", "0.01", *args])


def test_another_cluster_is_refused_before_anything_starts(tmp_path: Path, recorded) -> None:
    r = _demo(tmp_path, "--bootstrap-servers", HOST)
    assert r.exit_code == 2, r.output
    msg = " ".join(r.output.split())
    assert f"--bootstrap-servers {HOST} is your cluster" in msg
    assert "--chaos-on-my-cluster" in msg and "--watch" in msg and "read-only" in msg
    assert "SIGKILLs a member of demo-crash" in msg and "rebalance storm" in msg
    assert recorded == {"spawned": [], "topics": [], "workloads": [], "servers": []}
    assert not (tmp_path / "logs").exists()  # not even its logs folder


def test_the_flag_s_help_says_exactly_what_it_does() -> None:
    r = CliRunner().invoke(cli, ["demo", "--help"], terminal_width=10_000)
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    assert "--chaos-on-my-cluster" in text and "--watch" in text
    for s in SCENARIOS:
        assert s.group in text and s.topic in text
        for topic, _ in s.extra_topics:
            assert topic in text
    # what it kills, stops, stalls and flaps, named by group, read from the scenarios
    summary = demo_cmd.chaos_summary()
    assert "SIGKILLs a member of demo-crash" in summary
    assert "makes a member of demo-stall stop polling" in summary
    assert "starts a new member of demo-storm every 3 s" in summary
    assert "demo-orders (6)" in summary and "groupscope.heartbeats (3" in summary
    # the Kafka Streams application (two instances, one restarted) and the share group are chaos too
    assert (
        "demo-streams (2 Kafka Streams instances)" in summary and "demo-share (2 share consumers)" in summary
    )
    assert "demo-streams-words-repartition" in summary  # what Kafka Streams creates itself
    assert "demo-lines (2)" in summary and "demo-word-counts (2)" in summary and "demo-jobs (3)" in summary
    assert "restarts members of" in summary and "demo-streams" in summary.split("restarts members of")[1]


def test_watch_runs_no_workload(tmp_path: Path, recorded) -> None:
    r = _demo(tmp_path, "--bootstrap-servers", HOST, "--watch")
    assert r.exit_code == 0, r.output
    assert recorded["spawned"] == ["collector", "alerts-worker", "dashboard"]
    assert recorded["topics"] == [] and recorded["workloads"] == [] and recorded["servers"] == []
    assert f"watching {HOST} read-only" in r.output


def test_the_flag_runs_the_workload_there(tmp_path: Path, recorded) -> None:
    r = _demo(tmp_path, "--bootstrap-servers", HOST, "--chaos-on-my-cluster")
    assert r.exit_code == 0, r.output
    assert recorded["workloads"] == [HOST]
    made = {t for t, _ in recorded["topics"]}
    assert {s.topic for s in SCENARIOS} <= made and "groupscope.heartbeats" in made
    assert "producer" not in recorded["spawned"]  # the workload's own processes: Workload.start
    assert f"--chaos-on-my-cluster: running the demo's workload on {HOST}" in r.output


def test_flags_that_make_no_sense_together(tmp_path: Path, recorded) -> None:
    r = _demo(tmp_path, "--bootstrap-servers", HOST, "--watch", "--chaos-on-my-cluster")
    assert r.exit_code == 2 and "choose one" in r.output
    r = _demo(tmp_path, "--watch")
    assert r.exit_code == 2 and "--bootstrap-servers" in r.output
    assert recorded["spawned"] == [] and recorded["servers"] == []
