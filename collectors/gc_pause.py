"""Work that allocates many objects and makes no reference cycles, kept out of the cyclic garbage
collector's way.

A burst of allocations sets off the cyclic collector again and again, and each full collection walks
every object the process holds: in a collector's Python worker (its routes, log-end histories and
caches) and at 10,000 commits a second, that was a fifth of the first stage's time, charged to
whatever line happened to allocate. What runs inside `no_cyclic_gc` (decoded records, commit runs,
summaries) holds no cycles, so reference counting frees it all the same."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
