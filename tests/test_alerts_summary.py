"""The summaries the sink writes beside each document (collectors/storage/summaries.py) give exactly what
the documents give: the same findings and recheck times from the rules (a hypothesis property over
odd documents, configurations and moments, and the real captures replayed through Redis), the same
alerts from the evaluator, the same quiet-group shortcut, and the same Prometheus series."""

from __future__ import annotations

import copy
import json
import threading
import time
import urllib.request
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from conftest import capture_dirs
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry
from test_alert_docs import MIN, T0, S, mid, part, steady_doc, storm_doc, wordcount_doc

from collectors.alerts.evaluate import Evaluator
from collectors.alerts.summary_rules import PackedEvaluator, summaries_usable
from collectors.capture import read_capture
from collectors.exporter.scrape import MetricsSource
from collectors.exporter.server import make_registry, make_wsgi_app
from collectors.storage.alerts import AlertStore
from collectors.storage.fleet_rows import history_digest
from collectors.storage.metric_lines import metric_lines, metric_values
from collectors.storage.redis_store import RedisStore
from collectors.storage.store_keys import SUMMARY_KEYS
from collectors.storage.summaries import decode_facts, summarize
from coordinator_model.alert_rules import AlertConfig, evaluate_group, parse_alert_config
from coordinator_model.document.types import (
    GenerationDoc,
    GroupDocument,
    LagDoc,
    MemberDoc,
    PartitionLag,
    TimelineSpan,
)
from coordinator_model.rebuild import rebuild
from coordinator_model.statuses import STATUSES as GROUP_STATUSES
from coordinator_model.statuses import group_statuses
from coordinator_model.streams.tasks import task_lags

# --- documents, configurations and moments ---------------------------------------------------------

CAUSES = ["group_created", "member_joined", "member_left", "session_timeout", "poll_timeout", "leader_rejoin"]
STATES = [
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Reconciling",
    "Assigning",
    "NotReady",
]
STATUSES = [None, "OK", "WARN", "ERR", "STOP", "STALL", "REWIND", "NO_COMMIT"]
CLIENTS = ["a", "b", "c"]

times = st.integers(-5, 200).map(lambda s: T0 + s * S)
# durations as the model writes them, and integers orjson reads exactly (to 2**64 - 1) or not at all
DURATIONS = [None, 200, 1500, None, 200, 1500, None, 2**64 - 1, 2**70, -(2**63) - 1]
maybe_time = st.none() | times


@st.composite
def members(draw) -> list[MemberDoc]:
    out = []
    for c in draw(st.lists(st.sampled_from(CLIENTS), max_size=4, unique=True)):
        instance = draw(st.sampled_from([None, f"inst-{c}"]))
        member_id = f"{c}-{draw(st.sampled_from(['1', '2']))}" if draw(st.booleans()) else mid(instance or c)
        out.append(MemberDoc(member_id, instance, draw(st.sampled_from([None, c]))))
    return out


@st.composite
def member_ref(draw) -> str:
    if draw(st.integers(0, 3)) == 0:
        return mid(draw(st.sampled_from(["z", *CLIENTS, "inst-a"])))  # a classic member id: prefix-uuid4
    return f"{draw(st.sampled_from(CLIENTS))}-{draw(st.sampled_from(['1', '2', '3']))}"


@st.composite
def generation_rows(draw) -> list[GenerationDoc]:
    out = []
    for n in range(draw(st.integers(0, 12))):
        out.append(
            GenerationDoc(
                generation=draw(st.sampled_from([n + 1, None, 3])),
                start=draw(maybe_time),
                end=draw(maybe_time),
                duration_ms=draw(st.sampled_from(DURATIONS)),
                members=[f"m{i}" for i in range(draw(st.integers(0, 3)))],
                members_joined=draw(st.lists(member_ref(), max_size=2)),
                members_left=draw(st.lists(member_ref(), max_size=2)),
                cause=draw(st.sampled_from([*CAUSES, None])),
                reason=draw(st.sampled_from(["Adding member", None])),
                empty=draw(st.booleans()),
            )
        )
    return out


