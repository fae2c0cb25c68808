"""The reconstruction against real Kafka 4.0 captures: final state, generation, protocol, members and
assignment equal the last Admin API snapshot; generations and causes equal the broker log; the
timeline covers the scenario without gaps or overlaps. Then again with every subset of the sources,
checking what each subset can still know (and that the rest is marked inferred)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import capture_dirs

from collectors.capture import read_capture
from coordinator_model.broker_log import BrokerLogEvent, cause_of_reason
from coordinator_model.evidence import DescribeSnapshot, GroupMetadataSnapshot, HeartbeatEvent
from coordinator_model.rebuild import rebuild
from coordinator_model.states import GroupState

SOURCES = ("offsets", "broker_log", "heartbeats", "describe", "end_offsets")
CLASSIC_STATES = {s.value for s in GroupState}
_CACHE: dict[Path, list] = {}


def evidence(folder: Path) -> list:
    if folder not in _CACHE:
        cap = read_capture(folder)
        assert not cap.errors, cap.errors[:3]
        _CACHE[folder] = cap.evidence
    return _CACHE[folder]


def last_snapshots(evs: list) -> dict[str, DescribeSnapshot]:
    out: dict[str, DescribeSnapshot] = {}
    for ev in sorted((e for e in evs if isinstance(e, DescribeSnapshot)), key=lambda e: e.ts):
        out[ev.group] = ev
    return out


def broker_causes(evs: list) -> dict[str, dict[int, str]]:
    """{group: {generation: cause}} as the broker's own lines state them."""
    out: dict[str, dict[int, str]] = {}
    for ev in evs:
        if isinstance(ev, BrokerLogEvent) and ev.kind == "prepare":
            cause = cause_of_reason(ev.reason)
            out.setdefault(ev.group, {})[ev.generation + 1] = cause
    return out


def stalled_members(evs: list) -> set[str]:
    return {e.member_id for e in evs if isinstance(e, HeartbeatEvent) and e.event == "poll_stall"}


def members_of(doc: dict) -> dict[str, list]:
    return {m["member_id"]: sorted(map(tuple, m["assignment"])) for m in doc["members"]}


def snapshot_members(snap: DescribeSnapshot) -> dict[str, list]:
    return {m.member_id: sorted(m.assignment) for m in snap.members}


def check_timeline(doc: dict) -> None:
    rows = doc["timeline"]
    assert rows, doc["group"]
    for a, b in itertools.pairwise(rows):
        assert a["end"] == b["start"], (doc["group"], a, b)  # no gap, no overlap
        assert a["start"] <= a["end"]
        if doc["type"] == "classic" and a["state"] != "Dead":
            assert GroupState.parse(b["state"]).can_follow(GroupState.parse(a["state"])), (a, b)
    assert rows[-1]["end"] is None
    gens = [g["generation"] for g in doc["generations"]]
    assert gens == sorted(gens) and len(set(gens)) == len(gens)


def check_cause(group: str, gen: int, want: str, got: str | None, stalled: set[str], doc: dict) -> None:
    if want == "member_joined" and gen == 1:
        assert got in ("member_joined", "group_created")
    elif want == "member_left" and got == "poll_timeout":
        row = next(g for g in doc["generations"] if g["generation"] == gen)
        if stalled:
            assert set(row["members_left"]) & stalled, (group, gen)  # the client said it stopped polling
        else:
            # no client events: read from the member's commits, and marked inferred (the scenario's own
            # account holds it against the truth: tests/test_model_fidelity.py)
            assert "cause" in row["inferred"] and row["member_id"] in row["members_left"], (group, gen)
    else:
        assert got == want, (group, gen)


@pytest.mark.parametrize("folder", capture_dirs(), ids=lambda p: p.name)
def test_capture_with_all_sources(folder: Path) -> None:
    evs = evidence(folder)
    docs = {g: e.document_json() for g, e in rebuild(evs).items()}
    snaps = last_snapshots(evs)
    causes = broker_causes(evs)
    stalled = stalled_members(evs)
    assert set(snaps) <= set(docs)
    for group, snap in snaps.items():
        doc = docs[group]
        check_timeline(doc)
        if snap.type == "consumer":
            assert doc["type"] == "consumer"
            assert (doc["state"], doc["group_epoch"], doc["assignment_epoch"]) == (
                snap.broker_state,
                snap.group_epoch,
                snap.assignment_epoch,
            )
        else:
            if snap.state != "Dead":
                assert doc["state"] == snap.state, group
            if snap.assignor:
                assert doc["protocol"] == snap.assignor
        assert members_of(doc) == snapshot_members(snap), group
        gens = {g["generation"]: g["cause"] for g in doc["generations"]}
        for gen, want in causes.get(group, {}).items():
            check_cause(group, gen, want, gens.get(gen), stalled, doc)
        if causes.get(group):
            assert doc["generation"] == max(causes[group])
        for g in doc["generations"]:
            if g["generation"] in causes.get(group, {}):
                assert g["reason"] and "cause" not in g["inferred"]


SUBSETS = [set(c) for n in range(1, len(SOURCES) + 1) for c in itertools.combinations(SOURCES, n)]


