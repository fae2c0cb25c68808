"""The what-if engine on real group documents: the coordinator model rebuilds the Kafka 4.0 captures
(tests/fixtures/real-kafka-4.0) at a moment the group had members, the adapter turns each document
into what-if input, and every assignor runs on it."""

from __future__ import annotations

import pytest
from conftest import capture_dirs

from collectors.capture import read_capture
from coordinator_model.assignors import ASSIGNORS
from coordinator_model.rebuild import rebuild
from coordinator_model.whatif import run_whatif, whatif_input_from_group_document


def _documents_with_members(folder) -> list[dict]:
    cap = read_capture(folder)
    final = {g: e.document_json() for g, e in rebuild(cap.evidence).items()}
    docs = []
    for name, doc in sorted(final.items()):
        # the moment the group was largest (latest such generation), once that generation was stable
        moments = [
            (len(g["members"]), g.get("stable") or g.get("end"))
            for g in doc.get("generations", [])
            if g.get("members") and isinstance(g.get("stable") or g.get("end"), int)
        ]
        if not moments:
            continue
        at = max(moments)[1]
        engines = rebuild(cap.evidence, at_ms=at)
        if name in engines:
            docs.append(engines[name].document_json(at))
    return docs


@pytest.mark.parametrize("folder", capture_dirs(), ids=lambda p: p.name)
def test_whatif_runs_on_every_captured_group(folder) -> None:
    docs = _documents_with_members(folder)
    if not docs:
        pytest.skip("no group of this capture has members at a stable generation")
    for doc in docs:
        inp = whatif_input_from_group_document(doc)
        assert {m["member_id"] for m in inp["members"]} == {m["member_id"] for m in doc["members"]}
        report = run_whatif(
            {**inp, "changes": [{"kind": "add_members", "count": 1}], "assignors": list(ASSIGNORS)}
        )
        subscribed = {t for m in inp["members"] for t in m["topics"]}
        every = sorted([t, p] for t in subscribed for p in range(inp["partitions"].get(t, 0)))
        for name, result in report["assignors"].items():
            got = sorted(tp for tps in result["assignment"].values() for tp in tps)
            assert got == every, (folder.name, doc["group"], name)
        owned = sum(len(m["owned"]) for m in inp["members"])
        assert report["before"]["assignment_source"] == (
            "owned" if owned else f"computed with {inp['assignor']}"
        )


def test_range_and_roundrobin_reproduce_the_real_brokers_assignments() -> None:
    """Every captured classic group that used range or roundrobin: our assignor, given the members'
    subscriptions from the document, hands out exactly what the real Kafka 4.0 clients did."""
    from coordinator_model.assignors import assign
    from coordinator_model.assignors.description import parse_group

    checked = 0
    for folder in capture_dirs():
        for doc in _documents_with_members(folder):
            inp = whatif_input_from_group_document(doc)
            if inp["assignor"] not in ("range", "roundrobin"):
                continue
            ours = assign(inp["assignor"], parse_group(inp))
            real = {m["member_id"]: sorted(tuple(tp) for tp in m["owned"]) for m in inp["members"]}
            assert {m: sorted(v) for m, v in ours.items()} == real, (folder.name, doc["group"])
            checked += 1
    assert checked >= 8