@st.composite
def timeline_rows(draw) -> list[TimelineSpan]:
    rows = []
    t = T0 - 10 * S
    for _ in range(draw(st.integers(0, 7))):
        d = draw(st.integers(0, 90)) * S
        rows.append(TimelineSpan(draw(st.sampled_from(STATES)), t, t + d))
        t += d
    if rows and draw(st.booleans()):
        rows[-1].end = None
    return rows


@st.composite
def partition_rows(draw) -> list[PartitionLag]:
    rows = []
    for p in range(draw(st.integers(0, 6))):
        lag = draw(st.sampled_from([0, 0, 1, 2, 5, 15, 5000, None, -1]))
        committed = draw(st.sampled_from([None, 1000]))
        rows.append(
            PartitionLag(
                topic=draw(st.sampled_from(["t", "u"])),
                partition=p,
                committed=committed,
                has_commit=committed is not None,
                end_offset=None if lag is None else 1000 + lag,
                lag=lag,
                lag_seconds=draw(
                    st.sampled_from([None, 0.0, 0.5, 30.0, 59.9, 60.0, 400.0, 3e5, 7e5, float("inf")])
                ),
                status=draw(st.sampled_from(STATUSES)),
                member_id=draw(st.sampled_from([None, "m-1"])),
            )
        )
    return rows


@st.composite
def documents(draw) -> dict[str, Any]:
    """A document as the engine writes it, with odd values where the engine could write them."""
    doc = GroupDocument(
        group="g",
        type="classic",
        state=draw(st.sampled_from([*STATES, None])),
        generation=draw(st.none() | st.integers(0, 9)),
        members=draw(members()),
        timeline=draw(timeline_rows()),
        generations=draw(generation_rows()),
        lag=LagDoc(partitions=draw(partition_rows())),
    )
    if draw(st.integers(0, 5)) == 0:
        doc.group_epoch = draw(st.integers(0, 9))
    if draw(st.integers(0, 2)) == 0:
        # a group whose members reconcile epoch by epoch (member_not_converging), or a share group
        doc.type = draw(st.sampled_from(["consumer", "streams", "share"]))
        doc.assignment_epoch = draw(st.none() | st.integers(0, 6))
        for m in doc.members:
            m.modern = True
            m.member_epoch = draw(st.none() | st.integers(0, 6))
    return json.loads(json.dumps(doc.to_json()))  # as Redis holds it


def _digest(doc: dict[str, Any]) -> str:
    return history_digest(GroupDocument.from_json(doc))


@st.composite
def configs(draw) -> AlertConfig:
    rules: dict[str, Any] = {}
    if draw(st.booleans()):
        rules["lag"] = {
            "match": draw(st.sampled_from(["all", "any"])),
            "min_seconds": draw(st.sampled_from([0, 30, 60])),
            "min_offsets": draw(st.sampled_from([0, 1, 10])),
            "ignore_lag_at_most": draw(st.sampled_from([0, 1, 3])),
        }
    if draw(st.booleans()):
        rules["lag_retention"] = {
            "fraction": draw(st.sampled_from([0.0, 0.5, 0.8])),
            "ignore_lag_at_most": draw(st.sampled_from([0, 1])),
            "topics": draw(st.sampled_from([{}, {"u": 100_000}])),
        }
    if draw(st.booleans()):
        rules["group_empty"] = {
            "states": draw(st.sampled_from([["Empty", "Dead"], ["Stable"], []])),
            "for_s": draw(st.sampled_from([0, 5, 60])),
            "min_lag": draw(st.sampled_from([0, 1, 100])),
            "resolve_after_s": draw(st.sampled_from([None, 30])),
        }
    if draw(st.booleans()):
        rules["rebalance_storm"] = {
            "count": draw(st.integers(1, 4)),
            "window_s": draw(st.sampled_from([5, 60, 600])),
        }
    if draw(st.booleans()):
        rules["rebalance_stuck"] = {"after_s": draw(st.sampled_from([1, 30]))}
    if draw(st.booleans()):
        rules["streams_not_ready"] = {"for_s": draw(st.sampled_from([0, 1, 30]))}
    if draw(st.booleans()):
        rules["member_not_converging"] = {"for_s": draw(st.sampled_from([0, 1, 60]))}
    if draw(st.booleans()):
        rules["member_flapping"] = {
            "joins": draw(st.integers(2, 3)),
            "window_s": draw(st.sampled_from([30, 600])),
        }
    for name in draw(st.lists(st.sampled_from(sorted(parse_alert_config(None).rules)), max_size=2)):
        rules[name] = False
    data: dict[str, Any] = {"rules": rules}
    if draw(st.booleans()):
        data["overrides"] = [
            {"group": "re:^g", "rules": {"lag": {"min_seconds": 1}, "group_empty": {"states": ["Stable"]}}}
        ]
    return parse_alert_config(data)


