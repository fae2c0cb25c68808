"""`groupscope collect --all-clusters`: one collector process per configured cluster, watched.

Why processes and not one Spark application reading every cluster: a Spark streaming query fails as a
whole when one of its sources fails, so one unreachable cluster would stop every cluster's view; and a
query's checkpoint holds all its sources' offsets, so one cluster could not be reset or moved alone.
One `groupscope collect --cluster NAME` per cluster (its own Spark application, checkpoint and
Admin poller) keeps each cluster's failures and state its own, and each can run where it suits (one
per Spark cluster, or side by side). The cost is one driver and JVM per cluster
(docs/running-on-a-cluster.md, "Several clusters", has the figures).

This supervisor restarts a collector that exits (a cluster down at start, a broker that refused the
login) after a back-off growing from 5 s to 2 min, and stops them all on SIGINT/SIGTERM.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import click

from collectors.config import Settings

MIN_BACKOFF_S = 5.0
MAX_BACKOFF_S = 120.0


@dataclass
class ClusterProcess:
    cluster: str
    argv: list[str]
    proc: subprocess.Popen | None = None
    started: float = 0.0
    restarts: int = 0
    backoff_s: float = MIN_BACKOFF_S
    next_start: float = field(default_factory=time.monotonic)


def collector_argv(cluster: str) -> list[str]:
    return [sys.executable, "-m", "collectors.cli.main", "collect", "--cluster", cluster, "--no-progress"]


def run_all_clusters(settings: Settings, *, duration_s: float | None = None) -> int:
    """Run a collector per configured cluster until Ctrl-C, SIGTERM or `duration_s`; exit status 0."""
    names = settings.cluster_names()
    stop = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    procs = [ClusterProcess(n, collector_argv(n)) for n in names]
    click.echo(f"groupscope: one collector per cluster: {', '.join(names)}", err=True)
    deadline = None if duration_s is None else time.monotonic() + duration_s
    try:
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            for p in procs:
                _tend(p)
            stop.wait(0.5)
    finally:
        _stop_all(procs)
    return 0


def _tend(p: ClusterProcess) -> None:
    now = time.monotonic()
    if p.proc is not None and p.proc.poll() is not None:
        code = p.proc.returncode
        # a collector that ran a while had a working cluster: start the back-off afresh
        if now - p.started > 10 * MAX_BACKOFF_S:
            p.backoff_s = MIN_BACKOFF_S
        click.echo(
            f"groupscope: collector of cluster {p.cluster} exited with status {code}; "
            f"restarting in {p.backoff_s:.0f} s",
            err=True,
        )
        p.proc = None
        p.next_start = now + p.backoff_s
        p.backoff_s = min(MAX_BACKOFF_S, p.backoff_s * 2)
        p.restarts += 1
    if p.proc is None and now >= p.next_start:
        # its own session, so a signal to one collector's process group (Spark's JVM with it) never
        # reaches the others
        p.proc = subprocess.Popen(p.argv, start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        p.started = now


def _stop_all(procs: list[ClusterProcess], grace_s: float = 20.0) -> None:
    live = [p.proc for p in procs if p.proc is not None and p.proc.poll() is None]
    for proc in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
    end = time.monotonic() + grace_s
    for proc in live:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.1, end - time.monotonic()))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
