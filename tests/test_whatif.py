"""The what-if engine: every change kind, every report field, the timeout-avoided count, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.cli.main import cli
from coordinator_model.assignors import AssignorError
from coordinator_model.document.types import (
    DocumentError,
    GenerationDoc,
    GroupDocument,
    LagDoc,
    MemberDoc,
    OffsetDoc,
    PartitionLag,
)
from coordinator_model.whatif import run_whatif, whatif_input_from_group_document

# Two members on t0 (3 partitions) and t1 (3 partitions), each owning half, with lag per partition.
BASE = {
    "members": [
        {
            "member_id": "c0",
            "topics": ["t0", "t1"],
            "owned": [["t0", 0], ["t0", 1], ["t1", 0]],
            "generation": 3,
        },
        {
            "member_id": "c1",
            "topics": ["t0", "t1"],
            "owned": [["t0", 2], ["t1", 1], ["t1", 2]],
            "generation": 3,
        },
    ],
    "partitions": {"t0": 3, "t1": 3},
    "lag": {"t0": [10, 20, 30], "t1": [0, 5, 100]},
}


def whatif(changes: list[dict], assignors: list[str] | None = None, **extra: object) -> dict:
    return run_whatif({**BASE, "changes": changes, "assignors": assignors or ["range"], **extra})


def test_no_change_reports_the_current_group() -> None:
    r = whatif([], ["sticky"])
    assert r["before"]["assignment_source"] == "owned"
    assert r["before"]["partitions_per_member"] == {
        "per_member": {"c0": 3, "c1": 3},
        "min": 3,
        "max": 3,
        "spread": 0,
    }
    assert r["before"]["lag_per_member"]["per_member"] == {"c0": 30, "c1": 135}
    sticky = r["assignors"]["sticky"]
    assert sticky["moves"] == {"count": 0, "partitions": []}
    assert sticky["members_losing_partitions"] == {}
    # sticky is still eager: the whole group stops while it rebalances
    assert sticky["rebalance_cost"]["partitions_paused"] == 6
    assert sticky["rebalance_cost"]["partitions_revoked"] == 6
    assert sticky["rebalance_cost"]["lag_paused"] == 165


def test_add_members_with_the_same_subscription_and_report_fields() -> None:
    r = whatif([{"kind": "add_members", "count": 1}], ["range", "cooperative-sticky"])
    assert r["after"]["members"] == ["c0", "c1", "whatif-member-0"]
    rng = r["assignors"]["range"]
    assert rng["assignment"] == {
        "c0": [["t0", 0], ["t1", 0]],
        "c1": [["t0", 1], ["t1", 1]],
        "whatif-member-0": [["t0", 2], ["t1", 2]],
    }
    assert rng["partitions_per_member"] == {
        "per_member": {"c0": 2, "c1": 2, "whatif-member-0": 2},
        "min": 2,
        "max": 2,
        "spread": 0,
    }
    assert rng["lag_per_member"] == {
        "per_member": {"c0": 10, "c1": 25, "whatif-member-0": 130},
        "min": 10,
        "max": 130,
        "spread": 120,
    }
    # t0-1 c0->c1, t0-2 c1->new, t1-2 c1->new
    assert rng["moves"]["count"] == 3
    assert {"topic": "t0", "partition": 1, "from": "c0", "to": "c1"} in rng["moves"]["partitions"]
    assert rng["members_losing_partitions"] == {"c0": 1, "c1": 2}
    assert rng["rebalance_cost"] == {
        "protocol": "eager",
        "rebalances": 1,
        "partitions_revoked": 6,
        "partitions_paused": 6,
        "lag_paused": 165,
        "partitions_newly_assigned": 0,
    }
    coop = r["assignors"]["cooperative-sticky"]
    assert coop["partitions_per_member"]["spread"] == 0
    assert coop["moves"]["count"] == 2  # one from each old member, the fewest a balanced result allows
    cost = coop["rebalance_cost"]
    assert cost["protocol"] == "cooperative" and cost["rebalances"] == 2
    assert cost["partitions_revoked"] == cost["partitions_paused"] == cost["withheld_in_first_rebalance"] == 2
    moved_lag = sum(BASE["lag"][m["topic"]][m["partition"]] for m in coop["moves"]["partitions"])
    assert cost["lag_paused"] == moved_lag


def test_add_members_with_given_topics_or_like_another_member() -> None:
    r = whatif([{"kind": "add_members", "count": 2, "topics": ["t1"], "prefix": "x"}], ["roundrobin"])
    assignment = r["assignors"]["roundrobin"]["assignment"]
    assert set(assignment) == {"c0", "c1", "x0", "x1"}
    assert all(tp[0] == "t1" for m in ("x0", "x1") for tp in assignment[m])
    r = whatif([{"kind": "add_members", "count": 1, "like": "c1"}])
    assert "add 1 member(s) subscribed to t0, t1" in r["changes"]


def test_remove_members_by_id_and_by_count() -> None:
    r = whatif([{"kind": "remove_members", "member_ids": ["c1"]}], ["uniform"])
    uni = r["assignors"]["uniform"]
    assert uni["assignment"]["c0"] == [["t0", 0], ["t0", 1], ["t0", 2], ["t1", 0], ["t1", 1], ["t1", 2]]
    assert uni["members_losing_partitions"] == {"c1": 3}
    assert uni["rebalance_cost"]["protocol"] == "consumer"
    assert uni["rebalance_cost"]["partitions_revoked"] == 0  # the leaver's partitions are not revoked
    assert uni["rebalance_cost"]["partitions_paused"] == 3
    r = whatif([{"kind": "remove_members", "count": 1}])
    assert r["after"]["members"] == ["c0"]


def test_change_subscription() -> None:
    r = whatif([{"kind": "change_subscription", "member_id": "c1", "topics": ["t1"]}], ["sticky"])
    a = r["assignors"]["sticky"]["assignment"]
    assert all(tp[0] == "t1" for tp in a["c1"])
    assert ["t0", 2] in a["c0"]


def test_add_partitions_by_count_and_total() -> None:
    r = whatif([{"kind": "add_partitions", "topic": "t0", "count": 3}], ["sticky"])
    assert r["after"]["partitions"]["t0"] == 6
    sticky = r["assignors"]["sticky"]
    assert sticky["partitions_per_member"]["per_member"] == {"c0": 5, "c1": 4} or sticky[
        "partitions_per_member"
    ]["per_member"] == {"c0": 4, "c1": 5}
    assert sticky["moves"]["count"] == 0  # new partitions fill the gap, nobody loses one
    assert sticky["rebalance_cost"]["partitions_newly_assigned"] == 3
    r = whatif(
        [
            {"kind": "add_partitions", "topic": "t2", "total": 4},
            {"kind": "change_subscription", "member_id": "c0", "topics": ["t0", "t1", "t2"]},
        ]
    )
    assert r["after"]["partitions"]["t2"] == 4
    with pytest.raises(AssignorError, match="cannot shrink"):
        whatif([{"kind": "add_partitions", "topic": "t0", "total": 1}])


def test_switch_assignor_adds_it_to_the_comparison() -> None:
    r = run_whatif(
        {
            **BASE,
            "assignor": "range",
            "changes": [{"kind": "switch_assignor", "assignor": "cooperative-sticky"}],
        }
    )
    assert r["before"]["assignor"] == "range"
    assert r["after"]["assignor"] == "cooperative-sticky"
    assert list(r["assignors"]) == ["cooperative-sticky"]
    r = whatif([{"kind": "switch_assignor", "assignor": "roundrobin"}], ["range"])
    assert list(r["assignors"]) == ["range", "roundrobin"]


def test_current_assignment_computed_when_nobody_owns_anything() -> None:
    doc = {**BASE, "members": [{k: v for k, v in m.items() if k != "owned"} for m in BASE["members"]]}
    r = run_whatif({**doc, "assignor": "roundrobin", "assignors": ["sticky"], "changes": []})
    assert r["before"]["assignment_source"] == "computed with roundrobin"
    assert r["assignors"]["sticky"]["moves"]["count"] == 0  # sticky keeps what roundrobin gave


REBALANCES = [
    {"generation": 2, "cause": "session_timeout", "member_id": "c1", "gap_ms": 12000},
    {"generation": 3, "cause": "session timeout", "member_id": "c0", "gap_ms": 50000},
    {"generation": 4, "cause": "poll_timeout", "member_id": "c0", "gap_ms": 400000},
    {"generation": 5, "cause": "max.poll.interval expired", "member_id": "c1", "gap_ms": 310000},
    {"generation": 6, "cause": "member_joined", "member_id": "c1"},
    {"generation": 7, "cause": "session_timeout", "member_id": "c1"},
]


def test_session_timeout_change_counts_avoided_rebalances() -> None:
    r = whatif(
        [{"kind": "set_session_timeout", "ms": 15000}], session_timeout_ms=10000, rebalances=REBALANCES
    )
    t = r["timeouts"]
    assert t["changed"] is True and t["recorded_rebalances"] == 6
    assert t["session_timeout"] == {
        "recorded": 3,
        "gap_unknown": 1,
        "avoided": 1,
        "timeout_ms_before": 10000,
        "timeout_ms_after": 15000,
        "max_gap_ms": 50000,
    }
    assert t["poll_timeout"]["avoided"] == 0
    assert t["avoided_total"] == 1 and t["avoided_generations"] == [2]
    # exactly the gap is not enough: the expiry happens when the gap reaches the timeout
    r = whatif([{"kind": "set_session_timeout", "ms": 12000}], rebalances=REBALANCES)
    assert r["timeouts"]["session_timeout"]["avoided"] == 0


def test_max_poll_interval_change_per_member() -> None:
    r = whatif([{"kind": "set_max_poll_interval", "ms": 350000, "member_id": "c1"}], rebalances=REBALANCES)
    assert r["timeouts"]["poll_timeout"]["avoided"] == 1  # gen 5 (c1, 310 s); gen 4 was c0 at 400 s
    assert r["timeouts"]["avoided_generations"] == [5]
    r = whatif([{"kind": "set_max_poll_interval", "ms": 600000}], rebalances=REBALANCES)
    assert r["timeouts"]["poll_timeout"]["avoided"] == 2
    assert r["timeouts"]["poll_timeout"]["timeout_ms_before"] == 300000  # Kafka's default


def test_changes_apply_in_order_and_are_described() -> None:
    r = whatif(
        [
            {"kind": "add_members", "count": 2},
            {"kind": "remove_members", "member_ids": ["whatif-member-1"]},
            {"kind": "set_session_timeout", "ms": 30000},
        ]
    )
    assert r["changes"] == [
        "add 2 member(s) subscribed to t0, t1",
        "remove 1 member(s): whatif-member-1",
        "session.timeout.ms = 30000",
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ([{"kind": "explode"}], "unknown change kind"),
        ([{"count": 1}], "no kind"),
        ([{"kind": "remove_members", "member_ids": ["zz"]}], "no member 'zz'"),
        ([{"kind": "change_subscription", "member_id": "c0", "topics": ["nope"]}], "no partition count"),
        ([{"kind": "add_members", "count": -1}], "non-negative"),
        ([{"kind": "set_session_timeout", "ms": 0}], "positive"),
        ([{"kind": "switch_assignor", "assignor": "magic"}], "unknown assignor"),
    ],
)
def test_bad_changes(changes: list[dict], message: str) -> None:
    with pytest.raises(AssignorError, match=message):
        whatif(changes)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({**BASE, "assignors": ["nope"]}, "unknown assignor"),
        ({**BASE, "lag": {"t0": [1, -5]}}, "negative"),
        ({**BASE, "lag": "lots"}, "lag"),
        ({**BASE, "changes": "all"}, "changes"),
        ({**BASE, "session_timeout_ms": -3}, "positive"),
        ({**BASE, "partitions": {"t0": -1, "t1": 3}}, "negative"),
    ],
)
def test_whatif_cli_bad_input_exit_2(tmp_path: Path, doc: dict, message: str) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["whatif", str(path)])
    assert result.exit_code == 2
    assert message in result.output and result.output.count("\n") == 1


def test_whatif_cli_prints_the_report_from_stdin() -> None:
    doc = {**BASE, "changes": [{"kind": "add_members", "count": 1}], "assignors": ["range", "sticky"]}
    result = CliRunner().invoke(cli, ["whatif", "-"], input=json.dumps(doc))
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.output)["assignors"]) == {"range", "sticky"}


def test_lag_as_a_list_of_entries() -> None:
    entries = [
        {"topic": t, "partition": p, "lag": v} for t, vs in BASE["lag"].items() for p, v in enumerate(vs)
    ]
    r = run_whatif({**BASE, "lag": entries, "assignors": ["range"]})
    assert r["after"]["total_lag"] == 165


MODEL_DOC = GroupDocument(
    group="orders",
    type="classic",
    state="Stable",
    protocol_type="consumer",
    protocol="cooperative-sticky",
    generation=7,
    members=[
        MemberDoc(
            "a-1",
            client_id="a",
            client_host="/10.0.0.1",
            session_timeout_ms=10000,
            rebalance_timeout_ms=60000,
            subscription=["orders"],
            assignment=[("orders", 0), ("orders", 1)],
        ),
        MemberDoc(
            "b-1",
            group_instance_id="b-static",
            client_id="b",
            client_host="/10.0.0.2",
            session_timeout_ms=10000,
            rebalance_timeout_ms=60000,
            subscription=["orders"],
            assignment=[("orders", 2)],
        ),
    ],
    offsets=[OffsetDoc("orders", p, 5) for p in range(4)],
    lag=LagDoc(
        total=60,
        max_seconds=1.5,
        partitions=[
            PartitionLag("orders", p, committed=5, has_commit=True, lag=10 * p, lag_seconds=1.5)
            for p in range(4)
        ],
    ),
    generations=[
        GenerationDoc(
            6,
            1000,
            end=4000,
            duration_ms=3000,
            members=["a-1"],
            members_left=["c-1"],
            cause="session_timeout",
            gap_ms=11000,
        ),
        GenerationDoc(
            7,
            5000,
            end=5200,
            duration_ms=200,
            members=["a-1", "b-1"],
            members_joined=["b-1"],
            cause="member_joined",
        ),
    ],
).to_json()


def test_adapter_turns_a_model_document_into_whatif_input() -> None:
    inp = whatif_input_from_group_document(MODEL_DOC)
    assert inp == whatif_input_from_group_document(GroupDocument.from_json(MODEL_DOC))
    assert inp["assignor"] == "cooperative-sticky"
    assert inp["partitions"] == {"orders": 4}  # partition 3 seen only in offsets and lag
    assert inp["lag"] == {"orders": {"0": 0, "1": 10, "2": 20, "3": 30}}
    a, b = inp["members"]
    assert a == {
        "member_id": "a-1",
        "topics": ["orders"],
        "owned": [["orders", 0], ["orders", 1]],
        "generation": 7,
        "session_timeout_ms": 10000,
        "max_poll_interval_ms": 60000,
    }
    assert b["group_instance_id"] == "b-static"
    assert inp["rebalances"][0] == {
        "generation": 6,
        "cause": "session_timeout",
        "start": 1000,
        "member_id": "c-1",
        "gap_ms": 11000,
    }
    report = run_whatif(
        {
            **inp,
            "changes": [{"kind": "set_session_timeout", "ms": 12000}],
            "assignors": ["cooperative-sticky"],
        }
    )
    assert report["timeouts"]["session_timeout"]["avoided"] == 1
    coop = report["assignors"]["cooperative-sticky"]
    assert coop["partitions_per_member"]["spread"] == 0
    assert coop["lag_per_member"]["per_member"] == {"a-1": 10, "b-1": 50}


def test_adapter_on_an_empty_group_uses_its_last_protocol_and_topics() -> None:
    doc = {
        **MODEL_DOC,
        "state": "Empty",
        "protocol": None,
        "members": [],
        "generations": [
            GenerationDoc(7, 100, protocol="roundrobin", cause="member_joined").to_json(),
            GenerationDoc(8, 200, protocol=None, cause="member_left", empty=True).to_json(),
        ],
    }
    inp = whatif_input_from_group_document(doc)
    assert inp["assignor"] == "roundrobin"
    report = run_whatif({**inp, "changes": [{"kind": "add_members", "count": 2}]})
    assert report["changes"] == ["add 2 member(s) subscribed to orders"]
    assert report["assignors"]["roundrobin"]["assignment"] == {
        "whatif-member-0": [["orders", 0], ["orders", 2]],
        "whatif-member-1": [["orders", 1], ["orders", 3]],
    }


def test_adapter_on_sparse_documents() -> None:
    # a group known only by name (no source said more yet) is a valid, empty what-if
    inp = whatif_input_from_group_document(GroupDocument("new"))
    assert inp["members"] == [] and inp["partitions"] == {} and inp["assignor"] == "range"
    run_whatif(inp)
    # unknown lag is left out; partition counts given win over those seen; an unknown assignor is range
    doc = GroupDocument(
        "g",
        protocol="weird",
        members=[MemberDoc("x", subscription=["t"])],
        lag=LagDoc(
            partitions=[PartitionLag("t", 0, lag=4), PartitionLag("t", 1, lag=7), PartitionLag("t", 2)]
        ),
    )
    inp = whatif_input_from_group_document(doc, partitions={"t": 3})
    assert inp["partitions"] == {"t": 3} and inp["assignor"] == "range"
    assert inp["lag"] == {"t": {"0": 4, "1": 7}}
    assert inp["members"][0]["owned"] == []
    assert run_whatif({**inp, "assignors": ["uniform"]})["assignors"]["uniform"]["assignment"]["x"] == [
        ["t", 0],
        ["t", 1],
        ["t", 2],
    ]
    # a KIP-848 group's range is the broker's assignor; an unknown subscribed topic gets 0 partitions
    modern = GroupDocument(
        "k", type="consumer", protocol="range", members=[MemberDoc("m", subscription=["u"])]
    )
    inp = whatif_input_from_group_document(modern.to_json())
    assert inp["assignor"] == "server-range" and inp["partitions"] == {"u": 0}


def test_adapter_refuses_what_is_not_a_document() -> None:
    for bad in ({}, {"members": [{"member_id": "x"}]}, {"group": "g", "lag": [{"topic": "t"}]}):
        with pytest.raises(DocumentError):
            whatif_input_from_group_document(bad)


def test_whatif_cli_output_is_json_even_with_odd_topic_names() -> None:
    odd = 'we"ird\\topic ]'
    doc = {"members": [{"member_id": "a", "topics": [odd]}], "partitions": {odd: 2}, "assignors": ["range"]}
    result = CliRunner().invoke(cli, ["whatif", "-"], input=json.dumps(doc))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["assignors"]["range"]["assignment"] == {"a": [[odd, 0], [odd, 1]]}
    assert f"[{json.dumps(odd)}, 0]" in result.output  # pairs printed on one line