ROW = {"state": "Stable", "members": 2, "generation": None, "group_epoch": 4, "lag": 7, "lag_seconds": 1.5}


def _rows(doc: dict[str, Any]) -> list[PartitionLag]:
    return GroupDocument.from_json(doc).lag.partitions


@settings(max_examples=300, deadline=None)
@given(documents())
def test_the_sinks_pass_over_rows_reads_what_the_rules_read(doc) -> None:
    """summarize's single pass over the rows gives the lag facts computed from the document's rows,
    and the metric values the scrape computes from a document."""
    try:
        s = summarize(GroupDocument.from_json(doc), ROW, _digest(doc))
    except TypeError:
        return  # an integer past 64 bits: not summarised
    lagging = [r for r in _rows(doc) if r.lag is None or r.lag > 0]
    secs = [r.lag_seconds for r in lagging if r.lag_seconds is not None and r.lag_seconds == r.lag_seconds]
    facts = decode_facts(s.facts_text())
    assert facts is not None
    assert (facts.lagging, facts.worst_seconds) == (len(lagging), max(secs) if secs else None)
    values, _ = metric_values(ROW, _rows(doc))
    assert s.metrics == metric_lines("g", values)


def _summaries(doc: dict[str, Any], old=None):
    # (no fleet row: the metric values are not what this compares, and fleet_row refuses the odd
    # generation starts the rules' reader tolerates)
    return summarize(GroupDocument.from_json(doc), {}, _digest(doc), old)


def _packed(doc: dict[str, Any], config: AlertConfig, now: int, head: str | None = None, old=None):
    """The evaluation from the summaries, as the evaluator makes it: None sends it to the document
    (as does a document the sink cannot summarise: an integer past 64 bits, see summary._checked)."""
    try:
        s = _summaries(doc, old)
        text = s.facts_text()
    except TypeError:
        event("not summarised (an integer past 64 bits)")
        return None
    facts = decode_facts(text)  # as the evaluator reads them back
    assert facts is not None
    return PackedEvaluator(config).evaluate("g", facts, head or s.head, now)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), configs(), st.integers(-20, 900).map(lambda s: T0 + s * S))
def test_the_summaries_give_what_the_document_gives(doc, config, now) -> None:
    """Judged from the summaries (or sent to the document, which is then what is judged), a group
    gets exactly the findings and recheck time evaluate_group gives its document."""
    assert summaries_usable(config)
    packed = _packed(doc, config, now)
    event("from the summaries" if packed is not None else "sent to the document")
    if packed is not None:
        assert packed == evaluate_group(doc, now, config)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data(), configs(), st.integers(-20, 900).map(lambda s: T0 + s * S))
def test_a_lag_refresh_keeps_the_head_and_the_quiet_check_holds(doc, data, config, now) -> None:
    """A second document of the same group with other lag: the sink keeps the stored head (same key),
    and the evaluation from it is the document's. When the evaluator would skip the second document
    as quiet (same key, no alert on the first), its verdict is indeed the first's."""
    try:
        first = _summaries(doc)
        first.facts_text()
    except TypeError:
        return  # not summarised: read whole (test_the_summaries_give_what_the_document_gives)
    again = copy.deepcopy(doc)
    again["lag"] = json.loads(json.dumps(LagDoc(partitions=data.draw(partition_rows())).to_json()))
    second = _summaries(again, first.facts)
    assert second.head is None and second.facts.key == first.facts.key
    expected = evaluate_group(again, now, config)
    packed = _packed(again, config, now, head=first.head, old=first.facts)
    assert packed is None or packed == expected
    before = evaluate_group(doc, now, config)
    ev = Evaluator.__new__(Evaluator)  # only the quiet check, no Redis
    ev.packed = PackedEvaluator(config)
    if not before.findings and ev._facts_quiet(second.facts, now):
        assert not expected.findings and expected.recheck_at == before.recheck_at


