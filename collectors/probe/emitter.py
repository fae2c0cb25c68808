"""Telemetry transport: a bounded queue drained by a background thread into the probe's own Producer.

The application thread only ever calls `emit`, which is a non-blocking `put_nowait`: when the queue is
full the event is dropped and counted. The background thread owns the Producer; events that cannot be
delivered (telemetry broker down, topic missing) fail after `message.timeout.ms` and are counted too.
Nothing here raises into the caller.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

from collectors.probe.events import ProbeEvent

log = logging.getLogger("groupscope.probe")
# A library logger: silent unless the application configures logging (then "groupscope.probe" shows
# the telemetry producer's librdkafka lines, e.g. connection refused to a telemetry broker that is down).
log.addHandler(logging.NullHandler())

_STOP = object()


@dataclass(frozen=True, slots=True)
class ProbeCounters:
    """A snapshot of what happened to the probe's events.

    emitted = queued + dropped_queue_full; queued events end up delivered, failed (dropped after the
    producer gave up) or still pending.
    """

    emitted: int = 0  # events the probe produced
    delivered: int = 0  # acknowledged by the telemetry broker
    dropped_queue_full: int = 0  # bounded queue full: the event never left the application thread
    dropped_undeliverable: int = 0  # the producer gave up (broker unreachable, topic missing, ...)
    dropped_producer_full: int = 0  # the producer's own buffer was full
    dropped_on_close: int = 0  # still queued or in flight when the probe stopped
    errors: int = 0  # unexpected exceptions inside the probe, swallowed
    last_error: str | None = None
    # dropped_undeliverable and dropped_producer_full by reason (the delivery report's KafkaError name:
    # MSG_SIZE_TOO_LARGE, _MSG_TIMED_OUT, TOPIC_AUTHORIZATION_FAILED, ...; QUEUE_FULL), sorted
    undeliverable_reasons: tuple[tuple[str, int], ...] = ()

    @property
    def dropped(self) -> int:
        return (
            self.dropped_queue_full
            + self.dropped_undeliverable
            + self.dropped_producer_full
            + self.dropped_on_close
        )


class _Counts:
    """Mutable counters behind a lock; `snapshot` hands out the frozen view."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._c: dict[str, Any] = {
            k: 0
            for k in ProbeCounters.__dataclass_fields__
            if k not in ("last_error", "undeliverable_reasons")
        }
        self._last_error: str | None = None
        self._reasons: dict[str, int] = {}

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._c[name] += n

    def undeliverable(self, name: str, reason: str) -> None:
        """An event not delivered (`name`: its counter), for `reason`."""
        with self._lock:
            self._c[name] += 1
            self._reasons[reason] = self._reasons.get(reason, 0) + 1

    def error(self, what: str) -> None:
        with self._lock:
            self._c["errors"] += 1
            self._last_error = what[:300]

    def snapshot(self) -> ProbeCounters:
        with self._lock:
            return ProbeCounters(
                **self._c,
                last_error=self._last_error,
                undeliverable_reasons=tuple(sorted(self._reasons.items())),
            )


class TelemetryEmitter:
    """Sends HeartbeatEvents to `topic`, keyed by group id, from a daemon thread."""

    def __init__(
        self,
        producer_conf: dict[str, Any],
        topic: str,
        *,
        max_queue: int = 10_000,
        counts: _Counts | None = None,
    ) -> None:
        self.topic = topic
        self.counts = counts or _Counts()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        conf = {
            # Bounded everywhere: a dead telemetry broker costs at most this many buffered events
            # and this long before they are counted as dropped.
            "queue.buffering.max.messages": max_queue,
            "message.timeout.ms": 10_000,
            "linger.ms": 100,
            "acks": 1,
            "enable.idempotence": False,
            "socket.connection.setup.timeout.ms": 5_000,
            "reconnect.backoff.max.ms": 5_000,
            # Route librdkafka's own log lines (connection refused every second...) to logging.
            "logger": log,
            **producer_conf,
        }
        self._producer_conf = conf
        self._producer: Any = None
        self._thread = threading.Thread(target=self._run, name="groupscope-probe-emitter", daemon=True)
        self._started = False
        self._closed = threading.Event()

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def emit(self, event: ProbeEvent) -> None:
        """Queue an event; never blocks, never raises."""
        self.counts.add("emitted")
        if self._closed.is_set():
            self.counts.add("dropped_on_close")
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.counts.add("dropped_queue_full")

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is None:
            self.counts.add("delivered")
        else:
            self.counts.undeliverable("dropped_undeliverable", _reason(err))

    def _run(self) -> None:
        try:
            from confluent_kafka import Producer

            self._producer = Producer(self._producer_conf)
        except Exception as e:  # bad telemetry config: count every event as dropped, keep draining
            self.counts.error(f"telemetry producer: {e}")
            log.warning("groupscope probe: cannot create the telemetry producer: %s", e)
            self._producer = None
        while True:
            try:
                item = self._queue.get(timeout=0.2)
            except queue.Empty:
                item = None
            if item is _STOP:
                break
            if item is not None:
                self._send(item)
            if self._producer is not None:
                try:
                    self._producer.poll(0)
                except Exception as e:
                    self.counts.error(f"producer.poll: {e}")

    def _send(self, event: ProbeEvent) -> None:
        if self._producer is None:
            self.counts.undeliverable("dropped_undeliverable", "NO_PRODUCER")
            return
        try:
            self._producer.produce(
                self.topic, key=event.group.encode(), value=event.to_json(), on_delivery=self._on_delivery
            )
        except BufferError:
            self.counts.undeliverable("dropped_producer_full", "QUEUE_FULL")
        except Exception as e:  # e.g. MSG_SIZE_TOO_LARGE: larger than the producer's message.max.bytes
            self.counts.undeliverable("dropped_undeliverable", _reason(e))
            self.counts.error(f"produce: {e}")

    def close(self, timeout: float = 2.0) -> None:
        """Flush what can be flushed within `timeout` seconds, count the rest as dropped."""
        if self._closed.is_set():
            return
        self._closed.set()
        if not self._started:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=timeout)
        self._thread.join(timeout)
        # Whatever never reached the producer is lost.
        left = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                left += 1
        if left:
            self.counts.add("dropped_on_close", left)
        if self._producer is not None and not self._thread.is_alive():
            try:
                in_flight = self._producer.flush(timeout)
                if in_flight:
                    self.counts.add("dropped_on_close", in_flight)
            except Exception as e:
                self.counts.error(f"flush: {e}")


def _reason(e: Any) -> str:
    """A delivery failure's reason: the KafkaError's name (MSG_SIZE_TOO_LARGE, _MSG_TIMED_OUT, ...)."""
    try:
        from confluent_kafka import KafkaError
    except ImportError:  # pragma: no cover - the probe runs where confluent-kafka is
        return type(e).__name__
    err = e.args[0] if isinstance(e, Exception) and e.args else e
    return err.name() if isinstance(err, KafkaError) else type(e).__name__
