"""Ships the broker's group-coordinator log lines to a topic the pipeline reads (when the collector
runs where the broker's log files are: `broker_log_files`), at least once, resuming from the file
positions it keeps in the checkpoint folder.

Every record has a delivery report: a round with lines not delivered keeps its file position (the
lines go again at the next round), and the failures are counted by reason (`delivery_failures`),
logged, and shown in the "broker_log" source status (`gs:sources`) until a round goes through. A line
larger than a record may be (the producer's message.max.bytes) is skipped and counted (`too_large`):
sent again it would hold the file back forever."""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import time
from typing import Any

from collectors.kafka_clients import ErrorWatch, client_config
from collectors.pipeline.loop import Loop

log = logging.getLogger("groupscope.broker_log")

# Where the broker-log shipper writes the coordinator log lines it tails.
BROKER_LOG_TOPIC = "groupscope.broker-log"


class BrokerLogShipper(Loop):
    """Tails broker log files into a topic; file positions kept in <checkpoint>/broker-log-positions.json."""

    def __init__(self, cfg: Any, interval_s: float = 1.0, store: Any = None) -> None:
        super().__init__("groupscope-broker-log")
        self.cfg = cfg
        self.topic = cfg.broker_log_topic or BROKER_LOG_TOPIC
        self.interval_s = interval_s
        self.pos_file = os.path.join(cfg.checkpoint_dir, "broker-log-positions.json")
        # reason -> lines not delivered, since start; lines too large to send, skipped
        self.delivery_failures: collections.Counter[str] = collections.Counter()
        self.too_large = 0
        self.store = store  # where the source status goes (made from cfg.redis_url when needed)
        self._failing = False  # the status says lines are not delivered

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
                    failed: list[str] = []
                    for line in data[:cut].splitlines():
                        if b"GroupCoordinator" in line or b"group" in line:
                            self._produce(producer, line, failed)
                    left = producer.flush(30)
                    if left or failed:
                        # not delivered: keep the position, send again on the next round (at least once)
                        self._not_delivered(path, failed, left)
                        continue
                    pos[path] = start + cut
                    changed = changed or cut > 0
                    if self._failing:
                        self._failing = False
                        self._status(True, f"topic {self.topic}{self._since_start()}")
                except OSError as e:
                    log.warning("broker log %s: %s", path, e)
            if changed:
                self._save(pos)
            self._stop_evt.wait(self.interval_s)

    def _produce(self, producer: Any, line: bytes, failed: list[str]) -> None:
        """Produce one line; its delivery failure's reason is appended to `failed` (by its report, or
        at once when the producer refuses it). A full queue is served for a moment, once."""

        def report(err: Any, _msg: Any) -> None:
            if err is not None:
                failed.append(_reason(err))

        for attempt in range(2):
            try:
                producer.produce(self.topic, value=line, on_delivery=report)
                return
            except BufferError:  # the producer's queue is full: let it send, then once more
                if attempt:
                    failed.append("QUEUE_FULL")
                    return
                producer.poll(1.0)
            except Exception as e:
                if _reason(e) in ("MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE"):
                    self.too_large += 1
                    log.warning(
                        "broker log line of %d bytes is larger than a record to %s may be: skipped",
                        len(line),
                        self.topic,
                    )
                else:
                    failed.append(_reason(e))
                return

    def _not_delivered(self, path: str, failed: list[str], left: int) -> None:
        reasons = collections.Counter(failed)
        if left:
            reasons["NOT_FLUSHED"] += left  # still in flight after 30 s: sent again
        self.delivery_failures.update(reasons)
        said = ", ".join(f"{r} {n}" for r, n in reasons.most_common(4))
        log.warning(
            "broker log %s: %d lines not delivered to %s (%s), sent again at the next round",
            path,
            sum(reasons.values()),
            self.topic,
            said,
        )
        self._failing = True
        self._status(
            False,
            f"{sum(reasons.values())} lines not delivered to {self.topic} ({said}), sent again"
            + self._since_start(),
        )

    def _since_start(self) -> str:
        out = ""
        if self.delivery_failures:
            out += "; not delivered since start: " + ", ".join(
                f"{r} {n}" for r, n in self.delivery_failures.most_common(4)
            )
        if self.too_large:
            out += f"; {self.too_large} lines too large to send, skipped"
        return out

    def _status(self, ok: bool, detail: str) -> None:
        """The "broker_log" source status in Redis (never raises: the shipper goes on without it)."""
        with contextlib.suppress(Exception):
            if self.store is None and getattr(self.cfg, "redis_url", None):
                from collectors.storage.redis_store import RedisStore

                self.store = RedisStore.from_url(self.cfg.redis_url, prefix=getattr(self.cfg, "prefix", "gs"))
            if self.store is not None:
                self.store.set_source_status("broker_log", ok, detail[:600], int(time.time() * 1000))

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


def _reason(e: Any) -> str:
    """A delivery failure's reason: the KafkaError's name (MSG_SIZE_TOO_LARGE, _MSG_TIMED_OUT, ...)."""
    from confluent_kafka import KafkaError

    err = e.args[0] if isinstance(e, Exception) and e.args else e
    return err.name() if isinstance(err, KafkaError) else type(e).__name__
