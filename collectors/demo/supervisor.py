"""The demo's process supervisor: starts children, reports the ones that exit early, stops them all.

Every child runs in its own session (process group), so Ctrl-C in the terminal reaches only the
supervisor, which then stops children in the reverse order of their start: SIGTERM to the whole group
(a child's own children, e.g. Spark's JVM or gunicorn's workers, go with it), then SIGKILL to whatever
is left. Every child's environment carries GROUPSCOPE_DEMO_ID, so leftovers can be found by that mark.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

DEMO_ID_ENV = "GROUPSCOPE_DEMO_ID"


@dataclass
class Child:
    name: str
    argv: list[str]
    proc: subprocess.Popen
    log_path: Path
    started: float = field(default_factory=time.monotonic)
    service: bool = False  # a service is expected to run until the end; its exit is reported
    reported: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, n: int = 8) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])


class Supervisor:
    def __init__(self, run_dir: Path, demo_id: str, say: Callable[[str], None] | None = None) -> None:
        self.run_dir = run_dir
        self.demo_id = demo_id
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))
        self._children: list[Child] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="demo-supervisor", daemon=True)
        self.early_exits: list[tuple[str, int, str]] = []

    def start_watching(self) -> None:
        self._watcher.start()

    def spawn(
        self, name: str, argv: list[str], *, service: bool = False, env: dict | None = None
    ) -> Child | None:
        """Start a child; None once stopping has begun (a scenario thread may race the shutdown)."""
        with self._lock:
            if self._stopping.is_set():
                return None
            log_path = self.run_dir / f"{name}.log"
            full_env = {**os.environ, **(env or {}), DEMO_ID_ENV: self.demo_id, "PYTHONUNBUFFERED": "1"}
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=full_env,
                    start_new_session=True,
                )
            child = Child(name, argv, proc, log_path, service=service)
            self._children.append(child)
        if service:
            self.say(f"started {name} (pid {proc.pid}), log {log_path}")
        return child

    def signal(self, child: Child, sig: int) -> None:
        if child.running():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, sig)

    def children(self) -> list[Child]:
        with self._lock:
            return list(self._children)

    def _watch(self) -> None:
        while not self._stopping.wait(0.5):
            for c in self.children():
                if c.service and not c.reported and not c.running():
                    c.reported = True
                    tail = c.log_tail()
                    self.early_exits.append((c.name, c.proc.returncode, tail))
                    self.say(
                        f"!! {c.name} exited early with status {c.proc.returncode}; the rest of the demo "
                        f"keeps running. Last lines of {c.log_path}:\n"
                        + "\n".join(f"   | {line}" for line in tail.splitlines())
                    )
            # Forget finished workload processes so a long demo does not accumulate them.
            with self._lock:
                self._children = [c for c in self._children if c.service or c.running()]

    def stop_all(self, grace: float = 10.0) -> None:
        """Stop every child, newest first; SIGKILL what has not exited after `grace` seconds."""
        with self._lock:
            self._stopping.set()
            children = list(reversed(self._children))
        for c in children:
            self.signal(c, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for c in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                c.proc.wait(max(0.1, deadline - time.monotonic()))
        for c in children:
            # Also the group: a child may have exited while its own children linger.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(c.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                c.proc.wait(5)
        # SIGKILL is delivered at once but a loaded machine takes a moment to end the processes (and
        # init to reap the orphans): wait until each group is empty, so "stopped" means gone.
        deadline = time.monotonic() + 5.0
        for c in children:
            while time.monotonic() < deadline:
                try:
                    os.killpg(c.pid, 0)
                except (ProcessLookupError, PermissionError):
                    break
                time.sleep(0.05)

    def sweep(self) -> list[int]:
        """SIGKILL any process still carrying this demo's mark (call once everything was stopped)."""
        left = leftover_pids(self.demo_id)
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if left:
            self.say(f"killed {len(left)} leftover process(es): {left}")
        return left


def leftover_pids(demo_id: str) -> list[int]:
    """Live processes (not zombies) whose environment carries this demo's id."""
    mark = f"{DEMO_ID_ENV}={demo_id}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if mark not in (d / "environ").read_bytes().split(b"\0"):
                continue
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(d.name))
    return sorted(found)