@pytest.mark.parametrize("folder", capture_dirs(), ids=lambda p: p.name)
def test_capture_with_every_subset_of_sources(folder: Path) -> None:
    evs = evidence(folder)
    full = {g: e.document_json() for g, e in rebuild(evs).items()}
    snaps = last_snapshots(evs)
    causes = broker_causes(evs)
    stalled = stalled_members(evs)
    records = {e.group: e for e in sorted(evs, key=lambda e: e.ts) if isinstance(e, GroupMetadataSnapshot)}
    for subset in SUBSETS:
        part = [e for e in evs if e.source in subset]
        docs = {g: e.document_json() for g, e in rebuild(part).items()}
        for group, doc in docs.items():
            if doc["type"] == "classic" and doc["timeline"]:
                check_timeline(doc)
            assert doc["sources"] == sorted(
                subset - {"end_offsets"} & set(doc["sources"]) | set(doc["sources"])
            )
            if doc["type"] == "classic" and "broker_log" not in subset:
                assert any("no broker log" in n for n in doc["inferred"]), (subset, group)
                assert all("cause" in g["inferred"] for g in doc["generations"]), (subset, group)
        for group, snap in snaps.items():
            doc = docs.get(group)
            if doc is None:
                assert not any(e.group == group for e in part if e.source != "end_offsets")
                continue
            if "describe" in subset:
                # Admin snapshots are exact: the end state, members and assignment follow
                assert members_of(doc) == snapshot_members(snap), (subset, group)
                if snap.type == "classic" and snap.state != "Dead":
                    assert doc["state"] == snap.state, (subset, group)
            if "offsets" in subset and group in records and "describe" not in subset:
                rec = records[group]
                want = {m.member_id: sorted(m.assignment) for m in rec.members}
                assert members_of(doc) == want, (subset, group)
            if snap.type == "consumer" and ("offsets" in subset or "describe" in subset):
                assert doc["state"] == snap.broker_state, (subset, group)
            if snap.type == "consumer" and ({"offsets", "broker_log", "describe"} & subset):
                assert doc["group_epoch"] == full[group]["group_epoch"], (subset, group)
            if "broker_log" in subset and snap.type == "classic":
                gens = {g["generation"]: g["cause"] for g in doc["generations"]}
                for gen, want in causes.get(group, {}).items():
                    check_cause(
                        group, gen, want, gens.get(gen), stalled if "heartbeats" in subset else set(), doc
                    )
                assert doc["generation"] == full[group]["generation"]
            if "offsets" in subset and snap.type == "classic" and group in records:
                # records carry the generation of every completed rebalance
                assert doc["generation"] == full[group]["generation"], (subset, group)
                assert doc["protocol_type"] == full[group]["protocol_type"]


def test_model_cli_json_and_at(tmp_path: Path) -> None:
    from collectors.cli.main import cli

    folder = capture_dirs()[0]
    runner = CliRunner()
    res = runner.invoke(cli, ["model", str(folder), "--json"])
    assert res.exit_code == 0, res.output
    groups = json.loads(res.stdout)["groups"]
    keys = {
        "group",
        "type",
        "state",
        "protocol_type",
        "protocol",
        "generation",
        "group_epoch",
        "assignment_epoch",
        "leader",
        "coordinator_partition",
        "members",
        "offsets",
        "timeline",
        "generations",
        "lag",
        "sources",
        "inferred",
    }
    assert groups and keys <= set(groups[0])
    first_stable = next(r for r in groups[0]["timeline"] if r["state"] == "Stable")
    at = first_stable["start"] + 1
    res = runner.invoke(cli, ["model", str(folder), "--json", "--at", str(at)])
    early = json.loads(res.stdout)["groups"][0]
    assert early["state"] == "Stable" and early["generation"] == 1
    assert all(r["start"] <= at for r in early["timeline"])
    text = runner.invoke(cli, ["model", str(folder)])
    assert text.exit_code == 0 and "generations:" in text.output
    (tmp_path / "broker.log").write_text("[2026-01-01 00:00:00,000] INFO something else\n")
    (tmp_path / "heartbeats.jsonl").write_text('{"broken": \nnot json\n')
    res = runner.invoke(cli, ["model", str(tmp_path), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == {"groups": []}
    assert "heartbeats.jsonl:1" in res.stderr


@pytest.mark.parametrize("folder", capture_dirs(), ids=lambda p: p.name)
def test_capture_watched_from_the_middle(folder: Path) -> None:
    """The collector may start while groups are running: history before is unknown, not wrong."""
    evs = evidence(folder)
    times = sorted(e.ts for e in evs)
    middle = times[len(times) // 2]
    late = [e for e in evs if e.ts >= middle]
    docs = {g: e.document_json() for g, e in rebuild(late).items()}
    full = {g: e.document_json() for g, e in rebuild(evs).items()}
    for group, snap in last_snapshots(late).items():
        doc = docs[group]
        if doc["timeline"]:
            check_timeline(doc)
        assert members_of(doc) == snapshot_members(snap)
        assert doc["state"] == full[group]["state"]
        if full[group]["type"] == "classic" and doc["generation"] is not None:
            assert doc["generation"] == full[group]["generation"]


@pytest.mark.parametrize("folder", capture_dirs(), ids=lambda p: p.name)
def test_client_clock_skew_of_a_few_seconds_changes_nothing(folder: Path) -> None:
    """Each client's events shifted by up to ±3 s (its own clock): same members, generations, causes."""
    import dataclasses
    import random

    rnd = random.Random(folder.name)
    evs = evidence(folder)
    base = {g: e.document_json() for g, e in rebuild(evs).items()}
    for fixed in (-3000, 3000, None):
        skews: dict[str | None, int] = {}
        shifted = [
            dataclasses.replace(
                e,
                ts=e.ts
                + (fixed if fixed is not None else skews.setdefault(e.member_id, rnd.randint(-3000, 3000))),
            )
            if isinstance(e, HeartbeatEvent)
            else e
            for e in evs
        ]
        for group, doc in ((g, e.document_json()) for g, e in rebuild(shifted).items()):
            want = base[group]
            if doc["timeline"]:
                check_timeline(doc)
            assert members_of(doc) == members_of(want) and doc["generation"] == want["generation"]
            assert [g["cause"] for g in doc["generations"]] == [g["cause"] for g in want["generations"]]
