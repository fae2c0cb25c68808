"""What the Admin poller writes to its topic, and what becomes of each record (admin_poller.py
decides what to ask Kafka; this decides what of the answers goes out, and how).

- Only what changed goes out (the change filter, admin_changes.py), and everything again about once
  a minute, marked as a resend.
- Every record has a delivery report. A line the broker did not take (refused, timed out, the topic
  gone) is counted by reason (`delivery_failures`), said in the "admin" source status (`gs:sources`:
  not ok while lines are being lost, with the reasons) and taken back from the change filter, so it
  is sent again at the next poll.
- A line larger than a record may be (`max_message_bytes`: the producer's message.max.bytes, halved
  when the broker refuses records as too large, since the topic's max.message.bytes can be smaller)
  never stops the poll: a topic's end offsets, and a group's committed offsets where they do not
  stand alone (`parts`), go in several lines that say together what the one line said; a describe,
  which cannot be cut, is dropped, counted (`too_large`) and logged with the group and its size.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import logging
from collections.abc import Callable
from typing import Any

from collectors.kafka_clients import ErrorWatch, client_config
from collectors.pipeline.admin_changes import ChangeFilter, as_resend

log = logging.getLogger("groupscope.admin")

# What a record costs in a record batch beside its key and value (the batch's 61-byte header, the
# record's lengths and deltas): a line of a record that fits the limit with this margin is sent whole.
RECORD_OVERHEAD = 128
# librdkafka's message.max.bytes, the largest record the producer takes by default (a topic's
# max.message.bytes is 1 MiB + 12 by default: a record the producer takes, the broker takes)
DEFAULT_MESSAGE_BYTES = 1_000_000
MIN_MESSAGE_BYTES = 1024  # learned limits (halved on refusals) stop here
# Delivery errors of a record, or of its batch, larger than the broker or the producer takes.
_TOO_LARGE = frozenset({"MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"})

# The change filter's key of a line and its entries before and after the verdict: what taking a
# send back needs (ChangeFilter.unsend).
Undo = tuple[tuple, Any, Any]


def _reason(e: Any) -> str:
    """A delivery failure's reason: the KafkaError's name (MSG_SIZE_TOO_LARGE, _MSG_TIMED_OUT, ...)."""
    from confluent_kafka import KafkaError

    err = e.args[0] if isinstance(e, Exception) and e.args else e
    return err.name() if isinstance(err, KafkaError) else type(e).__name__


def message_limit(cfg: Any) -> int:
    """The largest record the Admin poller writes at first: the producer's message.max.bytes."""
    try:
        return max(MIN_MESSAGE_BYTES, int((getattr(cfg, "kafka", None) or {}).get("message.max.bytes")))
    except (TypeError, ValueError):
        return DEFAULT_MESSAGE_BYTES


def line_kind(line: dict[str, Any]) -> str:
    """What an admin line is, in words (for the log and the status)."""
    if "members" in line:
        return "describe"
    if "denied" in line:
        return "denied"
    if "end_offsets" in line:
        return "end offsets"
    return "committed offsets" if "committed" in line else "other"


