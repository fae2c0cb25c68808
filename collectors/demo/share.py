"""A KIP-932 share consumer (librdkafka's ShareConsumer, as a user's application runs it) on a thread:
it polls (acknowledging implicitly) until told to close, then closes, leaving the group.

The demo's share scenario runs each member as its own process (`python -m collectors.demo.worker
share-consumer ...`, one `ShareMember` in it); tests/share_scenario.py runs several in one process.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import ShareConsumer


def paused(elapsed: float, every: float, pause: float) -> bool:
    """Whether a member that stops polling for `pause` s after every `every` s of polling is in one of
    its pauses `elapsed` seconds after it started."""
    return bool(pause) and elapsed % (every + pause) >= every


class ShareMember(threading.Thread):
    """One share consumer of `group` on `topic`, polling until `halt` is set; `records` counts what
    it was given. `conf`: further client settings (security, ...). With `pause_for`, it stops polling
    for `pause_for` s after every `pause_every` s of polling (it stays in the group, its heartbeats
    sent by librdkafka's own thread): the records meanwhile wait, and the share-partition lag grows."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        client_id: str,
        conf: dict[str, Any] | None = None,
        pause_every: float = 0.0,
        pause_for: float = 0.0,
    ) -> None:
        super().__init__(daemon=True, name=client_id)
        self.consumer = ShareConsumer(
            {**(conf or {}), "bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id}
        )
        self.consumer.subscribe([topic])
        self.halt = threading.Event()
        self.records = 0
        self.pause_every = pause_every
        self.pause_for = pause_for

    def run(self) -> None:
        start = time.monotonic()
        while not self.halt.is_set():
            if paused(time.monotonic() - start, self.pause_every, self.pause_for):
                self.halt.wait(0.3)
                continue
            try:
                got = self.consumer.poll(0.3)
            except Exception:  # a poll interrupted by a rebalance: poll again
                continue
            self.records += len(got or [])
        self.consumer.close()  # leaves the group
