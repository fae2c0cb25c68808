"""`groupscope collect --all-clusters`: every configured cluster from one Spark application.

Each cluster gets its own streaming query (its own checkpoint, `collect@NAME`), its own Admin poller
and sink, exactly the pipeline `groupscope collect --cluster NAME` runs; only the SparkSession (the
driver's JVM and the Python workers, ~2 GB on this machine whatever the fleet) is shared. Why
queries and not one query reading every cluster: a streaming query fails as a whole when one of its
sources fails, and its checkpoint holds all its sources' offsets; separate queries keep one
cluster's failures and offsets its own. Why one application and not one per cluster: the fixed
cost is paid once (docs/running-on-a-cluster.md, "Several clusters", has the figures). The
scheduler runs in FAIR mode with a pool per cluster, so a cluster's long catch-up batch does not
hold another cluster's live batches behind it.

A query that fails (Redis gone for longer than the sink's retries, a checkpoint it cannot write), or
a cluster that does not answer when its query is to start, is tried again after a back-off growing
from 5 s to 2 min (the cluster's `kafka` source status says why meanwhile); a cluster whose brokers
go down while its query runs does not fail it (the Kafka source and the Admin poller retry and say
so in the cluster's source statuses).

One process per cluster (`--cluster NAME` each) remains the choice where clusters must not share a
JVM, or should run on different Spark clusters.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from collectors.config import Settings

log = logging.getLogger("groupscope.collect")

MIN_BACKOFF_S = 5.0
MAX_BACKOFF_S = 120.0


@dataclass
class ClusterQuery:
    """One cluster's pipeline in a thread of the shared application, restarted when it fails."""

    cluster: str
    run: Any  # () -> None: runs the cluster's pipeline until `stop` is set; raises when it fails
    stop: threading.Event
    restarts: int = 0
    backoff_s: float = MIN_BACKOFF_S
    last_error: str | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> None:
        self.thread = threading.Thread(target=self._loop, name=f"collect-{self.cluster}", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                self.run()
                return  # stopped
            except Exception as e:  # this cluster's failure; the others go on
                self.last_error = str(e)
            if self.stop.is_set():
                return
            if time.monotonic() - started > 10 * MAX_BACKOFF_S:
                self.backoff_s = MIN_BACKOFF_S  # it ran a good while: start the back-off afresh
            log.warning(
                "cluster %s: %s; starting its pipeline again in %.0f s",
                self.cluster,
                self.last_error,
                self.backoff_s,
            )
            self.restarts += 1
            if self.stop.wait(self.backoff_s):
                return
            self.backoff_s = min(MAX_BACKOFF_S, self.backoff_s * 2)


def fair_pools_file(names: list[str]) -> str:
    """A FAIR scheduler allocation file with one equal pool per cluster (Spark warns about, and
    creates with defaults, a pool it was not told of)."""
    import tempfile

    pools = "".join(
        f'  <pool name="{n}"><schedulingMode>FIFO</schedulingMode><weight>1</weight>'
        "<minShare>0</minShare></pool>\n"
        for n in names
    )
    fd, path = tempfile.mkstemp(prefix="groupscope-pools-", suffix=".xml")
    with os.fdopen(fd, "w") as f:
        f.write(f'<?xml version="1.0"?>\n<allocations>\n{pools}</allocations>\n')
    return path


def run_all_clusters(settings: Settings, *, duration_s: float | None = None) -> int:
    """Run every configured cluster's pipeline in one Spark application until Ctrl-C, SIGTERM or
    `duration_s`; exit status 0."""
    from collectors.pipeline.job import live_config, run_pipeline
    from collectors.spark_session import build_spark

    names = settings.cluster_names()
    cfgs = {}
    for n in names:
        s = settings.for_cluster(n)
        if not s.bootstrap_servers:
            raise SystemExit(f"groupscope: cluster {n} has no bootstrap_servers")
        cfgs[n] = live_config(s)
        # a cluster down at start is retried (ClusterQuery's back-off) until it answers, so its
        # query starts with its offsets topic, not on the Admin API alone until the next restart
        cfgs[n].wait_for_cluster = True
    stop = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_spark(
        settings.spark_master,
        "groupscope-live-all-clusters",
        **{
            "spark.ui.showConsoleProgress": "false",
            "spark.scheduler.mode": "FAIR",
            "spark.scheduler.allocation.file": fair_pools_file(names),
        },
    )

    def runner(name: str) -> Any:
        def run() -> None:
            # the query's jobs go to the cluster's own FAIR pool (the stream's thread inherits it)
            spark.sparkContext.setLocalProperty("spark.scheduler.pool", name)
            run_pipeline(cfgs[name], spark, progress=False, stop_event=stop)

        return run

    queries = [ClusterQuery(n, runner(n), stop) for n in names]
    print(f"groupscope: one application, a query per cluster: {', '.join(names)}", file=sys.stderr)
    for q in queries:
        q.start()
    try:
        stop.wait(duration_s)
    finally:
        stop.set()
        for q in queries:
            if q.thread is not None:
                q.thread.join(60)
        spark.stop()
    return 0
