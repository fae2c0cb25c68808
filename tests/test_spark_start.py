"""The collector's start-up cuts in collectors/spark_session.py, checked in real SparkSessions (each in a
process of its own, as a collector's is):

- the Python daemon is groupscope's (collectors/spark_daemon.py), and a worker it forks has pyarrow,
  pandas and the pipeline's modules imported before its task imports anything;
- the driver JVM's class-data-sharing archive: a first start without one starts and asks its JVM
  for one at exit, the next start moves a finished one into place and maps it, and a stale archive
  (made for another class path) is refused by the JVM, which starts without it;
- the archive bookkeeping (which file is used, written, moved into place or removed) without a JVM.

The timings themselves are benchmarks/collector_start.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from collectors import spark_session
from collectors.spark_session import CDS_DIR_CONF, CDS_MAGIC, cds_directory, cds_java_options

ROOT = Path(__file__).resolve().parent.parent

# One SparkSession through build_spark, as the collector makes it; what its JVM maps and what a
# Python worker finds imported before the task's own code runs (a plain RDD task, which imports
# none of the pipeline's modules itself).
PROBE = r"""
import json, os, signal, sys
from collectors.spark_session import build_spark

spark = build_spark("local[1]", "groupscope-start-test", **{"spark.sql.shuffle.partitions": "1"})
sc = spark.sparkContext
jvm_pid = sc._gateway.proc.pid
archives = {}  # archive -> bytes of it the JVM maps
with open(f"/proc/{jvm_pid}/maps") as f:
    for line in f:
        if line.rstrip().endswith(".jsa"):
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            archives[line.split()[-1]] = archives.get(line.split()[-1], 0) + end - start
with open(f"/proc/{jvm_pid}/cmdline", "rb") as f:
    argv = f.read().split(b"\0")
class_path = argv[argv.index(b"-cp") + 1].decode()

def probe(_):
    import os, sys
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    names = ["pyarrow", "pandas", "collectors.pipeline.model_state", "collectors.pipeline.route",
             "collectors.pipeline.kafka_source"]
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        parent = f.read().replace(b"\0", b" ").decode()
    yield json.dumps({"main": getattr(spec, "name", None), "parent": parent,
                      "imported": [n for n in names if n in sys.modules]})

worker = json.loads(sc.parallelize([0], 1).mapPartitions(probe).collect()[0])
print("RESULT " + json.dumps({
    "archives": archives,
    "daemon_module": sc.getConf().get("spark.python.daemon.module"),
    "java_options": sc.getConf().get("spark.driver.extraJavaOptions"),
    "class_path": class_path,
    "worker": worker,
}), flush=True)
if sys.argv[1:] == ["kill"]:
    os.kill(jvm_pid, signal.SIGKILL)  # no archive written at exit: minutes on a loaded machine
else:
    spark.stop()
