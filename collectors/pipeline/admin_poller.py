"""The Admin API poller of the live pipeline (in a process of its own, started by the driver:
admin_process.py, which survives librdkafka's aborts): it turns what it sees into evidence
records on a Kafka topic, so its output goes through the same checkpointed stream as everything else
(ordered, replayable). Groups in motion are described more often between polls (admin_hot.py); the
lines it writes are admin_lines.py's; the topic check at start is topic_check.py, the broker-log
shipper broker_log_shipper.py.

- `AdminPoller`: every `admin_poll_interval_s` (default 5 s) lists the groups, describes them, reads
  their committed offsets and the log-end offsets of every partition they commit to or are assigned,
  and produces describe / committed / end-offset JSON lines (the shape of a capture's describe.jsonl;
  the cluster's log-end offsets as one line per topic, `{"ts", "group": "", "end_offsets": [[topic,
  partition, offset]]}`) to the internal admin topic: each only when it changed since it was last sent, or is
  `admin_resend_s` old (admin_changes.py), so an idle fleet of 10,000 groups is not a million lines
  every poll. When `__consumer_offsets` is readable the committed offsets are not sent: the topic
  already carries every commit, first hand, and at 10,000 groups of 100 partitions the copies were as
  many records as the whole backlog being caught up. They are still fetched, to know which partitions
  need log-end offsets (a group without members says so nowhere else). Log-end offsets belong to a
  partition, not to a group: they go one line per topic, whatever number of groups read it (one line
  per group was 10,000 lines of 100 partitions a poll on a lagging fleet, 6 MB every 5 s written,
  read back and parsed again for the same 1,000 numbers); the model stage lends each group the
  histories of the topics it reads (storage/log_ends.py), and `groupscope model` over a capture
  gives each EndOffset to the groups of its topic (coordinator_model/rebuild.py).
  KIP-848 groups' describe lines also carry the broker's ConsumerGroupDescribe as their "broker"
  block (epochs, subscriptions, target assignments: collectors.kafka_protocol). KIP-932 share groups,
  which DescribeConsumerGroups does not describe, get describe lines of type "share" made from the
  broker's ShareGroupDescribe alone (`share_describe_json`: the same "broker" block, members without
  target assignment); a share group commits no offsets, so it is not OffsetFetch'ed: its progress is
  its share-partition start offsets and the broker's lag (DescribeShareGroupOffsets,
  `_share_start_offsets`), sent at every full poll for every share group as "committed" lines marked
  `"source": "share_start_offsets"` (`share_offsets_line`: the position the broker's lag implies,
  log-end minus lag, so the document's lag is kafka-share-groups.sh's LAG), whether or not
  `__consumer_offsets` is readable (it holds no share-group progress); its log-end offsets are fetched
  for the partitions its members hold and those its start offsets name. Committed offsets
  come from collectors.kafka_protocol too (OffsetFetch v8+, hundreds of groups a request), not from
  librdkafka's list_consumer_group_offsets: one group a request, and librdkafka 2.16 crashes the
  process when a coordinator moves or loads during that call (confluentinc/librdkafka#5040).
  Broker unreachable: it retries with backoff, records the failure in `gs:sources`, and groups keep
  their last refresh time, so the UI shows how stale they are.
- Delivery: every record has a delivery report. A line the broker did not take (refused, timed out,
  the topic gone) is counted by reason (`delivery_failures`), shown in the "admin" source status
  (`gs:sources`: not ok while lines are being lost, with the reasons) and taken back from the change
  filter, so it is sent again at the next poll. A line larger than a record may be
  (`max_message_bytes`: the producer's message.max.bytes, and lowered by halves when the broker
  refuses records as too large: the topic's max.message.bytes can be smaller) never stops the poll:
  a topic's end offsets, and a group's committed offsets where they do not stand alone (`_parts`), go in
  several lines that say together what the one line said; a describe, which cannot be cut, is
  dropped, counted (`too_large`) and logged with the group and its size.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from collectors.kafka_clients import ErrorWatch, client_config, failure_log

if TYPE_CHECKING:
    from collectors.kafka_protocol import KafkaProtocolClient

from collectors.pipeline.admin_changes import ChangeFilter, as_resend
from collectors.pipeline.admin_hot import HotGroups
from collectors.pipeline.admin_lines import (
    AUTHORIZATION_FAILED,
    classic_describe_json,
    denial,
    denied_line,
    describe_json,
    enum_name,
    share_describe_json,
    share_offsets_line,
    streams_describe_json,
)
from collectors.pipeline.change_hints import ChangeHints
from collectors.pipeline.loop import Loop
from collectors.pipeline.topic_check import connect_failure
from collectors.pipeline.wanted_ends import Wanted

log = logging.getLogger("groupscope.admin")
# A group's describe is sent at every poll for this long after it changed (admin_changes.py: "hot").
DESCRIBE_HOT_MS = 30_000
# What a record costs in a record batch beside its key and value (the batch's 61-byte header, the
# record's lengths and deltas): a line of a record that fits the limit with this margin is sent whole.
RECORD_OVERHEAD = 128
# librdkafka's message.max.bytes, the largest record the producer takes by default (a topic's
# max.message.bytes is 1 MiB + 12 by default: a record the producer takes, the broker takes)
DEFAULT_MESSAGE_BYTES = 1_000_000
MIN_MESSAGE_BYTES = 1024  # learned limits (halved on refusals) stop here
# Delivery errors of a record, or of its batch, larger than the broker or the producer takes.
_TOO_LARGE = frozenset({"MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"})


def _now_ms() -> int:
    return int(time.time() * 1000)


def _reason(e: Any) -> str:
    """A delivery failure's reason: the KafkaError's name (MSG_SIZE_TOO_LARGE, _MSG_TIMED_OUT, ...)."""
    from confluent_kafka import KafkaError

    err = e.args[0] if isinstance(e, Exception) and e.args else e
    return err.name() if isinstance(err, KafkaError) else type(e).__name__


def _message_limit(cfg: Any) -> int:
    """The largest record the Admin poller writes at first: the producer's message.max.bytes."""
    try:
        return max(MIN_MESSAGE_BYTES, int((getattr(cfg, "kafka", None) or {}).get("message.max.bytes")))
    except (TypeError, ValueError):
        return DEFAULT_MESSAGE_BYTES


def _kind(line: dict[str, Any]) -> str:
    """What an admin line is, in words (for the log and the status)."""
    if "members" in line:
        return "describe"
    if "denied" in line:
        return "denied"
    if "end_offsets" in line:
        return "end offsets"
    return "committed offsets" if "committed" in line else "other"


HOT_S_PER_GROUP = 0.001  # at least this much of the hot interval per hot group (see hot_interval)