@pytest.mark.servers
def test_a_negative_ignore_lag_at_most_reads_documents(redis_client) -> None:
    """Rows with lag 0 are left out of the rule input: a configuration that could count them (built
    in code: parse_alert_config refuses it) makes the evaluator read documents."""
    config = parse_alert_config(None)
    config.rules["lag"]["ignore_lag_at_most"] = -1
    assert not summaries_usable(config)
    assert not Evaluator(redis_client, config).use_summaries


# --- through Redis: the evaluator -------------------------------------------------------------------

MIN_STEP = 4 * S


def _replay_both(redis_client, evidence, steps: list[int], *, partial: bool = False) -> int:
    """Write the model's documents as of each step under two prefixes, the way the sink does, and run a
    live cycle on each: `gs` judged from the summaries, `docs` from the documents (the path before
    summaries). With `partial`, every other group of `gs` is written without summaries (an older
    collector) and is judged from its document there too. Returns the transitions compared."""
    with_summaries, plain = RedisStore(redis_client), RedisStore(redis_client, prefix="docs")
    old_writer = RedisStore(redis_client, summaries=False)
    ev = Evaluator(redis_client, parse_alert_config(None))
    ev_docs = Evaluator(redis_client, parse_alert_config(None), prefix="docs", summaries=False)
    compared = 0
    for at in steps:
        docs = [
            eng.document_json(at)
            for eng in rebuild(evidence, at_ms=max(a for a in steps if a <= at)).values()
        ]
        docs = json.loads(json.dumps(docs))
        if partial:
            with_summaries.write_groups(docs[0::2], at)
            old_writer.write_groups(docs[1::2], at)
        else:
            with_summaries.write_groups(docs, at)
        plain.write_groups(docs, at)
        a, b = ev.run_cycle(now_ms=at), ev_docs.run_cycle(now_ms=at)
        assert [(t.event, t.alert) for t in a.transitions] == [(t.event, t.alert) for t in b.transitions], at
        assert AlertStore(redis_client).active() == AlertStore(redis_client, prefix="docs").active(), at
        compared += len(a.transitions)
    assert AlertStore(redis_client).history(limit=10_000) == AlertStore(redis_client, prefix="docs").history(
        limit=10_000
    )
    return compared


@pytest.mark.servers
@pytest.mark.parametrize("scenario", [d.name for d in capture_dirs()])
def test_captures_give_the_same_alerts_from_summaries_and_documents(redis_client, scenario: str) -> None:
    """Every real capture replayed as the collector would write it, with live cycles (summaries,
    quiet-group shortcut and all) beside cycles on the documents: the same transitions, the same
    alerts with the same evidence, at every step, and ten minutes after the end."""
    from conftest import CAPTURES

    cap = read_capture(CAPTURES / scenario)
    lo, hi = min(e.ts for e in cap.evidence), max(e.ts for e in cap.evidence)
    steps = [*range(lo, hi, MIN_STEP), hi, hi + 2 * MIN, hi + 11 * MIN]
    _replay_both(redis_client, cap.evidence, steps)


@pytest.mark.servers
def test_the_demo_run_gives_the_same_alerts_with_and_without_summaries(redis_client) -> None:
    """The demo's nine groups on a real broker (tests/fixtures/kafka-demo), half of them written by a
    collector without summaries: each group is judged from what it has, and the alerts are those of
    the documents (storms, lost members, and at least one of each)."""
    from conftest import FIXTURES

    cap = read_capture(FIXTURES / "kafka-demo")
    lo = min(e.ts for e in cap.evidence)
    steps = [*range(lo, lo + 100_000 + 1, 5_000), lo + 11 * MIN]
    assert _replay_both(redis_client, cap.evidence, steps, partial=True) >= 8


