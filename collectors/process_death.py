"""A child process that ends with the thread that started it, however that thread's process ends (a
crash or SIGKILL skips every `stop()`): Linux's PR_SET_PDEATHSIG, asked for by the child (before exec
as a `preexec_fn`, or itself at its start); elsewhere nothing."""

from __future__ import annotations

import signal
import sys
from typing import Any


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Resolved at import, in the parent: a child between fork and exec must not import (the import lock
# may be held by another thread at fork time: Spark's and pytest's threads are many).
_PRCTL = _load_prctl()
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGTERM this process when the thread that started it dies, so no broker, redis-server or
    poller outlives its owner. Start children from a thread that lives as long as they should (the
    main thread, a fixture, the thread that keeps them)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
