"""`groupscope demo` end to end on Apache Kafka: the workload's groups on the broker, the probe's events
on the heartbeat topic, the group coordinator's own log of each scenario, every process stopped at the
end (by --duration and by Ctrl-C), and each scenario's group as the collector reconstructs it (from
`__consumer_offsets`, the coordinator log it is given, the probe's events and the Admin API). Beside the
consumer groups, the Kafka Streams application on the streams protocol (two instances, one stopped and
started again) and the share group (two share consumers) are on the broker, as Kafka's own tools show
them, and in Redis through the collector, two members each after the restart.

One demo run (module fixture, about 2 minutes, ended by Ctrl-C once it has been read) against the
harness's broker and Redis serves the first tests; another test starts a demo with no arguments (its
own Redis and Kafka broker) that ends by its --duration.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser.dashboard_driver import task_ids_said
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from collectors.demo.scenarios import SCENARIOS
from collectors.demo.servers.chromium import headless_chromium
from collectors.demo.servers.processes import free_port
from collectors.demo.supervisor import DEMO_ID_ENV, leftover_pids
from collectors.storage.redis_store import RedisStore
from coordinator_model.broker_log import BrokerLogEvent, parse_broker_log_line
from coordinator_model.errors import EvidenceError

# seconds: a bound only. The run is stopped with Ctrl-C (SIGINT) as soon as the collector's view and
# the pages are read (VIEW_AFTER_S below), which leaves room for Spark to start and catch up on a busy
# machine; the no-argument demo's test is the one that ends by --duration.
DURATION = 150
# The collector's view is read once its model has reached this far into the run, or when the demo has
# ended: the scenarios' scripts have played (the last step is at 60 s), the KIP-848 group still has
# members (until 100 s), the slow consumer is still slow (until 120 s), the Streams instance stopped at
# 40 s has been back since 50 s (both run until the demo ends).
VIEW_AFTER_S = 80
CLI = [sys.executable, "-m", "collectors.cli.main"]
GROUPS = {s.group for s in SCENARIOS}
PROBED = {s.group for s in SCENARIOS if s.protocol in ("classic", "consumer")}  # probed consumers
STREAMS_GROUP = next(s.group for s in SCENARIOS if s.protocol == "streams")
SHARE_GROUP = next(s.group for s in SCENARIOS if s.protocol == "share")


@dataclass
class DemoRun:
    rc: int
    output: str
    demo_id: str
    leftovers: list[int]
    events: list[dict]
    groups_json: dict | None  # `groupscope groups --json` near the end of the run
    group_docs: dict[str, dict]  # `groupscope group NAME --json`
    bootstrap: str
    coordinator: list[BrokerLogEvent]  # the broker's coordinator log lines about the demo's groups
    slow_lag: list[dict]  # demo-slow's lag history in Redis
    live_pages: dict  # what the demo's own dashboard showed on its topic pages (_look_at_topics)
    broker_view: dict  # Kafka's own tools on the streams and the share group, right after group_docs

    def log_of(self, group: str, kind: str | None = None) -> list[BrokerLogEvent]:
        return [e for e in self.coordinator if e.group == group and (kind is None or e.kind == kind)]


def _read_heartbeats(bootstrap: str, topic: str) -> list[dict]:
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4()}", "enable.auto.commit": False}
    )
    md = c.list_topics(topic, timeout=10).topics[topic]
    c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
    out: list[dict] = []
    idle = time.monotonic()
    while time.monotonic() - idle < 3:
        m = c.poll(0.3)
        if m is None or m.error():
            continue
        idle = time.monotonic()
        out.append(json.loads(m.value()))
    c.close()
    return sorted(out, key=lambda e: e["ts"])


def _view_ready(store: RedisStore, as_of_ms: int) -> bool:
    """Every demo group is in Redis, modelled up to `as_of_ms` at least."""
    docs = [store.get_group(g) for g in GROUPS]
    return all(d is not None and int(d.get("as_of") or 0) >= as_of_ms for d in docs)


def _coordinator_event(line: str) -> BrokerLogEvent | None:
    try:
        return parse_broker_log_line(line)
    except EvidenceError:  # a line the parser does not know how to read is not this test's subject
        return None


def _broker_view(bootstrap: str) -> dict:
    """kafka-streams-groups.sh and kafka-share-groups.sh (Kafka's tools, from the broker's jars) on the
    demo's streams and share groups: member id -> what the tool says of it (or the tool's error)."""
    from test_share_groups import share_groups_tool
    from test_streams_app import group_members

    out: dict = {}
    for kind, look in (
        ("streams", lambda: group_members(bootstrap, STREAMS_GROUP)),
        ("share", lambda: share_groups_tool(bootstrap, SHARE_GROUP)["members"]),
    ):
        try:
            out[kind] = look()
        except Exception as e:  # that test's failure, not the fixture's
            out[kind] = repr(e)
    return out


def _cli_json(args: list[str], env: dict) -> dict | None:
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=env)
    return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None


@pytest.fixture(scope="module")
def demo_run(kafka_broker, redis_server, tmp_path_factory, artifacts_dir) -> DemoRun:
    logs = tmp_path_factory.mktemp("demo-logs")
    demo_id = uuid.uuid4().hex
    hb_topic = f"demo-heartbeats-{demo_id[:8]}"
    env = {
        **os.environ,
        DEMO_ID_ENV: demo_id,
        "GROUPSCOPE_HEARTBEAT_TOPIC": hb_topic,
        # what `groupscope demo` gives the collector when it starts the broker itself
        "GROUPSCOPE_BROKER_LOG_FILES": json.dumps([str(kafka_broker.coordinator_log)]),
    }
    port = free_port()
    argv = [
        # the harness's broker is not the demo's own: its workload runs there only when told so
        *CLI, "demo", "--bootstrap-servers", kafka_broker.bootstrap_servers, "--chaos-on-my-cluster",
        "--redis", redis_server.url,
        "--duration", str(DURATION), "--no-browser", "--port", str(port), "--logs-dir", str(logs),
    ]  # fmt: skip
    out_path = logs / "demo.out"
    started_ms = int(time.time() * 1000)
    with open(out_path, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    groups_json, docs = None, {}
    store = RedisStore.from_url(redis_server.url)
    driver, profile = headless_chromium(1400, 1400, prefix="gs-demo-topics-")
    base, warm = f"http://127.0.0.1:{port}", False
    try:
        # Spark's start and first batch take from ~30 s on an idle machine to over 90 s on a busy one:
        # wait for the model to get there rather than for a fixed time.
        while proc.poll() is None and not _view_ready(store, started_ms + VIEW_AFTER_S * 1000):
            if not warm and _port_open(port):
                # the dashboard's first page load (its scripts) meanwhile, not when the view is ready
                with contextlib.suppress(Exception):
                    driver.get(base + "/topics")
                warm = True
            time.sleep(2)
        read_env = {**os.environ, "GROUPSCOPE_REDIS_URL": redis_server.url}
        groups_json = _cli_json(["groups", "--json", "--name", "demo-"], read_env)
        for g in sorted(GROUPS):
            doc = _cli_json(["group", g, "--json"], read_env)
            if doc is not None:
                docs[g] = doc
        broker_view = _broker_view(kafka_broker.bootstrap_servers)
        live_pages = _look_at_topics(driver, base, artifacts_dir, read_env, proc)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # Ctrl-C: everything read, nothing to wait for
        rc = proc.wait(DURATION + 60)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.5)
    events = _read_heartbeats(kafka_broker.bootstrap_servers, hb_topic)
    # Only this run's lines: the harness's broker serves the whole session (its groups are not demo-*).
    first = min((e["ts"] for e in events), default=0) - 5000
    coordinator = [
        ev
        for line in kafka_broker.coordinator_lines()
        if (ev := _coordinator_event(line)) is not None and ev.group in GROUPS and ev.ts >= first
    ]
    # What the probes sent and what the collector showed, kept for a look after the run
    # (test-artifacts/ is not committed).
    (artifacts_dir / "demo-heartbeats.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (artifacts_dir / "demo-coordinator.log").write_text(
        "".join(line + "\n" for line in kafka_broker.coordinator_lines() if "demo-" in line)
    )
    (artifacts_dir / "demo-collector-view.json").write_text(
        json.dumps({"groups": groups_json, "docs": docs}, indent=1)[:5_000_000]
    )
    return DemoRun(
        rc=rc,
        output=out_path.read_text(),
        demo_id=demo_id,
        leftovers=leftover_pids(demo_id),
        events=events,
        groups_json=groups_json,
        group_docs=docs,
        bootstrap=kafka_broker.bootstrap_servers,
        coordinator=coordinator,
        slow_lag=store.get_lag_history("demo-slow"),
        live_pages=live_pages,
        broker_view=broker_view,
    )


SLOW_TOPIC = next(s.topic for s in SCENARIOS if s.group == "demo-slow")


def _port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _look_at_topics(driver: Any, base: str, artifacts_dir: Path, env: dict, demo: subprocess.Popen) -> dict:
    """The demo's own dashboard, live, in headless Chromium: the topics page until it lists every
    topic the demo's groups read, then demo-slow's topic page; screenshots, and what each showed
    beside what `groupscope topic NAME --json` printed at the same moment. On a loaded machine the
    first page load can take long: the page is asked for again every 20 s, while the demo runs."""
    want = {s.topic for s in SCENARIOS}
    out: dict = {"error": None}
    rows_js = (
        "try { const api = dash_ag_grid.getApi(arguments[0]); const out = [];"
        " api.forEachNode(n => { if (n.data) out.push(n.data); }); return out; } catch (e) { return null; }"
    )
    try:
        driver.get(base + "/topics")
        asked = time.monotonic()
        deadline = asked + 90
        rows: list = []
        while time.monotonic() < deadline and demo.poll() is None:
            rows = driver.execute_script(rows_js, "topics-grid") or []
            if want <= {r["name"] for r in rows}:
                break
            if time.monotonic() - asked > 20 and not rows:
                driver.get(base + "/topics")
                asked = time.monotonic()
            time.sleep(0.5)
        out["demo_ended"] = demo.poll() is not None
        out["topics"] = {r["name"]: r for r in rows}
        driver.save_screenshot(str(artifacts_dir / "demo-live-topics.png"))
        driver.get(base + "/topics/" + SLOW_TOPIC)
        deadline = time.monotonic() + 45
        groups: list = []
        while time.monotonic() < deadline and demo.poll() is None:
            groups = driver.execute_script(rows_js, "topic-groups") or []
            heat = driver.execute_script(
                "const el = document.querySelector('#topic-heatmap .js-plotly-plot');"
                " return el && el.data && el.data.length ? el.data[0].y : null;"
            )
            if any(g["group"] == "demo-slow" for g in groups) and heat:
                break
            time.sleep(0.5)
        out["slow_topic_groups"] = groups
        out["slow_topic_heatmap_groups"] = heat
        out["slow_topic_cli"] = _cli_json(["topic", SLOW_TOPIC, "--json"], env)
        driver.save_screenshot(str(artifacts_dir / "demo-live-topic.png"))
        out["streams_page"] = _look_at_group(driver, base, STREAMS_GROUP, artifacts_dir, demo, "1_1")
        out["share_page"] = _look_at_group(driver, base, SHARE_GROUP, artifacts_dir, demo, "share-2")
    except Exception as e:  # a broken page is that test's failure, not the fixture's
        # where it broke: a WebDriverException's repr alone says nothing ("WebDriverException()")
        out["error"] = f"{e!r} {getattr(e, 'msg', '') or ''}\n{traceback.format_exc(limit=-3)}"
    return out


def _look_at_group(
    driver: Any, base: str, group: str, artifacts_dir: Path, demo: subprocess.Popen, want: str
) -> dict:
    """A group's page, live, until its members grid has a row holding `want` (a task id, among the
    tasks as the grid says them, "active 0:0-1 1:1"; a client id):
    the page's header, topology and members as shown, and a screenshot."""
    rows_js = (
        "try { const api = dash_ag_grid.getApi(arguments[0]); const out = [];"
        " api.forEachNode(n => { if (n.data) out.push(n.data); }); return out; } catch (e) { return null; }"
    )
    text_js = "const el = document.getElementById(arguments[0]); return el ? el.innerText : null;"
    driver.get(base + "/groups/" + group)
    deadline = time.monotonic() + 45
    members: list = []
    while time.monotonic() < deadline and demo.poll() is None:
        members = driver.execute_script(rows_js, "group-members") or []
        if any(want in json.dumps(m) or want in task_ids_said(m.get("tasks")) for m in members):
            break
        time.sleep(0.5)
    time.sleep(1)  # the charts drawn
    driver.save_screenshot(str(artifacts_dir / f"demo-live-{group}.png"))
    driver.execute_script("document.getElementById('group-members').scrollIntoView()")
    time.sleep(0.5)
    driver.save_screenshot(str(artifacts_dir / f"demo-live-{group}-members.png"))
    return {
        # [scrollWidth, clientWidth] of the members grid's columns: wider than the grid, it scrolls
        "members_scroll": driver.execute_script(
            "const v = document.querySelector('#group-members .ag-center-cols-viewport');"
            "return v ? [v.scrollWidth, v.clientWidth] : null;"
        ),
        "members": members,
        "header": driver.execute_script(text_js, "group-header"),
        "topology": driver.execute_script(text_js, "group-topology"),
        "tasks": driver.execute_script(text_js, "group-tasks"),
        "partitions": driver.execute_script(rows_js, "group-partitions") or [],
    }


