"""The Admin API poller of the live pipeline: its schedule, what it asks, what it sends. It runs in a
process of its own, started by the driver (admin_process.py, which survives librdkafka's aborts), and
turns what it sees into evidence lines on a Kafka topic, so its output goes through the same
checkpointed stream as everything else (ordered, replayable).

Every `admin_poll_interval_s` (default 5 s) a full poll lists the groups, describes those that may
have changed, reads where they have committed offsets and the log-end offsets of every partition they
commit to or are assigned, and writes describe / committed / end-offset lines. Between full polls the
groups in motion are described every `admin_hot_interval_s` (admin_hot.py). Who answers what:

- admin_groups.py: ListGroups (librdkafka's, and the protocol client's with types for share and
  streams groups), DescribeGroups, DescribeConsumerGroups, ConsumerGroupDescribe (the KIP-848
  epochs librdkafka does not return), ShareGroupDescribe and StreamsGroupDescribe;
- admin_offsets.py: OffsetFetch, DescribeShareGroupOffsets, ListOffsets;
- admin_link.py: the protocol client they share, kept across polls;
- admin_lines.py: the lines' shapes; admin_writer.py: which of them go out (the change filter,
  admin_changes.py: only what changed, and everything again about once a minute, so an idle fleet of
  10,000 groups is not a million lines a poll), their delivery reports, records too large.

What is sent, and why:
- Committed offsets are not sent when `__consumer_offsets` is readable: the topic carries every
  commit first hand (at 10,000 groups of 100 partitions the copies were as many records as the
  backlog being caught up). They are still fetched, now and then (`_committed_partitions`), to know
  which partitions need log-end offsets: a group without members says so nowhere else.
- Log-end offsets belong to a partition, not to a group: one line per topic, whatever number of
  groups read it. The model stage lends each group the histories of the topics it reads
  (storage/log_ends.py); `groupscope model` over a capture gives each EndOffset to the groups of its
  topic (coordinator_model/rebuild.py).
- A share group (KIP-932) commits no offsets: its progress is its share-partition start offsets and
  the broker's lag, sent at every full poll as "committed" lines marked `"source":
  "share_start_offsets"` (`share_offsets_line`: log-end minus the broker's lag, so the document's lag
  is kafka-share-groups.sh's LAG).
- One clock line a poll, even when nothing changed: the pipeline's timers run on it.

A broker that does not answer is retried with backoff, said in `gs:sources`, and the groups keep
their last refresh time, so the pages show how stale they are.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from collectors.kafka_clients import ErrorWatch, client_config, failure_log
from collectors.pipeline.admin_changes import ChangeFilter, bucket_phase
from collectors.pipeline.admin_groups import (
    Kip848Blocks,
    ModernDescriber,
    describe_classic,
    librdkafka_describes,
    list_groups,
)
from collectors.pipeline.admin_hot import HotGroups, hot_interval
from collectors.pipeline.admin_lines import denied_line, log_ends_lines, share_offsets_line
from collectors.pipeline.admin_link import ProtocolLink
from collectors.pipeline.admin_offsets import CommittedOffsets, ShareStartOffsets, log_end_offsets
from collectors.pipeline.admin_writer import AdminWriter
from collectors.pipeline.change_hints import ChangeHints
from collectors.pipeline.loop import Loop
from collectors.pipeline.topic_check import bootstrap_unreachable, connect_failure
from collectors.pipeline.wanted_ends import Wanted

log = logging.getLogger("groupscope.admin")
# A group's describe is sent at every poll for this long after it changed (admin_changes.py: "hot").
DESCRIBE_HOT_MS = 30_000


def _now_ms() -> int:
    return int(time.time() * 1000)


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
        # What it asks Kafka (admin_groups.py, admin_offsets.py), over one kept protocol client.
        self.link = ProtocolLink(lambda: self.cfg.kafka)
        self.kip848 = Kip848Blocks()
        self.modern = ModernDescriber()
        self.committed = CommittedOffsets(self.offsets_in_flight)
        self.share_offsets = ShareStartOffsets()
        self._share_groups: set[str] = set()  # the groups ListGroups last gave as share groups
        self._streams_groups: set[str] = set()  # and as KIP-1071 streams groups
        self._types: dict[str, str] = {}  # group -> its type as ListGroups last gave it ("classic", ...)
        self._ends_refused: set[str] = set()  # groups told some of their topics' end offsets are refused
        # What it sends (admin_writer.py): answers are sent on when they changed, and again every
        # admin_resend_s (admin_changes.py), a group's at the phase of its state bucket.
        resend_ms = int(getattr(cfg, "admin_resend_s", 60.0) * 1000)
        buckets = int(getattr(cfg, "state_buckets", 256) or 256)
        changes = ChangeFilter(resend_ms, phase_of=bucket_phase(buckets, resend_ms))
        self.writer = AdminWriter(lambda: self.cfg, changes, offsets_readable, on_unsent=self._unsent)
        # Groups in motion are described every admin_hot_interval_s between full polls (admin_hot.py);
        # the offsets topic's records say which groups just moved (change_hints.py)
        self.hot = HotGroups()
        url = getattr(cfg, "redis_url", None)
        self.change_hints = ChangeHints(url, getattr(cfg, "prefix", "gs")) if url else None
        self._hints_seen = _now_ms()  # hints of records written before the poller started are history
        self.hot_polls = 0  # describes of hot groups in all (benchmarks read it)
        # groups whose committed offsets were sent only to refill Redis and not delivered (where the
        # offsets topic is read, committed offsets are sent on a refill alone): sent at the next poll
        self._committed_retry: set[str] = set()

    @property
    def changes(self) -> ChangeFilter:
        return self.writer.changes

    def stop(self) -> None:
        super().stop()
        if not self.is_alive():  # never started (poll_once called directly): nobody else will close it
            self.link.close()

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
                producer = self.writer.fit_producer(watch)
                n = self.poll_once(admin, producer)
                self.polls += 1
                delay = self.cfg.admin_poll_interval_s
                failed = self.writer.take_failed()
                with contextlib.suppress(Exception):
                    detail = f"{n} groups described{self.writer.delivery_note(failed)}"
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
                failed = self.writer.take_failed()
                with contextlib.suppress(Exception):
                    detail = f"{why}{self.writer.delivery_note(failed)}"
                    self.store.set_source_status("admin", False, detail[:600], _now_ms())
                self.hot.forget(set())  # no fast describes against a cluster that does not answer
            self._between_polls(admin, watch, t0 + delay)
        self.link.close()
        self.writer.close()

    def _unsent(self, kind: str, group: str) -> None:
        """A line the broker did not take, taken back from the change filter: what the poller keeps
        of it is asked again at the next poll."""
        if kind == "describe":
            self._listed.pop(group, None)  # described at the next poll, even a steady group
        elif kind == "committed" and self.offsets_readable:
            self._committed_retry.add(group)  # sent on a refill alone: fetched and sent again

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
                self.poll_hot(admin, self.writer.fit_producer(watch))
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
        self.writer.learn_size()
        ts = _now_ms()
        due = self.hot.due(ts)
        groups = [g for g in due if g not in self._share_groups and g not in self._streams_groups]
        modern = self._describe_modern(
            producer, [g for g in due if g in self._share_groups], "share", ts, timeout_s
        )
        modern.update(
            self._describe_modern(
                producer, [g for g in due if g in self._streams_groups], "streams", ts, timeout_s
            )
        )
        for g, doc in modern.items():
            self._send_describe(producer, g, doc, ts)
        kip848: list[dict[str, Any]] = []
        lines, refused = describe_classic(self.link, groups, self._types, timeout_s)
        for g, doc in lines.items():
            self._send_describe(producer, g, doc, ts)
        for g, why in refused.items():
            self._send(producer, ("denied", g, "describe"), g, denied_line(ts, g, "describe", why), ts)
        groups = [g for g in groups if g not in lines and g not in refused]
        # every request in flight at once: a hot poll takes one round trip, not one per chunk
        everything = max(1, len(groups))
        for answers in librdkafka_describes(
            admin, groups, self.describe_chunk, everything * self.describe_chunk, timeout_s
        ):
            for g, doc, why in answers:
                if doc is None:
                    if why is not None:
                        self._send(
                            producer, ("denied", g, "describe"), g, denied_line(ts, g, "describe", why), ts
                        )
                elif doc["type"] == "consumer":
                    kip848.append(doc)
                else:
                    self._send_describe(producer, g, doc, ts)
        self.kip848.add(self.cfg.kafka, kip848, timeout_s)
        for doc in kip848:
            self._send_describe(producer, doc["group"], doc, ts)
        producer.poll(0)
        self.hot_polls += len(due)
        return len(due)

    def _send(
        self, producer: Any, key: tuple, group: str, line: dict[str, Any], ts: int, hot_ms: int = 0
    ) -> str | None:
        """Produce `line` when the change filter says it is due; its verdict (admin_writer.py)."""
        return self.writer.send(producer, key, group, line, ts, hot_ms)

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
        for t, line in log_ends_lines(ends, ts).items():
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

    def _describe_modern(
        self, producer: Any, groups: list[str], kind: str, ts: int, timeout_s: float
    ) -> dict[str, dict[str, Any]]:
        """The describe lines of these share or streams groups (admin_groups.ModernDescriber); a
        group an ACL refused gets its denied line sent here."""
        lines, refused = self.modern.describe(self.link, groups, kind, timeout_s)
        for g, why in refused.items():
            self._send(producer, ("denied", g, "describe"), g, denied_line(ts, g, "describe", why), ts)
        return lines

    def poll_once(self, admin: Any, producer: Any, timeout_s: float = 10.0) -> int:
        self.writer.learn_size()
        # Raises when no broker answers (list_consumer_groups itself would just return nothing).
        admin.list_topics(timeout=timeout_s)
        if self._redis_lost_data():
            self._refill = True
        refill = self._refill
        if refill:
            self.forget_sent()
        listing = list_groups(admin, self.link, self._share_groups, self._streams_groups, timeout_s)
        groups, share_groups, listed_states = listing.groups, listing.share, listing.states
        self._types = listing.types
        self._streams_groups = listing.streams
        self._share_groups = set(share_groups)
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

        def refuse(g: str, what: str, why: str) -> None:
            send(("denied", g, what), g, denied_line(ts, g, what, why))

        kip848: list[dict[str, Any]] = []
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
        # describe through librdkafka, `describe_chunk` groups a request, several in flight at once
        lines, refused = describe_classic(self.link, ordered, self._types, timeout_s)
        for g, doc in lines.items():
            take(g, doc)
        for g, why in refused.items():
            refuse(g, "describe", why)
        producer.poll(0)
        ordered = [g for g in ordered if g not in lines and g not in refused]
        for answers in librdkafka_describes(
            admin, ordered, self.describe_chunk, self.offsets_in_flight, timeout_s
        ):
            for g, doc, why in answers:
                if doc is not None:
                    take(g, doc)
                elif why is not None:
                    refuse(g, "describe", why)
            producer.poll(0)
        self.kip848.add(self.cfg.kafka, kip848, timeout_s)
        for doc in kip848:
            send(("describe", doc["group"]), doc["group"], doc, DESCRIBE_HOT_MS)
        for g, doc in self._describe_modern(producer, streams_due, "streams", ts, timeout_s).items():
            take(g, doc)
        share_due = self._to_describe(share_groups, listed_states, ts)
        self.described_groups += len(share_due)
        for g in share_groups:
            if g not in share_due:
                polled.add(("describe", g))
                wanted.add(g, self._listed[g][2])
        polled.update(("denied", g, "describe") for g in share_due)  # a refusal is sent from there
        for g, doc in self._describe_modern(producer, sorted(share_due), "share", ts, timeout_s).items():
            send(("describe", g), g, doc, DESCRIBE_HOT_MS)
            assigned = frozenset((t, p) for m in doc["members"] for t, p in m["assignment"])
            wanted.add(g, assigned)
            self._listed[g] = (listed_states.get(g, ""), ts, assigned)
        # a share group's progress (__consumer_offsets has none of it): every share group, every poll
        polled.update(("denied", g, "offsets") for g in share_groups)  # a refusal is sent from here
        share_offsets, refused = self.share_offsets.fetch(self.link, share_groups, timeout_s)
        for g, why in refused.items():
            self._send(producer, ("denied", g, "offsets"), g, denied_line(ts, g, "offsets", why), ts)
        for g, offsets in share_offsets.items():  # sent with the log-end offsets, below
            wanted.add(g, [(t, p) for t, p, _, _ in offsets])
        producer.poll(0)
        if first_describes is not None:
            self.provisional.describes(first_describes)
        if self.offsets_readable:
            fetched = self._committed_partitions(
                admin, groups, sent_describe, refill, send, producer, ts, timeout_s
            )
            for g in groups:
                wanted.add(g, self._committed_tps.get(g, ()))
        else:
            fetched, refused_groups = self.committed.fetch(self.link, admin, groups, timeout_s)
            for g, committed in fetched.items():
                send(("committed", g), g, {"ts": ts, "group": g, "committed": committed})
                wanted.add(g, [(t, p) for t, p, _ in committed])
                producer.poll(0)
            for g, why in refused_groups.items():
                refuse(g, "offsets", why)
        if first_describes is not None:
            self.provisional.committed(fetched)
            self.provisional.done()
        ends, refused = log_end_offsets(admin, wanted.partitions(), timeout_s)
        for g, offsets in share_offsets.items():
            send(("committed", g), g, share_offsets_line(g, offsets, ends, ts))
        self._send_ends(wanted, ends, refused, ts, send)
        producer.poll(0)
        self.changes.forget(polled)  # groups and partitions gone since: their next answer is new
        self.hot.forget(set(groups) | set(share_groups))
        # The stream's clock: one record per poll even when nothing changed, so the per-group timers
        # run at least every poll interval (the pipeline runs no empty micro-batches in between).
        self.writer.write(producer, b"", json.dumps({"ts": ts, "clock": True}).encode(), None)
        left = producer.flush(timeout_s)
        if left:
            raise RuntimeError(f"{left} admin records not delivered to {topic}")
        self._refill = False  # sent whole: a failed poll leaves it for the next
        return len(groups) + len(share_groups)

    def _committed_partitions(
        self,
        admin: Any,
        groups: list[str],
        changed: set[str],
        refill: bool,
        send: Callable[..., None],
        producer: Any,
        ts: int,
        timeout_s: float,
    ) -> dict[str, list[tuple[str, int, int]]]:
        """Where the offsets topic is read, committed offsets only say where log-end offsets are
        wanted (the offsets topic has the commits themselves), and a group's partitions rarely
        change: they are fetched for the groups first seen, those whose describe `changed`, and the
        others every `committed_refresh_ms` (a group without members that starts committing to
        another topic says so nowhere else), not for all at every poll. (OffsetFetch answers for
        10,000 groups of 100 partitions took 11 s of the poller's CPU to read: longer than the poll
        interval; fetched at every describe resend, once a minute, they were a quarter of a core on
        a busy fleet.) They are sent only to refill a Redis that lost them. What was fetched."""
        stale = ts - self.committed_refresh_ms
        need = [
            g
            for g in groups
            if g not in self._committed_tps or g in changed or self._committed_at.get(g, 0) <= stale
        ]
        # at most so many a poll (first sight of a big fleet: they are spread over a few polls), but
        # all at the first: it runs while Spark starts, and its log-end offsets are then in the
        # catch-up's first batch with every group's commits (run_pipeline)
        if self.polls:
            need = need[: self.committed_per_poll]
        if refill:
            need = list(groups)
        # a refill's committed offsets that were not delivered: sent again now
        retry, self._committed_retry = self._committed_retry & set(groups), set()
        need += sorted(retry - set(need))
        fetched = self.committed.fetch(self.link, admin, need, timeout_s)[0]
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
        return fetched

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
        bucket). The poll's cost then follows the number of groups that change, not the size of the
        fleet: ListGroups answers for every group in one request per broker, a describe of 10,000
        steady groups every 5 s took 3-5 s of CPU."""
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
