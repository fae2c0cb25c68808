"""The alert rules as pure functions over hand-built group documents (no Redis)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_alert_docs import MIN, T0, S, doc, gen, mid, part, storm_doc

from coordinator_model.alert_rules import (
    DEFAULT_RULES,
    RULES,
    AlertConfigError,
    evaluate_group,
    group_state_rules,
    lag_rules,
    parse_alert_config,
    rebalance_rules,
)
from coordinator_model.document.types import DocumentError, GroupDocument, MemberDoc, TimelineSpan


def P(rule: str, **kw) -> dict:
    return {**DEFAULT_RULES[rule], **kw}


def rules_fired(d: dict, now: int, config=None) -> set[str]:
    return {f.rule for f in evaluate_group(d, now, config or parse_alert_config(None)).findings}


# --- rebalance storm -----------------------------------------------------------------------------


def test_storm_fires_on_a_flapping_process_and_resolves_when_the_window_passes() -> None:
    d, end = storm_doc()
    r = rebalance_rules.rebalance_storm(d, T0 + 25 * S, P("rebalance_storm"))
    assert r.finding is not None
    ev = r.finding.evidence
    assert ev["rebalances"] >= 5 and ev["threshold"] == 5
    # the stable members' joins and the group creation do not count
    assert all(g["generation"] >= 4 for g in ev["generations"])
    # fires from the fifth counted rebalance: flap joins at 10, 13, 16 s, leaves at 12, 15 s
    assert r.finding.since == T0 + 16 * S
    # before the fifth counted rebalance: no storm yet
    assert rebalance_rules.rebalance_storm(d, T0 + 15 * S + 1, P("rebalance_storm")).finding is None
    # ten minutes after the last flap, the window holds nothing: resolved
    later = rebalance_rules.rebalance_storm(d, end + 10 * MIN + 1, P("rebalance_storm"))
    assert later.finding is None and later.recheck_at is None
    # the rule says when to look again while the storm is in the window
    assert r.recheck_at is not None and r.recheck_at > T0 + 25 * S


def test_rolling_restart_and_scale_out_are_not_storms() -> None:
    clients = [f"app-{i}" for i in range(6)]
    old = {c: mid(c) for c in clients}
    gens = [gen(1, T0, "group_created", [old[clients[0]]])]
    n, t = 2, T0
    for c in clients[1:]:  # scale out one by one, 10 s apart
        t += 10 * S
        gens.append(gen(n, t, "member_joined", [old[c]]))
        n += 1
    for c in clients:  # rolling restart: each member stops and comes back 5 s later
        t += 30 * S
        gens.append(gen(n, t, "member_left", left=[old[c]]))
        gens.append(gen(n + 1, t + 5 * S, "member_joined", [mid(c)]))
        n += 2
    d = doc("deploy", gens, [("Stable", T0, None)])
    for now in range(T0, t + 2 * MIN, 7 * S):
        assert rules_fired(d, now) == set(), now


def test_leave_of_the_whole_group_is_a_shutdown_not_a_storm() -> None:
    ms = [mid(f"c{i}") for i in range(6)]
    gens = [gen(1, T0, "group_created", ms, members=6)]
    t = T0 + 5 * MIN
    for i, m in enumerate(ms):  # members stop one after the other
        gens.append(gen(2 + i, t + i * S, "member_left", left=[m], members=5 - i))
    d = doc("stop", gens, [("Stable", T0, t + 5 * S), ("Empty", t + 5 * S, None)], state="Empty")
    r = rebalance_rules.rebalance_storm(d, t + 10 * S, P("rebalance_storm"))
    assert r.finding is None


def test_storm_threshold_and_window_come_from_the_config() -> None:
    d, _ = storm_doc(flaps=3)  # 6 counted rebalances in ~9 s
    assert rebalance_rules.rebalance_storm(d, T0 + 25 * S, P("rebalance_storm")).finding is not None
    assert rebalance_rules.rebalance_storm(d, T0 + 25 * S, P("rebalance_storm", count=7)).finding is None
    assert rebalance_rules.rebalance_storm(d, T0 + 25 * S, P("rebalance_storm", window_s=5)).finding is None


def test_generations_after_now_are_ignored() -> None:
    d, _ = storm_doc()
    assert rebalance_rules.rebalance_storm(d, T0 + 5 * S, P("rebalance_storm")).finding is None


# --- flapping ------------------------------------------------------------------------------------


def test_same_client_joining_and_leaving_repeatedly_is_flapping() -> None:
    gens = [gen(1, T0, "group_created", [mid("steady")])]
    n, t = 2, T0 + 10 * S
    for _ in range(3):
        m = mid("worker-7")
        gens.append(gen(n, t, "member_joined", [m]))
        gens.append(gen(n + 1, t + 20 * S, "session_timeout", left=[m]))
        n, t = n + 2, t + 40 * S
    d = doc("flappy", gens, [("Stable", T0, None)])
    r = rebalance_rules.member_flapping(d, t, P("member_flapping"))
    assert r.finding is not None
    assert r.finding.evidence["clients"]["worker-7"]["joins"] == 3
    assert "steady" not in r.finding.evidence["clients"]
    # two cycles only: not yet
    assert rebalance_rules.member_flapping(d, T0 + 60 * S, P("member_flapping")).finding is None
    # distinct processes (the storm capture) are a storm, not a flapping client
    sd, _ = storm_doc()
    assert rebalance_rules.member_flapping(sd, T0 + 60 * S, P("member_flapping")).finding is None


def test_static_member_instance_id_is_the_flapping_key() -> None:
    """A static member's id is "<group.instance.id>-<uuid>" (the coordinator builds it): its restarts
    are one client, whether the member list still shows it (the last one) or not."""
    gens = [gen(1, T0, "group_created", [mid("steady")])]
    current = mid("inst-1")
    for i in range(1, 4):
        gens.append(gen(2 * i, T0 + i * 10 * S, "member_left", left=[mid("inst-1")]))
        back = current if i == 3 else mid("inst-1")
        gens.append(gen(2 * i + 1, T0 + i * 10 * S + 5 * S, "member_joined", [back]))
    listed = [MemberDoc(current, group_instance_id="inst-1", client_id="consumer-inst-1-1")]
    r = rebalance_rules.member_flapping(
        doc("static", gens, members=listed), T0 + 50 * S, P("member_flapping")
    )
    assert r.finding is not None and set(r.finding.evidence["clients"]) == {"inst-1"}


# --- members lost ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cause", ["session_timeout", "poll_timeout"])
def test_member_lost_fires_for_the_window_then_resolves(cause: str) -> None:
    m = mid("p2")
    gens = [gen(1, T0, "group_created", [mid("p1")]), gen(2, T0 + 5 * S, "member_joined", [m])]
    gens.append(gen(3, T0 + 30 * S, cause, left=[m], reason="removing member on LeaveGroup"))
    d = doc("lost", gens, [("Stable", T0, None)])
    assert rebalance_rules.member_lost(d, T0 + 29 * S, P("member_lost")).finding is None
    r = rebalance_rules.member_lost(d, T0 + 31 * S, P("member_lost"))
    assert r.finding is not None
    assert r.finding.evidence["members"] == [m]
    assert r.finding.evidence["causes"] == {cause: 1}
    assert r.finding.evidence["generations"][0]["generation"] == 3
    assert r.recheck_at == T0 + 30 * S + 10 * MIN + 1
    assert rebalance_rules.member_lost(d, r.recheck_at, P("member_lost")).finding is None


def test_graceful_leave_is_not_a_lost_member() -> None:
    m = mid("p2")
    gens = [gen(1, T0, "group_created", [mid("p1"), m]), gen(2, T0 + 30 * S, "member_left", left=[m])]
    assert rebalance_rules.member_lost(doc("g", gens), T0 + 31 * S, P("member_lost")).finding is None


# --- rebalance stuck ---------------------------------------------------------------------------------


def test_rebalance_stuck_counts_the_whole_non_stable_stretch() -> None:
    tl = [
        ("Stable", T0, T0 + MIN),
        ("PreparingRebalance", T0 + MIN, T0 + 3 * MIN),
        ("CompletingRebalance", T0 + 3 * MIN, T0 + 4 * MIN),
        ("PreparingRebalance", T0 + 4 * MIN, None),
    ]
    d = doc("stuck", [], tl, state="PreparingRebalance")
    early = rebalance_rules.rebalance_stuck(d, T0 + 4 * MIN, P("rebalance_stuck"))
    assert early.finding is None and early.recheck_at == T0 + 6 * MIN
    r = rebalance_rules.rebalance_stuck(d, T0 + 6 * MIN + 1, P("rebalance_stuck"))
    assert r.finding is not None
    assert r.finding.evidence["rebalancing_since"] == T0 + MIN
    assert r.finding.since == T0 + 6 * MIN
    # as of a moment when it was Stable: nothing
    assert rebalance_rules.rebalance_stuck(d, T0 + 30 * S, P("rebalance_stuck")).finding is None


def test_kip848_reconciling_counts_as_rebalancing() -> None:
    d = doc("k", [], [("Stable", T0, T0 + S), ("Reconciling", T0 + S, None)], state="Reconciling")
    assert rebalance_rules.rebalance_stuck(d, T0 + 10 * MIN, P("rebalance_stuck")).finding is not None


# --- Empty / Dead ------------------------------------------------------------------------------------


def test_group_empty_after_the_grace_period_and_not_on_restart() -> None:
    tl = [("Stable", T0, T0 + MIN), ("Empty", T0 + MIN, None)]
    d = doc("gone", [], tl, state="Empty", lag=[part("t", 0, 500, 90.0, "STOP")])
    early = group_state_rules.group_empty(d, T0 + MIN + 30 * S, P("group_empty"))
    assert early.finding is None and early.recheck_at == T0 + 2 * MIN
    r = group_state_rules.group_empty(d, T0 + 2 * MIN, P("group_empty"))
    assert r.finding is not None and r.finding.evidence["previous_state"] == "Stable"
    # said as a time people read (it goes to Slack, e-mail, Alertmanager), not epoch milliseconds
    became = datetime.fromtimestamp((T0 + MIN) / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert r.finding.summary == f"group Empty since {became} (was Stable)"
    # a restart: Empty for 5 s, then members are back
    tl2 = [
        ("Stable", T0, T0 + MIN),
        ("Empty", T0 + MIN, T0 + MIN + 5 * S),
        ("PreparingRebalance", T0 + MIN + 5 * S, None),
    ]
    d2 = doc("restart", [], tl2, state="PreparingRebalance")
    for now in range(T0, T0 + 5 * MIN, 5 * S):
        assert group_state_rules.group_empty(d2, now, P("group_empty")).finding is None


def test_group_empty_consumed_to_the_end_does_not_alert() -> None:
    tl = [("Stable", T0, T0 + MIN), ("Empty", T0 + MIN, None)]
    done = [part("t", 0, 0, 0.0, "OK"), part("tx", 0, 1, 900.0, "STALL")]  # nothing left but a marker
    d = doc("batch", [], tl, state="Empty", lag=done)
    assert group_state_rules.group_empty(d, T0 + 30 * MIN, P("group_empty")).finding is None
    assert rules_fired(d, T0 + 30 * MIN) == set()
    assert group_state_rules.group_empty(d, T0 + 30 * MIN, P("group_empty", min_lag=0)).finding is not None


def test_standalone_group_always_empty_never_alerts() -> None:
    d = doc("standalone", [], [("Empty", T0, None)], state="Empty")
    assert group_state_rules.group_empty(d, T0 + 60 * MIN, P("group_empty")).finding is None
    assert rules_fired(d, T0 + 60 * MIN) == set()


def test_group_empty_resolve_after() -> None:
    tl = [("Stable", T0, T0 + MIN), ("Dead", T0 + MIN, None)]
    d = doc("gone", [], tl, state="Dead", lag=[part("t", 0, 500, 90.0, "STOP")])
    p = P("group_empty", resolve_after_s=600)
    assert group_state_rules.group_empty(d, T0 + 3 * MIN, p).finding is not None
    assert group_state_rules.group_empty(d, T0 + 13 * MIN, p).finding is None


# --- lag ---------------------------------------------------------------------------------------------


def test_lag_status_with_thresholds() -> None:
    d = doc("slow", lag=[part("t", 0, 5000, 240.0, "STOP"), part("t", 1, 0, 0.0, "OK")])
    r = lag_rules.lag(d, T0, P("lag"))
    assert r.finding is not None and r.finding.severity == "critical"
    assert [p["partition"] for p in r.finding.evidence["partitions"]] == [0]
    warn = doc("w", lag=[part("t", 0, 800, 90.0, "WARN")])
    rw = lag_rules.lag(warn, T0, P("lag"))
    assert rw.finding is not None and rw.finding.severity == "warning"
    # below the seconds threshold (match: all): nothing
    assert lag_rules.lag(doc("w", lag=[part("t", 0, 800, 30.0, "WARN")]), T0, P("lag")).finding is None
    # match any: the offsets alone are enough
    assert (
        lag_rules.lag(doc("w", lag=[part("t", 0, 800, 30.0, "WARN")]), T0, P("lag", match="any")).finding
        is not None
    )
    # status OK never alerts, however big the numbers
    assert lag_rules.lag(doc("ok", lag=[part("t", 0, 10**6, 10**5, "OK")]), T0, P("lag")).finding is None


@pytest.mark.parametrize(
    "rows",
    [
        [part("idle", p, 0, 0.0, "OK") for p in range(4)],  # idle topic, consumed to the end
        [part("done", p, 0, 0.0, "STOP") for p in range(4)],  # consumer stopped but nothing to read
        [part("tx", p, 1, 3600.0, "STALL") for p in range(4)],  # transaction marker: constant lag of 1
        [part("tx", p, 1, 3600.0, "ERR") for p in range(4)],
        [part("restart", 0, 300, 8.0, "STOP")],  # consumer restarting: lag for a few seconds
    ],
)
def test_lag_false_alarms_do_not_alert(rows: list[dict]) -> None:
    d = doc("quiet", lag=rows)
    assert lag_rules.lag(d, T0, P("lag")).finding is None
    assert lag_rules.lag_retention(d, T0, P("lag_retention")).finding is None
    assert rules_fired(d, T0) == set()


def test_lag_without_status_uses_thresholds_only() -> None:
    row = part("t", 0, 5000, 600.0, status=None)  # lag from a lag history point has no status
    assert lag_rules.lag(doc("x", lag=[row]), T0, P("lag")).finding is not None


def test_lag_evidence_is_the_documents_rows() -> None:
    row = part("t", 0, 5000, 600.0, "ERR")
    r = lag_rules.lag(doc("x", lag=[row]), T0, P("lag"))
    assert r.finding is not None and r.finding.evidence["partitions"] == [row]


def test_a_value_that_is_not_a_document_is_refused_not_guessed() -> None:
    cfg = parse_alert_config(None)
    for bad in ({"lag": [{"topic": "t", "partition": 0, "lag": 50}]}, [], {"group": "x", "members": [{}]}):
        with pytest.raises(DocumentError):
            evaluate_group(bad, T0, cfg)
    # a document without lag (no lag source yet) has nothing to say about lag
    assert lag_rules.lag({"group": "x"}, T0, P("lag")).finding is None


def test_lag_close_to_retention() -> None:
    hour = 3600 * 1000
    rows = [part("short", 0, 9000, 0.85 * hour / 1000, "WARN")]
    r = lag_rules.lag_retention(doc("r", lag=rows), T0, P("lag_retention", topics={"short": hour}))
    assert r.finding is not None and r.finding.evidence["partitions"][0]["retention_ms"] == hour
    assert r.finding.evidence["partitions"][0]["fraction_of_retention"] == pytest.approx(0.85)
    # the default retention (7 days) is far away
    assert lag_rules.lag_retention(doc("r", lag=rows), T0, P("lag_retention")).finding is None
    half = doc("r", lag=[part("short", 0, 9000, 0.5 * hour / 1000, "WARN")])
    assert lag_rules.lag_retention(half, T0, P("lag_retention", topics={"short": hour})).finding is None
    assert lag_rules.lag_retention(half, T0, P("lag_retention", topics={"short": hour // 2})).finding


# --- configuration ----------------------------------------------------------------------------------


def test_overrides_by_name_and_regex_allow_and_deny() -> None:
    cfg = parse_alert_config(
        {
            "alerts": {
                "rules": {"rebalance_storm": {"count": 8}, "lag": {"deny": ["re:^batch-"]}},
                "groups": {"deny": ["re:^console-consumer-"]},
                "overrides": [
                    {"group": "payments", "rules": {"rebalance_storm": {"count": 3}}},
                    {
                        "group": ["re:^etl-", "special"],
                        "rules": {"group_empty": False, "lag": {"min_seconds": 5}},
                    },
                ],
            }
        }
    )
    assert cfg.rules_for("orders")["rebalance_storm"]["count"] == 8
    assert cfg.rules_for("payments")["rebalance_storm"]["count"] == 3
    assert "group_empty" not in cfg.rules_for("etl-daily")
    assert cfg.rules_for("etl-daily")["lag"]["min_seconds"] == 5
    assert cfg.rules_for("special")["lag"]["min_offsets"] == DEFAULT_RULES["lag"]["min_offsets"]
    assert "lag" not in cfg.rules_for("batch-nightly") and "rebalance_storm" in cfg.rules_for("batch-nightly")
    assert cfg.rules_for("console-consumer-123") == {}
    allow_only = parse_alert_config({"groups": {"allow": ["re:^prod-"]}})
    assert allow_only.rules_for("dev-x") == {} and allow_only.rules_for("prod-x")


@pytest.mark.parametrize(
    "bad, words",
    [
        ({"rules": {"storm": {}}}, "unknown rule 'storm'"),
        ({"rules": {"lag": {"min_lag": 3}}}, "unknown parameter 'min_lag'"),
        ({"rules": {"lag": {"min_offsets": "ten"}}}, "must be a number"),
        ({"rules": {"lag": {"severity": "panic"}}}, "severity"),
        ({"overrides": [{"rules": {}}]}, "'group'"),
        ({"groups": {"allow": ["re:("]}}, "bad regular expression"),
        ({"notifiers": [{"type": "pager"}]}, "webhook, slack, email or alertmanager"),
        ({"notifiers": [{"type": "webhook"}]}, "needs a url"),
        ({"colour": 1}, "unknown key"),
        ({"notify": {"retry": 3}}, "notify: unknown key"),
        ({"notify": {"retries": -1}}, "non-negative"),
    ],
)
def test_bad_config_is_refused_with_a_clear_message(bad: dict, words: str) -> None:
    with pytest.raises(AlertConfigError, match=words.replace("(", r"\(")):
        parse_alert_config(bad)


# --- properties ------------------------------------------------------------------------------------

CAUSES = ["group_created", "member_joined", "member_left", "session_timeout", "poll_timeout", "unknown"]
STATES = ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Reconciling"]


@st.composite
def random_docs(draw):
    clients = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=0, max_size=3))
    t = T0
    gens = []
    for n in range(draw(st.integers(0, 25))):
        t += draw(st.integers(0, 120)) * S
        gens.append(
            gen(
                n + 1,
                t,
                draw(st.sampled_from(CAUSES)),
                [mid(c) for c in draw(st.lists(st.sampled_from(clients or ["z"]), max_size=2))],
                [mid(c) for c in draw(st.lists(st.sampled_from(clients or ["z"]), max_size=2))],
                members=draw(st.none() | st.integers(0, 5)),
            )
        )
    tl, t2 = [], T0
    for _ in range(draw(st.integers(0, 8))):
        d = draw(st.integers(1, 600)) * S
        tl.append((draw(st.sampled_from(STATES)), t2, t2 + d))
        t2 += d
    if tl and draw(st.booleans()):
        tl[-1] = (tl[-1][0], tl[-1][1], None)
    lag = [
        part(
            "t",
            p,
            draw(st.integers(0, 10**6)),
            draw(st.floats(0, 10**6)),
            draw(st.sampled_from(["OK", "WARN", "ERR", "STOP", "STALL", "REWIND"])),
        )
        for p in range(draw(st.integers(0, 4)))
    ]
    return doc("g", gens, tl, lag), max(t, t2)


@settings(max_examples=150, deadline=None)
@given(random_docs(), st.integers(0, 40 * 60))
def test_rules_never_raise_and_findings_are_sane(docnow, offset_s) -> None:
    d, _end = docnow
    now = T0 + offset_s * S
    ev = evaluate_group(d, now, parse_alert_config(None))
    for f in ev.findings:
        assert f.since <= now
        assert f.group == "g"
        assert f.rule in DEFAULT_RULES
    assert ev.recheck_at is None or ev.recheck_at > now
    # pure: the same input gives the same answer
    assert [f.rule for f in evaluate_group(d, now, parse_alert_config(None)).findings] == [
        f.rule for f in ev.findings
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=20))
def test_lag_of_one_never_alerts_whatever_the_status(seconds) -> None:
    rows = [
        part("tx", i, 1, float(s), st_)
        for i, s in enumerate(seconds)
        for st_ in ["WARN", "ERR", "STOP", "STALL"]
    ]
    assert rules_fired(doc("tx", lag=rows), T0) == set()


# --- streams_not_ready ---------------------------------------------------------------------------
def _streams_doc(spans: list[tuple[str, int, int | None]]) -> GroupDocument:
    return GroupDocument(
        group="app",
        type="streams",
        state=spans[-1][0],
        timeline=[TimelineSpan(state, start, end) for state, start, end in spans],
    )


def test_a_streams_group_notready_past_for_s_alerts_and_not_before() -> None:
    p = dict(DEFAULT_RULES["streams_not_ready"])
    doc = _streams_doc([("Empty", T0, T0 + 5 * S), ("NotReady", T0 + 5 * S, None)])
    early = RULES["streams_not_ready"](doc, T0 + 30 * S, p)
    assert early.finding is None and early.recheck_at == T0 + 5 * S + 60 * S
    late = RULES["streams_not_ready"](doc, T0 + 70 * S, p)
    assert late.finding is not None and late.finding.since == T0 + 65 * S
    assert late.finding.evidence["not_ready_since"] == T0 + 5 * S
    assert "NotReady for 65 s" in late.finding.summary


def test_a_streams_group_ready_again_does_not_alert() -> None:
    p = dict(DEFAULT_RULES["streams_not_ready"])
    doc = _streams_doc([("NotReady", T0, T0 + 90 * S), ("Stable", T0 + 90 * S, None)])
    assert RULES["streams_not_ready"](doc, T0 + 200 * S, p).finding is None
    # while it was NotReady, past for_s, it did
    assert RULES["streams_not_ready"](doc, T0 + 80 * S, p).finding is not None


# --- member_not_converging ----------------------------------------------------------------------
def _epochs_doc(kind: str, target: int, member_epochs: dict[str, int]) -> GroupDocument:
    """A KIP-848 (or streams, share) group at target assignment epoch `target`, its epochs 1-`target`
    begun 10 s apart from T0, and its members at the epochs given."""
    from coordinator_model.document.types import GenerationDoc

    return GroupDocument(
        group="g848",
        type=kind,
        state="Reconciling",
        group_epoch=target,
        assignment_epoch=target,
        members=[MemberDoc(m, modern=True, member_epoch=e) for m, e in member_epochs.items()],
        generations=[GenerationDoc(n, T0 + (n - 1) * 10 * S) for n in range(1, target + 1)],
    )


def test_a_member_behind_the_target_epoch_past_for_s_alerts_and_not_before() -> None:
    p = dict(DEFAULT_RULES["member_not_converging"])
    # "a" converged; "b" is still at epoch 2 of 4: behind since epoch 3 began (T0 + 20 s)
    doc = _epochs_doc("consumer", 4, {"a": 4, "b": 2})
    early = RULES["member_not_converging"](doc, T0 + 50 * S, p)
    assert early.finding is None and early.recheck_at == T0 + 20 * S + 60 * S
    late = RULES["member_not_converging"](doc, T0 + 100 * S, p)
    assert late.finding is not None and late.finding.since == T0 + 80 * S
    behind = [{"member_id": "b", "member_epoch": 2, "behind_since": T0 + 20 * S}]
    assert late.finding.evidence["members"] == behind
    assert "1 member(s) behind the target assignment (epoch 4) for 80 s" in late.finding.summary
    # a streams group's members reconcile towards their target tasks the same way
    assert RULES["member_not_converging"](_epochs_doc("streams", 4, {"a": 2}), T0 + 100 * S, p).finding


def test_members_at_the_target_epoch_or_of_other_kinds_never_alert() -> None:
    p = dict(DEFAULT_RULES["member_not_converging"])
    late = T0 + 3600 * S
    rule = RULES["member_not_converging"]
    assert rule(_epochs_doc("consumer", 4, {"a": 4, "b": 4}), late, p).finding is None
    # a share group's members take their partitions at once; a classic group has no member epochs
    assert rule(_epochs_doc("share", 4, {"a": 1}), late, p).finding is None
    assert rule(_epochs_doc("classic", 4, {"a": 1}), late, p).finding is None
    # judged as of a moment before the epoch it lags began, it was not behind yet
    doc = _epochs_doc("consumer", 4, {"a": 3})
    assert group_state_rules.members_behind(doc, T0 + 25 * S) == []
    assert group_state_rules.members_behind(doc, T0 + 35 * S) == [("a", 3, T0 + 30 * S)]
