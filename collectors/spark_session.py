"""One place that builds the SparkSession, configured the way the pipeline needs it
(RocksDB state store for per-group state, a larger thread stack, loopback when local), and started
as fast as it can be (benchmarks/collector_start.py measures each part of the start)."""

from __future__ import annotations

import atexit
import contextlib
import glob
import hashlib
import os
import re
import shutil
import struct
import sys
import time

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
DRIVER_JAVA_OPTIONS = "-Xss16m"  # stop() mid-batch can overflow the default stack; see docs/spark-notes
DAEMON_MODULE = "collectors.spark_daemon"
# where the driver's class-data-sharing archives are kept ("off": none); a setting of build_spark's
# own (GROUPSCOPE_SPARK_CONF=spark.groupscope.cds.dir=...), not given to Spark
CDS_DIR_CONF = "spark.groupscope.cds.dir"
CDS_MAGIC = struct.pack("<I", 0xF00BABA8)  # a JDK 17/21 dynamic CDS archive's first bytes, written last
CDS_KEEP = 3  # archives kept (about 150 MB each): this Spark and Java's, and a couple of others
CDS_TRIES = 3  # starts that may ask their JVM to write the archive, until one has
CDS_STALE_S = 600.0  # an unfinished archive older than this was never finished (its JVM was killed)


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
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    user = user_conf()
    cds_dir = cds_directory({**conf, **user})
    conf.pop(CDS_DIR_CONF, None)
    user.pop(CDS_DIR_CONF, None)
    java_options = conf.pop("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
    archive = None
    # the class-data-sharing archive (below), for a JVM this call launches, unless the driver's JVM
    # options are the user's own (which then have the last word)
    if SparkContext._active_spark_context is None and "spark.driver.extraJavaOptions" not in user:
        class_path = user.get("spark.driver.extraClassPath", conf.get("spark.driver.extraClassPath", ""))
        cds, archive = _cds_options(cds_dir, class_path)
        java_options = f"{java_options} {cds}".strip()
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        # a micro-batch commits each state partition's changes, not a snapshot of it (snapshots are
        # made in the background): with 10,000 idle groups a live micro-batch's state commits went
        # from about 1.8 to 1.2 s of task time and commit -> Redis from a median of 2.5 to 1.8 s
        # (docs/running-on-a-cluster.md); a checkpoint written either way reads either way
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.executor.extraJavaOptions", DRIVER_JAVA_OPTIONS)
        .config(
            "spark.sql.shuffle.partitions", conf.pop("spark.sql.shuffle.partitions", state_partitions(master))
        )
        .config("spark.ui.enabled", conf.pop("spark.ui.enabled", "false"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        # Python workers forked from a daemon that has imported pyarrow, pandas and the pipeline's
        # modules already (collectors/spark_daemon.py): at start the collector's process tree used
        # about 130 MB less memory (PSS 1.36 against 1.49 GB; its RSS sum grows, each worker counting
        # the pages it shares) and reached its first micro-batch as soon (benchmarks/collector_start.py)
        .config("spark.python.daemon.module", DAEMON_MODULE)
        .config("spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL", os.environ["ARROW_DEFAULT_MEMORY_POOL"])
    )
    for k, v in {**conf, **user}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    if archive is not None:
        _finish_archive_at_exit(spark)
    return spark


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


# ---- the driver JVM's class-data-sharing (AppCDS) archive ---------------------------------------------
# The driver JVM loads some 12,700 classes at start (Spark's, Scala's, Hadoop's ...), parsing and
# verifying each. A dynamic CDS archive of them (JDK 13+: -XX:ArchiveClassesAtExit on one run,
# -XX:SharedArchiveFile on the next ones) maps them ready-made. On this 2-core machine (median of 3
# alternating runs, benchmarks/collector_start.py) the SparkSession took 3.0 s instead of 5.1, the
# source registration, schema and query start 2.4 s instead of 3.5 (their classes come from it too),
# the first micro-batch ended 14.4 s after the process started instead of 19.4 (with the daemon
# module below), and the start used 21 CPU-seconds instead of 29. The mapped archive adds some 40 MB
# to the JVM's resident memory (file pages, shared by the JVMs of one machine).
# The first start of a Spark and Java pair writes the archive (145-175 MB; some 10 s of one core)
# when its JVM exits; later starts map it. The JVM checks an archive against its own build and class
# path and uses none of what does not match (at most a warning); a missing archive it ignores. Only
# a truncated one (valid header, short body) crashes it (SIGBUS), so an archive is used only after
# its JVM finished writing it (its header, which the JVM writes last, is there) and at the size it
# was then (kept in its name).


def cds_directory(conf: dict[str, str]) -> str | None:
    """Where the archives are kept (CDS_DIR_CONF, else ~/.cache/groupscope/cds); None: off."""
    raw = conf.get(CDS_DIR_CONF)
    if raw is not None and raw.strip().lower() in ("", "off", "0", "false", "no"):
        return None
    return os.path.expanduser(raw.strip() if raw else os.path.join("~", ".cache", "groupscope", "cds"))


def _java_home() -> str | None:
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else None
    java = java if java and os.path.exists(java) else shutil.which("java")
    return os.path.dirname(os.path.dirname(os.path.realpath(java))) if java else None


def cds_key(extra_class_path: str = "") -> str | None:
    """The archive's name: Spark's version, the Java version and a digest of what the archive must
    match (the JVM's build, Spark's jars, the driver's extra class path), so that a new Spark, Java or
    jar makes a new archive instead of one the JVM would refuse at every start."""
    home = _java_home()
    if home is None:
        return None
    import pyspark
    from pyspark.find_spark_home import _find_spark_home

    digest = hashlib.sha256()
    java_version = "unknown"
    with contextlib.suppress(OSError):
        with open(os.path.join(home, "release"), encoding="utf-8") as f:
            release = f.read()
        digest.update(release.encode())
        if m := re.search(r'^JAVA_VERSION="([^"]+)"', release, re.M):
            java_version = m.group(1)
    for path in [
        os.path.join(home, "lib", "modules"),
        *sorted(glob.glob(os.path.join(_find_spark_home(), "jars", "*"))),
    ]:
        with contextlib.suppress(OSError):
            st = os.stat(path)
            digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    digest.update(extra_class_path.encode())
    safe = re.sub(r"[^0-9A-Za-z.-]+", "_", f"spark-{pyspark.__version__}-java-{java_version}")
    return f"{safe}-{digest.hexdigest()[:12]}"


def _complete_archive(path: str) -> bool:
    with contextlib.suppress(OSError), open(path, "rb") as f:
        return f.read(len(CDS_MAGIC)) == CDS_MAGIC
    return False


def _size_in_name(path: str) -> int:
    size = path[: -len(".jsa")].rsplit(".", 1)[-1]
    return int(size) if size.isdigit() else -1


def _usable_archive(directory: str, key: str) -> str | None:
    """A finished archive of `key` at the size it was written (KEY.SIZE.jsa), if there is one."""
    # the largest: written by the JVM that had loaded the most classes
    for path in sorted(glob.glob(os.path.join(directory, f"{key}.*.jsa")), key=_size_in_name, reverse=True):
        size = path[: -len(".jsa")].rsplit(".", 1)[-1]
        with contextlib.suppress(OSError):
            if size.isdigit() and os.stat(path).st_size == int(size) and _complete_archive(path):
                return path
    return None


def _prune(directory: str, keep: int = CDS_KEEP) -> None:
    """Remove all but the `keep` newest archives (those of an older Spark or Java). A JVM that maps
    one keeps its pages: the file goes when the last of them exits."""
    archives = sorted(glob.glob(os.path.join(directory, "*.jsa")), key=os.path.getmtime, reverse=True)
    for path in archives[keep:]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def cds_java_options(directory: str, key: str) -> tuple[str, str | None]:
    """(JVM options, archive this JVM writes at exit or None): map the finished archive of `key`;
    else move one a JVM finished writing into place and map that; else, unless another JVM is
    writing one now, write it at exit (to a file of this process's own, KEY.PID.tmp) -- at most
    CDS_TRIES times: a JVM killed at every stop (a supervisor's short stop timeout) never finishes
    one, and should not pay for the attempt at every start."""
    os.makedirs(directory, exist_ok=True)
    if not os.access(directory, os.W_OK):
        return "", None
    found = _usable_archive(directory, key)
    writing = False
    tries_path = os.path.join(directory, f"{key}.tries")
    if found is None:
        for tmp in glob.glob(os.path.join(directory, f"{key}.*.tmp")):
            with contextlib.suppress(OSError):
                if _complete_archive(tmp):
                    size = os.stat(tmp).st_size
                    os.replace(tmp, os.path.join(directory, f"{key}.{size}.jsa"))
                    _prune(directory)
                    os.unlink(tries_path)
                elif time.time() - os.stat(tmp).st_mtime > CDS_STALE_S:
                    os.unlink(tmp)  # its JVM was killed while it wrote it
                else:
                    writing = True  # a JVM writes it now (or was killed a moment ago): not twice
        found = _usable_archive(directory, key)
    if found is not None:
        return f"-XX:SharedArchiveFile={found}", None
    tries = 0
    with contextlib.suppress(OSError, ValueError), open(tries_path) as f:
        tries = int(f.read().strip() or 0)
    if writing or tries >= CDS_TRIES:
        return "", None
    with open(tries_path, "w") as f:
        f.write(str(tries + 1))
    tmp = os.path.join(directory, f"{key}.{os.getpid()}.tmp")
    # -Xlog: the archiving JVM otherwise prints a warning per class it leaves out (those of signed
    # jars, some thousands) on stdout
    return f"-XX:ArchiveClassesAtExit={tmp} -Xlog:cds=off -Xlog:cds+dynamic=off", tmp


def _cds_options(directory: str | None, extra_class_path: str) -> tuple[str, str | None]:
    """cds_java_options for this machine, or no options when there is no place or no Java for it
    (never an error: the archive only makes the start faster)."""
    try:
        key = cds_key(extra_class_path) if directory else None
        return cds_java_options(directory, key) if directory and key else ("", None)
    except Exception:
        return "", None


def _finish_archive_at_exit(spark: object, timeout_s: float = 120.0) -> None:
    """The JVM writes its archive when it exits, which it does when this process's end closes the
    pipe to it; a supervisor that ends the whole process group when this process ends (systemd,
    a container's init) would kill it while it writes. So at exit, close the pipe here and wait for
    the JVM (writing takes some 10 s of one core, once per Spark and Java pair)."""
    proc = getattr(getattr(getattr(spark, "sparkContext", None), "_gateway", None), "proc", None)
    if proc is None:
        return

    def finish() -> None:
        with contextlib.suppress(Exception):
            if proc.poll() is None:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout_s)

    atexit.register(finish)
