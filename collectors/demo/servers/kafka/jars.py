"""The embedded broker's jars: Apache Kafka from Maven Central, in a cache outside the repository.

`ensure_jars()` runs `mvn dependency:copy-dependencies` on this folder's pom.xml once per Kafka
version into ``~/.cache/groupscope/kafka-VERSION/`` and marks the folder complete; later calls only
check the mark. A file lock makes concurrent first calls (pytest workers, a demo and a test) wait for
one download instead of racing into the same folder.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

DEFAULT_KAFKA_VERSION = "4.3.1"  # newest 4.x whose kafka_2.13 and kafka-tools both resolve
POM = Path(__file__).with_name("pom.xml")
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


def ensure_jars(version: str | None = None) -> Path:
    version = version or kafka_version()
    target = jars_dir(version)
    if (target / _DONE).exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsError("Maven is needed once to fetch Kafka's jars: install Debian's 'maven' (make does)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".kafka-{version}.lock", "w") as lock:
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
            str(POM),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={target}",
            *(f"-D{k}={v}" for k, v in props.items()),
        ]
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0 or not any(target.glob(f"kafka_2.13-{version}.jar")):
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            raise JarsError(f"mvn could not fetch Apache Kafka {version}'s jars:\n{tail}")
        (target / _DONE).write_text(version + "\n")
    return target


def classpath(version: str | None = None) -> str:
    return str(ensure_jars(version) / "*")


def main() -> None:
    """Fetch the jars and print their folder (`python -m collectors.demo.servers.kafka`)."""
    print(ensure_jars())


if __name__ == "__main__":
    main()
