"""The coordinator model on evidence that contradicts itself: client heartbeat events plus Admin API
answers that contradict them, from a Kafka-protocol broker that is not Apache Kafka
(tests/fixtures/tansu-demo, a real `groupscope demo` run on Tansu), and the same weighing on
Kafka-shaped evidence (a snapshot taken mid-rebalance, a describe that comes before the clients'
events)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.capture import read_capture
from collectors.cli.main import cli
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import (
    BrokerLogEvent,
    DescribedMember,
    DescribeSnapshot,
    EndOffset,
    HeartbeatEvent,
    OffsetCommit,
    from_heartbeat_json,
    parse_broker_log_line,
)
from coordinator_model.evidence_order import sort_evidence
from coordinator_model.membership import Generation
from coordinator_model.rebuild import rebuild
from coordinator_model.whatif.adapter import whatif_input_from_group_document

TANSU = Path(__file__).parent / "fixtures" / "tansu-demo"
T0 = 1795246317781  # the run's first event
GROUPS = {
    "demo-steady",
    "demo-scaleout",
    "demo-crash",
    "demo-stall",
    "demo-storm",
    "demo-static",
    "demo-coop",
    "demo-slow",
}
_DOCS: dict[int | None, dict[str, dict]] = {}


def model_json(at: int | None = None) -> dict[str, dict]:
    """`groupscope model tests/fixtures/tansu-demo --json [--at]`, once per moment."""
    if at not in _DOCS:
        args = ["model", str(TANSU), "--json"] + (["--at", str(at)] if at else [])
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output
        _DOCS[at] = {g["group"]: g for g in json.loads(res.output)["groups"]}
    return _DOCS[at]


def gens(doc: dict, cause: str) -> list[dict]:
    return [g for g in doc["generations"] if g["cause"] == cause]


# -- the demo run ------------------------------------------------------------------------------------------
def test_every_demo_group_is_classic_with_the_members_its_clients_show() -> None:
    docs = model_json(T0 + 90_000)  # every scenario is mid-cycle: each group has members
    assert set(docs) == GROUPS
    for name, doc in docs.items():
        assert doc["type"] == "classic", name
        assert doc["state"] == "Stable", name
        assert doc["members"], name
        assert all(m["assignment"] for m in doc["members"]), name
        held = sorted(tuple(tp) for m in doc["members"] for tp in m["assignment"])
        assert len(held) == len(set(held)), f"{name}: a partition assigned twice"
        # the Admin answers were seen and not believed
        kinds = {c["kind"] for c in doc["conflicts"]}
        assert {"type", "members", "assignor"} <= kinds, name
        assert doc["protocol"] is None or "-" not in doc["protocol"], "an assignor field that is a member id"
        assert any(n.startswith("conflict (members") for n in doc["inferred"])
    assert {m["group_instance_id"] for m in docs["demo-static"]["members"]} == {"demo-inst-1", "demo-inst-2"}
    assert len(docs["demo-steady"]["members"]) == 2 and docs["demo-steady"]["generation"] == 1


def test_crash_is_a_session_timeout_with_its_gap() -> None:
    doc = model_json()["demo-crash"]
    (st_gen,) = gens(doc, "session_timeout")
    assert st_gen["member_id"].startswith("crash-2-6c165943")
    assert st_gen["members_left"] == [st_gen["member_id"]]
    assert 5_500 <= st_gen["gap_ms"] <= 8_000  # session.timeout.ms=6000
    # the survivor was revoked ~6 s after crash-2's last heartbeat (17.27 s into the run)
    assert abs(st_gen["start"] - (T0 + 23_270)) < 1_000
    assert st_gen["duration_ms"] is not None and "cause" in st_gen["inferred"]
    assert gens(doc, "member_joined")  # the crashed process restarted with a new member id


def test_stall_is_a_poll_timeout_then_a_rejoin() -> None:
    doc = model_json()["demo-stall"]
    first = gens(doc, "poll_timeout")[0]
    assert first["member_id"].startswith("stall-2-6ecd6077")
    assert first["members_left"] == [first["member_id"]]
    # the application did not poll for ~20 s (the scenario's stall): from the stall's start to the
    # poll that reported `lost`, not just to the leave at max.poll.interval.ms (10 s)
    assert 19_000 <= first["gap_ms"] <= 21_500
    nxt = next(g for g in doc["generations"] if g["generation"] == first["generation"] + 1)
    assert nxt["cause"] == "member_joined" and nxt["members_joined"][0].startswith("stall-2-a19eb8c5")
    assert not gens(doc, "session_timeout")  # heartbeats went on during the stall


def test_storm_static_and_cooperative() -> None:
    docs = model_json()
    storm = docs["demo-storm"]
    assert len(storm["generations"]) >= 25
    assert sum(bool(g["members_joined"]) for g in storm["generations"]) >= 20  # a flapper each ~4.5 s
    assert sum(bool(g["members_left"]) for g in storm["generations"]) >= 20
    static = docs["demo-static"]
    assert {m["group_instance_id"] for m in static["members"]} == {"demo-inst-1", "demo-inst-2"}
    st_gen = gens(static, "session_timeout")
    assert st_gen and st_gen[0]["gap_ms"] >= 15_000  # closed static members wait for their session
    coop = docs["demo-coop"]
    assert len(coop["generations"]) >= 6
    assert gens(coop, "leader_rejoin")  # the second, incremental rebalance of cooperative-sticky


def test_whatif_reads_the_gaps() -> None:
    docs = model_json()
    crash = whatif_input_from_group_document(docs["demo-crash"])["rebalances"]
    row = next(r for r in crash if r["cause"] == "session_timeout")
    assert row["member_id"].startswith("crash-2-") and 5_500 <= row["gap_ms"] <= 8_000
    stall = whatif_input_from_group_document(docs["demo-stall"])["rebalances"]
    assert any(r["cause"] == "poll_timeout" and 19_000 <= r["gap_ms"] <= 21_500 for r in stall)


def test_admin_answers_alone_give_what_they_can() -> None:
    evs = [e for e in read_capture(TANSU).evidence if isinstance(e, DescribeSnapshot)]
    engines = rebuild(evs)
    assert set(engines) == GROUPS
    for eng in engines.values():
        doc = eng.document_json()
        assert doc["state"] in ("Stable", "Empty")
        assert doc["protocol"] is None  # never a member id
        assert {c["kind"] for c in doc["conflicts"]} == {"assignor"}


_HB_ONLY = [e for e in read_capture(TANSU).evidence if isinstance(e, HeartbeatEvent)]


def _summary(engines: dict[str, GroupEngine]) -> dict:
    return {
        g: (
            eng.type,
            sorted(eng.members),
            [
                (x["generation"], x["cause"], tuple(x["members_left"]))
                for x in eng.document_json()["generations"]
            ],
        )
        for g, eng in engines.items()
    }


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.integers(0, 147_000),
            st.sampled_from(sorted(GROUPS)),
            # Unknown: Tansu's answer during a rebalance (seen in the live demo's Admin polls)
            st.sampled_from(["Stable", "PreparingRebalance", "CompletingRebalance", "Unknown"]),
            st.sampled_from(["", "range", "x-0b5e9a3c-1111-4222-8333-944455556666"]),
        ),
        max_size=40,
    )
)
def test_member_less_snapshots_never_change_the_client_view(snaps: list) -> None:
    """Self-contradictory snapshots (a live state without members, typed consumer), taken at any moment,
    leave the classic groups, their members and their generations as the client events alone give them."""
    base = _summary(rebuild(_HB_ONLY))
    extra = [DescribeSnapshot(T0 + t, g, "consumer", state, assignor, ()) for t, g, state, assignor in snaps]
    with_snaps = rebuild(_HB_ONLY + extra)
    got = _summary(with_snaps)
    for g in GROUPS:
        if g not in got:
            # once the Admin API answers, a group it never described is known from client events alone,
            # which never make a group (docs/security.md); the poller describes every group it lists
            assert extra and all(ev.group != g for ev in extra), g
            continue
        if got[g] != base[g]:
            # only a snapshot while the group had no live member may say something (it is believed then)
            assert got[g][0] == "classic" and got[g][1] == base[g][1], g


# -- the same weighing on Kafka-shaped evidence ------------------------------------------------------------
HB = {
    "group": "g",
    "client_id": None,
    "host": "/127.0.0.1",
    "session_timeout_ms": 6000,
    "max_poll_interval_ms": 10000,
    "group_protocol": "classic",
}


def hb(ts: int, member: str, event: str = "heartbeat", parts=()) -> HeartbeatEvent:
    return from_heartbeat_json(
        {**HB, "ts": ts, "member_id": member, "event": event, "partitions": [list(p) for p in parts]}
    )


def dm(member: str, parts=()) -> DescribedMember:
    return DescribedMember(member, None, member.split("-")[0], "/127.0.0.1", tuple(parts))


def test_a_snapshot_taken_mid_rebalance_keeps_the_assignment() -> None:
    """Kafka describes a group that is not Stable with its members but without assignments."""
    eng = GroupEngine("g")
    a, b = "a-0b5e9a3c-1111-4222-8333-944455556666", "b-0b5e9a3c-1111-4222-8333-944455556667"
    eng.apply_many([hb(1000, a, "join"), hb(1000, b, "join")])
    eng.apply(
        DescribeSnapshot(3000, "g", "classic", "Stable", "range", (dm(a, [("t", 0)]), dm(b, [("t", 1)])))
    )
    eng.apply(DescribeSnapshot(4000, "g", "classic", "PreparingRebalance", "", (dm(a), dm(b))))
    assert dict((m, x.assignment) for m, x in eng.members.items()) == {a: (("t", 0),), b: (("t", 1),)}
    assert eng.classic.protocol == "range" and eng.state == "PreparingRebalance"
    assert not eng.conflicts


def test_a_describe_before_the_clients_events_is_overruled() -> None:
    eng = GroupEngine("g")
    a = "a-0b5e9a3c-1111-4222-8333-944455556666"
    eng.apply(DescribeSnapshot(500, "g", "consumer", "Stable", a, ()))
    assert eng.type == "consumer"
    eng.apply_many([hb(1000, a, "join"), hb(2000, a, "assigned", [("t", 0)]), hb(3000, a)])
    doc = eng.document_json()
    assert doc["type"] == "classic" and [m["member_id"] for m in doc["members"]] == [a]
    assert doc["generations"][0]["cause"] == "group_created"
    assert "type" in {c["kind"] for c in doc["conflicts"]}
    eng.apply(DescribeSnapshot(4000, "g", "consumer", "Stable", a, ()))
    assert eng.type == "classic" and set(eng.members) == {a}


def test_a_kip848_describe_with_the_broker_details_is_believed() -> None:
    eng = GroupEngine("g")
    eng.apply(
        DescribeSnapshot(500, "g", "consumer", "Stable", "range", (), broker_state="Stable", group_epoch=1)
    )
    assert eng.type == "consumer" and eng.consumer.assignor == "range" and not eng.conflicts


def test_advance_expires_a_silent_member_and_measures_its_gap() -> None:
    eng = GroupEngine("g")
    a, b = "a-0b5e9a3c-1111-4222-8333-944455556666", "b-0b5e9a3c-1111-4222-8333-944455556667"
    eng.apply_many([hb(1000, a, "join"), hb(1000, b, "join"), hb(3000, a, "assigned", [("t", 0)])])
    eng.apply_many([hb(3000, b, "assigned", [("t", 1)]), hb(4000, a), hb(4000, b)])
    eng.advance(9_000)
    assert set(eng.members) == {a, b}
    eng.advance(10_500)  # the pipeline's timer: no new evidence
    doc = eng.document_json()
    last = doc["generations"][-1]
    assert last["cause"] == "session_timeout" and last["start"] == 10_000 and last["end"] is None
    assert last["member_id"] == a and last["gap_ms"] == 6_000  # a's last event was at 4000 (sorted first)


def test_broker_log_session_expiry_gets_its_gap_from_heartbeats() -> None:
    line = (
        "[2026-11-21 06:00:10,000] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=1] "
        "Preparing to rebalance group g in state PreparingRebalance with old generation 1 (reason: "
        "removing member m3-0b5e9a3c-1111-4222-8333-944455556666 on heartbeat expiration). "
        "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
    )
    ev = parse_broker_log_line(line)
    assert isinstance(ev, BrokerLogEvent)
    m3 = "m3-0b5e9a3c-1111-4222-8333-944455556666"
    eng = GroupEngine("g")
    eng.apply_many([hb(ev.ts - 9000, m3, "join"), hb(ev.ts - 6500, m3), ev])
    (g,) = [x for x in eng.document_json()["generations"] if x["cause"] == "session_timeout"]
    assert g["member_id"] == m3 and g["gap_ms"] == 6500 and "cause" not in g["inferred"]


def test_lost_after_a_stall_in_a_group_of_one() -> None:
    """Nobody else revokes: the stalled client's own `lost` shows it had left when its poll interval ran
    out (poll_stall at half of max.poll.interval.ms = 10 s)."""
    eng = GroupEngine("g")
    a = "a-0b5e9a3c-1111-4222-8333-944455556666"
    eng.apply_many([hb(1000, a, "join"), hb(3000, a, "assigned", [("t", 0)])])
    eng.apply_many([hb(t, a) for t in range(4000, 20000, 1000)])
    eng.apply_many([hb(9000, a, "poll_stall"), hb(20_000, a, "lost", [("t", 0)])])
    doc = eng.document_json()
    last = doc["generations"][-1]
    # not polled from 4000 (the stall event comes at half the interval) to the poll that said lost
    assert last["cause"] == "poll_timeout" and last["member_id"] == a and last["gap_ms"] == 16_000
    assert doc["state"] == "Empty"


def test_an_end_offset_below_a_commit_is_a_conflict_not_a_negative_lag() -> None:
    """Tansu's ListOffsets counts batches: the log end it gives can sit below what was committed."""
    eng = GroupEngine("g")
    eng.apply(OffsetCommit(1000, "g", "t", 0, 120, 1000, log_offset=1))
    eng.apply(EndOffset(1500, "t", 0, 100))
    doc = eng.document_json()
    row = doc["lag"]["partitions"][0]
    assert row["lag"] == 0 and row["committed"] == 120
    assert [c["kind"] for c in doc["conflicts"]] == ["end_offsets"]
    eng2 = GroupEngine("g")
    eng2.apply(EndOffset(500, "t", 0, 100))  # an old sample, then the consumer moves on: no conflict
    eng2.apply(OffsetCommit(1000, "g", "t", 0, 120, 1000, log_offset=1))
    assert not eng2.conflicts


