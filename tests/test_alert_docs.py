"""Hand-built group documents (the shape of `groupscope model --json`) for the alert tests (helpers,
no tests of their own)."""

from __future__ import annotations

import uuid
from typing import Any

from coordinator_model.document.types import (
    GenerationDoc,
    GroupDocument,
    LagDoc,
    MemberDoc,
    PartitionLag,
    SubtopologyDoc,
    TasksDoc,
    TimelineSpan,
    TopologyDoc,
)

S = 1000
MIN = 60 * S
T0 = 1_800_000_000_000  # an arbitrary epoch ms


def mid(client: str) -> str:
    """A member id as librdkafka builds it: client.id-uuid4."""
    return f"{client}-{uuid.uuid4()}"


def gen(
    n: int,
    start: int,
    cause: str,
    joined: list[str] | tuple[str, ...] = (),
    left: list[str] | tuple[str, ...] = (),
    members: int | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """A generation as the engine writes it (`members`: how many after it, by default one)."""
    return GenerationDoc(
        generation=n,
        start=start,
        end=start + 200,
        duration_ms=200,
        members=[f"m{i}" for i in range(1 if members is None else members)],
        members_joined=list(joined),
        members_left=list(left),
        cause=cause,
        reason=reason,
        empty=members == 0,
    ).to_json()


def doc(
    group: str,
    generations: list[dict[str, Any]] | None = None,
    timeline: list[tuple[str, int, int | None]] | None = None,
    lag: list[dict[str, Any]] | None = None,
    state: str = "Stable",
    members: list[MemberDoc] | None = None,
) -> dict[str, Any]:
    """A classic group's document as the engine writes it (GroupDocument.to_json)."""
    rows = [PartitionLag.from_json(r) for r in lag or []]
    known = [r.lag for r in rows if r.lag is not None]
    seconds = [r.lag_seconds for r in rows if r.lag_seconds is not None]
    return GroupDocument(
        group=group,
        type="classic",
        state=state,
        protocol_type="consumer",
        protocol="range",
        generation=(generations or [{}])[-1].get("generation"),
        members=members or [],
        timeline=[TimelineSpan(s, a, b) for s, a, b in (timeline or [])],
        generations=[GenerationDoc.from_json(g) for g in generations or []],
        lag=LagDoc(
            total=sum(known) if known else None,
            max_seconds=max(seconds) if seconds else None,
            partitions=rows,
        ),
    ).to_json()


def part(
    topic: str, p: int, lag: int, seconds: float, status: str | None = "OK", committed: int = 1000
) -> dict[str, Any]:
    """A partition's lag row as the engine writes it."""
    return PartitionLag(
        topic=topic,
        partition=p,
        committed=committed,
        has_commit=True,
        end_offset=committed + lag,
        lag=lag,
        lag_seconds=seconds,
        status=status,
    ).to_json()


def storm_doc(group: str = "storm", flaps: int = 20, t0: int = T0) -> tuple[dict[str, Any], int]:
    """Three stable members, then a new flapping process every 3 s (joins, stays 2 s, leaves)."""
    stable = [mid(f"s{i}") for i in (1, 2, 3)]
    gens = [
        gen(1, t0, "group_created", [stable[0]], members=1),
        gen(2, t0 + 1 * S, "member_joined", [stable[1]], members=2),
        gen(3, t0 + 2 * S, "member_joined", [stable[2]], members=3),
    ]
    n = 4
    t = t0 + 10 * S
    for i in range(flaps):
        f = mid(f"f{i + 1:02d}")
        gens.append(gen(n, t, "member_joined", [f], members=4))
        gens.append(gen(n + 1, t + 2 * S, "member_left", left=[f], members=3))
        n += 2
        t += 3 * S
    timeline = [("Empty", t0 - 10, t0), ("Stable", t0, None)]
    return doc(group, gens, timeline), t


def steady_doc(group: str, t0: int = T0, lag: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A group that formed long ago and has been Stable since."""
    gens = [gen(1, t0, "group_created", [mid("a"), mid("b")], members=2)]
    return doc(group, gens, [("Empty", t0 - 10, t0), ("Stable", t0, None)], lag=lag)


def shifted(doc_: dict[str, Any], delta_ms: int) -> dict[str, Any]:
    """A copy of a document moved in time by delta_ms (timeline and generations)."""
    import copy

    d = copy.deepcopy(doc_)
    for row in [*(d.get("timeline") or []), *(d.get("generations") or [])]:
        for k in ("start", "end"):
            if row.get(k) is not None:
                row[k] += delta_ms
    return d


def capture_doc(scenario: str, offset_ms: int, now_ms: int) -> dict[str, Any]:
    """The model's document of a capture's (only) group as of offset_ms into it, moved to now_ms."""
    from conftest import CAPTURES

    from collectors.capture import read_capture
    from coordinator_model.rebuild import rebuild

    cap = read_capture(CAPTURES / scenario)
    at = min(e.ts for e in cap.evidence) + offset_ms
    [engine] = rebuild(cap.evidence, at_ms=at).values()
    return shifted(engine.document_json(at), now_ms - at)


def wordcount_doc(group: str = "wordcount") -> GroupDocument:
    """A streams group (KIP-1071): a word count's two subtopologies (0 reads `lines` and writes the
    repartition topic, 1 reads it), two members running tasks 0_0 and 1_0, and 0_1; lag on three
    partitions, so task 0_0 lags 10 (2.5 s), 0_1 none, 1_0 7 (1 s)."""
    return GroupDocument(
        group=group,
        type="streams",
        state="Stable",
        group_epoch=3,
        assignment_epoch=3,
        members=[
            MemberDoc("m1", client_id="app-1", modern=True, tasks=TasksDoc(active=["0_0", "1_0"])),
            MemberDoc("m2", client_id="app-2", modern=True, tasks=TasksDoc(active=["0_1"])),
        ],
        topology=TopologyDoc(
            3,
            [
                SubtopologyDoc("0", source_topics=["lines"], repartition_sink_topics=["words-repartition"]),
                SubtopologyDoc("1", repartition_source_topics=["words-repartition"]),
            ],
        ),
        lag=LagDoc(
            partitions=[
                PartitionLag("lines", 0, 90, True, 100, 10, 2.5, "OK", "m1"),
                PartitionLag("lines", 1, 100, True, 100, 0, 0.0, "OK", "m2"),
                PartitionLag("words-repartition", 0, 40, True, 47, 7, 1.0, "OK", "m1"),
            ]
        ),
    )
