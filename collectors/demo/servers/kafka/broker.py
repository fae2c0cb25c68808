"""A single-node Apache Kafka broker in KRaft mode (broker and controller in one JVM) on free loopback
ports: the broker under the tests, `groupscope demo` and the benchmarks.

Its jars come from Maven Central (jars.py). It is configured the way a small real cluster is, with
the few changes a test bench needs: one replica for the internal topics, no initial rebalance delay,
minimum session timeouts lowered (so a live scenario's expiry takes seconds, not 45 s), and the
group coordinator's INFO log in its own file, `coordinator.log`, which the collector's broker-log
source can read and the tests take as the judge of what the coordinator did.

Listeners: PLAINTEXT always (the inter-broker listener); SASL_PLAINTEXT with SCRAM users and SSL with
PEM files when asked for (`sasl_users`, `tls`), and SASL_SSL (the SCRAM users over TLS, what managed
clusters ask for) when both are. With `authorizer`, Kafka's StandardAuthorizer (KRaft)
enforces ACLs: nothing is allowed without one, except to the super users (the PLAINTEXT and SSL
listeners' anonymous principal, which the broker itself and the tests' own setup use, and `admin`).
Whoever starts the broker stops it: SIGTERM, then SIGKILL (`_Proc.stop`).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from collectors.demo.servers.kafka.jars import classpath, kafka_version, major
from collectors.demo.servers.processes import ServerError, _Proc, free_port, wait_for_port

COORDINATOR_LOGGERS = ("org.apache.kafka.coordinator.group", "kafka.coordinator.group")
# "Finished loading of metadata from __consumer_offsets-7 ..." (4.x); 3.x: "Finished loading offsets
# and group metadata from __consumer_offsets-7 ...".
_LOADED = re.compile(r"Finished loading .*?__consumer_offsets-(\d+)")


CLIENT_CN = "groupscope-client"  # the test client certificate's subject (tls.make_test_tls)


@dataclass(frozen=True)
class TlsFiles:
    """PEM files for the SSL listeners: the broker's key and certificate chain, and the CA clients trust;
    and a client's certificate and key for the listener that asks for one (MTLS), when made."""

    key_pem: Path  # unencrypted PKCS#8 private key
    cert_pem: Path  # the broker's certificate, then the chain up to the CA
    ca_pem: Path
    client_cert_pem: Path | None = None
    client_key_pem: Path | None = None  # unencrypted
    client_key_encrypted_pem: Path | None = None  # PKCS#8 encrypted with client_password
    client_p12: Path | None = None  # PKCS#12 keystore: key, certificate, CA; client_password
    client_password: str | None = None


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    found = shutil.which("java")
    if not found:
        raise ServerError("Java 17 is needed to run Kafka: install openjdk-17-jre-headless (make test does)")
    return found


