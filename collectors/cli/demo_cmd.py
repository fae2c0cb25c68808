"""`groupscope demo` (what `make demo` runs): a live cluster with real rebalances on one machine.

With no arguments it starts its own Redis and Apache Kafka broker (the embedded KRaft broker of
collectors/demo/servers/kafka, the one the tests use), creates the topics, runs the scenario workload
(collectors/demo/scenarios.py: real producer and probed consumer processes), and starts the collector,
the Celery worker and the dashboard as child processes. The collector reads the broker's
`__consumer_offsets`, the probes' heartbeat topic, the Admin API and the broker's group-coordinator
log file (`broker_log_files`), so each rebalance's reason is the one Kafka logged. Against your own
cluster (--bootstrap-servers), set GROUPSCOPE_BROKER_LOG_FILES to ship its coordinator log too.
Ctrl-C (or --duration) stops every process it started: workload, children, broker, Redis.

The workload is chaos (topics created, groups run, members SIGKILLed, a rebalance storm): it runs on
the embedded broker, and on a cluster named by --bootstrap-servers only with --chaos-on-my-cluster,
whose help says exactly what it does (`chaos_summary`). Without it the demo refuses to start, and
--watch runs only the collector, the alert worker and the dashboard against that cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import click

from collectors.command_options import bootstrap_option, redis_option, settings_from
from collectors.demo.scenarios import DEMO_CLUSTERS, SCENARIOS, Scenario
from collectors.endpoints import dashboard_bind_error

CHAOS_FLAG = "--chaos-on-my-cluster"


def _groups(scenarios: tuple[Scenario, ...], test: Any) -> str:
    return ", ".join(s.group for s in scenarios if test(s))


def chaos_summary(scenarios: tuple[Scenario, ...] = SCENARIOS) -> str:
    """Exactly what the demo's workload does to a cluster, read from the scenarios themselves."""
    topics = ", ".join(f"{t} ({n})" for s in scenarios for t, n in ((s.topic, s.partitions), *s.extra_topics))
    kinds = {"consumer": ", KIP-848", "streams": " Kafka Streams instances", "share": " share consumers"}
    groups = ", ".join(f"{s.group} ({len(s.members)}{kinds.get(s.protocol, '')})" for s in scenarios)
    # what Kafka Streams itself creates beside the application's topics (its repartition and changelog)
    internal = ", ".join(
        f"{s.group}-words-repartition, {s.group}-word-counts-changelog"
        for s in scenarios
        if s.protocol == "streams"
    )
    killed = _groups(scenarios, lambda s: any(st.action == "kill" for st in s.steps))
    stopped = _groups(scenarios, lambda s: any(st.action == "stop" for st in s.steps))
    stalled = _groups(scenarios, lambda s: any(m.stall_for for m in s.members))
    storms = "; ".join(
        f"starts a new member of {s.group} every {s.flap_every:g} s, each leaving after {s.flap_stay:g} s "
        "(a rebalance storm)"
        for s in scenarios
        if any(st.action == "flap" for st in s.steps)
    )
    periods = sorted({s.period for s in scenarios if s.period})
    looped = _groups(scenarios, lambda s: s.period)
    every = " and ".join(f"{p:g}" for p in periods)
    return (
        "The workload creates the topics (partitions) groupscope.heartbeats (3; the heartbeat_topic "
        f"setting), {topics}, and never deletes them"
        + (f" (Kafka Streams also creates {internal})" if internal else "")
        + "; runs a producer writing into the groups' input topics, and the groups (members) "
        f"{groups}; each classic or KIP-848 member is a consumer process whose probe writes to the "
        f"heartbeat topic. Every {every} s {looped} start over: it SIGKILLs a member of {killed}, stops "
        f"(SIGTERM) and restarts members of {stopped}, makes a member of {stalled} stop polling until it "
        f"is expelled, and {storms}."
    )


def _say(msg: str) -> None:
    click.echo(f"groupscope demo: {msg}", err=True)