@pytest.mark.servers
def test_lagging_and_empty_groups_are_judged_from_their_documents(redis_client) -> None:
    """Groups whose lag rules must look at rows (lagging, Empty with messages waiting, lag moving
    under the thresholds) beside quiet ones: the same alerts and evidence either way, over a run of
    refreshes."""
    steps = [T0 + 2 * MIN + i * 20 * S for i in range(8)]
    with_summaries, plain = RedisStore(redis_client), RedisStore(redis_client, prefix="docs")
    ev = Evaluator(redis_client, parse_alert_config(None))
    ev_docs = Evaluator(redis_client, parse_alert_config(None), prefix="docs", summaries=False)
    for k, at in enumerate(steps):
        lagging = [part("orders", 0, 5000 + k * 100, 30.0 + 20 * k, "STOP"), part("orders", 1, 0, 0.0)]
        docs = [
            steady_doc("lagging", t0=T0 - 60 * MIN, lag=lagging),
            steady_doc("creeping", t0=T0 - 60 * MIN, lag=[part("t", 0, 3 + k, 1.0 + k, "OK")]),
            steady_doc("idle", t0=T0 - 60 * MIN, lag=[part("t", 0, 0, 0.0, "OK")]),
            storm_doc("storm", t0=at - 40 * S)[0],
        ]
        empty = steady_doc("stopped", t0=T0 - 60 * MIN, lag=[part("t", 0, 50 * k, 90.0, "STOP")])
        empty["timeline"] += [{"state": "Empty", "start": T0, "end": None}]
        empty["timeline"][-2]["end"] = T0
        empty["state"] = "Empty"
        docs.append(empty)
        with_summaries.write_groups(docs, at)
        plain.write_groups(docs, at)
        a, b = ev.run_cycle(now_ms=at), ev_docs.run_cycle(now_ms=at)
        assert [(t.event, t.alert) for t in a.transitions] == [(t.event, t.alert) for t in b.transitions]
        assert AlertStore(redis_client).active() == AlertStore(redis_client, prefix="docs").active()
    rules = {(x["group"], x["rule"]) for x in AlertStore(redis_client).history(limit=100)}
    assert {("lagging", "lag"), ("stopped", "group_empty"), ("storm", "rebalance_storm")} <= rules


# --- through Redis: the metrics ---------------------------------------------------------------------


