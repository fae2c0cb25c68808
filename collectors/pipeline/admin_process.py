"""The Admin poller in a process of its own, started again whenever it dies.

librdkafka 2.16 can abort the whole process that runs its admin client: an admin request that timed
out and is answered late fails an assertion (`rd_kafka_enq_once_del_source_return`,
confluentinc/librdkafka#4605, open), and a broker that goes away makes that likely. Run in the
collector's driver, the poller took the collector down with it (Spark, every cluster's query, the lag
refresher). Here it runs in a child process (`python -m collectors.pipeline.admin_process`), with
the provisional documents it feeds: it already speaks to the rest of the collector only through
Kafka (its admin topic) and Redis (its source status, change hints, provisional documents), so
nothing is lost but the poll it was in. `AdminProcess`, a thread of the driver, starts the child and,
when the child ends by itself (an abort is SIGABRT), says so in the log and in the "admin" source's
status and starts another after a backoff. A new child sends every answer again (its change filter
starts empty), which is what a lost answer needs.

The child gets its settings (the Kafka and Redis secrets among them) pickled on its stdin, never on
its command line, and ends when the thread that started it ends, however that ends (Linux's
PR_SET_PDEATHSIG, set by the child itself: `preexec_fn` is unsafe in a process with threads).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from collectors.kafka_clients import already_said, said_so_far
from collectors.pipeline.loop import Loop
from collectors.process_death import die_with_parent

log = logging.getLogger("groupscope.admin")

# Backoff between a child's death and the next child: doubled at each death, back to the first once a
# child has lived RESTART_RESET_S.
RESTART_FIRST_S = 1.0
RESTART_MAX_S = 30.0
RESTART_RESET_S = 120.0
STOP_WAIT_S = 15.0  # a child told to stop finishes its poll and flushes its producer within this


@dataclass
class PollerJob:
    """What a child is started with (pickled on its stdin)."""

    cfg: Any  # job.PipelineConfig
    offsets_readable: bool
    refill: bool  # send every group's committed offsets (Redis lost the collector's data)
    provisional: bool  # write the first poll's answers as provisional documents
    parent_pid: int
    # what the collector's once-a-minute loggers said already (kafka_clients.said_so_far): a reason
    # the start-up check gave (a wrong password) is not said again by the child's first poll
    said: dict[str, dict[str, float]] = field(default_factory=dict)


def death_reason(returncode: int) -> str:
    """How a child ended, as the log and the source status say it."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if -returncode == signal.SIGABRT:
            return f"{name}: librdkafka aborted it (confluentinc/librdkafka#4605)"
        return name
    return f"exit status {returncode}"


class AdminProcess(Loop):
    """Runs the Admin poller in a child process and starts it again when it dies."""

    def __init__(
        self, cfg: Any, store: Any, offsets_readable: bool, refill: bool = False, provisional: bool = False
    ) -> None:
        super().__init__("groupscope-admin-process")
        self.cfg = cfg
        self.store = store  # the source status is written here when a child dies
        self.offsets_readable = offsets_readable
        self.refill = refill
        self.provisional = provisional
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0  # children started (tests read it)
        self.deaths: list[str] = []  # how each child that ended by itself ended

    def _start_child(self) -> subprocess.Popen[bytes]:
        first = self.starts == 0
        job = PollerJob(
            self.cfg,
            self.offsets_readable,
            # A child started again after a death refills too when the first was asked to: the one that
            # died may not have sent every group's offsets yet. Provisional documents only at first:
            # by then the pipeline's own documents stand.
            self.refill,
            self.provisional and first,
            os.getpid(),
            said_so_far(),
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "collectors.pipeline.admin_process"],
            stdin=subprocess.PIPE,
            close_fds=True,
        )
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(pickle.dumps(job))
            proc.stdin.close()
        self.starts += 1
        return proc

    def run(self) -> None:
        delay = RESTART_FIRST_S
        while not self._stop_evt.is_set():
            started = time.monotonic()
            try:
                self.proc = proc = self._start_child()
            except OSError as e:  # no process could be made (memory, process limits): tried again
                why, what = f"not started: {e}", f"could not be started ({e})"
            else:
                while proc.poll() is None and not self._stop_evt.wait(0.5):
                    pass
                if proc.poll() is None:  # told to stop
                    break
                why = death_reason(proc.returncode)
                what = f"ended ({why})"
            self.deaths.append(why)
            if time.monotonic() - started >= RESTART_RESET_S:
                delay = RESTART_FIRST_S
            message = f"the Admin poller's process {what}; started again in {delay:.0f} s"
            log.warning("%s", message)
            with contextlib.suppress(Exception):
                self.store.set_source_status("admin", False, message[:600], int(time.time() * 1000))
            if self._stop_evt.wait(delay):
                return
            delay = min(delay * 2, RESTART_MAX_S)
        self._end_child()

    def _end_child(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()  # SIGTERM: the child stops its poller, which flushes its producer
        try:
            proc.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(5)


# ---- the child -------------------------------------------------------------------------------------
def _die_with_parent(parent_pid: int) -> None:
    """SIGTERM this process when the thread that started it dies; exit at once if it already has."""
    die_with_parent()
    if os.getppid() != parent_pid:
        sys.exit(0)


def child_main() -> None:
    job: PollerJob = pickle.load(sys.stdin.buffer)
    _die_with_parent(job.parent_pid)
    logging.basicConfig(level=logging.WARNING, format="groupscope: %(message)s")
    already_said(job.said)

    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.provisional_heads import ProvisionalHeads
    from collectors.storage.redis_store import RedisStore

    cfg = job.cfg

    def store() -> RedisStore:
        return RedisStore.from_url(cfg.redis_url, prefix=cfg.prefix, retention_ms=cfg.retention_ms)

    heads = ProvisionalHeads(store) if job.provisional else None
    poller = AdminPoller(
        cfg, store(), offsets_readable=job.offsets_readable, refill=job.refill, provisional=heads
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    # Ctrl-C reaches the whole process group: the collector stops this child in its turn (a child
    # that stopped by itself first would be taken for a death and started again)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for t in (heads, poller):
        if t is not None:
            t.start()
    while not stopping.wait(1.0):
        if not poller.is_alive():
            sys.exit(1)  # the poller's thread ended by itself: a child of its own comes next
    for t in (poller, heads):
        if t is not None:
            t.stop()
    poller.join(STOP_WAIT_S - 2)


if __name__ == "__main__":
    child_main()
