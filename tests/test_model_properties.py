"""Property tests: whatever evidence arrives, in whatever order, the reconstruction never makes an
illegal state transition and generations never go backwards."""

from __future__ import annotations

import itertools
import json
import pickle

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator_model.classic.group_metadata import GroupMetadata, MemberMetadata
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import (
    BrokerLogEvent,
    DescribedMember,
    DescribeSnapshot,
    GroupMetadataSnapshot,
    HeartbeatEvent,
    MemberSnapshot,
    OffsetCommit,
)
from coordinator_model.states import GroupState, IllegalStateTransition

MEMBERS = ["m1", "m2", "m3", "i1"]
STATES = ["Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"]


def _snapshot_member(mid: str) -> MemberSnapshot:
    return MemberSnapshot(
        mid, "inst" if mid == "i1" else None, mid, "/h", 6000, 30000, ("t",), (("t", MEMBERS.index(mid)),)
    )


ts_st = st.integers(0, 60_000)
member_st = st.sampled_from(MEMBERS)
gen_st = st.integers(0, 8)

broker_st = st.one_of(
    st.builds(
        lambda ts, g, mid, why: BrokerLogEvent(
            ts,
            "g",
            "prepare",
            generation=g,
            reason=[
                f"Adding new member {mid} with group instance id null; client reason: x",
                f"explicit `LeaveGroup` request for ({mid}) members.",
                f"removing member {mid} on heartbeat expiration",
                f"Leader {mid} re-joining group during Stable",
            ][why],
        ),
        ts_st,
        gen_st,
        member_st,
        st.integers(0, 3),
    ),
    st.builds(
        lambda ts, g: BrokerLogEvent(ts, "g", "stabilized", generation=g, member_count=1), ts_st, gen_st
    ),
    st.builds(
        lambda ts, g, m: BrokerLogEvent(ts, "g", "assignment", generation=g, member_id=m),
        ts_st,
        gen_st,
        member_st,
    ),
    st.builds(lambda ts, g: BrokerLogEvent(ts, "g", "empty", generation=g), ts_st, gen_st),
    st.builds(lambda ts, m: BrokerLogEvent(ts, "g", "member_left", member_id=m), ts_st, member_st),
    st.builds(lambda ts, m: BrokerLogEvent(ts, "g", "member_failed", member_id=m), ts_st, member_st),
    st.builds(lambda ts: BrokerLogEvent(ts, "g", "groups_deleted", groups=("g",)), ts_st),
)
record_st = st.builds(
    lambda ts, g, ms, dead: GroupMetadataSnapshot(
        ts,
        "g",
        dead,
        "consumer",
        g,
        "range" if ms else None,
        ms[0] if ms else None,
        ts - 3,
        tuple(_snapshot_member(m) for m in ms),
    ),
    ts_st,
    gen_st,
    st.lists(member_st, unique=True, max_size=3),
    st.booleans().map(lambda b: b and False),
)
heartbeat_st = st.builds(
    lambda ts, m, ev: HeartbeatEvent(
        ts,
        "g",
        m,
        ev,
        group_instance_id="inst" if m == "i1" else None,
        session_timeout_ms=6000,
        partitions=(("t", 0),) if ev in ("assigned", "revoked", "lost") else (),
    ),
    ts_st,
    member_st,
    st.sampled_from(["heartbeat", "join", "assigned", "revoked", "lost", "leave", "poll_stall"]),
)
describe_st = st.builds(
    lambda ts, state, ms: DescribeSnapshot(
        ts, "g", "classic", state, "range", tuple(DescribedMember(m, None, m, "/h", (("t", 0),)) for m in ms)
    ),
    ts_st,
    st.sampled_from(STATES),
    st.lists(member_st, unique=True, max_size=3),
)
commit_st = st.builds(
    lambda ts, o: OffsetCommit(ts, "g", "t", 0, o, ts, log_offset=ts), ts_st, st.integers(0, 100)
)
evidence_st = st.lists(st.one_of(broker_st, record_st, heartbeat_st, describe_st, commit_st), max_size=40)


