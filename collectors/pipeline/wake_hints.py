"""Which state buckets a clock record must reach: a hint the model stage leaves in Redis.

The Admin poller's clock record moves every bucket's event-time watermark on, so timers fire with
no evidence of their own. Sent to all 256 buckets, it made Spark hand every bucket's whole state
(the pickled models of the fleet: about 400 MB at 10,000 groups of 100 partitions) to the Python
workers at every poll, and an idle fleet's micro-batch took 20 s. So the model stage writes, per
bucket, when its earliest group is next due (model_state `_wake_at`), and the first stage sends a
clock record only to the buckets due by then.

It is a hint, never the truth: a bucket with no hint, or a hint that cannot be read (Redis away, a
fresh Redis, a new checkpoint), gets every clock record, as before. A bucket that is not sent a
clock record has nothing due: its watermark inputs stand still until its next evidence or clock,
which changes no result (the model stage's `_wake_at` says what can move with time alone).

Redis hash `<prefix>:pipeline:wake`: bucket -> earliest wake time (ms).
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any, ClassVar

log = logging.getLogger("groupscope.pipeline")

# per process: Redis URL -> client (the pipeline's hints share one: change_hints.py too), and the
# hints read last with when they were read
_CLIENTS: dict[str, Any] = {}
_READ: dict[tuple[str, str], tuple[float, dict[int, int]]] = {}
READ_EVERY_S = 0.5


def hint_client(redis_url: str) -> Any:
    """This process's client of the Redis the pipeline's hints live in (short timeouts: a hint is
    never worth waiting for)."""
    c = _CLIENTS.get(redis_url)
    if c is None:
        import redis

        c = _CLIENTS[redis_url] = redis.Redis.from_url(redis_url, socket_timeout=2, socket_connect_timeout=2)
    return c


def forget_hint_clients() -> None:
    """Close this process's hint clients (tests)."""
    for c in _CLIENTS.values():
        with contextlib.suppress(Exception):
            c.close()
    _CLIENTS.clear()


@dataclass(frozen=True)
class PipelineHints:
    """A hint the pipeline leaves in Redis under `<prefix>:pipeline:<NAME>`, on this process's
    `hint_client`."""

    redis_url: str
    prefix: str = "gs"
    NAME: ClassVar[str] = ""

    @property
    def key(self) -> str:
        return f"{self.prefix}:pipeline:{self.NAME}"

    def _client(self) -> Any:
        return hint_client(self.redis_url)


@dataclass(frozen=True)
class WakeHints(PipelineHints):
    NAME: ClassVar[str] = "wake"

    def write(self, bucket: int, wake_ms: int) -> bool:
        """Set the bucket's earliest wake time. When that fails the old hint, which may say later
        than the truth, is removed (a missing hint sends every clock record); if even that fails,
        False: the caller tries again at its next batch."""
        try:
            self._client().hset(self.key, str(bucket), str(int(wake_ms)))
            return True
        except Exception as e:
            log.debug("wake hint for bucket %s not written: %s", bucket, e)
        with contextlib.suppress(Exception):
            self._client().hdel(self.key, str(bucket))
        return False

    def due(self, buckets: int, clock_ts: int) -> list[int]:
        """The buckets a clock record of `clock_ts` must reach: those due by then or without a hint
        (all of them when the hints cannot be read)."""
        key = (self.redis_url, self.prefix)
        now = time.monotonic()
        cached = _READ.get(key)
        if cached is None or now - cached[0] > READ_EVERY_S:
            try:
                raw = self._client().hgetall(self.key)
                hints = {int(k): int(v) for k, v in raw.items()}
            except Exception as e:
                log.debug("wake hints not readable, the clock goes to every bucket: %s", e)
                return list(range(buckets))
            cached = _READ[key] = (now, hints)
        hints = cached[1]
        return [b for b in range(buckets) if hints.get(b, clock_ts) <= clock_ts]
