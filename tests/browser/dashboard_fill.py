"""Fill a Redis with what the collector writes for the real Kafka 4.0 captures, for the dashboard tests.

Documents come from the coordinator model (`groupscope model CAPTURE --json [--at MS]`), the same
documents the pipeline writes per group, and go into Redis through RedisStore, the pipeline's writer.
Two captures are taken mid-run, as a live collector would have seen them then: lag-ramp at its lag
peak (t=35 s, one member, lag history every 5 s) and kip848-lifecycle with its members (t=50 s)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

CAPTURES = Path(__file__).parent.parent / "fixtures" / "real-kafka-4.0"
GROUPSCOPE = [sys.executable, "-m", "collectors.cli.main"]
MID_RUN_S = {"lag-ramp": 35.0, "kip848-lifecycle": 50.0}
LAG_HISTORY_CAPTURE = "lag-ramp"


def model_docs(capture: Path, at_ms: int | None = None) -> list[dict[str, Any]]:
    argv = [*GROUPSCOPE, "model", str(capture), "--json"]
    if at_ms is not None:
        argv += ["--at", str(at_ms)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)["groups"]


def started_ms(capture: Path) -> int:
    return int(json.loads((capture / "meta.json").read_text())["started_ms"])


def capture_documents() -> dict[str, list[dict[str, Any]]]:
    """{capture name: its groups' documents} (final, or mid-run for MID_RUN_S captures)."""
    caps = sorted(p for p in CAPTURES.iterdir() if (p / "offsets.jsonl").exists())

    def one(cap: Path) -> tuple[str, list[dict[str, Any]]]:
        at = MID_RUN_S.get(cap.name)
        return cap.name, model_docs(cap, started_ms(cap) + int(at * 1000) if at else None)

    with ThreadPoolExecutor(4) as pool:
        return dict(pool.map(one, caps))


def lag_points(capture: Path, until_s: float, step_s: float = 5.0) -> list[tuple[int, dict[str, Any]]]:
    start = started_ms(capture)
    times = [start + int(t * 1000) for t in range(int(step_s), int(until_s) + 1, int(step_s))]
    with ThreadPoolExecutor(4) as pool:
        docs = list(pool.map(lambda at: model_docs(capture, at), times))
    return [(at, d) for at, ds in zip(times, docs, strict=True) for d in ds]


def fill(redis_url: str) -> dict[str, list[dict[str, Any]]]:
    """Write every capture's documents, the lag history of lag-ramp and a collector heartbeat."""
    import redis

    from collectors.storage.redis_store import RedisStore

    store = RedisStore(redis.Redis.from_url(redis_url))
    docs = capture_documents()
    now = int(time.time() * 1000)
    for group_docs in docs.values():
        for d in group_docs:
            store.write_group(d, now, as_of_ms=d.get("as_of"))
    cap = CAPTURES / LAG_HISTORY_CAPTURE
    for at, d in lag_points(cap, MID_RUN_S[LAG_HISTORY_CAPTURE]):
        lag = d.get("lag") or {}
        store.write_lag_points(
            d["group"],
            at,
            total=int(lag.get("total") or 0),
            lag_seconds=float(lag.get("max_seconds") or 0),
            partitions={
                f"{p['topic']}:{p['partition']}": p.get("lag") or 0 for p in lag.get("partitions") or []
            },
            members={m["member_id"]: m.get("lag") or 0 for m in lag.get("members") or []},
        )
    store.heartbeat_collector(now, batch_id=1, event_ms=now)
    return docs