@dataclass
class KafkaBroker(_Proc):
    version: str = field(default_factory=kafka_version)
    controller_port: int = 0
    sasl_port: int = 0
    ssl_port: int = 0
    mtls_port: int = 0  # an SSL listener that requires a client certificate (tls with client files)
    sasl_ssl_port: int = 0  # SASL_SSL: the SCRAM users over TLS (sasl_users and tls both set)
    # SCRAM-SHA-256 and SCRAM-SHA-512 credentials, created at format time; a SASL listener when set.
    sasl_users: dict[str, str] = field(default_factory=dict)
    tls: TlsFiles | None = None
    # StandardAuthorizer with deny-by-default; super users: User:ANONYMOUS (PLAINTEXT, SSL) and these
    authorizer: bool = False
    super_users: tuple[str, ...] = ("admin",)
    # Any further broker settings (they win over the defaults below).
    config: dict[str, str] = field(default_factory=dict)
    heap: str = "1g"  # beside Spark's driver on a 2-core, 24 GB machine
    cluster_id: str = field(default_factory=lambda: _new_cluster_id())

    # -- paths -----------------------------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "data"

    @property
    def coordinator_log(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "coordinator.log"

    @property
    def server_log(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "server.log"

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str:
        return f"{self.host}:{self.sasl_port}"

    @property
    def ssl_bootstrap_servers(self) -> str:
        return f"{self.host}:{self.ssl_port}"

    @property
    def mtls_bootstrap_servers(self) -> str:
        return f"{self.host}:{self.mtls_port}"

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        return f"{self.host}:{self.sasl_ssl_port}"

    @property
    def mtls(self) -> bool:
        return self.tls is not None and self.tls.client_cert_pem is not None

    # -- configuration ---------------------------------------------------------------------------
    def properties(self) -> dict[str, str]:
        h = self.host
        listeners = {"PLAINTEXT": self.port, "CONTROLLER": self.controller_port}
        protocols = {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"}
        props: dict[str, str] = {}
        if self.sasl_users:
            listeners["SASL"] = self.sasl_port
            protocols["SASL"] = "SASL_PLAINTEXT"
            props["sasl.enabled.mechanisms"] = "SCRAM-SHA-256,SCRAM-SHA-512"
            for mech in ("scram-sha-256", "scram-sha-512"):
                props[f"listener.name.sasl.{mech}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
        if self.tls is not None:
            listeners["SSL"] = self.ssl_port
            protocols["SSL"] = "SSL"
            props |= {
                "listener.name.ssl.ssl.keystore.type": "PEM",
                "listener.name.ssl.ssl.keystore.certificate.chain": self.tls.cert_pem.read_text(),
                "listener.name.ssl.ssl.keystore.key": self.tls.key_pem.read_text(),
                "listener.name.ssl.ssl.truststore.type": "PEM",
                "listener.name.ssl.ssl.truststore.certificates": self.tls.ca_pem.read_text(),
                "listener.name.ssl.ssl.client.auth": "none",
            }
        if self.sasl_users and self.tls is not None:
            listeners["SASLSSL"] = self.sasl_ssl_port
            protocols["SASLSSL"] = "SASL_SSL"
            for mech in ("scram-sha-256", "scram-sha-512"):
                props[f"listener.name.saslssl.{mech}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
            props |= {
                "listener.name.saslssl.ssl.keystore.type": "PEM",
                "listener.name.saslssl.ssl.keystore.certificate.chain": self.tls.cert_pem.read_text(),
                "listener.name.saslssl.ssl.keystore.key": self.tls.key_pem.read_text(),
                "listener.name.saslssl.ssl.client.auth": "none",
            }
        if self.mtls:
            assert self.tls is not None
            listeners["MTLS"] = self.mtls_port
            protocols["MTLS"] = "SSL"
            props |= {
                "listener.name.mtls.ssl.keystore.type": "PEM",
                "listener.name.mtls.ssl.keystore.certificate.chain": self.tls.cert_pem.read_text(),
                "listener.name.mtls.ssl.keystore.key": self.tls.key_pem.read_text(),
                "listener.name.mtls.ssl.truststore.type": "PEM",
                "listener.name.mtls.ssl.truststore.certificates": self.tls.ca_pem.read_text(),
                "listener.name.mtls.ssl.client.auth": "required",
            }
        if self.authorizer:
            props |= {
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                # the client certificate's principal is its subject (Kafka's default mapping)
                "super.users": ";".join(
                    ["User:ANONYMOUS", f"User:CN={CLIENT_CN}", *(f"User:{u}" for u in self.super_users)]
                ),
                "allow.everyone.if.no.acl.found": "false",
            }
        advertised = {k: v for k, v in listeners.items() if k != "CONTROLLER"}
        props |= {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{h}:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listeners": ",".join(f"{k}://{h}:{p}" for k, p in listeners.items()),
            "advertised.listeners": ",".join(f"{k}://{h}:{p}" for k, p in advertised.items()),
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocols.items()),
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # Lowered minimums: live scenarios expire members in seconds (classic and KIP-848).
            "group.min.session.timeout.ms": "1000",
            "group.consumer.min.session.timeout.ms": "1000",
            "group.consumer.min.heartbeat.interval.ms": "500",
            "log.flush.interval.messages": str(2**63 - 1),
        }
        v = tuple(int(x) for x in self.version.split(".")[:2])
        if v < (4, 2):  # from 4.2 the protocols follow the feature versions; the setting is deprecated
            share = ",share" if v >= (4, 1) else ""
            props["group.coordinator.rebalance.protocols"] = "classic,consumer" + share
        if v >= (4, 1):
            props |= {
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1",
                "group.share.min.session.timeout.ms": "1000",
                "group.share.min.heartbeat.interval.ms": "500",
            }
        if v >= (4, 2):
            # KIP-1071 streams groups (production-ready in 4.2, on by default: no protocol or feature
            # setting is needed). Only the minimums are lowered, as for the other group types, so that a
            # group's `streams.session.timeout.ms` (a group config; the client cannot set it) may be
            # seconds: the broker's 45 s floor would keep a killed Streams instance in its group that long.
            props |= {
                "group.streams.min.session.timeout.ms": "1000",
                "group.streams.min.heartbeat.interval.ms": "500",
            }
        props |= self.config
        return props

    def _log_config(self) -> tuple[str, Path]:
        """The logging configuration: root at INFO in server.log, the group coordinator in its own file."""
        assert self.workdir is not None
        if major(self.version) >= 4:
            path = self.workdir / "log4j2.yaml"
            loggers = "".join(
                f"      - name: {name}\n        level: INFO\n        additivity: false\n"
                f"        AppenderRef: [{{ref: coordinator}}]\n"
                for name in COORDINATOR_LOGGERS
            )
            path.write_text(
                "Configuration:\n  Appenders:\n    File:\n"
                f"      - name: server\n        fileName: {self.server_log}\n"
                '        PatternLayout: {pattern: "[%d] %p %m (%c)%n"}\n'
                f"      - name: coordinator\n        fileName: {self.coordinator_log}\n"
                '        PatternLayout: {pattern: "[%d] %p %m (%c)%n"}\n'
                "  Loggers:\n    Root:\n      level: INFO\n      AppenderRef: [{ref: server}]\n"
                f"    Logger:\n{loggers}"
                "      - name: kafka.request.logger\n        level: WARN\n"
            )
            return f"-Dlog4j2.configurationFile={path}", path
        path = self.workdir / "log4j.properties"  # 3.x: reload4j
        lines = [
            "log4j.rootLogger=INFO, server",
            "log4j.appender.server=org.apache.log4j.FileAppender",
            f"log4j.appender.server.File={self.server_log}",
            "log4j.appender.server.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.server.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "log4j.appender.coordinator=org.apache.log4j.FileAppender",
            f"log4j.appender.coordinator.File={self.coordinator_log}",
            "log4j.appender.coordinator.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.coordinator.layout.ConversionPattern=[%d] %p %m (%c)%n",
        ]
        for name in COORDINATOR_LOGGERS:
            lines += [f"log4j.logger.{name}=INFO, coordinator", f"log4j.additivity.{name}=false"]
        path.write_text("\n".join(lines) + "\n")
        return f"-Dlog4j.configuration=file:{path}", path

    # -- lifecycle -------------------------------------------------------------------------------
    def _format(self, java: str, cp: str, log_opt: str, props_file: Path) -> None:
        # `--cluster-id=ID`, not `-t ID`: an id may begin with "-", which argparse then takes for an option
        argv = [java, log_opt, "-cp", cp, "kafka.tools.StorageTool", "format"]
        argv += [f"--cluster-id={self.cluster_id}", "-c", str(props_file)]
        if tuple(int(x) for x in self.version.split(".")[:2]) >= (4, 1):
            argv += ["--feature", "share.version=1"]
        for user, password in self.sasl_users.items():
            for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                argv += ["--add-scram", f"{mech}=[name={user},password={password}]"]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=self.workdir)
        if proc.returncode != 0:
            raise ServerError(f"kafka-storage format failed:\n{(proc.stdout + proc.stderr)[-2000:]}")

    def start(self, timeout: float = 60.0) -> KafkaBroker:
        java, cp = java_binary(), classpath(self.version)
        for name in ("port", "controller_port"):
            setattr(self, name, getattr(self, name) or free_port(self.host))
        if self.sasl_users:
            self.sasl_port = self.sasl_port or free_port(self.host)
        if self.tls is not None:
            self.ssl_port = self.ssl_port or free_port(self.host)
        if self.mtls:
            self.mtls_port = self.mtls_port or free_port(self.host)
        if self.sasl_users and self.tls is not None:
            self.sasl_ssl_port = self.sasl_ssl_port or free_port(self.host)
        if self.workdir is None:
            import tempfile

            self.workdir = Path(tempfile.mkdtemp(prefix="groupscope-kafka-"))
            self._own_dir = True
        props_file = self.workdir / "server.properties"
        props_file.write_text("".join(f"{k}={_escape(v)}\n" for k, v in self.properties().items()))
        log_opt, _ = self._log_config()
        # A data dir formatted by an earlier start (a restart on the same data) keeps its cluster id,
        # topics and SCRAM users: formatting it again would fail on this instance's new cluster id.
        if not (self.data_dir / "meta.properties").exists():
            self._format(java, cp, log_opt, props_file)
        argv = [
            java,
            "-Xms256m",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            log_opt,
            "-cp",
            cp,
            "kafka.Kafka",
            str(props_file),
        ]
        # A restart on the same workdir appends to the logs: the warm-up must count only the loading
        # lines of this start, or it returns before the coordinator has loaded anything.
        marks = {path: _size(path) for path in (self.coordinator_log, self.server_log)}
        self._spawn(argv, "kafka")
        try:
            wait_for_port(self.host, self.port, timeout, self.proc)
            self._wait_ready(timeout)
            self._create_offsets_topic(timeout, marks)
        except ServerError as e:
            tail = self.log_tail()
            with contextlib.suppress(OSError):
                tail += "\n" + "\n".join(self.server_log.read_text(errors="replace").splitlines()[-20:])
            self.stop()
            raise ServerError(f"Apache Kafka {self.version}: {e}\n{tail}") from e
        return self

    def _wait_ready(self, timeout: float) -> None:
        """Until the broker has registered and answers metadata with itself as a broker."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServerError(f"the broker exited with status {self.proc.returncode}")
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except Exception as e:  # KafkaException while the broker is still starting
                last = e
            time.sleep(0.1)
        raise ServerError(f"the broker did not answer metadata within {timeout:.0f} s ({last})")

    def _create_offsets_topic(self, timeout: float, since: dict[Path, int] | None = None) -> None:
        """Have the coordinator create and load `__consumer_offsets` now, as on a cluster that has run
        for a while: the first group request otherwise waits on its creation, and librdkafka's admin
        calls (AlterConsumerGroupOffsets) time out instead of retrying, or crash (an OffsetFetch
        answered while the topic loads: librdkafka issue 5040). A FindCoordinator creates the topic and
        writes nothing; the coordinator log says when each of its partitions is loaded."""
        from collectors.kafka_protocol import KafkaProtocolClient

        partitions = int(self.properties().get("offsets.topic.num.partitions", "50"))
        deadline = time.monotonic() + timeout
        last: object = None
        with KafkaProtocolClient({"bootstrap.servers": self.bootstrap_servers}, timeout_s=5) as client:
            while time.monotonic() < deadline:
                try:
                    nodes, errors = client.find_coordinators(["groupscope-embedded-broker-warm-up"])
                    if nodes:
                        break
                    last = errors
                except Exception as e:  # the broker still starting its listeners
                    last = e
                time.sleep(0.2)
        since = since or {}
        while time.monotonic() < deadline:
            # The loading lines come from the coordinator runtime's logger, which writes to server.log.
            lines = [
                *_read_lines(self.coordinator_log, since.get(self.coordinator_log, 0)),
                *_read_lines(self.server_log, since.get(self.server_log, 0)),
            ]
            loaded = {m.group(1) for m in map(_LOADED.search, lines) if m}
            if len(loaded) >= partitions:
                return
            last = f"{len(loaded)} of {partitions} partitions loaded"
            time.sleep(0.1)
        raise ServerError(f"__consumer_offsets was not ready within {timeout:.0f} s ({last})")

    def coordinator_lines(self) -> list[str]:
        return _read_lines(self.coordinator_log)


def _read_lines(path: Path, start: int = 0) -> list[str]:
    """The file's lines from byte `start` on (none when it does not exist)."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _new_cluster_id() -> str:
    """What `kafka-storage random-uuid` prints: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes)[:22].decode()


def _escape(value: str) -> str:
    """A Java properties value: newlines (PEM blocks) and backslashes escaped."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")