def _create_topics(bootstrap: str, kafka_conf: dict[str, Any], topics: list[tuple[str, int]]) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({**kafka_conf, "bootstrap.servers": bootstrap})
    # replication factor -1: the broker's default (a managed service refuses 1, and where
    # min.insync.replicas >= 2 a topic of one replica takes no writes), as topic_check.py does
    futures = admin.create_topics([NewTopic(t, n, -1) for t, n in topics], request_timeout=15)
    for topic, f in futures.items():
        try:
            f.result(20)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise click.ClickException(f"cannot create topic {topic}: {e.args[0].str()}") from e


def _ensure_offsets_topic(bootstrap: str, kafka_conf: dict[str, Any], timeout: float = 30.0) -> bool:
    """Have the cluster create `__consumer_offsets` if it has none yet; True once it is listed.

    Kafka creates it on the first group request, but the collector decides at start whether it can
    read it, so a fresh broker must have it first. Describing a group that does not exist is such a
    request (FindCoordinator) and writes nothing."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**kafka_conf, "bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # COORDINATOR_NOT_AVAILABLE while it is being created
            topic = admin.list_topics(timeout=5).topics.get("__consumer_offsets")
            if topic is not None and topic.error is None and topic.partitions:
                return True
            for f in admin.describe_consumer_groups(["groupscope-demo"], request_timeout=5).values():
                f.exception(10)
        time.sleep(0.5)
    return False


def _port_free(host: str, port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _wait_for_dashboard(host: str, port: int, stop: threading.Event, timeout: float) -> bool:
    """True once the dashboard's port accepts connections; False after `timeout` or on Ctrl-C."""
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stop.is_set():
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return True
        stop.wait(0.5)
    return False


def _display_available() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or sys.platform == "darwin"


