"""Benchmark: evidence per second through the coordinator model, and memory per group.

10,000 classic groups (3 members each, 12 partitions) live through joins, a LeaveGroup and a session
expiry: broker log lines, GroupMetadata records, offset commits every second, heartbeats and
log-end offsets, built directly as evidence dataclasses. Prints events/s for `GroupEngine.apply`
(and for `document()`), then the pickled size (what the Spark state store keeps) and the
tracemalloc size of one group.

    .venv/bin/python benchmarks/model.py [--groups 10000] [--seconds 60]
"""

from __future__ import annotations

import argparse
import gc
import pickle
import statistics
import time
import tracemalloc

from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import (
    BrokerLogEvent,
    EndOffset,
    GroupMetadataSnapshot,
    HeartbeatEvent,
    MemberSnapshot,
    OffsetCommit,
)
from coordinator_model.evidence_order import sort_evidence


def group_evidence(i: int, seconds: int) -> list:
    g, topic = f"bench-{i}", f"topic-{i % 100}"
    t0 = 1_700_000_000_000 + i
    members = [f"m{k}-{i:05d}-0000-0000-0000-000000000000" for k in range(3)]
    parts = [(topic, p) for p in range(12)]
    evs: list = []

    def record(ts: int, gen: int, live: list[str]) -> None:
        share = {m: tuple(parts[k :: len(live)]) for k, m in enumerate(live)}
        snaps = tuple(
            MemberSnapshot(m, None, m[:2], "/10.0.0.1", 10_000, 300_000, (topic,), share[m]) for m in live
        )
        evs.append(GroupMetadataSnapshot(ts, g, False, "consumer", gen, "range", live[0], ts - 2, snaps))

    gen = 0
    live: list[str] = []
    for k, m in enumerate(members):  # joins 1 s apart
        ts = t0 + k * 1000
        reason = f"Adding new member {m} with group instance id null; client reason: not provided"
        evs.append(BrokerLogEvent(ts, g, "prepare", generation=gen, reason=reason))
        gen += 1
        live.append(m)
        evs.append(BrokerLogEvent(ts + 40, g, "stabilized", generation=gen, member_count=len(live)))
        evs.append(BrokerLogEvent(ts + 42, g, "assignment", generation=gen, member_id=live[0]))
        record(ts + 42, gen, live)
        evs.append(HeartbeatEvent(ts + 5, g, m, "join", client_id=m[:2], session_timeout_ms=10_000))
    leave_at, expire_at = t0 + seconds * 400, t0 + seconds * 700
    for s in range(seconds):  # per second: heartbeats, commits, log-end offsets
        ts = t0 + 3000 + s * 1000
        for m in live:
            evs.append(HeartbeatEvent(ts + 7, g, m, "heartbeat", state="steady", session_timeout_ms=10_000))
        for topic_, p in parts:
            evs.append(
                OffsetCommit(ts + 11, g, topic_, p, s * 50, ts + 11, log_offset=i * 10_000_000 + s * 100 + p)
            )
            evs.append(EndOffset(ts + 13, topic_, p, s * 50 + 20))
        if ts <= leave_at < ts + 1000:
            gone = live.pop()
            evs.append(BrokerLogEvent(ts + 500, g, "member_left", member_id=gone))
            evs.append(
                BrokerLogEvent(ts + 500, g, "prepare", generation=gen,
                               reason=f"explicit `LeaveGroup` request for ({gone}) members.")
            )  # fmt: skip
            gen += 1
            evs.append(BrokerLogEvent(ts + 900, g, "stabilized", generation=gen, member_count=len(live)))
            evs.append(BrokerLogEvent(ts + 901, g, "assignment", generation=gen, member_id=live[0]))
            record(ts + 901, gen, live)
        if ts <= expire_at < ts + 1000:
            gone = live.pop()
            evs.append(BrokerLogEvent(ts + 600, g, "member_failed", member_id=gone))
            evs.append(
                BrokerLogEvent(ts + 600, g, "prepare", generation=gen,
                               reason=f"removing member {gone} on heartbeat expiration")
            )  # fmt: skip
            gen += 1
            evs.append(BrokerLogEvent(ts + 950, g, "stabilized", generation=gen, member_count=len(live)))
            evs.append(BrokerLogEvent(ts + 951, g, "assignment", generation=gen, member_id=live[0]))
            record(ts + 951, gen, live)
    return sort_evidence(evs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--seconds", type=int, default=60, help="simulated seconds of activity per group")
    args = ap.parse_args()

    # evidence is built per group outside the timed part, so memory holds engines, not inputs
    n, dt, build = 0, 0.0, 0.0
    engines = []
    for i in range(args.groups):
        t = time.perf_counter()
        evs = group_evidence(i, args.seconds)
        t1 = time.perf_counter()
        eng = GroupEngine(f"bench-{i}")
        apply = eng.apply
        for ev in evs:
            apply(ev)
        dt += time.perf_counter() - t1
        build += t1 - t
        n += len(evs)
        engines.append(eng)
    print(f"built {n:,} evidence for {args.groups:,} groups in {build:.1f} s (not timed)")
    print(f"apply:    {n / dt:,.0f} evidence/s ({dt:.1f} s for {n:,}; {n / args.groups:.0f} per group)")

    t = time.perf_counter()
    for eng in engines:
        eng.advance(eng.now + 1000)
    dt = time.perf_counter() - t
    print(f"advance:  {args.groups / dt:,.0f} groups/s")

    sample = engines[:: max(1, args.groups // 1000)]
    # per-group costs below are measured on the sample alone: with 10,000 groups (millions of objects)
    # in this process, the cyclic GC would dominate them, and the pipeline keeps state outside the heap
    del engines
    gc.collect()
    t = time.perf_counter()
    docs = [eng.document_json() for eng in sample]
    dt = time.perf_counter() - t
    print(f"document: {len(sample) / dt:,.0f} documents/s")
    assert all(d["generation"] == 5 and d["state"] == "Stable" for d in docs), docs[0]["generation"]

    sizes = [len(pickle.dumps(eng, protocol=pickle.HIGHEST_PROTOCOL)) for eng in sample]
    print(f"pickled:  {statistics.mean(sizes) / 1024:.1f} KiB per group (max {max(sizes) / 1024:.1f} KiB)")
    t = time.perf_counter()
    for eng in sample:
        pickle.loads(pickle.dumps(eng, protocol=pickle.HIGHEST_PROTOCOL))
    print(f"pickle round trip: {len(sample) / (time.perf_counter() - t):,.0f} groups/s")

    del docs
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = []
    for i in range(500):
        evs = group_evidence(i, args.seconds)
        eng = GroupEngine(f"bench-{i}")
        for ev in evs:
            eng.apply(ev)
        kept.append(eng)
        del evs
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    print(
        f"memory:   {used / len(kept) / 1024:.1f} KiB per group in the heap (tracemalloc, {len(kept)} groups)"
    )


if __name__ == "__main__":
    main()