def _reference_scrape(client, per_partition: bool) -> bytes:
    """The scrape before summaries (collectors/exporter/scrape.py as it was): every fleet row and every
    document, formatted by prometheus_client. The reference the new scrape must equal."""

    class Reference:
        def describe(self):
            return []

        def collect(self):
            g = GaugeMetricFamily
            data, alerts = RedisStore(client), AlertStore(client)
            groups = g("groupscope_groups", "Consumer groups per state", labels=["state"])
            by_type = g(
                "groupscope_groups_by_type",
                "Groups per type (classic, consumer, share, streams) and state",
                labels=["state", "type"],
            )
            state = g("groupscope_group_state", "1 for the group's current state", labels=["group", "state"])
            members = g("groupscope_group_members", "Members of the group", labels=["group"])
            generation = g(
                "groupscope_group_generation", "Classic generation, or KIP-848 group epoch", labels=["group"]
            )
            rebalances = g("groupscope_group_rebalances_1h", "Rebalances in the last hour", labels=["group"])
            lag = g("groupscope_group_lag_offsets", "Total lag in messages", labels=["group"])
            lag_s = g("groupscope_group_lag_seconds", "Worst partition lag in seconds", labels=["group"])
            tlag = g(
                "groupscope_group_topic_lag_offsets", "Lag in messages per topic", labels=["group", "topic"]
            )
            tlag_s = g(
                "groupscope_group_topic_lag_seconds",
                "Worst lag in seconds per topic",
                labels=["group", "topic"],
            )
            plag = g(
                "groupscope_partition_lag_offsets", "Lag in messages", labels=["group", "topic", "partition"]
            )
            plag_s = g(
                "groupscope_partition_lag_seconds", "Lag in seconds", labels=["group", "topic", "partition"]
            )
            firing = g("groupscope_alert_firing", "1 per firing alert", labels=["group", "rule", "severity"])
            active_rule = g("groupscope_alerts_active", "Firing alerts per rule", labels=["rule"])
            task_lag = g(
                "groupscope_streams_task_lag_offsets",
                "A streams group's lag in messages per active task",
                labels=["group", "task"],
            )
            task_lag_s = g(
                "groupscope_streams_task_lag_seconds",
                "A streams group's worst lag in seconds per active task",
                labels=["group", "task"],
            )
            out = [groups, by_type, state, members, generation, rebalances, lag, lag_s, tlag, tlag_s]
            out += [task_lag, task_lag_s]
            per_state: dict[str, int] = {}
            per_type: dict[tuple[str, str], int] = {}
            names = []
            for raw_name, raw in client.hgetall(data.key_of("fleet")).items():
                name = raw_name.decode()
                row = json.loads(raw)
                names.append(name)
                st_ = str(row.get("state") or "Unknown")
                per_state[st_] = per_state.get(st_, 0) + 1
                kind = (str(row.get("type") or "classic"), st_)
                per_type[kind] = per_type.get(kind, 0) + 1
                state.add_metric([name, st_], 1)
                members.add_metric([name], float(row.get("members") or 0))
                gen = row.get("generation") if row.get("generation") is not None else row.get("group_epoch")
                if gen is not None:
                    generation.add_metric([name], float(gen))
                rebalances.add_metric([name], float(row.get("rebalances_1h") or 0))
                lag.add_metric([name], float(row.get("lag") or 0))
                lag_s.add_metric([name], float(row.get("lag_seconds") or 0))
            for st_, n in sorted(per_state.items()):
                groups.add_metric([st_], n)
            for (ty_, st_), n in sorted(per_type.items()):
                by_type.add_metric([st_, ty_], n)
            # The statuses (storm, flapping, lagging): the alert rules on each document at the scrape.
            in_status = g(
                "groupscope_groups_in_status",
                "Groups in a rebalance storm, flapping or lagging (the alert rules)",
                labels=["status"],
            )
            group_status = g(
                "groupscope_group_status",
                "1 for each status (storm, flapping, lagging) the group is in",
                labels=["group", "status"],
            )
            held = {s_: 0 for s_ in GROUP_STATUSES}
            now = int(time.time() * 1000)
            for name in names:
                raw = client.get(data.group_key(name, "doc"))
                if not raw:
                    continue
                for s_ in group_statuses(json.loads(raw), now, parse_alert_config(None)).names:
                    group_status.add_metric([name, s_], 1)
                    held[s_] += 1
                topics: dict[str, list[float]] = {}
                for p in _rows(json.loads(raw)):
                    t = topics.setdefault(p.topic, [0.0, 0.0])
                    t[0] += p.lag or 0
                    t[1] = max(t[1], p.lag_seconds or 0.0)
                    if per_partition:
                        plag.add_metric([name, p.topic, str(p.partition)], float(p.lag or 0))
                        plag_s.add_metric([name, p.topic, str(p.partition)], float(p.lag_seconds or 0))
                for topic, (off, sec) in sorted(topics.items()):
                    tlag.add_metric([name, topic], off)
                    tlag_s.add_metric([name, topic], sec)
                whole = GroupDocument.from_json(json.loads(raw))
                for t in task_lags(whole) if whole.type == "streams" else ():
                    if t.lag is not None:
                        task_lag.add_metric([name, t.task], t.lag)
                    if t.lag is not None and t.lag_seconds is not None:
                        task_lag_s.add_metric([name, t.task], t.lag_seconds)
            if per_partition:
                out += [plag, plag_s]
            per_rule: dict[str, int] = {}
            for a in alerts.active():
                firing.add_metric([a["group"], a["rule"], a.get("severity", "warning")], 1)
                per_rule[a["rule"]] = per_rule.get(a["rule"], 0) + 1
            for rule, n in sorted(per_rule.items()):
                active_rule.add_metric([rule], n)
            for s_ in GROUP_STATUSES:
                in_status.add_metric([s_], held[s_])
            out += [in_status, group_status, firing, active_rule]
            cycle = alerts.last_cycle()
            if cycle:
                d = g("groupscope_alert_cycle_duration_seconds", "Duration of the last evaluation cycle")
                d.add_metric([], float(cycle.get("duration_s") or 0))
                ts = g(
                    "groupscope_alert_cycle_timestamp_seconds", "Wall-clock time of the last evaluation cycle"
                )
                ts.add_metric([], float(cycle.get("wall_ms") or 0) / 1000.0)
                ev = g(
                    "groupscope_alert_cycle_groups_evaluated", "Groups judged in the last evaluation cycle"
                )
                ev.add_metric([], float(cycle.get("evaluated") or 0))
                out += [d, ts, ev]
            errors = g("groupscope_scrape_errors", "1 when Redis could not be read for this scrape")
            errors.add_metric([], 0)
            return [*out, errors]

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Reference())
    return generate_latest(registry)


