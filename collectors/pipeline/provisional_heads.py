"""Every group on the dashboard within seconds of `groupscope collect` starting, while Spark starts.

Spark takes half a minute on a small machine before its first micro-batch, and a catch-up of a large
backlog longer still before every group is written; the Admin poller, started before Spark
(job.run_pipeline), has every group's describe within a second or two and its committed offsets a
few seconds later. From the poller's first poll, this thread writes each group's provisional
document (coordinator_model/provisional.py: state, members and assignment, committed offsets; no
history, no lag), in two passes: the describes as soon as they are answered, then again with the
committed offsets.

A provisional document is marked so (`"provisional": true` in the document and its fleet row), shown
so on the pages and in `--json`, and never written over the pipeline's: `RedisStore.write_provisional`
writes a group only while it has no document or a provisional one, and stops for good once the
pipeline has written anything, whose documents then replace them group by group.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from coordinator_model.errors import EvidenceError
from coordinator_model.evidence import CommittedSnapshot, DescribeSnapshot, from_describe_json
from coordinator_model.provisional import provisional_document

log = logging.getLogger("groupscope.provisional")

TP = tuple[str, int]
CHUNK = 500  # groups built and written at a time: the first ones show while the rest are built


class ProvisionalHeads(threading.Thread):
    """Takes the poller's first answers (`describes`, then `committed`) and writes them as
    provisional documents, until the pipeline writes or the answers run out."""

    def __init__(self, store_factory: Any) -> None:
        super().__init__(name="groupscope-provisional", daemon=True)
        self._store_factory = store_factory  # a RedisStore of its own: the poller's is its thread's
        self._work: queue.Queue[
            tuple[list[dict[str, Any]], Mapping[str, Sequence[tuple[str, int, int]]]] | None
        ] = queue.Queue()
        self._describes: dict[str, DescribeSnapshot] = {}
        self.written = 0  # provisional documents written (tests and benchmarks read it)
        self.first_at: float | None = None  # monotonic time of the first and last write
        self.last_at: float | None = None
        self.stood_down = False  # the pipeline wrote: nothing more is written

    def describes(self, lines: list[dict[str, Any]]) -> None:
        """The poller's describe lines (classic, KIP-848 and share groups alike)."""
        self._work.put((lines, {}))

    def committed(self, fetched: Mapping[str, Sequence[tuple[str, int, int]]]) -> None:
        """Each group's committed offsets, [(topic, partition, offset)], as the poller fetched them."""
        self._work.put(([], fetched))

    def done(self) -> None:
        """No more answers: the thread ends once what it has is written."""
        self._work.put(None)

    def stop(self) -> None:
        """The collector stops: what is queued is dropped."""
        self.stood_down = True
        self._work.put(None)

    def run(self) -> None:
        store = self._store_factory()
        while not self.stood_down:
            item = self._work.get()
            if item is None:
                return
            lines, fetched = item
            if self.stood_down:
                return
            try:
                self._write(store, lines, fetched)
            except Exception as e:  # a lost Redis or a bad answer: the pipeline's documents still come
                log.warning("provisional documents not written: %s", e)
                return

    def _write(
        self, store: Any, lines: list[dict[str, Any]], fetched: Mapping[str, Sequence[tuple[str, int, int]]]
    ) -> None:
        named: list[str] = []
        for line in lines:
            try:
                ev = from_describe_json(line)
            except EvidenceError as e:  # the model stage sets it aside and says why; here it is skipped
                log.debug("provisional: describe of %r skipped: %s", line.get("group"), e)
                continue
            if isinstance(ev, DescribeSnapshot):
                self._describes[ev.group] = ev
                named.append(ev.group)
        now = int(time.time() * 1000)
        named += [g for g in fetched if g in self._describes and g not in named]
        for i in range(0, len(named), CHUNK):
            if self.stood_down:
                return
            docs = []
            for g in named[i : i + CHUNK]:
                rows = fetched.get(g)
                committed = CommittedSnapshot(now, g, tuple(rows)) if rows else None
                docs.append(provisional_document(self._describes[g], committed))
            n = store.write_provisional(docs, now)
            if n is None:
                self.stood_down = True
                log.info("provisional documents: %d written; the pipeline's follow", self.written)
                return
            self.written += n
            self.last_at = time.monotonic()
            if self.first_at is None:
                self.first_at = self.last_at
