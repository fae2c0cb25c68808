"""The what-if engine: take a group as the coordinator model sees it, apply changes (members joining
or leaving, subscriptions, partitions, assignor, timeouts) and report, per assignor, who gets what,
how balanced it is in partitions and lag, what moves and what the rebalance costs, and which recorded
timeout rebalances the new timeouts would have avoided. Pure computation: no I/O."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator_model.assignors import ASSIGNORS, GroupSpec, assign
from coordinator_model.whatif.adapter import whatif_input_from_group_document
from coordinator_model.whatif.changes import State, apply_change
from coordinator_model.whatif.report import assignor_report, owners_of, spread_stats, timeout_report
from coordinator_model.whatif.scenario import Scenario, parse_scenario


def current_assignment(scenario: Scenario) -> tuple[dict[tuple[str, int], str], str]:
    """The assignment the group has now: the members' owned partitions, or, when nobody reports any,
    what the group's current assignor gives the group as it is."""
    owned = {tp: m.member_id for m in scenario.group.members for tp in m.owned}
    if owned:
        return owned, "owned"
    computed = assign(scenario.assignor, scenario.group)
    return owners_of(computed), f"computed with {scenario.assignor}"


def run_whatif(doc: Any) -> dict[str, Any]:
    scenario = parse_scenario(doc)
    current, source = current_assignment(scenario)
    before = scenario.group
    if source != "owned":
        # members own what they have now, so the sticky assignors can stay close to it
        by_member: dict[str, list[tuple[str, int]]] = {}
        for tp, m in current.items():
            by_member.setdefault(m, []).append(tp)
        before = GroupSpec(
            tuple(replace(m, owned=tuple(by_member.get(m.member_id, ()))) for m in before.members),
            before.partitions,
        )
    state = State(group=before, assignor=scenario.assignor, timeouts=scenario.timeouts.copy())
    applied = [apply_change(state, c) for c in scenario.changes]
    after = state.group
    names = list(dict.fromkeys(scenario.assignors or [state.assignor]))
    if state.assignor != scenario.assignor and state.assignor not in names:
        names.append(state.assignor)

    before_counts = {m.member_id: 0 for m in before.members}
    before_lag = {m.member_id: 0.0 for m in before.members}
    for tp, m in current.items():
        if m in before_counts:
            before_counts[m] += 1
            before_lag[m] += scenario.lag.get(tp, 0)
    results = {}
    for name in names:
        first = assign(name, after)
        results[name] = assignor_report(name, after, first, current, scenario.lag)
    return {
        "before": {
            "assignor": scenario.assignor,
            "assignment_source": source,
            "members": len(before.members),
            "partitions": sum(before.partitions.get(t, 0) for t in before.subscribed_topics()),
            "partitions_per_member": spread_stats(before_counts),
            "lag_per_member": spread_stats(before_lag),
        },
        "changes": applied,
        "after": {
            "assignor": state.assignor,
            "members": [m.member_id for m in after.members],
            "partitions": dict(after.partitions),
            "total_lag": sum(scenario.lag.get(tp, 0) for tp in after.all_partitions()),
        },
        "assignors": results,
        "timeouts": timeout_report(
            scenario.rebalances, scenario.timeouts, state.timeouts, state.timeouts_changed
        ),
    }


__all__ = ["ASSIGNORS", "run_whatif", "whatif_input_from_group_document"]