def _series(text: bytes | str) -> dict[tuple[str, tuple], float]:
    """Every sample by (name, labels), with each family's help and type: what Prometheus stores."""
    text = text.decode() if isinstance(text, bytes) else text
    out: dict[tuple[str, tuple], float] = {}
    for fam in text_string_to_metric_families(text):
        out[(f"{fam.name} {fam.type} {fam.documentation}", ())] = 0.0
        for s_ in fam.samples:
            key = (s_.name, tuple(sorted(s_.labels.items())))
            assert key not in out, key
            out[key] = s_.value
    return out


def _with_cluster(series: dict[tuple[str, tuple], float], cluster: str) -> dict[tuple[str, tuple], float]:
    return {
        (name, labels if not labels and " " in name else tuple(sorted([*labels, ("cluster", cluster)]))): v
        for (name, labels), v in series.items()
    }


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _http(app, gzip_ok: bool) -> bytes:
    import gzip

    httpd = make_server("127.0.0.1", 0, app, handler_class=_Quiet)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        req = urllib.request.Request(
            f"http://127.0.0.1:{httpd.server_port}/metrics",
            headers={"Accept-Encoding": "gzip"} if gzip_ok else {},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = resp.read()
            assert resp.headers.get("Content-Type", "").startswith("text/plain")
            if gzip_ok:
                assert resp.headers.get("Content-Encoding") == "gzip"
                body = gzip.decompress(body)
    finally:
        httpd.shutdown()
        httpd.server_close()
    return body


def _fill_metrics_fleet(redis_client, mixed: bool = True) -> None:
    """The captures' groups at their end, groups with names and topics that need escaping, and
    alerts on some; with `mixed`, a third of the groups written by a collector without summaries."""
    docs = []
    for d in capture_dirs():
        cap = read_capture(d)
        docs += [eng.document_json() for eng in rebuild(cap.evidence).values()]
    odd = steady_doc('we"ird\\name\nx', lag=[part('t"q', 0, 40, 2.5, "OK"), part("t\\b", 3, 7, 0.5)])
    lagging = steady_doc("lagging", lag=[part("orders", 0, 5000, 300.0, "STOP"), part("orders", 1, 0, 0.0)])
    storm, end = storm_doc("storm")
    streams = [wordcount_doc(f"wordcount-{i}").to_json() for i in range(3)]  # summarised or not
    docs = json.loads(json.dumps([*docs, odd, lagging, storm, *streams]))
    RedisStore(redis_client).write_groups(docs[0::3] + docs[1::3], end)
    RedisStore(redis_client, summaries=not mixed).write_groups(docs[2::3], end)
    Evaluator(redis_client, parse_alert_config(None)).run_cycle(now_ms=end)


@pytest.mark.servers
@pytest.mark.parametrize("per_partition", [False, True])
@pytest.mark.parametrize("mixed", [False, True], ids=["all summarised", "a third not summarised"])
def test_metrics_series_equal_the_scrape_before_summaries(
    redis_client, redis_server, per_partition, mixed
) -> None:
    """The same series, labels and values (and help and type) from: the old scrape (reference), the
    text the WSGI app serves (plain and gzip), the text from documents only, and the registry."""
    _fill_metrics_fleet(redis_client, mixed)
    # the reference predates clusters: its series are the cluster `default`'s
    want = _with_cluster(_series(_reference_scrape(redis_client, per_partition)), "default")
    assert any(k[0] == "groupscope_alert_firing" for k in want)
    assert any(k[0] == "groupscope_group_topic_lag_offsets" for k in want)
    assert _series(MetricsSource(redis_client, per_partition=per_partition).render()) == want
    docs_only = MetricsSource(redis_client, per_partition=per_partition, summaries=False)
    assert _series(docs_only.render()) == want
    assert _series(generate_latest(make_registry(redis_server.url, per_partition=per_partition))) == want
    app = make_wsgi_app(redis_server.url, per_partition=per_partition)
    assert _series(_http(app, gzip_ok=True)) == want
    assert _series(_http(app, gzip_ok=False)) == want


@pytest.mark.servers
def test_metrics_name_selection_and_methods(redis_client, redis_server) -> None:
    """As prometheus_client's app: `name[]` selects families, OPTIONS and other methods answered."""
    _fill_metrics_fleet(redis_client)
    app = make_wsgi_app(redis_server.url)
    calls: list[str] = []

    def call(method: str, query: str = "") -> bytes:
        env = {"REQUEST_METHOD": method, "PATH_INFO": "/metrics", "QUERY_STRING": query}
        return b"".join(app(env, lambda status, headers: calls.append(status)))

    body = call("GET", "name[]=groupscope_groups&name[]=groupscope_scrape_errors")
    assert {k[0].split()[0] for k in _series(body)} == {"groupscope_groups", "groupscope_scrape_errors"}
    assert call("OPTIONS") == b"" and calls[-1] == "200 OK"
    call("POST")
    assert calls[-1].startswith("405")


# --- the store keeps them with the document ------------------------------------------------------


def _summary_fields(client, name: str, prefix: str = "gs") -> dict[str, bytes | None]:
    return {what: client.hget(f"{prefix}:summary:{what}", name) for what in SUMMARY_KEYS}


@pytest.mark.servers
def test_summaries_are_written_with_the_document_and_go_with_the_group(redis_client) -> None:
    store = RedisStore(redis_client, retention_ms=60_000)
    d = steady_doc("g", lag=[part("t", 0, 5, 1.0)])
    store.write_group(d, T0)
    fields = _summary_fields(redis_client, "g")
    assert all(fields.values())
    facts = decode_facts(fields["facts"])
    assert facts is not None and facts.key == summarize(GroupDocument.from_json(d), {}, _digest(d)).facts.key
    # a refresh that moves only lag keeps the head (the key is the same) and rewrites the rest
    redis_client.hset("gs:summary:rules", "g", b"[1,kept]")
    moved = steady_doc("g", lag=[part("t", 0, 9, 2.0)])
    moved["generations"] = d["generations"]
    store.write_group(moved, T0 + 1000)
    assert redis_client.hget("gs:summary:rules", "g") == b"[1,kept]"
    lag_lines = "metrics:groupscope_group_topic_lag_offsets"
    assert _summary_fields(redis_client, "g")[lag_lines] != fields[lag_lines]
    # a new generation rebuilds it
    rebalanced = copy.deepcopy(moved)
    rebalanced["generations"].append({**rebalanced["generations"][0], "generation": 2, "start": T0 + 2000})
    store.write_group(rebalanced, T0 + 2000)
    assert redis_client.hget("gs:summary:rules", "g") != b"[1,kept]"
    # a writer without summaries removes them (readers then read the document)
    RedisStore(redis_client, summaries=False).write_group(rebalanced, T0 + 3000)
    assert _summary_fields(redis_client, "g") == dict.fromkeys(SUMMARY_KEYS)
    store.write_group(rebalanced, T0 + 4000)
    assert all(_summary_fields(redis_client, "g").values())
    # deleted, and trimmed away when Empty past the retention
    store.delete_group("g")
    assert _summary_fields(redis_client, "g") == dict.fromkeys(SUMMARY_KEYS)
    store.write_group(steady_doc("old", lag=[part("t", 0, 5, 1.0)]) | {"state": "Empty"}, T0)
    store.trim(T0 + 10 * MIN)
    assert _summary_fields(redis_client, "old") == dict.fromkeys(SUMMARY_KEYS)
    assert not any(redis_client.hlen(f"gs:summary:{what}") for what in SUMMARY_KEYS)


@pytest.mark.servers
@pytest.mark.parametrize("odd", [{1, 2}, 2**70], ids=["set", "int past 64 bits"])
def test_a_document_the_summaries_cannot_describe_is_read_whole(redis_client, odd) -> None:
    """A value the summaries cannot hold exactly (a set, which the document stores as text; an integer
    orjson would read back as a float) leaves the group without summaries, and the evaluator reads
    its document."""
    store = RedisStore(redis_client)
    d = steady_doc("odd", lag=[part("t", 0, 5000, 300.0, "STOP")])
    d["generations"][0]["duration_ms"] = odd
    store.write_group(d, T0)
    assert _summary_fields(redis_client, "odd") == dict.fromkeys(SUMMARY_KEYS)
    r = Evaluator(redis_client, parse_alert_config(None)).run_cycle(now_ms=T0)
    assert (r.evaluated, r.fired) == (1, 1)
