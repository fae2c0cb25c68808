"""The what-if page's link to the what-if engine (coordinator_model.whatif): group document + form
request in, one normalised result per assignor out, so the page renders the same whatever the engine's
report looks like in detail."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator_model import whatif
from coordinator_model.assignors import AssignorError
from coordinator_model.document.types import GroupDocument
from dashboard.whatif_form import WhatIfRequest

Progress = Callable[[int, int], None]


@dataclass
class MemberStat:
    member: str
    partitions: int
    lag: int


@dataclass
class AssignorResult:
    assignor: str
    assignment: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    members: list[MemberStat] = field(default_factory=list)
    moves: list[tuple[tuple[str, int], str | None, str | None]] = field(default_factory=list)
    losing: list[str] = field(default_factory=list)
    cost: str = ""
    error: str | None = None

    @property
    def min_partitions(self) -> int:
        return min((m.partitions for m in self.members), default=0)

    @property
    def max_partitions(self) -> int:
        return max((m.partitions for m in self.members), default=0)

    @property
    def min_lag(self) -> int:
        return min((m.lag for m in self.members), default=0)

    @property
    def max_lag(self) -> int:
        return max((m.lag for m in self.members), default=0)


@dataclass
class WhatIfOutcome:
    results: list[AssignorResult] = field(default_factory=list)
    avoided: str | None = None
    error: str | None = None


def assignor_options() -> list[dict[str, str]]:
    return [{"label": n, "value": n} for n in whatif.ASSIGNORS]


def default_assignors(doc: GroupDocument) -> list[str]:
    """The group's current assignor plus the one most often considered instead."""
    options = [o["value"] for o in assignor_options()]
    current = doc.protocol
    if doc.modern and current == "range" and "server-range" in options:
        current = "server-range"
    picks = [current] if current in options else []
    for alt in ("cooperative-sticky", "range"):
        if alt in options and alt not in picks:
            picks.append(alt)
            break
    return picks


def whatif_input(doc: GroupDocument, req: WhatIfRequest, assignors: list[str]) -> dict[str, Any]:
    """The `groupscope whatif` input (docs/assign-format.md) for this group, request and assignors."""
    data = whatif.whatif_input_from_group_document(doc.to_json())
    changes: list[dict[str, Any]] = []
    if req.remove_members:
        changes.append({"kind": "remove_members", "member_ids": list(req.remove_members)})
    if req.add_members:
        changes.append({"kind": "add_members", "count": req.add_members})
    for mid, topics in req.subscriptions.items():
        changes.append({"kind": "change_subscription", "member_id": mid, "topics": topics})
    for t, n in req.partitions.items():
        changes.append({"kind": "add_partitions", "topic": t, "total": n})
    if req.session_timeout_ms is not None:
        changes.append({"kind": "set_session_timeout", "ms": req.session_timeout_ms})
    if req.max_poll_interval_ms is not None:
        changes.append({"kind": "set_max_poll_interval", "ms": req.max_poll_interval_ms})
    data["changes"] = changes
    data["assignors"] = assignors
    return data


def _cost_text(cost: Mapping[str, Any]) -> str:
    if not cost:
        return "-"
    parts = [
        f"{cost.get('protocol', '?')} protocol",
        f"{cost.get('rebalances', 1)} rebalance(s)",
        f"{cost.get('partitions_revoked', 0)} partitions revoked",
        f"{cost.get('partitions_paused', 0)} paused ({int(cost.get('lag_paused', 0)):,} lag behind them)",
    ]
    if cost.get("withheld_in_first_rebalance"):
        parts.append(f"{cost['withheld_in_first_rebalance']} withheld until the second rebalance")
    return ", ".join(parts)


def normalise(name: str, rep: Mapping[str, Any]) -> AssignorResult:
    counts = (rep.get("partitions_per_member") or {}).get("per_member") or {}
    lags = (rep.get("lag_per_member") or {}).get("per_member") or {}
    assignment = {
        m: [(str(tp[0]), int(tp[1])) for tp in tps] for m, tps in (rep.get("assignment") or {}).items()
    }
    moves = [
        ((str(mv["topic"]), int(mv["partition"])), mv.get("from"), mv.get("to"))
        for mv in (rep.get("moves") or {}).get("partitions") or []
    ]
    return AssignorResult(
        assignor=name,
        assignment=assignment,
        members=[MemberStat(m, int(counts.get(m, 0)), int(lags.get(m, 0))) for m in assignment],
        moves=moves,
        losing=sorted((rep.get("members_losing_partitions") or {}).keys()),
        cost=_cost_text(rep.get("rebalance_cost") or {}),
    )


def timeouts_text(t: Mapping[str, Any] | None) -> str | None:
    if not t or not t.get("changed"):
        return None
    s = t.get("session_timeout") or {}
    p = t.get("poll_timeout") or {}
    return (
        f"Of {t.get('recorded_rebalances', 0)} recorded rebalances, the new timeouts would have avoided "
        f"{t.get('avoided_total', 0)}: session timeouts {s.get('avoided', 0)} of {s.get('recorded', 0)} "
        f"(session.timeout.ms {s.get('timeout_ms_before')} -> {s.get('timeout_ms_after')}, longest gap seen "
        f"{s.get('max_gap_ms') if s.get('max_gap_ms') is not None else 'unknown'} ms), poll timeouts "
        f"{p.get('avoided', 0)} of {p.get('recorded', 0)} "
        f"(max.poll.interval.ms {p.get('timeout_ms_before')} -> {p.get('timeout_ms_after')})."
        + (
            f" {s.get('gap_unknown', 0) + p.get('gap_unknown', 0)} expiries had no recorded gap."
            if (s.get("gap_unknown") or p.get("gap_unknown"))
            else ""
        )
    )


def run(doc: GroupDocument, req: WhatIfRequest, progress: Progress) -> WhatIfOutcome:
    """Run the engine once per assignor (so the progress bar moves), in the order the user picked."""
    out = WhatIfOutcome()
    total = len(req.assignors)
    progress(0, total)
    for i, name in enumerate(req.assignors):
        try:
            rep = whatif.run_whatif(whatif_input(doc, req, [name]))
        except AssignorError as e:
            return WhatIfOutcome(error=f"The what-if engine rejected the request: {e}")
        if i == 0:
            out.avoided = timeouts_text(rep.get("timeouts"))
        for got_name, r in (rep.get("assignors") or {}).items():
            out.results.append(normalise(got_name, r))
        progress(i + 1, total)
    return out