def hot_interval(configured_s: float, hot_groups: int) -> float:
    """How often the hot groups are described: `admin_hot_interval_s`, stretched by a millisecond a
    hot group beyond a hundred, so the poller describes at most about a thousand groups a second.
    A few groups in motion are what the short interval is for (a rebalance's phases timed within
    50 ms); when thousands are (a storm across the fleet, the hints of a catch-up), describing each
    every tenth of a second took the CPU the catch-up needed (benchmarks/RESULTS.md)."""
    return max(configured_s, hot_groups * HOT_S_PER_GROUP)


def _bucket_phase(buckets: int, interval_ms: int) -> Callable[[Any], int]:
    """A change-filter key's resend phase: its group's state bucket's place in the interval, so the
    resends of one bucket's groups come in the same poll. Keys are (kind, group, ...)."""
    from collectors.pipeline.rows import bucket_of

    def phase(key: Any) -> int:
        group = key[1] if isinstance(key, tuple) and len(key) > 1 and isinstance(key[1], str) else str(key)
        return bucket_of(group, buckets) * interval_ms // buckets

    return phase


def bootstrap_unreachable(conf: Any, timeout_s: float = 2.0) -> str | None:
    """None when a TCP connection to one of the bootstrap servers opens (not a Kafka request: no
    librdkafka client is involved), else why none does."""
    import socket

    from collectors.kafka_protocol.connection import ConfigError, parse_servers

    try:
        servers = parse_servers(conf.get("bootstrap.servers", ""))
    except (ConfigError, ValueError):
        servers = []
    tried = []
    for host, port in servers:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return None
        except OSError as e:
            tried.append(f"{host}:{port}: {e}")
    return "no bootstrap server accepts a connection (" + "; ".join(tried or ["none configured"]) + ")"