def _by_member(events: list[dict], group: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        if e["group"] == group:
            out[e["member_id"]].append(e)
    return out


@pytest.mark.servers
@pytest.mark.slow
def test_demo_stops_every_process_on_ctrl_c(demo_run):
    assert demo_run.rc == 0, demo_run.output[-3000:]
    assert "dashboard on http://" in demo_run.output
    # Ctrl-C once read; on a machine so loaded that reading took the whole DURATION, that ended it
    ended = ("SIGINT: stopping everything", f"--duration {DURATION} s reached")
    assert any(e in demo_run.output for e in ended), demo_run.output[-3000:]
    assert "stopped every process it started" in demo_run.output
    assert demo_run.leftovers == [], f"processes left behind: {demo_run.leftovers}"
    assert "producer exited early" not in demo_run.output, demo_run.output[-3000:]


@pytest.mark.servers
@pytest.mark.slow
def test_workload_groups_are_on_the_broker(demo_run):
    admin = AdminClient({"bootstrap.servers": demo_run.bootstrap})
    listed = {g.group_id: g.type.name for g in admin.list_consumer_groups().result(10).valid}
    assert set(listed) >= PROBED, PROBED - set(listed)
    # the KIP-848 scenario's group speaks the consumer protocol, the other consumer groups the classic one
    assert {g: listed[g] for g in PROBED} == {
        g: "CONSUMER" if g == "demo-kip848" else "CLASSIC" for g in PROBED
    }
    # the Kafka Streams application's group and the share group, as Kafka's kafka-groups.sh lists them
    from test_streams_app import groups_list

    kinds = groups_list(demo_run.bootstrap)
    assert kinds.get(STREAMS_GROUP) == ("Streams", "streams"), kinds
    assert kinds.get(SHARE_GROUP) == ("Share", "share"), kinds


@pytest.mark.servers
@pytest.mark.slow
def test_probe_events_tell_each_scenario(demo_run):
    events = demo_run.events
    seen = {e["group"] for e in events}
    assert seen >= PROBED, PROBED - seen
    assert not seen & {STREAMS_GROUP, SHARE_GROUP}  # no probe in a Streams instance or a share consumer
    for g in PROBED:
        kinds = {e["event"] for e in events if e["group"] == g}
        assert {"join", "assigned", "heartbeat"} <= kinds, (g, kinds)

    # crash: the SIGKILLed member never says leave; the survivor takes all 4 partitions afterwards
    crash = _by_member(events, "demo-crash")
    killed = next(m for m, evs in crash.items() if evs[0]["client_id"] == "crash-2")
    assert "leave" not in {e["event"] for e in crash[killed]}
    survivor = next(evs for evs in crash.values() if evs[0]["client_id"] == "crash-1")
    assert any(e["event"] == "assigned" and len(e["partitions"]) == 4 for e in survivor)

    # stall: poll_stall, then the partitions are lost, then the member rejoins with a new member id
    stall = _by_member(events, "demo-stall")
    stalled = [evs for evs in stall.values() if evs[0]["client_id"] == "stall-2"]
    first = [e["event"] for e in stalled[0]]
    assert "poll_stall" in first and "lost" in first and first.index("poll_stall") < first.index("lost")
    assert len(stalled) >= 2, "a new member id after max.poll.interval.ms was exceeded"

    # storm: many short-lived members
    flappers = {
        e["client_id"] for e in events if e["group"] == "demo-storm" and e["client_id"].startswith("flap")
    }
    assert len(flappers) >= 8, flappers

    # static: instance ids on every event; the member restarted within its session comes back under
    # the same instance id with a new member id (Kafka makes one for each JoinGroup without an id)
    static = [e for e in events if e["group"] == "demo-static"]
    assert {e["group_instance_id"] for e in static} == {"demo-inst-1", "demo-inst-2"}
    inst1 = [
        e["member_id"] for e in static if e["event"] == "join" and e["group_instance_id"] == "demo-inst-1"
    ]
    assert len(inst1) >= 2 and len(set(inst1)) == len(inst1), inst1

    # KIP-848: every member says it speaks the consumer protocol; the member whose subscription grows
    # is given partitions of the second topic; a closed member says leave
    k848 = [e for e in events if e["group"] == "demo-kip848"]
    assert {e.get("group_protocol") for e in k848} == {"consumer"}
    assert {e.get("group_protocol") for e in events if e["group"] != "demo-kip848"} == {"classic"}
    k3_topics = {
        p[0] for e in k848 if e["client_id"] == "k848-3" and e["event"] == "assigned" for p in e["partitions"]
    }
    assert "demo-k848-audit" in k3_topics, k3_topics
    assert any(e["client_id"] == "k848-1" and e["event"] == "leave" for e in k848)

    # cooperative-sticky: a member gives up part of its partitions and keeps the rest (incremental)
    coop1 = [e for e in events if e["group"] == "demo-coop" and e["client_id"] == "coop-1"]
    owned: set[tuple[str, int]] = set()
    incremental = False
    for e in coop1:
        parts = {tuple(p) for p in e["partitions"]}
        if e["event"] == "assigned":
            owned |= parts
        elif e["event"] == "revoked":
            incremental |= bool(parts) and parts < owned
            owned -= parts
    assert incremental, [(e["event"], e["partitions"]) for e in coop1 if e["event"] != "heartbeat"]


def _collector_missing(run: DemoRun) -> str | None:
    for line in run.output.splitlines():
        if "collector exited early" in line:
            tail = run.output[run.output.index(line) :][:1500]
            if "not implemented" in tail:
                return "`groupscope collect` is not implemented yet in this build"
            return None
    return None


@pytest.mark.servers
@pytest.mark.slow
def test_collector_shows_each_scenario(demo_run):
    """Through `groupscope groups --json` and `groupscope group NAME --json`, while the demo ran."""
    reason = _collector_missing(demo_run)
    if reason:
        pytest.skip(reason)
    assert demo_run.groups_json is not None, "groupscope groups --json failed:\n" + demo_run.output[-3000:]
    names = {r["name"] for r in demo_run.groups_json["groups"]}
    assert names >= GROUPS, GROUPS - names
    docs = demo_run.group_docs
    assert set(docs) == GROUPS, GROUPS - set(docs)

    def causes(g: str) -> list[str]:
        return [gen.get("cause") for gen in docs[g]["generations"]]

    summary = {g: (d["state"], len(d["generations"]), causes(g)) for g, d in docs.items()}
    assert docs["demo-steady"]["state"] == "Stable", summary
    assert "offsets" in docs["demo-steady"]["sources"], docs["demo-steady"]["sources"]  # __consumer_offsets
    assert "broker_log" in docs["demo-crash"]["sources"], docs["demo-crash"]["sources"]
    assert "session_timeout" in causes("demo-crash"), summary
    assert "poll_timeout" in causes("demo-stall"), summary
    assert {"member_joined", "member_left"} <= set(causes("demo-scaleout")), summary
    # the reason is the one Kafka logged
    expired = next(g for g in docs["demo-crash"]["generations"] if g.get("cause") == "session_timeout")
    assert "heartbeat expiration" in (expired.get("reason") or ""), expired
    # the storm: many generations in a short time (a flapper every 3 s from t=10 s)
    storm = docs["demo-storm"]["generations"]
    assert len(storm) >= 10, summary
    assert len(docs["demo-scaleout"]["generations"]) >= 3, summary
    # slow: the lag grows while it consumes 10 msg/s of 40 (for its first 120 s)
    lag = [(p["ts"], p["lag"]) for p in demo_run.slow_lag]
    assert max((n for _, n in lag), default=0) >= 100, (lag, docs["demo-slow"].get("lag"))

    # static: the member restarted within its session took its old place under a new member id, and no
    # generation was made for it; the other one, away longer than its session, was expired
    static = docs["demo-static"]["generations"]
    assert "session_timeout" in causes("demo-static"), summary
    joins = [e for e in demo_run.events if e["group"] == "demo-static" and e["event"] == "join"]
    replacement = [e["member_id"] for e in joins if e["group_instance_id"] == "demo-inst-1"][1]
    assert any(replacement in gen.get("members", []) for gen in static), (replacement, static)
    assert not any(replacement in gen.get("members_joined", []) for gen in static), (replacement, static)

    # KIP-848: a consumer group whose epoch grew with each change (3 joins, a new subscription and a leave
    # in the first cycle); its members are the ones the probes saw join, k848-1 left
    k = docs["demo-kip848"]
    assert k["type"] == "consumer", k["type"]
    epochs = [gen["generation"] for gen in k["generations"]]
    assert len(epochs) >= 5 and epochs == sorted(set(epochs)), epochs
    assert k["group_epoch"] is not None and k["group_epoch"] >= epochs[-1], (k["group_epoch"], epochs)
    first: dict[str, str] = {}  # client id -> its first member id
    for e in demo_run.events:
        if e["group"] == "demo-kip848" and e["event"] == "join":
            first.setdefault(e["client_id"], e["member_id"])
    joined = {m for gen in k["generations"] for m in gen.get("members_joined") or []}
    left = {m for gen in k["generations"] for m in gen.get("members_left") or []}
    assert set(first.values()) <= joined, (first, joined)
    assert first["k848-1"] in left, (first, left)
    for m in k["members"]:  # when the view was taken within a cycle
        assert m["client_id"] in first and m["member_epoch"] is not None, m


@pytest.mark.servers
@pytest.mark.slow
def test_streams_and_share_groups_through_the_collector(demo_run):
    """The Kafka Streams word count (streams protocol) with both instances in after streams-2's restart,
    and the share group with its two share consumers: in Redis through the collector
    (`groupscope group NAME --json`) as Kafka's own tools showed them on the broker at the same time."""
    reason = _collector_missing(demo_run)
    if reason:
        pytest.skip(reason)
    docs, broker = demo_run.group_docs, demo_run.broker_view
    assert "scenario demo-streams is left out" not in demo_run.output, demo_run.output[-3000:]

    st = docs[STREAMS_GROUP]
    on_broker = broker["streams"]
    assert isinstance(on_broker, dict), on_broker
    summary = {k: st.get(k) for k in ("type", "state", "members", "generations")}
    assert st["type"] == "streams", summary
    members = {m["member_id"]: m for m in st["members"]}
    assert len(members) == 2, summary
    assert set(members) == set(on_broker), (summary, on_broker)
    clients = sorted(b["client_id"].split("-StreamThread-")[0] for b in on_broker.values())
    assert clients == ["streams-1", "streams-2"], on_broker
    # the restart: streams-2's first member left the group (its close at 40 s), and the member it has
    # now is another one, of the same Streams process (its process id is in its state directory)
    left = {m for gen in st["generations"] for m in gen.get("members_left") or []}
    assert left and not left & set(members), summary
    causes = [gen.get("cause") for gen in st["generations"]]
    assert "member_joined" in causes[causes.index("member_left") :], summary  # and it came back
    (back,) = [m for m in st["members"] if m["client_id"].startswith("streams-2")]
    assert any(back["member_id"] in (gen.get("members_joined") or []) for gen in st["generations"]), summary
    assert sorted(t for b in on_broker.values() for t in b["active"]) == ["0_0", "0_1", "1_0", "1_1"]

    sh = docs[SHARE_GROUP]
    on_broker = broker["share"]
    assert isinstance(on_broker, dict), on_broker
    summary = {k: sh.get(k) for k in ("type", "state", "members")}
    assert sh["type"] == "share", summary
    assert len(sh["members"]) == 2 and {m["member_id"] for m in sh["members"]} == set(on_broker), (
        summary,
        on_broker,
    )
    assert sorted(b["client_id"] for b in on_broker.values()) == ["share-1", "share-2"], on_broker


@pytest.mark.servers
@pytest.mark.slow
@pytest.mark.browser
def test_live_demo_topics_pages(demo_run):
    """The demo's dashboard, live: the topics page lists every topic of the scenarios with the groups
    that read it, and demo-slow's topic page shows the group, its lag and its heatmap row, as the CLI
    prints them."""
    reason = _collector_missing(demo_run)
    if reason:
        pytest.skip(reason)
    seen = demo_run.live_pages
    assert seen["error"] is None, seen["error"]
    if seen.get("demo_ended") and not seen.get("topics"):
        pytest.skip("the demo (and its dashboard) ended before its topics page loaded: a loaded machine")
    topics = seen["topics"]
    for s in SCENARIOS:
        assert s.topic in topics, (s.topic, sorted(topics))
        assert topics[s.topic]["groups"] >= 1 and topics[s.topic]["partitions"] >= 1, topics[s.topic]
    groups = {g["group"]: g for g in seen["slow_topic_groups"]}
    assert set(groups) == {"demo-slow"}, groups
    assert seen["slow_topic_heatmap_groups"] == ["demo-slow"]
    cli = seen["slow_topic_cli"]
    assert cli is not None and [g["group"] for g in cli["groups"]] == ["demo-slow"]
    # the page and the CLI read the index a moment apart, while the slow group's lag moves (it grows,
    # then drains): each shows a lag the group had, within what its lag history holds (which keeps a
    # minute's peak and newest point, not every value the group went through)
    had = {p["lag"] for p in demo_run.slow_lag}
    for shown in (groups["demo-slow"]["lag"], cli["groups"][0]["lag"]):
        assert min(had) <= shown <= max(had), (groups, cli["groups"], sorted(had))
    assert max(had) > 0  # and it was behind at some point
    assert groups["demo-slow"]["partitions"] == cli["groups"][0]["partitions"]


@pytest.mark.servers
@pytest.mark.slow
@pytest.mark.browser
def test_live_demo_streams_and_share_group_pages(demo_run):
    """The demo's dashboard, live, on its two groups of the newer kinds (screenshots
    demo-live-demo-streams[-members].png and demo-live-demo-share[-members].png): the streams
    group's members with their tasks, every task held, in a grid that does not scroll sideways, its
    topology with the repartition and changelog topics and its lag per task; the share group's two
    share consumers and its share partitions with their lag."""
    reason = _collector_missing(demo_run)
    if reason:
        pytest.skip(reason)
    seen = demo_run.live_pages
    assert seen["error"] is None, seen["error"]
    if seen.get("demo_ended"):
        pytest.skip("the demo (and its dashboard) ended before its pages were looked at: a loaded machine")
    streams = seen["streams_page"]
    assert "streams" in (streams["header"] or "").lower(), streams["header"]
    held = sorted(t for m in streams["members"] for t in task_ids_said(m["tasks"]))
    assert held == ["0_0", "0_1", "1_0", "1_1"], streams["members"]
    # its members grid fits the page at 1,400 px (issue 34: it scrolled sideways)
    scroll = streams["members_scroll"]
    assert scroll and scroll[0] <= scroll[1], f"the streams members grid scrolls sideways: {scroll}"
    assert all(m["process_id"] for m in streams["members"]), streams["members"]
    topology = streams["topology"] or ""
    assert f"{STREAMS_GROUP}-words-repartition" in topology and "changelog" in topology, topology
    # the lag per task: each of the four, with the instance that runs it
    task_lines = [line.split("\t") for line in (streams["tasks"] or "").splitlines()[1:]]
    assert sorted(line[0] for line in task_lines) == ["0_0", "0_1", "1_0", "1_1"], streams["tasks"]
    assert all(line[1].startswith("streams-") for line in task_lines), streams["tasks"]
    share = seen["share_page"]
    assert "share" in (share["header"] or "").lower(), share["header"]
    assert sorted(m["client_id"] for m in share["members"]) == ["share-1", "share-2"], share["members"]
    rows = [r for r in share["partitions"] if r["topic"] == "demo-jobs"]
    assert rows and all(r["lag"] is not None for r in rows), share["partitions"]


@pytest.mark.servers
@pytest.mark.slow
def test_broker_log_tells_each_scenario(demo_run):
    """The group coordinator's own log (the judge of what Kafka did) for the scenarios' key moments."""
    reasons = {g: [e.reason or "" for e in demo_run.log_of(g, "prepare")] for g in GROUPS}
    assert any("heartbeat expiration" in r for r in reasons["demo-crash"]), reasons["demo-crash"]
    assert any("LeaveGroup" in r for r in reasons["demo-scaleout"]), reasons["demo-scaleout"]
    assert len(reasons["demo-storm"]) >= 10, len(reasons["demo-storm"])
    # steady: the two joins, then nothing until its members leave at the end of the run
    steady = reasons["demo-steady"]
    joins = [r for r in steady if "Adding new member" in r]  # one or two: a join may wait for the other
    assert 1 <= len(joins) <= 2 and steady[: len(joins)] == joins, steady
    assert all("LeaveGroup" in r for r in steady[len(joins) :]), steady

    # static: the restart within the session replaces the member (new member id), no rebalance follows
    [replaced, *_] = demo_run.log_of("demo-static", "static_member_replaced")
    assert replaced.group_instance_id == "demo-inst-1", replaced
    after = [e for e in demo_run.log_of("demo-static", "prepare") if 0 <= e.ts - replaced.ts < 10_000]
    assert after == [], after
    assert any("heartbeat expiration" in r and "demo-inst-2" in r for r in reasons["demo-static"])

    # KIP-848: no classic rebalance; the group epoch is bumped on each change, with the range assignor
    assert reasons["demo-kip848"] == []
    bumps = [e.epoch for e in demo_run.log_of("demo-kip848", "group_epoch")]
    assert len(bumps) >= 5 and bumps == sorted(bumps), bumps
    targets = demo_run.log_of("demo-kip848", "target_assignment")
    assert targets and {t.assignor for t in targets} == {"range"}, targets
    assert demo_run.log_of("demo-kip848", "consumer_member_left"), "k848-1 left at 55 s"


NO_ARGS_DURATION = 12  # seconds from the dashboard answering: the workload is up well before


@pytest.mark.servers
@pytest.mark.slow
def test_a_demo_with_no_arguments_runs_its_duration_and_stops_everything(tmp_path):
    """`groupscope demo` on its embedded defaults (its own Kafka broker and Redis), as `make demo`
    runs it: the dashboard answers, the whole workload runs, and --duration stops every process it
    started (the module's other run is stopped by Ctrl-C)."""
    demo_id = uuid.uuid4().hex
    env = {**os.environ, DEMO_ID_ENV: demo_id}
    argv = [*CLI, "demo", "--no-browser", "--port", str(free_port()), "--logs-dir", str(tmp_path)]
    argv += ["--duration", str(NO_ARGS_DURATION)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    lines: list[str] = []
    running: list[int] = []
    try:
        deadline = time.monotonic() + 90
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "dashboard on http://" in line or time.monotonic() > deadline:
                break
        assert any("dashboard on http://" in x for x in lines), "".join(lines)
        url = next(x for x in lines if "dashboard on http://" in x).split("dashboard on ")[1].split()[0]
        # until the duration stops the demo: the dashboard answers once, and the workload (broker,
        # Redis, services and the scenario members) is seen running; on a loaded 2-core machine the
        # first answer can take most of the duration, so both are looked for side by side
        answered = None
        deadline = time.monotonic() + NO_ARGS_DURATION + 30
        while proc.poll() is None and time.monotonic() < deadline:
            if answered is None:
                try:
                    with urllib.request.urlopen(url, timeout=2) as resp:
                        answered = resp.status
                except urllib.error.HTTPError as e:
                    answered = e.code
                except OSError:
                    pass
            if len(running) < 15:
                running = max(running, leftover_pids(demo_id), key=len)
            if answered is not None and len(running) >= 15:
                break
            time.sleep(0.5)
        assert answered is not None and answered < 500, f"the dashboard at {url} answered {answered}"
        rest, _ = proc.communicate(timeout=NO_ARGS_DURATION + 90)
        lines.append(rest)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines)
    assert len(running) >= 15, (running, out[-3000:])
    assert proc.returncode == 0, out[-3000:]
    assert f"--duration {NO_ARGS_DURATION} s reached" in out and "stopped every process it started" in out
    time.sleep(0.5)
    left = leftover_pids(demo_id)
    for pid in left:  # never leave them running, even when the test fails
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert left == [], f"left behind after --duration: {left}"
    assert "killed" not in out or "leftover" not in out, "every child stopped on its own (no sweep needed)"


def test_scenario_scripts_are_consistent():
    """Every step names a member of its scenario, and groups are named after their scenario."""
    for s in SCENARIOS:
        names = {m.name for m in s.members}
        assert s.group == f"demo-{s.name}"
        for step in s.steps:
            assert step.action == "flap" or step.member in names, (s.name, step)
            assert not s.period or step.at < s.period
    topics = [t for s in SCENARIOS for t in (s.topic, *(x for x, _ in s.extra_topics))]
    assert len(set(topics)) == len(topics)
    for s in SCENARIOS:
        for m in s.members:
            assert set(m.add_topics) <= {t for t, _ in s.extra_topics}, (s.name, m)
    assert Path(__file__).parent.joinpath("..", "collectors", "demo", "worker.py").exists()


def test_member_settings_suit_each_group_protocol():
    """librdkafka refuses the classic-only settings with group.protocol=consumer: a KIP-848 member has
    none of them (the broker owns its session and heartbeat), and both kinds build a consumer."""
    from confluent_kafka import Consumer

    from collectors.demo.scenarios import Workload
    from collectors.demo.supervisor import Supervisor
    from collectors.demo.worker import consumer_conf, parse

    workload = Workload(Supervisor(Path("."), "unused"), "127.0.0.1:9", "hb")
    classic_only = {"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"}
    for s in SCENARIOS:
        if s.protocol not in ("classic", "consumer"):
            continue  # not consumers: tests/test_demo_streams_share.py
        for m in s.members:
            argv = workload._consumer_argv(s, m, m.name)
            conf = consumer_conf(parse(argv[argv.index("consumer") :]))
            if s.protocol == "consumer":
                assert conf["group.protocol"] == "consumer" and not classic_only & set(conf), conf
                assert conf["group.remote.assignor"] == s.strategy
            else:
                assert conf["partition.assignment.strategy"] == s.strategy, conf
            c = Consumer({k: v for k, v in conf.items() if not k.startswith("groupscope.")})
            c.close()


def test_supervisor_reports_an_early_exit_keeps_the_rest_and_kills_the_stubborn(tmp_path):
    from collectors.demo.supervisor import Supervisor

    said: list[str] = []
    demo_id = uuid.uuid4().hex
    sup = Supervisor(tmp_path, demo_id, say=said.append)
    py = sys.executable
    quits = sup.spawn(
        "collector", [py, "-c", "print('not implemented yet'); raise SystemExit(3)"], service=True
    )
    keeps = sup.spawn("dashboard", [py, "-c", "import time; time.sleep(60)"], service=True)
    # ignores SIGTERM, and has a child of its own: both must go
    stubborn_code = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    )
    stubborn = sup.spawn("stubborn", [py, "-c", stubborn_code], service=True)
    assert quits and keeps and stubborn
    sup.start_watching()
    deadline = time.monotonic() + 10
    while not sup.early_exits and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [(name, rc) for name, rc, _ in sup.early_exits] == [("collector", 3)]
    assert "not implemented yet" in sup.early_exits[0][2]
    assert any("collector exited early with status 3" in line for line in said)
    assert keeps.running() and stubborn.running()
    time.sleep(0.5)
    assert len(leftover_pids(demo_id)) == 3  # dashboard, stubborn and its child
    started = time.monotonic()
    sup.stop_all(grace=1.0)
    assert time.monotonic() - started < 10
    assert not keeps.running() and not stubborn.running()
    assert sup.sweep() == [] and leftover_pids(demo_id) == []
    assert sup.spawn("late", [py, "-c", "pass"]) is None, "nothing starts once stopping has begun"
