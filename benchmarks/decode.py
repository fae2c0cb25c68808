"""Decode throughput and memory of the `__consumer_offsets` codec, on a mix shaped like a real topic.

The mix (built with the codec's encoder, seeded): ~96% offset commits (value v3, some with
metadata), ~1% offset-commit tombstones, ~2% classic GroupMetadata (v3, 10-100 members with
consumer-protocol subscription/assignment, some with sticky userData), ~1% KIP-848 records.

Prints, for one process on one core (CPU time, so a busy machine does not skew it):
- records/s of `decode_record` over the whole mix (the pipeline's hot path) and per kind;
- records/s of the `groupscope decode` path (capture line -> JSON line), in process;
- peak memory: tracemalloc peak of decoding the mix while keeping no records, and the process
  max RSS.

usage: python benchmarks/decode.py [--records 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import resource
import time
import tracemalloc
from collections.abc import Callable

from collectors.codec import records as r
from collectors.codec.compiler import uuid_str
from collectors.codec.decoder import decode_record
from collectors.codec.encoder import (
    encode_assignment,
    encode_key,
    encode_sticky_user_data,
    encode_subscription,
    encode_value,
)

Raw = tuple[bytes, bytes | None]


def _group_metadata(rng: random.Random, group: str, topics: list[str]) -> Raw:
    n = rng.randint(10, 100)
    sticky = rng.random() < 0.3
    parts = [(t, p) for t in topics for p in range(rng.randint(4, 64))]
    rng.shuffle(parts)
    members = []
    for i in range(n):
        mine = parts[i::n]
        by_topic: dict[str, list[int]] = {}
        for t, p in mine:
            by_topic.setdefault(t, []).append(p)
        owned = [r.TopicPartition(t, ps) for t, ps in by_topic.items()]
        user_data = encode_sticky_user_data(r.StickyAssignorUserData(1, owned, 7)) if sticky else b""
        member_id = f"consumer-{group}-{i}-{rng.getrandbits(64):016x}-{rng.getrandbits(64):016x}"
        sub = r.ConsumerProtocolSubscription(3, list(topics), user_data, owned, 7, None)
        asg = r.ConsumerProtocolAssignment(3, owned, user_data)
        members.append(
            r.MemberMetadata(
                member_id,
                None,
                f"client-{i}",
                f"/10.0.{i // 250}.{i % 250}",
                300000,
                45000,
                encode_subscription(sub),
                encode_assignment(asg),
            )
        )
    value = r.GroupMetadataValue(
        "consumer",
        rng.randint(1, 500),
        "cooperative-sticky" if sticky else "range",
        members[0].member_id,
        1_700_000_000_000,
        members,
    )
    return encode_key(r.GroupMetadataKey(group)), encode_value(2, value, 3)


def _kip848(rng: random.Random, group: str) -> Raw:
    member = base64.urlsafe_b64encode(rng.randbytes(16))[:22].decode()
    tps = [
        r.TopicIdPartitions(uuid_str(rng.randbytes(16)), sorted(rng.sample(range(64), 8))) for _ in range(3)
    ]
    kind = rng.randrange(3)
    if kind == 0:
        return (
            encode_key(r.ConsumerGroupCurrentMemberAssignmentKey(group, member)),
            encode_value(8, r.ConsumerGroupCurrentMemberAssignmentValue(12, 11, 0, tps, [])),
        )
    if kind == 1:
        return (
            encode_key(r.ConsumerGroupTargetAssignmentMemberKey(group, member)),
            encode_value(7, r.ConsumerGroupTargetAssignmentMemberValue(tps)),
        )
    return encode_key(r.ConsumerGroupMetadataKey(group)), encode_value(3, r.ConsumerGroupMetadataValue(12))


def build_mix(n: int, seed: int = 1) -> dict[str, list[Raw]]:
    rng = random.Random(seed)
    groups = [f"service-{i:03d}-consumer-group" for i in range(200)]
    topics = {g: [f"orders.events.v{j}.{g[-20:]}" for j in range(rng.randint(1, 4))] for g in groups}
    mix: dict[str, list[Raw]] = {"offset_commit": [], "tombstone": [], "group_metadata": [], "kip848": []}
    gm_cache: list[Raw] = [_group_metadata(rng, g, topics[g]) for g in groups[:40]]
    for _ in range(n):
        x = rng.random()
        g = rng.choice(groups)
        if x < 0.96:
            key = encode_key(r.OffsetCommitKey(g, rng.choice(topics[g]), rng.randrange(64)))
            meta = "" if rng.random() < 0.9 else "checkpoint=" + str(rng.getrandbits(40))
            value = r.OffsetCommitValue(
                rng.getrandbits(40), rng.randrange(20), meta, 1_700_000_000_000 + rng.getrandbits(30)
            )
            mix["offset_commit"].append((key, encode_value(1, value, 3)))
        elif x < 0.97:
            key = encode_key(r.OffsetCommitKey(g, rng.choice(topics[g]), rng.randrange(64)))
            mix["tombstone"].append((key, None))
        elif x < 0.99:
            mix["group_metadata"].append(rng.choice(gm_cache))
        else:
            mix["kip848"].append(_kip848(rng, g))
    return mix


def decode_and_touch(key: bytes, value: bytes | None) -> object:
    """decode_record plus reading every member's payloads (what the coordinator model does)."""
    rec = decode_record(key, value)
    if rec.record_type == 2 and rec.value is not None:
        for m in rec.value.members:
            m.subscription_decoded  # noqa: B018 - the access decodes
            m.assignment_decoded  # noqa: B018
    return rec


