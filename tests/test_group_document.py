"""The group document's types (coordinator_model/document/types.py): every document the engine
writes for the real captures reads back through them to the same JSON, so no field the writer
writes is unknown to the readers; any document built from the types survives JSON; documents stored
before a field existed still read; what is not a document is a DocumentError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.capture import read_capture
from coordinator_model.document import (
    Conflict,
    Denied,
    DocumentError,
    GenerationDoc,
    GroupDocument,
    LagDoc,
    MemberDoc,
    MemberLag,
    OffsetDoc,
    PartitionLag,
    TimelineSpan,
)
from coordinator_model.rebuild import rebuild

FIXTURES = Path(__file__).parent / "fixtures"
CAPTURES = [*sorted(p.parent for p in FIXTURES.glob("*/*/offsets.jsonl")), FIXTURES / "kafka-demo"]


@pytest.mark.parametrize("folder", CAPTURES, ids=lambda p: p.name)
def test_every_document_of_a_real_capture_reads_back_to_the_same_json(folder: Path) -> None:
    cap = read_capture(folder)
    times = sorted(ev.ts for ev in cap.evidence)
    # the end, and a moment inside the capture: rebalances in progress, members not yet gone
    for at in {times[-1], times[len(times) // 2]}:
        for name, engine in rebuild(cap.evidence, at_ms=at).items():
            written = json.loads(json.dumps(engine.document_json(at)))
            read = GroupDocument.from_json(written)
            assert read.to_json() == written, name
            assert read.group == name


def test_a_classic_member_carries_no_modern_fields_and_a_modern_one_all_of_them() -> None:
    classic = MemberDoc("m-1", client_id="c", assignment=[("t", 0)]).to_json()
    assert "member_epoch" not in classic and classic["assignment"] == [["t", 0]]
    modern = MemberDoc("m-2", modern=True, member_epoch=4, state="Stable", target_assignment=[("t", 1)])
    j = modern.to_json()
    assert j["member_epoch"] == 4 and j["pending_revocation"] == [] and j["target_assignment"] == [["t", 1]]
    assert MemberDoc.from_json(j) == modern


def test_a_document_stored_before_later_fields_existed_still_reads() -> None:
    old = {
        "group": "orders",
        "type": "classic",
        "state": "Stable",
        "generation": 3,
        "members": [{"member_id": "m-1", "assignment": [["orders", 0]]}],
        "timeline": [{"state": "Stable", "start": 5}],
        "generations": [{"generation": 3, "start": 4, "stable": 5}],
        "lag": {"total": 7, "partitions": [{"topic": "orders", "partition": 0, "committed": 3, "lag": 7}]},
    }
    doc = GroupDocument.from_json(old)
    assert doc.conflicts == [] and doc.denied == {} and doc.inferred == [] and doc.as_of is None
    assert doc.lag.totals() == (7, 0.0) and doc.lag.partitions[0].has_commit
    assert doc.owners() == {("orders", 0): "m-1"} and doc.last_change() == 5
    assert doc.generations[0].duration_ms is None and not doc.generations[0].in_progress


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        "orders",
        {"type": "classic"},
        {"group": 7},
        {"group": "g", "members": [{"client_id": "no member id"}]},
        {"group": "g", "members": 5},
        {"group": "g", "lag": {"partitions": [{"partition": 0}]}},
        {"group": "g", "timeline": [{"end": 5}]},
    ],
)
def test_what_is_not_a_document_is_a_document_error(value: object) -> None:
    with pytest.raises(DocumentError):
        GroupDocument.from_json(value)


# -- any document built from the types survives its JSON form ---------------------------------------
names = st.text(min_size=1, max_size=8)
ms = st.integers(min_value=0, max_value=2**62)
opt_ms = st.none() | ms
small = st.integers(min_value=0, max_value=10_000)
tps = st.lists(st.tuples(names, st.integers(min_value=0, max_value=200)), max_size=4)
secs = st.none() | st.floats(min_value=0, max_value=1e9, allow_nan=False)


@st.composite
def members(draw: st.DrawFn) -> MemberDoc:
    modern = draw(st.booleans())
    return MemberDoc(
        member_id=draw(names),
        group_instance_id=draw(st.none() | names),
        client_id=draw(st.none() | names),
        client_host=draw(st.none() | names),
        session_timeout_ms=draw(st.none() | small),
        rebalance_timeout_ms=draw(st.none() | small),
        subscription=draw(st.lists(names, max_size=3)),
        assignment=draw(tps),
        last_heartbeat=draw(opt_ms),
        modern=modern,
        member_epoch=draw(st.none() | small) if modern else None,
        state=draw(st.none() | names) if modern else None,
        pending_revocation=draw(tps) if modern else [],
        target_assignment=draw(st.none() | tps) if modern else None,
    )


@st.composite
def generations(draw: st.DrawFn) -> GenerationDoc:
    in_progress = draw(st.none() | small)
    return GenerationDoc(
        generation=draw(st.none() | small),
        start=draw(opt_ms),
        end=draw(opt_ms),
        stabilized=draw(opt_ms),
        stable=draw(opt_ms),
        duration_ms=draw(st.none() | small),
        members=draw(st.lists(names, max_size=3)),
        members_joined=draw(st.lists(names, max_size=3)),
        members_left=draw(st.lists(names, max_size=3)),
        assignment=draw(st.dictionaries(names, tps, max_size=3)),
        protocol=draw(st.none() | names),
        leader=draw(st.none() | names),
        cause=draw(st.none() | names),
        reason=draw(st.none() | names),
        empty=draw(st.booleans()),
        inferred=draw(st.lists(names, max_size=3)),
        member_id=draw(st.none() | names),
        gap_ms=draw(st.none() | small),
        in_progress_ms=in_progress,
        overdue=draw(st.booleans()) if in_progress is not None else False,
    )


partition_lags = st.builds(
    PartitionLag,
    topic=names,
    partition=small,
    committed=st.none() | ms,
    has_commit=st.booleans(),
    end_offset=st.none() | ms,
    lag=st.none() | ms,
    lag_seconds=secs,
    status=st.none() | names,
    member_id=st.none() | names,
)
documents = st.builds(
    GroupDocument,
    group=names,
    type=st.sampled_from(["classic", "consumer", "share"]),
    state=st.none() | names,
    protocol_type=st.none() | names,
    protocol=st.none() | names,
    generation=st.none() | small,
    group_epoch=st.none() | small,
    assignment_epoch=st.none() | small,
    leader=st.none() | names,
    coordinator_partition=st.none() | st.integers(min_value=0, max_value=49),
    simple=st.booleans(),
    members=st.lists(members(), max_size=3),
    offsets=st.lists(
        st.builds(OffsetDoc, names, small, ms, opt_ms, st.none() | names, st.none() | small), max_size=3
    ),
    timeline=st.lists(st.builds(TimelineSpan, names, ms, opt_ms, st.booleans()), max_size=4),
    generations=st.lists(generations(), max_size=3),
    lag=st.builds(
        LagDoc,
        total=st.none() | ms,
        max_seconds=secs,
        status=st.none() | names,
        partitions=st.lists(partition_lags, max_size=4),
        members=st.lists(
            st.builds(MemberLag, names, ms, st.floats(min_value=0, max_value=1e9, allow_nan=False)),
            max_size=3,
        ),
    ),
    sources=st.lists(names, max_size=4),
    inferred=st.lists(names, max_size=3),
    conflicts=st.lists(st.builds(Conflict, names, opt_ms, opt_ms, small, names), max_size=2),
    denied=st.dictionaries(names, st.builds(Denied, opt_ms, st.none() | names), max_size=2),
    as_of=opt_ms,
)


@settings(max_examples=200, deadline=None)
@given(documents)
def test_any_document_survives_its_json_form(doc: GroupDocument) -> None:
    text = json.dumps(doc.to_json())
    assert GroupDocument.from_json(json.loads(text)) == doc
