"""What the Admin poller sends on: only what changed since it was last sent, and everything again
about every `refresh_ms`.

At 10,000 groups a poll describes every group, reads its committed offsets and the log-end offsets of
its partitions: on the order of a million answers, nearly all the same as five seconds before. Sent
on as they are, they made every live micro-batch rebuild and rewrite every group (a commit took a
minute to reach Redis). The model needs an answer only when it differs from the last one it got; the
periodic resend keeps each group's refresh stamp (the dashboard's "refreshed N s ago"). A resend is
marked as such and the pipeline's first stage sends it to a bucket that keeps no state (rows.py,
REFRESH_BUCKET): it stamps its group refreshed and never reaches the group's model.

Resends come round on a grid: each key has a phase in the interval (`phase_of`; by default a hash of
the key) and is resent at the first point of its grid (phase + k * refresh_ms) at least half an
interval after it was last sent: between half and one and a half intervals after a change, exactly one
interval apart after that. The poller gives every key of a group the phase of the group's state
bucket, so each poll resends about the same share of the fleet. (Before resends went to the refresh
bucket, that phase also kept a poll's resends to a few of the model stage's buckets: Spark hands a
touched bucket's whole state to Python.)

A key that changed recently can be kept "hot" (`hot_ms`): sent at every poll for that long after its
last change, because some conclusions need the same answer twice (an Empty describe is believed
against a member's recent heartbeats only when it is repeated) and a group that just changed is the
one likely to change again.

Pure: the poller calls `due(key, value, now_ms)` for each answer and sends those that are due.
An answer counts as sent when it is judged due; one whose delivery then fails is taken back
(`unsend`, with the entries `entry` gave before and after the verdict), so it is due again at the
next poll as if it had never been sent: the model must not be left without an answer the filter
thinks it has.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# How an answer sent again unchanged is marked, as the poller encodes its lines (json.dumps): the
# first stage recognizes it from the raw bytes, without parsing the line (route.py).
_RESEND_MARK = b'"resend": true'


def as_resend(line: dict[str, Any]) -> dict[str, Any]:
    """`line` marked as the same answer as last sent."""
    return {**line, "resend": True}


def is_resend(raw: bytes | None) -> bool:
    """Whether an Admin poller line (its bytes) is a resend marked by `as_resend`."""
    return raw is not None and _RESEND_MARK in raw


_NEVER = -(2**62)


def _digest(value: Any) -> int:
    return zlib.crc32(repr(value).encode())


@dataclass
class ChangeFilter:
    refresh_ms: int = 60_000
    phase_of: Callable[[Any], int] | None = None  # key -> its resend phase (ms, modulo refresh_ms)
    # key -> (digest of the value last sent, when it was sent, when the value last changed)
    _sent: dict[Any, tuple[int, int, int]] = field(default_factory=dict)

    def due(self, key: Any, value: Any, now_ms: int, hot_ms: int = 0) -> bool:
        """True (and remembered as sent) when `value` differs from what was last sent for `key`, when
        it last changed less than `hot_ms` ago, or when its resend came round (`resend_due`)."""
        return self.verdict(key, value, now_ms, hot_ms) is not None

    def verdict(self, key: Any, value: Any, now_ms: int, hot_ms: int = 0) -> str | None:
        """`due`, saying why: "new", "changed", "hot" (unchanged, but changed within `hot_ms`),
        "resend" (unchanged and old enough to be sent again); None when not due."""
        return self.verdict_of_digest(key, _digest(value), now_ms, hot_ms)

    def verdict_of_digest(self, key: Any, digest: int, now_ms: int, hot_ms: int = 0) -> str | None:
        """`verdict` for a value of that digest."""
        last = self._sent.get(key)
        # First sight is news but not a change: only a value that differs from the last makes a key hot.
        changed_at = now_ms if last is not None else _NEVER
        why = "new" if last is None else "changed"
        if last is not None and last[0] == digest:
            changed_at = last[2]
            hot = now_ms - changed_at < hot_ms
            if not hot and not self.resend_due(key, last[1], now_ms):
                return None
            why = "hot" if hot else "resend"
        self._sent[key] = (digest, now_ms, changed_at)
        return why

    def entry(self, key: Any) -> tuple[int, int, int] | None:
        """What is remembered of the value last sent for `key` (a token for `unsend`), or None."""
        return self._sent.get(key)

    def unsend(
        self, key: Any, before: tuple[int, int, int] | None, sent: tuple[int, int, int] | None
    ) -> bool:
        """Take back the send that turned `key`'s entry from `before` into `sent` (its delivery
        failed): the key is remembered as it was before (forgotten if it was new), so the same answer
        is due again at the next poll. Nothing is done when the key was sent again since (a later
        answer's delivery decides) or forgotten; whether it was taken back."""
        cur = self._sent.get(key)
        # the digest and send time identify a send (`mark_changed` only moves the change time)
        if cur is None or sent is None or cur[:2] != sent[:2]:
            return False
        if before is None:
            del self._sent[key]
        else:
            self._sent[key] = before
        return True

    def phase(self, key: Any) -> int:
        """Where in the interval the key's resends fall."""
        raw = self.phase_of(key) if self.phase_of is not None else _digest(key)
        return raw % max(1, self.refresh_ms)

    def resend_due(self, key: Any, last_sent_ms: int, now_ms: int) -> bool:
        """Whether an answer last sent at `last_sent_ms` is resent now: at the first point of the
        key's grid at least half an interval after it was sent."""
        interval = max(1, self.refresh_ms)
        start = last_sent_ms + interval // 2
        if now_ms < start:
            return False
        phase = self.phase(key)
        point = phase - ((phase - start) // interval) * interval  # first grid point >= start
        return now_ms >= point

    def changed_within(self, key: Any, now_ms: int, ms: int) -> bool:
        """Whether the value last sent for `key` differed from the one before, less than `ms` ago."""
        last = self._sent.get(key)
        return last is not None and now_ms - last[2] < ms

    def mark_changed(self, key: Any, now_ms: int) -> None:
        """Count the value last sent for `key` as a change at `now_ms` (so it is hot from then on)."""
        last = self._sent.get(key)
        if last is not None:
            self._sent[key] = (last[0], last[1], now_ms)

    def forget(self, keep: set[Any]) -> None:
        """Drop keys no longer polled (deleted groups, partitions gone), so the table stays bounded."""
        for key in [k for k in self._sent if k not in keep]:
            del self._sent[key]

    def __len__(self) -> int:
        return len(self._sent)


def bucket_phase(buckets: int, interval_ms: int) -> Callable[[Any], int]:
    """A change-filter key's resend phase: its group's state bucket's place in the interval, so the
    resends of one bucket's groups come in the same poll. Keys are (kind, group, ...)."""
    from collectors.pipeline.rows import bucket_of

    def phase(key: Any) -> int:
        group = key[1] if isinstance(key, tuple) and len(key) > 1 and isinstance(key[1], str) else str(key)
        return bucket_of(group, buckets) * interval_ms // buckets

    return phase
