"""Ships the broker's group-coordinator log lines to a topic the pipeline reads (when the collector
runs where the broker's log files are: `broker_log_files`), at least once, resuming from the file
positions it keeps in the checkpoint folder."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from collectors.kafka_clients import ErrorWatch, client_config
from collectors.pipeline.loop import Loop

log = logging.getLogger("groupscope.broker_log")

# Where the broker-log shipper writes the coordinator log lines it tails.
BROKER_LOG_TOPIC = "groupscope.broker-log"


class BrokerLogShipper(Loop):
    """Tails broker log files into a topic; file positions kept in <checkpoint>/broker-log-positions.json."""

    def __init__(self, cfg: Any, interval_s: float = 1.0) -> None:
        super().__init__("groupscope-broker-log")
        self.cfg = cfg
        self.topic = cfg.broker_log_topic or BROKER_LOG_TOPIC
        self.interval_s = interval_s
        self.pos_file = os.path.join(cfg.checkpoint_dir, "broker-log-positions.json")

    def _load(self) -> dict[str, int]:
        try:
            with open(self.pos_file) as f:
                return {k: int(v) for k, v in json.load(f).items()}
        except (OSError, ValueError):
            return {}

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(client_config(self.cfg.kafka, ErrorWatch(), **{"linger.ms": 20}))
        pos = self._load()
        while not self._stop_evt.is_set():
            changed = False
            for path in self.cfg.broker_log_files:
                try:
                    size = os.path.getsize(path)
                    start = pos.get(path, 0)
                    if size < start:  # rotated or truncated: start over
                        start = 0
                    if size == start:
                        continue
                    with open(path, "rb") as fh:
                        fh.seek(start)
                        data = fh.read(min(size - start, 8 << 20))  # a big log: 8 MB a round
                    cut = data.rfind(b"\n") + 1  # only whole lines
                    failed: list[Any] = []
                    for line in data[:cut].splitlines():
                        if b"GroupCoordinator" in line or b"group" in line:
                            producer.produce(
                                self.topic,
                                value=line,
                                on_delivery=lambda err, _m, failed=failed: err and failed.append(err),
                            )
                    if producer.flush(30) or failed:
                        # not delivered: keep the position, send again on the next round (at least once)
                        log.warning("broker log %s: %d lines not delivered, retrying", path, len(failed))
                        continue
                    pos[path] = start + cut
                    changed = changed or cut > 0
                except OSError as e:
                    log.warning("broker log %s: %s", path, e)
            if changed:
                self._save(pos)
            self._stop_evt.wait(self.interval_s)

    def _save(self, pos: dict[str, int]) -> None:
        """The positions to the checkpoint folder, which may not be there yet: the shipper starts
        before Spark, which makes the folder when its query starts. A failure is said and the
        positions are saved with the next round's (they are kept meanwhile)."""
        tmp = self.pos_file + ".tmp"
        try:
            os.makedirs(os.path.dirname(self.pos_file) or ".", exist_ok=True)
            with open(tmp, "w") as f:
                json.dump(pos, f)
            os.replace(tmp, self.pos_file)
        except OSError as e:
            log.warning("broker log positions not saved to %s: %s", self.pos_file, e)
