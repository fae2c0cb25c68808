"""Spark's Python daemon with the pipeline's modules imported once, before it forks any worker.

Spark forks the Python workers of tasks (mapInArrow, applyInPandasWithState, foreachPartition, the
Python data source's reads) from a daemon, `python -m <spark.python.daemon.module> pyspark.worker`.
pyspark's own daemon imports next to nothing before it forks, so each of the collector's workers
(seven on 2 cores) imported pyarrow, pandas, numpy and groupscope's pipeline modules itself, each
into memory of its own. Forked from this daemon, a worker starts with them imported, in pages it
shares with the daemon: at start the collector's process tree used about 130 MB less memory (PSS
1.36 against 1.49 GB), and reached its first micro-batch as soon (benchmarks/collector_start.py).
(The Python data source's planning workers, lookup/create/plan, run under pyspark.daemon whatever
this setting says.)

build_spark sets `spark.python.daemon.module` to this module. On a cluster the executors run it as
well: it needs groupscope installed in the executors' Python (PYSPARK_PYTHON), as their tasks do
anyway. A module that fails to import is skipped: the worker imports what it needs itself.

pyspark's daemon imports modules after fork() because a thread started before it does not exist in
the child. Of the modules below, pyarrow's import starts jemalloc's background thread and numpy's
OpenBLAS its thread pool; both libraries take care of fork() (their atfork handlers), and the
workers allocate Arrow buffers with the system allocator anyway (ARROW_DEFAULT_MEMORY_POOL,
spark_session.py). tests/test_spark_start.py runs Arrow, pandas and numpy work in forked children.
"""

from __future__ import annotations

import gc
import importlib
import sys

# What the pipeline's Python workers import: pyspark's worker, Arrow and pandas for mapInArrow and
# applyInPandasWithState, and the modules of its UDFs and data sources (job.py).
PRELOAD = (
    "numpy",
    "pyarrow",
    "pandas",
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.pandas.types",
    "confluent_kafka",
    "redis",
    "collectors.pipeline.route",
    "collectors.pipeline.model_state",
    "collectors.pipeline.kafka_source",
    "collectors.pipeline.capture_source",
    "collectors.pipeline.sink",
)


def preload(modules: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import `modules`; the names of those that failed to import."""
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # an optional module missing here: the worker imports what it needs
            failed.append(name)
    return failed


def main() -> None:
    failed = preload()
    if failed:
        print(f"groupscope spark_daemon: not preloaded: {', '.join(failed)}", file=sys.stderr)
    from pyspark import daemon

    # The imported objects to the permanent generation: pyspark's daemon runs gc.collect() in a
    # worker after every task, and a collection writes to every object it tracks, which would copy
    # the pages a forked worker shares with this daemon.
    gc.freeze()

    daemon.manager()


if __name__ == "__main__":
    main()
