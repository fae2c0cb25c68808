"""Clock records go only to the state buckets with something due (collectors/pipeline/wake_hints.py),
and to every bucket whenever that is not known."""

from __future__ import annotations

import json
import uuid

import pytest

from collectors.demo.servers.processes import free_port
from collectors.pipeline import wake_hints
from collectors.pipeline.route import _route_rows
from collectors.pipeline.wake_hints import WakeHints


def _clock(ts: int) -> dict[str, list]:
    value = json.dumps({"ts": ts, "clock": True}).encode()
    return {
        "topic": ["admin"],
        "partition": [0],
        "offset": [0],
        "timestamp": [ts],
        "key": [b""],
        "value": [value],
    }


def _buckets(out: dict[str, list]) -> list[int]:
    return sorted(out["bucket"])


@pytest.mark.servers
def test_a_clock_record_reaches_the_buckets_due_and_those_without_a_hint(redis_server) -> None:
    wake = WakeHints(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}")
    wake_hints._READ.clear()
    assert wake.write(0, 1_000) and wake.write(1, 5_000) and wake.write(2, 9_000)
    out = _route_rows(_clock(5_000), {"admin": "admin"}, 4, wake)
    assert _buckets(out) == [0, 1, 3]  # 2 is due later; 3 has no hint
    assert all(g is None for g in out["group"])


def test_without_readable_hints_every_bucket_gets_the_clock() -> None:
    wake = WakeHints(f"redis://127.0.0.1:{free_port()}/0")  # nobody listens
    wake_hints._READ.clear()
    assert _buckets(_route_rows(_clock(5_000), {"admin": "admin"}, 4, wake)) == [0, 1, 2, 3]
    assert not wake.write(0, 1)  # and a hint that cannot be written says so (written again later)
