"""The what-if page's link to the what-if engine (coordinator_model.whatif): group document + form
request in, one normalised result per assignor out, so the page renders the same whatever the engine's
JSON looks like in detail."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dashboard import group_doc as gd
from dashboard.whatif_form import WhatIfRequest, partition_counts

CLIENT_ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky"]
SERVER_ASSIGNORS = ["uniform", "server-range"]

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


def _engine() -> Any | None:
    try:
        return importlib.import_module("coordinator_model.whatif")
    except ImportError:
        return None


def assignor_options() -> list[dict[str, str]]:
    names = list(CLIENT_ASSIGNORS)
    eng = _engine()
    known = getattr(eng, "ASSIGNORS", None) if eng else None
    if known:
        names = list(known)
    return [{"label": n, "value": n} for n in names]


def default_assignors(doc: Mapping[str, Any]) -> list[str]:
    """The group's current assignor plus the one most often considered instead."""
    options = [o["value"] for o in assignor_options()]
    current = doc.get("protocol")
    if gd.is_kip848(doc) and current == "range" and "server-range" in options:
        current = "server-range"
    picks = [current] if current in options else []
    for alt in ("cooperative-sticky", "range"):
        if alt in options and alt not in picks:
            picks.append(alt)
            break
    return picks


def whatif_input(doc: Mapping[str, Any], req: WhatIfRequest) -> dict[str, Any]:
    """The `groupscope whatif FILE` document for this group and request (docs/assign-format.md)."""
    members = []
    for m in gd.members(doc):
        topics = m.subscription or sorted({t for t, _ in m.assignment})
        members.append(
            {
                "member_id": m.member_id,
                "topics": topics,
                "owned": [list(tp) for tp in m.assignment],
                "generation": doc.get("generation"),
                "group_instance_id": m.group_instance_id,
            }
        )
    counts = partition_counts(doc)
    for m in members:
        for t in m["topics"]:
            counts.setdefault(t, 0)
    lag: dict[str, list[int]] = {t: [0] * n for t, n in counts.items()}
    for r in gd.partition_lag(doc):
        if r.topic in lag and r.partition < len(lag[r.topic]):
            lag[r.topic][r.partition] = r.lag or 0
    changes: list[dict[str, Any]] = []
    if req.add_members:
        changes.append({"type": "add_members", "count": req.add_members})
    for mid in req.remove_members:
        changes.append({"type": "remove_member", "member_id": mid})
    for t, n in req.partitions.items():
        changes.append({"type": "set_partitions", "topic": t, "count": n})
    for mid, topics in req.subscriptions.items():
        changes.append({"type": "subscription", "member_id": mid, "topics": topics})
    if req.session_timeout_ms is not None:
        changes.append({"type": "session_timeout_ms", "value": req.session_timeout_ms})
    if req.max_poll_interval_ms is not None:
        changes.append({"type": "max_poll_interval_ms", "value": req.max_poll_interval_ms})
    return {
        "members": members,
        "partitions": counts,
        "lag": lag,
        "changes": changes,
        "assignors": list(req.assignors),
        "generations": doc.get("generations") or [],
    }


def run(doc: Mapping[str, Any], req: WhatIfRequest, progress: Progress) -> WhatIfOutcome:
    eng = _engine()
    if eng is None:
        return WhatIfOutcome(
            error="The what-if engine (coordinator_model.whatif) is not installed in this build."
        )
    return run_engine(eng, doc, req, progress)


def run_engine(eng: Any, doc: Mapping[str, Any], req: WhatIfRequest, progress: Progress) -> WhatIfOutcome:
    raise NotImplementedError  # filled in when the engine's API is known