class AdminPoller(Loop):
    def __init__(
        self,
        cfg: Any,
        store: Any,
        describe_chunk: int = 20,
        offsets_in_flight: int = 200,
        offsets_readable: bool = False,
        refill: bool = False,
        provisional: Any = None,
    ) -> None:
        super().__init__("groupscope-admin-poller")
        self.cfg = cfg
        # the first poll's answers, also written as provisional documents while Spark starts
        # (provisional_heads.ProvisionalHeads; None: not)
        self.provisional = provisional
        # Redis lost what the collector wrote (its data epoch is gone): send everything again, with
        # every group's committed offsets, which the pipeline keeps in Redis alone (storage/
        # group_offsets.py). At start: when the checkpoint resumes over a Redis without the epoch.
        self._refill = refill
        # __consumer_offsets is read by the pipeline: committed offsets are not sent again from here
        self.offsets_readable = offsets_readable
        # group -> the partitions it has committed offsets on (when they are not sent, they are only
        # fetched to know where log-end offsets are wanted, and not at every poll: see poll_once)
        self._committed_tps: dict[str, frozenset[tuple[str, int]]] = {}
        self._committed_at: dict[str, int] = {}  # group -> when they were last fetched (ms)
        # each group's committed partitions fetched again at least this often; spread over the
        # interval by the first fetches' times
        self.committed_refresh_ms = 600_000
        # group -> (state ListGroups gave, when it was last described, its members' partitions then):
        # a steady group is not described at every poll (see `_to_describe`)
        self._listed: dict[str, tuple[str, int, frozenset[tuple[str, int]]]] = {}
        self.described_groups = 0  # groups described in all (benchmarks read it)
        self.committed_per_poll = 2_000  # OffsetFetch is for log-end offsets only here: see poll_once
        self.store = store
        self.describe_chunk = describe_chunk
        self.offsets_in_flight = max(1, offsets_in_flight)
        self.polls = 0
        self.failures = 0
        self._kip848_failing = False  # ConsumerGroupDescribe failed last time (warned once already)
        # the kinds whose describe (ShareGroupDescribe, StreamsGroupDescribe) failed last time (warned
        # once already)
        self._modern_failing: set[str] = set()
        self._share_offsets_failing = False  # DescribeShareGroupOffsets failed last time (warned once)
        self._share_groups: set[str] = set()  # the groups ListGroups last gave as share groups
        self._streams_groups: set[str] = set()  # and as KIP-1071 streams groups
        self._types: dict[str, str] = {}  # group -> its type as ListGroups last gave it ("classic", ...)
        # Kept across polls (its connections too); made again when it failed or cfg.kafka changed.
        self._protocol: KafkaProtocolClient | None = None
        self._protocol_conf: dict[str, Any] | None = None
        self._offsets_failing = False  # OffsetFetch failed last time (warned once already)
        self._protocol_unusable = False  # settings it cannot use: librdkafka fetches the offsets
        self._ends_refused: set[str] = set()  # groups told some of their topics' end offsets are refused
        # Answers are sent on when they changed, and again every admin_resend_s (admin_changes.py).
        # A group's answers are resent at the phase of its state bucket (admin_changes.py).
        resend_ms = int(getattr(cfg, "admin_resend_s", 60.0) * 1000)
        buckets = int(getattr(cfg, "state_buckets", 256) or 256)
        self.changes = ChangeFilter(resend_ms, phase_of=_bucket_phase(buckets, resend_ms))
        self.sent = 0  # admin lines produced, and held back as unchanged (benchmarks read them)
        self.held = 0
        # Groups in motion are described every admin_hot_interval_s between full polls (admin_hot.py);
        # the offsets topic's records say which groups just moved (change_hints.py)
        self.hot = HotGroups()
        url = getattr(cfg, "redis_url", None)
        self.change_hints = ChangeHints(url, getattr(cfg, "prefix", "gs")) if url else None
        self._hints_seen = _now_ms()  # hints of records written before the poller started are history
        self.hot_polls = 0  # describes of hot groups in all (benchmarks read it)
        # Delivery (see the module's docstring): reason -> records not delivered, since start and since
        # the source status last said so; lines too large to send and that cannot be cut, by kind;
        # lines sent in parts; the largest record written now (halved when the broker refuses one as
        # too large: `_fit_producer`), and the batch size of the producer `run` writes with.
        self.delivery_failures: collections.Counter[str] = collections.Counter()
        self._failed_since_status: collections.Counter[str] = collections.Counter()
        self.too_large: collections.Counter[str] = collections.Counter()
        self.split_lines = 0
        self.max_message_bytes = _message_limit(cfg)
        self._size_refused = False  # a record refused as too large since the last `_fit_producer`
        self._producer: Any = None
        self._producer_batch = 0
        # groups whose committed offsets were sent only to refill Redis and not delivered (where the
        # offsets topic is read, committed offsets are sent on a refill alone): sent at the next poll
        self._committed_retry: set[str] = set()

    def stop(self) -> None:
        super().stop()
        if not self.is_alive():  # never started (poll_once called directly): nobody else will close it
            self._close_protocol()

    def run(self) -> None:
        from confluent_kafka.admin import AdminClient

        watch = ErrorWatch()
        admin = AdminClient(client_config(self.cfg.kafka, watch))
        delay = self.cfg.admin_poll_interval_s
        failing = False
        while not self._stop_evt.is_set():
            t0 = time.monotonic()
            try:
                if failing:
                    # librdkafka can abort the whole process (an assertion on its admin requests'
                    # timed-out responses, confluentinc/librdkafka#4605) when an Admin client keeps
                    # asking a broker that went away: while the last poll failed, no request goes
                    # out before a bootstrap server accepts a connection, and it goes out on a new
                    # client (the old one, its requests timed out, is dropped). That makes the abort
                    # rarer; admin_process.py starts the poller's process again when it happens.
                    unreachable = bootstrap_unreachable(self.cfg.kafka)
                    if unreachable is not None:
                        raise ConnectionError(unreachable)
                    admin = AdminClient(client_config(self.cfg.kafka, watch))
                    failing = False
                admin.poll(0)  # serve its log lines and error callbacks (they queue until polled)
                producer = self._fit_producer(watch)
                n = self.poll_once(admin, producer)
                self.polls += 1
                delay = self.cfg.admin_poll_interval_s
                failed, self._failed_since_status = self._failed_since_status, collections.Counter()
                with contextlib.suppress(Exception):
                    detail = f"{n} groups described{self.delivery_note(failed)}"
                    self.store.set_source_status("admin", not failed, detail[:600], _now_ms())
            except Exception as e:
                self.failures += 1
                failing = True
                delay = min(max(delay, 1.0) * 2, 60.0)  # backoff while the broker is unreachable
                with contextlib.suppress(Exception):
                    admin.poll(0)  # serve the error callback before saying why
                why = connect_failure(self.cfg.kafka, watch, e)
                # the same reason once a minute at most, whoever found it first, with the next delay
                failure_log.warning(
                    "admin poll failed (next try in %.0f s): %s", delay, why, extra={"reason": why}
                )
                failed, self._failed_since_status = self._failed_since_status, collections.Counter()
                with contextlib.suppress(Exception):
                    detail = f"{why}{self.delivery_note(failed)}"
                    self.store.set_source_status("admin", False, detail[:600], _now_ms())
                self.hot.forget(set())  # no fast describes against a cluster that does not answer
            self._between_polls(admin, watch, t0 + delay)
        self._close_protocol()
        if self._producer is not None:
            with contextlib.suppress(Exception):
                self._producer.flush(5)

    def _fit_producer(self, watch: ErrorWatch | None = None) -> Any:
        """The producer `run` writes with, made at first and made again (the old one flushed) when
        the broker refused a record as too large since the last call: records, and the producer's
        batches (batch.size), are kept under half the size from then on, down to MIN_MESSAGE_BYTES.
        A topic's max.message.bytes can be below the producer's message.max.bytes, and librdkafka
        does not split a refused batch: the lines of a refused record are sent again (the change
        filter took them back), in parts where they are larger than the new limit."""
        from confluent_kafka import Producer

        self._learn_size()
        if self._producer is not None and self._producer_batch == self.max_message_bytes:
            return self._producer
        if self._producer is not None:
            with contextlib.suppress(Exception):
                self._producer.flush(5)  # its reports: what it did not deliver is sent again
        try:
            batch = min(int(self.cfg.kafka.get("batch.size", self.max_message_bytes)), self.max_message_bytes)
        except (TypeError, ValueError):
            batch = self.max_message_bytes
        self._producer = Producer(
            client_config(
                self.cfg.kafka,
                watch,
                **{"linger.ms": 20, "message.timeout.ms": 30000, "batch.size": max(1, batch)},
            )
        )
        self._producer_batch = self.max_message_bytes
        return self._producer

    def _learn_size(self) -> None:
        """Halve `max_message_bytes` (down to MIN_MESSAGE_BYTES) when a record was refused as too
        large since the last call: once per poll, as the records of one refused batch all are."""
        if not self._size_refused:
            return
        self._size_refused = False
        smaller = max(MIN_MESSAGE_BYTES, self.max_message_bytes // 2)
        if smaller < self.max_message_bytes:
            log.warning(
                "the broker refused records to %s as too large: records and batches of at most %d "
                "bytes from now on (%d before; the topic's max.message.bytes is smaller)",
                self.cfg.admin_topic,
                smaller,
                self.max_message_bytes,
            )
            self.max_message_bytes = smaller

    def delivery_note(self, failed: collections.Counter[str] | None = None) -> str:
        """What the source status says of the lines: those not delivered since it last said so
        (`failed`, by reason: they are sent again), and since start; lines too large to send; lines
        sent in parts. "" when there is nothing to say."""

        def reasons(c: collections.Counter[str]) -> str:
            return ", ".join(f"{r} {n}" for r, n in c.most_common(4))

        out = []
        if failed:
            out.append(
                f"{sum(failed.values())} records not delivered to {self.cfg.admin_topic} since the last "
                f"poll ({reasons(failed)}), sent again"
            )
        if self.delivery_failures:
            out.append(f"not delivered since start: {reasons(self.delivery_failures)}")
        if self.too_large:
            out.append(
                f"lines over {self.max_message_bytes} bytes dropped since start: {reasons(self.too_large)}"
            )
        if self.split_lines:
            out.append(f"{self.split_lines} lines sent in parts")
        return "".join(f"; {x}" for x in out)

    def _between_polls(self, admin: Any, watch: ErrorWatch, next_poll: float) -> None:
        """Wait for the next full poll (monotonic `next_poll`), describing the hot groups meanwhile."""
        hot_s = float(getattr(self.cfg, "admin_hot_interval_s", 0.1) or 0)
        while not self._stop_evt.is_set():
            left = next_poll - time.monotonic()
            if left <= 0:
                return
            self.take_change_hints()
            if hot_s <= 0 or not len(self.hot):
                self._stop_evt.wait(min(left, hot_s) if hot_s > 0 else left)
                continue
            t0 = time.monotonic()
            every = hot_interval(hot_s, len(self.hot))
            try:
                self.poll_hot(admin, self._fit_producer(watch))
            except Exception as e:  # the next full poll says what is wrong, and retries
                log.debug("hot describe failed: %s", e)
            self._stop_evt.wait(max(0.0, min(next_poll - time.monotonic(), every - (time.monotonic() - t0))))

    def take_change_hints(self) -> int:
        """Describe fast the groups whose records the pipeline just read showed moving (a new
        generation, a group epoch: change_hints.py), as a changed describe would; how many."""
        if self.change_hints is None:
            return 0
        hints = self.change_hints.since(self._hints_seen)
        now = _now_ms()
        for g, ts in hints:
            self.hot.changed(g, now)
            # its describes go on to the model, unchanged or not (see _send_describe)
            self.changes.mark_changed(("describe", g), now)
            self._hints_seen = max(self._hints_seen, ts)
        return len(hints)

    def poll_hot(self, admin: Any, producer: Any, timeout_s: float = 5.0) -> int:
        """Describe the groups in motion (self.hot) and send on what changed; how many were described."""
        self._learn_size()
        ts = _now_ms()
        due = self.hot.due(ts)
        groups = [g for g in due if g not in self._share_groups and g not in self._streams_groups]
        share_docs = self._describe_share(
            [g for g in due if g in self._share_groups], producer, ts, timeout_s
        )
        share_docs.update(
            self._describe_streams([g for g in due if g in self._streams_groups], producer, ts, timeout_s)
        )
        for g, doc in share_docs.items():
            self._send_describe(producer, g, doc, ts)
        kip848: list[dict[str, Any]] = []
        lines, refused = self._describe_classic(groups, timeout_s)
        for g, doc in lines.items():
            self._send_describe(producer, g, doc, ts)
        for g, why in refused.items():
            self._send(producer, ("denied", g, "describe"), g, denied_line(ts, g, "describe", why), ts)
        groups = [g for g in groups if g not in lines and g not in refused]
        # every request in flight at once: a hot poll takes one round trip, not one per chunk
        requests = [
            admin.describe_consumer_groups(groups[i : i + self.describe_chunk], request_timeout=timeout_s)
            for i in range(0, len(groups), self.describe_chunk)
        ]
        for futs in requests:
            for g, f in futs.items():
                try:
                    # stamped when answered: a snapshot shows what the coordinator wrote up to then,
                    # and must not sort before those records (evidence_order.py)
                    doc = describe_json(f.result(timeout_s + 5), _now_ms())
                except Exception as e:  # one group's error never stops the poll
                    log.debug("describe %s: %s", g, e)
                    if (why := denial(e)) is not None:
                        self._send(
                            producer, ("denied", g, "describe"), g, denied_line(ts, g, "describe", why), ts
                        )
                    continue
                if doc["type"] == "consumer":
                    kip848.append(doc)
                else:
                    self._send_describe(producer, g, doc, ts)
        self._add_broker_blocks(kip848, timeout_s)
        for doc in kip848:
            self._send_describe(producer, doc["group"], doc, ts)
        producer.poll(0)
        self.hot_polls += len(due)
        return len(due)

    def _send(
        self, producer: Any, key: tuple, group: str, line: dict[str, Any], ts: int, hot_ms: int = 0
    ) -> str | None:
        """Produce `line` when the change filter says it is due (admin_changes.py); its verdict."""
        before = self.changes.entry(key)
        why = self.changes.verdict(key, {k: v for k, v in line.items() if k != "ts"}, ts, hot_ms)
        if why is None:
            self.held += 1
            return None
        self._produce(producer, group, line, why, (key, before, self.changes.entry(key)))
        return why

    def _produce(
        self, producer: Any, group: str, line: dict[str, Any], why: str, undo: tuple | None = None
    ) -> None:
        """Produce `line`, in parts when it is larger than a record may be (`_parts`), or not at all
        when it cannot be cut (counted and logged). `undo`: (change-filter key, its entry before
        the verdict, after it), to take the send back when a record of it is not delivered."""
        if why == "resend":
            # the same answer as last sent: the model stage only marks the group refreshed
            line = as_resend(line)
        key = group.encode()
        value = json.dumps(line).encode()
        self.sent += 1
        room = self.max_message_bytes - len(key) - RECORD_OVERHEAD
        if len(value) <= room:
            self._write(producer, key, value, undo)
            return
        parts = self._parts(line, room)
        if parts is None:
            kind = _kind(line)
            self.too_large[kind] += 1
            log.error(
                "the %s line of group %r is %d bytes, more than a record to %s may have here (%d "
                "bytes with its key): not sent; polling goes on",
                kind,
                group,
                len(value),
                self.cfg.admin_topic,
                self.max_message_bytes,
            )
            return
        self.split_lines += 1
        for part in parts:
            self._write(producer, key, part, undo)

    def _parts(self, line: dict[str, Any], room: int) -> list[bytes] | None:
        """`line` cut into lines of at most `room` bytes that say together what it says, or None when
        it cannot be. The model takes a group's log-end offsets partition by partition (route.py
        merges them by time), so an end-offsets line is cut anywhere; committed offsets too, but only
        where they are not the group's only word on its offsets: a "committed" line read alone
        (the offsets topic not read, or a share group's start offsets) drops every partition it does
        not list (coordinator_model/offsets/store.py, `snapshot(drop_unseen)`), so its parts would
        keep only the last one's. A describe (one group's members) is one answer, never cut."""
        from coordinator_model.evidence import SHARE_START_OFFSETS

        if "end_offsets" in line:
            field = "end_offsets"
        elif "committed" in line and self.offsets_readable and line.get("source") != SHARE_START_OFFSETS:
            field = "committed"
        else:
            return None
        rows = line[field]
        empty = len(json.dumps({k: ([] if k == field else v) for k, v in line.items()}).encode())
        chunks: list[list[Any]] = []
        size = room + 1
        for row in rows:
            n = len(json.dumps(row).encode()) + 2  # and its ", "
            if empty + n > room:
                return None  # one row alone is too large (a topic name of nearly `room` bytes)
            if size + n > room:
                chunks.append([])
                size = empty
            chunks[-1].append(row)
            size += n
        if len(chunks) < 2:
            return None
        return [json.dumps({k: (c if k == field else v) for k, v in line.items()}).encode() for c in chunks]

    def _write(self, producer: Any, key: bytes, value: bytes, undo: tuple | None) -> None:
        """Produce one record to the admin topic, its delivery reported to `_delivered`. A full
        queue is served for a moment, once; a record the producer refuses outright is a failed
        delivery."""
        for attempt in range(2):
            try:
                producer.produce(
                    self.cfg.admin_topic,
                    key=key,
                    value=value,
                    on_delivery=functools.partial(self._delivered, undo),
                )
                return
            except BufferError as e:  # the producer's queue is full: let it send, then once more
                if attempt:
                    self._not_delivered("QUEUE_FULL", undo)
                    log.debug("admin record not queued: %s", e)
                    return
                producer.poll(1.0)
            except Exception as e:  # e.g. larger than the producer's message.max.bytes
                self._not_delivered(_reason(e), undo)
                log.debug("admin record not produced: %s", e)
                return

    def _delivered(self, undo: tuple | None, err: Any, _msg: Any) -> None:
        """A record's delivery report (from the producer's poll or flush, on this thread)."""
        if err is None:
            return
        try:
            self._not_delivered(_reason(err), undo)
            log.debug("admin record not delivered: %s", err)
        except Exception:  # never out of the producer's poll
            log.exception("admin delivery report")

    def _not_delivered(self, reason: str, undo: tuple | None) -> None:
        """Count a record not delivered, and take its line back from the change filter (and what the
        poller keeps of it), so it is sent again at the next poll."""
        self.delivery_failures[reason] += 1
        self._failed_since_status[reason] += 1
        if reason in _TOO_LARGE:
            self._size_refused = True
        if undo is None:
            return
        key, before, sent = undo
        if not self.changes.unsend(key, before, sent):
            return  # sent again since, or forgotten: that send decides
        kind, group = key[0], key[1]
        if kind == "describe":
            self._listed.pop(group, None)  # described at the next poll, even a steady group
        elif kind == "committed" and self.offsets_readable:
            self._committed_retry.add(group)  # sent on a refill alone: fetched and sent again

    @staticmethod
    def _log_ends_lines(ends: dict[tuple[str, int], int], ts: int) -> dict[str, dict[str, Any]]:
        """The cluster's log-end offsets as one line per topic (group ""), by topic."""
        rows: dict[str, list[list[Any]]] = {}
        for (t, p), off in sorted(ends.items()):
            rows.setdefault(t, []).append([t, p, off])
        return {t: {"ts": ts, "group": "", "end_offsets": r} for t, r in rows.items()}

    def _send_ends(
        self,
        wanted: Wanted,
        ends: dict[tuple[str, int], int],
        refused: dict[str, str],
        ts: int,
        send: Callable[..., None],
    ) -> None:
        """The log-end offsets of every partition some group is `wanted` for, one line per topic
        through the change filter (`send`; a topic whose partitions did not move is held until its
        resend comes round), and each group's denied line when an ACL withholds some of its topics."""
        for t, line in self._log_ends_lines(ends, ts).items():
            send(("log_ends", t), "", line)
        if not refused and not self._ends_refused:
            return
        for g in wanted.groups():
            hidden = sorted({t for t, _ in wanted.of(g) if t in refused}) if refused else []
            if hidden:
                why = f"{refused[hidden[0]]} (topics: {', '.join(hidden)})"
                send(("denied", g, "end_offsets"), g, denied_line(ts, g, "end_offsets", why))
                self._ends_refused.add(g)
            elif g in self._ends_refused:  # allowed again: the refusal is over
                send(("denied", g, "end_offsets"), g, denied_line(ts, g, "end_offsets", ""))
                self._ends_refused.discard(g)

    def _send_describe(self, producer: Any, group: str, doc: dict[str, Any], ts: int) -> str | None:
        """`_send` a describe, and note whether the group is in motion (admin_hot.py)."""
        why = self._send(producer, ("describe", group), group, doc, ts, DESCRIBE_HOT_MS)
        # a group that appears after the first poll is new to the cluster (it may well rebalance again
        # at once); at the first poll every group is new, and none is hot for it
        changed = why == "changed" or (why == "new" and self.polls > 0)
        if why == "new" and changed:
            # and so are its next describes, each sent on: the model bounds when its next rebalance
            # began by the last describe that saw it Stable (classic/rebalances.py, unseen_start)
            self.changes.mark_changed(("describe", group), ts)
        self.hot.saw(group, str(doc.get("state") or ""), changed, ts)
        return why

    def poll_once(self, admin: Any, producer: Any, timeout_s: float = 10.0) -> int:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        self._learn_size()
        # Raises when no broker answers (list_consumer_groups itself would just return nothing).
        admin.list_topics(timeout=timeout_s)
        if self._redis_lost_data():
            self._refill = True
        refill = self._refill
        if refill:
            self.forget_sent()
        listing = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout_s + 5)
        if listing.errors and not listing.valid:
            raise RuntimeError(f"list groups: {listing.errors[0]}")
        # share groups (KIP-932) are not consumer groups to DescribeConsumerGroups (nor to OffsetFetch:
        # they commit no offsets): ShareGroupDescribe describes them (`_describe_share`)
        is_share = {
            g.group_id: enum_name(getattr(g, "type", None)).lower() == "share"
            for g in listing.valid
            if g.group_id
        }
        groups = sorted(g for g, share in is_share.items() if not share)
        self._types = {
            g.group_id: enum_name(getattr(g, "type", None)).lower() for g in listing.valid if g.group_id
        }
        listed_states = {g.group_id: enum_name(g.state) for g in listing.valid if g.group_id}
        # librdkafka (2.16) lists no share groups, nor streams groups as such: ListGroups v5 with
        # TypesFilter ["share", "streams"] does
        share_states, streams_states = self._list_typed_groups(timeout_s)
        # a streams group is described by StreamsGroupDescribe (`_describe_streams`), not by
        # DescribeGroups; its committed offsets are fetched as any group's
        self._streams_groups = set(streams_states)
        groups = sorted(set(groups) | self._streams_groups)
        for g in self._streams_groups:
            self._types[g] = "streams"
        listed_states.update(streams_states)
        share_groups = sorted({g for g, share in is_share.items() if share} | set(share_states))
        self._share_groups = set(share_groups)
        listed_states.update(share_states)
        ts = _now_ms()
        topic = self.cfg.admin_topic
        wanted = Wanted()
        polled: set[Any] = set()

        sent_describe: set[str] = set()
        first_describes: list[dict[str, Any]] | None = [] if self.provisional and not self.polls else None

        def send(key: tuple, group: str, line: dict[str, Any], hot_ms: int = 0) -> None:
            polled.add(key)
            if first_describes is not None and key[0] == "describe":
                first_describes.append(line)
            if key[0] != "describe":
                self._send(producer, key, group, line, ts, hot_ms)
            elif self._send_describe(producer, group, line, ts) not in (None, "resend"):
                sent_describe.add(group)  # it changed (or is new, or hot)

        def take(g: str, doc: dict[str, Any]) -> None:
            if doc["type"] == "consumer":
                kip848.append(doc)  # produced below, with the broker's epochs added
            else:
                send(("describe", g), g, doc, DESCRIBE_HOT_MS)
            assigned = frozenset((t, p) for m in doc["members"] for t, p in m["assignment"])
            wanted.add(g, assigned)
            self._listed[g] = (listed_states.get(g, ""), ts, assigned)

        def described(futs: dict[str, Any]) -> None:
            for g, f in futs.items():
                try:
                    d = f.result(timeout_s + 5)
                except Exception as e:  # one group's error never stops the poll
                    log.debug("describe %s: %s", g, e)
                    if (why := denial(e)) is not None:
                        send(("denied", g, "describe"), g, denied_line(ts, g, "describe", why))
                    continue
                take(g, describe_json(d, _now_ms()))  # when answered: see poll_hot
            producer.poll(0)

        # describe requests of `describe_chunk` groups, several in flight at once
        kip848: list[dict[str, Any]] = []
        chunks: collections.deque[dict[str, Any]] = collections.deque()
        to_describe = self._to_describe(groups, listed_states, ts)
        self.described_groups += len(to_describe)
        for g in groups:
            if g not in to_describe:  # not described now: its last answer stands (and is kept)
                polled.add(("describe", g))
                wanted.add(g, self._listed[g][2])
        for g in [g for g in self._listed if g not in listed_states]:
            del self._listed[g]
        streams_due = [g for g in groups if g in to_describe and g in self._streams_groups]
        ordered = [g for g in groups if g in to_describe and g not in self._streams_groups]
        # classic groups many a request (DescribeGroups); KIP-848 groups and what that could not
        # describe through librdkafka, one group a request
        lines, refused = self._describe_classic(ordered, timeout_s)
        for g, doc in lines.items():
            take(g, doc)
        for g, why in refused.items():
            send(("denied", g, "describe"), g, denied_line(ts, g, "describe", why))
        producer.poll(0)
        ordered = [g for g in ordered if g not in lines and g not in refused]
        for i in range(0, len(ordered), self.describe_chunk):
            chunk = ordered[i : i + self.describe_chunk]
            chunks.append(admin.describe_consumer_groups(chunk, request_timeout=timeout_s))
            if len(chunks) * self.describe_chunk >= self.offsets_in_flight:
                described(chunks.popleft())
        while chunks:
            described(chunks.popleft())
        self._add_broker_blocks(kip848, timeout_s)
        for doc in kip848:
            send(("describe", doc["group"]), doc["group"], doc, DESCRIBE_HOT_MS)
        for g, doc in self._describe_streams(streams_due, producer, ts, timeout_s).items():
            take(g, doc)
        share_due = self._to_describe(share_groups, listed_states, ts)
        self.described_groups += len(share_due)
        for g in share_groups:
            if g not in share_due:
                polled.add(("describe", g))
                wanted.add(g, self._listed[g][2])
        polled.update(("denied", g, "describe") for g in share_due)  # a refusal is sent from there
        for g, doc in self._describe_share(sorted(share_due), producer, ts, timeout_s).items():
            send(("describe", g), g, doc, DESCRIBE_HOT_MS)
            assigned = frozenset((t, p) for m in doc["members"] for t, p in m["assignment"])
            wanted.add(g, assigned)
            self._listed[g] = (listed_states.get(g, ""), ts, assigned)
        # a share group's progress (__consumer_offsets has none of it): every share group, every poll
        polled.update(("denied", g, "offsets") for g in share_groups)  # a refusal is sent from there
        share_offsets = self._share_start_offsets(share_groups, producer, ts, timeout_s)
        for g, offsets in share_offsets.items():  # sent with the log-end offsets, below
            wanted.add(g, [(t, p) for t, p, _, _ in offsets])
        producer.poll(0)
        if first_describes is not None:
            self.provisional.describes(first_describes)
        if self.offsets_readable:
            # Committed offsets only say where log-end offsets are wanted (the offsets topic has the
            # commits themselves), and a group's partitions rarely change: they are fetched for the
            # groups first seen, those whose describe changed, and the others every
            # `committed_refresh_ms` (a group without members that starts committing to another
            # topic says so nowhere else), not for all at every poll. (OffsetFetch answers for
            # 10,000 groups of 100 partitions took 11 s of the poller's CPU to read: longer than the
            # poll interval; fetched at every describe resend, once a minute, they were a quarter of
            # a core on a busy fleet.)
            stale = ts - self.committed_refresh_ms
            need = [
                g
                for g in groups
                if g not in self._committed_tps or g in sent_describe or self._committed_at.get(g, 0) <= stale
            ]
            # at most so many a poll (first sight of a big fleet: they are spread over a few polls),
            # but all at the first: it runs while Spark starts, and its log-end offsets are then in
            # the catch-up's first batch with every group's commits (run_pipeline)
            if self.polls:
                need = need[: self.committed_per_poll]
            if refill:
                need = list(groups)
            # a refill's committed offsets that were not delivered: sent again now
            retry, self._committed_retry = self._committed_retry & set(groups), set()
            need += sorted(retry - set(need))
            fetched = self._fetch_committed(admin, need, timeout_s)[0]
            self._committed_retry |= retry - fetched.keys()  # not fetched now: the next poll
            for g, committed in fetched.items():
                self._committed_tps[g] = frozenset((t, p) for t, p, _ in committed)
                self._committed_at[g] = ts
                if refill or g in retry:  # the offsets topic's commits are in the model's past
                    send(("committed", g), g, {"ts": ts, "group": g, "committed": committed})
                    producer.poll(0)
            known = set(groups)
            for g in [g for g in self._committed_tps if g not in known]:
                del self._committed_tps[g]
                self._committed_at.pop(g, None)
            for g in groups:
                wanted.add(g, self._committed_tps.get(g, ()))
        else:
            fetched, refused_groups = self._fetch_committed(admin, groups, timeout_s)
            for g, committed in fetched.items():
                send(("committed", g), g, {"ts": ts, "group": g, "committed": committed})
                wanted.add(g, [(t, p) for t, p, _ in committed])
                producer.poll(0)
            for g, why in refused_groups.items():
                send(("denied", g, "offsets"), g, denied_line(ts, g, "offsets", why))
        if first_describes is not None:
            self.provisional.committed(fetched)
            self.provisional.done()
        all_tps = wanted.partitions()
        ends: dict[tuple[str, int], int] = {}
        refused: dict[str, str] = {}  # topic -> why its end offsets were refused
        if all_tps:
            futs = admin.list_offsets(
                {TopicPartition(t, p): OffsetSpec.latest() for t, p in all_tps}, request_timeout=timeout_s
            )
            for tp, f in futs.items():
                try:
                    ends[(tp.topic, tp.partition)] = int(f.result(timeout_s + 5).offset)
                except Exception as e:  # one partition's error never stops the poll
                    if (why := denial(e)) is not None:
                        refused[tp.topic] = why  # an ACL withholds the topic: its groups are told
        for g, offsets in share_offsets.items():
            send(("committed", g), g, share_offsets_line(g, offsets, ends, ts))
        self._send_ends(wanted, ends, refused, ts, send)
        producer.poll(0)
        self.changes.forget(polled)  # groups and partitions gone since: their next answer is new
        self.hot.forget(set(groups) | set(share_groups))
        # The stream's clock: one record per poll even when nothing changed, so the per-group timers
        # run at least every poll interval (the pipeline runs no empty micro-batches in between).
        self._write(producer, b"", json.dumps({"ts": ts, "clock": True}).encode(), None)
        left = producer.flush(timeout_s)
        if left:
            raise RuntimeError(f"{left} admin records not delivered to {topic}")
        self._refill = False  # sent whole: a failed poll leaves it for the next
        return len(groups) + len(share_groups)

    def _redis_lost_data(self) -> bool:
        """Whether Redis lost what the collector wrote since the last poll (its data epoch is gone); a
        new epoch is set at once, which tells the model stage to write every group again."""
        if self.store is None or self.store.data_epoch() is not None:
            return False
        self.store.new_data_epoch()
        log.warning("Redis lost the collector's data: every group is sent and written again")
        return True

    def forget_sent(self) -> None:
        """Send everything at the next poll, as at the first one (what was sent, when each group was
        last described and its committed partitions are forgotten)."""
        self.changes.forget(set())
        self._listed.clear()
        self._committed_tps.clear()

    def _to_describe(self, groups: list[str], listed: dict[str, str], now_ms: int) -> set[str]:
        """The groups to describe this poll: those first seen, whose state in ListGroups changed or
        is not a steady one (Stable, Empty, a streams group NotReady), whose last describe changed
        within DESCRIBE_HOT_MS, and the rest once per `admin_resend_s` (at the phase of their state
        bucket). The poll's cost then
        follows the number of groups that change, not the size of the fleet: ListGroups answers for
        every group in one request per broker, a describe of 10,000 steady groups every 5 s took 3-5 s
        of CPU."""
        out = set()
        for g in groups:
            last = self._listed.get(g)
            state = listed.get(g, "")
            if (
                last is None
                or last[0] != state
                or state not in ("STABLE", "EMPTY", "NOTREADY")
                or self.changes.changed_within(("describe", g), now_ms, DESCRIBE_HOT_MS)
                or self.changes.resend_due(("describe", g), last[1], now_ms)
            ):
                out.add(g)
        return out

    def _fetch_committed(
        self, admin: Any, groups: list[str], timeout_s: float
    ) -> tuple[dict[str, list[tuple[str, int, int]]], dict[str, str]]:
        """Each group's committed offsets, sorted, in `groups` order (OffsetFetch v8+ through the
        protocol client kept on the poller), and the groups an ACL refused them for, with why. A group
        the broker answered with an error is left out of the first, as
        is every group when the call fails: the poll goes on with what else it has (warned once,
        until a call succeeds again), and the next poll starts over with new connections. Settings
        the protocol client cannot use (SASL GSSAPI or OAUTHBEARER, as on AWS MSK IAM) fall back to
        librdkafka, one group a request."""
        from collectors.kafka_protocol import ConfigError, GroupError
        from collectors.kafka_protocol.connection import Deadline

        if self._protocol_unusable:
            return _committed_through_librdkafka(admin, groups, timeout_s, self.offsets_in_flight), {}
        try:
            fetched = self._protocol_client(timeout_s).fetch_committed(groups, Deadline(timeout_s))
        except ConfigError as e:
            log.warning("committed offsets through librdkafka (the protocol client cannot: %s)", e)
            self._protocol_unusable = True
            return _committed_through_librdkafka(admin, groups, timeout_s, self.offsets_in_flight), {}
        except Exception as e:
            if not self._offsets_failing:
                log.warning("committed offsets not available (OffsetFetch): %s", e)
            else:
                log.debug("OffsetFetch still failing: %s", e)
            self._offsets_failing = True
            self._close_protocol()  # a broker restart or a half-read answer: reconnect next time
            return {}, {}
        self._offsets_failing = False
        out, refused = {}, {}
        for g in groups:
            got = fetched.get(g)
            if isinstance(got, GroupError):  # one group's error never stops the poll
                log.debug("offsets of %s: %s", g, got.as_block()["error"])
                if got.code in AUTHORIZATION_FAILED:
                    refused[g] = f"{got.as_block()['error']}: {got.message or 'not authorized'}"
            elif got is not None:
                out[g] = got
        return out, refused

    def _describe_classic(
        self, groups: list[str], timeout_s: float
    ) -> tuple[dict[str, dict], dict[str, str]]:
        """(describe line of each classic group described, refusal of each group an ACL withholds)
        through the protocol client's DescribeGroups, many groups a request to each coordinator:
        librdkafka's describe_consumer_groups asks one group a request, and at 50,000 groups a first
        poll's describes took 40 s. Groups ListGroups gives as KIP-848 ones are left out (their
        describe is ConsumerGroupDescribe's), as is any group it could not describe (another type
        by now, a coordinator still moving) and, when the call fails or the client cannot use the
        settings, every group: the caller describes those through librdkafka."""
        from collectors.kafka_protocol import GroupError, Node
        from collectors.kafka_protocol.connection import Deadline

        classic = [g for g in groups if self._types.get(g) != "consumer"]
        if not classic or self._protocol_unusable:
            return {}, {}
        coordinators: dict[str, Node] = {}
        try:
            got = self._protocol_client(timeout_s).describe_groups(classic, Deadline(timeout_s), coordinators)
        except Exception as e:
            log.debug("DescribeGroups failed, describing through librdkafka: %s", e)
            self._close_protocol()
            return {}, {}
        answered = _now_ms()  # stamped when answered: see poll_hot
        lines: dict[str, dict] = {}
        refused: dict[str, str] = {}
        for g in classic:
            v = got.get(g)
            if isinstance(v, GroupError):
                if v.code in AUTHORIZATION_FAILED:
                    refused[g] = f"{v.as_block()['error']}: {v.message or 'not authorized'}"
                else:
                    log.debug("DescribeGroups %s: %s", g, v.as_block()["error"])
            elif v is not None:
                lines[g] = classic_describe_json(v, coordinators.get(g), answered)
        return lines, refused

    def _protocol_client(self, timeout_s: float) -> KafkaProtocolClient:
        """The protocol client kept on the poller (made again when cfg.kafka changed or it failed)."""
        from collectors.kafka_protocol import KafkaProtocolClient

        if self._protocol is None or self._protocol_conf != dict(self.cfg.kafka):
            self._close_protocol()
            self._protocol_conf = dict(self.cfg.kafka)
            self._protocol = KafkaProtocolClient(self._protocol_conf, timeout_s)
        return self._protocol

    def _list_typed_groups(self, timeout_s: float) -> tuple[dict[str, str], dict[str, str]]:
        """(each share group, each streams group) the cluster lists -> its state in ListGroups'
        spelling upper-cased, as librdkafka's ("STABLE", "EMPTY"). A broker that did not answer: the
        groups known from the last poll stay listed, state unknown (so they are described, which
        says whether they are still there). A failed call: the same for all of them (the describe
        warns). None at all when the protocol client cannot use the settings (librdkafka lists
        neither kind)."""
        from collectors.kafka_protocol.connection import Deadline

        if self._protocol_unusable:  # settings it cannot use (SASL GSSAPI, ...): neither kind
            return {}, {}
        try:
            listed, missing = self._protocol_client(timeout_s).list_typed_groups(
                ("share", "streams"), Deadline(timeout_s)
            )
        except Exception as e:
            log.debug("ListGroups (share, streams) failed: %s", e)
            self._close_protocol()
            listed, missing = {}, [-1]
        share = {g: state.upper() for g, (kind, state) in listed.items() if kind == "share"}
        streams = {g: state.upper() for g, (kind, state) in listed.items() if kind == "streams"}
        if missing:
            for known, out in ((self._share_groups, share), (self._streams_groups, streams)):
                for g in known - set(listed):
                    out[g] = ""
        return share, streams

    def _describe_streams(
        self, groups: list[str], producer: Any, ts: int, timeout_s: float
    ) -> dict[str, dict[str, Any]]:
        """The describe lines of these streams groups (`streams_describe_json`), from one
        StreamsGroupDescribe per coordinator: see `_describe_modern`."""
        return self._describe_modern(groups, producer, ts, timeout_s, "streams")

    def _describe_share(
        self, groups: list[str], producer: Any, ts: int, timeout_s: float
    ) -> dict[str, dict[str, Any]]:
        """The describe lines of these share groups (`share_describe_json`), from one
        ShareGroupDescribe per coordinator: see `_describe_modern`."""
        return self._describe_modern(groups, producer, ts, timeout_s, "share")

    # the kinds of group described through the protocol client alone: its call, the line it makes,
    # the API's name for the warnings
    _MODERN_KINDS: ClassVar[dict[str, tuple[str, Any, str]]] = {
        "share": ("describe_share", share_describe_json, "ShareGroupDescribe"),
        "streams": ("describe_streams", streams_describe_json, "StreamsGroupDescribe"),
    }

    def _describe_modern(
        self, groups: list[str], producer: Any, ts: int, timeout_s: float, kind: str
    ) -> dict[str, dict[str, Any]]:
        """The describe lines of these share or streams groups (`kind`), from one describe per
        coordinator over the kept protocol client, stamped when answered. A group the broker refused
        (an ACL) gets its denied line sent here; one that went away since it was listed is left out;
        a failed call leaves them all out (warned once per kind, until a call succeeds again;
        settings the protocol client cannot use, such as SASL GSSAPI, fail every time)."""
        if not groups:
            return {}
        from collectors.kafka_protocol.connection import Deadline

        call, to_line, api = self._MODERN_KINDS[kind]
        try:
            blocks = getattr(self._protocol_client(timeout_s), call)(groups, Deadline(timeout_s))
        except Exception as e:
            if kind not in self._modern_failing:
                log.warning("%s groups not described (%s): %s", kind, api, e)
            else:
                log.debug("%s still failing: %s", api, e)
            self._modern_failing.add(kind)
            self._close_protocol()
            return {}
        self._modern_failing.discard(kind)
        answered = _now_ms()
        out = {}
        for g in groups:
            block = blocks.get(g)
            if block is None:
                continue
            if "error" in block:
                log.debug("%s %s: %s", api, g, block["error"])
                if block.get("error_code") in AUTHORIZATION_FAILED:
                    why = f"{block['error']}: {block.get('error_message') or 'not authorized'}"
                    self._send(
                        producer, ("denied", g, "describe"), g, denied_line(ts, g, "describe", why), ts
                    )
                continue
            out[g] = to_line(g, block, answered)
        return out

    def _share_start_offsets(
        self, groups: list[str], producer: Any, ts: int, timeout_s: float
    ) -> dict[str, list[tuple[str, int, int, int]]]:
        """Each share group's share-partition start offsets [(topic, partition, start offset, lag)]
        (-1: not initialised), from DescribeShareGroupOffsets (all its topics, many groups a request
        to each coordinator) over the kept protocol client. A group the broker refused (an ACL: Describe
        on the group and its topics) gets its denied "offsets" line sent here; one that went away since
        it was listed is left out; a failed call (a broker before Kafka 4.1 has no such API) leaves them
        all out, warned once until a call succeeds again."""
        if not groups or self._protocol_unusable:
            return {}
        from collectors.kafka_protocol import GroupError, UnsupportedVersionError
        from collectors.kafka_protocol.connection import Deadline

        try:
            fetched = self._protocol_client(timeout_s).describe_share_group_offsets(
                groups, Deadline(timeout_s)
            )
        except Exception as e:
            if not self._share_offsets_failing:
                log.warning("share groups' start offsets not read (DescribeShareGroupOffsets): %s", e)
            else:
                log.debug("DescribeShareGroupOffsets still failing: %s", e)
            self._share_offsets_failing = True
            if not isinstance(e, UnsupportedVersionError):  # a broker without the API: keep connections
                self._close_protocol()  # a broker restart or a half-read answer: reconnect next time
            return {}
        self._share_offsets_failing = False
        out = {}
        for g in groups:
            got = fetched.get(g)
            if isinstance(got, GroupError):  # one group's error never stops the poll
                log.debug("start offsets of %s: %s", g, got.as_block()["error"])
                if got.code in AUTHORIZATION_FAILED:
                    why = f"{got.as_block()['error']}: {got.message or 'not authorized'}"
                    self._send(producer, ("denied", g, "offsets"), g, denied_line(ts, g, "offsets", why), ts)
            elif got is not None:
                out[g] = got
        return out

    def _close_protocol(self) -> None:
        client, self._protocol = self._protocol, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def _add_broker_blocks(self, docs: list[dict[str, Any]], timeout_s: float) -> None:
        """KIP-848 epochs, which librdkafka does not return: one ConsumerGroupDescribe per coordinator
        for all `docs` (collectors.kafka_protocol), added as each line's "broker" block. A failure
        leaves the lines without it; it is logged at warning once, until a call succeeds again,
        rather than at every poll (a broker without the API would fail every time)."""
        if not docs:
            return
        from collectors.kafka_protocol import describe_consumer_groups_kip848

        try:
            blocks = describe_consumer_groups_kip848(self.cfg.kafka, [d["group"] for d in docs], timeout_s)
        except Exception as e:
            if not self._kip848_failing:
                log.warning("KIP-848 epochs not available (ConsumerGroupDescribe): %s", e)
            else:
                log.debug("ConsumerGroupDescribe still failing: %s", e)
            self._kip848_failing = True
            return
        self._kip848_failing = False
        answered = _now_ms()
        for doc in docs:
            block = blocks.get(doc["group"])
            if block is not None and "error" not in block:
                doc["broker"] = block
                # the line is as of its later answer: epochs bumped between the two describes show
                doc["ts"] = max(doc["ts"], answered)
            elif block is not None:  # e.g. the group went away between the two describes
                log.debug("ConsumerGroupDescribe %s: %s", doc["group"], block["error"])