def test_engines_pickled_before_these_fields_still_load() -> None:
    eng = rebuild(_HB_ONLY)["demo-crash"]
    # the engine as it was pickled before classic/: the classic group's fields on the engine itself
    state = dict(eng.__dict__)
    classic = state.pop("classic")
    state.update({k: v for k, v in vars(classic).items() if k != "engine"})
    for name in ("conflicts", "client_protocol", "type_source", "incremental", "_expiry_undo"):
        state.pop(name)
    old = GroupEngine.__new__(GroupEngine)
    old.__setstate__(state)
    assert old.document_json()["generations"] == eng.document_json()["generations"]
    gen = next(iter(eng.classic.generations.values()))
    bare = Generation.__new__(Generation)
    bare.__setstate__((None, {"generation": 1, "start": 5}))
    assert bare.gap_ms is None and bare.left == [] and gen.gap_ms is None


def test_kip848_protocol_is_the_server_assignor_the_members_asked_for() -> None:
    folder = Path(__file__).parent / "fixtures" / "real-kafka-4.0" / "kip848-lifecycle"
    evs = read_capture(folder).evidence
    for keep in (
        {"offsets"},
        {"describe"},
        {"broker_log"},
        {"offsets", "describe", "broker_log", "heartbeats"},
    ):
        engines = rebuild([e for e in evs if e.source in keep or e.source == "end_offsets"])
        doc = next(e.document_json() for g, e in engines.items() if g.startswith("k848-range"))
        assert doc["type"] == "consumer" and doc["protocol"] == "range", keep
        assert {g["protocol"] for g in doc["generations"]} == {"range"}, keep