def rate(
    records: list[Raw], repeat: int, fn: Callable[[bytes, bytes | None], object] = decode_record
) -> float:
    """Records per CPU-second of this process (process_time: the machine may be shared), best of
    `repeat` runs."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for key, value in records:
            fn(key, value)
        best = min(best, time.process_time() - t0)
    return len(records) / best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    t0 = time.perf_counter()
    mix = build_mix(args.records)
    everything = [rec for kind in mix.values() for rec in kind]
    random.Random(2).shuffle(everything)
    total_bytes = sum(len(k) + len(v or b"") for k, v in everything)
    print(
        f"mix: {len(everything)} records, {total_bytes / 1e6:.1f} MB "
        + ", ".join(f"{k} {len(v)}" for k, v in mix.items())
        + f" (built in {time.perf_counter() - t0:.1f}s)"
    )
    gm_members = [len(decode_record(k, v).value.members) for k, v in mix["group_metadata"][:200]]
    print(
        f"GroupMetadata members: {min(gm_members)}-{max(gm_members)}, "
        f"mean {sum(gm_members) / len(gm_members):.0f}"
    )

    print(f"decode_record, whole mix:      {rate(everything, args.repeat):>12,.0f} records/s")
    touched = rate(everything, args.repeat, decode_and_touch)
    print(f"  + every member payload read: {touched:>12,.0f} records/s")
    for kind, recs in mix.items():
        print(f"decode_record, {kind:<16}{rate(recs, args.repeat):>12,.0f} records/s")

    # The CLI path in process: capture line (JSON, base64) -> record -> kafka-dump-log JSON line.
    from collectors.cli.decode_cmd import decode_lines

    lines = [
        json.dumps(
            {
                "topic": "__consumer_offsets",
                "partition": i % 50,
                "offset": i,
                "timestamp": 1,
                "timestamp_type": 1,
                "key": base64.b64encode(k).decode(),
                "value": None if v is None else base64.b64encode(v).decode(),
            }
        )
        for i, (k, v) in enumerate(everything[:50_000])
    ]
    best = float("inf")
    for _ in range(args.repeat):
        t = time.process_time()
        for _line in decode_lines(lines):
            pass
        best = min(best, time.process_time() - t)
    print(f"groupscope decode path (JSON in/out): {len(lines) / best:>10,.0f} records/s")

    tracemalloc.start()
    for key, value in everything:
        decode_record(key, value)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory while decoding (tracemalloc, records not kept): {peak / 1024:.0f} KiB")
    print(f"process max RSS (includes the {total_bytes / 1e6:.0f} MB input mix): {rss_mb:.0f} MB")


if __name__ == "__main__":
    main()
