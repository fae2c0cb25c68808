"""The embedded broker's jars: Apache Kafka from Maven Central, in a cache outside the repository.

`ensure_jars()` runs `mvn dependency:copy-dependencies` on this folder's pom.xml once per Kafka
version into ``~/.cache/groupscope/kafka-VERSION/`` and marks the folder complete; later calls only
check the mark. A file lock makes concurrent first calls (pytest workers, a demo and a test) wait for
one download instead of racing into the same folder.

`ensure_streams_jars()` does the same with streams-pom.xml (org.apache.kafka:kafka-streams of the
same version, for the Kafka Streams test application in collectors/demo/streams_app) into
``~/.cache/groupscope/kafka-streams-VERSION/``: a folder of its own, so that a broker folder already
marked complete is never fetched again (or emptied under a running broker) for it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

DEFAULT_KAFKA_VERSION = "4.3.1"  # newest 4.x whose kafka_2.13 and kafka-tools both resolve
POM = Path(__file__).with_name("pom.xml")
STREAMS_POM = Path(__file__).with_name("streams-pom.xml")
_DONE = ".complete"


class JarsError(RuntimeError):
    """Kafka's jars could not be had; the message says why and what to install."""


def kafka_version() -> str:
    return os.environ.get("GROUPSCOPE_KAFKA_VERSION", "").strip() or DEFAULT_KAFKA_VERSION


def major(version: str) -> int:
    return int(version.split(".", 1)[0])


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groupscope"


def jars_dir(version: str | None = None) -> Path:
    return cache_root() / f"kafka-{version or kafka_version()}"


def _log_binding(version: str) -> dict[str, str]:
    """The slf4j binding Kafka's binary distribution ships with that version."""
    if major(version) >= 4:
        return {}  # the pom's defaults: log4j2 (log4j-slf4j-impl)
    return {
        "logbinding.groupId": "org.slf4j",
        "logbinding.artifactId": "slf4j-reload4j",
        "logbinding.version": "1.7.36",
    }


def streams_jars_dir(version: str | None = None) -> Path:
    return cache_root() / f"kafka-streams-{version or kafka_version()}"


def ensure_jars(version: str | None = None) -> Path:
    """The broker's jars (kafka_2.13, kafka-tools and their dependencies), fetched once."""
    version = version or kafka_version()
    return _fetch(
        POM, jars_dir(version), version, f"kafka_2.13-{version}.jar", f"Apache Kafka {version}'s jars"
    )


def ensure_streams_jars(version: str | None = None) -> Path:
    """kafka-streams and its dependencies (kafka-clients, RocksDB), fetched once: a Streams
    application's classpath, apart from the broker's."""
    version = version or kafka_version()
    what = f"Apache Kafka Streams {version}'s jars"
    return _fetch(STREAMS_POM, streams_jars_dir(version), version, f"kafka-streams-{version}.jar", what)


def _fetch(pom: Path, target: Path, version: str, must_have: str, what: str) -> Path:
    """`mvn dependency:copy-dependencies` of `pom` into `target` unless it is marked complete; under a
    lock per folder, so concurrent first calls wait for one download."""
    if (target / _DONE).exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsError(f"Maven is needed once to fetch {what}: install Debian's 'maven' (make does)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _DONE).exists():  # another process fetched them while we waited
            return target
        shutil.rmtree(target, ignore_errors=True)
        props = {"kafka.version": version, **_log_binding(version)}
        argv = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={target}",
            *(f"-D{k}={v}" for k, v in props.items()),
        ]
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0 or not any(target.glob(must_have)):
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            raise JarsError(f"mvn could not fetch {what}:\n{tail}")
        (target / _DONE).write_text(version + "\n")
    return target


def classpath(version: str | None = None) -> str:
    return str(ensure_jars(version) / "*")


def streams_classpath(version: str | None = None) -> str:
    return str(ensure_streams_jars(version) / "*")


def main() -> None:
    """Fetch the broker's and Kafka Streams' jars and print their folders, one a line
    (`python -m collectors.demo.servers.kafka`: make test, demo and bench), so that no test downloads."""
    print(ensure_jars())
    print(ensure_streams_jars())


if __name__ == "__main__":
    main()
