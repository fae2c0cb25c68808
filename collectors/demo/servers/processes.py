"""Local servers for the test harness and the demo, each on a free loopback port: a real redis-server
here, and a real Apache Kafka broker in `collectors.demo.servers.kafka` (built on `_Proc` below).

These are thin process wrappers: start, wait until the port answers, stop (SIGTERM, then SIGKILL).
They never run against a user's cluster; `groupscope demo --bootstrap-servers/--redis` skips them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from collectors.process_death import die_with_parent


class ServerError(RuntimeError):
    """A local server could not be started; the message says which and why."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for_port(host: str, port: int, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ServerError(f"process exited with status {proc.returncode} before {host}:{port} answered")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.05)
    raise ServerError(f"{host}:{port} did not answer within {timeout:.0f} s")


@dataclass
class _Proc:
    host: str = "127.0.0.1"
    port: int = 0
    proc: subprocess.Popen | None = None
    workdir: Path | None = None
    log_path: Path | None = None
    _own_dir: bool = field(default=False, repr=False)

    def _spawn(self, argv: list[str], name: str) -> None:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"groupscope-{name}-"))
            self._own_dir = True
        self.log_path = self.workdir / f"{name}.log"
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child keeps it open
        # A new session so Ctrl-C in a terminal reaches us first and we stop it in order.
        self.proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        log.close()

    def log_tail(self, n: int = 20) -> str:
        try:
            return (
                "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
                if self.log_path
                else ""
            )
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self._own_dir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self):
        return self.start()  # type: ignore[attr-defined]

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class RedisServer(_Proc):
    """redis-server with no persistence in its own temporary directory."""

    def start(self, timeout: float = 15.0) -> RedisServer:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.path.exists(binary):
            raise ServerError(
                "redis-server is not installed (Debian package 'redis-server'; `make test` installs it)"
            )
        self.port = self.port or free_port(self.host)
        argv = [
            binary,
            "--bind",
            self.host,
            "--port",
            str(self.port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
            "--daemonize",
            "no",
            "--dir",
            ".",
        ]
        self._spawn(argv, "redis")
        try:
            wait_for_port(self.host, self.port, timeout, self.proc)
        except ServerError as e:
            self.stop()
            raise ServerError(f"redis-server: {e}\n{self.log_tail()}") from e
        return self

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"
