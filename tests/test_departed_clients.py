"""Issue 34: a KIP-848 group's epochs name the members who joined and left by client id and host, as
a classic group's generations do (a classic member's id starts with its client id), not by their
opaque base64 ids. The model keeps who each member an epoch names was (Generation.clients ->
GenerationDoc.clients), even once the member left and the group holds nothing else of it; the
group page says them so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from collectors.capture import read_capture
from coordinator_model.broker_log import BrokerLogEvent
from coordinator_model.document.types import ClientDoc, GenerationDoc, GroupDocument, MemberDoc
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import ConsumerGroupEpoch, ConsumerMemberSubscription
from coordinator_model.rebuild import rebuild

KIP848 = Path(__file__).parent / "fixtures" / "real-kafka-4.0" / "kip848-lifecycle"
GROUPS = ("k848-range-060433h", "k848-uniform-060433h")


def _capture() -> list:
    cap = read_capture(KIP848)
    assert not cap.errors, cap.errors[:3]
    return cap.evidence


def _named(g: GenerationDoc) -> list[str]:
    return [*g.members_joined, *g.members_left]


@pytest.mark.parametrize(
    "sources",
    [
        ("offsets", "broker_log", "heartbeats", "describe", "end_offsets"),
        ("offsets",),
        ("offsets", "broker_log"),
    ],
    ids=lambda s: "+".join(s),
)
def test_a_real_kip848_groups_epochs_keep_who_joined_and_left(sources: tuple[str, ...]) -> None:
    """The real Kafka 4.0 capture of two KIP-848 groups (joins, a leave, an expiry, a join, every
    member closing): with the group's records read, every member an epoch names, those that left
    included, is there by the client id and host its record gave (the capture's clients are u1..u4
    and r1..r4 from Python and a Java one, all on 127.0.0.1)."""
    evs = [ev for ev in _capture() if ev.source in sources]
    engines = rebuild(evs)
    for name in GROUPS:
        doc = engines[name].document()
        left = [mid for g in doc.generations for mid in g.members_left]
        assert len(left) >= 4, left  # x2's leave, x3's expiry and the closes at the end
        for g in doc.generations:
            for mid in _named(g):
                who = g.clients.get(mid)
                assert who is not None and who.client_id and who.client_host == "/127.0.0.1", (g, mid)
        # the document keeps them through its JSON form (what Redis holds and the page reads)
        assert GroupDocument.from_json(doc.to_json()) == doc
        clients = {c.client_id for g in doc.generations for c in g.clients.values()}
        prefix = name.split("-")[1][0]  # r or u
        assert {f"{prefix}{i}" for i in (1, 2, 3, 4)} <= clients, clients


def test_the_describe_alone_keeps_who_left_between_two_describes() -> None:
    """Without the records, membership is the describes': a member a describe listed and the next
    did not is a leave, and it is kept by the client id and host the describe had given it."""
    evs = [ev for ev in _capture() if ev.source in ("describe", "end_offsets")]
    engines = rebuild(evs)
    for name in GROUPS:
        doc = engines[name].document()
        left = [(g, mid) for g in doc.generations for mid in g.members_left]
        assert left, name
        for g, mid in left:
            who = g.clients[mid]
            assert who.client_id and who.client_host == "/127.0.0.1", (g, mid)


# ---- any run of joins and leaves -----------------------------------------------------------------
def _member_id(k: int) -> str:
    return f"{k:02d}bFJVdKREesa0Z4Y8so2A"  # the shape of a KIP-848 member id: 22 base64 characters


def _client(k: int) -> tuple[str, str]:
    return f"app-{k % 3}", f"/10.0.{k}.7"  # client ids shared, as one client.id in several processes


@st.composite
def membership_runs(draw: st.DrawFn) -> list[tuple[str, int, bool]]:
    """(join | leave, member number, whether the broker's log tells of the join before the member's
    record names its client) in an order a group can have them: a member leaves after it joined; a
    member that comes back is a new member (KIP-848 gives it a new id)."""
    present: list[int] = []
    ops: list[tuple[str, int, bool]] = []
    for _ in range(draw(st.integers(1, 14))):
        if present and draw(st.booleans()):
            k = draw(st.sampled_from(present))
            present.remove(k)
            ops.append(("leave", k, False))
        else:
            k = len(ops)
            present.append(k)
            ops.append(("join", k, draw(st.booleans())))
    return ops


def _run(ops: list[tuple[str, int, bool]], group: str = "g") -> GroupEngine:
    """The records (and broker log lines) the coordinator writes for `ops`, one epoch bump each."""
    eng = GroupEngine(group)
    ts = 1_000_000
    for epoch, (op, k, log_first) in enumerate(ops, start=1):
        mid = _member_id(k)
        cid, host = _client(k)
        ts += 1_000
        if op == "leave":
            eng.apply(ConsumerMemberSubscription(ts, group, mid, True))  # a tombstone: no client id
        else:
            if log_first:  # "Member ... joined", "Bumped group epoch": before the member's record
                eng.apply(BrokerLogEvent(ts, group, "consumer_member_joined", member_id=mid))
                eng.apply(BrokerLogEvent(ts + 1, group, "group_epoch", epoch=epoch))
            eng.apply(
                ConsumerMemberSubscription(
                    ts + 2, group, mid, False, client_id=cid, client_host=host, subscribed_topics=("t",)
                )
            )
        eng.apply(ConsumerGroupEpoch(ts + 3, group, epoch))
    return eng


@settings(max_examples=150, deadline=None)
@given(membership_runs())
def test_every_epoch_keeps_who_it_names(ops: list[tuple[str, int, bool]]) -> None:
    """Whatever the joins and leaves, and whether the broker's log names a joining member before its
    record says who it is: every member an epoch names is kept by the client id and host its record
    gave, the members that left included; and the document keeps them through its JSON form."""
    doc = _run(ops).document()
    assert [g.generation for g in doc.generations] == list(range(1, len(ops) + 1))
    for g, (op, k, _) in zip(doc.generations, ops, strict=True):
        mid = _member_id(k)
        assert _named(g) == [mid], (g, op)
        assert g.clients == {mid: ClientDoc(*_client(k))}, g
    assert GroupDocument.from_json(doc.to_json()) == doc


def test_a_classic_groups_generations_carry_no_clients() -> None:
    """A classic group's document is as before: its members' ids say their client ids."""
    folder = Path(__file__).parent / "fixtures" / "real-kafka-4.0" / "classic-range-lifecycle"
    docs = [e.document() for e in rebuild(read_capture(folder).evidence).values()]
    assert docs and all(not g.clients for d in docs for g in d.generations)
    assert all("clients" not in g for d in docs for g in d.to_json()["generations"])


# ---- the group page ------------------------------------------------------------------------------
def test_the_generations_table_says_a_kip848_member_by_client_id_and_host() -> None:
    """The page's generations table: a KIP-848 member that left by its client id and host, its id in
    the tooltip; one an epoch kept nothing of but still in the group, by what the group says of it; a
    member known by neither, by its id. A classic group's rows say member ids, as before."""
    from dashboard.pages.group import generation_rows

    doc = _run([("join", 0, False), ("join", 1, True), ("leave", 0, False)]).document()
    gone, stays = _member_id(0), _member_id(1)
    rows = {r["generation"]: r for r in generation_rows(doc.generations, doc)}
    assert rows[3]["left"] == "app-0 (/10.0.0.7)"
    assert rows[3]["left_whole"] == f"app-0 (/10.0.0.7): member {gone}"
    assert rows[2]["joined"] == "app-1 (/10.0.1.7)" and stays in rows[2]["joined_whole"]
    # an epoch stored before epochs kept their members' clients
    old = GenerationDoc(4, 5, members_joined=[stays, "Zz9vT2rSWOle9GA7MoeJA_"], members_left=[])
    (row,) = generation_rows([old], doc)
    assert row["joined"] == "app-1 (/10.0.1.7), Zz9vT2rSWOle9GA7MoeJA_"
    classic = GroupDocument(
        "c", members=[MemberDoc("consumer-1-3f2a", client_id="consumer-1", client_host="/10.0.0.1")]
    )
    gen = GenerationDoc(1, 5, members_joined=["consumer-1-3f2a"], members_left=["consumer-2-9b1c"])
    (row,) = generation_rows([gen], classic)
    assert (row["joined"], row["left"]) == ("consumer-1-3f2a", "consumer-2-9b1c")


def test_the_generations_chart_hover_says_who_with_the_member_id() -> None:
    from dashboard.figures import generations_figure

    doc = _run([("join", 0, False), ("leave", 0, False)]).document()
    fig = generations_figure(doc.generations, None, 10**13, modern=True, members=doc.member_by_id())
    hovers = [row for trace in fig.data for row in trace.customdata]
    left = next(h for h in hovers if h[3] != "-")
    assert left[3] == f"app-0 (/10.0.0.7): member {_member_id(0)}"