def _committed_through_librdkafka(
    admin: Any, groups: list[str], timeout_s: float, in_flight: int
) -> dict[str, list[tuple[str, int, int]]]:
    """The fallback: librdkafka's list_consumer_group_offsets, one group a request, `in_flight` at a
    time. Only for settings the protocol client cannot use: librdkafka 2.16 can crash the process in
    this call when a coordinator moves (confluentinc/librdkafka#5040)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    out: dict[str, list[tuple[str, int, int]]] = {}
    pending: collections.deque[tuple[str, Any]] = collections.deque()

    def collect(g: str, fut: Any) -> None:
        try:
            res = fut.result(timeout_s + 5)
        except Exception as e:  # one group's error never stops the poll
            log.debug("offsets of %s: %s", g, e)
            return
        out[g] = sorted(
            (tp.topic, tp.partition, tp.offset) for tp in res.topic_partitions or [] if tp.offset >= 0
        )

    for g in groups:
        try:
            req = [ConsumerGroupTopicPartitions(g)]
            pending.append((g, admin.list_consumer_group_offsets(req, request_timeout=timeout_s)[g]))
        except Exception as e:
            log.debug("offsets of %s: %s", g, e)
        if len(pending) >= in_flight:
            collect(*pending.popleft())
    for g, fut in pending:
        collect(g, fut)
    return out
