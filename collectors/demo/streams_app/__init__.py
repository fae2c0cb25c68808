"""A real Kafka Streams application (KIP-1071 streams groups) for the tests and the demo, run as its own
JVM: GroupscopeStreamsApp.java beside this file, a word count with a repartition topic and a state
store (changelog), compiled with javac at first use.

- Jars: org.apache.kafka:kafka-streams of the broker's version, fetched once by
  `collectors.demo.servers.kafka.jars.ensure_streams_jars` (make test/demo/bench run it) into
  ``~/.cache/groupscope/kafka-streams-VERSION/``.
- Classes: compiled once per Kafka version and source into
  ``~/.cache/groupscope/streams-app-VERSION-HASH/`` (HASH: of the .java file), under a file lock so
  concurrent first uses compile once; a changed source gets a folder of its own.
- Process: `StreamsApp(...).start()` runs `java -cp CLASSES:JARS/* GroupscopeStreamsApp ...`, reads
  the JSON lines it prints (state changes, its tasks) and keeps them in `events`; `wait_running()`
  waits for the RUNNING state, `close()` asks it to close (it leaves the group), `kill()` SIGKILLs it
  (the crash case: the member stays until its session expires). `start()` again restarts it on the
  same state directory, as a restarted instance of a real application does.
- Security: `client_config` holds the Java client's security properties (`security.java_client_properties`
  maps groupscope's librdkafka settings onto them: SASL, TLS, client certificates). They may hold
  secrets, so they never go on the command line: each start writes them to a file of mode 0600 in a
  private folder and passes its path (`--config-file`); the file is removed as soon as the JVM has
  read it (its first line out), or when it ends. `config` (`--config key=value`) takes no secret.

    app = StreamsApp(broker.bootstrap_servers, "wordcount", "lines", "counts", "wc-1", tmp / "wc-1")
    app.start().wait_running(60)
    ...
    app.close()

`set_group_config` sets a group's dynamic configs (streams.session.timeout.ms, ...), and
`kafka_streams_groups_tool` runs Kafka's own kafka-streams-groups.sh (StreamsGroupCommand, from the
broker's jars) and returns what it prints, so a test can compare against Kafka's view of the group.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from collectors.demo.servers.kafka.broker import java_binary
from collectors.demo.servers.kafka.jars import cache_root, classpath, kafka_version, streams_classpath
from collectors.demo.streams_app.security import PrivateProperties, write_private_properties
from collectors.process_death import die_with_parent

SOURCE = Path(__file__).with_name("GroupscopeStreamsApp.java")
MAIN_CLASS = "GroupscopeStreamsApp"
STORE = "word-counts"  # the state store: its changelog is APP-word-counts-changelog
REPARTITION = "words"  # the groupBy's repartition topic: APP-words-repartition
_DONE = ".complete"
# Java client settings that hold a secret, or name where one is: `client_config`'s, never `config`'s
SECRET_SETTINGS = (
    "sasl.jaas.config",
    "password",  # ssl.key.password, ssl.keystore.password, ssl.truststore.password, sasl.*.password
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
)


class StreamsAppError(RuntimeError):
    """The Streams application could not be built or did not do what was waited for."""


def changelog_topic(app_id: str) -> str:
    return f"{app_id}-{STORE}-changelog"


def repartition_topic(app_id: str) -> str:
    return f"{app_id}-{REPARTITION}-repartition"


# -- build ---------------------------------------------------------------------------------------
def javac_binary() -> str:
    """javac of the JDK whose java runs the application (its sibling), else JAVA_HOME's, else PATH's:
    a JRE alone (Debian's openjdk-17-jre-headless) has none."""
    java = Path(os.path.realpath(java_binary()))
    candidates = [java.with_name("javac")]
    if home := os.environ.get("JAVA_HOME"):
        candidates.append(Path(home) / "bin" / "javac")
    if found := shutil.which("javac"):
        candidates.append(Path(found))
    for path in candidates:
        if os.access(path, os.X_OK):
            return str(path)
    raise StreamsAppError(
        "javac is needed once to build the Kafka Streams test application: install openjdk-17-jdk-headless"
    )


def source_hash() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]