def _check_timeline(doc: dict) -> None:
    rows = doc["timeline"]
    for a, b in itertools.pairwise(rows):
        assert a["end"] == b["start"] and a["start"] <= a["end"], rows  # no gaps, no overlaps
        prev, nxt = GroupState.parse(a["state"]), GroupState.parse(b["state"])
        # the only way out of Dead is a new group with the same id
        assert nxt.can_follow(prev) or prev is GroupState.DEAD, (a, b)
    if rows:
        assert rows[-1]["end"] is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evidence_st, st.booleans())
def test_random_evidence_never_makes_an_illegal_transition(evs, sort_first: bool) -> None:
    eng = GroupEngine("g")
    last_gen = -1
    if sort_first:
        eng.apply_many(evs)
    else:
        for ev in evs:  # out of order: skew between sources
            was_dead = eng.state == "Dead"
            eng.apply(ev)
            if eng.classic.generation is not None and not was_dead and eng.state != "Dead":
                assert eng.classic.generation >= last_gen or eng.classic.generation is None
            if eng.state == "Dead":
                last_gen = -1
            elif eng.classic.generation is not None:
                last_gen = max(last_gen, eng.classic.generation)
    eng.advance(120_000)
    doc = eng.document_json()
    _check_timeline(doc)
    gens = [g["generation"] for g in doc["generations"] if g["generation"] is not None]
    assert gens == sorted(gens) and len(gens) == len(set(gens))
    json.dumps(doc)
    assert pickle.loads(pickle.dumps(eng)).document_json() == doc


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "remove", "join", "sync", "heartbeat", "expire", "leave"]), member_st
        ),
        max_size=60,
    )
)
def test_group_metadata_operations_keep_transitions_legal(ops) -> None:
    g = GroupMetadata("g")
    now = 0
    generations = [g.generation_id]
    for op, mid in ops:
        now += 1000
        try:
            if op == "add" and not g.has(mid):
                g.add(MemberMetadata(mid, "g", supported_protocols=[("range", b"")], session_timeout_ms=3000))
                g.get(mid).last_heartbeat_ms = now
                g.maybe_prepare_rebalance(f"Adding new member {mid}", now)
            elif op in ("remove", "leave") and g.has(mid):
                g.remove_member_and_update_group(mid, "LeaveGroup", now)
            elif op == "join" and g.is_(GroupState.PREPARING_REBALANCE):
                g.init_next_generation(now)
            elif op == "sync" and g.is_(GroupState.COMPLETING_REBALANCE):
                g.complete_sync(now)
            elif op == "heartbeat" and g.has(mid):
                g.handle_heartbeat(mid, None, g.generation_id, now)
            elif op == "expire":
                g.expire_sessions(now)
        except IllegalStateTransition as exc:  # pragma: no cover - the property
            raise AssertionError(f"{op} {mid} in {g.state}") from exc
        generations.append(g.generation_id)
        assert (g.leader_id is None) == (g.size == 0)
        assert g.leader_id is None or g.has(g.leader_id)
    assert generations == sorted(generations)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
_keys = ["ts", "group", "member_id", "event", "partitions", "members", "committed", "topic", "partition",
         "end_offset", "broker", "state", "assignment", "generation"]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(_keys), _json, max_size=8), st.sampled_from(["hb", "describe", "end"]))
def test_parsers_accept_or_raise_evidence_error_only(obj: dict, kind: str) -> None:
    from coordinator_model.evidence import (
        EvidenceError,
        from_describe_json,
        from_end_offset_json,
        from_heartbeat_json,
    )

    parse = {"hb": from_heartbeat_json, "describe": from_describe_json, "end": from_end_offset_json}[kind]
    if kind == "hb" and "event" in obj and obj["event"] is None:
        obj["event"] = "heartbeat"
    try:
        ev = parse(obj)
    except EvidenceError:
        return
    assert isinstance(ev.ts, int)
