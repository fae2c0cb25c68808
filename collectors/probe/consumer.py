"""ProbedConsumer: a confluent_kafka.Consumer that reports its group life to the heartbeat topic.

Adding the probe is one line: build the consumer with `ProbedConsumer(conf)` (or `groupscope_probe(conf)`)
instead of `Consumer(conf)`. It IS a Consumer (a subclass), so poll, consume, subscribe with
on_assign/on_revoke/on_lost, commit, close and everything else behave as before.

What it adds, without ever blocking or raising into the application:
- join when librdkafka reports a member id it had not reported before (memberid());
- assigned / revoked / lost from the rebalance callbacks, which then call the application's own;
- leave when the application closes the consumer;
- heartbeat every max(heartbeat.interval.ms, probe interval) with librdkafka's join state, read from
  the statistics callback (the application's stats_cb still gets every statistics JSON);
- poll_stall once the application has not called poll/consume for `stall_fraction` of
  max.poll.interval.ms (a watchdog thread; librdkafka itself only notices at the full interval).

Probe settings come as keyword arguments or as `groupscope.*` keys in the same conf dict (removed before
the conf reaches librdkafka), so a configuration file can turn the probe on without code changes:
  groupscope.heartbeat.topic       default groupscope.heartbeats
  groupscope.bootstrap.servers     telemetry cluster; default the consumer's bootstrap.servers
  groupscope.stall.fraction        default 0.5
  groupscope.heartbeat.interval.ms default the consumer's heartbeat.interval.ms (never shorter)
  groupscope.queue.size            default 10000 events
  groupscope.producer.<name>       any librdkafka producer setting for the telemetry producer
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from collectors.probe.emitter import ProbeCounters, TelemetryEmitter, _Counts
from collectors.probe.events import CgrpStats, MemberIdentity, ProbeEvent

log = logging.getLogger("groupscope.probe")
_monotonic = time.monotonic

DEFAULT_TOPIC = "groupscope.heartbeats"
# librdkafka's defaults, used when the application does not set them.
_DEFAULTS = {"session.timeout.ms": 45_000, "heartbeat.interval.ms": 3_000, "max.poll.interval.ms": 300_000}
# Settings the telemetry producer inherits from the consumer when it talks to the same cluster.
_SHARED_PREFIXES = ("security.protocol", "sasl.", "ssl.", "client.dns.lookup", "broker.address.family")

RebalanceCb = Callable[[Consumer, list[TopicPartition]], None]


def _tps(partitions: list[TopicPartition]) -> list[tuple[str, int]]:
    return sorted((tp.topic, tp.partition) for tp in partitions)


def _int_setting(conf: dict[str, Any], key: str) -> int:
    try:
        return int(conf.get(key, _DEFAULTS[key]))
    except (TypeError, ValueError):
        return _DEFAULTS[key]


class ProbedConsumer(Consumer):
    """A confluent_kafka.Consumer with the groupscope heartbeat probe built in."""

    def __init__(
        self,
        conf: dict[str, Any],
        *,
        heartbeat_topic: str | None = None,
        telemetry_conf: dict[str, Any] | None = None,
        stall_fraction: float | None = None,
        heartbeat_interval_ms: int | None = None,
        queue_size: int | None = None,
        close_timeout_s: float = 2.0,
    ) -> None:
        conf = dict(conf)
        probe_opts = {k[len("groupscope.") :]: conf.pop(k) for k in list(conf) if k.startswith("groupscope.")}
        producer_extra = {k[9:]: v for k, v in probe_opts.items() if k.startswith("producer.")}

        topic = heartbeat_topic or probe_opts.get("heartbeat.topic") or DEFAULT_TOPIC
        fraction = float(stall_fraction or probe_opts.get("stall.fraction") or 0.5)
        self._stall_fraction = min(max(fraction, 0.05), 1.0)
        hb_ms = _int_setting(conf, "heartbeat.interval.ms")
        wanted = heartbeat_interval_ms or int(probe_opts.get("heartbeat.interval.ms") or hb_ms)
        # The liveness beat is never more frequent than the consumer's own heartbeat.
        self._beat_s = max(wanted, hb_ms) / 1000.0
        self._max_poll_ms = _int_setting(conf, "max.poll.interval.ms")
        self._close_timeout_s = close_timeout_s

        self._who = MemberIdentity(
            group=str(conf.get("group.id", "")),
            client_id=str(conf.get("client.id", "rdkafka")),
            host=str(probe_opts.get("host") or socket.gethostname()),
            group_instance_id=conf.get("group.instance.id") or None,
            session_timeout_ms=_int_setting(conf, "session.timeout.ms"),
            max_poll_interval_ms=self._max_poll_ms,
            group_protocol=str(conf.get("group.protocol", "classic")).lower(),
        )

        # Statistics drive the heartbeat's state; chain the application's stats_cb.
        self._app_stats_cb: Callable[[str], None] | None = conf.pop("stats_cb", None)
        conf["stats_cb"] = self._on_stats
        if int(conf.get("statistics.interval.ms", 0) or 0) <= 0:
            conf["statistics.interval.ms"] = max(1000, min(hb_ms, 5000))

        producer_conf: dict[str, Any] = {}
        telemetry_bootstrap = probe_opts.get("bootstrap.servers")
        if telemetry_bootstrap:
            producer_conf["bootstrap.servers"] = telemetry_bootstrap
        else:
            producer_conf["bootstrap.servers"] = conf.get("bootstrap.servers", "")
            producer_conf.update({k: v for k, v in conf.items() if k.startswith(_SHARED_PREFIXES)})
        producer_conf["client.id"] = f"groupscope-probe-{self._who.client_id}"
        producer_conf.update(producer_extra)
        producer_conf.update(telemetry_conf or {})

        self._counts = _Counts()
        self._emitter = TelemetryEmitter(
            producer_conf,
            topic,
            max_queue=int(queue_size or probe_opts.get("queue.size") or 10_000),
            counts=self._counts,
        )
        self._lock = threading.Lock()
        self._member_id: str | None = None
        self._stats: CgrpStats | None = None
        self._last_poll = time.monotonic()
        self._in_poll = False
        self._stalled = False
        self._closing = False
        self._stop = threading.Event()

        super().__init__(conf)

        self._emitter.start()
        self._ticker = threading.Thread(target=self._tick_loop, name="groupscope-probe-watchdog", daemon=True)
        self._ticker.start()

    # ---- what the probe exposes -------------------------------------------------------------
    @property
    def probe_counters(self) -> ProbeCounters:
        return self._counts.snapshot()

    @property
    def probe_member_id(self) -> str | None:
        return self._member_id

    # ---- the Consumer API, instrumented -------------------------------------------------------
    def subscribe(self, topics: list[str], *args: Any, **kwargs: Any) -> None:
        names = ("on_assign", "on_revoke", "on_lost")
        app = dict(zip(names, args, strict=False))
        app.update({k: kwargs.pop(k) for k in names if k in kwargs})
        on_assign, on_revoke, on_lost = (app.get(n) for n in names)

        # Our callbacks are always installed so every rebalance is seen. confluent-kafka assigns
        # by itself when a callback does not, exactly as without callbacks, and calls on_revoke for
        # lost partitions when there is no on_lost: we keep both behaviours.
        def _assign(consumer: Consumer, parts: list[TopicPartition]) -> None:
            self._safely(self._record, "assigned", parts)
            if on_assign is not None:
                on_assign(consumer, parts)

        def _revoke(consumer: Consumer, parts: list[TopicPartition]) -> None:
            self._safely(self._record, "revoked", parts)
            if on_revoke is not None:
                on_revoke(consumer, parts)

        def _lost(consumer: Consumer, parts: list[TopicPartition]) -> None:
            self._safely(self._record, "lost", parts)
            if on_lost is not None:
                on_lost(consumer, parts)
            elif on_revoke is not None:
                on_revoke(consumer, parts)

        super().subscribe(topics, on_assign=_assign, on_revoke=_revoke, on_lost=_lost, **kwargs)

    # poll/consume are the hot path (one call per message): two attribute writes and a clock read.
    # Time spent inside poll does not count against max.poll.interval.ms (librdkafka's rule too).
    def poll(self, *args: Any, **kwargs: Any) -> Any:
        self._in_poll = True
        try:
            return super().poll(*args, **kwargs)
        finally:
            self._last_poll = _monotonic()
            self._in_poll = False

    def consume(self, *args: Any, **kwargs: Any) -> Any:
        self._in_poll = True
        try:
            return super().consume(*args, **kwargs)
        finally:
            self._last_poll = _monotonic()
            self._in_poll = False

    def close(self, *args: Any, **kwargs: Any) -> None:
        if not self._closing:
            self._closing = True
            # The watchdog stops first so no heartbeat follows the leave.
            self._stop.set()
            self._ticker.join(2.0)
            self._safely(self._check_member_id)
            self._safely(self._emit_simple, "leave")
        try:
            super().close(*args, **kwargs)  # calls on_revoke for what is still assigned
        finally:
            self._safely(self._emitter.close, self._close_timeout_s)

    def __exit__(self, *exc: object) -> bool:
        # `with ProbedConsumer(conf) as c:` closes through our close(), so the leave is reported.
        if not self._closing:
            self.close()
        return False

    # ---- internals ----------------------------------------------------------------------------
    def _safely(self, fn: Callable[..., None], *args: Any) -> None:
        """Run probe code; an exception is counted and logged, never raised into the application."""
        try:
            fn(*args)
        except Exception as e:
            self._counts.error(f"{getattr(fn, '__name__', fn)}: {e!r}")
            log.debug("groupscope probe error", exc_info=True)

    def _on_stats(self, raw: str) -> None:
        self._safely(self._take_stats, raw)
        if self._app_stats_cb is not None:
            self._app_stats_cb(raw)

    def _take_stats(self, raw: str) -> None:
        stats = CgrpStats.from_stats_json(raw)
        if stats is not None:
            self._stats = stats
        self._check_member_id()

    def _check_member_id(self) -> None:
        """Emit join the first time librdkafka reports a member id we had not seen.

        Only ever called on the application's thread (inside poll's callbacks, or close): memberid()
        is a request to librdkafka's group thread, and from another thread it was seen to block for
        good after a max.poll.interval.ms expiry (librdkafka 2.16).
        """
        if self._closing and self._member_id is not None:
            return
        try:
            mid = super().memberid()
        except RuntimeError:  # closed
            return
        if not mid:
            return
        with self._lock:
            if mid == self._member_id:
                return
            self._member_id = mid
        self._emitter.emit(ProbeEvent.make(self._who, mid, "join"))

    def _record(self, event: str, parts: list[TopicPartition]) -> None:
        self._check_member_id()
        if self._member_id:
            self._emitter.emit(ProbeEvent.make(self._who, self._member_id, event, partitions=_tps(parts)))

    def _emit_simple(self, event: str, state: str | None = None, stats: CgrpStats | None = None) -> None:
        if self._member_id:
            ev = ProbeEvent.make(self._who, self._member_id, event, state=state, stats=stats)
            self._emitter.emit(ev)

    def _tick_loop(self) -> None:
        next_beat = time.monotonic() + self._beat_s
        stall_after = self._stall_fraction * self._max_poll_ms / 1000.0
        tick = min(0.25, self._beat_s / 4, stall_after / 10)
        while not self._stop.wait(tick):
            now = time.monotonic()
            idle = 0.0 if self._in_poll else now - self._last_poll
            if idle < stall_after:
                self._stalled = False  # polling again: the next stall is reported afresh
            elif not self._stalled:
                self._stalled = True
                self._safely(self._emit_simple, "poll_stall")
            if now >= next_beat:
                next_beat = now + self._beat_s
                stats = self._stats
                self._safely(self._emit_simple, "heartbeat", stats.join_state if stats else None, stats)


def groupscope_probe(conf: dict[str, Any], **probe_options: Any) -> ProbedConsumer:
    """`consumer = groupscope_probe(conf)`: a Consumer with the probe; options as ProbedConsumer's."""
    return ProbedConsumer(conf, **probe_options)