def test_fed_in_batches_with_timers_running_ahead_it_ends_the_same() -> None:
    """The pipeline applies 2 s micro-batches and runs the timers to 'now', which may be ahead of events
    still in transit: an expiry inferred too early is undone by the member's late event."""
    evs = sort_evidence(read_capture(TANSU).evidence)
    whole = _summary(rebuild(evs))
    for lateness in (0, 2_000):
        engines: dict[str, GroupEngine] = {}
        for k, batch in itertools.groupby(evs, key=lambda e: (e.ts - T0) // 2000):
            for ev in batch:
                engines.setdefault(ev.group, GroupEngine(ev.group)).apply(ev)
            for eng in engines.values():
                eng.advance(T0 + (k + 1) * 2000 + lateness)
        end = max(e.ts for e in evs)
        for eng in engines.values():
            eng.advance(end)
        assert _summary(engines) == whole, lateness


def test_a_kip848_group_keeps_its_members_against_a_member_less_answer() -> None:
    eng = GroupEngine("g")
    a = "O6bFJVdKREesa0Z4Y8so2A"  # a KIP-848 member id
    ev = {**HB, "group_protocol": "consumer"}
    eng.apply(from_heartbeat_json({**ev, "ts": 1000, "member_id": a, "event": "join", "partitions": []}))
    eng.apply(
        from_heartbeat_json({**ev, "ts": 2000, "member_id": a, "event": "assigned", "partitions": [["t", 0]]})
    )
    eng.apply(DescribeSnapshot(2500, "g", "consumer", "Stable", "uniform", ()))
    assert eng.type == "consumer" and set(eng.members) == {a} and eng.consumer.assignor == "uniform"
    assert [c["kind"] for c in eng.document_json()["conflicts"]] == ["members"]


def test_a_consumer_group_with_classic_members_stays_a_consumer_group() -> None:
    """Kafka 4 lets classic members join a KIP-848 group: the describe's target assignments say so."""
    eng = GroupEngine("g")
    a = "a-0b5e9a3c-1111-4222-8333-944455556666"
    eng.apply(
        DescribeSnapshot(
            500,
            "g",
            "consumer",
            "Stable",
            "uniform",
            (DescribedMember(a, None, "a", "/h", (("t", 0),), (("t", 0),)),),
        )
    )
    eng.apply_many([hb(1000, a), hb(2000, a)])
    assert eng.type == "consumer" and not eng.conflicts