@click.command()
@bootstrap_option
@redis_option
@click.option("--duration", type=float, default=None, help="Stop everything after SECONDS (default: Ctrl-C).")
@click.option("--port", type=int, default=None, help="Dashboard port (default: dashboard_port if free).")
@click.option("--no-browser", is_flag=True, help="Do not try to open the dashboard in a browser.")
@click.option(
    "--clusters",
    "n_clusters",
    type=click.IntRange(1, len(DEMO_CLUSTERS)),
    default=1,
    show_default=True,
    help="Run this many local brokers, each its own cluster (east, west, ...) with its own workload "
    "and collector; the dashboard shows them all. (Against --bootstrap-servers: 1.)",
)
@click.option(
    "--logs-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the children's logs go (default: a new temporary directory).",
)
@click.option(
    CHAOS_FLAG,
    "chaos",
    is_flag=True,
    help="Run the demo's workload on the --bootstrap-servers cluster (without it the demo refuses). "
    + chaos_summary(),
)
@click.option(
    "--watch",
    is_flag=True,
    help="With --bootstrap-servers: no workload, only the collector, the alert worker and the dashboard "
    "watching that cluster, as `groupscope collect` does (no demo topic, no group, no member killed).",
)
def demo(
    bootstrap_servers: str | None,
    redis_url: str | None,
    duration: float | None,
    port: int | None,
    no_browser: bool,
    n_clusters: int,
    logs_dir: str | None,
    chaos: bool,
    watch: bool,
) -> None:
    """Run a live demo: broker, scenario workload, collector, alert worker and dashboard.

    The workload runs on a local broker the demo starts. --bootstrap-servers points the demo at
    your cluster instead, and then needs --watch (collector, alert worker and dashboard only,
    nothing written but groupscope's own topics) or --chaos-on-my-cluster (the workload there:
    topics created, groups run, members killed, a rebalance storm). --redis uses that Redis instead
    of starting one.
    """
    from collectors.demo.scenarios import Workload
    from collectors.demo.servers.kafka import JarsError, KafkaBroker
    from collectors.demo.servers.processes import RedisServer, ServerError, free_port
    from collectors.demo.supervisor import DEMO_ID_ENV, Supervisor

    settings = settings_from(bootstrap_servers=bootstrap_servers, redis_url=redis_url)
    # the dashboard child would refuse this bind (dashboard/serve.py): say so before starting anything
    why = dashboard_bind_error(settings)
    if why:
        raise click.UsageError(why)
    if duration is not None and duration <= 0:
        raise click.UsageError("--duration must be positive")
    if n_clusters > 1 and bootstrap_servers is not None:
        raise click.UsageError("--clusters starts local brokers; it cannot be used with --bootstrap-servers")
    if watch and chaos:
        raise click.UsageError(f"--watch runs no workload and {CHAOS_FLAG} runs it: choose one")
    if watch and bootstrap_servers is None:
        raise click.UsageError("--watch watches your cluster: name it with --bootstrap-servers HOST:PORT")
    if bootstrap_servers is not None and not (chaos or watch):
        # Before anything starts: the workload is never aimed at someone's cluster by default.
        raise click.UsageError(
            f"--bootstrap-servers {bootstrap_servers} is your cluster, not the demo's own broker, and the "
            f"demo's workload is chaos. {chaos_summary()} To run it there anyway, add {CHAOS_FLAG}. To "
            f"watch {bootstrap_servers} read-only instead, add --watch: the collector, the alert worker "
            "and the dashboard only, as `groupscope collect` runs them (they write nothing but "
            "groupscope's own groupscope.* topics: no demo topic, no group, no member killed)."
        )
    run_dir = Path(logs_dir) if logs_dir else Path(tempfile.mkdtemp(prefix="groupscope-demo-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    # Every process we start (and theirs) inherits this mark; the supervisor finds leftovers by it.
    demo_id = os.environ.get(DEMO_ID_ENV) or uuid.uuid4().hex
    os.environ[DEMO_ID_ENV] = demo_id

    stop = threading.Event()

    def _on_signal(signum: int, _frame: Any) -> None:
        if not stop.is_set():
            _say(f"{signal.Signals(signum).name}: stopping everything")
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)

    redis_srv: RedisServer | None = None
    brokers: list[KafkaBroker] = []
    supervisor = Supervisor(run_dir, demo_id, say=_say)
    workloads: list[Workload] = []
    names = list(DEMO_CLUSTERS[:n_clusters]) if n_clusters > 1 else ["default"]
    try:
        if redis_url is None:
            redis_srv = RedisServer().start()
            settings.redis_url = redis_srv.url
            _say(f"started redis-server on {redis_srv.url}")
        # cluster name -> (bootstrap servers, coordinator log files to ship)
        clusters: dict[str, tuple[str, list[str]]] = {}
        for name in names:
            log_files = list(settings.broker_log_files)
            if bootstrap_servers is None:
                # Its folder is in the run's logs, so coordinator.log and server.log stay for a look
                # after the demo; the data goes when it stops (below). A folder left by an earlier run
                # in the same --logs-dir goes first: its log would be shipped again, its data refused.
                kafka_dir = run_dir / ("kafka" if name == "default" else f"kafka-{name}")
                shutil.rmtree(kafka_dir, ignore_errors=True)
                kafka_dir.mkdir(parents=True)
                broker = KafkaBroker(workdir=kafka_dir)
                brokers.append(broker)
                what = "" if name == "default" else f" for cluster {name}"
                _say(f"starting Apache Kafka {broker.version} (KRaft){what} ...")
                broker.start()
                log_files.append(str(broker.coordinator_log))
                _say(f"started Apache Kafka {broker.version} on {broker.bootstrap_servers}{what}")
                clusters[name] = (broker.bootstrap_servers, log_files)
            else:
                clusters[name] = (bootstrap_servers, log_files)
            if stop.is_set():
                return

        if watch:
            _say(
                f"watching {bootstrap_servers} read-only (--watch): collector, alert worker and "
                "dashboard only; no demo topic, no group, no member killed"
            )
        elif bootstrap_servers is not None:
            _say(f"{CHAOS_FLAG}: running the demo's workload on {bootstrap_servers}")
        for name, (bootstrap, _logs) in ({} if watch else clusters).items():  # --watch: no workload
            label = "" if name == "default" else f"{name}-"
            workload = Workload(
                supervisor, bootstrap, settings.heartbeat_topic, label=label, kafka_conf=settings.kafka
            )
            workloads.append(workload)
            _create_topics(bootstrap, settings.kafka, [(settings.heartbeat_topic, 3), *workload.topics()])
            if not _ensure_offsets_topic(bootstrap, settings.kafka):
                _say(f"{bootstrap}: no __consumer_offsets; the collector will run on the other sources")
            _say(f"topics ready: {settings.heartbeat_topic}, " + ", ".join(t for t, _ in workload.topics()))

        host = settings.dashboard_host
        dash_port = port or (
            settings.dashboard_port if _port_free(host, settings.dashboard_port) else free_port()
        )
        env = {
            "GROUPSCOPE_REDIS_URL": settings.redis_url,
            "GROUPSCOPE_HEARTBEAT_TOPIC": settings.heartbeat_topic,
            # A fresh checkpoint per demo: an old one would point at offsets of a broker long gone.
            "GROUPSCOPE_CHECKPOINT_DIR": str(run_dir / "checkpoints"),
            "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        }
        for name, (bootstrap, log_files) in clusters.items():
            # The coordinator's own account of each rebalance (reason, expiry, KIP-848 epochs).
            if name == "default":
                env["GROUPSCOPE_BOOTSTRAP_SERVERS"] = bootstrap
                env["GROUPSCOPE_BROKER_LOG_FILES"] = json.dumps(log_files)
            else:
                env[f"GROUPSCOPE_CLUSTERS__{name.upper()}__BOOTSTRAP_SERVERS"] = bootstrap
                env[f"GROUPSCOPE_CLUSTERS__{name.upper()}__BROKER_LOG_FILES"] = json.dumps(log_files)
        cli = [sys.executable, "-m", "collectors.cli.main"]
        redis_arg = ["--redis", settings.redis_url]
        if names == ["default"]:
            bootstrap = clusters["default"][0]
            argv = [*cli, "collect", "--bootstrap-servers", bootstrap, *redis_arg, "--no-progress"]
        else:
            # one Spark application, a query per cluster: the driver's ~2 GB paid once
            argv = [*cli, "collect", "--all-clusters", *redis_arg]
        supervisor.spawn("collector", argv, service=True, env=env)
        supervisor.spawn("alerts-worker", [*cli, "worker", *redis_arg], service=True, env=env)
        supervisor.spawn(
            "dashboard", [*cli, "dashboard", *redis_arg, "--host", host, "--port", str(dash_port)],
            service=True, env=env,
        )  # fmt: skip
        supervisor.start_watching()
        for workload in workloads:
            workload.start()
        for sc in workloads[0].scenarios if workloads else ():
            where = "" if names == ["default"] else f" (on each of {', '.join(names)})"
            _say(f"scenario {sc.group}: {sc.what}{where}")

        url = f"http://{host}:{dash_port}/"
        if not _wait_for_dashboard(host, dash_port, stop, timeout=60.0):
            _say(f"the dashboard does not answer on {url} yet (see {run_dir / 'dashboard.log'})")
        click.echo(f"groupscope demo: dashboard on {url}  (logs in {run_dir}; Ctrl-C stops everything)")
        if not no_browser and _display_available():
            import webbrowser

            with contextlib.suppress(Exception):
                webbrowser.open(url)
        stop.wait(duration)
        if not stop.is_set():
            _say(f"--duration {duration:g} s reached: stopping everything")
    except (ServerError, JarsError) as e:
        raise click.ClickException(str(e)) from e
    finally:
        stop.set()
        started = time.monotonic()
        for workload in workloads:
            workload.stop.set()
        supervisor.stop_all()
        for srv in (*brokers, redis_srv):
            if srv is not None:
                srv.stop()
        for broker in brokers:
            shutil.rmtree(broker.data_dir, ignore_errors=True)
        supervisor.sweep()
        _say(f"stopped every process it started in {time.monotonic() - started:.1f} s")
