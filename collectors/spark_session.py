"""One place that builds the SparkSession, configured the way the pipeline needs it
(RocksDB state store for per-group state, a larger thread stack, loopback when local)."""

from __future__ import annotations

import os
import re
import shutil
import sys

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def check_java() -> None:
    """PySpark needs a JVM: say so plainly instead of failing deep inside py4j."""
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise RuntimeError(
            "Java 17 is required by Spark but 'java' is not on PATH (Debian: openjdk-17-jre-headless)"
        )


def build_spark(master: str = "local[*]", app_name: str = "groupscope", **conf: str):
    """Create (or return the running) SparkSession for the collectors."""
    check_java()
    if master.startswith("local"):
        # Keep Spark's driver and block manager on loopback: no network is needed on one machine.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers must use this interpreter (the venv with pyarrow/pandas), not python3 on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Arrow's buffers from the C library's allocator, not its own jemalloc pool: jemalloc keeps what a
    # worker freed, so after a catch-up's batch each model worker stayed at its high-water mark
    # (430-550 MB); with the system allocator and heap_trim they gave it back (230-320 MB), the
    # collector's peak went from 4.0 to 3.6 GB, and the catch-up took no longer. The workers inherit
    # the variable in local mode; spark.executorEnv (below) carries it to a cluster's executors.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        # a micro-batch commits each state partition's changes, not a snapshot of it (snapshots are
        # made in the background): with 10,000 idle groups a live micro-batch's state commits went
        # from about 1.8 to 1.2 s of task time and commit -> Redis from a median of 2.5 to 1.8 s
        # (docs/running-on-a-cluster.md); a checkpoint written either way reads either way
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        # stop() mid-batch can overflow the default stack; see docs/spark-notes
        .config("spark.driver.extraJavaOptions", "-Xss16m")
        .config("spark.executor.extraJavaOptions", "-Xss16m")
        .config(
            "spark.sql.shuffle.partitions", conf.pop("spark.sql.shuffle.partitions", state_partitions(master))
        )
        .config("spark.ui.enabled", conf.pop("spark.ui.enabled", "false"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        .config("spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL", os.environ["ARROW_DEFAULT_MEMORY_POOL"])
    )
    for k, v in {**conf, **user_conf()}.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


def state_partitions(master: str) -> str:
    """The default number of state partitions (`spark.sql.shuffle.partitions`) for a new checkpoint
    (a checkpoint keeps the number it was started with). Every micro-batch loads and commits each
    partition's state store whether or not it has rows: on one machine, one a core. On 2 cores, 8
    partitions made an idle micro-batch of 10,000 groups of 100 partitions 2.5-3 s, 2 made it
    1.3-2.2 s, and the catch-up of their million commits took as long either way (docs/running-on-a-
    cluster.md). On a cluster, 8 unless set (about 2-3 x the executor cores for large fleets)."""
    m = re.fullmatch(r"local(?:-cluster)?\[(\*|\d+)(?:,\s*\d+)*\]", master.strip())
    if master.strip() == "local":
        return "2"
    if m is None:
        return "8"
    cores = (os.cpu_count() or 2) if m.group(1) == "*" else int(m.group(1))
    return str(max(2, min(cores, 32)))


def user_conf(env: dict[str, str] | None = None) -> dict[str, str]:
    """Spark settings from GROUPSCOPE_SPARK_CONF ("key=value,key=value"), over groupscope's own
    defaults above (which a spark-submit --conf would not override: the builder sets them after)."""
    raw = (env if env is not None else os.environ).get("GROUPSCOPE_SPARK_CONF", "")
    out: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in raw.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"GROUPSCOPE_SPARK_CONF: {item!r} is not key=value")
        out[key.strip()] = value.strip()
    return out
