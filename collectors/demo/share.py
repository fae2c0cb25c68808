"""A KIP-932 share consumer (librdkafka's ShareConsumer, as a user's application runs it) on a thread:
it polls (acknowledging implicitly) until told to close, then closes, leaving the group.

The demo's share scenario runs each member as its own process (`python -m collectors.demo.worker
share-consumer ...`, one `ShareMember` in it); tests/share_scenario.py runs several in one process.
"""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import ShareConsumer


class ShareMember(threading.Thread):
    """One share consumer of `group` on `topic`, polling until `halt` is set; `records` counts what
    it was given. `conf`: further client settings (security, ...)."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, client_id: str, conf: dict[str, Any] | None = None
    ) -> None:
        super().__init__(daemon=True, name=client_id)
        self.consumer = ShareConsumer(
            {**(conf or {}), "bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id}
        )
        self.consumer.subscribe([topic])
        self.halt = threading.Event()
        self.records = 0

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                got = self.consumer.poll(0.3)
            except Exception:  # a poll interrupted by a rebalance: poll again
                continue
            self.records += len(got or [])
        self.consumer.close()  # leaves the group