def classes_dir(version: str | None = None) -> Path:
    return cache_root() / f"streams-app-{version or kafka_version()}-{source_hash()}"


def ensure_compiled(version: str | None = None) -> Path:
    """The compiled application for this Kafka version and source: built once, reused after."""
    version = version or kafka_version()
    target = classes_dir(version)
    if (target / _DONE).exists():
        return target
    jars = streams_classpath(version)  # outside the lock: it takes its own
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _DONE).exists():  # another process compiled it while we waited
            return target
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        # --release 17: the classes run on the Java 17 the project asks for, whichever JDK compiles.
        argv = [javac_binary(), "--release", "17", "-encoding", "UTF-8", "-cp", jars, "-d", str(target)]
        proc = subprocess.run([*argv, str(SOURCE)], capture_output=True, text=True)
        if proc.returncode != 0 or not (target / f"{MAIN_CLASS}.class").exists():
            raise StreamsAppError(
                f"javac could not build {SOURCE.name}:\n{(proc.stdout + proc.stderr)[-3000:]}"
            )
        (target / _DONE).write_text(f"{version} {source_hash()}\n")
    return target


# -- the process ---------------------------------------------------------------------------------
@dataclass
class StreamsApp:
    """One instance (one KafkaStreams client, one stream thread) of the word-count application; its
    group id is `app_id`. `workdir` holds its state directory (kept across restarts), its log
    (streams.log), its stderr and the events it printed (events.jsonl)."""

    bootstrap: str
    app_id: str
    input_topic: str
    output_topic: str
    client_id: str
    workdir: Path
    group_protocol: str = "streams"  # "classic" runs the same topology on the classic protocol
    commit_interval_ms: int = 500
    config: dict[str, str] = field(default_factory=dict)  # further StreamsConfig settings (no secret)
    # the Java client's security settings (security.java_client_properties), given in a private file
    client_config: dict[str, str] = field(default_factory=dict, repr=False)
    version: str = field(default_factory=kafka_version)
    heap: str = "256m"
    proc: subprocess.Popen | None = field(default=None, repr=False)
    # The JSON events of the current run, in order (a restart starts a new list).
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _reader: threading.Thread | None = field(default=None, repr=False)
    # the current run's private properties file, until the JVM has read it
    _secrets: PrivateProperties | None = field(default=None, repr=False)

    @property
    def state_dir(self) -> Path:
        return self.workdir / "state"

    @property
    def log_path(self) -> Path:
        return self.workdir / "streams.log"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / "stderr.log"

    @property
    def events_path(self) -> Path:
        return self.workdir / "events.jsonl"

    def app_args(self, config_file: Path | None = None) -> list[str]:
        """The application's own arguments (GroupscopeStreamsApp's command line), with the path of
        the private file holding `client_config` when there is one."""
        for key in self.config:
            if any(secret in key for secret in SECRET_SETTINGS):
                # a command line is readable by every user of the machine (ps, /proc/PID/cmdline)
                raise StreamsAppError(f"{key} goes in client_config (a private file), not on a command line")
        args = [
            "--bootstrap-servers",
            self.bootstrap,
            "--application-id",
            self.app_id,
            "--input-topic",
            self.input_topic,
            "--output-topic",
            self.output_topic,
            "--client-id",
            self.client_id,
            "--state-dir",
            str(self.state_dir),
            "--group-protocol",
            self.group_protocol,
            "--commit-interval-ms",
            str(self.commit_interval_ms),
        ]
        if config_file is not None:
            args += ["--config-file", str(config_file)]
        for key, value in self.config.items():
            args += ["--config", f"{key}={value}"]
        return args

    def argv(
        self, classes: Path, java: str = "java", jars: str = "JARS/*", config_file: Path | None = None
    ) -> list[str]:
        """The whole command line, given where the classes and jars are (no build, no fetch here)."""
        return [
            java,
            "-Xms64m",
            f"-Xmx{self.heap}",
            # A small client JVM beside the broker on a 2-core machine: one GC thread, quick start.
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp",
            f"{classes}{os.pathsep}{jars}",
            MAIN_CLASS,
            *self.app_args(config_file),
        ]

    def _write_log_config(self) -> None:
        # log4j2's properties format needs no YAML/JSON library on the client's classpath.
        (self.workdir / "log4j2.properties").write_text(
            "status = warn\n"
            "appender.file.type = File\n"
            "appender.file.name = file\n"
            f"appender.file.fileName = {self.log_path}\n"
            "appender.file.append = true\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p [%t] %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.file.ref = file\n"
        )

    def start(self) -> StreamsApp:
        if self.running:
            raise StreamsAppError(f"{self.client_id} is already running (pid {self.proc.pid})")  # type: ignore[union-attr]
        classes = ensure_compiled(self.version)
        jars = streams_classpath(self.version)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state_dir.mkdir(exist_ok=True)
        self._write_log_config()
        with self._cond:
            self.events = []
        self._remove_secrets()  # a file an earlier run left (it never printed a line)
        if self.client_config:
            self._secrets = write_private_properties(self.client_config)
        config_file = self._secrets.path if self._secrets else None
        stderr = open(self.stderr_path, "ab")  # noqa: SIM115 - the child keeps it open
        try:
            self.proc = subprocess.Popen(
                self.argv(classes, java_binary(), jars, config_file),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=self.workdir,
                # its own session: a Ctrl-C in a terminal reaches us, and we stop it in order
                start_new_session=True,
                preexec_fn=die_with_parent,  # SIGTERM (a clean close) when its starter dies
            )
        except BaseException:
            self._remove_secrets()
            raise
        finally:
            stderr.close()
        self._reader = threading.Thread(
            target=self._read,
            args=(self.proc.stdout, self._secrets),
            name=f"streams-app-{self.client_id}",
            daemon=True,
        )
        self._reader.start()
        return self

    def _read(self, stdout: IO[bytes], secrets: PrivateProperties | None) -> None:
        with open(self.events_path, "ab") as copy:
            for raw in stdout:
                if secrets is not None:
                    # the JVM reads its properties file before it prints anything: the file can go
                    with contextlib.suppress(OSError):
                        secrets.remove()
                    secrets = None
                copy.write(raw)
                copy.flush()
                try:
                    event = json.loads(raw)
                except ValueError:
                    event = {"event": "output", "text": raw.decode(errors="replace").rstrip()}
                with self._cond:
                    self.events.append(event)
                    self._cond.notify_all()
        with self._cond:  # end of output: the process is gone, waiters must look
            self._cond.notify_all()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def state(self) -> str | None:
        """The last KafkaStreams state it reported in this run."""
        with self._cond:
            states = [e["state"] for e in self.events if e.get("event") == "state"]
        return states[-1] if states else None

    @property
    def tasks(self) -> dict[str, Any] | None:
        """Its last reported assignment: {"active": [task ids], "standby": [...], "partitions": {...}}."""
        with self._cond:
            found = [e for e in self.events if e.get("event") == "tasks"]
        return found[-1] if found else None

    def wait_for(self, accept: Callable[[dict[str, Any]], bool], timeout: float, what: str) -> dict[str, Any]:
        """The first event of this run `accept` takes, waiting up to `timeout` seconds for it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events:
                    if accept(event):
                        return event
                if event := next((e for e in self.events if e.get("event") == "error"), None):
                    raise StreamsAppError(f"{self.client_id}: {event}\n{self.diagnostics()}")
                exited = self.proc is None or self.proc.poll() is not None
                left = deadline - time.monotonic()
                if exited and not (self._reader and self._reader.is_alive()):
                    code = None if self.proc is None else self.proc.returncode
                    raise StreamsAppError(
                        f"{self.client_id} exited ({code}) before {what}\n{self.diagnostics()}"
                    )
                if left <= 0:
                    raise StreamsAppError(
                        f"{self.client_id}: no {what} within {timeout:.0f} s\n{self.diagnostics()}"
                    )
                self._cond.wait(min(left, 0.5))

    def wait_running(self, timeout: float = 60.0) -> StreamsApp:
        """Until KafkaStreams reports RUNNING (it has joined the group and got its tasks)."""
        self.wait_for(lambda e: e.get("event") == "state" and e.get("state") == "RUNNING", timeout, "RUNNING")
        return self

    def close(self, timeout: float = 30.0) -> int | None:
        """A clean shutdown: "close" on its stdin (KafkaStreams.close, leaving the group), then SIGTERM,
        then SIGKILL if it will not go. Returns its exit status (None when it never ran)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"close\n")
                self.proc.stdin.flush()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGKILL)
                    self.proc.wait(10)
        self._finish()
        return self.proc.returncode

    def terminate(self, timeout: float = 30.0) -> int | None:
        """SIGTERM: the application's shutdown hook closes KafkaStreams (and leaves the group)."""
        if self.proc is None:
            return None
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.proc.wait(10)
        self._finish()
        return self.proc.returncode

    def kill(self) -> int | None:
        """SIGKILL, the crash: no close, no leave; the broker keeps the member until its session
        times out."""
        if self.proc is None:
            return None
        self._signal(signal.SIGKILL)
        self.proc.wait(10)
        self._finish()
        return self.proc.returncode

    def _signal(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def _remove_secrets(self) -> None:
        secrets, self._secrets = self._secrets, None
        if secrets is not None:
            with contextlib.suppress(OSError):
                secrets.remove()

    def _finish(self) -> None:
        self._remove_secrets()
        if self._reader is not None:
            self._reader.join(5)
        if self.proc is not None and self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def diagnostics(self, n: int = 15) -> str:
        """The tails of its stderr and its log, for an error message."""
        out = []
        for path in (self.stderr_path, self.log_path):
            with contextlib.suppress(OSError):
                lines = path.read_text(errors="replace").splitlines()
                picked = (
                    [x for x in lines if " ERROR " in x or " WARN " in x] if path == self.log_path else lines
                )
                out.append(f"-- {path.name}:\n" + "\n".join(picked[-n:]))
        return "\n".join(out)

    def __enter__(self) -> StreamsApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the group, as the broker and Kafka's tools see it --------------------------------------------
def set_group_config(bootstrap: str, group: str, settings: dict[str, str], timeout: float = 30.0) -> None:
    """A group's dynamic configs (IncrementalAlterConfigs on the GROUP resource), e.g.
    {"streams.session.timeout.ms": "6000"}; the broker checks them against its group.streams.min/max
    settings. Set before the group exists, they apply from its first member."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in settings.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource], request_timeout=timeout).values():
        future.result(timeout)


def kafka_streams_groups_tool(
    bootstrap: str, *args: str, version: str | None = None, timeout: float = 60.0
) -> str:
    """What Kafka's kafka-streams-groups.sh (org.apache.kafka.tools.streams.StreamsGroupCommand, in
    the broker's kafka-tools jar) prints for `args`, e.g. ("--describe", "--group", G, "--members")."""
    proc = subprocess.run(
        [
            java_binary(),
            "-XX:TieredStopAtLevel=1",
            "-cp",
            classpath(version),
            "org.apache.kafka.tools.streams.StreamsGroupCommand",
            "--bootstrap-server",
            bootstrap,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise StreamsAppError(f"StreamsGroupCommand {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout
