"""Hostile input on the probe's heartbeat topic (docs/security.md, "Trust model for the probe's
heartbeat events"): anyone with the probe's credentials can write any event there. Such events
never make a group on their own (only the coordinator's records, its log or the Admin API do), the
timeouts they carry are held to the broker's limits, and a `leave` in a member's name adds no
generation to a real group. Driven through the model (GroupEngine, rebuild) and, once, through the
pipeline's route and model stages without Spark."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_strategies import json_values

from collectors.pipeline import model_state
from collectors.pipeline.route import decode_batches
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import (
    HEARTBEAT_EVENTS,
    POLL_INTERVAL_MAX_MS,
    SESSION_TIMEOUT_MAX_MS,
    SESSION_TIMEOUT_MIN_MS,
    TIMEOUT_MAX_MS,
    DescribedMember,
    DescribeSnapshot,
    EvidenceError,
    GroupMetadataSnapshot,
    HeartbeatEvent,
    MemberSnapshot,
    from_heartbeat_json,
    poll_interval,
    session_timeout,
)
from coordinator_model.rebuild import rebuild
from tests.test_pipeline_watermark import BucketState

T0 = 1_800_000_000_000
A, B = "a-5f0c9e6e-6d3b-4c1e-9a51-0d2b8f2f3a11", "b-7a1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"
C = "c-2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901"
PHANTOM = "p-0e1d2c3b-4a59-4687-9a0b-1c2d3e4f5a6b"
PARTS = {A: [["t", 0]], B: [["t", 1]], C: [["t", 2]]}
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def hb(
    ts: int, member: str | None, event: str = "heartbeat", group: str = "g", **extra: Any
) -> HeartbeatEvent:
    """An event as the probe writes it (through the reader, as the pipeline reads it)."""
    line = {
        "ts": ts,
        "group": group,
        "member_id": member,
        "group_instance_id": None,
        "client_id": (member or "c")[:1],
        "host": "/10.0.0.1",
        "generation": None,
        "event": event,
        "state": "steady",
        "partitions": [],
        "session_timeout_ms": 10_000,
        "max_poll_interval_ms": 300_000,
    }
    return from_heartbeat_json({**line, **extra})


def record(ts: int, gen: int, members: list[str], state_ts: int | None = None) -> GroupMetadataSnapshot:
    """The coordinator's GroupMetadata record of generation `gen` (written at the leader's SyncGroup)."""
    snaps = tuple(
        MemberSnapshot(m, None, m[:1], "/10.0.0.1", 10_000, 300_000, ("t",), tuple(map(tuple, PARTS[m])))
        for m in members
    )
    leader = members[0] if members else None
    return GroupMetadataSnapshot(
        ts, "g", False, "consumer", gen, "range", leader, ts if state_ts is None else state_ts, snaps
    )


def describe(ts: int, members: list[str], state: str = "Stable") -> DescribeSnapshot:
    dms = tuple(DescribedMember(m, None, m[:1], "/10.0.0.1", tuple(map(tuple, PARTS[m]))) for m in members)
    return DescribeSnapshot(ts, "g", "classic", state, "range", dms)


def beats(members: list[str], start: int, end: int, every: int = 3_000) -> list[HeartbeatEvent]:
    return [hb(ts, m) for ts in range(start, end, every) for m in members]


def forged_leaves(member: str, start: int, end: int, every: int = 7_100) -> list[HeartbeatEvent]:
    return [hb(ts, member, "leave") for ts in range(start, end, every)]


def doc_of(evs: list) -> dict:
    eng = GroupEngine("g")
    eng.apply_many(evs)
    eng.advance(max(e.ts for e in evs))
    return eng.document_json()


def history(doc: dict) -> tuple:
    """What a forger must not change: the generations, their causes, the timeline and the members."""
    gens = [(g["generation"], g["cause"], g["start"], g["members_left"]) for g in doc["generations"]]
    timeline = [(r["state"], r["start"]) for r in doc["timeline"]]
    return gens, timeline, doc["state"], sorted(m["member_id"] for m in doc["members"])


# -- 1. the reader: what no client can have sent is malformed evidence ------------------------------------
@pytest.mark.parametrize("field", ["session_timeout_ms", "max_poll_interval_ms"])
@pytest.mark.parametrize(
    "bad", [True, False, -1, 2**31, 2**62, 10**20, 6000.0, 6000.5, 1e300, "6000", [6000], {}]
)
def test_a_timeout_that_is_no_int_of_milliseconds_is_refused(field: str, bad: Any) -> None:
    line = {"ts": T0, "group": "g", "member_id": A, "event": "join", field: bad}
    with pytest.raises(EvidenceError) as info:
        from_heartbeat_json(line)
    assert repr(field) in str(info.value) and len(str(info.value)) < 400


@given(st.sampled_from(["session_timeout_ms", "max_poll_interval_ms"]), json_values)
def test_any_json_timeout_is_refused_or_an_int_within_a_java_int(field: str, value: Any) -> None:
    try:
        ev = from_heartbeat_json({"ts": T0, "group": "g", "member_id": A, "event": "join", field: value})
    except EvidenceError:
        assert not (type(value) is int and 0 <= value <= TIMEOUT_MAX_MS) and value is not None
    else:
        got = getattr(ev, field)
        assert got is None or (type(got) is int and 0 <= got <= TIMEOUT_MAX_MS)
        assert got == value


# -- 2. the model's clamps ---------------------------------------------------------------------------------
@given(st.integers(0, TIMEOUT_MAX_MS))
def test_timeouts_are_clamped_to_the_brokers_limits(v: int) -> None:
    s, p = session_timeout(v), poll_interval(v)
    if v == 0:
        assert s is None and p is None  # unknown, as the model always read a 0
        return
    assert SESSION_TIMEOUT_MIN_MS <= s <= SESSION_TIMEOUT_MAX_MS
    assert s == v or not SESSION_TIMEOUT_MIN_MS <= v <= SESSION_TIMEOUT_MAX_MS
    assert 0 < p <= POLL_INTERVAL_MAX_MS and (p == v or v > POLL_INTERVAL_MAX_MS)


@PROPS
@given(
    st.integers(0, TIMEOUT_MAX_MS), st.integers(0, TIMEOUT_MAX_MS), st.sampled_from(sorted(HEARTBEAT_EVENTS))
)
def test_a_member_never_holds_a_timeout_past_the_clamps(session: int, poll: int, event: str) -> None:
    """Client events alone (the members are the events'), and with the coordinator's records (whose
    timeouts a later event does not change)."""
    alone, recorded = GroupEngine("g"), GroupEngine("g")
    recorded.apply(record(T0, 1, [A, B]))
    for eng in (alone, recorded):
        for m in (A, B, PHANTOM):
            eng.apply(hb(T0 + 100, m, event, session_timeout_ms=session, max_poll_interval_ms=poll))
        for m in [*eng.members.values(), *eng.departed_members.values()]:
            assert m.session_timeout_ms is None or m.session_timeout_ms <= SESSION_TIMEOUT_MAX_MS
            assert m.session_timeout_ms is None or m.session_timeout_ms >= SESSION_TIMEOUT_MIN_MS
            assert m.max_poll_interval_ms is None or m.max_poll_interval_ms <= POLL_INTERVAL_MAX_MS
            assert m.rebalance_timeout_ms is None or m.rebalance_timeout_ms <= POLL_INTERVAL_MAX_MS
    assert [recorded.members[m].session_timeout_ms for m in (A, B)] == [10_000, 10_000]
    if event != "leave":
        assert alone.members[A].session_timeout_ms == session_timeout(session)


def test_a_forged_huge_session_timeout_keeps_nobody_longer_than_half_an_hour() -> None:
    """A join with the longest session timeout a reader lets through (2**31 - 1 ms, 24 days): the
    member it makes up is gone half an hour (group.max.session.timeout.ms) after its last event."""
    eng = GroupEngine("phantom")
    eng.apply(hb(T0, PHANTOM, "join", group="phantom", session_timeout_ms=2**31 - 1))
    assert eng.members[PHANTOM].session_timeout_ms == SESSION_TIMEOUT_MAX_MS
    eng.advance(T0 + SESSION_TIMEOUT_MAX_MS - 1)
    assert PHANTOM in eng.members
    eng.advance(T0 + SESSION_TIMEOUT_MAX_MS)
    assert not eng.members and eng.state != "PreparingRebalance"


# -- 3. no group from heartbeat events alone --------------------------------------------------------------
def real_group() -> list:
    """A real group: its GroupMetadata record, a describe, and its members' own events."""
    return [record(T0, 1, [A, B]), describe(T0 + 2_000, [A, B]), *beats([A, B], T0 + 500, T0 + 60_000)]


def test_the_issues_phantom_join_makes_no_group() -> None:
    """The issue's record: a join with session_timeout_ms 2**62 for a group nobody else names. The
    reader refuses it (one dead letter); with the longest timeout it lets through, the model holds
    the group, unconfirmed, and shows nothing of it."""
    issue = {"ts": T0, "group": "x", "event": "join", "member_id": PHANTOM, "session_timeout_ms": 2**62}
    with pytest.raises(EvidenceError, match="session_timeout_ms"):
        from_heartbeat_json(issue)
    join = hb(T0 + 1_000, PHANTOM, "join", group="x", session_timeout_ms=2**31 - 1)
    engines = rebuild([*real_group(), join, *beats([PHANTOM], T0 + 2_000, T0 + 30_000)])
    assert set(engines) == {"g"}
    held = GroupEngine("x")
    held.apply(join)
    assert not held.confirmed and held.state == "PreparingRebalance"  # applied, never shown


def test_a_group_the_coordinator_learns_of_later_keeps_what_its_clients_said_before() -> None:
    """The probe's events often come before the first describe or record of a new group: they are
    held, and once the Admin API describes the group it is shown with them, as it always was."""
    evs = [hb(T0, A, "join"), hb(T0 + 10, A, "assigned", partitions=PARTS[A])]
    evs += [*beats([A], T0 + 1_000, T0 + 9_000), describe(T0 + 9_500, [A])]
    other = GroupMetadataSnapshot(T0, "h", False, "consumer", 1, "range", None, T0, ())  # another group
    assert set(rebuild([*evs, other], at_ms=T0 + 9_000)) == {"h"}  # g: client events alone so far
    shown = rebuild([*evs, other])["g"].document_json()
    alone = GroupEngine("g")
    alone.apply_many(evs)
    alone.advance(T0 + 9_500)
    assert shown == alone.document_json()
    assert [m["member_id"] for m in shown["members"]] == [A] and shown["generations"]


def test_client_events_alone_are_all_there_is() -> None:
    """A capture of the probe's topic alone has nothing to confirm a group with: its groups are
    the probe's, as before (tests/test_model_captures.py checks every subset of the sources)."""
    assert set(rebuild([hb(T0, A, "join"), hb(T0 + 1, B, "join", group="h")])) == {"g", "h"}


hostile_events = st.fixed_dictionaries(
    {
        "ts": st.integers(T0 - 10_000, T0 + 120_000),
        "group": st.sampled_from(["g", "x", "y", ""]) | st.text(max_size=6),
        "event": st.sampled_from(sorted(HEARTBEAT_EVENTS)),
        "member_id": st.sampled_from([A, B, PHANTOM, None, "z"]) | st.text(max_size=24),
    },
    optional={
        "group_instance_id": st.none() | st.sampled_from(["i1", "i2"]),
        "session_timeout_ms": st.integers(-1, 2**31) | json_values,
        "max_poll_interval_ms": st.integers(-1, 2**31) | json_values,
        "partitions": st.lists(st.tuples(st.sampled_from(["t", "u"]), st.integers(0, 3)), max_size=3),
        "group_protocol": st.sampled_from(["classic", "consumer"]),
        "generation": st.integers(0, 10) | json_values,
    },
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hostile_events, max_size=25))
def test_arbitrary_heartbeat_events_never_make_a_group(lines: list[dict]) -> None:
    forged = []
    for line in lines:
        try:
            forged.append(from_heartbeat_json(json.loads(json.dumps(line))))
        except EvidenceError:
            continue  # a dead letter
    engines = rebuild([*real_group(), *forged])
    assert set(engines) == {"g"}
    for group in {ev.group for ev in forged} - {"g"}:
        eng = GroupEngine(group)
        eng.apply_many([ev for ev in forged if ev.group == group])
        eng.advance(T0 + 200_000)
        assert not eng.confirmed


# -- 4. forged leaves add no generation to a real group ------------------------------------------------------
def _with_and_without(base: list, forged: list) -> tuple[dict, dict]:
    return doc_of(base), doc_of([*base, *forged])


@pytest.mark.parametrize("who", [B, "b-00000000-0000-4000-8000-000000000000"])
def test_forged_leaves_change_nothing_where_the_records_speak(who: str) -> None:
    """`__consumer_offsets` records and the probe (no broker log): leaves in the name of a live member
    (it keeps heartbeating) or of a member id the group never had change nothing. Before, the first
    one left the group in PreparingRebalance until its next real rebalance, without the member."""
    base = [record(T0, 1, [A, B], T0 - 200), *beats([A, B], T0 + 500, T0 + 90_000)]
    clean, forged = _with_and_without(base, forged_leaves(who, T0 + 5_200, T0 + 80_000))
    assert history(forged) == history(clean)
    assert forged["state"] == "Stable" and [g["generation"] for g in forged["generations"]] == [1]


def test_forged_leaves_change_nothing_where_snapshots_list_the_members() -> None:
    """Admin API snapshots and the probe (no offsets topic, no broker log): as with records."""
    base = [describe(ts, [A, B]) for ts in range(T0, T0 + 90_000, 5_000)]
    base += [hb(T0 - 500, m, "join") for m in (A, B)] + beats([A, B], T0 + 500, T0 + 90_000)
    clean, forged = _with_and_without(base, forged_leaves(B, T0 + 5_200, T0 + 80_000))
    assert history(forged) == history(clean)
    assert len(forged["generations"]) == len(clean["generations"])


def test_a_forged_leave_is_taken_back_where_client_events_are_the_only_account() -> None:
    """Client events alone (or with snapshots that list no members: a broker that is not Apache Kafka):
    the leave is taken as said until the member speaks again, a dynamic member's id ending with its
    LeaveGroup; then its rebalance is taken back, and no generation comes of it."""
    base = [hb(T0, A, "join"), hb(T0 + 20, B, "join")]
    base += [hb(T0 + 300, m, "assigned", partitions=PARTS[m]) for m in (A, B)]
    base += beats([A, B], T0 + 1_000, T0 + 60_000)
    clean, forged = _with_and_without(base, forged_leaves(B, T0 + 5_200, T0 + 50_000))
    assert history(forged) == history(clean)
    assert [g["generation"] for g in forged["generations"]] == [1]


def test_forged_joins_change_nothing_where_the_records_speak() -> None:
    """A member id the coordinator's records do not have, made up by whoever writes the heartbeat
    topic, with events of its own: no member, no rebalance, no generation. Before, it was a member
    and the group sat in PreparingRebalance until its next real rebalance."""
    made_up = [hb(T0 + 5_200, PHANTOM, "join"), hb(T0 + 5_300, PHANTOM, "assigned", partitions=[["t", 1]])]
    made_up += beats([PHANTOM], T0 + 6_000, T0 + 40_000)
    base = [record(T0, 1, [A, B], T0 - 200), *beats([A, B], T0 + 500, T0 + 90_000)]
    clean, forged = _with_and_without(base, made_up)
    assert history(forged) == history(clean)
    assert PHANTOM not in {m["member_id"] for m in forged["members"]}


def test_a_members_host_is_the_coordinators_not_what_its_events_say() -> None:
    """The host the coordinator saw the member connect from (its records, a describe: what
    kafka-consumer-groups.sh prints) stands; events in the member's name, which anyone with the
    probe's credentials can write, do not replace it. Where the coordinator has said nothing yet, the
    client's word fills in."""
    forged = [hb(ts, A, host="evil.example.com") for ts in range(T0 + 1_000, T0 + 30_000, 3_000)]
    doc = doc_of([record(T0, 1, [A, B], T0 - 200), *forged, describe(T0 + 20_000, [A, B])])
    assert {m["member_id"]: m["client_host"] for m in doc["members"]} == {A: "/10.0.0.1", B: "/10.0.0.1"}
    # a group its clients' events describe alone: their word is all there is
    alone = doc_of([hb(T0, A, "join", host="app-1"), hb(T0 + 100, A, "assigned", partitions=[["t", 0]])])
    assert [m["client_host"] for m in alone["members"]] == ["app-1"]


def test_a_forged_join_is_taken_back_by_the_next_snapshot() -> None:
    """Snapshots and the probe (no records): client events are the account of each rebalance, but a
    new member id's event alone is taken back when the next snapshot does not list it. (Made-up
    events of several members that look like a whole rebalance, a join and its assignments, still
    read as one there: docs/security.md.)"""
    made_up = [hb(T0 + 5_200, PHANTOM, "join"), *beats([PHANTOM], T0 + 6_000, T0 + 40_000)]
    base = [describe(ts, [A, B]) for ts in range(T0, T0 + 90_000, 5_000)]
    base += [hb(T0 - 500, m, "join") for m in (A, B)] + beats([A, B], T0 + 500, T0 + 90_000)
    clean, forged = _with_and_without(base, made_up)
    assert history(forged) == history(clean)
    assert PHANTOM not in {m["member_id"] for m in forged["members"]}


def test_the_records_still_take_a_real_join_as_its_rebalances_start_and_cause() -> None:
    """A real JoinGroup: c's client got its member id, a and b revoke (eager), the record of
    generation 2 lists c. The rebalance began at c's join, a member_joined, as before."""
    joined = T0 + 10_000
    evs = [record(T0, 1, [A, B], T0 - 200), *beats([A, B], T0 + 500, joined + 30_000)]
    evs += [hb(joined, C, "join")]
    evs += [hb(joined + 200 + i, m, "revoked", partitions=PARTS[m]) for i, m in enumerate((A, B))]
    evs += [record(joined + 1_000, 2, [A, B, C], joined + 800), *beats([C], joined + 1_500, joined + 30_000)]
    doc = doc_of(evs)
    g2 = next(g for g in doc["generations"] if g["generation"] == 2)
    assert (g2["start"], g2["cause"], g2["members_joined"]) == (joined, "member_joined", [C])
    assert sorted(m["member_id"] for m in doc["members"]) == [A, B, C]


def test_the_records_still_take_a_real_leave_as_its_rebalances_start_and_cause() -> None:
    """A real LeaveGroup: b's client says it left (and then reports its partitions revoked, as a
    closing client does), a revokes (eager), the record of generation 2 follows. The rebalance began
    at b's leave and b left (member_left), as before."""
    left = T0 + 10_000
    evs = [record(T0, 1, [A, B], T0 - 200), *beats([A, B], T0 + 500, left - 500)]
    evs += [hb(left, B, "leave"), hb(left + 5, B, "revoked", partitions=PARTS[B])]
    evs += [hb(left + 300, A, "revoked", partitions=PARTS[A]), record(left + 1_000, 2, [A], left + 800)]
    evs += beats([A], left + 1_500, left + 30_000)
    doc = doc_of(evs)
    g2 = next(g for g in doc["generations"] if g["generation"] == 2)
    assert (g2["start"], g2["cause"], g2["members_left"]) == (left, "member_left", [B])
    assert [m["member_id"] for m in doc["members"]] == [A]
    assert [r["state"] for r in doc["timeline"]][-3:] == [
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
    ]


def test_a_snapshot_without_the_member_confirms_its_leave() -> None:
    """Snapshots and the probe: b's leave is shown once a describe no longer lists b, from b's leave
    on; a later poll_stall of b made it a poll timeout."""
    left = T0 + 20_000
    evs = [describe(ts, [A, B]) for ts in range(T0, left, 5_000)]
    evs += [hb(T0 - 500, m, "join") for m in (A, B)] + beats([A, B], T0 + 500, left - 1_000)
    evs += [hb(left - 800, B, "poll_stall"), hb(left, B, "leave"), describe(left + 1_800, [A])]
    doc = doc_of(evs)
    last = doc["generations"][-1]
    assert (last["start"], last["cause"], last["members_left"]) == (left, "poll_timeout", [B])
    assert [m["member_id"] for m in doc["members"]] == [A]


def test_a_leave_nothing_confirms_is_a_leave_when_the_member_falls_silent() -> None:
    """Records and the probe: b says it left and is never heard of again, and no record follows (the
    rebalance it started has not completed): its session runs out, and the rebalance began at its
    leave, a member_left."""
    left = T0 + 10_000
    evs = [record(T0, 1, [A, B], T0 - 200), *beats([A, B], T0 + 500, left - 500), hb(left, B, "leave")]
    evs += beats([A], left + 500, left + 40_000)
    doc = doc_of(evs)
    assert doc["state"] == "PreparingRebalance" and [m["member_id"] for m in doc["members"]] == [A]
    assert doc["timeline"][-1]["start"] == left


# -- 5. through the pipeline's route and model stages (no Spark) ---------------------------------------------
def _routed(lines: list[tuple[str, dict]], buckets: int, first_offset: int = 0) -> pd.DataFrame:
    """Raw heartbeat ("hb") and Admin ("admin") lines as the sources give them, through the route
    stage (decode_batches) into `buckets` state buckets."""
    raw = pd.DataFrame(
        {
            "topic": [t for t, _ in lines],
            "partition": [0] * len(lines),
            "offset": list(range(first_offset, first_offset + len(lines))),
            "timestamp": [line["ts"] for _, line in lines],
            "key": [str(line.get("group", "")).encode() for _, line in lines],
            "value": [json.dumps(line).encode() for _, line in lines],
        }
    )
    return pd.concat(list(decode_batches(iter([raw]), {"hb": "heartbeat", "admin": "admin"}, buckets)))


def _pipeline_docs(monkeypatch: pytest.MonkeyPatch, lines: list[tuple[str, dict]]) -> dict[str, dict]:
    """Raw heartbeat and Admin lines through route (decode_batches) and the live model stage, one
    micro-batch; the last document of each group."""
    routed = _routed(lines, 4)
    last = max(line["ts"] for _, line in lines)
    monkeypatch.setattr(model_state, "_now_ms", lambda: last + 10_000)
    update = model_state.make_update(True, 7 * 24 * 3600 * 1000, 5000, 0, hide_unconfirmed=True)
    docs: dict[str, dict] = {}
    for bucket in sorted(set(routed["bucket"])):
        state = BucketState()
        for out in update((bucket,), iter([routed[routed["bucket"] == bucket]]), state):
            for kind, payload in zip(out["kind"], out["payload"], strict=True):
                if kind == "doc":
                    doc = json.loads(payload)
                    docs[doc["group"]] = doc
    return docs


def _hb_line(
    ts: int, member: str, event: str = "heartbeat", group: str = "g", **extra: Any
) -> tuple[str, dict]:
    line = {"ts": ts, "group": group, "member_id": member, "client_id": member[:1], "event": event}
    return "hb", {**line, "session_timeout_ms": 10_000, "max_poll_interval_ms": 300_000, **extra}


def _describe_line(ts: int, members: list[str]) -> tuple[str, dict]:
    listed = [
        {"member_id": m, "client_id": m[:1], "host": "/10.0.0.1", "assignment": PARTS[m]} for m in members
    ]
    return "admin", {
        "ts": ts,
        "group": "g",
        "type": "classic",
        "state": "Stable",
        "assignor": "range",
        "members": listed,
    }


def test_forged_leaves_through_the_route_and_model_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline's own path: a real group (described, its members heartbeating), leaves forged in
    b's name, and a join with a session timeout past a Java int (a dead letter)."""
    real = [_describe_line(ts, [A, B]) for ts in range(T0, T0 + 60_000, 5_000)]
    real += [_hb_line(T0 - 500, m, "join") for m in (A, B)]
    real += [_hb_line(ts, m) for ts in range(T0 + 500, T0 + 60_000, 3_000) for m in (A, B)]
    forged = [_hb_line(ts, B, "leave") for ts in range(T0 + 5_200, T0 + 50_000, 7_100)]
    forged.append(_hb_line(T0 + 1_000, PHANTOM, "join", group="x", session_timeout_ms=2**62))
    clean = _pipeline_docs(monkeypatch, real)["g"]
    docs = _pipeline_docs(monkeypatch, real + forged)
    assert history(docs["g"]) == history(clean)
    assert "x" not in docs  # the 2**62 join is refused before the model: no group


def test_a_phantom_group_through_the_route_and_model_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    real = [_describe_line(T0, [A, B]), _hb_line(T0 + 500, A), _hb_line(T0 + 500, B)]
    phantom = [_hb_line(T0 + 1_000, PHANTOM, "join", group="x", session_timeout_ms=2**31 - 1)]
    docs = _pipeline_docs(monkeypatch, real + phantom)
    assert "g" in docs and "x" not in docs


def test_a_group_only_heartbeats_name_is_forgotten_after_a_while_without_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A forger may name any number of groups on the heartbeat topic: each is held unconfirmed, and
    forgotten once nothing came for it for UNCONFIRMED_KEEP_MS (the state store does not fill with
    made-up names); a confirmed group stays. Both groups share one bucket here."""
    lines = [_describe_line(T0, [A, B]), _hb_line(T0 + 500, A), _hb_line(T0 + 500, B)]
    lines += [_hb_line(T0 + 1_000, PHANTOM, "heartbeat", group="x")]
    routed = _routed(lines, 1)
    update = model_state.make_update(True, 7 * 24 * 3600 * 1000, 5000, 0, hide_unconfirmed=True)
    state = BucketState()

    def run(rows: Any, now: int) -> set[str]:
        monkeypatch.setattr(model_state, "_now_ms", lambda: now)
        for _ in update((0,), iter([rows]), state):
            pass
        return set(model_state._load_state(state)[0])

    assert run(routed, T0 + 10_000) == {"g", "x"}  # held, unconfirmed, never shown
    later = T0 + 10_000 + model_state.UNCONFIRMED_KEEP_MS + 60_000
    assert run(_routed([("admin", {"ts": later, "clock": True})], 1, len(lines)), later) == {"g"}