"""


def run_probe(cds_dir: Path, *args: str, timeout: float = 180) -> tuple[dict, str]:
    env = dict(os.environ, GROUPSCOPE_SPARK_CONF=f"{CDS_DIR_CONF}={cds_dir}", SPARK_LOCAL_IP="127.0.0.1")
    p = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    line = next(x for x in p.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line[len("RESULT ") :])
    # the JVM's own base archive is always mapped; the archives of interest are in `cds_dir`
    result["archives"] = {a: n for a, n in result["archives"].items() if a.startswith(str(cds_dir))}
    return result, out


def make_archive(path: Path, class_path: str) -> int:
    """A small, complete dynamic archive for `class_path` (a JVM that loads little), in a second
    rather than the minutes a SparkSession's 12,700 classes take on a loaded machine."""
    subprocess.run(
        ["java", f"-XX:ArchiveClassesAtExit={path}", "-cp", class_path, "-version"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert path.read_bytes()[:4] == CDS_MAGIC
    return path.stat().st_size


@pytest.mark.slow
def test_daemon_preloads_and_archive_is_asked_for_then_mapped(tmp_path: Path) -> None:
    cds = tmp_path / "cds"
    # a first start: no archive; it starts, and asks its JVM to write one at exit (killed here)
    first, _ = run_probe(cds, "kill")
    assert first["archives"] == {}
    key = spark_session.cds_key()
    tmp = cds / f"{key}.{first['java_options'].split(f'{key}.')[1].split('.tmp')[0]}.tmp"
    assert f"-XX:ArchiveClassesAtExit={tmp} " in first["java_options"]
    assert "-Xss16m " in first["java_options"]

    # the daemon Spark used is groupscope's, and its worker had the heavy modules imported
    w = first["worker"]
    assert first["daemon_module"] == "collectors.spark_daemon"
    assert w["main"] == "collectors.spark_daemon", w
    assert "-m collectors.spark_daemon pyspark.worker" in w["parent"], w
    assert w["imported"] == [
        "pyarrow",
        "pandas",
        "collectors.pipeline.model_state",
        "collectors.pipeline.route",
        "collectors.pipeline.kafka_source",
    ]

    # an archive finished for that class path: the next start moves it into place and maps it
    size = make_archive(tmp, first["class_path"])
    second, _ = run_probe(cds)
    final = cds / f"{key}.{size}.jsa"
    assert sorted(p.name for p in cds.iterdir()) == [final.name]
    assert f"-XX:SharedArchiveFile={final}" in second["java_options"]
    assert list(second["archives"]) == [str(final)]
    assert second["archives"][str(final)] >= size // 2  # its regions mapped, not just looked at


@pytest.mark.slow
def test_stale_archive_still_starts(tmp_path: Path) -> None:
    """An archive the JVM refuses (made for another class path, as after a Spark upgrade under the
    same name) is not used, and never costs the start."""
    cds = tmp_path / "cds"
    cds.mkdir()
    key = spark_session.cds_key()
    assert key is not None
    jar = tmp_path / "other.jar"  # a class path Spark's does not start with
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    other = tmp_path / "other.jsa"
    size = make_archive(other, str(jar))
    stale = cds / f"{key}.{size}.jsa"
    other.rename(stale)
    result, _ = run_probe(cds)
    # the JVM was given it, refused what does not match (it logs why at its info level), and ran
    assert f"-XX:SharedArchiveFile={stale}" in result["java_options"]
    assert result["worker"]["imported"], "the session did not run its job"


# ---- the bookkeeping, without a JVM --------------------------------------------------------------------
KEY = "spark-4.3.0-java-17.0.15-0123456789ab"


def _archive(path: Path, size: int = 4096, complete: bool = True) -> Path:
    head = CDS_MAGIC if complete else b"\0\0\0\0"
    path.write_bytes(head + b"x" * (size - len(head)))
    return path


def test_no_archive_writes_one_of_its_own(tmp_path: Path) -> None:
    opts, tmp = cds_java_options(str(tmp_path), KEY)
    assert tmp == str(tmp_path / f"{KEY}.{os.getpid()}.tmp")
    assert opts.startswith(f"-XX:ArchiveClassesAtExit={tmp} ")


def test_finished_archive_is_moved_into_place_and_used(tmp_path: Path) -> None:
    _archive(tmp_path / f"{KEY}.12345.tmp", 5000)
    opts, tmp = cds_java_options(str(tmp_path), KEY)
    final = tmp_path / f"{KEY}.5000.jsa"
    assert (opts, tmp) == (f"-XX:SharedArchiveFile={final}", None)
    assert [p.name for p in tmp_path.iterdir()] == [final.name]


def test_truncated_archive_is_never_mapped(tmp_path: Path) -> None:
    """A valid header over a short body crashes the JVM (SIGBUS): the size in its name must match."""
    _archive(tmp_path / f"{KEY}.9999.jsa", 4096)
    opts, tmp = cds_java_options(str(tmp_path), KEY)
    assert "SharedArchiveFile" not in opts and tmp is not None


def test_archive_being_written_is_left_alone(tmp_path: Path) -> None:
    """A JVM writing one now (header not there yet): no second writer, no archive for this start."""
    writing = _archive(tmp_path / f"{KEY}.777.tmp", complete=False)
    assert cds_java_options(str(tmp_path), KEY) == ("", None)
    assert writing.exists()
    old = writing.stat().st_mtime - spark_session.CDS_STALE_S - 1
    os.utime(writing, (old, old))  # its JVM was killed long ago: removed, and written anew
    opts, tmp = cds_java_options(str(tmp_path), KEY)
    assert not writing.exists() and tmp is not None and "ArchiveClassesAtExit" in opts


def test_archive_directory_setting() -> None:
    assert cds_directory({CDS_DIR_CONF: "off"}) is None
    assert cds_directory({CDS_DIR_CONF: ""}) is None
    assert cds_directory({CDS_DIR_CONF: "/x/cds"}) == "/x/cds"
    assert cds_directory({}) == os.path.expanduser("~/.cache/groupscope/cds")


def test_unwritable_directory_means_no_archive(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    tmp_path.chmod(0o500)
    try:
        assert cds_java_options(str(tmp_path), KEY) == ("", None)
    finally:
        tmp_path.chmod(0o700)


def test_archive_is_asked_for_a_few_times_only(tmp_path: Path) -> None:
    """A JVM killed at every stop never finishes its archive: after CDS_TRIES starts, no more asking."""
    for _ in range(spark_session.CDS_TRIES):
        assert cds_java_options(str(tmp_path), KEY)[1] is not None
    assert cds_java_options(str(tmp_path), KEY) == ("", None)
    _archive(tmp_path / f"{KEY}.1.tmp", 4096)  # one finished after all: used, and the count gone
    assert cds_java_options(str(tmp_path), KEY)[0].startswith("-XX:SharedArchiveFile=")
    assert not (tmp_path / f"{KEY}.tries").exists()


def test_forked_children_of_a_preloaded_daemon_work() -> None:
    """The daemon imports pyarrow (jemalloc's background thread) and numpy (OpenBLAS's threads)
    before it forks: children forked from it do Arrow, pandas and numpy work as usual."""
    code = r"""
import os
from collectors import spark_daemon
assert spark_daemon.preload() == []
import numpy as np, pandas as pd, pyarrow as pa
bad = 0
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        a = np.random.rand(200, 200)
        t = pa.table({"x": np.arange(100_000) % 7, "y": np.random.rand(100_000)})
        g = t.group_by("x").aggregate([("y", "sum")])
        s = t.to_pandas().groupby("x").y.sum()
        os._exit(0 if (a @ a).shape == (200, 200) and len(g) == 7 and len(s) == 7 else 3)
    bad += os.waitpid(pid, 0)[1] != 0
print("failed", bad)
"""
    env = dict(os.environ, ARROW_DEFAULT_MEMORY_POOL="system")
    p = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0 and "failed 0" in p.stdout, p.stdout + p.stderr
