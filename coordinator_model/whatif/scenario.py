"""The what-if input (docs/assign-format.md), parsed into typed records. A group document becomes
this input through coordinator_model.whatif.whatif_input_from_group_document."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator_model.assignors import AssignorError, GroupSpec, canonical_name
from coordinator_model.assignors.description import parse_group

# Kafka 3.0+ consumer defaults, used when neither the member nor the group says otherwise.
DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEFAULT_MAX_POLL_INTERVAL_MS = 300_000


@dataclass(frozen=True)
class RecordedRebalance:
    generation: int | None
    cause: str
    start: Any = None
    member_id: str | None = None
    gap_ms: float | None = None  # the heartbeat gap (session expiry) or poll interval (poll expiry)


@dataclass
class Timeouts:
    session_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    max_poll_ms: int = DEFAULT_MAX_POLL_INTERVAL_MS
    member_session_ms: dict[str, int] = field(default_factory=dict)
    member_max_poll_ms: dict[str, int] = field(default_factory=dict)

    def session_for(self, member_id: str | None) -> int:
        return self.member_session_ms.get(member_id or "", self.session_ms)

    def max_poll_for(self, member_id: str | None) -> int:
        return self.member_max_poll_ms.get(member_id or "", self.max_poll_ms)

    def copy(self) -> Timeouts:
        return Timeouts(
            self.session_ms, self.max_poll_ms, dict(self.member_session_ms), dict(self.member_max_poll_ms)
        )


@dataclass
class Scenario:
    group: GroupSpec
    lag: dict[tuple[str, int], float]
    assignor: str
    timeouts: Timeouts
    rebalances: list[RecordedRebalance]
    changes: list[dict[str, Any]]
    assignors: list[str]


def _positive_ms(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise AssignorError(f"{what} must be a positive number of milliseconds, got {value!r}")
    return int(value)


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    # keep whole numbers whole, so offsets print as 42 rather than 42.0
    return int(value) if float(value).is_integer() else float(value)


def parse_lag(raw: Any) -> dict[tuple[str, int], float]:
    """{"t0": [lag p0, p1, ...]}, {"t0": {"0": lag}}, or a list of {topic, partition, lag}
    (docs/assign-format.md); a lag that is not a number (null: unknown) is left out."""
    lag: dict[tuple[str, int], float] = {}
    if raw is None:
        return lag
    if isinstance(raw, list):
        for entry in raw:
            if not isinstance(entry, dict) or "topic" not in entry or "partition" not in entry:
                raise AssignorError(f"lag entry {entry!r} needs topic, partition and lag"[:200])
            value = _number_or_none(entry.get("lag"))
            if value is not None:
                lag[(str(entry["topic"]), int(entry["partition"]))] = value
        return lag
    if not isinstance(raw, dict):
        raise AssignorError('"lag" must be {topic: [lag per partition]} or a list of {topic, partition, lag}')
    for topic, per in raw.items():
        items = enumerate(per) if isinstance(per, list) else per.items() if isinstance(per, dict) else None
        if items is None:
            raise AssignorError(f"lag of topic {topic!r} must be a list or an object")
        for p, v in items:
            value = _number_or_none(v)
            if value is None:
                continue
            if value < 0:
                raise AssignorError(f"lag of {topic}-{p} is negative ({v})")
            lag[(str(topic), int(p))] = value
    return lag


def parse_rebalances(raw: Any) -> list[RecordedRebalance]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise AssignorError('"rebalances" must be a list')
    out = []
    for r in raw:
        if not isinstance(r, dict):
            raise AssignorError(f"rebalance entry {r!r} is not an object"[:200])
        gen = r.get("generation")
        out.append(
            RecordedRebalance(
                generation=gen if isinstance(gen, int) and not isinstance(gen, bool) else None,
                cause=str(r.get("cause") or ""),
                start=r.get("start"),
                member_id=r.get("member_id") if isinstance(r.get("member_id"), str) else None,
                gap_ms=_number_or_none(r.get("gap_ms")),
            )
        )
    return out


def parse_timeouts(doc: dict[str, Any]) -> Timeouts:
    t = Timeouts()
    if doc.get("session_timeout_ms") is not None:
        t.session_ms = _positive_ms(doc["session_timeout_ms"], "session_timeout_ms")
    if doc.get("max_poll_interval_ms") is not None:
        t.max_poll_ms = _positive_ms(doc["max_poll_interval_ms"], "max_poll_interval_ms")
    for m in doc.get("members") or []:
        if not isinstance(m, dict):
            continue
        mid = m.get("member_id")
        if m.get("session_timeout_ms") is not None:
            t.member_session_ms[mid] = _positive_ms(m["session_timeout_ms"], f"{mid}: session_timeout_ms")
        if m.get("max_poll_interval_ms") is not None:
            t.member_max_poll_ms[mid] = _positive_ms(
                m["max_poll_interval_ms"], f"{mid}: max_poll_interval_ms"
            )
    return t


def parse_scenario(doc: Any) -> Scenario:
    if not isinstance(doc, dict):
        raise AssignorError(
            "what-if input must be a JSON object (members, partitions, lag, changes, assignors)"
        )
    group = parse_group(doc)
    changes = doc.get("changes") or []
    if not isinstance(changes, list) or not all(isinstance(c, dict) for c in changes):
        raise AssignorError('"changes" must be a list of objects')
    assignors = doc.get("assignors") or []
    if isinstance(assignors, str):
        assignors = [assignors]
    if not isinstance(assignors, list) or not all(isinstance(a, str) for a in assignors):
        raise AssignorError('"assignors" must be a list of assignor names')
    return Scenario(
        group=group,
        lag=parse_lag(doc.get("lag")),
        assignor=canonical_name(doc.get("assignor") or "range"),
        timeouts=parse_timeouts(doc),
        rebalances=parse_rebalances(doc.get("rebalances")),
        changes=changes,
        assignors=[canonical_name(a) for a in assignors],
    )