class AdminWriter:
    """The poller's producing side: the change filter's verdicts, the records and their delivery
    reports, the record size it may write. `on_unsent(kind, group)` is told when a line of that kind
    and group was taken back after a failed delivery (what the poller keeps of it must be asked
    again). Runs on the poller's thread: delivery reports come from the producer's poll and flush."""

    def __init__(
        self,
        config: Callable[[], Any],
        changes: ChangeFilter,
        offsets_readable: bool,
        on_unsent: Callable[[str, str], None] | None = None,
    ) -> None:
        self.config = config  # the poller's settings (admin_topic, kafka), read at each use
        self.changes = changes
        # a "committed" line may be cut only where the offsets topic also speaks (see `parts`)
        self.offsets_readable = offsets_readable
        self.on_unsent = on_unsent
        self.sent = 0  # admin lines produced, and held back as unchanged (benchmarks read them)
        self.held = 0
        # reason -> records not delivered, since start and since the source status last said so
        self.delivery_failures: collections.Counter[str] = collections.Counter()
        self._failed_since_status: collections.Counter[str] = collections.Counter()
        self.too_large: collections.Counter[str] = collections.Counter()  # by kind: dropped lines
        self.split_lines = 0  # lines sent in parts
        self.max_message_bytes = message_limit(config())
        self._size_refused = False  # a record refused as too large since the last `fit_producer`
        self._producer: Any = None
        self._producer_batch = 0

    # ---- the producer ----------------------------------------------------------------------------
    def fit_producer(self, watch: ErrorWatch | None = None) -> Any:
        """The producer to write with, made at first and made again (the old one flushed) when the
        broker refused a record as too large since the last call: records, and the producer's
        batches (batch.size), are kept under half the size from then on, down to MIN_MESSAGE_BYTES.
        A topic's max.message.bytes can be below the producer's message.max.bytes, and librdkafka
        does not split a refused batch: the lines of a refused record are sent again (the change
        filter took them back), in parts where they are larger than the new limit."""
        from confluent_kafka import Producer

        self.learn_size()
        if self._producer is not None and self._producer_batch == self.max_message_bytes:
            return self._producer
        if self._producer is not None:
            with contextlib.suppress(Exception):
                self._producer.flush(5)  # its reports: what it did not deliver is sent again
        try:
            asked = int(self.config().kafka.get("batch.size", self.max_message_bytes))
            batch = min(asked, self.max_message_bytes)
        except (TypeError, ValueError):
            batch = self.max_message_bytes
        self._producer = Producer(
            client_config(
                self.config().kafka,
                watch,
                **{"linger.ms": 20, "message.timeout.ms": 30000, "batch.size": max(1, batch)},
            )
        )
        self._producer_batch = self.max_message_bytes
        return self._producer

    def close(self) -> None:
        if self._producer is not None:
            with contextlib.suppress(Exception):
                self._producer.flush(5)

    def learn_size(self) -> None:
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
                self.config().admin_topic,
                smaller,
                self.max_message_bytes,
            )
            self.max_message_bytes = smaller

    # ---- what the source status says -------------------------------------------------------------
    def take_failed(self) -> collections.Counter[str]:
        """The records not delivered since the last call, by reason (the source status says them)."""
        failed, self._failed_since_status = self._failed_since_status, collections.Counter()
        return failed

    def delivery_note(self, failed: collections.Counter[str] | None = None) -> str:
        """What the source status says of the lines: those not delivered since it last said so
        (`failed`, by reason: they are sent again), and since start; lines too large to send; lines
        sent in parts. "" when there is nothing to say."""

        def reasons(c: collections.Counter[str]) -> str:
            return ", ".join(f"{r} {n}" for r, n in c.most_common(4))

        out = []
        if failed:
            out.append(
                f"{sum(failed.values())} records not delivered to {self.config().admin_topic} since the last "
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

    # ---- lines -----------------------------------------------------------------------------------
    def send(
        self, producer: Any, key: tuple, group: str, line: dict[str, Any], ts: int, hot_ms: int = 0
    ) -> str | None:
        """Produce `line` when the change filter says it is due (admin_changes.py); its verdict."""
        before = self.changes.entry(key)
        why = self.changes.verdict(key, {k: v for k, v in line.items() if k != "ts"}, ts, hot_ms)
        if why is None:
            self.held += 1
            return None
        self.produce(producer, group, line, why, (key, before, self.changes.entry(key)))
        return why

    def produce(
        self, producer: Any, group: str, line: dict[str, Any], why: str, undo: Undo | None = None
    ) -> None:
        """Produce `line`, in parts when it is larger than a record may be (`parts`), or not at all
        when it cannot be cut (counted and logged). `undo`: what takes the send back when a record
        of it is not delivered."""
        if why == "resend":
            # the same answer as last sent: the model stage only marks the group refreshed
            line = as_resend(line)
        key = group.encode()
        value = json.dumps(line).encode()
        self.sent += 1
        room = self.max_message_bytes - len(key) - RECORD_OVERHEAD
        if len(value) <= room:
            self.write(producer, key, value, undo)
            return
        parts = self.parts(line, room)
        if parts is None:
            kind = line_kind(line)
            self.too_large[kind] += 1
            log.error(
                "the %s line of group %r is %d bytes, more than a record to %s may have here (%d "
                "bytes with its key): not sent; polling goes on",
                kind,
                group,
                len(value),
                self.config().admin_topic,
                self.max_message_bytes,
            )
            return
        self.split_lines += 1
        for part in parts:
            self.write(producer, key, part, undo)

    def parts(self, line: dict[str, Any], room: int) -> list[bytes] | None:
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

    def write(self, producer: Any, key: bytes, value: bytes, undo: Undo | None) -> None:
        """Produce one record to the admin topic, its delivery reported to `_delivered`. A full
        queue is served for a moment, once; a record the producer refuses outright is a failed
        delivery."""
        for attempt in range(2):
            try:
                producer.produce(
                    self.config().admin_topic,
                    key=key,
                    value=value,
                    on_delivery=functools.partial(self._delivered, undo),
                )
                return
            except BufferError as e:  # the producer's queue is full: let it send, then once more
                if attempt:
                    self.not_delivered("QUEUE_FULL", undo)
                    log.debug("admin record not queued: %s", e)
                    return
                producer.poll(1.0)
            except Exception as e:  # e.g. larger than the producer's message.max.bytes
                self.not_delivered(_reason(e), undo)
                log.debug("admin record not produced: %s", e)
                return

    def _delivered(self, undo: Undo | None, err: Any, _msg: Any) -> None:
        """A record's delivery report (from the producer's poll or flush, on the poller's thread)."""
        if err is None:
            return
        try:
            self.not_delivered(_reason(err), undo)
            log.debug("admin record not delivered: %s", err)
        except Exception:  # never out of the producer's poll
            log.exception("admin delivery report")

    def not_delivered(self, reason: str, undo: Undo | None) -> None:
        """Count a record not delivered, and take its line back from the change filter (and tell
        `on_unsent`), so it is sent again at the next poll."""
        self.delivery_failures[reason] += 1
        self._failed_since_status[reason] += 1
        if reason in _TOO_LARGE:
            self._size_refused = True
        if undo is None:
            return
        key, before, sent = undo
        if not self.changes.unsend(key, before, sent):
            return  # sent again since, or forgotten: that send decides
        if self.on_unsent is not None:
            self.on_unsent(key[0], key[1])
