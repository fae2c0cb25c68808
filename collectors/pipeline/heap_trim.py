"""Handing freed heap back to the system after a big transient (Dask's workers do the same).

glibc keeps the memory a process frees for its own later use, so a Python worker that once held a
catch-up's rows keeps that high-water mark as resident memory long after, idle or not: the collector's
process tree then counts every worker at its own peak at once. `malloc_trim(0)` gives the free pages
back. It costs a walk over the free heap (milliseconds), so a process does it at most every
`MIN_INTERVAL_S`. Where glibc is not the allocator, it does nothing.

Only Spark's Python workers call it, between tasks' work. The driver does not: it holds the arena
locks while it walks, and the driver's threads (the Admin poller's fast describes every 300 ms, whose
timing bounds the rebalances the model infers, librdkafka's, py4j's) would wait on them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time

MIN_INTERVAL_S = 2.0

_last = 0.0
_trim = None


def _malloc_trim():
    global _trim
    if _trim is None:
        try:
            _trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = False
    return _trim


def release(force: bool = False) -> bool:
    """Give the free heap back to the system, unless this process did within MIN_INTERVAL_S; whether
    it did now."""
    global _last
    now = time.monotonic()
    trim = _malloc_trim()
    if not trim or (not force and now - _last < MIN_INTERVAL_S):
        return False
    _last = now
    trim(0)
    return True
