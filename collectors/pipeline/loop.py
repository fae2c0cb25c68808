"""The collector's background threads (the keeper of the Admin poller's process, the broker-log
shipper, the lag refresher): daemons that run until `stop()`, waiting on their stop event so that
they end at once."""

from __future__ import annotations

import threading


class Loop(threading.Thread):
    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._stop_evt = threading.Event()

    def stop(self) -> None:
        self._stop_evt.set()
